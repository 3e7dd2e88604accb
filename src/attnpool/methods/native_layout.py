"""The compiled loop's inputs in the order it reads them, and what it needs to pass
over keys too far from a block of queries to matter: keys and queries in locality order
(:mod:`.locality`), the keys' boxes, and each query's own key (leave-one-out)."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .._support.units import column_extremes
from .locality import bounding_boxes, locality_order

__all__ = ["BOX", "CHUNK", "LOCAL_MIN_PAIRS", "LOG2E", "Layout", "passes_over", "visited_share"]

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
    keys. From :data:`LOCAL_MIN_PAIRS` pairs over more than one chunk, where passing over
    far keys pays (:func:`passes_over`): keys and queries in locality order (``keys``,
    ``queries``: the permutations; ``kt`` reordered in place; ``ordered``: the caller's
    order already is one) with the keys' boxes (``lo``, ``hi``); else as given, no
    boxes. ``own``: the key each query row leaves out
    (``exclude_self``: query ``i`` is key ``i``), or None. ``reordered``: whether
    ``keys`` and ``queries`` are other than the identity."""

    def __init__(self, q: np.ndarray, kt: np.ndarray, m: int, exclude_self: bool,
                 ordered: bool = False, compiled_order: Any = None) -> None:  # fmt: skip
        n, d = q.shape
        every_query, every_key = np.arange(n), np.arange(m)
        self.keys, self.queries = every_key, every_query
        self.reordered = False
        self.lo = self.hi = None
        keys = kt[:d, :m].T
        if n * m >= LOCAL_MIN_PAIRS and m > CHUNK and passes_over(keys, m):
            if not ordered:
                self.keys = locality_order(keys, BOX, compiled_order)
                # leave-one-out over every point: the queries are the keys
                self.queries = (
                    self.keys if exclude_self and n == m else locality_order(q, BOX, compiled_order)
                )
                kt[:, :m] = kt[:, self.keys]
                q = q[self.queries]
                self.reordered = True
            self.lo, self.hi = bounding_boxes(kt[:d, :m].T.astype(np.float64), BOX, kt.shape[1])
        self.q, self.kt = np.ascontiguousarray(q), kt
        self.own = None
        if exclude_self:
            position = np.empty(m, np.intp)
            position[self.keys] = every_key
            self.own = position[self.queries]


def passes_over(keys: np.ndarray, m: int) -> bool:
    """Whether passing over far boxes pays for the ``keys (m, d)`` (scaled coordinates),
    were they uniformly spread over their box: whether the share of pairs of boxes the
    loop must visit (:func:`visited_share`) is at most :func:`worth_visiting`."""
    return visited_share(keys, m) <= worth_visiting(keys.shape[1])


def visited_share(keys: np.ndarray, m: int, samples: int = 2048) -> float:
    """The share of pairs of *k*-d leaves of ``BOX`` keys (a block of queries' among them)
    that lie within a row's reach of one another, for keys uniformly spread over their
    box: leaves from halving the widest column ``log2(m / BOX)`` times, pairs spread
    evenly over the box.

    A row's reach is measured from its heaviest key: the loop passes over a box whose
    weights are below about ``2^-48 / (BOX · boxes)`` of the row's sum, itself about the
    nearest key's weight, ``e^(−r²/2)`` at the nearest key's expected distance ``r``."""
    low, high = column_extremes(keys)
    extent = high.astype(np.float64) - low
    extent = extent[extent > 0]  # a column where every key is the same parts none
    d = len(extent)
    if d == 0 or not np.all(np.isfinite(extent)):
        return 1.0  # (coordinates that overflowed: their rows are pooled by another path)
    ball = np.pi ** (d / 2) / math.gamma(d / 2 + 1)
    width = extent.copy()
    for _ in range(max(0, math.ceil(math.log2(m / BOX)))):
        width[np.argmax(width)] /= 2
    with np.errstate(over="ignore"):  # extents near float64's limit: squares of inf
        spacing = np.exp((np.sum(np.log(extent)) - math.log(m * ball)) / d)
        reach2 = 2 * (48 + math.log2(m)) / LOG2E + (math.gamma(1 + 1 / d) * spacing) ** 2
        gap = np.maximum(_separations(d, samples) * extent - width, 0.0)
        return float(np.mean(np.sum(gap**2, axis=1) <= reach2))


@functools.cache
def _separations(d: int, samples: int) -> np.ndarray:
    """``|u − v| (samples, d)`` for pairs of points spread evenly over the unit cube: the
    quasi-random R₂d sequence (``u`` its first ``d`` coordinates, ``v`` the others)."""
    root = 2.0  # of x^(2d + 1) = x + 1, whose powers make the sequence's steps
    for _ in range(64):
        root = (1.0 + root) ** (1.0 / (2 * d + 1))
    steps = root ** -np.arange(1.0, 2 * d + 1)
    points = (0.5 + np.arange(1, samples + 1)[:, None] * steps) % 1.0
    return np.abs(points[:, :d] - points[:, d:])


def worth_visiting(d: int) -> float:
    """The largest visited share at which passing over far boxes pays in ``d`` columns
    (measured, n = m = 3·10^4: 0.5 up to three columns, falling by a quarter per column
    beyond, since the loop learns a row's sum chunk by chunk and passes over less than a
    box's distance allows, the less the more columns there are)."""
    return 0.5 * 0.75 ** max(0, d - 3)
