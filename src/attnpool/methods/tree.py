"""``tree``: kernel sums within a stated tolerance, by a k-d tree of the keys (as
scikit-learn's ``KernelDensity(atol, rtol)``), for any dimension and any kernel that never
grows with the distance.

The keys are split at medians along their widest coordinate into boxes of at most
``leaf_size``. For a query and a box of ``c`` keys at scaled distances within
``[r_min, r_max]``, every weight lies in ``[K(r_max), K(r_min)]``: taking the midpoint for
each errs by at most ``e = c (K(r_min) − K(r_max)) / 2`` in the weight sum and, with the
values less their midrange ``v₀``, by ``e · range(v) / 2`` in the weighted values. A box
is taken whole when ``e ≤ (c / m)(rtol · L + atol)``, ``L`` a lower bound of the query's
weight sum that only grows as the walk goes on; else its halves are visited, and a leaf
is summed exactly (its compact kernel's edge decided as on every path). So

.. math:: |\\hat s - s| \\le \\mathrm{rtol}\\, s + \\mathrm{atol}, \\qquad
          \\Big|\\frac{\\hat t}{\\hat s} - \\frac ts\\Big| \\le \\frac{|\\hat s - s|}{\\hat s}
          \\operatorname{range}(v),

the pooled value within ``rtol / (1 − rtol) · range(v)`` (``atol = 0``). ``L`` starts from
the exact weights of each query's nearest keys. Weights are taken relative to each
query's largest possible one (``K`` at the root box's nearest point); the walk runs over
all queries at once, box level by box level, in NumPy float64. A query whose walk would
visit more than a quarter of the leaves is left to the exact engines, which sum every
pair faster than a walk that visits most of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..kernels import MONOTONE, Kernel, is_builtin, is_monotone
from ..kernels.edges import edge_log_profile, has_edge

__all__ = ["KeyTree", "build_tree", "refusal", "supports", "tree_sums"]

#: Queries walked at once (memory: their frontier of boxes).
QUERY_CHUNK = 1024


def supports(kernel: Kernel) -> bool:
    """A built-in kernel that never grows with the distance, radial or a product of them."""
    if kernel.product:
        return is_builtin(kernel) and kernel.name.removesuffix("-product") in MONOTONE
    return is_monotone(kernel)


def refusal(kernel: Kernel, d: int) -> str | None:
    """Why ``tree`` cannot pool this kernel, or None: a box's weights are bounded by its
    nearest and farthest points only for kernels that never grow with the distance."""
    if not supports(kernel):
        return (
            "'tree' needs a built-in distance kernel that never grows with the distance; "
            f"received {kernel.name!r}"
        )
    return None


@dataclass(frozen=True)
class KeyTree:
    """Boxes of a k-d tree over ``m`` keys: ``low``/``high (N, d)`` their corners,
    ``start``/``stop (N,)`` their keys' range in ``order``, ``children (N, 2)`` (−1 at
    leaves); node 0 is the root."""

    low: np.ndarray
    high: np.ndarray
    start: np.ndarray
    stop: np.ndarray
    children: np.ndarray
    order: np.ndarray


def build_tree(keys: np.ndarray, leaf_size: int) -> KeyTree:
    """A k-d tree of ``keys (m, d)``: boxes split at the median of their widest coordinate."""
    m = keys.shape[0]
    order = np.arange(m)
    nodes = [(0, m)]
    children: list[list[int]] = []
    low, high = [], []
    index = 0
    while index < len(nodes):
        start, stop = nodes[index]
        rows = keys[order[start:stop]]
        low.append(rows.min(axis=0))
        high.append(rows.max(axis=0))
        pair = [-1, -1]
        if stop - start > leaf_size:
            axis = int(np.argmax(high[-1] - low[-1]))
            middle = (stop - start) // 2
            part = np.argpartition(rows[:, axis], middle)
            order[start:stop] = order[start:stop][part]
            pair = [len(nodes), len(nodes) + 1]
            nodes += [(start, start + middle), (start + middle, stop)]
        children.append(pair)
        index += 1
    bounds = np.array(nodes)
    return KeyTree(np.array(low), np.array(high), bounds[:, 0], bounds[:, 1],
                   np.array(children), order)  # fmt: skip


def _log_kernel(kernel: Kernel, r2: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return np.asarray(kernel.log_profile(r2), float)


def _box_bounds(queries, tree: KeyTree, nodes, rows, kernel: Kernel):
    """``(log K_max, log K_min)`` over boxes ``nodes`` at query ``rows``: the kernel at
    each box's nearest and farthest point (coordinate by coordinate for a product kernel)."""
    q = queries[rows]
    low, high = tree.low[nodes], tree.high[nodes]
    near = np.maximum(np.maximum(low - q, q - high), 0.0)
    far = np.maximum(q - low, high - q)
    if kernel.product:
        return (np.sum(_log_kernel(kernel, near * near), axis=1),
                np.sum(_log_kernel(kernel, far * far), axis=1))  # fmt: skip
    return (_log_kernel(kernel, np.sum(near * near, axis=1)),
            _log_kernel(kernel, np.sum(far * far, axis=1)))  # fmt: skip


def tree_sums(
    queries: np.ndarray,
    keys: np.ndarray,
    values: np.ndarray,
    kernel: Kernel,
    *,
    rtol: float,
    atol: float = 0.0,
    leaf_size: int = 32,
    edges=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sums (n, 1 + p), log_shift (n,), unsettled (n,))``: ``[ŝ, t̂]`` times
    ``e^(−log_shift)`` for scaled ``queries (n, d)`` over scaled ``keys (m, d)`` with
    ``values (m, p)``, ``ŝ`` within ``rtol · s + atol`` of the weight sum (``atol`` in the
    sums' own units), except the ``unsettled`` rows, whose walk would have visited more
    than a quarter of the leaves: the caller sums those exactly (its fastest exact engine
    is faster than visiting them). ``edges``: the unscaled queries, keys and bandwidth
    that decide a compact kernel's edge in the leaves."""
    tree = build_tree(keys, leaf_size)
    centre = (values.max(axis=0) + values.min(axis=0)) / 2 if values.size else 0.0
    shifted = values - centre
    ordered_keys, ordered_values = keys[tree.order], shifted[tree.order]
    sums_v = np.zeros((tree.start.shape[0], values.shape[1]))
    prefix = np.concatenate([np.zeros((1, values.shape[1])), np.cumsum(ordered_values, axis=0)])
    sums_v[:] = prefix[tree.stop] - prefix[tree.start]
    counts = (tree.stop - tree.start).astype(float)
    boxes = _Boxes(tree, ordered_keys, ordered_values, sums_v, counts)
    out = np.zeros((queries.shape[0], 1 + values.shape[1]))
    shifts = np.zeros(queries.shape[0])
    unsettled = np.zeros(queries.shape[0], bool)
    for first in range(0, queries.shape[0], QUERY_CHUNK):
        chunk = slice(first, first + QUERY_CHUNK)
        out[chunk], shifts[chunk], unsettled[chunk] = _walk(
            queries[chunk], boxes, kernel, (rtol, atol), edges, chunk
        )
    out[:, 1:] += out[:, :1] * centre  # the values' midrange back
    return out, shifts, unsettled


class _Boxes(NamedTuple):
    """The keys as the walk reads them: the ``tree``, the keys and their values (about
    their midrange) in the tree's order, and each box's values' sum and count."""

    tree: KeyTree
    keys: np.ndarray
    values: np.ndarray
    box_values: np.ndarray
    counts: np.ndarray


def _walk(queries, boxes: _Boxes, kernel, tolerances, edges, chunk):
    """``(sums, shift, unsettled)`` of one chunk of rows (:func:`tree_sums`), within
    ``tolerances = (rtol, atol)``."""
    tree, keys, values, box_values, counts = boxes
    rtol, atol = tolerances
    n, p, m = queries.shape[0], values.shape[1], keys.shape[0]
    pairs = _PairWeights(queries, keys, tree, kernel, edges, chunk)
    shift, _ = _box_bounds(queries, tree, np.zeros(n, int), np.arange(n), kernel)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    pairs.shift = shift
    sums = np.zeros((n, 1 + p))
    seed_low = _nearest_weights(queries, keys, pairs, tree.stop[0] - tree.start[0])
    settled_low = np.zeros(n)  # a lower bound of each row's weight sum, from settled boxes
    rows, nodes = np.arange(n), np.zeros(n, int)
    tolerance_unit = atol * np.exp(-shift)  # atol in each row's shifted units
    dense = np.zeros(n, bool)
    budget = max(8, m // (4 * max(1, int(np.max(counts[tree.children[:, 0] < 0])))))
    while rows.size:
        log_heavy, log_light = _box_bounds(queries, tree, nodes, rows, kernel)
        heavy, light = np.exp(log_heavy - shift[rows]), np.exp(log_light - shift[rows])
        count = counts[nodes]
        lower = np.maximum(seed_low, settled_low + np.bincount(rows, count * light, minlength=n))
        error = count * (heavy - light) / 2
        allowed = count / m * (rtol * lower[rows] + tolerance_unit[rows])
        take = error <= allowed
        leaf = (tree.children[nodes, 0] < 0) & ~take
        middle = (heavy + light) / 2
        np.add.at(sums[:, 0], rows[take], count[take] * middle[take])
        np.add.at(sums[:, 1:], rows[take], middle[take, None] * box_values[nodes[take]])
        settled_low += np.bincount(rows[take], count[take] * light[take], minlength=n)
        if leaf.any():
            exact = _leaf_sums(pairs, values, tree, rows[leaf], nodes[leaf])
            np.add.at(sums, rows[leaf], exact)
            settled_low += np.bincount(rows[leaf], exact[:, 0], minlength=n)
        split = ~take & ~leaf
        rows = np.repeat(rows[split], 2)
        nodes = tree.children[nodes[split]].reshape(-1)
        # a row whose walk would visit a good share of the leaves is left to an exact engine
        crowded = np.bincount(rows, minlength=n) > budget
        if crowded.any():
            dense |= crowded
            keep = ~crowded[rows]
            rows, nodes = rows[keep], nodes[keep]
    sums[dense] = 0.0
    return sums, shift, dense


class _PairWeights:
    """Exact log weights of (query, key) pairs, less each query's shift: the compact
    kernel's edge decided on the unscaled inputs, as on every path."""

    def __init__(self, queries, keys, tree, kernel, edges, chunk):
        self.queries, self.keys, self.kernel = queries, keys, kernel
        self.order, self.edges, self.chunk = tree.order, edges, chunk
        self.shift = np.zeros(queries.shape[0])

    def __call__(self, rows, slots):
        """``(pairs, width)`` weights of query ``rows (pairs,)`` and key ``slots (pairs,
        width)`` (positions in the tree's order)."""
        kernel = self.kernel
        if self.edges is not None and has_edge(kernel):
            unscaled_q, unscaled_k, h = self.edges
            key_rows = self.order[slots]
            query_rows = self.chunk.start + rows
            us = [(unscaled_k[key_rows, j] - unscaled_q[query_rows][:, None, j]) / h[j]
                  for j in range(self.keys.shape[1])]  # fmt: skip
            log_w = np.asarray(edge_log_profile(us, kernel), float)
        else:
            offsets = self.keys[slots] - self.queries[rows][:, None, :]
            squares = offsets * offsets
            if kernel.product:
                log_w = np.sum(_log_kernel(kernel, squares), axis=-1)
            else:
                log_w = _log_kernel(kernel, np.sum(squares, axis=-1))
        return np.exp(log_w - self.shift[rows][:, None])


def _nearest_weights(queries, keys, pairs: _PairWeights, m: int) -> np.ndarray:
    """A lower bound of each row's weight sum: the exact weights of its nearest keys."""
    from scipy.spatial import cKDTree

    count = min(16, m)
    _, index = cKDTree(keys).query(queries, k=count)
    index = np.asarray(index).reshape(queries.shape[0], count)
    position = np.empty(m, int)
    position[pairs.order] = np.arange(m)  # the keys' places in the tree's order
    return pairs(np.arange(queries.shape[0]), position[index]).sum(axis=1)


def _leaf_sums(pairs: _PairWeights, values, tree, rows, nodes):
    """Exact ``[Σ w, Σ w v]`` of leaf ``nodes`` at query ``rows``, in the rows' shifted units."""
    width = int(np.max(tree.stop[nodes] - tree.start[nodes]))
    slots = tree.start[nodes][:, None] + np.arange(width)[None, :]
    inside = slots < tree.stop[nodes][:, None]
    slots = np.where(inside, slots, tree.start[nodes][:, None])
    w = np.where(inside, pairs(rows, slots), 0.0)
    return np.concatenate([w.sum(axis=1, keepdims=True),
                           np.einsum("rw,rwp->rp", w, values[slots])], axis=1)  # fmt: skip
