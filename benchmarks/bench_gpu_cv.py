"""Nadaraya–Watson's leave-one-out CV bandwidth on a GPU: ``select_bandwidth`` on
``n`` points in ``d = 3`` (uniform on [0, 5]^3, y = Σ sin x + noise, float32), where
``auto`` runs every criterion and gradient on the tiled Pallas kernel.

Target on an H200: n = 1e6 in ≤ 30 s. Prints the time, the bandwidth, the criterion's
evaluations and the engine; ``--rows`` sets n (on a CPU, small n: the interpreter).

Usage: ``python benchmarks/bench_gpu_cv.py [--rows 1000000]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    import jax

    import attnpool

    rng = np.random.default_rng(0)
    x = rng.uniform(0, 5, (args.rows, 3)).astype(np.float32)
    y = (np.sin(x).sum(axis=1) + rng.normal(0, 0.3, args.rows)).astype(np.float32)
    pooling = "auto" if jax.default_backend() != "cpu" else "pallas"
    start = time.perf_counter()
    found = attnpool.select_bandwidth(x, y, pooling=pooling)
    seconds = time.perf_counter() - start
    print(f"Device: {jax.devices()[0].device_kind} ({jax.default_backend()})")
    print(f"n = {args.rows:.0e}, d = 3: {seconds:.1f} s (target on a GPU at 1e6: <= 30 s)")
    print(f"bandwidth {np.round(found.bandwidth, 4)}, CV {found.objective:.6g}")


if __name__ == "__main__":
    main()
