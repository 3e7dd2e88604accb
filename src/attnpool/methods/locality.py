"""Points in an order that keeps near ones together, and the boxes that bound them.

A sum over keys can pass over the keys far from a block of queries only if it can tell
which are far without visiting them: the keys are put in a *k*-d order — the set split
in two at a multiple of ``leaf`` rows near its median along its widest column, each half
in turn, down to runs of ``leaf`` — and each run of ``leaf`` keys is bounded by its box.
Queries in the same order come in blocks that are near one another as well, so one
distance between boxes bounds every pair of a block and a run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["bounding_boxes", "locality_order"]


def locality_order(points: np.ndarray, leaf: int, compiled: Any = None) -> np.ndarray:
    """A permutation of the rows of ``points (n, d)`` whose consecutive runs of ``leaf``
    (from the first row) are near one another: the leaves of a *k*-d split. ``compiled``:
    ``expansions.c``'s ``locality_order`` (:func:`.native.order_function`), the same
    splits without a Python loop (ties broken otherwise), or None."""
    n, d = points.shape
    if d == 1:
        return np.argsort(points[:, 0], kind="stable")
    if compiled is not None and d <= 64:
        work = np.array(points, np.float64, order="C")  # reordered in place
        order = np.empty(n, np.int64)
        compiled(work.ctypes.data, n, d, leaf, order.ctypes.data)
        return order.astype(np.intp, copy=False)
    order = np.arange(n)
    segments = [(0, n)]
    while segments:
        start, stop = segments.pop()
        if stop - start <= leaf:
            continue
        rows = order[start:stop]
        # a column at a time: NumPy reduces a narrow array along its rows slowly
        columns = [points[rows, j] for j in range(d)]
        axis = int(np.argmax([c.max() - c.min() for c in columns]))
        half = leaf * (-(-(stop - start) // leaf) // 2)
        order[start:stop] = rows[np.argpartition(columns[axis], half - 1)]
        segments += [(start, start + half), (start + half, stop)]
    return order


def bounding_boxes(points: np.ndarray, leaf: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``lo, hi (rows // leaf, d)``: the smallest and largest coordinate of each run of
    ``leaf`` rows of ``points (n ≥ 1, d)``, ``rows`` a multiple of ``leaf`` at least ``n``;
    a run past the points is empty (``lo = +inf``, ``hi = −inf``)."""
    n, d = points.shape
    runs = -(-n // leaf)
    padded = np.empty((runs * leaf, d))
    padded[:n] = points
    padded[n:] = points[-1]  # the last run's own point: its box stays the same
    lo = np.full((rows // leaf, d), np.inf)
    hi = np.full((rows // leaf, d), -np.inf)
    lo[:runs] = padded.reshape(runs, leaf, d).min(axis=1)
    hi[:runs] = padded.reshape(runs, leaf, d).max(axis=1)
    return lo, hi
