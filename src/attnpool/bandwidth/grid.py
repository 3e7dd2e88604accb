"""The coarse grid of a bandwidth search: multiples of the rule of thumb, one line in
``θ`` (log-bandwidths; every continuous column moved by the same factor).

The rule of thumb scales with each column's standard deviation, which one far point
inflates without bound: 30 points on ``[0, 1]`` and one at ``10⁹`` have ``σ ≈ 2·10⁸``,
and a grid of ``0.05×`` to ``5×`` Scott's rule never sees bandwidths near the cluster's
``0.015``, where local linear's CV criterion is lowest (0.75; the search from that grid
stopped at ``2.6·10⁸``, where it is ``5·10¹⁵``). So where some column's standard
deviation exceeds :data:`OUTLIER_RATIO` times its robust spread (``IQR / 1.349``,
Silverman's) — a far outlier, a heavy tail — the grid reaches below, in its own steps,
to where the robust spread's rule would start it. The grid above is unchanged: the
criterion may still be lowest at large bandwidths (local constant fits of the same
data), and every point of both is tried.

Clusters far apart fool the quartiles too: 100 points on ``[0, 30]`` and 40 near
``10⁵`` have an interquartile range across the gap, and a grid from ``900`` up, where
CV is flat at 0.47 (the search chose 52 390), while it is 0.025 at ``h = 0.3``. Their
spacing says what the spreads do not: a normal or uniform sample's distinct values lie
about ``2.5 σ / n`` apart at the median, so ``0.4 n`` times the median gap
(:func:`spacing_spreads`) is the standard deviation of a sample spaced as this one is,
and a standard deviation :data:`OUTLIER_RATIO` times that reaches the grid down alike.

In several columns the line moves every bandwidth by one factor, and one such column
beside evenly spread ones has its optimum off it: the searches also sweep that column
alone over its own range (:func:`column_profiles`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .rules import in_unit, percentiles, spread

__all__ = [
    "GRID",
    "MOST_ABOVE",
    "MOST_BELOW",
    "MOST_ROBUST_STEPS",
    "OUTLIER_RATIO",
    "SPACING_TO_SPREAD",
    "SearchLine",
    "above_the_grid",
    "below_the_grid",
    "column_profiles",
    "multipliers",
    "ratios_for",
    "search_line",
    "spacing_spreads",
    "spread_ratios",
    "steps_below",
    "steps_for",
    "thetas_along",
]

#: The coarse search's multiples of the rule of thumb.
GRID = np.geomspace(0.05, 5.0, 16)
#: A column whose standard deviation is this many times its robust spread has points
#: far from the rest (a normal sample's ratio is 1, a lognormal's with ``σ = 1`` 2).
OUTLIER_RATIO = 4.0
#: A sample's standard deviation over its number of distinct values times their median
#: gap: 0.38 for a normal sample, 0.42 for a uniform one, 0.63 for an exponential one.
SPACING_TO_SPREAD = 0.4
#: The most grid steps added below (a factor ``e^29.5 ≈ 7·10¹²``): each is one
#: evaluation of the criterion.
MOST_ROBUST_STEPS = 96

_STEP = math.log(GRID[1] / GRID[0])


def steps_below(x: np.ndarray, continuous, weights: np.ndarray | None = None) -> int:
    """Grid steps to add below :data:`GRID`'s first point for the continuous columns of
    ``x (n, d)`` (module docstring): 0 unless some column's standard deviation exceeds
    :data:`OUTLIER_RATIO` times its positive robust spread or its spacings' spread, else
    enough steps that the grid starts at ``GRID[0]`` times the rule of the smallest of
    those (at most :data:`MOST_ROBUST_STEPS`). ``weights``: relative observation weights
    (rows of weight 0 take no place in the spacing)."""
    return _steps(spread_ratios(x, continuous, weights))


class SearchLine(NamedTuple):
    """Where a search looks first: its coarse grid, and the columns it also sweeps one at
    a time (:func:`column_profiles`)."""

    #: ``(k, d)``: the grid's points in ``θ``, one line (:func:`thetas_along`).
    thetas: np.ndarray
    #: ``(column, first row)`` pairs: a column whose own range is the grid's rows from
    #: ``first row`` on (:func:`column_profiles`).
    profiles: tuple[tuple[int, int], ...] = ()

    @property
    def spread_out(self) -> bool:
        """Whether the grid reaches below :data:`GRID` (:func:`steps_below`)."""
        return len(self.thetas) > len(GRID)


def search_line(
    theta: np.ndarray, x: np.ndarray, continuous, weights: np.ndarray | None = None
) -> SearchLine:
    """The coarse grid's line through ``θ`` (the rule of thumb's) for the data
    ``x (n, d)`` — :func:`steps_below` steps below :data:`GRID` — and the columns swept
    alone (:func:`column_profiles`)."""
    ratios = spread_ratios(x, continuous, weights)
    below = _steps(ratios)
    thetas = thetas_along(theta, continuous, below)
    return SearchLine(thetas, column_profiles(continuous, ratios, below, len(theta)))


def column_profiles(
    continuous, ratios: np.ndarray, below: int, width: int
) -> tuple[tuple[int, int], ...]:
    """``(column, first row)`` of each continuous column whose :func:`spread_ratios`
    exceed :data:`OUTLIER_RATIO`, in a search of ``width > 1`` variables whose grid
    reaches ``below`` steps below :data:`GRID`: that column's own grid — from ``GRID[0]``
    times its robust spread's rule up — is the line's rows from ``first row`` on.

    Clusters far apart in one column and an even spread in another (100 points on
    ``[0, 30]`` and 40 near ``10⁵``, beside a column uniform on ``[0, 10⁴]``) have their
    optimum where the first column's bandwidth is small and the second's large (CV 0.020
    at ``(0.26, ∞)``). The line moves both by one factor: where the first is narrow
    enough, the second is narrower than its spacing, and the line's best point
    ``(6·10⁴, 6·10³)`` smooths across the clusters, where CV is flat at 0.47 and a
    descent does not move. Swept alone from there, the first column finds its clusters'
    scale, and the descent goes on from that point (:func:`attnpool.bandwidth.starts.
    profile_start`)."""
    if width < 2:
        return ()
    return tuple(
        (j, below - _steps(ratios[i : i + 1]))
        for i, j in enumerate(continuous)
        if ratios[i] > OUTLIER_RATIO
    )


def spread_ratios(x: np.ndarray, continuous, weights: np.ndarray | None = None) -> np.ndarray:
    """``(q,)``: each continuous column's standard deviation over its robust spread
    (:func:`ratios_for`) — ``x (n, d)`` and relative observation ``weights`` as
    :func:`steps_below`'s; ones with fewer than four rows."""
    columns = np.asarray(x, np.float64)[:, list(continuous)]
    if columns.shape[1] == 0 or columns.shape[0] < 4:
        return np.ones(columns.shape[1])
    columns = in_unit(columns)[0]
    placed = columns
    if weights is not None:
        weights = np.asarray(weights, np.float64) / np.max(weights)
        weights = weights * (weights.size / np.sum(weights))
        placed = columns[weights > 0]
    quartiles = percentiles(columns, [25.0, 75.0], weights)
    return ratios_for(spread(columns, weights), quartiles[1] - quartiles[0],
                      spacing_spreads(placed))  # fmt: skip


def spacing_spreads(columns: np.ndarray) -> np.ndarray:
    """``(q,)``: the standard deviation of a normal sample spaced as each column of
    ``columns (n, q)`` is — :data:`SPACING_TO_SPREAD` times its number of distinct values
    times the median gap between them (0 with fewer than four)."""
    result = np.zeros(columns.shape[1])
    for j in range(columns.shape[1]):
        gaps = np.diff(np.sort(columns[:, j]))
        gaps = gaps[gaps > 0]
        if gaps.size >= 3:
            result[j] = SPACING_TO_SPREAD * (gaps.size + 1) * np.median(gaps)
    return result


def ratios_for(
    deviations: np.ndarray, interquartile_ranges: np.ndarray, spacings: np.ndarray | None = None
) -> np.ndarray:
    """``(q,)``: standard ``deviations`` over the smaller positive of
    ``interquartile_ranges / 1.349`` and the spacings' spreads (``(q,)`` each;
    :func:`spacing_spreads`, None where unknown); 1 where neither is positive. A range of
    0 — half the rows tied — says nothing of the spread's centre, and counts as no
    outlier; a spacing of 0 (fewer than four distinct values) likewise."""
    measures = [np.asarray(interquartile_ranges, np.float64) / 1.349]
    if spacings is not None:
        measures.append(np.asarray(spacings, np.float64))
    robust = np.minimum.reduce([np.where(m > 0, m, np.inf) for m in measures])
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(robust), np.asarray(deviations, np.float64) / robust, 1.0)


def steps_for(
    deviations: np.ndarray, interquartile_ranges: np.ndarray, spacings: np.ndarray | None = None
) -> int:
    """:func:`steps_below` of columns with these standard ``deviations``,
    ``interquartile_ranges`` and spacings' spreads (:func:`ratios_for`)."""
    return _steps(ratios_for(deviations, interquartile_ranges, spacings))


def _steps(ratios: np.ndarray) -> int:
    """Grid steps below :data:`GRID` for columns of these :func:`spread_ratios`."""
    largest = float(np.max(ratios, initial=1.0))
    if not largest > OUTLIER_RATIO:
        return 0
    return min(MOST_ROBUST_STEPS, math.ceil(math.log(largest) / _STEP))


def thetas_along(start: np.ndarray, continuous, below: int = 0) -> np.ndarray:
    """``(len(GRID) + below, d)``: the grid's points in ``θ`` — ``start`` (the rule of
    thumb's ``θ``) with the ``continuous`` columns moved by the logarithms of
    :func:`multipliers`; other columns as the caller moves them."""
    grid = multipliers(len(GRID) + below)
    thetas = np.tile(np.asarray(start, np.float64), (len(grid), 1))
    thetas[:, list(continuous)] += np.log(grid)[:, None]
    return thetas


def multipliers(count: int) -> np.ndarray:
    """The multiples of the rule of thumb of a grid of ``count`` points: :data:`GRID`,
    after ``count − len(GRID)`` steps below it (:func:`steps_below`)."""
    below = count - len(GRID)
    if below <= 0:
        return GRID
    return np.r_[GRID[0] * np.exp(_STEP * np.arange(-below, 0)), GRID]


#: Grid steps tried below the grid's smallest bandwidth while the criterion still falls
#: there (a factor ~1600 at the grid's steps): a sample with a tight cluster has its
#: optimum far below the rule of thumb, which the whole sample's spread sets.
MOST_BELOW = 24


def below_the_grid(objective, thetas, objectives, step: float):
    """``(θ (k + m, 1), objectives)``: a one-column grid extended a ``step`` at a time
    below its first point while that point is its best finite one and the criterion still
    falls (at most :data:`MOST_BELOW` steps), the first point that does not fall included
    (the best point then has a neighbour on each side)."""
    finite = np.where(np.isfinite(objectives), objectives, np.inf)
    added = 0
    while added < MOST_BELOW and np.isfinite(finite[0]) and int(np.argmin(finite)) == 0:
        theta = thetas[:1] - step
        value = objective(theta[0])
        thetas, objectives = np.r_[theta, thetas], np.r_[value, objectives]
        finite = np.r_[value if np.isfinite(value) else np.inf, finite]
        added += 1
    return thetas, objectives


#: Grid steps tried above the grid's largest bandwidth while the criterion still falls
#: there: clusters far apart (``0…30`` beside ``10⁵``) set a rule of thumb that smooths
#: each cluster but not across them, and the criterion may fall until it averages each
#: cluster whole (CV 0.00980 at 5× the rule, 0.00977 beyond).
MOST_ABOVE = 24


def above_the_grid(objective, thetas, objectives, step: float):
    """:func:`below_the_grid` at the grid's other end: a one-column grid extended a
    ``step`` at a time above its last point while that point is its best finite one and
    the criterion still falls (at most :data:`MOST_ABOVE` steps)."""
    finite = np.where(np.isfinite(objectives), objectives, np.inf)
    added = 0
    while (
        added < MOST_ABOVE and np.isfinite(finite[-1]) and int(np.argmin(finite)) == finite.size - 1
    ):
        theta = thetas[-1:] + step
        value = objective(theta[0])
        thetas, objectives = np.r_[thetas, theta], np.r_[objectives, value]
        finite = np.r_[finite, value if np.isfinite(value) else np.inf]
        added += 1
    return thetas, objectives
