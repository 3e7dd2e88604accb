"""``lowess`` and ``r_lowess`` on Dask arrays: the peers' numbers, the rows never gathered.

A LOWESS fit at a point weighs its ``k`` nearest points, a run of ``k`` sorted ranks
(R's rule adds the ties of the run's right end). So the rows are sorted once into blocks
of known ranks (:mod:`.sorting`, a stable sort), and each block is fitted by the rules
in memory (:meth:`attnpool.smoothers.rules.Rules.fit`) over its own rows and the ``k``
ranks on either side (whole runs of ties at the ends): the fits are those of the whole
data. Between fits the robustness weights take the exact median (and mean) of all the
absolute residuals (:mod:`.order_statistics`), and the blocks' borders are sent again
with their new weights. With ``delta > 0`` the rows fitted are ``delta``'s schedule,
walked block after block, and the others lie on lines between them
(:mod:`.lowess_schedule`).

Ties in ``x`` keep their input order. The fit in memory (and statsmodels) sort with
NumPy's default sort, which orders ties arbitrarily; the two differ only where a
window's end falls inside a run of ties whose ``y`` differ (statsmodels weighs exactly
``k`` points).
"""

from __future__ import annotations

import warnings
from itertools import pairwise

import numpy as np

from .._support.optional import require
from ..smoothers.windows import tie_runs
from .lowess_schedule import fitted_ranks, lines
from .order_statistics import median, tree_sum
from .sorting import SortedRows, rank_run, sorted_rows

dask = require("dask", "Dask support (attnpool.distributed)")
import dask.array as da  # noqa: E402
from dask import delayed  # noqa: E402

__all__ = ["dask_lowess"]


def dask_lowess(rules, endog, exog, frac, iterations, delta, xvals, missing, return_sorted):
    """:func:`attnpool.lowess` (``rules``: statsmodels' or R's) of Dask ``endog`` and
    ``exog`` (``delta`` None: 1% of the range of ``x``, R's default): a Dask array of the
    sorted pairs or of the fits in the input's order, or a NumPy array of the fits at
    ``xvals``."""
    x = _aligned(exog, "exog")
    y = _aligned(endog, "endog", x.chunks[0])
    places = x.shape[0]
    starts = np.concatenate([[0], np.cumsum(x.chunks[0])[:-1]]).tolist()
    blocks = [delayed(_finite_rows)(a, b, int(s)) for a, b, s in
              zip(x.to_delayed(), y.to_delayed(), starts, strict=True)]  # fmt: skip
    blocks = list(dask.persist(*blocks))
    found = dask.compute(*[delayed(_dropped)(b, len_) for b, len_ in
                           zip(blocks, x.chunks[0], strict=True)],
                         *[delayed(_largest)(b) for b in blocks])  # fmt: skip
    dropped, largest = sum(found[: len(blocks)]), max(found[len(blocks) :], default=0.0)
    unit = rules.unit(np.array([largest]))  # (exact: as the fit in memory takes x)
    if unit != 1.0:
        blocks = list(dask.persist(*[delayed(_scaled)(b, 1.0 / unit) for b in blocks]))
        delta = None if delta is None else delta / unit
        xvals = None if xvals is None else np.asarray(xvals, dtype=np.float64) / unit
    if dropped and missing != "drop":
        raise ValueError(
            f"exog and endog hold {dropped} non-finite values "
            f"(missing={missing!r}; 'drop' drops them)"
        )
    n = places - dropped
    rows = sorted_rows(blocks, n, places) if n else None
    if n < 2:
        return _tiny(rows, n, xvals, return_sorted, places, unit)
    k = rules.neighbours(frac, n)
    reach, extent = _reaches(rows, k)
    if delta is None:  # R's default
        delta = 0.01 * extent
    extended = list(dask.persist(*[rank_run(rows, lo, hi) for lo, hi in reach]))
    own = [(a - lo, b - lo) for (lo, _), a, b in zip(reach, rows.starts[:-1], rows.starts[1:],
                                                       strict=True)]  # fmt: skip
    robust = [delayed(np.ones)(b - a) for a, b in pairwise(rows.starts)]
    passes = iterations + 1 if xvals is None else iterations
    fits = [delayed(_column)(block, 1) for block in rows.blocks]
    schedule = fitted_ranks(rows, delta, rules.last_but) if delta > 0 else None
    for step in range(passes):
        around = [rank_run(rows, lo, hi, robust) for lo, hi in reach]
        if schedule is None:
            fits = [delayed(_block_fit)(rules, e, w, part, k, extent)
                    for e, w, part in zip(extended, around, own, strict=True)]  # fmt: skip
        else:
            at_fitted = dask.persist(*[
                delayed(_scheduled_fit)(rules, e, w, part, fitted, k, extent)
                for e, w, part, fitted in zip(extended, around, own, schedule.fitted, strict=True)
            ])  # fmt: skip
            fits = lines(rows, schedule, at_fitted)
        fits = list(dask.persist(*fits))
        if step == passes - 1 and xvals is None:
            break
        residuals = [delayed(_absolute)(b, f) for b, f in zip(rows.blocks, fits, strict=True)]
        total = tree_sum([delayed(np.sum)(r) for r in residuals]).compute()
        summary = (median(residuals, n), float(total) / n)
        if rules.robustness(np.zeros(0), np.zeros(0), summary) is None:
            break
        robust = list(dask.persist(*[delayed(_weights)(rules, b, f, summary)
                                     for b, f in zip(rows.blocks, fits, strict=True)]))  # fmt: skip
    if xvals is not None:
        around = [rank_run(rows, lo, hi, robust) for lo, hi in reach]
        return _at_points(rules, rows, extended, around, xvals, k, extent, missing)
    if return_sorted:
        pairs = dask.persist(
            *[delayed(_pairs)(b, f, unit) for b, f in zip(rows.blocks, fits, strict=True)]
        )
        sizes = np.diff(rows.starts)
        return da.concatenate([da.from_delayed(p, (int(size), 2), np.float64)
                               for p, size in zip(pairs, sizes, strict=True)])  # fmt: skip
    return _input_order(rows, fits, x.chunks[0], starts)


def _aligned(values, name, chunks=None):
    """``values`` as a one-dimensional Dask array (chunked like ``chunks``)."""
    if not isinstance(values, da.Array):
        values = np.asarray(values)
        if values.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be numbers; got an array of {values.dtype}")
        values = da.from_array(values, chunks=chunks or values.shape)
    if values.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {values.shape}")
    if any(np.isnan(c) for c in values.chunks[0]):
        raise ValueError(f"{name}: the chunk sizes are unknown (NaN); call .compute_chunk_sizes()")
    if chunks is not None:
        if values.shape[0] != sum(chunks):
            raise ValueError(
                f"endog and exog must have the same length; got {values.shape[0]} and {sum(chunks)}"
            )
        values = values.rechunk((chunks,))
    return values.astype(np.float64)


def _finite_rows(x, y, start):
    """``(x, y, place)`` of a block's finite pairs, ``place`` their input rows."""
    finite = np.isfinite(x) & np.isfinite(y)
    return x[finite], y[finite], np.flatnonzero(finite) + start


def _dropped(rows, size):
    return size - rows[0].shape[0]


def _largest(rows):
    return float(np.max(np.abs(rows[0]), initial=0.0))


def _scaled(rows, factor):
    x, y, place = rows
    return x * factor, y, place


def _column(rows, which):
    return rows[which]


def _tiny(rows, n, xvals, return_sorted, places, unit):
    """Fewer than two rows: the fits are the responses (NaN at ``xvals``)."""
    if xvals is not None:
        return np.full(np.shape(xvals), np.nan)
    x, y, place = rows.blocks[0].compute() if rows else (np.zeros(0),) * 3
    if return_sorted:
        return da.from_array(np.column_stack([x * unit, y]))
    out = np.full(places, np.nan)
    out[place.astype(np.int64)] = y
    return da.from_array(out)


def _reaches(rows: SortedRows, k: int) -> list[tuple[int, int]]:
    """Each block's ranks with the ``k`` on either side (one more on the right, where a
    window's search looks), widened to whole runs of ties at both ends; and the range of
    the keys."""
    ends = [(max(a - k, 0), min(b + k, rows.n - 1)) for a, b in
            pairwise(rows.starts)]  # fmt: skip
    values = dask.compute(*[rank_run(rows, r, r + 1) for pair in ends for r in pair])
    values = np.array([v[0][0] for v in values])
    counts = tree_sum([delayed(_at_or_below)(b, values) for b in rows.blocks]).compute()
    below, through = counts[0][0::2], counts[1][1::2]
    first, last = dask.compute(rank_run(rows, 0, 1), rank_run(rows, rows.n - 1, rows.n))
    extent = float(last[0][0] - first[0][0])
    return [(int(lo), int(hi)) for lo, hi in zip(below, through, strict=True)], extent


def _at_or_below(rows, values):
    """Rows below each value, and rows at or below it."""
    x = rows[0]
    return np.searchsorted(x, values, side="left"), np.searchsorted(x, values, side="right")


def _block_fit(rules, extended, robust, part, k, extent):
    """The fits at a block's rows (ranks ``part`` of its ``extended`` rows): each run of
    ties fitted at its first key, as the fit in memory does."""
    x, y, _ = extended
    a, b = part
    first = np.searchsorted(x, x[a:b], side="left")  # each row's first tie (in extended)
    runs = first[tie_runs(x[a:b])]
    fits = rules.fit(x, y, robust, x[runs], y[runs], k, extent)
    return fits[np.searchsorted(runs, first)]


def _scheduled_fit(rules, extended, robust, part, fitted, k, extent):
    """The fits at a block's ``fitted`` rows (local indices) of ``delta``'s schedule."""
    x, y, _ = extended
    at = part[0] + fitted
    return rules.fit(x, y, robust, x[at], y[at], k, extent)


def _absolute(rows, fits):
    return np.abs(rows[1] - fits)


def _weights(rules, rows, fits, summary):
    return rules.robustness(rows[1], fits, summary)


def _pairs(rows, fits, unit):
    return np.column_stack([rows[0] * unit, fits])


def _at_points(rules, rows, extended, around, xvals, k, extent, missing):
    """The fits at the NumPy ``xvals`` with the last robustness weights, each by the
    block whose ranks hold its place among the keys."""
    points = np.asarray(xvals, dtype=np.float64)
    if points.ndim != 1:
        raise ValueError(f"xvals must be one-dimensional; got shape {points.shape}")
    finite = np.isfinite(points)
    if not finite.all() and missing != "drop":
        raise ValueError(
            f"xvals holds {int((~finite).sum())} non-finite values "
            f"(missing={missing!r}; 'drop' leaves NaN there)"
        )
    firsts = np.array(dask.compute(*[delayed(_first_key)(b) for b in rows.blocks]))
    block = np.clip(np.searchsorted(firsts, points, side="right") - 1, 0, len(rows.blocks) - 1)
    out = np.full(points.shape, np.nan)
    tasks, where = [], []
    for b in np.unique(block[finite]):
        rows_here = np.flatnonzero(finite & (block == b))
        order = rows_here[np.argsort(points[rows_here], kind="stable")]
        tasks.append(delayed(_fit_points)(rules, extended[b], around[b], points[order], k, extent))
        where.append(order)
    for order, fits in zip(where, dask.compute(*tasks), strict=True):
        out[order] = fits
    if np.isnan(out[finite]).any():
        warnings.warn(
            f"{int(np.isnan(out[finite]).sum())} of the xvals could not be fitted (fewer than "
            "two weights above 1e-12 in their windows): their fits are NaN, as statsmodels' are",
            RuntimeWarning,
            stacklevel=4,
        )
    return out


def _first_key(rows):
    return float(rows[0][0])


def _fit_points(rules, extended, robust, points, k, extent):
    x, y, _ = extended
    return rules.fit(x, y, robust, points, np.full(points.shape[0], np.nan), k, extent)


def _input_order(rows: SortedRows, fits: list, chunks, starts) -> da.Array:
    """The fits in the input's order and blocks, NaN for the rows left out."""
    out = []
    for start, size in zip(starts, chunks, strict=True):
        pieces = [delayed(_placed)(b, f, start, start + size)
                  for b, f in zip(rows.blocks, fits, strict=True)]  # fmt: skip
        out.append(delayed(_scattered)(pieces, start, size))
    out = dask.persist(*out)
    return da.concatenate([da.from_delayed(o, (size,), np.float64)
                           for o, size in zip(out, chunks, strict=True)])  # fmt: skip


def _placed(rows, fits, lo, hi):
    place = rows[2]
    inside = (place >= lo) & (place < hi)
    return place[inside], fits[inside]


def _scattered(pieces, start, size):
    out = np.full(size, np.nan)
    for place, fits in pieces:
        out[place - start] = fits
    return out
