"""The resolution of recorded data: the smallest bandwidth a density search considers.

Values recorded to a resolution — waiting times in whole minutes, durations to a tenth
— repeat. A leave-one-out criterion then sees each point's tied twins at distance 0,
``K(0)/h`` each, and grows (likelihood) or falls (least squares) without end as
``h → 0``; a plug-in's fixed point likewise finds a root at the spikes. Below the
spacing of the recorded values a density resolves nothing the data can show, so the
density searches keep each continuous column's bandwidth at or above half its
resolution — the smallest gap between distinct values — where that column has ties.
A column without ties is left free (its smallest gap is no resolution, and its
criterion has no such limit).

Rows that *nearly* repeat — the same ``y`` at ``x`` a rounding apart (data computed
twice, or ties jittered apart) — are not merged as identical rows are
(:func:`attnpool.sums.observation_weights.merged_rows`): each then predicts its near
twin exactly, and a regression's CV or AICc is lowest where the fit reproduces every
row to rounding, at a bandwidth below the twins' distance. A search that ends there
says so (:func:`warn_if_interpolating`).

>>> import numpy as np
>>> resolution(np.array([[1.0], [2.0], [2.0], [4.0]]))
array([1.])
>>> resolution(np.array([[0.3], [1.7], [2.2]]))
array([0.])
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..sums.empty_policy import user_stacklevel

__all__ = [
    "INTERPOLATING",
    "RESOLUTION_SHARE",
    "TiedDataWarning",
    "bandwidth_floor",
    "interpolates",
    "resolution",
    "response_variance",
    "warn_if_interpolating",
]

#: The share of a column's resolution below which its bandwidth is not searched.
RESOLUTION_SHARE = 0.5
#: A residual mean square at most this share of the response's variance: the fit
#: reproduces its rows to rounding.
INTERPOLATING = 1e-12


def resolution(x: np.ndarray) -> np.ndarray:
    """``(d,)``: each column of ``x (n, d)``'s smallest gap between distinct values where
    some value repeats, else 0."""
    x = np.asarray(x, np.float64)
    found = np.zeros(x.shape[1])
    for j in range(x.shape[1]):
        values = np.sort(x[:, j])
        gaps = np.diff(values)
        if gaps.size and np.any(gaps == 0) and np.any(gaps > 0):
            found[j] = float(np.min(gaps[gaps > 0]))
    return found


def bandwidth_floor(x: np.ndarray) -> np.ndarray:
    """``(d,)``: the smallest bandwidth searched in each column (:data:`RESOLUTION_SHARE`
    of its :func:`resolution`; 0 where no value repeats)."""
    return RESOLUTION_SHARE * resolution(x)


class TiedDataWarning(UserWarning):
    """A search's criterion degenerates on tied or nearly tied rows (this module): a
    density search stopped at the floor that tied values set (its criterion has no
    optimum above it), or a regression's criterion is lowest where the fit reproduces
    every row to rounding (rows nearly repeat and predict each other).

    Examples
    --------
    >>> import warnings, numpy as np, attnpool
    >>> rng = np.random.default_rng(3)
    >>> x = np.r_[np.zeros(40), rng.integers(-30, 30, 60) * 1.2]   # many ties
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = attnpool.select_density_bandwidth(x, method="cv_ls")
    >>> caught[0].category.__name__
    'TiedDataWarning'

    References
    ----------
    Silverman, B. W. (1986). *Density Estimation for Statistics and Data Analysis*,
    section 3.4.3 (least-squares cross-validation degenerates on discretised data).
    """


def interpolates(method: str, value: float, tried: np.ndarray, variance: float) -> bool:
    """Whether a regression criterion's ``value`` (``"cv"``: a mean squared error;
    ``"aicc"``: ``log σ̂² + penalty``, the penalty at least 1) says the fit reproduces
    every row to rounding — a mean square at most :data:`INTERPOLATING` times the
    response's ``variance`` — while some bandwidth ``tried`` (their values) does not.
    (A local linear fit of a ``y`` linear in ``x`` reproduces it at every bandwidth.)"""
    if not (variance > 0 and np.isfinite(value)):
        return False
    if method == "cv":
        limit = INTERPOLATING * variance
    else:  # σ̂² ≤ exp(value − 1)
        limit = 1.0 + math.log(INTERPOLATING * variance)
    tried = np.asarray(tried, np.float64)
    return bool(value <= limit and np.any(tried[np.isfinite(tried)] > limit))


def response_variance(y: np.ndarray, weights: np.ndarray | None = None) -> float:
    """The mean over the columns of ``y (n,)`` or ``(n, p)`` of their variance, each row
    counted by its weight (``weights (n,)`` or None)."""
    y = np.asarray(y, np.float64).reshape(len(y), -1)
    w = np.ones(y.shape[0]) if weights is None else np.asarray(weights, np.float64)
    mean = w @ y / w.sum()
    return float(np.mean(w @ (y - mean) ** 2 / w.sum()))


def warn_if_interpolating(method: str, value: float, tried: np.ndarray, variance: float) -> None:
    """A :class:`TiedDataWarning` where the search's criterion :func:`interpolates` a
    response of this ``variance`` (:func:`response_variance`), none otherwise."""
    if interpolates(method, value, tried, variance):
        warnings.warn(
            f"bandwidth: the {method} criterion is lowest where the fit reproduces every "
            "row to rounding: rows nearly repeat (the same y at x a rounding apart) and "
            "predict each other. Round X to the precision it was recorded at (identical "
            "rows are merged into one of their count) or take a rule of thumb ('scott')",
            TiedDataWarning,
            stacklevel=user_stacklevel(),
        )
