"""Flat criteria: a regression's criterion at its best over a whole range of small
bandwidths, so that it cannot choose among them.

- **At rounding.** Where ``y`` is a noise-free function of ``X`` that the fit can
  follow — classes apart from one another, steps between clusters — or where rows
  nearly repeat (the same ``y`` at ``x`` a rounding apart: data computed twice, ties
  jittered apart, which are not merged as identical rows are), CV and AICc are 0 or
  ``−∞`` to rounding: the fit reproduces every row. Two classes 10 apart got
  ``h = 9·10⁻⁵`` wherever the rounding noise was lowest (each point classed by its
  nearest neighbour), twinned rows ``h = 6·10⁻¹⁵``.
- **At the ``h → 0`` limit.** An unlucky sample — a few rows, each close to one whose
  ``y`` is close to its own — can have its lowest CV where each row is predicted by its
  nearest neighbours; below some bandwidth CV is that limit to rounding, and the search
  stopped anywhere under it (``10⁻⁴`` times the rows' spacing). (AICc's penalty grows
  without end there; it does not degenerate so.)

Among bandwidths that the criterion cannot tell apart, the searches take the smoothest:
the largest, every continuous column scaled by one factor, at which the criterion is
still at that level (:func:`smoothest_at_rounding`), with each column the fit does not
need there smoothed out (as the searches smooth it out where the criterion is not flat),
and say so with a :class:`FlatCriterionWarning`. A local linear fit of a ``y`` linear in
``X`` reproduces it at *every* bandwidth; that is no such range, and its search is left
as it is.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..sums.empty_policy import user_stacklevel

__all__ = [
    "AT_ROUNDING",
    "BELOW",
    "FLAT",
    "FlatCriterionWarning",
    "FlatSettings",
    "at_rounding",
    "response_variance",
    "rounding_limit",
    "smoothest_at_rounding",
    "smoothest_flat",
    "warn_flat",
]

#: A residual mean square at most this share of the response's variance: the fit
#: reproduces its rows to rounding.
AT_ROUNDING = 1e-12
#: Factors tried in each round of :func:`smoothest_at_rounding`.
ROUND = 4
#: The farthest factor tried above the search's bandwidth: ``8^16 ≈ 3·10¹⁴``.
LARGEST_POWER = 16
#: Rounds narrowing the bracket (each by ``ROUND + 1`` in log): to ~10⁻⁴ of a factor 8, so
#: that where the search stopped inside the flat range (rounding noise) does not show.
NARROWING_ROUNDS = 6


class FlatCriterionWarning(UserWarning):
    """A regression's bandwidth or span search whose criterion is flat at its best over a
    range of small bandwidths or spans — at rounding (the fit reproduces every row) or at
    its ``h → 0`` limit (each row predicted by its nearest neighbours) — so that it cannot
    choose among them: the largest is returned (:mod:`attnpool.bandwidth.flat_criteria`).

    Examples
    --------
    >>> import warnings, numpy as np, attnpool
    >>> x = np.r_[np.linspace(0.0, 1.0, 30), np.linspace(10.0, 11.0, 30)]
    >>> labels = np.repeat([0, 1], 30)                       # two classes far apart
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     model = attnpool.NadarayaWatsonClassifier().fit(x[:, None], labels)
    >>> caught[0].category.__name__, bool(model.bandwidth_[0] > 0.3)
    ('FlatCriterionWarning', True)

    References
    ----------
    Härdle, W., Hall, P. & Marron, J. S. (1988). How far are automatically chosen
    regression smoothing parameters from their optimum? *JASA* 83(401), 86–95 (the
    criterion: a mean squared error, 0 where the fit reproduces the data).
    """


def response_variance(y: np.ndarray, weights: np.ndarray | None = None) -> float:
    """The mean over the columns of ``y (n,)`` or ``(n, p)`` of their variance, each row
    counted by its weight (``weights (n,)`` or None)."""
    y = np.asarray(y, np.float64).reshape(len(y), -1)
    w = np.ones(y.shape[0]) if weights is None else np.asarray(weights, np.float64)
    mean = w @ y / w.sum()
    return float(np.mean(w @ (y - mean) ** 2 / w.sum()))


def rounding_limit(method: str, variance: float) -> float:
    """The criterion ``method``'s value at and below which its fit reproduces every row
    of a response of this ``variance``: a mean squared error (CV, LOESS's GCV, which is
    at least ``σ̂²``) :data:`AT_ROUNDING` times it; AICc (``log σ̂² + penalty``, the
    penalty at least 1) ``1 + log`` of that, which bounds ``σ̂²`` by it."""
    limit = AT_ROUNDING * variance
    return 1.0 + math.log(limit) if method == "aicc" else limit


def at_rounding(method: str, value: float, tried: np.ndarray, variance: float) -> bool:
    """Whether the criterion's ``value`` is at rounding (:func:`rounding_limit`) while
    some bandwidth ``tried`` (their values) is not."""
    if not (variance > 0 and np.isfinite(value)):
        return False
    limit = rounding_limit(method, variance)
    tried = np.asarray(tried, np.float64)
    return bool(value <= limit and np.any(tried[np.isfinite(tried)] > limit))


def smoothest_at_rounding(
    values_at: Callable[[np.ndarray], np.ndarray],
    value: float,
    limit: float,
    largest: float = math.inf,
) -> tuple[float, float]:
    """``(factor, value)``: the largest factor from 1 to ``largest`` (beyond which the
    criterion does not change: every column smoothed out), found to ~10⁻⁴, at which
    ``values_at(factors (k,)) → (k,)`` — the criterion at the search's bandwidths scaled by
    each factor — is at most ``limit``, and the criterion there (``value`` at factor 1).
    Each call asks for at most :data:`ROUND` factors (one pass of a Dask search): powers
    of 8 until one is above ``limit``, then points between the last two."""
    top = min(float(LARGEST_POWER), math.log(max(largest, 1.0), 8.0))
    if top <= 0:  # (already as smooth as it gets)
        return 1.0, value
    low, best, high = 0.0, value, math.inf  # in log₈ of the factor
    for start in range(1, LARGEST_POWER + 1, ROUND):
        powers = np.unique(np.minimum(np.arange(start, start + ROUND, dtype=np.float64), top))
        low, best, high = _narrowed(values_at, powers[powers > low], low, best, limit)
        if math.isfinite(high) or low >= top:
            break
    for _ in range(NARROWING_ROUNDS if math.isfinite(high) else 0):
        powers = low + (high - low) * np.arange(1, ROUND + 1) / (ROUND + 1)
        low, best, high = _narrowed(values_at, powers, low, best, limit, high)
    return min(8.0**low, largest), best


class FlatSettings(NamedTuple):
    """Where a search ended and how its settings may move where its criterion is flat.

    ``point (d,)``: the bandwidths (or numbers of neighbours) it found;
    ``criterion(settings (k, d)) → (k,)``: the criterion at other settings; ``caps (d,)``:
    the most each column is scaled to (``inf``: no bound); ``smoothed (d,)``: each
    column's setting where it is smoothed out (a continuous column's
    ``SMOOTHED_OUT`` half-widths, a categorical one's largest ``λ``; ``inf``: the column is
    not tried smoothed out alone); ``scaled (d,)``: the columns one factor scales (the
    continuous ones; None: all)."""

    point: np.ndarray
    criterion: Callable[[np.ndarray], np.ndarray]
    caps: np.ndarray
    smoothed: np.ndarray | None = None
    scaled: np.ndarray | None = None

    def times(self, point: np.ndarray, factor: float) -> np.ndarray:
        """``point`` with its scaled columns times ``factor``, each at most its cap."""
        scaled = np.ones(point.shape, bool) if self.scaled is None else self.scaled
        return np.where(scaled, np.minimum(point * factor, self.caps), point)

    def largest(self, point: np.ndarray) -> float:
        """The factor beyond which ``point``'s scaled columns are all at their caps."""
        scaled = np.ones(point.shape, bool) if self.scaled is None else self.scaled
        return float(np.max(self.caps[scaled] / point[scaled], initial=1.0))


#: A search's bandwidths scaled by this factor (``1/8``) show whether its criterion is
#: flat down to the ``h → 0`` limit.
BELOW = 0.125
#: A CV that moves by at most this share of the response's variance is flat: far below
#: what a sample can show (CV's own sampling error is of order ``var(y)/√n``), and above
#: the last digits' wobble where the nearest neighbours' weights meet the next ones'
#: (``1.5·10⁻¹²`` of it on a sample of 5 rows).
FLAT = 1e-9


def smoothest_flat(
    method: str,
    value: float,
    tried: np.ndarray,
    variance: float,
    settings: FlatSettings,
    below_grid: bool = False,
) -> tuple[np.ndarray, float, str] | None:
    """``(point (d,), value, kind)``: where the search's criterion ``method`` is flat at
    its best (``value`` at ``settings.point``; the ``tried`` values; the response's
    ``variance``, :func:`response_variance`) — ``kind`` ``"rounding"`` where it is
    :func:`at_rounding`, ``"nearest"`` where a CV search that ended ``below_grid`` (below
    its grid's smallest bandwidths) finds it the same, to :data:`FLAT`, at :data:`BELOW`
    times its bandwidths while some bandwidth tried is above it — the smoothest setting
    at which it still is, and the criterion there; None where it is not flat.

    The smoothest: each column in turn smoothed out alone where the criterion stays at
    that level (a column the fit does not need, as the searches smooth it out where the
    criterion is not flat; of two that do the same work, the later is kept); then every
    scaled column times the largest factor (:func:`smoothest_at_rounding`)."""
    if at_rounding(method, value, tried, variance):
        kind, level = "rounding", rounding_limit(method, variance)
    elif method == "cv" and below_grid and variance > 0 and np.isfinite(value):
        kind, level = "nearest", value + FLAT * variance
        tried = np.asarray(tried, np.float64)
        if not np.any(tried[np.isfinite(tried)] > level):
            return None
        (under,) = np.asarray(settings.criterion(settings.times(settings.point, BELOW)[None]))
        if not abs(under - value) <= FLAT * variance:
            return None
    else:
        return None
    point, value = _smoothed_out(settings, settings.point, value, level)
    point, value = _scaled_up(settings, point, value, level)
    return point, value, kind


def _scaled_up(settings: FlatSettings, point: np.ndarray, value: float, level: float):
    """``(point, value)`` times the largest factor at which the criterion stays at most
    ``level``."""

    def values_at(factors: np.ndarray) -> np.ndarray:
        return np.asarray(settings.criterion(np.array([settings.times(point, f) for f in factors])))

    factor, value = smoothest_at_rounding(values_at, value, level, settings.largest(point))
    return settings.times(point, factor), value


def _smoothed_out(settings: FlatSettings, point: np.ndarray, value: float, level: float):
    """``(point, value)``: each column in turn, where it is not yet, smoothed out alone (one
    evaluation each), kept so where the criterion stays at most ``level``; ``point`` as
    it is where none is. Tried inside the flat range — at :data:`BELOW` times ``point``
    where the criterion is at the level there too — since at its edge (where an AICc
    search ends: its penalty falls as the bandwidths grow) a column that does not matter
    still tips it over."""
    if settings.smoothed is None or not np.any(np.isfinite(settings.smoothed)):
        return point, value
    inner = settings.times(point, BELOW)
    (at_inner,) = np.asarray(settings.criterion(inner[None]), np.float64)
    start, found_value = (inner, float(at_inner)) if at_inner <= level else (point, value)
    found, smoothed = start.copy(), settings.smoothed
    for column in range(len(found)):
        if not (np.isfinite(smoothed[column]) and found[column] < smoothed[column]):
            continue
        candidate = found.copy()
        candidate[column] = smoothed[column]
        (at,) = np.asarray(settings.criterion(candidate[None]), np.float64)
        if at <= level:
            found, found_value = candidate, float(at)
    return (point, value) if np.array_equal(found, start) else (found, found_value)


def _narrowed(values_at, powers, low, best, limit, high=math.inf):
    """``(low, best, high)`` after the criterion at the factors ``8^powers`` (ascending):
    the last power at rounding before the first that is not."""
    values = np.asarray(values_at(8.0**powers), np.float64)
    for power, found in zip(powers, values, strict=True):
        if not found <= limit:
            return low, best, float(power)
        low, best = float(power), float(found)
    return low, best, high


def warn_flat(
    method: str,
    found: np.ndarray | float,
    kind: str,
    setting: str = "bandwidth",
    instead: str = "take a rule of thumb ('scott')",
) -> None:
    """A :class:`FlatCriterionWarning`: the criterion ``method`` is flat (``kind``, as
    :func:`smoothest_flat` names it) up to the ``setting`` ``found`` (the largest such,
    returned); ``instead``: the other advice."""
    shown = ", ".join(f"{h:.4g}" for h in np.ravel(found))
    shown = f"({shown})" if np.ndim(found) else shown
    if kind == "rounding":
        message = (
            f"the {method} criterion is at rounding — the fit reproduces every row — at "
            f"every {setting} up to {shown}, which is returned: y is a noise-free function "
            "of X there (classes or levels apart), or rows nearly repeat (the same y at x a "
            "rounding apart) and predict each other; round X to the precision it was "
            f"recorded at (identical rows are merged into one of their count), or {instead}"
        )
    else:
        message = (
            f"the {method} criterion is lowest in its h → 0 limit — each row predicted by "
            f"its nearest neighbours — and stays there, to rounding, up to {shown}, which "
            "is returned: this sample favours nearest-neighbour interpolation; 'aicc' does "
            f"not degenerate so, or {instead}"
        )
    warnings.warn(f"{setting}: {message}", FlatCriterionWarning, stacklevel=user_stacklevel())
