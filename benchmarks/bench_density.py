"""Kernel densities against statsmodels, scikit-learn and KDEpy, timed in one run.

Cases (each library on the same data and bandwidth; the agreement is printed beside the
times):

- ``pdf``: the density at every sample point, Gaussian kernel, fixed bandwidth —
  statsmodels' ``KDEMultivariate.pdf`` (n ≤ ``--sm-max``);
- ``cv_ml``: likelihood cross-validation of one column — statsmodels'
  ``KDEMultivariate(bw="cv_ml")``;
- ``cv_ls``: least-squares cross-validation of that column — statsmodels' ``cv_ls``
  (ours by the ``fgt`` backend, ``O(n)`` an evaluation, from 1000 rows);
- ``cv_ml weighted``: likelihood cross-validation with observation weights, against our
  unweighted search of the same rows (NumPy pairs summed a weighted search's criterion,
  ``O(n²)``, before the ``fgt`` backend's leave-one-out sums took it);
- ``cv_ls mixed``: least squares, a continuous and an unordered column;
- ``cv_ml cond.``: likelihood cross-validation of a conditional density ``f(y | x)``,
  one column each — statsmodels' ``KDEMultivariateConditional(bw="cv_ml")``, its
  criterion compared at both bandwidths;
- ``entropy``: the differential entropy of a one-column Gaussian estimate —
  statsmodels' ``KDEUnivariate.entropy`` (adaptive quadrature over the line);
- ``sklearn``: scikit-learn's ``KernelDensity`` (kd-tree, ``rtol=1e-6``) in three
  columns, exact for us;
- ``grid``: KDEpy's ``FFTKDE`` on its grid of 1024 points, both binned (ours
  ``method="binned"``, each density within 1e-3 of itself); the errors against the
  exact density, relative to its peak, beside the times;
- ``grid d=2``: the same on KDEpy's 256 × 256 grid, ours within 2e-3 of each density
  (at the peak, no more than KDEpy's error there); the exact density at 1500 of the
  grid's points for the errors;
- both grids again over 10³, 10⁵ and 10⁷ points (``--quick``: 10³ and 10⁵).

The grids' times are medians of five calls of each, taken in turns (the grid computed
beforehand); the first calls are printed beside them.

Every case is the first call of its kind in this process, on compiled loops an earlier
process built: a first process, on an empty cache (``ATTNPOOL_CACHE`` a new folder),
runs each of our cases once, the way a first use on a new machine would, and its pdf
at 10⁴ — the import, the loops' build and the call — is timed against statsmodels'
import and pdf in a process of its own (row ``pdf new cache``). That process's cache is
then this one's.

Usage: ``python benchmarks/bench_density.py [--quick]``.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

#: A first process: the import and a pdf at 10⁴, timed; then (ours) every case once.
FIRST_PROCESS = """
import sys, time, json, warnings
start = time.perf_counter()
import numpy as np
x = np.random.default_rng(0).normal(size=(10_000, 1))
if sys.argv[1] == "statsmodels":
    from statsmodels.nonparametric.kernel_density import KDEMultivariate
    KDEMultivariate(data=[x[:, 0]], var_type="c", bw=[0.2]).pdf(x)
    print(json.dumps(time.perf_counter() - start))
    sys.exit()
from attnpool import Binned, kernel_density, log_density, select_density_bandwidth
kernel_density(x, x, bandwidth=0.2)
print(json.dumps(time.perf_counter() - start))
warnings.simplefilter("ignore", FutureWarning)
rng = np.random.default_rng(1)
select_density_bandwidth(x[:2000], method="cv_ml")
mixed = np.c_[rng.normal(size=200), rng.integers(0, 4, 200)]
select_density_bandwidth(mixed, method="cv_ls", var_type="cu")
log_density(rng.normal(size=(100_000, 3)), rng.normal(size=(1000, 3)), bandwidth=0.3)
one = rng.normal(size=1_000_000)
kernel_density(one, np.linspace(-6, 6, 1024), bandwidth=0.05, method="binned")
axis = np.linspace(-5, 5, 256)
lattice = np.stack(np.meshgrid(axis, axis, indexing="ij"), -1).reshape(-1, 2)
kernel_density(rng.normal(size=(1_000_000, 2)), lattice, bandwidth=0.05,
               method=Binned(tolerance=2e-3))
"""


def _first_process(library: str, cache: str) -> float:
    """Seconds to import ``library`` and compute a pdf at 10⁴ in a new process on the
    compiled loops' ``cache``."""
    environment = {**os.environ, "ATTNPOOL_CACHE": cache}
    run = subprocess.run([sys.executable, "-c", FIRST_PROCESS, library], env=environment,
                         capture_output=True, text=True, check=True)  # fmt: skip
    return float(json.loads(run.stdout.splitlines()[0]))


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
    print(f"{'case':<14}{'n':>9}  {'ours (s)':>9}  {'them (s)':>9}  {'ratio':>10}  "
          f"{'against':<26}agreement")  # fmt: skip
    cache = tempfile.mkdtemp(prefix="attnpool-bench-")
    atexit.register(shutil.rmtree, cache, True)
    first, theirs_first = _first_process("attnpool", cache), _first_process("statsmodels", cache)
    os.environ["ATTNPOOL_CACHE"] = cache  # this process loads the loops the first one built
    _row("pdf new cache", 10_000, first, theirs_first, "statsmodels pdf",
         "new processes: imports; ours builds its loops")  # fmt: skip

    warnings.simplefilter("ignore", FutureWarning)
    from KDEpy import FFTKDE
    from sklearn.neighbors import KernelDensity as ScikitKernelDensity
    from statsmodels.nonparametric.kernel_density import KDEMultivariate

    from attnpool import Binned, kernel_density, log_density, select_density_bandwidth

    rng = np.random.default_rng(0)
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

    ours, t_ours = _timed(lambda: select_density_bandwidth(x, method="cv_ls"))
    theirs, t_theirs = _timed(lambda: KDEMultivariate(data=[x[:, 0]], var_type="c", bw="cv_ls"))
    _row("cv_ls", n, t_ours, t_theirs, "statsmodels cv_ls",
         f"h {ours.bandwidth[0]:.5f} vs {theirs.bw[0]:.5f}")  # fmt: skip

    n = 2000 if quick else 20_000  # (weighted: the fgt backend's leave-one-out sums)
    x, w = rng.normal(size=(n, 1)), rng.uniform(0.5, 2.0, n)
    ours, t_ours = _timed(lambda: select_density_bandwidth(x, method="cv_ml", weights=w))
    plain, t_plain = _timed(lambda: select_density_bandwidth(x, method="cv_ml"))
    _row("cv_ml weighted", n, t_ours, t_plain, "ours unweighted",
         f"h {ours.bandwidth[0]:.5f} (unweighted {plain.bandwidth[0]:.5f})")  # fmt: skip

    n = 200 if quick else 500
    x = np.c_[rng.normal(size=n), rng.integers(0, 4, n)]
    ours, t_ours = _timed(lambda: select_density_bandwidth(x, method="cv_ls", var_type="cu"))
    theirs, t_theirs = _timed(
        lambda: KDEMultivariate(data=[x[:, 0], x[:, 1]], var_type="cu", bw="cv_ls")
    )
    agree = (f"λ {ours.bandwidth[1]:.3g} vs {theirs.bw[1]:.3g}: objective "
             f"{ours.objective:.6g} vs {theirs.imse(theirs.bw):.6g}")  # fmt: skip
    _row("cv_ls mixed", n, t_ours, t_theirs, "statsmodels cv_ls", agree)

    from statsmodels.nonparametric.kernel_density import KDEMultivariateConditional

    from attnpool import select_conditional_bandwidth
    from attnpool.density.conditional_selection import conditional_criterion

    n = 500 if quick else 2000  # (the joint's and x's sums on the compiled loops)
    x = rng.normal(size=n)
    y = np.sin(2 * x) + 0.5 * rng.normal(size=n)
    ours, t_ours = _timed(lambda: select_conditional_bandwidth(x, y, method="cv_ml"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (its 0/0 at small bandwidths)
        theirs, t_theirs = _timed(lambda: KDEMultivariateConditional(
            endog=[y], exog=[x], dep_type="c", indep_type="c", bw="cv_ml"))  # fmt: skip
    at_theirs = conditional_criterion(x, y, theirs.bw[1], theirs.bw[0])
    _row("cv_ml cond.", n, t_ours, t_theirs, "statsmodels conditional",
         f"criterion {ours.objective:.8g} vs {at_theirs:.8g} at theirs")  # fmt: skip

    from statsmodels.nonparametric.kde import KDEUnivariate

    from attnpool import KernelDensity

    n = 1000 if quick else 5000
    x = rng.normal(size=n)
    univariate = KDEUnivariate(x)
    univariate.fit(bw=0.2, fft=False)
    ours, t_ours = _timed(lambda: KernelDensity(bandwidth=0.2).fit(x[:, None]).entropy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (its quadrature over the whole line)
        theirs, t_theirs = _timed(lambda: univariate.entropy)
    _row("entropy", n, t_ours, t_theirs, "statsmodels KDEUnivariate",
         f"rel. diff {abs(ours / theirs - 1):.1e}")  # fmt: skip

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

    # the same grids over fewer and more points (medians of three calls each)
    for n in (1000, 100_000) if quick else (1000, 100_000, 10_000_000):
        for d, points, method in ((1, 1024, "binned"), (2, 256, binned)):
            x = rng.normal(size=n if d == 1 else (n, d))
            grid = FFTKDE(bw=0.05).fit(x).evaluate(points)[0]
            *_, t_ours, t_theirs, firsts = _alternating(
                lambda x=x, grid=grid, method=method: kernel_density(
                    x, grid, bandwidth=0.05, method=method
                ),
                lambda x=x, points=points: FFTKDE(bw=0.05).fit(x).evaluate(points)[1],
                runs=3,
            )
            _row(f"grid d={d}", n, t_ours, t_theirs, "KDEpy FFTKDE (binned)", firsts)


if __name__ == "__main__":
    main()
