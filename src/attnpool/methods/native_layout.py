"""The compiled loop's inputs in the order it reads them, and what it needs to pass
over keys too far from a block of queries to matter: keys and queries in locality order
(:mod:`.locality`), the keys' boxes, and each query's own key (leave-one-out)."""

from __future__ import annotations

import numpy as np

from .locality import bounding_boxes, locality_order

__all__ = ["BOX", "CHUNK", "LOCAL_MIN_PAIRS", "LOG2E", "Layout", "passes_over"]

#: Keys per chunk in ``native.c``; key arrays are padded to a multiple of it.
CHUNK = 256
#: Keys per bounding box in ``native.c``.
BOX = 64
#: Fewest query × key pairs from which keys and queries are put in locality order, so that
#: the loop can pass over the boxes of keys too far to matter.
LOCAL_MIN_PAIRS = 2**22
#: log2(e), which the loop folds into its coordinates.
LOG2E = 1.4426950408889634


class Layout:
    """The loop's inputs in the order it reads them, and what it needs to pass over far
    keys. From :data:`LOCAL_MIN_PAIRS` pairs over more than one chunk, where a query's
    reach (:func:`passes_over`) leaves out at least half of the keys' box: keys and queries in
    locality order (``keys``, ``queries``: the permutations; ``kt`` reordered in place;
    ``ordered``: the caller's order already is one) with the keys' boxes (``lo``, ``hi``);
    else as given, no boxes. ``own``: the key each query row leaves out
    (``exclude_self``: query ``i`` is key ``i``), or None."""

    def __init__(self, q: np.ndarray, kt: np.ndarray, m: int, exclude_self: bool,
                 ordered: bool = False) -> None:  # fmt: skip
        n, d = q.shape
        every_query, every_key = np.arange(n), np.arange(m)
        self.keys, self.queries = every_key, every_query
        self.lo = self.hi = None
        keys = kt[:d, :m].T
        if n * m >= LOCAL_MIN_PAIRS and m > CHUNK and passes_over(keys, m):
            if not ordered:
                self.keys = locality_order(keys, BOX)
                # leave-one-out over every point: the queries are the keys
                self.queries = self.keys if exclude_self and n == m else locality_order(q, BOX)
                kt[:, :m] = kt[:, self.keys]
                q = q[self.queries]
            self.lo, self.hi = bounding_boxes(kt[:d, :m].T.astype(np.float64), BOX, kt.shape[1])
        self.q, self.kt = np.ascontiguousarray(q), kt
        self.own = None
        if exclude_self:
            position = np.empty(m, np.intp)
            position[self.keys] = every_key
            self.own = position[self.queries]


def passes_over(keys: np.ndarray, m: int) -> bool:
    """Whether the keys within a query's reach, for a query among the ``keys (m, d)``
    (scaled coordinates) uniformly spread over their box, are at most half of them on
    average: whether passing over far ones pays."""
    # the loop passes over boxes below about 2^-48 / (BOX · boxes) of a row's sum
    reach = np.sqrt(2 * (48 + np.log2(float(m))) / LOG2E)
    extent = np.maximum(np.ptp(keys, axis=0).astype(np.float64), reach)
    # per column, the mean length of [x − reach, x + reach] within [0, extent]
    return bool(np.prod((2 * reach - reach**2 / extent) / extent) <= 0.5)
