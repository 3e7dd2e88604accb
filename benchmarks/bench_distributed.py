"""Attention pooling locally and on Dask (1 and 2 workers), measured in the same run.

n queries against m keys (d = 1, float32, gaussian, bandwidth 1e-3 on [0, 1]); keys and
values are chunked along rows. Reports the time, the overhead ratio against the local
streamed path, and each worker's peak memory (resident set size, read from the worker
processes after the run).

Usage: ``python benchmarks/bench_distributed.py [--queries N] [--keys M] [--chunk ROWS]``
(the default is the issue's size, 1e5 queries × 1e7 keys: 1e12 kernel evaluations,
tens of minutes on two cores).
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=10_000_000)
    parser.add_argument("--chunk", type=int, default=1_000_000, help="key rows per chunk")
    args = parser.parse_args()

    import dask.array as da
    from distributed import Client, LocalCluster

    import attnpool
    from attnpool import distributed

    rng = np.random.default_rng(0)
    keys = rng.uniform(0, 1, args.keys).astype(np.float32)
    values = np.sin(6 * keys).astype(np.float32)
    queries = rng.uniform(0, 1, args.queries).astype(np.float32)
    options = dict(bandwidth=1e-3)

    attnpool.attention_pool(queries[:10], keys[:1000], values[:1000], **options)  # compile
    start = time.perf_counter()
    local = attnpool.attention_pool(queries, keys, values, **options)
    local_s = time.perf_counter() - start
    print(f"n = {args.queries:,} queries, m = {args.keys:,} keys, d = 1, float32, gaussian")
    print(f"chunks: {args.chunk:,} key rows, {max(args.queries // 2, 1):,} query rows\n")
    print("| path | time (s) | overhead vs local | peak RSS per worker (MB) | max abs diff |")
    print("|---|---|---|---|---|")
    print(f"| local (streamed) | {local_s:.1f} | 1.00 | {_peak_rss_mb():.0f} (this process) | 0 |")

    dask_keys = da.from_array(keys, chunks=args.chunk)
    dask_values = da.from_array(values, chunks=args.chunk)
    dask_queries = da.from_array(queries, chunks=max(args.queries // 2, 1))
    for workers in (1, 2):
        threads = 2 // workers
        with (
            LocalCluster(
                n_workers=workers,
                threads_per_worker=threads,
                dashboard_address=None,
                memory_limit="8GB",
            ) as cluster,
            Client(cluster) as client,
        ):
            client.run(lambda: __import__("attnpool.distributed"))  # imports, not timed
            warm = distributed.attention_pool(queries[:10], keys[:1000], values[:1000], **options)
            warm.compute()
            start = time.perf_counter()
            pooled = distributed.attention_pool(
                dask_queries, dask_keys, dask_values, **options
            ).compute()
            elapsed = time.perf_counter() - start
            peaks = client.run(_peak_rss_mb)
            difference = float(np.nanmax(np.abs(pooled - local)))
            print(
                f"| Dask, {workers} worker(s) × {threads} thread(s) | {elapsed:.1f} | "
                f"{elapsed / local_s:.2f} | {', '.join(f'{p:.0f}' for p in peaks.values())} | "
                f"{difference:.1e} |",
                flush=True,
            )
    print(f"\ncpu count: {os.cpu_count()}")


if __name__ == "__main__":
    main()
