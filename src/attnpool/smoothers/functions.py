"""``lowess`` as statsmodels calls it and ``r_lowess`` as R calls it."""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from .._support.estimator_api import is_dask
from .rules import STATSMODELS, R, Rules
from .smoother import smooth

__all__ = ["LowessCurve", "lowess", "r_lowess"]

_MISSING = ("none", "drop", "raise")


class LowessCurve(NamedTuple):
    """R's ``lowess`` result (its list of ``x`` and ``y``): the sorted ``x`` and the
    smooth at each, as :func:`r_lowess` returns them.

    Attributes
    ----------
    x : ndarray of shape (n,)
        The points, sorted (ties in their input order).
    y : ndarray of shape (n,)
        The smooth at each.

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> curve = attnpool.r_lowess([3.0, 1.0, 2.0], [6.0, 2.0, 4.0])
    >>> curve.x, curve.y
    (array([1., 2., 3.]), array([2., 4., 6.]))

    References
    ----------
    R: ``stats::lowess`` returns ``list(x = , y = )``.
    """

    x: np.ndarray
    y: np.ndarray


def lowess(
    endog: ArrayLike,
    exog: ArrayLike,
    frac: float = 2.0 / 3.0,
    it: int = 3,
    delta: float = 0.0,
    xvals: ArrayLike | None = None,
    is_sorted: bool = False,
    missing: str = "drop",
    return_sorted: bool = True,
) -> Any:
    """LOWESS (locally weighted scatterplot smoothing), with statsmodels' arguments and
    numbers.

    At each point a line is fitted by least squares with tricube weights
    ``(1 − (|x_j − x_i| / r_i)³)³``, ``r_i`` the distance to the farthest of the
    ``k = ⌊frac · n⌋`` nearest points; then ``it`` times the points are reweighted by
    the bisquare ``(1 − (e_j / 6 MAD)²)²`` of their residuals and the lines fitted
    again. The sums are exact (float64) and cost ``O(n log n)``: the tricube is a
    polynomial in ``|x − x_i|``, so every window's moments are differences of running
    sums of powers.

    Dask arrays (``endog``, ``exog`` or both) are smoothed where their blocks are: the
    rows are sorted into blocks of known ranks and each block fitted with the ``k``
    ranks on either side (:mod:`attnpool.distributed.lowess`); ties keep their input
    order, and the result is a Dask array (NumPy at ``xvals``).

    Parameters
    ----------
    endog : array_like or Dask array, shape (n,)
        The responses ``y``.
    exog : array_like or Dask array, shape (n,)
        The points ``x``.
    frac : float
        Share of the points in each window, in ``[0, 1]`` (at least two points).
    it : int
        Robustness iterations after the first fit (``0``: none).
    delta : float
        Points within ``delta`` of the last fitted one are interpolated linearly
        instead of fitted (``0.01 · ptp(x)`` is a good choice for large ``n``).
    xvals : array_like, shape (m,), optional
        Points to evaluate the smooth at, after the robustness iterations on the data
        (``delta`` must then be 0); the result is then the fits alone, in their order.
    is_sorted : bool
        Whether ``exog`` is sorted already (it is not sorted again; Dask arrays are).
    missing : {"drop", "raise", "none"}
        Non-finite pairs dropped, refused, or promised absent. A non-finite ``xvals``
        point under ``"drop"`` gets NaN in its place (statsmodels, given
        ``is_sorted=True``, leaves it out of its answer instead).
    return_sorted : bool
        ``(n, 2)`` array of the sorted ``x`` and their fits (default), or the fits
        alone in the input's order (NaN for dropped pairs).

    Returns
    -------
    ndarray or Dask array
        Float64: ``(n, 2)`` sorted pairs, or shape (n,) (or (m,) with ``xvals``).

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> x = np.arange(10.0)
    >>> attnpool.lowess(2.0 * x + 1.0, x)[:3]
    array([[0., 1.],
           [1., 3.],
           [2., 5.]])

    References
    ----------
    Cleveland, W. S. (1979). Robust locally weighted regression and smoothing
    scatterplots. *Journal of the American Statistical Association* 74, 829–836.
    statsmodels: ``statsmodels.nonparametric.smoothers_lowess.lowess``.
    """
    if is_dask(endog) or is_dask(exog):
        return _on_dask(STATSMODELS, endog, exog, frac, it, delta, xvals, missing, return_sorted)
    y, x = _vector(endog, "endog"), _vector(exog, "exog")
    if y.shape != x.shape:
        raise ValueError(f"endog and exog must have the same length; got {y.size} and {x.size}")
    frac, it, delta = _settings(frac, "frac", it, "it", delta)
    if missing not in _MISSING:
        raise ValueError(f"missing must be one of {_MISSING}; got {missing!r}")
    finite = np.isfinite(x) & np.isfinite(y)
    if not finite.all():
        if missing != "drop":
            raise ValueError(
                f"exog and endog hold {int((~finite).sum())} non-finite values "
                f"(missing={missing!r}; 'drop' drops them)"
            )
    order = np.arange(int(finite.sum())) if is_sorted else np.argsort(x[finite])
    keys, values = x[finite][order], y[finite][order]
    if xvals is not None:
        if delta != 0.0:
            raise ValueError(f"delta must be 0 with xvals; got delta={delta!r}")
        return _at_points(keys, values, frac, it, xvals, is_sorted, missing)
    fits = smooth(STATSMODELS, keys, values, frac, it, delta)
    if return_sorted:
        return np.asarray(np.column_stack([keys, fits]))
    out = np.full(x.size, np.nan)
    placed = np.empty_like(fits)
    placed[order] = fits
    out[finite] = placed
    return out


def _at_points(
    keys: np.ndarray,
    values: np.ndarray,
    frac: float,
    it: int,
    xvals: ArrayLike,
    is_sorted: bool,
    missing: str,
) -> np.ndarray:
    points = _vector(xvals, "xvals")
    finite = np.isfinite(points)
    if not finite.all() and missing != "drop":
        raise ValueError(
            f"xvals holds {int((~finite).sum())} non-finite values "
            f"(missing={missing!r}; 'drop' leaves NaN there)"
        )
    order = np.arange(int(finite.sum())) if is_sorted else np.argsort(points[finite])
    fits = smooth(STATSMODELS, keys, values, frac, it, queries=points[finite][order])
    if np.isnan(fits).any():
        warnings.warn(
            f"{int(np.isnan(fits).sum())} of the xvals could not be fitted (fewer than two "
            "weights above 1e-12 in their windows): their fits are NaN, as statsmodels' are",
            RuntimeWarning,
            stacklevel=3,
        )
    placed = np.empty_like(fits)
    placed[order] = fits
    out = np.full(points.size, np.nan)
    out[finite] = placed
    return out


def r_lowess(
    x: ArrayLike, y: ArrayLike, f: float = 2.0 / 3.0, iter: int = 3, delta: float | None = None
) -> LowessCurve:
    """LOWESS with R's arguments and numbers: ``lowess(x, y, f, iter, delta)``.

    The same smoother as :func:`lowess` with R's rules (``clowess``): the window keeps
    the ties of its right end, keys within 0.001 radii weigh 1 and beyond 0.999 weigh
    0, a slope is fitted only where the weighted spread of ``x`` exceeds 0.001 of its
    range, and the robustness iterations stop once the residuals' scale vanishes.

    Dask arrays are smoothed as by :func:`lowess`; ``x`` and ``y`` of the result are
    then Dask arrays.

    Parameters
    ----------
    x, y : array_like or Dask arrays, shape (n,)
        Finite points and responses.
    f : float
        Share of the points in each window, in ``[0, 1]``.
    iter : int
        Robustness iterations.
    delta : float, optional
        Interpolation distance; R's default, ``0.01 · (max x − min x)``, when omitted.

    Returns
    -------
    LowessCurve
        ``(x, y)``: ``x`` sorted (ties in their input order) and the smooth at each.

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> curve = attnpool.r_lowess(np.arange(5.0), np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    >>> curve.y
    array([1., 2., 3., 4., 5.])

    References
    ----------
    Cleveland, W. S. (1981). LOWESS: A program for smoothing scatterplots by robust
    locally weighted regression. *The American Statistician* 35, 54.
    R: ``stats::lowess``.
    """
    if is_dask(x) or is_dask(y):
        pairs = _on_dask(R, y, x, f, iter, delta, None, "raise", True, ("f", "iter"))
        return LowessCurve(pairs[:, 0], pairs[:, 1])
    xs, ys = _vector(x, "x"), _vector(y, "y")
    if xs.shape != ys.shape:
        raise ValueError(f"x and y must have the same length; got {xs.size} and {ys.size}")
    if not (np.isfinite(xs).all() and np.isfinite(ys).all()):
        raise ValueError("x and y must be finite (R's lowess takes no missing values)")
    if delta is None:
        delta = 0.01 * float(np.ptp(xs)) if xs.size else 0.0
    f, iter, delta = _settings(f, "f", iter, "iter", delta)
    order = np.argsort(xs, kind="stable")
    return LowessCurve(xs[order], smooth(R, xs[order], ys[order], f, iter, delta))


def _on_dask(
    rules: Rules,
    endog: Any,
    exog: Any,
    frac: float,
    it: int,
    delta: float | None,
    xvals: ArrayLike | None,
    missing: str,
    return_sorted: bool,
    names: tuple[str, str] = ("frac", "it"),
) -> Any:
    """The smooth of Dask arrays (:func:`attnpool.distributed.lowess.dask_lowess`);
    ``delta`` None: R's default, 1% of the range of ``x``."""
    frac, it, given = _settings(frac, names[0], it, names[1], 0.0 if delta is None else delta)
    delta = None if delta is None else given
    if missing not in _MISSING:
        raise ValueError(f"missing must be one of {_MISSING}; got {missing!r}")
    if xvals is not None and delta:
        raise ValueError(f"delta must be 0 with xvals; got delta={delta!r}")
    from ..distributed.lowess import dask_lowess

    points = None if xvals is None else _vector(xvals, "xvals")
    return dask_lowess(rules, endog, exog, frac, it, delta, points, missing, return_sorted)


def _vector(data: ArrayLike, name: str) -> np.ndarray:
    array = np.asarray(data)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numbers; got an array of {array.dtype}")
    array = array.astype(float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {array.shape}")
    return array


def _settings(
    frac: float, frac_name: str, it: int, it_name: str, delta: float
) -> tuple[float, int, float]:
    if not (isinstance(frac, (int, float, np.number)) and 0.0 <= float(frac) <= 1.0):
        raise ValueError(f"{frac_name} must be a number in [0, 1]; got {frac!r}")
    if isinstance(it, bool) or not isinstance(it, (int, np.integer)) or it < 0:
        raise ValueError(f"{it_name} must be a whole number ≥ 0; got {it!r}")
    if not (isinstance(delta, (int, float, np.number)) and np.isfinite(delta) and delta >= 0):
        raise ValueError(f"delta must be a finite number ≥ 0; got {delta!r}")
    return float(frac), int(it), float(delta)
