"""LOESS neighbourhoods: the scaled predictors, the neighbour count and each query's radius.

As in Cleveland, Grosse & Shyu's ``loess`` (R's ``loess``, netlib's ``dloess``): with
several predictors each is divided by its 10%-trimmed standard deviation (``normalize``),
a query's neighbours are its ``q = ⌊n · span⌋`` nearest points in Euclidean distance,
and its radius is the distance to the farthest of them, times ``√span`` for a span above
one (every point is then a neighbour): in one column from the sorted rows, in several
from the compiled loop (:func:`.neighbour_sums.neighbour_radii`) or a k-d tree. A point
at the radius itself has weight zero, so only the points strictly inside it enter a fit.
"""

from __future__ import annotations

import math

import numpy as np

from .neighbour_sums import compiled_radii, neighbour_radii
from .windows import first_index

__all__ = [
    "NEIGHBOUR_WORK",
    "SpanTooSmall",
    "check_several_points",
    "neighbour_count",
    "radii",
    "sorted_radii",
    "span_too_small",
    "trimmed_scale",
]

#: Queries × rows from which the compiled loop finds the radii in several columns (the
#: k-d tree below).
NEIGHBOUR_WORK = 2**20


class SpanTooSmall(ValueError):
    """A span whose neighbourhoods are empty: it reaches no row (``span · n < 1``), or
    some row's nearest rows all lie on it (ties). A span search passes over such a
    candidate."""


def span_too_small(span: float, count: int, where) -> SpanTooSmall:
    """The error of a span whose ``count`` nearest rows to the point ``where`` (or a
    description of it) all lie on that point."""
    if count == 1:
        return SpanTooSmall(
            f"span={span!r} is too small: it takes the 1 nearest row, which lies on {where} "
            "itself, leaving no neighbourhood; take a span that reaches 2 rows or more"
        )
    return SpanTooSmall(
        f"span={span!r} is too small: the {count} nearest rows to {where} all lie on it "
        "(ties), leaving no neighbourhood; take a larger span"
    )


def check_several_points(low: np.ndarray, high: np.ndarray) -> None:
    """Raise where the rows' column extremes ``low``, ``high`` (shape (d,)) say every row
    is one point: no span then leaves a neighbourhood."""
    if np.array_equal(low, high):
        raise ValueError(
            f"X: every row is the same point {np.asarray(low).tolist()}; a LOESS fit needs "
            "rows at two or more points"
        )


def trimmed_scale(X: np.ndarray) -> np.ndarray:
    """Each column's standard deviation (``n − 1``) over its sorted values less the
    ``⌈0.1 n⌉`` smallest and largest: R's ``loess`` divisor. Shape (d,). Where fewer
    than two values remain, or they are all equal, the whole column's; 1 for a constant
    column (its distances are all zero, whatever it is divided by)."""
    n = X.shape[0]
    trim = math.ceil(0.1 * n)
    ordered = np.sort(X, axis=0)
    kept = ordered[trim : n - trim]
    # each column less its least value: a sum of large equal offsets would lose the spread
    scale = (np.sqrt(np.var(kept - kept[:1], axis=0, ddof=1)) if kept.shape[0] >= 2
             else np.zeros(X.shape[1]))  # fmt: skip
    whole = np.sqrt(np.var(X - ordered[:1], axis=0, ddof=1)) if n >= 2 else np.zeros(X.shape[1])
    scale = np.where(scale > 0, scale, whole)
    return np.where(scale > 0, scale, 1.0)


def neighbour_count(span: float, n: int) -> int:
    """``q = ⌊n · min(span, 1)⌋``, the neighbours of each query."""
    q = math.floor(n * min(span, 1.0))
    if q < 1:
        raise SpanTooSmall(f"span={span!r} leaves no neighbours among {n} rows (span · n < 1)")
    return q


def radii(X: np.ndarray, queries: np.ndarray, span: float, count: int | None = None) -> np.ndarray:
    """Each query's radius: the distance to its ``q``-th nearest row of ``X`` (shape
    (n, d), scaled), times ``√span`` above one; ``q`` is ``count`` where given. Shape
    (m,)."""
    n, d = X.shape
    q = neighbour_count(span, n) if count is None else count
    if d == 1:
        radius = sorted_radii(np.sort(X[:, 0]), queries[:, 0], q)
    elif n * queries.shape[0] > NEIGHBOUR_WORK and compiled_radii(X):
        radius = neighbour_radii(X, queries, q)
    else:
        from scipy.spatial import cKDTree

        distances, _ = cKDTree(X).query(queries, k=[q], workers=-1)
        radius = distances[:, 0]
    if not np.all(radius > 0):
        where = queries[int(np.flatnonzero(~(radius > 0))[0])]
        raise span_too_small(span, q, where.tolist())
    return radius * math.sqrt(max(span, 1.0))


def sorted_radii(keys: np.ndarray, queries: np.ndarray, q: int) -> np.ndarray:
    """The ``q``-th smallest ``|x − query|`` on sorted keys: the window of ``q`` keys
    that no shift to the right narrows, found by bisection for every query at once."""
    n = keys.shape[0]

    def settled(rows, start):  # moving right would not bring a nearer key in
        return ~(queries[rows] - keys[start] > keys[start + q] - queries[rows])

    count = queries.shape[0]
    starts = first_index(settled, np.zeros(count, np.int64), np.full(count, n - q))
    return np.fmax(queries - keys[starts], keys[starts + q - 1] - queries)
