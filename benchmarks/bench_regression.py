"""Kernel regression against statsmodels KernelReg, measured in the same run.

Data: y = 2 sin x + x + N(0, 0.5²) on [0, 5] (``attnpool.datasets.sine_data``).

- fixed bandwidth, fit + predict at 1000 queries, n ∈ {1e3, 1e4, 1e5};
- bandwidth selection by leave-one-out CV, n ∈ {200, 1000, 5000}: time and the
  objective reached (statsmodels ``bw="cv_ls"``: ``scipy.optimize.fmin`` from one start);
- ``--large``: CV selection at n = 1e5 … 1e7 (attnpool only; statsmodels would take
  hours): binned search for the gaussian, exact sparse search for epanechnikov.

Every case runs in its own process, so that one library's idle worker threads do not
slow the other's timing. Fixed-bandwidth times are medians of repeats after a warm-up
call (attnpool's first call, which compiles, is reported apart); a CV selection by
statsmodels is timed once.
Usage: ``python benchmarks/bench_regression.py [--large] [--only fixed|cv]``
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np

QUERIES = np.linspace(0, 5, 1000)


def _case(name: str, n: int) -> dict:
    import attnpool
    from attnpool.datasets import sine_data

    warnings.simplefilter("ignore", FutureWarning)
    data = sine_data(n=n, seed=0)
    if name == "fixed-attnpool":
        function = lambda: (  # noqa: E731
            attnpool.NadarayaWatson(bandwidth=0.2)
            .fit(data.x_train[:, None], data.y_train)
            .predict(QUERIES[:, None])
        )
        return _timed(function, lambda result: {"prediction": result.tolist()}, repeats=10)
    if name in ("cv-attnpool", "cv-attnpool-sparse"):
        kernel, pooling = (
            ("gaussian", "auto") if name == "cv-attnpool" else ("epanechnikov", "sparse")
        )
        function = lambda: attnpool.select_bandwidth(  # noqa: E731
            data.x_train, data.y_train, kernel=kernel, pooling=pooling
        )

        def describe(s):
            return {"objective": s.objective, "h": s.bandwidth[0], "exact": s.exact}

        return _timed(function, describe, 2 if n <= 100_000 else 1)
    from statsmodels.nonparametric.kernel_regression import KernelReg

    if name == "fixed-statsmodels":
        function = lambda: (  # noqa: E731
            KernelReg(data.y_train, data.x_train, "c", reg_type="lc", bw=[0.2]).fit(QUERIES)[0]
        )
        return _timed(function, lambda result: {"prediction": result.tolist()}, repeats=3)
    start = time.perf_counter()
    if name == "cv-statsmodels":
        model = KernelReg(data.y_train, data.x_train, "c", reg_type="lc", bw="cv_ls")
        objective = float(np.squeeze(model.cv_loo(model.bw, model.est["lc"])))
        extra = {"objective": objective, "h": float(model.bw[0])}
        return {"median_s": time.perf_counter() - start, **extra}
    raise ValueError(f"case: unknown {name!r}")


def _timed(function, describe, repeats: int = 3) -> dict:
    start = time.perf_counter()
    result = function()
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "median_s": statistics.median(times),
        "first_s": first,
        "peak_bytes": peak,
        **describe(result),
    }


def _spawn(name: str, n: int) -> dict:
    command = [sys.executable, __file__, "--case", name, str(n)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="also CV selection at n = 1e5 to 1e7")
    parser.add_argument("--only", choices=["fixed", "cv"], help="one section only")
    parser.add_argument("--case", nargs=2, metavar=("NAME", "N"))
    args = parser.parse_args()
    if args.case:
        print(json.dumps(_case(args.case[0], int(args.case[1]))))
        return
    if args.only != "cv":
        _fixed()
    if args.only != "fixed":
        _cv(args.large)


def _fixed() -> None:

    print("## Fixed bandwidth (h = 0.2), fit + predict at 1000 queries\n")
    print("| n | attnpool (s) | first call (s) | statsmodels (s) | speed-up | max abs difference |")
    print("|---|---|---|---|---|---|")
    for n in (1_000, 10_000, 100_000):
        ours, theirs = _spawn("fixed-attnpool", n), _spawn("fixed-statsmodels", n)
        difference = np.abs(np.subtract(ours["prediction"], theirs["prediction"])).max()
        print(
            f"| {n} | {ours['median_s']:.4f} | {ours['first_s']:.2f} | "
            f"{theirs['median_s']:.3f} | {theirs['median_s'] / ours['median_s']:.0f}x | "
            f"{difference:.1e} |",
            flush=True,
        )


def _cv(large: bool) -> None:
    print("\n## Bandwidth by leave-one-out CV (local constant, gaussian)\n")
    print(
        "| n | attnpool (s) | first call (s) | CV reached | statsmodels cv_ls (s) | CV reached | "
        "speed-up | attnpool at least as low |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in (200, 1000, 5000):
        ours, theirs = _spawn("cv-attnpool", n), _spawn("cv-statsmodels", n)
        print(
            f"| {n} | {ours['median_s']:.3f} | {ours['first_s']:.2f} | "
            f"{ours['objective']:.10f} | {theirs['median_s']:.2f} | {theirs['objective']:.10f} | "
            f"{theirs['median_s'] / ours['median_s']:.0f}x | "
            f"{ours['objective'] <= theirs['objective']} |",
            flush=True,
        )

    if large:
        print("\n## Large CV searches (fgt for the gaussian, sparse for epanechnikov)\n")
        print("| kernel | n | time (s) | first call (s) | h | CV | objective | peak RSS (MB) |")
        print("|---|---|---|---|---|---|---|---|")
        searches = [("cv-attnpool", "gaussian", (100_000, 1_000_000, 10_000_000))]
        searches.append(("cv-attnpool-sparse", "epanechnikov", (100_000, 1_000_000)))
        for name, kernel, sizes in searches:
            for n in sizes:
                ours = _spawn(name, n)
                print(
                    f"| {kernel} | {n:.0e} | {ours['median_s']:.1f} | {ours['first_s']:.1f} | "
                    f"{ours['h']:.5f} | {ours['objective']:.6f} | "
                    f"{'exact' if ours['exact'] else 'binned'} | {ours['peak_bytes'] / 1e6:.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
