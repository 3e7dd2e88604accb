"""Kernel regression against statsmodels KernelReg, measured in the same run.

Data: y = 2 sin x + x + N(0, 0.5²) on [0, 5] (``attnpool.datasets.sine_data``).

- fixed bandwidth, fit + predict at 1000 queries, n ∈ {1e3, 1e4, 1e5};
- bandwidth selection by leave-one-out CV, n ∈ {200, 1000, 5000}: time and the
  objective reached (statsmodels ``bw="cv_ls"``: ``scipy.optimize.fmin`` from one start);
- ``--large``: CV selection at n = 1e5 (attnpool only).

Each attnpool timing is the median of repeats after a warm-up call (compilation
is reported separately as ``first call``). Usage: ``python benchmarks/bench_regression.py``
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

import attnpool
from attnpool.datasets import sine_data

warnings.simplefilter("ignore", FutureWarning)


def timed(function, repeats=3):
    start = time.perf_counter()
    result = function()
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), first, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="also CV selection at n = 1e5")
    args = parser.parse_args()
    from statsmodels.nonparametric.kernel_regression import KernelReg

    queries = np.linspace(0, 5, 1000)
    print("## Fixed bandwidth (h = 0.2), fit + predict at 1000 queries\n")
    print("| n | attnpool (s) | first call (s) | statsmodels (s) | speed-up | max abs difference |")
    print("|---|---|---|---|---|---|")
    for n in (1_000, 10_000, 100_000):
        data = sine_data(n=n, seed=0)
        ours, first, prediction = timed(
            lambda data=data: (
                attnpool.NadarayaWatson(bandwidth=0.2)
                .fit(data.x_train[:, None], data.y_train)
                .predict(queries[:, None])
            )
        )
        start = time.perf_counter()
        reference = KernelReg(data.y_train, data.x_train, "c", reg_type="lc", bw=[0.2]).fit(
            queries
        )[0]
        theirs = time.perf_counter() - start
        print(
            f"| {n} | {ours:.4f} | {first:.2f} | {theirs:.3f} | {theirs / ours:.0f}x | "
            f"{np.abs(prediction - reference).max():.1e} |",
            flush=True,
        )

    print("\n## Bandwidth by leave-one-out CV (local constant, gaussian)\n")
    print(
        "| n | attnpool (s) | first call (s) | CV reached | statsmodels cv_ls (s) | CV reached | "
        "speed-up | attnpool at least as low |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in (200, 1000, 5000):
        data = sine_data(n=n, seed=0)
        ours, first, selection = timed(
            lambda data=data: attnpool.select_bandwidth(data.x_train, data.y_train), repeats=2
        )
        start = time.perf_counter()
        model = KernelReg(data.y_train, data.x_train, "c", reg_type="lc", bw="cv_ls")
        theirs = time.perf_counter() - start
        their_cv = float(np.squeeze(model.cv_loo(model.bw, model.est["lc"])))
        print(
            f"| {n} | {ours:.3f} | {first:.2f} | {selection.objective:.10f} | {theirs:.2f} | "
            f"{their_cv:.10f} | {theirs / ours:.0f}x | {selection.objective <= their_cv} |",
            flush=True,
        )

    if args.large:
        data = sine_data(n=100_000, seed=0)
        start = time.perf_counter()
        selection = attnpool.select_bandwidth(data.x_train, data.y_train)
        print(
            f"\nCV selection at n = 1e5: {time.perf_counter() - start:.1f} s, "
            f"h = {selection.bandwidth[0]:.5f}, CV = {selection.objective:.6f}"
        )


if __name__ == "__main__":
    main()
