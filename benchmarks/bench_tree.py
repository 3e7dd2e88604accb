"""``method=Tree(rtol)`` against scikit-learn's ``KernelDensity(rtol=…)`` (the same
guarantee) and the exact ``auto``: Gaussian densities of ``n`` standard normal points in
``d`` columns at 1000 queries, bandwidth 0.3, float64, one process, medians of three.

Usage: ``python benchmarks/bench_tree.py``
"""

from __future__ import annotations

import statistics
import time
from functools import partial

import numpy as np


def _median(function, repeats: int = 3) -> float:
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    from sklearn.neighbors import KernelDensity

    import attnpool

    rng = np.random.default_rng(0)
    print("| n | d | rtol | sklearn (s) | tree (s) | sklearn / tree | exact auto (s) | "
          "tree's largest relative error | sklearn's |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for n, d in ((100_000, 3), (100_000, 8)):
        x, q = rng.normal(size=(n, d)), rng.normal(size=(1000, d))
        exact = attnpool.log_density(x, q, bandwidth=0.3, method="dense")
        for rtol in (1e-2, 1e-4):
            model = KernelDensity(bandwidth=0.3, rtol=rtol).fit(x)
            tree = partial(attnpool.log_density, x, q, bandwidth=0.3,
                           method=attnpool.Tree(rtol=rtol))  # fmt: skip
            theirs = _median(partial(model.score_samples, q))
            ours = _median(tree)
            auto = _median(partial(attnpool.log_density, x, q, bandwidth=0.3))
            ours_error = np.max(np.abs(np.expm1(tree() - exact)))
            their_error = np.max(np.abs(np.expm1(model.score_samples(q) - exact)))
            cells = [f"{n:.0e}", str(d), f"{rtol:g}", f"{theirs:.3f}", f"{ours:.3f}",
                     f"{theirs / ours:.1f}", f"{auto:.3f}", f"{ours_error:.1e}",
                     f"{their_error:.1e}"]  # fmt: skip
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
