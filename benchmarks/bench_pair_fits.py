"""Fits with CV whose weights only the NumPy pairs backend sums: higher-order kernels and
nearest-neighbour bandwidths.

Data: uniform on [0, 5]^d, y = sin(Σx) + N(0, 0.2²). Each case is one estimator's
``fit`` with ``bandwidth="cv"`` (a search of 25–40 leave-one-out criteria, every pair in
NumPy float64), in a warm process (one small fit first: imports paid). Times are the
best of ``--repeats`` runs; ``--quick`` leaves out n = 3000.
Usage: ``python benchmarks/bench_pair_fits.py [--quick] [--repeats 1]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import attnpool

CASES = [
    ("NadarayaWatson", {"bandwidth_type": "adaptive_nn"}),
    ("LocalLinear", {"bandwidth_type": "generalized_nn"}),
    ("NadarayaWatson", {"kernel": "gaussian-order4"}),
]


def _data(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 5.0, (n, d))
    return x, np.sin(x.sum(axis=1)) + 0.2 * rng.normal(size=n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    attnpool.NadarayaWatson(bandwidth="cv", bandwidth_type="adaptive_nn").fit(*_data(50, 1))
    sizes = [(1000, 1), (1000, 2)] if args.quick else [(1000, 1), (3000, 1), (1000, 2)]
    print("| estimator | n | d | time | cv score |")
    print("|---|---|---|---|---|")
    for n, d in sizes:
        x, y = _data(n, d)
        for name, options in CASES:
            best, model = float("inf"), None
            for _ in range(args.repeats):
                start = time.perf_counter()
                model = getattr(attnpool, name)(bandwidth="cv", **options).fit(x, y)
                best = min(best, time.perf_counter() - start)
            described = ", ".join(f"{k}={v!r}" for k, v in options.items())
            print(f"| `{name}({described})` | {n:,} | {d} | {best:.2f} s | "
                  f"{model.cv_score_:.6g} |")  # fmt: skip


if __name__ == "__main__":
    main()
