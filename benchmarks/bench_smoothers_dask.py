"""LOWESS and LOESS on Dask against the same fits in memory, measured in the same run.

Data: uniform x on [0, 10] (two columns for the two-column LOESS), y = the sum of
sin x plus N(0, 0.3²), made by Dask's random generator in row blocks (so the workers
make their own blocks). Cases: ``lowess(frac=0.1, it=3)`` at n = 1e5 and 1e6;
``Loess(span=0.1, statistics="approximate")`` at n = 1e5 in one column; two columns
at n = 2e4 and 1e5 (``span=0.02``). Each on a two-worker ``LocalCluster`` (one
thread each) and in memory (both cores); reported: times, their ratio, the largest
difference over the largest fit, and each worker's peak memory (resident set size).

Usage: ``python benchmarks/bench_smoothers_dask.py [--quick] [--blocks 4]``
(``--quick`` leaves out the cases at n = 1e6 and the two columns at n = 1e5).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench_distributed import _peak_rss_mb


def _cases(quick: bool) -> list[tuple]:
    cases = [("lowess", 10**5, 1, 0.1), ("lowess", 10**6, 1, 0.1),
             ("Loess", 10**5, 1, 0.1), ("Loess", 2 * 10**4, 2, 0.02),
             ("Loess", 10**5, 2, 0.02)]  # fmt: skip
    return [c for c in cases if not (quick and c[1] >= 10**5 and (c[1] == 10**6 or c[2] == 2))]


def _data(n: int, d: int, blocks: int):
    import dask.array as da

    generator = da.random.default_rng(0)
    rows = -(-n // blocks)
    X = generator.uniform(0.0, 10.0, (n, d), chunks=(rows, d))
    y = da.sin(X).sum(axis=1) + 0.3 * generator.normal(size=n, chunks=rows)
    return X, y


def _run(kind, X, y, span):
    import attnpool

    if kind == "lowess":
        out = attnpool.lowess(y, X[:, 0], frac=span, it=3)
        return out.compute() if hasattr(out, "compute") else out
    model = attnpool.Loess(span=span, statistics="approximate").fit(X, y)
    fits = model.fitted_values_
    return fits.compute() if hasattr(fits, "compute") else fits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--blocks", type=int, default=4)
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    print("| smoother | n | d | span | in memory (s) | Dask, 2 workers (s) | ratio |"
          " max abs diff / max fit | peak RSS per worker (MB) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    with (LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0",
                       memory_limit="8GB") as cluster, Client(cluster) as client):  # fmt: skip
        client.run(lambda: __import__("attnpool.distributed.loess"))  # imports, not timed
        for kind, n, d, span in _cases(args.quick):
            X, y = _data(n, d, args.blocks)
            X_here, y_here = X.compute(), y.compute()
            start = time.perf_counter()
            here = _run(kind, X_here, y_here, span)
            here_s = time.perf_counter() - start
            start = time.perf_counter()
            there = _run(kind, X, y, span)
            there_s = time.perf_counter() - start
            if kind == "lowess":
                here, there = here[:, 1], there[:, 1]
            difference = float(np.max(np.abs(here - there)) / np.max(np.abs(here)))
            peaks = ", ".join(f"{p:.0f}" for p in client.run(_peak_rss_mb).values())
            print(f"| {kind} | {n:.0e} | {d} | {span} | {here_s:.2f} | {there_s:.2f} | "
                  f"{there_s / here_s:.1f} | {difference:.1e} | {peaks} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
