"""
A million keys: the fast exact methods
======================================

Pooling 2,000 queries over 10⁶ keys is 2·10⁹ kernel evaluations by the textbook formula.
``method="auto"`` computes the same sum exactly by methods that skip what cannot
matter: the Gaussian in one dimension by truncated expansions over boxes of keys (a
fast Gauss transform, ``fgt``), compact kernels by the keys inside their support only
(``sparse``). Each is checked here against the exact sum, streamed in blocks, on a
sample of the queries.
"""

import time

import numpy as np

import attnpool
from attnpool.plotting import plot_fit

rng = np.random.default_rng(0)
keys = rng.uniform(0, 10, 1_000_000)
values = np.sin(keys) + 0.3 * np.sin(7 * keys) + rng.normal(0, 0.5, keys.size)
queries = np.linspace(0, 10, 2_000)

results = {}
for kernel, method in (("gaussian", "fgt"), ("epanechnikov", "sparse")):
    start = time.perf_counter()
    pooled = attnpool.attention_pool(
        queries, keys, values, kernel=kernel, bandwidth=0.02, method=method
    )
    seconds = time.perf_counter() - start
    sample = slice(None, None, 100)
    exact = attnpool.attention_pool(
        queries[sample], keys, values, kernel=kernel, bandwidth=0.02, method="stream"
    )
    error = np.max(np.abs(pooled[sample] - exact))
    print(
        f"{kernel:>12} by {method:<6}: {seconds:.2f} s, largest difference from the "
        f"streamed sum {error:.1e}"
    )
    results[f"{kernel} ({method})"] = pooled

# %%
# With a tolerance the error is yours to choose: ``Binned`` sums on an FFT grid, each
# result within ``tolerance × range(values)`` of the exact one.
start = time.perf_counter()
binned = attnpool.attention_pool(
    queries, keys, values, kernel="gaussian", bandwidth=0.02, method=attnpool.Binned(tolerance=1e-4)
)
print(
    f"binned: {time.perf_counter() - start:.2f} s, largest difference from fgt "
    f"{np.max(np.abs(binned - results['gaussian (fgt)'])):.1e} "
    f"(bound {1e-4 * np.ptp(values):.1e})"
)

# %%
# The fits, over a sample of the keys:
shown = rng.choice(keys.size, 3_000, replace=False)
plot_fit(
    keys[shown],
    values[shown],
    queries,
    results,
    truth=np.sin(queries) + 0.3 * np.sin(7 * queries),
    title="10⁶ keys, h = 0.02",
)
