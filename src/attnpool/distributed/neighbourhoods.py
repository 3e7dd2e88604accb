"""LOESS neighbourhoods over keys held in blocks: radii, which blocks reach a query,
and the rows within reach gathered.

A query's radius is the distance to its ``k``-th nearest key among all blocks. In one
column it is an order statistic of the distances, found exactly by rounds of counting
(:mod:`.order_statistics`: two bisections on each block's sorted keys per count, then
the few distances left inside each bracket sent and the answer picked among them). In
several, each block's k-d tree gives its ``k`` nearest distances to a group of queries,
and the groups' lists are merged pairwise keeping the ``k`` smallest; the groups are
small enough that a list holds :data:`LIST_ENTRIES` numbers.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .._optional import require
from ..smoothers.local_polynomial import INSIDE
from .order_statistics import (
    Bracket,
    distance_counts,
    distances_between,
    finished,
    narrowed,
    picked,
    smallest,
    thresholds,
    tree_sum,
)

dask = require("dask", "Dask support (attnpool.distributed)")
from dask import delayed  # noqa: E402

__all__ = ["LIST_ENTRIES", "distributed_radii", "reaches", "within_reach"]

#: Numbers in one group's lists of nearest distances.
LIST_ENTRIES = 2**22


def distributed_radii(keys: list, groups: list, count: int, d: int, spread: tuple) -> list:
    """Each query's distance to its ``count``-th nearest key, for query ``groups``
    (delayed (m_i, d) arrays) over key blocks ``keys`` (delayed (n_b, d)); ``spread``:
    the keys' least and greatest coordinates, (d,) each. Delayed (m_i,) arrays."""
    if d == 1:
        return _counted_radii(keys, groups, count, spread)
    from scipy.spatial import cKDTree

    trees = dask.persist(*[delayed(cKDTree)(block) for block in keys])
    out = []
    for queries in groups:
        lists = [delayed(_nearest)(tree, queries, count) for tree in trees]
        merged = tree_sum(lists, partial(smallest, count=count))
        out.append(delayed(_farthest)(merged))
    return list(dask.persist(*out))


def _nearest(tree, queries: np.ndarray, count: int) -> np.ndarray:
    k = min(count, tree.n)
    if k == 0:
        return np.zeros((queries.shape[0], 0))
    distance, _ = tree.query(queries, k=k)
    return np.reshape(distance, (queries.shape[0], k))


def _farthest(distances: np.ndarray) -> np.ndarray:
    return distances.max(axis=1)


def _counted_radii(keys, groups, count, spread):
    """One column: the ``count``-th smallest distance by rounds of counting."""
    ordered = dask.persist(*[delayed(np.sort)(block[:, 0]) for block in keys])
    low, high = float(spread[0][0]), float(spread[1][0])
    total = sum(dask.compute(*[delayed(len)(block) for block in ordered]))
    # each group's queries sorted: NumPy's sorted search is fastest for sorted needles
    orders = [delayed(_order)(queries) for queries in groups]
    firsts = list(
        dask.persist(*[delayed(_first)(q, o) for q, o in zip(groups, orders, strict=True)])
    )
    brackets = [delayed(_bracket)(q, low, high, total, count) for q in firsts]
    while True:
        brackets = list(dask.persist(*brackets))
        if all(dask.compute(*[delayed(finished)(bracket) for bracket in brackets])):
            break
        following = []
        for q, bracket in zip(firsts, brackets, strict=True):
            points = delayed(thresholds)(bracket)
            counts = tree_sum([delayed(distance_counts)(block, q, points) for block in ordered])
            following.append(delayed(narrowed)(bracket, points, counts))
        brackets = following
    out = []
    for q, order, bracket in zip(firsts, orders, brackets, strict=True):
        candidates = tree_sum([delayed(distances_between)(block, q, bracket) for block in ordered],
                              smallest)  # fmt: skip
        out.append(delayed(_unsorted)(delayed(picked)(bracket, candidates), order))
    return list(dask.persist(*out))


def _bracket(q, low, high, total, count) -> Bracket:
    """Below zero, and the farthest any key can be (the distance's rounding is monotone,
    so no key's is beyond the ends')."""
    m = q.shape[0]
    return Bracket(np.full(m, -np.finfo(float).smallest_subnormal), np.fmax(high - q, q - low),
                   np.zeros(m, np.int64), np.full(m, total), np.full(m, count))  # fmt: skip


def _order(queries):
    return np.argsort(queries[:, 0], kind="stable")


def _first(queries, order):
    return queries[order, 0]


def _unsorted(values, order):
    out = np.empty_like(values)
    out[order] = values
    return out


def reaches(key_boxes: list, box: np.ndarray, radius: float) -> list[int]:
    """The key blocks (their bounding boxes, (2, d) each, None when empty) that hold a
    point within ``radius`` of a group of queries in the bounding ``box`` (2, d)."""
    found = []
    for index, keys in enumerate(key_boxes):
        if keys is None:
            continue
        gap = np.fmax(0.0, np.fmax(keys[0] - box[1], box[0] - keys[1]))
        if np.sqrt(np.sum(gap * gap)) < radius * (1.0 + 1e-9):
            found.append(index)
    return found


def within_reach(keys: np.ndarray, queries: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """The rows of ``keys`` (n, d) within :data:`INSIDE` of some query's ``radius``:
    every row the queries' fits weigh. Indices, ascending."""
    near = np.zeros(keys.shape[0], dtype=bool)
    step = max(1, 2**20 // max(keys.shape[0], 1))
    for start in range(0, queries.shape[0], step):
        part = slice(start, start + step)
        gap = keys[None] - queries[part, None, :]
        u2 = np.sum(gap * gap, axis=-1) / radius[part, None] ** 2
        near |= np.any(u2 < INSIDE**2, axis=0)
    return np.flatnonzero(near)
