"""Kernel densities against statsmodels, scikit-learn and KDEpy, timed in one run.

Cases (each library on the same data and bandwidth; the agreement is printed beside the
times):

- ``pdf``: the density at every sample point, Gaussian kernel, fixed bandwidth —
  statsmodels' ``KDEMultivariate.pdf`` (n ≤ ``--sm-max``);
- ``cv_ml``: likelihood cross-validation of one column — statsmodels'
  ``KDEMultivariate(bw="cv_ml")``;
- ``cv_ls mixed``: least squares, a continuous and an unordered column;
- ``sklearn``: scikit-learn's ``KernelDensity`` (kd-tree, ``rtol=1e-6``) in three
  columns, exact for us;
- ``grid``: KDEpy's ``FFTKDE`` on its grid of 1024 points, both binned (ours
  ``method="binned"``, each density within 1e-3 of itself); the errors against the
  exact density, relative to its peak, beside the times;
- ``grid d=2``: the same on KDEpy's 256 × 256 grid, ours within 2e-3 of each density
  (at the peak, no more than KDEpy's error there); the exact density at 1500 of the
  grid's points for the errors.

The grids' times are medians of five calls of each, taken in turns (the grid computed
beforehand); the first calls are printed beside them.

Usage: ``python benchmarks/bench_density.py [--quick]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np


def _timed(function):
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def _alternating(ours, theirs, runs: int = 5):
    """Each timed ``runs`` times, in turns (theirs first): ``(our result, their result,
    our median, their median, first calls)`` — the first calls pay what a fresh call
    pays (memory touched for the first time, caches), the medians what a repeated one
    does."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        their_result, elapsed = _timed(theirs)
        times[1].append(elapsed)
        our_result, elapsed = _timed(ours)
        times[0].append(elapsed)
    firsts = f"first calls {times[0][0]:.3f} vs {times[1][0]:.3f} s"
    return our_result, their_result, *map(float, map(np.median, times)), firsts


def _row(case: str, n: int, ours: float, theirs: float | None, other: str, agree: str) -> None:
    ratio = "" if theirs is None else f"{theirs / ours:9.1f}×"
    theirs_text = "—" if theirs is None else f"{theirs:9.3f}"
    print(f"{case:<14}{n:>9}  {ours:9.3f}  {theirs_text:>9}  {ratio:>10}  {other:<26}{agree}")


def main() -> None:
    # a first call imports the modules it needs: compiled once, as an installed package's
    # are (an environment with PYTHONDONTWRITEBYTECODE would compile them in every run)
    sys.dont_write_bytecode = False
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    quick = parser.parse_args().quick
    warnings.simplefilter("ignore", FutureWarning)
    from KDEpy import FFTKDE
    from sklearn.neighbors import KernelDensity as ScikitKernelDensity
    from statsmodels.nonparametric.kernel_density import KDEMultivariate

    from attnpool import Binned, kernel_density, log_density, select_density_bandwidth

    rng = np.random.default_rng(0)
    print(f"{'case':<14}{'n':>9}  {'ours (s)':>9}  {'them (s)':>9}  {'ratio':>10}  "
          f"{'against':<26}agreement")  # fmt: skip
    kernel_density(rng.normal(size=(50, 1)), rng.normal(size=(50, 1)), bandwidth=0.3)  # warm
    # JAX as well, as importing the densities once did: the binned grids' modules import
    # it (~1.3 s), the other host methods do not; every case is then timed as before
    import jax  # noqa: F401

    for n in (1000, 3000) if quick else (1000, 10_000):
        x = rng.normal(size=(n, 1))
        ours, t_ours = _timed(lambda x=x: kernel_density(x, x, bandwidth=0.2))
        model = KDEMultivariate(data=[x[:, 0]], var_type="c", bw=[0.2])
        theirs, t_theirs = _timed(lambda x=x, model=model: model.pdf(x))
        error = np.max(np.abs(ours / theirs - 1))
        _row("pdf", n, t_ours, t_theirs, "statsmodels pdf", f"max rel. diff {error:.1e}")

    n = 500 if quick else 2000
    x = rng.normal(size=(n, 1))
    ours, t_ours = _timed(lambda: select_density_bandwidth(x, method="cv_ml"))
    theirs, t_theirs = _timed(lambda: KDEMultivariate(data=[x[:, 0]], var_type="c", bw="cv_ml"))
    _row("cv_ml", n, t_ours, t_theirs, "statsmodels cv_ml",
         f"h {ours.bandwidth[0]:.5f} vs {theirs.bw[0]:.5f}")  # fmt: skip

    n = 200 if quick else 500
    x = np.c_[rng.normal(size=n), rng.integers(0, 4, n)]
    ours, t_ours = _timed(lambda: select_density_bandwidth(x, method="cv_ls", var_type="cu"))
    theirs, t_theirs = _timed(
        lambda: KDEMultivariate(data=[x[:, 0], x[:, 1]], var_type="cu", bw="cv_ls")
    )
    agree = (f"λ {ours.bandwidth[1]:.3g} vs {theirs.bw[1]:.3g}: objective "
             f"{ours.objective:.6g} vs {theirs.imse(theirs.bw):.6g}")  # fmt: skip
    _row("cv_ls mixed", n, t_ours, t_theirs, "statsmodels cv_ls", agree)

    n = 20_000 if quick else 100_000
    x = rng.normal(size=(n, 3))
    queries = x[:10_000]
    ours, t_ours = _timed(lambda: log_density(x, queries, bandwidth=0.3))
    tree = ScikitKernelDensity(bandwidth=0.3, rtol=1e-6).fit(x)
    theirs, t_theirs = _timed(lambda: tree.score_samples(queries))
    error = np.max(np.abs(ours - theirs))
    _row(
        "sklearn d=3", n, t_ours, t_theirs, "scikit-learn kd-tree 1e-6", f"max log diff {error:.1e}"
    )

    n = 100_000 if quick else 1_000_000
    x = rng.normal(size=n)
    grid = FFTKDE(bw=0.05).fit(x).evaluate(1024)[0]
    ours, theirs, t_ours, t_theirs, firsts = _alternating(
        lambda: kernel_density(x, grid, bandwidth=0.05, method="binned"),
        lambda: FFTKDE(bw=0.05).fit(x).evaluate(1024)[1],
    )
    exact = kernel_density(x, grid, bandwidth=0.05)
    errors = [np.max(np.abs(f - exact)) / np.max(exact) for f in (ours, theirs)]
    _row("grid d=1", n, t_ours, t_theirs, "KDEpy FFTKDE (binned)",
         "error/peak {:.1e} (theirs {:.1e}); {}".format(*errors, firsts))  # fmt: skip

    x = rng.normal(size=(n, 2))
    grid = FFTKDE(bw=0.05).fit(x).evaluate(256)[0]
    binned = Binned(tolerance=2e-3)
    ours, theirs, t_ours, t_theirs, firsts = _alternating(
        lambda: kernel_density(x, grid, bandwidth=0.05, method=binned),
        lambda: FFTKDE(bw=0.05).fit(x).evaluate(256)[1],
    )
    some = rng.choice(grid.shape[0], 1500, replace=False)
    exact = kernel_density(x, grid[some], bandwidth=0.05, method="native")
    errors = [np.max(np.abs(f[some] - exact)) / np.max(exact) for f in (ours, theirs)]
    _row("grid d=2", n, t_ours, t_theirs, "KDEpy FFTKDE (binned)",
         "error/peak {:.1e} (theirs {:.1e}); {}".format(*errors, firsts))  # fmt: skip


if __name__ == "__main__":
    main()
