"""The peers' LOWESS rules: statsmodels' ``lowess`` and R's ``lowess`` (``clowess``).

Both fit a line at each point by least squares weighted by the tricube of the distance
in units of the distance to the ``k``-th nearest key, ``k = ⌊frac · n⌋``, and then
reweight the keys by the bisquare of their residuals in units of six median absolute
residuals. They differ in the details that make their numbers differ at 1e-7:

============================  ==================================  ==================================
rule                          statsmodels                         R
============================  ==================================  ==================================
``k``                         ``int(frac·n + 1e-10)``, 2 … n      ``(int)(f·n + 1e-7)``, 2 … n
window, tie of its two ends   moves right while ``q`` is past     moves right while
                              the midpoint of its two ends        ``q − x_L > x_{L+k} − q``
keys weighed                  the ``k`` of the window             the window's, and ties of its
                                                                  right end; weight 1 within
                                                                  0.001 of the radius, 0 beyond
                                                                  0.999
no fit (fallback ``y_i``)     fewer than two weights > 1e-12      all weights zero
slope                         weighted variance floored at 1e-12  only if its root > 0.001 ×
                                                                  the range of ``x``
robustness weights            residual 0 → 1, else 0, when the    1 within 0.001·6 MAD, 0 beyond
                              median is 0                         0.999; stop when 6 MAD is below
                                                                  1e-7 × the mean residual
============================  ==================================  ==================================

Each rule fits a run of sorted queries in one of two ways. :meth:`Rules.direct` weighs
every key of every window as the peer's C loop does (chunks of queries at a time);
:meth:`Rules.fast` takes the window moments from running sums
(:func:`attnpool.engines.window_sums.polynomial_window_sums`) and flags the rows whose
solve it cannot vouch for (a radius of zero, fewer than two keys surely weighed, a
weighted variance that cancels, a slope rule decided within rounding), which are then
fitted directly.
"""

from __future__ import annotations

import numpy as np

from ..engines.window_sums import Windows, polynomial_window_sums
from .windows import first_index, gathered

__all__ = ["STATSMODELS", "R", "Rules"]

#: The tricube ``(1 − |u|³)³ = 1 − 3|u|³ + 3|u|⁶ − |u|⁹`` as ``(power, coefficient)``.
TRICUBE = ((0, 1.0), (3, -3.0), (6, 3.0), (9, -1.0))
#: Queries × window width below which every row is fitted directly.
DIRECT_WORK = 2**18
#: A weighted variance below this share of the mean square, or kernel weights below this
#: share of the keys' robustness weights, are refitted directly.
CANCELLATION = 1e-2


def tricube(u: np.ndarray) -> np.ndarray:
    """``(1 − u³)³`` evaluated as both peers do: cube, subtract from one, cube."""
    cube = u * u * u
    cube = 1.0 - cube
    return cube * cube * cube


class Rules:
    """One peer's LOWESS: its neighbour count, windows, local fit and robustness."""

    name = ""
    #: ``k = int(frac · n + slack)``.
    slack = 0.0
    #: Where ``delta`` reaches past the last key, the next fit is this many keys before
    #: the last (the index a C loop over the keys leaves behind).
    last_but = 0
    #: Whether every threshold is relative to the data (R's), so that ``x`` in any power
    #: of two gives the same fits; statsmodels' variance floor is ``1e-12`` in ``x``'s units.
    scale_free = False

    def unit(self, keys: np.ndarray) -> float:
        """A power of two to divide ``x`` by (exact) before the squares of its differences
        are summed: where the largest ``|x|`` passes ``2^500`` they would overflow (the
        fits came out NaN or 0.5 off from 1e154 on), so it is brought to ``2^400`` — where
        statsmodels' floor still decides nothing but a window of ties —; for scale-free
        rules, data below ``2^−500``, whose squares vanish, are brought to 1 as well."""
        largest = float(np.max(np.abs(keys), initial=0.0))
        if not 0 < largest < np.inf:
            return 1.0
        exponent = int(np.frexp(largest)[1])
        if exponent > 500:
            return 2.0 ** (exponent - 400)
        if self.scale_free and exponent < -500:
            return 2.0**exponent
        return 1.0

    def neighbours(self, frac: float, n: int) -> int:
        """``k``, the keys in each window, for a fraction ``frac`` of ``n``."""
        return int(min(max(int(frac * n + self.slack), 2), n))

    def fit(self, keys, values, robustness, queries, fallback, k, extent=None) -> np.ndarray:
        """Fitted values at sorted ``queries`` (float64, shape (q,)); a row the peer
        cannot fit takes ``fallback``. The responses are centred on their median first
        (a fit is equivariant to it), so a constant response is fitted exactly.
        ``extent``: the range of all the keys, where ``keys`` are a run of them (R's
        slope rule reads it)."""
        if extent is None:
            extent = float(keys[-1] - keys[0])
        level = float(np.median(values))
        values, fallback = values - level, fallback - level
        starts = self.window_starts(keys, queries, k)
        if queries.shape[0] * k <= DIRECT_WORK or k <= 64:
            return (self.direct(keys, values, robustness, queries, starts, k, fallback, extent)
                    + level)  # fmt: skip
        fits, redo = self.fast(keys, values, robustness, queries, starts, k, extent)
        if redo.any():
            fits[redo] = self.direct(keys, values, robustness, queries[redo], starts[redo], k,
                                     fallback[redo], extent)  # fmt: skip
        return fits + level

    def window_starts(self, keys, queries, k) -> np.ndarray:
        """Index of the first of each query's ``k`` keys (shape (q,))."""
        raise NotImplementedError

    def direct(self, keys, values, robustness, queries, starts, k, fallback, extent) -> np.ndarray:
        """Fits weighing every key of every window as the peer's loop does."""
        raise NotImplementedError

    def fast(self, keys, values, robustness, queries, starts, k, extent):
        """``(fits, redo)``: fits from the window sums, and the rows to fit directly."""
        raise NotImplementedError

    def robustness(
        self, values: np.ndarray, fits: np.ndarray, summary: tuple[float, float] | None = None
    ) -> np.ndarray | None:
        """Weights of the keys for the next iteration, or ``None`` to stop. ``summary``:
        the median and mean of all the absolute residuals, where these are a part of
        them."""
        raise NotImplementedError

    @staticmethod
    def _residuals(values, fits, summary):
        """The absolute residuals, their median and their mean."""
        residuals = np.abs(values - fits)
        if summary is None:
            summary = (float(np.median(residuals)), float(np.mean(residuals)))
        return residuals, summary[0], summary[1]


class StatsmodelsRules(Rules):
    """statsmodels' ``lowess`` (``statsmodels.nonparametric._smoothers_lowess``)."""

    name = "statsmodels"
    slack = 1e-10
    last_but = 1

    def window_starts(self, keys, queries, k):
        n = keys.shape[0]
        midpoints = (keys[: n - k] + keys[k:]) / 2.0
        return np.searchsorted(midpoints, queries, side="left")

    @staticmethod
    def _radius(keys, queries, starts, k):
        return np.fmax(queries - keys[starts], keys[starts + k - 1] - queries)

    def direct(self, keys, values, robustness, queries, starts, k, fallback, extent):
        radius = self._radius(keys, queries, starts, k)
        out = np.empty(queries.shape[0])
        for rows, index, _ in gathered(starts, starts + k):
            d = keys[index] - queries[rows, None]  # offsets: no digits lost to where x is
            with np.errstate(divide="ignore", invalid="ignore"):
                weights = tricube(np.abs(d) / radius[rows, None]) * robustness[index]
                ok = np.sum(weights > 1e-12, axis=1) >= 2
                weights = weights / np.sum(weights, axis=1, keepdims=True)
                centre = np.sum(weights * d, axis=1, keepdims=True)
                spread = np.fmax(np.sum(weights * (d - centre) ** 2, axis=1, keepdims=True), 1e-12)
                projection = weights * (1.0 - centre * (d - centre) / spread)
                fitted = np.sum(projection * values[index], axis=1)
            out[rows] = np.where(ok, fitted, fallback[rows])
        return out

    def fast(self, keys, values, robustness, queries, starts, k, extent):
        radius = self._radius(keys, queries, starts, k)
        usable = np.isfinite(radius) & (radius > 0)
        safe = np.where(usable, radius, 1.0)
        windows = Windows(queries, safe, starts, starts + k)
        moments = _moments(keys, values, robustness, windows)
        mean, variance, covariance, centre, scale = moments
        spread = np.fmax(variance * safe**2, 1e-12)
        fits = mean + centre * safe * (covariance * safe) / spread
        redo = ~usable | ~np.isfinite(fits) | (scale < CANCELLATION)
        redo |= np.abs(variance * safe**2 - 1e-12) <= 1e-21
        redo |= _surely_weighed(keys, robustness, windows) < 2
        return fits, redo

    def robustness(self, values, fits, summary=None):
        residuals, median, _ = self._residuals(values, fits, summary)
        if median == 0.0:
            scaled = (residuals > 0).astype(float)
        else:
            scaled = np.minimum(residuals / (6.0 * median), 1.0)
        return (1.0 - scaled * scaled) ** 2


class RRules(Rules):
    """R's ``lowess`` (``clowess`` and ``lowest`` in R's ``src/library/stats/src/lowess.c``)."""

    name = "R"
    slack = 1e-7
    scale_free = True

    def window_starts(self, keys, queries, k):
        n = keys.shape[0]

        def farther_left(rows, start):  # the window stops moving right: d1 <= d2
            return ~(queries[rows] - keys[start] > keys[start + k] - queries[rows])

        count = queries.shape[0]
        return first_index(farther_left, np.zeros(count, np.int64), np.full(count, n - k))

    def _reach(self, keys, queries, starts, k):
        """Radius ``h``, and the end of the keys weighed (ties of the right end)."""
        radius = np.fmax(queries - keys[starts], keys[starts + k - 1] - queries)
        far = 0.999 * radius

        def beyond(rows, j):
            return (keys[j] > queries[rows]) & (np.abs(keys[j] - queries[rows]) > far[rows])

        return radius, first_index(beyond, starts, np.full(starts.shape[0], keys.shape[0]))

    def direct(self, keys, values, robustness, queries, starts, k, fallback, extent):
        radius, ends = self._reach(keys, queries, starts, k)
        out = np.empty(queries.shape[0])
        for rows, index, inside in gathered(starts, ends):
            d, h = keys[index] - queries[rows, None], radius[rows, None]
            distance = np.abs(d)
            with np.errstate(divide="ignore", invalid="ignore"):
                kernel = np.where(distance <= 0.001 * h, 1.0, tricube(distance / h))
                weights = np.where(inside & (distance <= 0.999 * h), kernel, 0.0)
                weights = weights * robustness[index]
                total = np.sum(weights, axis=1, keepdims=True)
                weights = weights / total
                centre = np.sum(weights * d, axis=1, keepdims=True)
                spread = np.sum(weights * (d - centre) ** 2, axis=1, keepdims=True)
                sloped = (h > 0) & (np.sqrt(spread) > 0.001 * extent)
                slope = np.where(sloped, -centre / spread, 0.0)
                weights = weights * np.where(sloped, slope * (d - centre) + 1.0, 1.0)
                fitted = np.sum(weights * values[index], axis=1)
            out[rows] = np.where(total[:, 0] > 0, fitted, fallback[rows])
        return out

    def fast(self, keys, values, robustness, queries, starts, k, extent):
        radius, ends = self._reach(keys, queries, starts, k)
        usable = np.isfinite(radius) & (radius > 0)
        h = np.where(usable, radius, 1.0)
        split = np.clip(np.searchsorted(keys, queries, side="left"), starts, ends)
        near = 0.999 * h

        def within(rows, j):
            return np.abs(keys[j] - queries[rows]) <= near[rows]

        first = first_index(within, starts, split)
        band = _near_band(keys, values, robustness, Windows(queries, h, starts, ends))
        moments = _moments(keys, values, robustness, Windows(queries, h, first, ends), band)
        mean, variance, covariance, centre, scale = moments
        root = np.sqrt(np.fmax(variance, 0.0)) * h
        sloped = root > 0.001 * extent
        with np.errstate(divide="ignore", invalid="ignore"):
            slope_term = centre * covariance / variance
        fits = mean + np.where(sloped, slope_term, 0.0)
        redo = ~usable | ~np.isfinite(fits) | (scale < CANCELLATION)
        redo |= np.abs(root - 0.001 * extent) <= 1e-9 * (0.001 * extent)
        redo |= _surely_weighed(keys, robustness, Windows(queries, h, starts, ends)) < 1
        return fits, redo

    def robustness(self, values, fits, summary=None):
        residuals, median, mean = self._residuals(values, fits, summary)
        six_mad = 6.0 * median
        if six_mad < 1e-7 * mean:
            return None
        with np.errstate(divide="ignore", invalid="ignore"):  # 0 / 0 where all fit: weight 1
            inner = 1.0 - (residuals / six_mad) ** 2
        weights = np.where(residuals <= 0.999 * six_mad, inner * inner, 0.0)
        return np.where(residuals <= 0.001 * six_mad, 1.0, weights)


STATSMODELS = StatsmodelsRules()
R = RRules()


def _moments(keys, values, robustness, windows: Windows, correction=None):
    """The local line's parts from the window moments, in units of the radius: the
    weighted mean response, variance of ``u = (x − q) / r``, covariance of ``u`` and
    ``y``, ``−ū``, and a measure of trust, small where the sums cancel: the variance's
    share of ``E u²``, or 0 where the kernel weights sum to less than
    :data:`CANCELLATION` of the robustness weights (keys mostly near the radius)."""
    s, t = polynomial_window_sums(keys, robustness, values, windows, TRICUBE, 2, 1)
    lo, hi = windows.lo, windows.hi
    if correction is not None:
        s, t = s + correction[0], t + correction[1]
    weighed = np.concatenate([[0.0], np.cumsum(robustness)])
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_u = s[:, 1] / s[:, 0]
        second = s[:, 2] / s[:, 0]
        variance = second - mean_u**2
        covariance = t[:, 1] / s[:, 0] - mean_u * t[:, 0] / s[:, 0]
        # the tricube's expansion cancels where most keys lie near the radius
        share = s[:, 0] / (weighed[hi] - weighed[lo])
        scale = np.where((second > 0) & (share > CANCELLATION), variance / second, 0.0)
    return t[:, 0] / s[:, 0], variance, covariance, -mean_u, scale


def _near_band(keys, values, robustness, windows: Windows):
    """R's weight 1 (not the tricube) for keys within 0.001 radii of ``q``: the
    moments ``Σ w (1 − tricube) u^m`` (and times ``y``) of those keys, which the
    window sums then get added (keys at ``q`` itself differ by nothing)."""
    queries, radius, starts, ends = windows
    near = 0.001 * radius
    equal_lo = np.clip(np.searchsorted(keys, queries, side="left"), starts, ends)
    equal_hi = np.clip(np.searchsorted(keys, queries, side="right"), starts, ends)

    def close(rows, j):
        return np.abs(keys[j] - queries[rows]) <= near[rows]

    def apart(rows, j):
        return np.abs(keys[j] - queries[rows]) > near[rows]

    s = np.zeros((queries.shape[0], 3))
    t = np.zeros((queries.shape[0], 2))
    for lo, hi in (
        (first_index(close, starts, equal_lo), equal_lo),
        (equal_hi, first_index(apart, equal_hi, ends)),
    ):
        rows = np.flatnonzero(hi > lo)
        if rows.size == 0:
            continue
        counts = hi[rows] - lo[rows]
        owner = np.repeat(rows, counts)
        index = np.repeat(lo[rows] - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        u = (keys[index] - queries[owner]) / radius[owner]
        extra = robustness[index] * (1.0 - tricube(np.abs(u)))
        for m in range(3):
            s[:, m] += np.bincount(owner, extra * u**m, minlength=s.shape[0])
        for m in range(2):
            t[:, m] += np.bincount(owner, extra * values[index] * u**m, minlength=s.shape[0])
    return s, t


def _surely_weighed(keys, robustness, windows: Windows):
    """Keys of each window that surely carry a weight above 1e-12: robustness weight
    above 1e-4 and closer than 0.99 radii (a tricube above 2.6e-5)."""
    queries, radius, lo, hi = windows
    counted = np.concatenate([[0], np.cumsum(robustness > 1e-4)])
    first = np.clip(np.searchsorted(keys, queries - 0.99 * radius, side="right"), lo, hi)
    last = np.clip(np.searchsorted(keys, queries + 0.99 * radius, side="left"), lo, hi)
    return counted[last] - counted[first]
