"""Nearest-neighbour windows on sorted keys, and the rows gathered from them.

A LOWESS fit at ``q`` uses the ``k`` keys nearest to it, a run ``keys[L : L + k]`` of
the sorted keys: the peers differ only in how a tie between the two ends is broken
(:mod:`.rules`). Everything here is vectorised over queries: a window's start is the
first index where a monotone condition turns, found by bisection on all queries at
once, with the comparisons written exactly as the peers write them, so that every
boundary falls on the same key as theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

__all__ = ["first_index", "gathered", "tie_runs"]

#: Entries of the (queries × window) arrays one chunk of a direct fit holds.
CHUNK_ENTRIES = 2**21


def first_index(
    turns: Callable[[np.ndarray, np.ndarray], np.ndarray], lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """For each query ``i``, the first index ``j`` in ``[lo_i, hi_i)`` where
    ``turns(i_rows, j)`` is true, else ``hi_i``; ``turns`` must be false then true along
    ``j`` (monotone), and is called with arrays of query rows and candidate indices."""
    lo = np.array(lo, dtype=np.int64)
    hi = np.array(hi, dtype=np.int64)
    rows = np.arange(lo.shape[0])
    while True:
        open_rows = lo < hi
        if not open_rows.any():
            return lo
        middle = (lo + hi) // 2
        turned = np.zeros(lo.shape[0], dtype=bool)
        turned[open_rows] = turns(rows[open_rows], middle[open_rows])
        hi = np.where(open_rows & turned, middle, hi)
        lo = np.where(open_rows & ~turned, middle + 1, lo)


def gathered(lo: np.ndarray, hi: np.ndarray) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
    """Chunks of queries with their windows' indices: ``(rows, index, inside)``, where
    ``index`` (chunk, width) holds ``lo_i, lo_i + 1, …`` (clipped to the last row) and
    ``inside`` marks the entries before ``hi_i``; a chunk holds about
    :data:`CHUNK_ENTRIES` entries."""
    widths = (hi - lo).astype(np.int64)
    step = max(1, CHUNK_ENTRIES // max(int(widths.max(initial=1)), 1))
    for start in range(0, lo.shape[0], step):
        rows = slice(start, start + step)
        widest = max(int(widths[rows].max()), 1)
        offsets = np.arange(widest)
        index = lo[rows, None] + offsets
        inside = offsets < widths[rows, None]
        last = max(int(hi[rows].max()) - 1, 0)
        yield rows, np.minimum(index, last), inside


def tie_runs(sorted_values: np.ndarray) -> np.ndarray:
    """Index of the first of each run of equal values in a sorted array."""
    if sorted_values.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.empty(sorted_values.shape[0], dtype=bool)
    starts[0] = True
    starts[1:] = sorted_values[1:] != sorted_values[:-1]
    return np.flatnonzero(starts)
