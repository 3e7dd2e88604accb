"""LOESS neighbourhoods over keys held in blocks: radii, which blocks reach a query,
and the rows within reach gathered.

A query's radius is the distance to its ``k``-th nearest key among all blocks. Each
block first gives its own radii for a group of queries: at its share of ``k``,
``⌈k n_b / n⌉``, and at ``min(k, n_b)``. The least of the first bounds the radius from
below (closer than its radius at its share a block holds its share less one at most,
and the shares less one each add up to less than ``k``); the largest of the first, or
the least distance within which whole blocks hold ``k`` keys between them, from above.
In one column the radius is then an order statistic of the distances inside that
bracket, found exactly by rounds of counting (:mod:`.order_statistics`: two bisections
on each block's sorted keys per count, then the few distances left inside each bracket
sent and the answer picked among them); where blocks are random rows, one round. In
several (the blocks' radii from the compiled loop, or a k-d tree), each block counts
its keys below the bracket and sends the squared distances inside it (the compiled
loop's, so the radius is in memory's to the bit); the ``k``-th is picked from the
merged bands. Where blocks are random rows the band is thin (a few percent of ``k``);
where a band holds more than :data:`BAND` (or ``k / 4``) distances, as blocks sorted by
location can make it, each block's k-d tree lists its distances within the upper bound
instead, merged keeping the ``k`` smallest; the groups are small enough that a list
holds :data:`LIST_ENTRIES` numbers.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .._support.optional import require
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
#: Squared distances a query's band holds at least (``k / 4`` where more).
BAND = 256


def distributed_radii(keys: list, groups: list, count: int, d: int) -> list:
    """Each query's distance to its ``count``-th nearest key, for query ``groups``
    (delayed (m_i, d) arrays) over key blocks ``keys`` (delayed (n_b, d)). Delayed (m_i,)
    arrays."""
    if d == 1:
        return _counted_radii(keys, groups, count)
    from scipy.spatial import cKDTree

    sizes = dask.compute(*[delayed(len)(block) for block in keys])
    n = sum(sizes)
    kept = [b for b, size in enumerate(sizes) if size]
    shares, wholes = [-(-count * sizes[b] // n) for b in kept], [min(count, sizes[b]) for b in kept]
    width = max(BAND, count // 4)
    bounds, out = [], []
    for queries in groups:
        local = [delayed(_local_radii)(keys[b], queries, j, w)
                 for b, j, w in zip(kept, shares, wholes, strict=True)]  # fmt: skip
        bounds.append(delayed(_bounds)(local, shares, wholes, count))
        bands = [delayed(_band)(keys[b], queries, bounds[-1], width) for b in kept]
        merged = tree_sum(bands, partial(_merged_bands, width=width))
        out.append(delayed(_banded_radius)(merged, count))
    out = list(dask.persist(*out))
    short = dask.compute(*[delayed(_incomplete)(radius) for radius in out])
    if any(short):  # a band too wide for its rows, or no compiled loop: the k-d trees
        from scipy.spatial import cKDTree

        trees = dask.persist(*[delayed(cKDTree)(keys[b]) for b in kept])
        for i in np.flatnonzero(short):
            lists = [delayed(_within)(tree, groups[i], bounds[i], count) for tree in trees]
            merged = tree_sum(lists, partial(smallest, count=count))
            out[i] = dask.persist(delayed(_farthest)(merged))[0]
    return out


def _local_radii(X, queries, share, whole):
    """A block's own radii at ``share`` and at ``whole`` neighbours: (2, m)."""
    from ..smoothers.neighbour_sums import compiled_radii, neighbour_radii

    if compiled_radii(X):
        return np.stack([neighbour_radii(X, queries, share), neighbour_radii(X, queries, whole)])
    from scipy.spatial import cKDTree

    distances, _ = cKDTree(X).query(queries, k=sorted({share, whole}))
    distances = np.reshape(distances, (queries.shape[0], -1))
    return np.stack([distances[:, 0], distances[:, -1]])


def _bounds(local, shares, wholes, count):
    """``(lo, hi)`` per query from the blocks' own radii (module docstring): fewer than
    ``count`` keys lie closer than ``lo``, ``count`` or more within ``hi``."""
    return np.stack(local)[:, 0].min(axis=0), _upper_bound(local, shares, wholes, count)


def _upper_bound(local, shares, wholes, count):
    """A distance within which ``count`` keys surely lie, per query: the largest radius
    at a block's share, or the least within which whole blocks hold ``count`` keys."""
    radii = np.stack(local)  # (blocks, 2, m)
    by_share = radii[:, 0].max(axis=0)
    whole = radii[:, 1].T  # (m, blocks)
    order = np.argsort(whole, axis=1)
    held = np.cumsum(np.asarray(wholes)[order], axis=1)
    first = np.argmax(held >= count, axis=1)
    by_blocks = np.take_along_axis(whole, order, axis=1)[np.arange(whole.shape[0]), first]
    return np.fmin(by_share, by_blocks)


def _band(X, queries, bounds, width):
    """A block's keys closer than ``lo`` (counted) and its squared distances between
    ``lo`` and ``hi`` (the compiled loop's, as in memory); None without the loop."""
    from ..smoothers.neighbour_sums import compiled_radii, neighbour_band

    if not compiled_radii(X):
        return None
    lo, hi = bounds
    below, band, kept = neighbour_band(X, queries, (lo * (1 - 1e-12)) ** 2,
                                       (hi * (1 + 1e-12)) ** 2, width)  # fmt: skip
    return below, np.where(np.isnan(band), np.inf, band), kept


def _merged_bands(a, b, width):
    if a is None or b is None:
        return None
    return a[0] + b[0], smallest(a[1], b[1], width), a[2] + b[2]


def _banded_radius(merged, count):
    """The ``count``-th smallest distance from the merged bands; NaN for rows whose band
    held more than ``width`` distances (or all, without the loop)."""
    if merged is None:
        return None
    below, band, kept = merged
    place = count - below - 1
    complete = (kept <= band.shape[1]) & (place >= 0) & (place < kept)
    ordered = np.sort(band, axis=1)
    rows = np.arange(band.shape[0])
    picked = ordered[rows, np.clip(place, 0, band.shape[1] - 1)]
    return np.where(complete, np.sqrt(picked), np.nan)


def _incomplete(radius) -> bool:
    return radius is None or bool(np.isnan(radius).any())


def _within(tree, queries, bounds, count):
    """A block's distances to each query within the bound ``hi`` (sorted, at most
    ``count``, padded with infinity): shape (m, at most count)."""
    reach = bounds[1] * (1.0 + 1e-12)  # a key on the bound is kept whatever the rounding
    held = tree.query_ball_point(queries, reach, return_length=True)
    k = int(min(count, np.max(held, initial=0)))
    if k == 0:
        return np.zeros((queries.shape[0], 0))
    distances, _ = tree.query(queries, k=k, distance_upper_bound=float(reach.max()) * 1.000001)
    distances = np.reshape(distances, (queries.shape[0], k))
    return np.where(distances <= reach[:, None], distances, np.inf)


def _farthest(distances: np.ndarray) -> np.ndarray:
    return distances.max(axis=1)


def _counted_radii(keys, groups, count):
    """One column: the ``count``-th smallest distance by rounds of counting."""
    ordered = dask.persist(*[delayed(np.sort)(block[:, 0]) for block in keys])
    sizes = dask.compute(*[delayed(len)(block) for block in ordered])
    kept = [b for b, size in enumerate(sizes) if size]
    n = sum(sizes)
    shares, wholes = [-(-count * sizes[b] // n) for b in kept], [min(count, sizes[b]) for b in kept]
    # each group's queries sorted: NumPy's sorted search is fastest for sorted needles
    orders = [delayed(_order)(queries) for queries in groups]
    firsts = list(
        dask.persist(*[delayed(_first)(q, o) for q, o in zip(groups, orders, strict=True)])
    )
    brackets = []
    for q in firsts:  # the blocks' own radii bound it; one round counts at the bounds
        local = [delayed(_sorted_local_radii)(ordered[b], q, j, w)
                 for b, j, w in zip(kept, shares, wholes, strict=True)]  # fmt: skip
        points = delayed(_bracket_points)(delayed(_bounds)(local, shares, wholes, count))
        counts = tree_sum([delayed(distance_counts)(ordered[b], q, points) for b in kept])
        brackets.append(delayed(_bracket)(points, counts, count))
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


def _sorted_local_radii(keys, q, share, whole):
    """A block's own radii at ``share`` and ``whole`` keys, from its sorted keys: (2, m)."""
    from ..smoothers.neighbourhoods import sorted_radii

    return np.stack([sorted_radii(keys, q, share), sorted_radii(keys, q, whole)])


def _bracket_points(bounds):
    """Just below ``lo`` (fewer than ``count`` keys at or below it) and ``hi``: (m, 2)."""
    lo, hi = bounds
    return np.stack([np.nextafter(lo, -np.inf), hi], axis=1)


def _bracket(points, counts, count) -> Bracket:
    return Bracket(points[:, 0], points[:, 1], counts[:, 0], counts[:, 1],
                   np.full(points.shape[0], count))  # fmt: skip


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
