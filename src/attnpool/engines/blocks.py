"""Block functions and what the exact engines' blocks share.

A block function ``(query_rows, query_ids, key_rows, key_ids, value_rows) ->
PoolingState`` is what the dense and the streamed engines run
(:func:`attnpool.engines.compiled_backends.pool_state`): :func:`kernel_block` for plain
kernel pooling (its key mask,
padding and known row maxima), and the masks and bounds the programs above build
their own blocks from — regression's moments, learned attention, inference and Dask.
"""

from __future__ import annotations

import jax.numpy as jnp

from .. import kernels as _kernels
from ..sums.geometry import MATMUL_MIN_DIM, block_log_weights, nearest_closeness
from ..sums.masks import mask_keys
from ..sums.state import block_state, hard_block_state

__all__ = [
    "kernel_block",
    "log_weight_bound",
    "mask_own_pairs",
    "mask_padding",
    "nearest_key",
    "nearest_log_weight",
    "smallest_magnitude",
]


def kernel_block(
    kernel: _kernels.Kernel,
    *,
    hard: bool = False,
    max_log=None,
    streamed=False,
    key_count=None,
    divisor=None,
    allowed=None,
):
    """Block function of plain kernel pooling; ``hard`` for the nearest limit.

    ``max_log (n,)``: each query's largest log weight, if known (see :func:`nearest_log_weight`).
    ``streamed``: the block runs inside the streamed scan (distances by column).
    ``key_count``: keys from this row on are padding (see :mod:`attnpool._support.shapes`).
    ``divisor``: the rows are unscaled (see :func:`attnpool.sums.geometry.block_coordinates`).
    ``allowed``: the keys each query may attend (see :func:`mask_keys`).
    """

    def block(query_rows, query_ids, key_rows, key_ids, value_rows):
        if hard:
            scores = nearest_closeness(query_rows, key_rows, kernel)
        else:
            scores = block_log_weights(
                query_rows, key_rows, kernel, by_column=streamed, divisor=divisor
            )
        scores = mask_keys(mask_padding(scores, key_ids, key_count), query_ids, key_ids, allowed)
        if hard:
            return hard_block_state(scores, value_rows)
        known = None if max_log is None else max_log[query_ids]
        return block_state(scores, value_rows, known)

    return block


def mask_own_pairs(scores, left_out, key_ids, kept=None):
    """``scores (n, b)`` with each query's left-out key at ``−inf``: leave-one-out inside
    the blocks, never a subtraction afterwards (which cancels at small bandwidths).
    ``left_out (n,)``: the id of the key each query leaves out (``−1``: none);
    ``key_ids (b,)``: the block's key ids; ``kept (n, b)``: the log weights the left-out
    pairs keep instead of ``−inf`` (a point's other copies, with observation weights)."""
    own = left_out[:, None] == key_ids[None, :]
    return jnp.where(own, -jnp.inf if kept is None else kept, scores)


def mask_padding(scores, key_ids, key_count):
    """``scores (n, b)`` with the columns of padded keys (``id ≥ key_count``) at ``−inf``."""
    if key_count is None:
        return scores
    return jnp.where(key_ids[None, :] < key_count, scores, -jnp.inf)


def nearest_log_weight(queries, keys, kernel: _kernels.Kernel, divisor=None):
    """Each query's largest log weight, from its nearest key, for one column; else None
    (``divisor``: the coordinates are unscaled, as the blocks take them).

    In one dimension the nearest key is found by a sorted search, O((n + m) log m), and
    for a built-in distance kernel (non-increasing in the distance) its log weight is the
    row maximum, so streamed blocks need no max reduction.
    """
    if queries.shape[1] != 1 or not _kernels.is_monotone(kernel):
        return None
    ordered = jnp.sort(keys[:, 0])
    # the nearest key is one of the two around each query's insertion point
    right = jnp.clip(jnp.searchsorted(ordered, queries[:, 0]), 0, ordered.shape[0] - 1)
    left = jnp.maximum(right - 1, 0)
    gaps = jnp.minimum(
        jnp.abs(queries[:, 0] - ordered[left]), jnp.abs(queries[:, 0] - ordered[right])
    )
    if divisor is not None:
        gaps = gaps / jnp.reshape(divisor, (-1,))[0]
    return kernel.log_profile(gaps * gaps)


def nearest_key(queries, keys, *, key_count=None, exclude_self=False):
    """Index ``(n,)`` of each query's nearest key in one column, by a sorted search.

    ``key_count``: keys from this row on are padding and never the nearest.
    ``exclude_self``: query ``i`` is key ``i`` and not its own nearest (its nearest other
    key is beside it in sorted order). A query with no other key gets itself. A padding
    query (from ``key_count`` on) leaves out only its padding key: its nearest is the
    real key its coordinate is nearest, as in the sums, which leave out only that key
    (its twin among the real keys is nearest, at distance 0: a row's largest log weight
    taken from another key overflowed its weights, and the gradient through them).
    """
    m = keys.shape[0]
    coordinate = keys[:, 0]
    if key_count is not None:
        coordinate = jnp.where(jnp.arange(m) < key_count, coordinate, jnp.inf)
    order = jnp.argsort(coordinate)
    ordered = coordinate[order]
    if exclude_self:
        rank = jnp.zeros(m, order.dtype).at[order].set(jnp.arange(m, dtype=order.dtype))
        left, right = rank - 1, rank + 1
        if key_count is not None:
            found = jnp.searchsorted(ordered, queries[:, 0])
            padding = jnp.arange(m) >= key_count
            left, right = jnp.where(padding, found - 1, left), jnp.where(padding, found, right)
    else:
        right = jnp.searchsorted(ordered, queries[:, 0])
        left = right - 1

    def gap(position):
        inside = (position >= 0) & (position < m)
        at = ordered[jnp.clip(position, 0, m - 1)]
        return jnp.where(inside, jnp.abs(queries[:, 0] - at), jnp.inf), jnp.clip(position, 0, m - 1)

    (left_gap, left), (right_gap, right) = gap(left), gap(right)
    return order[jnp.where(left_gap <= right_gap, left, right)]


def log_weight_bound(queries, kernel: _kernels.Kernel):
    """An upper bound ``(n,)`` on each query's log weights, or None.

    With it streamed blocks skip the max reduction (which XLA:CPU fuses poorly in
    d = 2: ten times the cost of the exponentials). For a built-in distance kernel
    ``log K(r²) ≤ log K(0)``; in the Gaussian's matrix-product form (d ≥ 3, the
    per-query constant dropped) ``log K = q·k − ‖k‖²/2 ≤ ‖q‖²/2``. A row far from
    every key may then underflow to zero weight: :func:`pool_core` pools such
    rows again with their exact maxima.
    """
    if not _kernels.is_monotone(kernel):
        return None
    if kernel.quadratic is not None and queries.shape[1] >= MATMUL_MIN_DIM:
        return -kernel.quadratic * jnp.sum(queries * queries, axis=1)
    top = kernel.log_profile(jnp.zeros((), queries.dtype))
    return jnp.broadcast_to(top, queries.shape[:1])


def smallest_magnitude(values):
    """The smallest magnitude of a non-zero value, at most 1 (1 for none): what a row's
    weight sum under :func:`log_weight_bound` multiplies in its smallest product."""
    magnitudes = jnp.abs(values)
    smallest = jnp.min(jnp.where(magnitudes > 0, magnitudes, 1.0))
    return jnp.minimum(smallest, 1.0)
