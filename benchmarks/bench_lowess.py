"""LOWESS against statsmodels' ``lowess`` and LOESS against netlib's (scikit-misc), in
the same run.

Data: uniform x on [0, 10], y = sin x + N(0, 0.3²) (two columns for LOESS: the sum of
sines).

- ``lowess(y, x, frac, it=3, delta=0)`` (exact) at n = 1e4 and 1e5 for frac = 0.1 and
  2/3, and with ``delta`` = 1% of the range; attnpool alone at n = 1e6;
- the largest difference from statsmodels' numbers (max |Δ| / max |y|);
- a first ``lowess`` call in a fresh process at n = 1e4 (import included);
- ``Loess`` against netlib's loess with ``surface="direct"`` and the same statistics,
  degree 2: exact at n = 2000 in one column; approximate (R's default) at n = 1e5 in one
  column (span 0.3) and n = 1e4 and 1e5 in two (span 0.1); attnpool's exact statistics
  at n = 1e5 in two columns, which netlib cannot form (an n × n operator).

Times are the best of ``--repeats`` runs (statsmodels' runs at n = 1e5 of more than a
minute, netlib's exact and large runs are timed once). ``--quick`` leaves out the runs
of statsmodels at n = 1e5 and netlib's in two columns at n = 1e5.
Usage: ``python benchmarks/bench_lowess.py [--quick] [--repeats 3] [--only lowess|loess]``
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np


def _best(repeats: int, function, *args, **kwargs) -> tuple[float, np.ndarray]:
    """The best time of ``repeats`` calls, and the result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best, np.asarray(result)


def _data(n: int, d: int = 1, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 10.0, (n, d))
    return x, np.sin(x).sum(axis=1) + 0.3 * rng.normal(size=n)


def lowess_rows(quick: bool, repeats: int) -> list[tuple]:
    from statsmodels.nonparametric.smoothers_lowess import lowess as statsmodels_lowess

    import attnpool

    rows = []
    cases = [(10**4, 0.1, 0.0), (10**4, 2 / 3, 0.0), (10**5, 0.1, 0.0), (10**5, 2 / 3, 0.0),
             (10**5, 2 / 3, 0.01), (10**6, 2 / 3, 0.0), (10**6, 0.1, 0.0)]  # fmt: skip
    for n, frac, share in cases:
        x, y = _data(n)
        x = x[:, 0]
        delta = share * float(np.ptp(x))
        ours_time, ours = _best(repeats, attnpool.lowess, y, x, frac=frac, delta=delta)
        theirs_time = difference = float("nan")
        if n < 10**6 and not (quick and n >= 10**5 and delta == 0.0):
            runs = 1 if n >= 10**5 and delta == 0.0 else repeats
            theirs_time, theirs = _best(runs, statsmodels_lowess, y, x, frac=frac, delta=delta)
            difference = float(np.abs(ours - theirs).max() / np.abs(y).max())
        rows.append((n, frac, share, ours_time, theirs_time, difference))
    return rows


def first_call(repeats: int) -> float:
    code = (
        "import time; t = time.perf_counter(); import numpy as np, attnpool;"
        "x = np.linspace(0, 10, 10000); attnpool.lowess(np.sin(x), x);"
        "print(time.perf_counter() - t)"
    )
    command = [sys.executable, "-c", code]
    runs = [
        subprocess.run(command, capture_output=True, text=True, check=True) for _ in range(repeats)
    ]
    return min(float(run.stdout) for run in runs)


def loess_rows(quick: bool, repeats: int) -> list[tuple]:
    rows = []
    # (n, columns, span, statistics, netlib too); netlib's exact statistics form the
    # n × n operator (80 GB at 1e5 rows), so they stop at a few thousand rows
    cases = (
        (2000, 1, 0.3, "exact", True),
        (10**5, 1, 0.3, "approximate", True),
        (10**4, 2, 0.1, "approximate", True),
        (10**5, 2, 0.1, "approximate", not quick),
        (10**5, 2, 0.1, "exact", False),
    )
    for n, d, span, statistics, netlib in cases:
        X, y = _data(n, d)
        ours_time, ours = _best(repeats, _ours_loess, X, y, span, statistics)
        theirs_time = difference = float("nan")
        if netlib:
            runs = 1 if statistics == "exact" or n * d >= 2 * 10**5 else repeats
            theirs_time, theirs = _best(runs, _netlib_loess, X, y, span, statistics)
            difference = float(np.abs(ours - theirs).max() / np.abs(y).max())
        rows.append((n, d, span, statistics, ours_time, theirs_time, difference))
    return rows


def _ours_loess(X, y, span, statistics):
    import attnpool

    return attnpool.Loess(span=span, statistics=statistics).fit(X, y).fitted_values_


def _netlib_loess(X, y, span, statistics):
    from skmisc.loess import loess

    # scikit-misc reads a two-dimensional x in column-major order
    model = loess(X.T.flatten().reshape(X.shape), y, span=span, degree=2, surface="direct",
                  statistics=statistics)  # fmt: skip
    model.fit()
    return model.outputs.fitted_values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=("lowess", "loess"))
    args = parser.parse_args()
    if args.only != "loess":
        _print_lowess(args)
    if args.only != "lowess":
        _print_loess(args)


def _print_lowess(args) -> None:
    print("lowess(it=3), exact unless delta > 0; times in seconds")
    print(f"{'n':>8} {'frac':>6} {'delta':>6} {'attnpool':>9} {'statsmodels':>12} {'ratio':>8}"
          f" {'max |Δ|/max|y|':>15}")  # fmt: skip
    for n, frac, share, ours, theirs, difference in lowess_rows(args.quick, args.repeats):
        ratio = theirs / ours if np.isfinite(theirs) else float("nan")
        print(f"{n:>8} {frac:>6.3f} {share:>6.0%} {ours:>9.3f} {theirs:>12.3f} {ratio:>7.0f}×"
              f" {difference:>15.1e}")  # fmt: skip
    print(f"\nfirst lowess call in a fresh process, n = 1e4 (import included): "
          f"{first_call(args.repeats):.3f} s")  # fmt: skip


def _print_loess(args) -> None:
    print("\nLoess (degree 2) against netlib's loess (surface direct), the same statistics")
    print(f"{'n':>6} {'d':>2} {'span':>5} {'statistics':>13} {'attnpool':>9} {'netlib':>8}"
          f" {'max |Δ|/max|y|':>15}")  # fmt: skip
    for n, d, span, statistics, ours, theirs, difference in loess_rows(args.quick, args.repeats):
        print(f"{n:>6} {d:>2} {span:>5} {statistics:>13} {ours:>9.3f} {theirs:>8.3f}"
              f" {difference:>15.1e}")  # fmt: skip


if __name__ == "__main__":
    main()
