"""Shared data and stated tolerances of the pooling-method tests."""

from __future__ import annotations

import numpy as np

from attnpool import attention_pool

# Each method's stated accuracy against the exact result (float64 data):
# relative to the values' range for binned, to float32 logits for fused, rounding otherwise.
BINNED_TOLERANCE = 1e-3
FUSED_RTOL = 2e-5
EXACT_RTOL = 1e-9

#: ``(method, kernel, d, rtol)``: each exact method (and ``fused``) on a kernel and a
#: dimension it serves, with its stated tolerance.
EXACT_METHOD_CASES = [
    ("dense", "gaussian", 1, EXACT_RTOL),
    ("stream", "gaussian", 2, EXACT_RTOL),
    ("fused", "gaussian", 3, FUSED_RTOL),
    ("fgt", "gaussian", 1, EXACT_RTOL),
    ("native", "gaussian", 2, EXACT_RTOL),
    ("sparse", "epanechnikov", 1, EXACT_RTOL),
    ("sparse", "tricube", 2, EXACT_RTOL),
    ("auto", "triangular", 1, EXACT_RTOL),
]


def data(seed, n=300, m=2000, d=1, layout="uniform"):
    rng = np.random.default_rng(seed)
    if layout == "uniform":
        keys = rng.uniform(0, 10, (m, d))
    else:  # two clusters of different spread
        keys = np.concatenate(
            [rng.normal(2, 0.3, (m // 2, d)), rng.normal(7, 1.0, (m - m // 2, d))]
        )
    queries = rng.uniform(keys.min(0), keys.max(0), (n, d))
    values = np.stack([np.sin(2 * keys).sum(1), (keys[:, 0] > 5) * 1.0], axis=1)
    return queries, keys, values


def exact(queries, keys, values, kernel, bandwidth):
    return attention_pool(
        queries, keys, values, kernel=kernel, bandwidth=bandwidth, method="dense", empty="nearest"
    )


def value_range(values):
    return np.ptp(values, axis=0)
