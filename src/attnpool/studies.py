"""Two classic claims about Nadaraya–Watson, shown rather than asserted.

- ``consistency``: with ``h = c · n^(−1/(4+d))`` the mean squared error falls like
  ``n^(−4/(4+d))`` (bias² ∝ h⁴, variance ∝ 1/(n h^d)); the cross-validated bandwidth
  follows the same rate without knowing ``c``. MSE is measured against the truth at
  interior test points of ``[0.1, 0.9]^d`` (near the boundary NW's bias is O(h), which
  would change the rate), on :func:`attnpool.datasets.wave_data`.
- ``kernels``: validation MSE for every kernel × bandwidth, each kernel's bandwidth put
  on a common scale — equal kernel standard deviation ``s``, i.e. ``h = s / σ_K`` — so
  that the kernels are compared at the same amount of smoothing. The spread across
  kernels at the best ``s`` is compared with the spread across ``s`` for one kernel.

Each study is seeded, reports progress through ``progress(done, total)`` and returns a
:class:`StudyResult` with a printed table, the numbers and the figures.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from . import kernels as _kernels
from ._support.validation import check_choice
from .bandwidth import cv_curve, rule_of_thumb, select_bandwidth
from .datasets import sine_data, wave_data, wave_truth
from .regression import local_regression, nadaraya_watson

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ._support.hints import ArrayLike

__all__ = ["STUDIES", "StudyResult", "consistency_study", "kernel_study", "run_study"]

Progress = Callable[[int, int], None] | None


@dataclass
class StudyResult:
    """A study's numbers, its printed table and its figures (file name → Figure).

    Parameters
    ----------
    name : str
    table : str
        The printed table.
    numbers : dict
        The study's numbers, by name.
    figures : dict of str to matplotlib.figure.Figure
        File name → figure.
    seconds : float
        How long the study took.

    Examples
    --------
    >>> from attnpool import studies
    >>> result = studies.run_study("kernels", quick=True)
    >>> result.name, list(result.figures)
    ('kernels', ['kernels_mse.png'])

    References
    ----------
    Stone, C. J. (1982). Optimal global rates of convergence for nonparametric
    regression. *Annals of Statistics* 10(4), 1040–1053. Wand, M. P. & Jones, M. C.
    (1995). *Kernel Smoothing*, sections 2.7 and 5.4 (canonical kernels, the rates).
    """

    name: str
    table: str
    numbers: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Figure] = field(default_factory=dict)
    seconds: float = 0.0


def _slope(sizes: ArrayLike, mse: ArrayLike) -> float:
    """Least-squares slope of log MSE against log n."""
    return float(np.polyfit(np.log(sizes), np.log(mse), 1)[0])


def _cv_bandwidth(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Leave-one-out CV: the full search in one dimension; above, the best of a grid of
    common bandwidths around Scott's (the data are isotropic), which keeps the study's
    cost at 24 exact leave-one-out passes."""
    if x.shape[1] == 1:
        return select_bandwidth(x, y).bandwidth
    centre = float(np.exp(np.mean(np.log(rule_of_thumb(x)))))
    grid = centre * np.geomspace(0.1, 2.0, 24)
    return np.full(x.shape[1], grid[int(np.argmin(cv_curve(x, y, grid)))])


def consistency_study(
    *,
    dims: Sequence[int] = (1, 2, 3),
    sizes: Sequence[int] = (50, 150, 500, 1500, 5000, 15000, 50000),
    cv_max_size: int = 5000,
    repeats: int = 3,
    constant: float = 0.3,
    noise: float = 0.5,
    n_test: int = 2000,
    seed: int = 0,
    quick: bool = False,
    progress: Progress = None,
) -> StudyResult:
    """MSE against n for the rate bandwidth ``h = constant · n^(−1/(4+d))`` and for CV.

    CV selection (exact leave-one-out) runs up to
    ``cv_max_size`` points in ``d ≥ 2``. ``quick``: d ∈ {1, 2}, n ≤ 800, one repeat.

    Parameters
    ----------
    dims : sequence of int
        Input dimensions ``d``.
    sizes : sequence of int
        Sample sizes ``n``.
    cv_max_size : int
        The largest ``n`` given a CV bandwidth in ``d ≥ 2``.
    repeats : int
        Data sets per ``(d, n)``.
    constant : float
        ``c`` of the rate bandwidth ``c · n^(−1/(4+d))``.
    noise : float
        The noise's standard deviation.
    n_test : int
        Test points, uniform on ``[0.1, 0.9]^d``.
    seed : int
        The random draws.
    quick : bool
        A short run (the docs' and the tests').
    progress : callable ``(done, total)``, optional
        Called as each simulated data set is done.

    Returns
    -------
    StudyResult
        ``numbers``: ``sizes``, the MSEs ``fixed`` and ``cv`` by ``(d, n)``, the fitted
        ``slopes`` of log MSE against log n beside the theory's ``−4/(4+d)``.

    Examples
    --------
    >>> from attnpool import studies
    >>> slopes = studies.consistency_study(quick=True).numbers["slopes"]
    >>> slopes[1]["theory"], round(slopes[1]["rate"], 2)      # log MSE against log n
    (-0.8, -0.71)

    References
    ----------
    Stone, C. J. (1982). Optimal global rates of convergence for nonparametric
    regression. *Annals of Statistics* 10(4), 1040–1053. Wand, M. P. & Jones, M. C.
    (1995). *Kernel Smoothing*, sections 2.7 and 5.4 (canonical kernels, the rates).
    """
    from . import plotting

    if quick:
        dims, sizes, repeats, n_test = (1, 2), (50, 200, 800), 1, 500
    start = time.monotonic()
    rng = np.random.default_rng(seed)
    tasks = [(d, n, r) for d in dims for n in sizes for r in range(repeats)]
    fixed: dict[tuple[int, int], list[float]] = {(d, n): [] for d in dims for n in sizes}
    chosen: dict[tuple[int, int], list[float]] = {
        (d, n): [] for d in dims for n in sizes if d == 1 or n <= cv_max_size
    }
    for done, (d, n, r) in enumerate(tasks, start=1):
        x, y = wave_data(n, d=d, noise=noise, seed=seed * 7919 + 1000 * d + r)
        test = rng.uniform(0.1, 0.9, (n_test, d))
        truth = wave_truth(test)
        h = constant * n ** (-1.0 / (4 + d))
        fit = local_regression(x, y, test, bandwidth=h)
        fixed[d, n].append(float(np.mean((fit - truth) ** 2)))
        if (d, n) in chosen:
            fit = local_regression(x, y, test, bandwidth=_cv_bandwidth(x, y))
            chosen[d, n].append(float(np.mean((fit - truth) ** 2)))
        if progress:
            progress(done, len(tasks))

    rows, slopes, curves = [], {}, {}
    for d in dims:
        theory = -4 / (4 + d)
        fixed_mse = [np.mean(fixed[d, n]) for n in sizes]
        cv_sizes = [n for n in sizes if (d, n) in chosen]
        cv_mse = [np.mean(chosen[d, n]) for n in cv_sizes]
        slopes[d] = {
            "theory": theory,
            "rate": _slope(sizes, fixed_mse),
            "cv": _slope(cv_sizes, cv_mse),
        }
        curves[f"d = {d}, h = {constant:g}·n^(−1/{4 + d})"] = (sizes, fixed_mse)
        curves[f"d = {d}, CV bandwidth"] = (cv_sizes, cv_mse)
        rows.append(f"{d:>2}  {theory:>8.3f}  {slopes[d]['rate']:>12.3f}  {slopes[d]['cv']:>12.3f}")
    header = " d  n^(-4/(4+d))  rate h slope  CV h slope"
    lines = [
        "Consistency of Nadaraya–Watson: log-log slope of the MSE against n "
        f"(n = {', '.join(str(n) for n in sizes)}; {repeats} sample(s) each)",
        header,
        "-" * len(header),
        *rows,
    ]
    references = {}
    for d in dims:  # the theoretical rate, through the first rate-bandwidth point
        first = np.mean(fixed[d, sizes[0]])
        rate = [first * (n / sizes[0]) ** slopes[d]["theory"] for n in sizes]
        references[f"n^(−4/{4 + d})"] = (sizes, rate)
    figure = plotting.plot_rates(curves, references=references)
    return StudyResult(
        "consistency",
        "\n".join(lines),
        {"sizes": list(sizes), "fixed": fixed, "cv": chosen, "slopes": slopes},
        {"consistency.png": figure},
        time.monotonic() - start,
    )


def kernel_study(
    *,
    kernels: Sequence[str] = (
        "gaussian",
        "epanechnikov",
        "triangular",
        "tricube",
        "cosine",
        "boxcar",
        "laplacian",
    ),
    scales: ArrayLike | None = None,
    n: int = 200,
    repeats: int = 20,
    seed: int = 0,
    quick: bool = False,
    progress: Progress = None,
) -> StudyResult:
    """Validation MSE (against the truth) for each kernel × common-scale bandwidth.

    ``scales`` are kernel standard deviations ``s``; kernel ``K`` uses ``h = s / σ_K``.
    Queries with no training point inside a compact kernel's support take the nearest.

    Parameters
    ----------
    kernels : sequence of str
        Kernel names.
    scales : array, optional
        Kernel standard deviations ``s`` (default: 24 from 0.03 to 1.5).
    n : int
        Training points per data set.
    repeats : int
        Data sets.
    seed : int
        The random draws.
    quick : bool
        A short run (the docs' and the tests').
    progress : callable ``(done, total)``, optional
        Called as each simulated data set is done.

    Returns
    -------
    StudyResult
        ``numbers``: ``scales``, ``kernels``, ``mse`` (kernels × scales) and the spreads
        ``across_kernels`` (at each kernel's best scale) and ``across_scales``.

    Examples
    --------
    >>> from attnpool import studies
    >>> result = studies.kernel_study(quick=True, n=100, scales=[0.1, 0.3],
    ...                               kernels=("gaussian", "boxcar"))
    >>> result.numbers["mse"].round(4)        # kernels × scales
    array([[0.0271, 0.026 ],
           [0.0292, 0.0324]])

    References
    ----------
    Stone, C. J. (1982). Optimal global rates of convergence for nonparametric
    regression. *Annals of Statistics* 10(4), 1040–1053. Wand, M. P. & Jones, M. C.
    (1995). *Kernel Smoothing*, sections 2.7 and 5.4 (canonical kernels, the rates).
    """
    from . import plotting

    if quick:
        repeats = 3
    scales = np.geomspace(0.03, 1.5, 24) if scales is None else np.asarray(scales, dtype=float)
    start = time.monotonic()
    records = [_kernels.get(k) for k in kernels]
    for record in records:
        if not (record.variance and np.isfinite(record.variance)):
            raise ValueError(
                f"kernels: {record.name!r} has no finite variance, so it cannot be put on the "
                "common scale; choose kernels with a variance (not 'constant' or 'dot')"
            )
    mse = np.zeros((len(records), len(scales)))
    for r in range(repeats):
        data = sine_data(n=n, seed=seed * 7919 + r)
        for i, record in enumerate(records):
            for j, s in enumerate(scales):
                h = s / np.sqrt(float(record.variance or 1.0))
                fit = nadaraya_watson(
                    data.x_train,
                    data.y_train,
                    data.x_val,
                    kernel=record.name,
                    bandwidth=h,
                    empty="nearest",
                )
                mse[i, j] += np.mean((fit - data.y_val) ** 2) / repeats
        if progress:
            progress(r + 1, repeats)

    best = int(np.argmin(mse.min(axis=0)))
    across_kernels = float(mse[:, best].max() - mse[:, best].min())
    reference = [r.name for r in records].index("gaussian") if "gaussian" in kernels else 0
    across_scales = float(mse[reference].max() - mse[reference].min())
    lines = [
        f"Validation MSE of Nadaraya–Watson on {n} noisy points of 2 sin(x) + x "
        f"({repeats} samples), each kernel at standard deviation s",
        f"{'kernel':<14}{'best s':>8}{'MSE there':>12}{f'MSE at s = {scales[best]:.3g}':>18}",
    ]
    for i, record in enumerate(records):
        j = int(np.argmin(mse[i]))
        lines.append(f"{record.name:<14}{scales[j]:>8.3g}{mse[i, j]:>12.4f}{mse[i, best]:>18.4f}")
    lines += [
        f"spread across kernels at s = {scales[best]:.3g}: {across_kernels:.4f}",
        f"spread across s ∈ [{scales[0]:.3g}, {scales[-1]:.3g}] for {records[reference].name}: "
        f"{across_scales:.4f} ({across_scales / max(across_kernels, 1e-300):.0f}× larger)",
    ]
    figure = plotting.plot_mse_curves(
        scales, {record.name: mse[i] for i, record in enumerate(records)}
    )
    return StudyResult(
        "kernels",
        "\n".join(lines),
        {
            "scales": scales,
            "kernels": [r.name for r in records],
            "mse": mse,
            "across_kernels": across_kernels,
            "across_scales": across_scales,
        },
        {"kernels_mse.png": figure},
        time.monotonic() - start,
    )


STUDIES: dict[str, Callable[..., StudyResult]] = {
    "consistency": consistency_study,
    "kernels": kernel_study,
}


def run_study(
    name: str, *, quick: bool = False, seed: int = 0, progress: Progress = None
) -> StudyResult:
    """Run the study called ``name`` (see :data:`STUDIES`).

    Parameters
    ----------
    name : {"consistency", "kernels"}
    quick, seed, progress
        As the study takes them.

    Returns
    -------
    StudyResult

    Examples
    --------
    >>> from attnpool import studies
    >>> list(studies.STUDIES)
    ['consistency', 'kernels']
    >>> print(studies.run_study("kernels", quick=True).table.splitlines()[0])
    Validation MSE of Nadaraya–Watson on 200 noisy points of 2 sin(x) + x (3 samples), ...

    References
    ----------
    Stone, C. J. (1982). Optimal global rates of convergence for nonparametric
    regression. *Annals of Statistics* 10(4), 1040–1053. Wand, M. P. & Jones, M. C.
    (1995). *Kernel Smoothing*, sections 2.7 and 5.4 (canonical kernels, the rates).
    """
    check_choice(name, "study", tuple(STUDIES))
    return STUDIES[name](quick=quick, seed=seed, progress=progress)
