"""Rows held in Dask blocks sorted by one column, into blocks of known ranks.

A sample sort whose splitters are exact: the rows are ordered by ``(x, i)``, ``i`` each
row's place in the input (ties stay in input order: a stable sort), and cut at the ranks
``⌊p · n / P⌋``. The cutting values are order statistics of ``x``
(:func:`.order_statistics.order_statistics`); where a run of ties straddles a cut, the
input places of its rows (one more order statistic) decide which go left. Each input
block then sends every output block its rows between two cuts, which that block merges:
the output blocks hold known ranks, so that any run of ranks (a window's neighbours on
either side) is a few slices of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from .._support.optional import require
from .order_statistics import order_statistics, tree_sum

dask = require("dask", "Dask support (attnpool.distributed)")
from dask import delayed  # noqa: E402

__all__ = ["SortedRows", "rank_run", "sorted_rows"]


@dataclass(frozen=True)
class SortedRows:
    """Rows sorted by ``x``: ``blocks`` of delayed ``(x, y, place)`` arrays holding ranks
    ``starts[b]`` to ``starts[b + 1]``."""

    blocks: list
    starts: list

    @property
    def n(self) -> int:
        return int(self.starts[-1])


def sorted_rows(rows: list, n: int, places: int) -> SortedRows:
    """``rows``: delayed ``(x, y, place)`` arrays, ``n`` rows in all, ``place`` each row's
    place in an input of ``places`` rows; sorted into as many blocks (at most ``n``)."""
    count = max(1, min(len(rows), n))
    cuts = [n * p // count for p in range(1, count)]
    if not cuts:
        return SortedRows([delayed(_merged)(rows)], [0, n])
    values = order_statistics([delayed(_first)(r) for r in rows], cuts)
    below, tied = tree_sum([delayed(_counts)(r, values) for r in rows]).compute()
    # the j-th cut's ties, their places moved up by j · places, kept apart in one list
    before = np.concatenate([[0], np.cumsum(tied)[:-1]])
    ranks = before + (np.array(cuts) - below)
    ties = [delayed(_tied_places)(r, values, places) for r in rows]
    bounds = order_statistics(ties, ranks) - np.arange(len(cuts)) * places
    pieces = [delayed(_split)(r, values, bounds) for r in rows]
    blocks = [delayed(_merged)([delayed(_piece)(p, b) for p in pieces]) for b in range(count)]
    return SortedRows(list(dask.persist(*blocks)), [0, *cuts, n])


def _first(rows):
    return rows[0]


def _counts(rows, values):
    """Rows below each value, and rows equal to it."""
    x = np.sort(rows[0])
    low = np.searchsorted(x, values, side="left")
    return low, np.searchsorted(x, values, side="right") - low


def _tied_places(rows, values, places):
    """The places of the rows equal to each cutting value, the ``j``-th value's moved up
    by ``j · places``, as floats (exact below 2⁵³)."""
    x, place = rows[0], rows[2]
    found = [place[x == value] + j * places for j, value in enumerate(values)]
    return np.concatenate(found).astype(np.float64)


def _ordered(rows):
    """The rows sorted by ``(x, place)``."""
    order = np.lexsort((rows[2], rows[0]))
    return tuple(column[order] for column in rows)


def _split(rows, values, bounds):
    """The rows cut at ``(value, place)`` bounds: a row goes left of a cut where
    ``x < value``, or ``x == value`` and ``place ≤ bound``."""
    x, y, place = _ordered(rows)
    low = np.searchsorted(x, values, side="left")
    high = np.searchsorted(x, values, side="right")
    cut = [lo + np.searchsorted(place[lo:hi], bound, side="right")
           for lo, hi, bound in zip(low, high, bounds, strict=True)]  # fmt: skip
    edges = [0, *cut, x.shape[0]]
    return [(x[a:b], y[a:b], place[a:b]) for a, b in pairwise(edges)]


def _piece(pieces, which):
    return pieces[which]


def _merged(pieces):
    columns = [np.concatenate([p[c] for p in pieces]) for c in range(3)]
    return _ordered(tuple(columns))


def rank_run(rows: SortedRows, lo: int, hi: int, columns: list | None = None):
    """Ranks ``lo`` to ``hi`` of the sorted rows (a delayed tuple of their columns), or of
    ``columns``, delayed per-block arrays aligned with the blocks."""
    lo, hi = max(lo, 0), min(hi, rows.n)
    slices = []
    for block, (start, stop) in enumerate(pairwise(rows.starts)):
        if start < hi and lo < stop:
            source = rows.blocks[block] if columns is None else columns[block]
            slices.append(delayed(_cut)(source, max(lo, start) - start, min(hi, stop) - start))
    return delayed(_joined)(slices, columns is None)


def _cut(source, a, b):
    if isinstance(source, tuple):
        return tuple(column[a:b] for column in source)
    return source[a:b]


def _joined(slices, rows):
    if rows:
        return tuple(np.concatenate([s[c] for s in slices]) for c in range(3))
    return np.concatenate(slices)
