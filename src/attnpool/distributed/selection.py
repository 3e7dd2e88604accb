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


def cv_objectives(x, y, bandwidths, *, kernel="gaussian", split_every=None, chunk_rows=None):
    """Leave-one-out CV error of Nadaraya–Watson for each row of ``bandwidths (K, d)``.

    Each point is pooled over all the others (its own pair is masked inside the task
    that holds it, by global row number); the ``K`` candidates share one pass over the
    data. Returns a NumPy array ``(K,)`` (computed), ``inf`` where a point is left with
    no neighbour.
    """
    x, _, y, _, record, _ = prepare_arrays(x, x, y, 1.0, kernel, chunk_rows, ("x", "x", "y"))
    bandwidths = np.asarray(bandwidths, dtype=float).reshape(-1, x.shape[1])
    states = merged_states(x, x, y, bandwidths, record, True, split_every, ("x", "x", "y"))
    loo = states.map_blocks(
        finish_states,
        drop_axis=1,
        chunks=(x.chunks[0], (bandwidths.shape[0],), (y.shape[1],)),
        dtype=states.dtype,
        meta=np.empty((0, 0, 0), states.dtype),
    )
    errors = ((loo - y[:, None, :]) ** 2).mean(axis=(0, 2))
    errors = np.asarray(errors.compute(), dtype=float)
    return np.where(np.isfinite(errors), errors, np.inf)


def select_bandwidth(x, y, *, kernel="gaussian", split_every=None, chunk_rows=None):
    """Leave-one-out CV bandwidth of Nadaraya–Watson over a sharded training set.

    Candidates are common multiples of Scott's rule per column (``0.05``–``5×``, 16 on a
    log grid, reaching further down where an outlier or a gap between clusters inflates a
    column's standard deviation, as :mod:`attnpool.bandwidth.grid` says; the columns'
    standard deviations, quartiles and spacings come from one Dask computation — the
    quartiles Dask's merged per-chunk estimates, the spacings those of every
    ``n / 2¹⁴``-th row); in several columns each such column is then swept alone over
    its own grid from the best candidate
    (:func:`~attnpool.bandwidth.grid.column_profiles`); then 16 more between the best
    candidate's neighbours, along the line or the column it was found on. One pass over
    the data for the grid, one per column swept and one for the refinement. Returns a
    :class:`attnpool.bandwidth.BandwidthSelection`.
    """
    import dask
    import dask.array as da

    from ..bandwidth import BandwidthSelection
    from ..bandwidth.grid import (
        GRID,
        column_profiles,
        multipliers,
        ratios_for,
        spacing_spreads,
        steps_for,
    )
    from ..bandwidth.rules import rule_from_spread

    x_rows = as_rows(x, "x", chunk_rows)
    n, d = x_rows.shape
    # about the first row: moments of data far from the origin (timestamps) cancel
    centred = x_rows - x_rows[0].compute()
    quartiles = [da.percentile(centred[:, j], [25.0, 75.0]) for j in range(d)]
    thinned = centred[:: max(1, n // SPACING_ROWS)]
    sigma, thinned, *quartiles = dask.compute(centred.std(axis=0, ddof=1), thinned, *quartiles)
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
    tried = [coarse[:, None] * scott]
    found = [cv_objectives(x_rows, y, tried[0], **options)]
    at = int(np.argmin(found[0]))
    point, value, moving = tried[0][at], found[0][at], np.ones(d)
    for column, first in column_profiles(range(d), ratios_for(sigma, ranges, spacings), below, d):
        candidates = np.tile(point, (len(coarse) - first, 1))
        candidates[:, column] = coarse[first:] * scott[column]
        tried.append(candidates)
        found.append(cv_objectives(x_rows, y, candidates, **options))
        if found[-1].min() < value:
            best = int(np.argmin(found[-1]))
            point, value, at = candidates[best], found[-1][best], first + best
            moving = np.eye(d)[column]
    low, high = coarse[max(at - 1, 0)], coarse[min(at + 1, len(coarse) - 1)]
    factors = np.geomspace(low, high, 16) / coarse[at]
    tried.append(point * factors[:, None] ** moving)
    found.append(cv_objectives(x_rows, y, tried[-1], **options))
    candidates, objectives = np.concatenate(tried), np.concatenate(found)
    winner = int(np.argmin(objectives))
    return BandwidthSelection(
        candidates[winner],
        float(objectives[winner]),
        "cv",
        (candidates, objectives),
        True,
        len(objectives),
    )


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
