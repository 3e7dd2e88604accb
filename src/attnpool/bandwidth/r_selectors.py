"""R's data-driven bandwidths of one column: ``bw.SJ`` (Sheather & Jones), ``bw.ucv`` and
``bw.bcv``, each giving R's number.

R (Venables & Ripley's code in ``stats``) works on binned pairwise distances: with
``δ = 1.01 (max x − min x) / nb``, each point falls in bin ``trunc(x / δ)`` (truncated
towards zero, as C's cast does), and ``c_k`` counts the pairs ``i < j`` whose bins are
``k`` apart; every criterion is then a sum over ``k`` with the distance ``kδ``, cut off
where ``(kδ / h)² ≥ 1000``. As in R, the bins are anchored at 0, not at ``min x``:
shifting the data moves pairs between bins, so these bandwidths move with the data's
location by up to a few bins' share (1.2e-3 of ``bw.SJ`` on 120 points in [0, 4]
shifted by 10⁶); scaling by a power of two changes nothing. With ``d_k = (kδ / h)²``
and Gaussian derivatives:

- unbiased CV (Scott 1992, (6.67)): ``1 / (2nh√π) + Σ c_k (e^(−d/4) − √8 e^(−d/2)) /
  (n² h √π)``, minimised;
- biased CV ((6.69), corrected): ``1 / (2nh√π) + Σ c_k e^(−d/4) (d² − 12d + 12) /
  (64 n² h √π)``, minimised;
- Sheather & Jones (1991): the functionals ``φ₄(h) = (2 Σ c_k e^(−d/2)(d² − 6d + 3) + 3n)
  / (n(n − 1) h⁵ √(2π))`` and ``φ₆(h)`` likewise with ``d³ − 15d² + 45d − 15`` and
  ``− 15n``; ``"dpi"`` is the direct plug-in ``(1 / (2√π n φ₄(g)))^(1/5)``,
  ``g = (2.394 / (n T))^(1/7)``, ``T = −φ₆(1.23 s n^(−1/9))``; ``"ste"`` solves
  ``h = (1 / (2√π n φ₄(α h^(5/7))))^(1/5)``, ``α = 1.357 (φ₄(1.24 s n^(−1/7)) / T)^(1/7)``,
  ``s = min(sd, IQR / 1.349)``.

The searches are R's: Brent's root finder (``uniroot``) and minimiser (``optimize``)
on ``[0.1 h_max, h_max]`` to the tolerance ``0.1 × lower`` — coarse, so R's number is
where those algorithms stop, and it is reproduced by taking the same steps
(:func:`find_root`, :func:`~.minimizers.minimize_bounded`). ``π`` is R's ``3.14159265``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._support.hints import ArrayLike
from .._support.units import units_beyond
from .._support.validation import check_choice
from ..sums.empty_policy import user_stacklevel
from .minimizers import minimize_bounded

__all__ = [
    "biased_cv_bandwidth",
    "find_root",
    "pair_counts",
    "sheather_jones_bandwidth",
    "unbiased_cv_bandwidth",
]

#: R's value of π in these criteria.
PI = 3.14159265
#: Squared scaled distances from which a pair is left out (R's DELMAX).
CUTOFF = 1000.0
#: The largest magnitudes of a column computed in its own units (:func:`_in_unit`).
ORDINARY = (2.0**-100, 2.0**100)


def pair_counts(x: np.ndarray, bins: int) -> tuple[float, np.ndarray]:
    """``(δ, c)``: R's bin width and the counts ``c_k`` (shape (bins,)) of the pairs whose
    bins are ``k`` apart, as R's pairwise loop counts them: from the autocorrelation of
    the bins' histogram, or pair by pair where there are fewer pairs than bins squared."""
    width = float(np.ptp(x)) * 1.01 / bins
    if not width > 0:
        raise ValueError("x: the data are constant; a bandwidth needs some spread")
    index = np.trunc(x / width).astype(np.int64)
    index -= index.min()
    histogram = np.bincount(index).astype(np.float64)
    counts = np.zeros(bins)
    if x.size * (x.size - 1) // 2 <= histogram.size**2:
        for start in range(0, x.size, max(1, 2**22 // x.size)):
            rows = index[start : start + max(1, 2**22 // x.size), None]
            gaps = np.abs(rows - index[None, :]).ravel()
            counts += np.bincount(gaps, minlength=bins)[:bins]
        counts[0] -= x.size  # each point with itself
        return width, counts / 2.0  # each pair twice
    lags = np.correlate(histogram, histogram, mode="full")[histogram.size - 1 :]
    counts[: min(bins, lags.size)] = lags[:bins]
    counts[0] = float(np.sum(histogram * (histogram - 1.0)) / 2.0)
    return width, np.rint(counts)


def _scaled(h: float, width: float, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(d_k, c_k)`` for the bins before the cut-off."""
    delta = (np.arange(counts.size) * width / h) ** 2
    kept = delta < CUTOFF
    if not kept.all():
        kept[np.argmin(kept) :] = False  # R stops at the first bin past it
    return delta[kept], counts[kept]


def _phi4(h, n, width, counts):
    d, c = _scaled(h, width, counts)
    total = 2.0 * np.sum(np.exp(-d / 2) * (d * d - 6 * d + 3) * c) + 3.0 * n
    return total / (n * (n - 1) * h**5 * math.sqrt(2 * PI))


def _phi6(h, n, width, counts):
    d, c = _scaled(h, width, counts)
    total = 2.0 * np.sum(np.exp(-d / 2) * (d**3 - 15 * d * d + 45 * d - 15) * c) - 15.0 * n
    return total / (n * (n - 1) * h**7 * math.sqrt(2 * PI))


def _ucv(h, n, width, counts):
    d, c = _scaled(h, width, counts)
    total = np.sum((np.exp(-d / 4) - math.sqrt(8.0) * np.exp(-d / 2)) * c)
    return 1 / (2 * n * h * math.sqrt(PI)) + total / (n * n * h * math.sqrt(PI))


def _bcv(h, n, width, counts):
    d, c = _scaled(h, width, counts)
    total = np.sum(np.exp(-d / 4) * (d * d - 12 * d + 12) * c)
    return 1 / (2 * n * h * math.sqrt(PI)) + total / (64 * n * n * h * math.sqrt(PI))


def find_root(function, low, high, f_low, f_high, tol, maxiter=1000) -> float:
    """A root of ``function`` between ``low`` and ``high`` (where it takes ``f_low`` and
    ``f_high``, of opposite signs) by Brent's method — bisection, or linear or inverse
    quadratic interpolation where it falls well inside — to ``tol`` (plus ``4 ε |x|``),
    step for step as R's ``uniroot``."""
    eps = np.finfo(float).eps
    a, b, fa, fb = low, high, f_low, f_high
    c, fc = a, fa
    if fa == 0.0:
        return a
    if fb == 0.0:
        return b
    for _ in range(maxiter + 1):
        previous = b - a
        if abs(fc) < abs(fb):  # b the best so far
            a, b, c = b, c, b
            fa, fb, fc = fb, fc, fb
        tol_act = 2 * eps * abs(b) + tol / 2
        step = (c - b) / 2
        if abs(step) <= tol_act or fb == 0.0:
            return b
        if abs(previous) >= tol_act and abs(fa) > abs(fb):
            cb = c - b
            if a == c:  # two points: the secant
                t1 = fb / fa
                p, q = cb * t1, 1.0 - t1
            else:  # three: inverse quadratic interpolation
                q, t1, t2 = fa / fc, fb / fc, fb / fa
                p = t2 * (cb * q * (q - t1) - (b - a) * (t1 - 1.0))
                q = (q - 1.0) * (t1 - 1.0) * (t2 - 1.0)
            p, q = (p, -q) if p > 0 else (-p, q)
            if p < 0.75 * cb * q - abs(tol_act * q) / 2 and p < abs(previous * q / 2):
                step = p / q
        if abs(step) < tol_act:
            step = tol_act if step > 0 else -tol_act
        a, fa = b, fb
        b += step
        fb = function(b)
        if (fb > 0 and fc > 0) or (fb < 0 and fc < 0):
            c, fc = a, fa
    return b


def _column(x: ArrayLike) -> np.ndarray:
    values = np.asarray(x, dtype=np.float64)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        raise ValueError(f"x: expected one column, shape (n,); received shape {values.shape}")
    if values.size < 2:
        raise ValueError(f"x: a bandwidth needs at least 2 points; received {values.size}")
    if not np.isfinite(values).all():
        raise ValueError("x: expected finite numbers; received NaN or infinity")
    return values


def _in_unit(values: np.ndarray) -> tuple[np.ndarray, float]:
    """``(values / unit, unit)``: a column whose largest magnitude lies beyond
    :data:`ORDINARY` divided by a power of two at or above it (exact), where R's powers of
    the bandwidth (``h⁷`` in ``φ₆``) would leave the float range; else as it is (``unit``
    1), computed as R computes it."""
    unit = units_beyond(np.max(np.abs(values)), ORDINARY)
    return (values, 1.0) if unit is None else (values / unit, float(unit))


def _check_bins(nb: int) -> int:
    if isinstance(nb, bool) or not isinstance(nb, (int, np.integer)) or nb < 1:
        raise ValueError(f"nb: expected a whole number ≥ 1 of bins; received {nb!r}")
    return int(nb)


def _spread(x: np.ndarray) -> float:
    """R's ``min(sd(x), IQR(x) / 1.349)``."""
    upper, lower = np.percentile(x, [75, 25])
    return min(float(np.std(x, ddof=1)), float(upper - lower) / 1.349)


def sheather_jones_bandwidth(
    x: ArrayLike,
    method: str = "ste",
    nb: int = 1000,
    lower: float | None = None,
    upper: float | None = None,
    tol: float | None = None,
) -> float:
    """Sheather & Jones's plug-in bandwidth of one column, R's ``bw.SJ(x, nb, lower, upper,
    method, tol)``: a Gaussian kernel's standard deviation.

    Parameters
    ----------
    x : array_like of shape (n,)
    method : {"ste", "dpi"}
        Solve the equation (R's default), or the direct plug-in.
    nb : int
        Bins of the pairwise distances.
    lower, upper : float, optional
        Where ``"ste"`` looks for the root (``0.1 h_max`` and ``h_max = 1.144 s
        n^(−1/5)``, widened as R widens them until the root is bracketed).
    tol : float, optional
        The root's tolerance (``0.1 × lower``).

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> x = np.r_[np.linspace(0.0, 1.0, 20), np.linspace(3.0, 4.0, 20)]
    >>> round(attnpool.sheather_jones_bandwidth(x), 4)
    0.2782

    References
    ----------
    Sheather, S. J. & Jones, M. C. (1991). A reliable data-based bandwidth selection
    method for kernel density estimation. *JRSS B* 53, 683–690. R: ``stats::bw.SJ``.
    """
    values, unit = _in_unit(_column(x))
    lower, upper, tol = (None if v is None else float(v) / unit for v in (lower, upper, tol))
    check_choice(method, "method", ("ste", "dpi"))
    n, (width, counts) = values.size, pair_counts(values, _check_bins(nb))
    scale = _spread(values)
    if not scale > 0:
        raise ValueError("x: the interquartile range is 0; Sheather–Jones needs a spread")
    a = 1.24 * scale * n ** (-1 / 7)
    b = 1.23 * scale * n ** (-1 / 9)
    c1 = 1 / (2 * math.sqrt(PI) * n)
    td = -_phi6(b, n, width, counts)
    if not (math.isfinite(td) and td > 0):
        raise ValueError("x: the sample is too sparse to estimate φ₆ (R: 'to find TD')")
    if method == "dpi":
        return float((c1 / _phi4((2.394 / (n * td)) ** (1 / 7), n, width, counts)) ** 0.2) * unit
    alpha = 1.357 * (_phi4(a, n, width, counts) / td) ** (1 / 7)
    if not math.isfinite(alpha):
        raise ValueError("x: the sample is too sparse to estimate φ₄ (R: 'to find alph2')")

    def equation(h: float) -> float:
        return float((c1 / _phi4(alpha * h ** (5 / 7), n, width, counts)) ** 0.2 - h)

    widen = lower is None or upper is None
    hmax = 1.144 * scale * n ** (-0.2)
    low = 0.1 * hmax if lower is None else float(lower)
    high = hmax if upper is None else float(upper)
    tolerance = 0.1 * low if tol is None else float(tol)
    for attempt in range(1, 101):
        f_low, f_high = equation(low), equation(high)
        if f_low * f_high <= 0:
            return find_root(equation, low, high, f_low, f_high, tolerance) * unit
        if attempt > 99 or not widen:
            break
        if attempt % 2:
            high *= 1.2
        else:
            low /= 1.2
    raise ValueError(
        "lower, upper: no solution of the Sheather–Jones equation in "
        f"[{low * unit:.4g}, {high * unit:.4g}]"
    )


def _cv_bandwidth(x, nb, lower, upper, tol, criterion) -> float:
    values, unit = _in_unit(_column(x))
    lower, upper, tol = (None if v is None else float(v) / unit for v in (lower, upper, tol))
    n, (width, counts) = values.size, pair_counts(values, _check_bins(nb))
    hmax = 1.144 * float(np.std(values, ddof=1)) * n ** (-0.2)
    low = 0.1 * hmax if lower is None else float(lower)
    high = hmax if upper is None else float(upper)
    tolerance = 0.1 * low if tol is None else float(tol)
    h, _ = minimize_bounded(lambda h: float(criterion(h, n, width, counts)), low, high,
                            xatol=tolerance)  # fmt: skip
    if h < low + tolerance or h > high - tolerance:
        warnings.warn(
            f"the {criterion.__name__[1:]} criterion's minimum is at one end of "
            f"[{low * unit:.4g}, {high * unit:.4g}] (R: 'minimum occurred at one end of the "
            "range')",
            RuntimeWarning,
            stacklevel=user_stacklevel(),
        )
    return float(h) * unit


def unbiased_cv_bandwidth(
    x: ArrayLike,
    nb: int = 1000,
    lower: float | None = None,
    upper: float | None = None,
    tol: float | None = None,
) -> float:
    """Unbiased (least-squares) cross-validation on binned distances, R's ``bw.ucv``: a
    Gaussian kernel's standard deviation.

    Parameters
    ----------
    x : array_like of shape (n,)
    nb : int
        Bins of the pairwise distances.
    lower, upper : float, optional
        Where the criterion is minimised (``0.1 h_max`` and ``h_max = 1.144 sd
        n^(−1/5)``); a ``RuntimeWarning`` where the minimum is at an end, as R warns.
    tol : float, optional
        The minimiser's tolerance (``0.1 × lower``).

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> x = np.r_[np.linspace(0.0, 1.0, 20), np.linspace(3.0, 4.0, 20)]
    >>> round(attnpool.unbiased_cv_bandwidth(x), 4)
    0.2934

    References
    ----------
    Scott, D. W. (1992). *Multivariate Density Estimation*, (6.67). R: ``stats::bw.ucv``.
    """
    return _cv_bandwidth(x, nb, lower, upper, tol, _ucv)


def biased_cv_bandwidth(
    x: ArrayLike,
    nb: int = 1000,
    lower: float | None = None,
    upper: float | None = None,
    tol: float | None = None,
) -> float:
    """Biased cross-validation on binned distances, R's ``bw.bcv``: a Gaussian kernel's
    standard deviation, minimising ``1 / (2nh√π) + Σ c_k e^(−d/4)(d² − 12d + 12) /
    (64 n² h √π)``.

    Parameters
    ----------
    x : array_like of shape (n,)
    nb : int
        Bins of the pairwise distances.
    lower, upper : float, optional
        Where the criterion is minimised (``0.1 h_max`` and ``h_max = 1.144 sd
        n^(−1/5)``); a ``RuntimeWarning`` where the minimum is at an end, as R warns.
    tol : float, optional
        The minimiser's tolerance (``0.1 × lower``).

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> x = np.r_[np.linspace(0.0, 1.0, 20), np.linspace(3.0, 4.0, 20)]
    >>> round(attnpool.biased_cv_bandwidth(x), 4)
    0.2937

    References
    ----------
    Scott, D. W. & Terrell, G. R. (1987). Biased and unbiased cross-validation in density
    estimation. *JASA* 82, 1131–1146; Scott (1992), (6.69). R: ``stats::bw.bcv``.
    """
    return _cv_bandwidth(x, nb, lower, upper, tol, _bcv)
