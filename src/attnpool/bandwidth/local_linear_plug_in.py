"""The direct plug-in bandwidth of local linear regression (Ruppert, Sheather and Wand,
1995), as KernSmooth's ``dpill`` computes it.

The AMISE-optimal bandwidth of a local linear fit with the Gaussian kernel on ``[a, b]``
is

.. math:: h = \\left(\\frac{σ^2 (b - a)}{2\\sqrt{π}\\, θ_{22}\\, n}\\right)^{1/5},
          \\qquad θ_{22} = \\frac1n \\sum_i m''(X_i)^2 .

Both unknowns are estimated in stages: quartic fits on ``N`` blocks of the sorted data
(``N`` by Mallows' ``C_p``) give pilot ``σ²``, ``θ₂₂`` and ``θ₂₄``; these set the
bandwidth of a binned local cubic estimate of ``m''`` (``θ₂₂``, its outer 5% of nodes
left out) and of a binned local linear fit whose residuals, with the smoother's
diagonals as degrees of freedom, estimate ``σ²``. The data's outer 1% in ``x`` are left
out first, and the grid spans the rest.
"""

from __future__ import annotations

import math

import numpy as np

from .. import kernels
from .._support.hints import ArrayLike
from .._support.validation import check_positive_int
from ..smoothers.binned_polynomial import (
    TRUNCATION,
    binned_local_polynomial,
    linear_binning,
    smoother_diagonals,
)
from ..sums.local_model import LocalModel
from .rules import search_start
from .search import BandwidthSelection, constant_response

__all__ = ["local_linear_plug_in_bandwidth", "plug_in_selection"]

#: The blocked pilot fits' degree (KernSmooth's quartics).
PILOT_DEGREE = 4


def _blocks(n: int, count: int) -> list[slice]:
    """``count`` runs of the sorted rows: ``n // count`` each, the last takes the rest."""
    size = n // count
    return [slice(j * size, n if j == count - 1 else (j + 1) * size) for j in range(count)]


def _block_fits(x: np.ndarray, y: np.ndarray, count: int) -> tuple[float, np.ndarray, np.ndarray]:
    """``(residual sum of squares, m'' at each row, m'''' at each row)`` of polynomial fits
    of :data:`PILOT_DEGREE` on ``count`` blocks of the sorted rows."""
    polynomial = np.polynomial.polynomial
    rss, second, fourth = 0.0, [], []
    for rows in _blocks(x.shape[0], count):
        design = np.vander(x[rows], PILOT_DEGREE + 1, increasing=True)
        coefficients = np.linalg.lstsq(design, y[rows], rcond=None)[0]
        rss += float(np.sum((y[rows] - design @ coefficients) ** 2))
        second.append(polynomial.polyval(x[rows], polynomial.polyder(coefficients, 2)))
        fourth.append(polynomial.polyval(x[rows], polynomial.polyder(coefficients, 4)))
    return rss, np.concatenate(second), np.concatenate(fourth)


def _blocks_by_mallows(x: np.ndarray, y: np.ndarray, most: int) -> int:
    """The number of blocks (1 … ``most``) whose Mallows' ``C_p`` is least."""
    columns = PILOT_DEGREE + 1
    rss = np.array([_block_fits(x, y, count)[0] for count in range(1, most + 1)])
    n = x.shape[0]
    cp = (n - columns * most) * rss / rss[-1] + 2 * columns * np.arange(1, most + 1) - n
    return int(np.argmin(cp)) + 1


def _check_resolved(
    bandwidth: float, name: str, gridsize: int, sigma2: float, span: tuple[float, float]
) -> None:
    """An error where the ``name`` fit's ``bandwidth`` on ``[0, 1]`` reaches no node of
    the grid beside its own (data with almost no noise: the plug-in tends to 0)."""
    if TRUNCATION * bandwidth * (gridsize - 1) < 1:
        low, high = span
        raise ValueError(
            f"y: the plug-in's {name} bandwidth {bandwidth * (high - low):.3g} is below the "
            f"resolution of its grid of {gridsize} nodes over [{low:.6g}, {high:.6g}]: the "
            f"pilot fits leave almost no noise (residual variance {sigma2:.3g} of y's); "
            "increase gridsize, or select by cross-validation (bandwidth='cv' in the "
            "estimators)"
        )


def _at_the_data(
    estimate: np.ndarray,
    counts: np.ndarray,
    bandwidth: float,
    span: tuple[float, float],
    used: slice = slice(None),
) -> np.ndarray:
    """A binned estimate ``(M,)`` with the nodes outside the data (a ``range_x`` wider
    than them) and outside the ``used`` ones at 0, which a sum over the data weighs by
    their count, 0; an error where a used node's is undefined inside the data's range —
    no data within the fit's reach (KernSmooth's estimate is NaN there, and so is its
    bandwidth). ``bandwidth``: the fit's on ``[0, 1]``, which ``span`` — the grid's ends
    ``[low, high]`` — maps."""
    occupied = np.flatnonzero(counts > 0)
    inside = np.zeros(counts.size, bool)
    inside[occupied[0] : occupied[-1] + 1] = True
    outside_used = np.ones(counts.size, bool)
    outside_used[used] = False
    inside &= ~outside_used
    undefined = inside & ~np.isfinite(estimate)
    if undefined.any():
        low, high = span
        at = low + (high - low) * np.flatnonzero(undefined)[0] / (counts.size - 1)
        raise ValueError(
            f"x: the plug-in's binned fits (bandwidth {bandwidth * (high - low):.4g}) are "
            f"undefined at {at:.6g}, inside the data's range [{low:.6g}, {high:.6g}]: no "
            "data lie within their reach there (a gap, or clusters far apart), and the "
            "plug-in assumes x spread over its range; select by cross-validation "
            "(bandwidth='cv' in the estimators)"
        )
    return np.where(inside, estimate, 0.0)


def local_linear_plug_in_bandwidth(
    x: ArrayLike,
    y: ArrayLike,
    *,
    blockmax: int = 5,
    divisor: int = 20,
    trim: float = 0.01,
    proptrun: float = 0.05,
    gridsize: int = 401,
    range_x: tuple[float, float] | None = None,
    truncate: bool = True,
) -> float:
    """The direct plug-in bandwidth of a local linear fit (KernSmooth's ``dpill``).

    The Gaussian kernel's standard deviation for :class:`attnpool.LocalLinear` of one
    column (``bandwidth=`` it, or ``bandwidth="dpill"``).

    Parameters
    ----------
    x, y : arrays of shape (n,)
    blockmax : int
        The most blocks of the pilot quartic fits.
    divisor : int
        At most ``n / divisor`` blocks.
    trim : float
        The share of the data left out at each end of ``x``, in ``[0, 0.5)``.
    proptrun : float
        The share of grid nodes left out at each end in ``θ₂₂``, in ``[0, 0.5)``.
    gridsize : int
        Nodes of the binning grid.
    range_x : (float, float), optional
        The grid's ends; by default the range of the trimmed ``x``.
    truncate : bool
        Drop points beyond ``range_x``.

    Returns
    -------
    float

    References
    ----------
    Ruppert, D., Sheather, S. J. & Wand, M. P. (1995). An effective bandwidth selector for
    local least squares regression. *Journal of the American Statistical Association*
    90(432), 1257–1270. KernSmooth 2.23, ``dpill``.

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 1, 500); y = np.sin(6 * x) + rng.normal(0, 0.2, 500)
    >>> round(attnpool.local_linear_plug_in_bandwidth(x, y), 4)
    0.0308
    """
    x, y = (np.asarray(a, float).ravel() for a in (x, y))
    if x.shape != y.shape or x.shape[0] < 2 or not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError(
            "x, y: expected two finite arrays of the same length, at least 2; received "
            f"shapes {x.shape} and {y.shape}"
        )
    for value, name in ((trim, "trim"), (proptrun, "proptrun")):
        if not 0 <= value < 0.5:
            raise ValueError(f"{name}: expected a share in [0, 0.5); received {value!r}")
    blockmax = check_positive_int(blockmax, "blockmax", allow_none=False)
    divisor = check_positive_int(divisor, "divisor", allow_none=False)
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    cut = math.floor(trim * x.shape[0])
    x, y = x[cut : x.shape[0] - cut], y[cut : y.shape[0] - cut]
    n = x.shape[0]
    low, high = (float(x[0]), float(x[-1])) if range_x is None else map(float, range_x)
    if not high > low:
        raise ValueError(f"x: expected a range of values; received [{low}, {high}]")
    # the bandwidth is affine in x and free of y's location and scale: computed on x
    # mapped to [0, 1] and y standardised, then scaled back (raw powers of x shifted by
    # 1e4 lost the quartic fits, and y scaled by 1e200 overflowed the variance)
    if np.all(y == y[0]):
        raise ValueError(
            f"y: the response is constant ({float(y[0])!r}): every bandwidth fits it exactly, and "
            "the plug-in, which balances its noise against its curvature, has neither"
        )
    x = (x - low) / (high - low)
    spread = float(np.std(y / np.max(np.abs(y)))) * float(np.max(np.abs(y))) if y.any() else 0.0
    y = np.asarray((y - np.mean(y)) / (spread if spread > 0 else 1.0), float)
    a, b = 0.0, 1.0
    counts, sums = linear_binning(x, y, a, b, gridsize, truncate)
    blocks = _blocks_by_mallows(x, y, max(min(n // divisor, blockmax), 1))
    rss, second, fourth = _block_fits(x, y, blocks)
    sigma2 = rss / (n - (PILOT_DEGREE + 1) * blocks)
    theta24 = float(np.sum(second * fourth)) / n
    if not (sigma2 > 0 and theta24 != 0):
        missing = "no residual variance" if not sigma2 > 0 else "no curvature (θ₂₄ = 0)"
        raise ValueError(
            f"y: the pilot quartic fits on {blocks} block(s) leave {missing}: the plug-in "
            "bandwidth is undefined for data without noise or curvature; select by "
            "cross-validation (bandwidth='cv' in the estimators)"
        )
    pilot = sigma2 * (b - a) / (abs(theta24) * n)
    if theta24 < 0:
        pilot = (3 * pilot / (8 * math.sqrt(math.pi))) ** (1 / 7)
    elif theta24 > 0:
        pilot = (15 * pilot / (16 * math.sqrt(math.pi))) ** (1 / 7)
    _check_resolved(pilot, "pilot", gridsize, sigma2, (low, high))
    # (θ₂₂ sums the inner nodes only: the outer ones' curvature may be undefined)
    kept = slice(math.floor(proptrun * gridsize), gridsize - math.floor(proptrun * gridsize))
    curvature = _at_the_data(
        binned_local_polynomial(
            counts, sums, bandwidth=pilot, derivative=2, range_x=(a, b), binned=True
        )[1], counts, pilot, (low, high), kept
    )  # fmt: skip
    theta22 = float(np.sum(curvature[kept] ** 2 * counts[kept])) / n
    constant = 4 * (0.5 + 2 * math.sqrt(2) - 4 / 3 * math.sqrt(3)) / math.sqrt(2 * math.pi)
    variance_bandwidth = constant ** (1 / 9) * (sigma2**2 * (b - a) / (theta22 * n) ** 2) ** (1 / 9)
    _check_resolved(variance_bandwidth, "variance", gridsize, sigma2, (low, high))
    fit = _at_the_data(
        binned_local_polynomial(
            counts, sums, bandwidth=variance_bandwidth, range_x=(a, b), binned=True
        )[1], counts, variance_bandwidth, (low, high)
    )  # fmt: skip
    diagonal, product_diagonal = (
        _at_the_data(diagonals, counts, variance_bandwidth, (low, high))
        for diagonals in smoother_diagonals(counts, a, b, variance_bandwidth)
    )
    residual = np.sum(y**2) - 2 * np.sum(fit * sums) + np.sum(fit**2 * counts)
    freedom = n - 2 * np.sum(diagonal * counts) + np.sum(product_diagonal * counts)
    variance = float(residual / freedom)
    unit = (variance * (b - a) / (2 * math.sqrt(math.pi) * theta22 * n)) ** (1 / 5)
    return float(unit * (high - low))


def plug_in_selection(
    x: np.ndarray, y: np.ndarray, model: LocalModel, weights: np.ndarray | None
) -> BandwidthSelection:
    """:func:`attnpool.select_bandwidth`'s ``method="dpill"`` on its checked data
    ``x (n, 1)``, ``y (n, 1)``: :func:`local_linear_plug_in_bandwidth`, where it applies
    (a constant response: the rule of thumb, as the searches return it)."""
    served = (
        model.var_type == "c" and model.degree == 1 and kernels.is_gaussian(model.kernel)
        and np.shape(y)[1] == 1 and weights is None
    )  # fmt: skip
    if not served:
        raise ValueError(
            "method: 'dpill' is the plug-in bandwidth of a local linear fit (degree=1) of one "
            "continuous column and one response with the gaussian kernel, unweighted; "
            f"received degree={model.degree}, var_type={model.var_type!r}, "
            f"kernel={model.kernel.name!r}, {np.shape(y)[1]} responses"
            + (", weights" if weights is not None else "")
        )
    if constant_response(y, "dpill", "the rule of thumb"):
        rule = search_start(x, kernel=model.kernel, var_type=model.var_type)
        return BandwidthSelection(rule, float("nan"), "dpill", (np.array([]), np.array([])))
    h = local_linear_plug_in_bandwidth(np.asarray(x)[:, 0], np.asarray(y)[:, 0])
    return BandwidthSelection(np.array([h]), float("nan"), "dpill", (np.array([]), np.array([])))
