"""Adversarial pooling problems and the check that holds a method to the exact oracle.

Hypothesis draws: bandwidths from 1e-300 to 1e300 of the data's scale (float32: the
representable part), coordinates scaled by 1e±100 and shifted by up to 1e12, clustered
and tied keys (integer grids),
values up to the dtype's limit, d from 1 to 8, float32 and float64, every kernel, one or
two value columns. Each method either matches the oracle within its documented
tolerance (``docs/design.md``, "What each method guarantees") or raises a clear
``ValueError`` — never a finite wrong number, never a NaN. The ``test_oracle_*`` files
run this for every method (``ORACLE_EXAMPLES`` examples each, 200 by default).
"""

from __future__ import annotations

import os
from functools import partial

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnpool import Binned, TopK, Tree, attention_pool, kernels
from attnpool.engines import numpy_engine
from attnpool.methods import tree
from attnpool.sums.local_model import model_for
from oracle import exact_pool, log_weights, magnitude, rounding_bound, value_range
from reference import COMPACT_KERNELS

N, M = 6, 19
#: Each method's documented tolerance, in units of the values' range, beyond rounding.
METHOD_TOLERANCE = {"binned": 1e-3, "topk": 1e-3, "tree": 1e-3 / (1 - 1e-3)}
#: Rounding: at most this many units of the working precision in each log weight (times
#: one plus its sensitivity) and in the final sums.
ROUNDING = 64
#: Methods that compute their logits in float32 whatever the input (fused attention).
FLOAT32_LOGITS = {"fused"}
ORACLE = settings(
    max_examples=int(os.environ.get("ORACLE_EXAMPLES", 200)),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: Every built-in non-negative kernel (registered ones would join it); the signed,
#: higher-order ones meet their own oracle in test_higher_order_kernels.
KERNELS = [name for name in kernels.names() if kernels.get(name).base is None]
#: Kernels each method pools; other kernels must raise a clear error.
SUPPORTS = {
    "dense": KERNELS,
    "stream": KERNELS,
    "auto": KERNELS,
    "fused": ["gaussian", "dot"],
    "pallas": KERNELS,
    "sparse": COMPACT_KERNELS,
    "fgt": ["gaussian"],
    "native": ["gaussian"],
    "binned": [
        "gaussian",
        "epanechnikov",
        "triangular",
        "tricube",
        "cosine",
        "laplacian",
        "biweight",
        "triweight",
    ],
    "topk": [k for k in KERNELS if k not in ("dot", "constant") and not k.endswith("-product")],
    "tree": [k for k in KERNELS if tree.supports(kernels.get(k))],
    "numpy": [k for k in KERNELS if k != "dot"],
}
OPTIONS = {"binned": Binned(), "topk": TopK(k=8), "tree": Tree(rtol=1e-3)}


@st.composite
def problems(draw, method: str, n: int = N, m: int = M):
    """An adversarial pooling problem that ``method`` claims to support."""
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    info = np.finfo(dtype)
    decades = 300 if dtype == np.float64 else 30
    kernel = draw(st.sampled_from(SUPPORTS[method]))
    dims = [1] if method == "fgt" else [1, 2] if method == "binned" else [1, 1, 2, 3, 8]
    d = draw(st.sampled_from(dims))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    layout = draw(st.sampled_from(["uniform", "clustered", "grid"]))
    if layout == "uniform":
        base = rng.uniform(-1, 1, (n + m, d))
    elif layout == "clustered":
        centres = rng.uniform(-1, 1, (3, d))
        base = centres[rng.integers(0, 3, n + m)] + rng.normal(0, 1e-6, (n + m, d))
    else:  # integers: tied keys and queries
        base = rng.integers(-4, 5, (n + m, d)).astype(float)
    # powers of two keep grids exact
    scale = 2.0 ** draw(st.integers(-332, 332) if dtype == np.float64 else st.integers(-40, 40))
    shift = draw(st.sampled_from([0.0, 1.0, 1e3, 1.7e9, -1e12]))
    if dtype == np.float32:
        shift = min(shift, 1e3)
    points = (base * scale + shift * scale).astype(dtype)
    if layout == "grid":
        # half-integer widths: no key exactly on a support's edge (where rounding of the
        # scaled coordinates decides, see the design notes)
        bandwidth = scale * draw(st.sampled_from([0.5, 1.5, 2.5]))
    else:
        bandwidth = scale * 10.0 ** draw(st.floats(-decades, decades))
    bandwidth = float(np.clip(bandwidth, 4 * info.tiny, info.max / 4))
    p = draw(st.sampled_from([1, 2]))
    exponent = draw(st.sampled_from([0, 5, info.maxexp // 4, info.maxexp - 3]))
    values = (rng.uniform(-1, 1, (m, p)) * 2.0**exponent).astype(dtype)
    if p == 1 and draw(st.booleans()):
        values = values[:, 0]
    return points[:n], points[n:], values, kernel, bandwidth, dtype


def numpy_engine_pool(queries, keys, values, kernel, bandwidth, empty):
    """Pooling by the NumPy engine (a local-constant fit), as the estimators run it."""
    model = model_for(keys, kernel=kernel)
    flat = np.ndim(values) == 1
    fit, _, _ = numpy_engine.local_fit(
        keys, np.reshape(values, (len(keys), -1)), queries, np.full(keys.shape[1], bandwidth),
        model, nearest=empty == "nearest",
    )  # fmt: skip
    return (fit[:, 0] if flat else fit).astype(np.result_type(queries, keys, values))


def check_against_oracle(method, queries, keys, values, kernel, bandwidth, dtype):
    option = OPTIONS.get(method, method)
    pool = numpy_engine_pool if method == "numpy" else partial(attention_pool, method=option)
    try:
        got = pool(queries, keys, values, kernel=kernel, bandwidth=bandwidth, empty="nearest")
    except ValueError as error:
        # a clear refusal (too many grid nodes, weight left out above the tolerance)
        assert method in ("binned", "topk", "sparse"), f"{method} raised: {error}"
        assert str(error).split(":")[0] in ("method", "TopK", "Binned"), str(error)
        return
    assert got.dtype == dtype and got.shape == (queries.shape[0], *values.shape[1:])
    got = np.asarray(got, np.float64).reshape(queries.shape[0], -1)
    assert np.all(np.isfinite(got)), f"{method}: not finite: {got}"
    eps = np.finfo(np.float32 if method in FLOAT32_LOGITS else dtype).eps
    np.seterr(over="ignore")  # a bound of inf times the range is inf: the hull only
    matmul = method in FLOAT32_LOGITS  # logits as matrix products at every d
    weights = log_weights(queries, keys, kernel, bandwidth)
    bound = rounding_bound(
        queries, keys, kernel, bandwidth, ROUNDING * eps, matmul, log_k=weights[0]
    )[:, None]
    tolerance = (METHOD_TOLERANCE.get(method, 0.0) + bound) * value_range(
        values
    ) + ROUNDING * eps * magnitude(values)
    # the boxcar jumps at its edge: a key within rounding of it may count either way
    band = ROUNDING * eps * min(1 + max_extent(queries, keys, bandwidth), 1e100) ** 2
    candidates = [0.0] if not kernel.startswith("boxcar") else [-band, band]
    errors = []
    for edge in candidates:
        exact, _ = exact_pool(queries, keys, values, kernel, bandwidth, edge=edge,
                              weights=None if edge else weights)  # fmt: skip
        errors.append(np.abs(got - exact.astype(np.float64)))
    error = np.minimum.reduce(errors)
    slack = 4 * eps * magnitude(values).max()
    assert np.min(values) - slack <= got.min() and got.max() <= np.max(values) + slack, (
        f"{method}: outside the values' range: {got}"
    )
    assert np.all(error <= tolerance), (
        f"{method}: error {error.max():.3g} above tolerance "
        f"{tolerance.flat[np.argmax(error - tolerance)]:.3g}"
    )


def max_extent(queries, keys, bandwidth) -> float:
    """The largest centred coordinate, in bandwidths."""
    q, k = (np.asarray(a, np.float64).reshape(len(a), -1) for a in (queries, keys))
    centre = k.min(0) / 2 + k.max(0) / 2
    with np.errstate(over="ignore"):
        return float(np.max(np.abs(np.concatenate([q, k]) - centre)) / bandwidth)


def oracle_test(methods: list[str]):
    """A test holding each of ``methods`` to the oracle, ``ORACLE_EXAMPLES`` problems each."""

    @pytest.mark.parametrize("method", methods)
    def test_method_meets_the_oracle(method):
        @ORACLE
        @given(problem=problems(method))
        def run(problem):
            check_against_oracle(method, *problem)

        try:
            run()
        finally:
            jax.clear_caches()  # a program per shape and kernel: see conftest.py

    return test_method_meets_the_oracle


def row_settings(examples: int):
    """Hypothesis settings of the tests that hold each row to the oracle on its own keys
    (masks) or on repeated keys (observation weights): fewer examples, each larger."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def assert_rows_meet_the_oracle(method, got, queries, keys, values, kernel, bandwidth, dtype,
                                allowed=None):  # fmt: skip
    """Each row of ``got (n, p)`` within the value range of its keys and within rounding
    of the long-double oracle on them (``allowed (n, m)``: each row's keys; None: all)."""
    got = np.asarray(got, np.float64).reshape(queries.shape[0], -1)
    assert np.all(np.isfinite(got)), f"{method}: not finite: {got}"
    eps = np.finfo(np.float32 if method in FLOAT32_LOGITS else dtype).eps
    with np.errstate(over="ignore"):  # a bound of inf times the range is inf
        matmul = method in FLOAT32_LOGITS
        bound = rounding_bound(queries, keys, kernel, bandwidth, ROUNDING * eps, matmul)
        band = ROUNDING * eps * min(1 + max_extent(queries, keys, bandwidth), 1e100) ** 2
        tolerances = bound[:, None] * value_range(values) + ROUNDING * eps * magnitude(values)
    edges = [0.0] if not kernel.startswith("boxcar") else [-band, band]  # on the boxcar's edge
    slack = 4 * eps * magnitude(values).max()
    v = np.reshape(values, (keys.shape[0], -1))
    for i in range(queries.shape[0]):
        row = slice(None) if allowed is None else allowed[i]
        # never outside the range of the values the row may attend, whatever the bound
        mine = v[row]
        assert np.all(mine.min(0) - slack <= got[i]) and np.all(got[i] <= mine.max(0) + slack)
        error = min(
            np.max(np.abs(got[i] - exact_pool(
                queries[i : i + 1], keys[row], mine, kernel, bandwidth, edge=edge
            )[0][0].astype(np.float64)) - tolerances[i])
            for edge in edges
        )  # fmt: skip
        assert error <= 0, f"{method} row {i}: {got[i]} off by {error} beyond the tolerance"
