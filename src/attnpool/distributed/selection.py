"""Bandwidth selection on Dask: leave-one-out CV of Nadaraya–Watson over sharded data,
every candidate bandwidth in one pass of the tree-reduced pooling state of
:mod:`attnpool.distributed`."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import as_rows, finish_states, merged_states, prepare_arrays

__all__ = ["cv_objectives", "fit_on_dask", "select_bandwidth"]

#: Rows whose spacing stands for the whole sample's in the search's grid (every
#: ``n / SPACING_ROWS``-th row: their values lie that many times further apart, and
#: they are that many times fewer, so the spread their spacing gives is the sample's).
SPACING_ROWS = 2**14
#: The descent's moves of one column in a round: its bandwidth times the grid's ratio to
#: these powers.
MOVES = np.array([-2.0, -1.0, 1.0, 2.0])
#: The smallest step of the moves, a power of the grid's ratio.
FINEST = 1 / 4
#: The last pass's points per column, between the bandwidths a step below and above.
FINE = 16
#: A move counts where it lowers the objective by more than this fraction of it (less
#: is rounding: a column smoothed out would wander).
LOWER = 1e-12
#: At most this many rounds of moves (each a pass over the data).
MOST_ROUNDS = 30
#: Grid steps added past an end of a one-column grid in one pass (:func:`_past_the_ends`).
EXTENSION = 8


def cv_objectives(x, y, bandwidths, *, kernel="gaussian", split_every=None, chunk_rows=None):
    """Leave-one-out CV error of Nadaraya–Watson for each row of ``bandwidths (K, d)``.

    Each point is pooled over all the others (its own pair is masked inside the task
    that holds it, by global row number); the ``K`` candidates share one pass over the
    data. Returns a NumPy array ``(K,)`` (computed), ``inf`` where a point is left with
    no neighbour.
    """
    x, _, y, _, record, _ = prepare_arrays(x, x, y, 1.0, kernel, chunk_rows, ("x", "x", "y"))
    bandwidths = np.asarray(bandwidths, dtype=float).reshape(-1, x.shape[1])
    count = bandwidths.shape[0]
    # the last candidate repeated up to a few sizes: each size of the merged states is a
    # program to compile on every worker (seconds), each candidate only its sums
    bandwidths = np.concatenate(
        [bandwidths, np.repeat(bandwidths[-1:], candidate_bucket(count) - count, axis=0)]
    )
    states = merged_states(x, x, y, bandwidths, record, True, split_every, ("x", "x", "y"))
    loo = states.map_blocks(
        finish_states,
        drop_axis=1,
        chunks=(x.chunks[0], (bandwidths.shape[0],), (y.shape[1],)),
        dtype=states.dtype,
        meta=np.empty((0, 0, 0), states.dtype),
    )
    errors = ((loo - y[:, None, :]) ** 2).mean(axis=(0, 2))
    errors = np.asarray(errors.compute(), dtype=float)[:count]
    return np.where(np.isfinite(errors), errors, np.inf)


def candidate_bucket(count: int) -> int:
    """The candidates of a pass padded to 8, 12, 16, 24, 32, 48, …: at most a third of
    them repeats, and a search's passes share a few sizes."""
    power = 1 << max(3, (count - 1).bit_length())  # the power of two ≥ count, at least 8
    three_quarters = power * 3 // 4
    return three_quarters if power >= 16 and three_quarters >= count else power


def select_bandwidth(x, y, *, kernel="gaussian", split_every=None, chunk_rows=None):
    """Leave-one-out CV bandwidth of Nadaraya–Watson over a sharded training set.

    The search starts from common multiples of Scott's rule per column (``0.05``–``5×``,
    16 on a log grid, reaching further down where an outlier or a gap between clusters
    inflates a column's standard deviation, as :mod:`attnpool.bandwidth.grid` says; the
    columns' standard deviations, quartiles, extremes and spacings come from one Dask
    computation — the quartiles Dask's merged per-chunk estimates, the spacings those of
    every ``n / 2¹⁴``-th row); in several columns each such column is then swept alone
    over its own grid from the best candidate
    (:func:`~attnpool.bandwidth.grid.column_profiles`). From the best point a pattern
    search descends (:func:`_descend`): each round moves every column alone by one and two
    grid steps up and down — smoothed out where that reaches past its width, as for a
    column ``y`` does not depend on — and tries last round's lowering moves together,
    while a move lowers CV; then 16 points per column between a step below and above.
    Each round is one pass over the data, its candidates sharing it; the rows are
    persisted on the workers for the passes. Returns a
    :class:`attnpool.bandwidth.BandwidthSelection`.
    """
    import dask
    import dask.array as da

    from ..bandwidth import BandwidthSelection
    from ..bandwidth.flat_criteria import FlatSettings, smoothest_flat, warn_flat
    from ..bandwidth.grid import (
        GRID,
        column_profiles,
        multipliers,
        ratios_for,
        spacing_spreads,
        steps_for,
    )
    from ..bandwidth.rules import rule_from_spread
    from ..bandwidth.search import SMOOTHED_OUT

    # every pass reads the rows: computed once, kept on the workers (as dask-glm's solvers)
    x_rows, y = dask.persist(as_rows(x, "x", chunk_rows), y)
    n, d = x_rows.shape
    # about the first row: moments of data far from the origin (timestamps) cancel
    centred = x_rows - x_rows[0].compute()
    quartiles = [da.percentile(centred[:, j], [25.0, 75.0]) for j in range(d)]
    thinned = centred[:: max(1, n // SPACING_ROWS)]
    sigma, least, most, thinned, variance, *quartiles = dask.compute(
        centred.std(axis=0, ddof=1), centred.min(axis=0), centred.max(axis=0), thinned,
        y.var(axis=0).mean(), *quartiles,
    )  # fmt: skip
    sigma = np.asarray(sigma, dtype=float)
    if not np.all(np.isfinite(sigma)):
        raise ValueError(
            f"x: column(s) {np.flatnonzero(~np.isfinite(sigma)).tolist()} hold NaN or "
            "infinite values"
        )
    if np.any(~(sigma > 0)):
        raise ValueError(f"x: column(s) {np.flatnonzero(~(sigma > 0)).tolist()} are constant")
    scott = rule_from_spread(sigma, n, kernel)
    options = dict(kernel=kernel, split_every=split_every, chunk_rows=chunk_rows)
    ranges = np.array([high - low for low, high in quartiles], dtype=float)
    spacings = spacing_spreads(thinned)
    below = steps_for(sigma, ranges, spacings)
    coarse = multipliers(len(GRID) + below)
    tried: list[np.ndarray] = []
    found: list[np.ndarray] = []

    def evaluate(candidates: np.ndarray) -> np.ndarray:
        tried.append(candidates)
        found.append(cv_objectives(x_rows, y, candidates, **options))
        return found[-1]

    grid = coarse[:, None] * scott
    at = int(np.argmin(evaluate(grid)))
    point, value = grid[at], found[0][at]
    if d == 1:  # past either end while the criterion still falls there, as in memory
        point, value = _past_the_ends(evaluate, grid[:, 0], found[0], coarse[1] / coarse[0])
    for column, first in column_profiles(range(d), ratios_for(sigma, ranges, spacings), below, d):
        candidates = np.tile(point, (len(coarse) - first, 1))
        candidates[:, column] = coarse[first:] * scott[column]
        objectives = evaluate(candidates)
        if objectives.min() < value:
            best = int(np.argmin(objectives))
            point, value = candidates[best], objectives[best]
    half = np.asarray(most, float) / 2 - np.asarray(least, float) / 2
    _descend(evaluate, point, value, float(coarse[1] / coarse[0]), half)
    candidates, objectives = np.concatenate(tried), np.concatenate(found)
    winner = int(np.argmin(objectives))
    point, value = candidates[winner], float(objectives[winner])
    caps = SMOOTHED_OUT * np.where(half > 0, half, 1.0)  # (each column, and alone)
    moved = smoothest_flat("cv", value, objectives, float(variance),
                           FlatSettings(point, evaluate, caps, caps),
                           bool(np.all(point < coarse[0] * scott)))  # fmt: skip
    if moved is not None:
        point, value = moved[0], moved[1]
        warn_flat("cv", point, moved[2])
    return BandwidthSelection(
        point, value, "cv", (candidates, objectives), True, sum(len(f) for f in found)
    )


def _past_the_ends(evaluate, grid: np.ndarray, objectives: np.ndarray, ratio: float):
    """``(point (1,), value)``: the lowest of a one-column ``grid (k,)`` (its ``objectives``)
    and of its extensions past the end that holds the lowest, :data:`EXTENSION` steps of
    ``ratio`` a pass, while the lowest is at the new end (at most ``MOST_BELOW`` steps
    below, ``MOST_ABOVE`` above: the in-memory search's
    :func:`~attnpool.bandwidth.grid.below_the_grid` and ``above_the_grid``)."""
    from ..bandwidth.grid import MOST_ABOVE, MOST_BELOW

    h, values = np.asarray(grid, float), np.where(np.isfinite(objectives), objectives, np.inf)
    for direction, most in ((-1, MOST_BELOW), (1, MOST_ABOVE)):
        added = 0
        while added < most and np.isfinite(values.min()):
            end = int(np.argmin(h)) if direction < 0 else int(np.argmax(h))
            if int(np.argmin(values)) != end:
                break
            beyond = h[end] * ratio ** (direction * np.arange(1.0, EXTENSION + 1))
            found = evaluate(beyond[:, None])
            h = np.r_[h, beyond]
            values = np.r_[values, np.where(np.isfinite(found), found, np.inf)]
            added += EXTENSION
    best = int(np.argmin(values))
    return h[best : best + 1], float(values[best])


def _descend(evaluate, point: np.ndarray, value: float, ratio: float, half: np.ndarray) -> None:
    """A pattern search on ``log h`` from ``point`` (objective ``value``), every round one
    pass of ``evaluate (K, d) → (K,)``: each column moved alone by ``ratio^k``
    (:data:`MOVES`) — smoothed out (``SMOOTHED_OUT`` times its half-width ``half (d,)``)
    where that reaches past twice its half-width, as the in-memory search tries it — and
    last round's lowering moves of several columns together. It
    moves to the lowest while one lowers the objective, else halves the step (in ``log``)
    down to :data:`FINEST` of the grid's; then one pass of :data:`FINE` points per column
    between a step below and above. In one column, whose own line the grid was, only
    that last pass, with the column smoothed out (the constant fit). (The
    in-memory search descends on the criterion's gradient; here a pass over the data
    serves a whole round.)"""
    from ..bandwidth.search import SMOOTHED_OUT, WIDE

    together, flat, wide, step = None, SMOOTHED_OUT * half, WIDE * half, ratio
    for _ in range(MOST_ROUNDS if point.size > 1 else 0):  # (one column: the grid's line)
        candidates, column_of = _moves(point, step**MOVES, flat, point * step**2 >= wide)
        candidates = np.concatenate([candidates, *([] if together is None else [together[None]])])
        objectives = evaluate(candidates)
        lower = value - LOWER * abs(value)
        together = point.copy()
        for column in range(point.size):  # each column's best lowering move, together
            own = np.flatnonzero(column_of == column)
            if own.size and objectives[own].min() < lower:
                together[column] = candidates[own[np.argmin(objectives[own])], column]
        if np.count_nonzero(together != point) < 2:
            together = None
        best = int(np.argmin(objectives))
        if objectives[best] < lower:
            point, value = candidates[best], float(objectives[best])
        elif step > ratio**FINEST:
            step = np.sqrt(step)
        else:
            break
    steps = np.geomspace(1 / step, step, FINE + 1)
    smoothed = np.full(point.size, point.size == 1)  # (the moves tried it in several columns)
    evaluate(_moves(point, steps[np.abs(np.log(steps)) > 0], flat, smoothed)[0])


def _moves(point: np.ndarray, factors: np.ndarray, flat: np.ndarray, smoothed: np.ndarray):
    """``(candidates (K, d), column (K,))``: ``point`` with one column times each of
    ``factors`` (at most ``flat (d,)``) or, where ``smoothed (d,)``, smoothed out
    (``flat``), each new point once, and the column each moves."""
    candidates, column_of = [], []
    for column in range(point.size):
        values = np.minimum(point[column] * factors, flat[column])
        values = np.unique(np.r_[values, flat[column]] if smoothed[column] else values)
        values = values[values != point[column]]
        moved = np.tile(point, (values.size, 1))
        moved[:, column] = values
        candidates.append(moved)
        column_of.append(np.full(values.size, column))
    return np.concatenate(candidates), np.concatenate(column_of)


def fit_on_dask(estimator: Any, X: Any, y: Any, sample_weight: Any = None) -> Any:
    """A regressor's ``fit`` (``estimator``) on Dask arrays: the training data kept lazy, the
    bandwidth by :func:`select_bandwidth` here (fixed bandwidths only with
    ``sample_weight``)."""
    from .. import distributed
    from .._support.validation import check_bandwidth

    if estimator._degree != 0 or (estimator.var_type and set(estimator.var_type) != {"c"}):
        raise ValueError(
            f"X: Dask inputs are supported by NadarayaWatson on continuous columns; "
            f"received a Dask array for {type(estimator).__name__}(var_type={estimator.var_type!r})"
        )
    X = distributed.as_rows(X, "X")
    estimator.n_features_in_ = X.shape[1]
    if sample_weight is not None and isinstance(estimator.bandwidth, str):
        raise ValueError(
            f"sample_weight: with Dask inputs the weighted fit takes fixed bandwidths; "
            f"received bandwidth={estimator.bandwidth!r} (select it on a NumPy sample, or "
            "fit without weights)"
        )
    if estimator.bandwidth == "cv":
        selection = select_bandwidth(X, y, kernel=estimator.kernel)
        estimator.bandwidth_, estimator.cv_score_ = selection.bandwidth, selection.objective
    elif isinstance(estimator.bandwidth, str):
        raise ValueError(
            "bandwidth: with Dask inputs expected 'cv' or numbers; received "
            f"{estimator.bandwidth!r}"
        )
    else:
        estimator.bandwidth_ = np.array(
            check_bandwidth(estimator.bandwidth, X.shape[1]), dtype=float
        )
    estimator.X_train_, estimator.y_train_, estimator._weights = X, y, sample_weight
    estimator.backend_ = "dask"  # each chunk's sums by the planner, where it runs
    estimator._chosen_by = estimator.bandwidth if isinstance(estimator.bandwidth, str) else "fixed"
    estimator._in_sample = None
    return estimator
