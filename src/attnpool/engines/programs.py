"""The exact engines' jitted programs, shared by every layer above them.

:func:`pool_core` pools (dense or streamed key blocks, or the fused kernel) on rows
padded to their buckets (:mod:`attnpool._support.shapes`); the programs bound each row's log
weights instead of reducing where they can, pool again the rows whose weights all
underflowed, and take the nearest-key limit for rows that overflow (or are empty, when
asked). :func:`weights_core` builds the dense weight matrix the same way. Block
functions (:func:`kernel_block`) and :func:`pool_state` are what regression, learned
attention, inference and Dask build their own sums from.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .. import kernels as _kernels
from .._support.interop import precision_scope
from .._support.shapes import MAX_ROWS, bucket, is_host, pad_rows, padded, query_bucket, unpadded
from ..methods import dense_state, dense_weights, fused, pallas, stream_state
from ..methods.options import exact_engine
from ..sums.geometry import (
    MATMUL_MIN_DIM,
    block_coordinates,
    block_log_weights,
    closeness,
    scale_coordinates,
)
from ..sums.masks import allowed_block, keyless_rows, mask_keys, padded_mask
from ..sums.state import block_state, finalize, hard_block_state

__all__ = [
    "FUSED_KEY_BLOCK",
    "kernel_block",
    "log_weight_bound",
    "mask_own_pairs",
    "mask_padding",
    "nearest_key",
    "nearest_log_weight",
    "pool_core",
    "pool_state",
    "weights_core",
    "with_nearest_limit",
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
            scores = closeness(query_rows, key_rows, kernel)
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
    key is beside it in sorted order). A query with no other key gets itself.
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
    else:
        right = jnp.searchsorted(ordered, queries[:, 0])
        left = right - 1

    def gap(position):
        inside = (position >= 0) & (position < m)
        at = ordered[jnp.clip(position, 0, m - 1)]
        return jnp.where(inside, jnp.abs(queries[:, 0] - at), jnp.inf), jnp.clip(position, 0, m - 1)

    (left_gap, left), (right_gap, right) = gap(left), gap(right)
    return order[jnp.where(left_gap <= right_gap, left, right)]


#: A streamed row whose weights under the log-weight bound sum to less than the keys'
#: count times ``2 / eps`` smallest normal numbers (float64: 2^53) is pooled again with
#: row maxima: the weights below the smallest normal number (each flushed to 0 on a CPU,
#: as XLA does) could then take more than the precision's rounding of its sum (far from
#: every key in d ≥ 3, rows 35 bandwidths off lost 6e-8 of their pool under a fixed 2^24).
_UNDERFLOW_PER_KEY_EPS = 2.0
#: Up to one row in this many is pooled again by itself; more, and every row is.
_AGAIN_SHARE = 16


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


def pool_state(block_function, queries, keys, values, *, method: str, key_block: int, hard=False):
    """The pooling state by the dense or the streamed engine."""
    if method == "dense":
        return dense_state(block_function, queries, keys, values)
    return stream_state(block_function, queries, keys, values, key_block=key_block, hard=hard)


#: Keys per block of the fused method (the fused kernel tiles each block itself).
FUSED_KEY_BLOCK = 16384


def pool_core(
    queries, keys, values, bandwidth, *, kernel, method, key_block, nearest, allowed=None
):
    """The jitted pooling program on rows padded to their buckets: ``(pooled, empty)``.

    ``allowed``: the keys each query may attend (:func:`mask_keys`); a query left no key
    is empty and NaN whatever ``nearest`` says. NumPy inputs are summed in their own
    precision (float64 without the global flag), whoever calls."""
    if is_host(queries, keys, values):
        with precision_scope(np.result_type(queries, keys, values)):
            return _pool_core(queries, keys, values, bandwidth, kernel=kernel, method=method,
                              key_block=key_block, nearest=nearest, allowed=allowed)  # fmt: skip
    return _pool_core(queries, keys, values, bandwidth, kernel=kernel, method=method,
                      key_block=key_block, nearest=nearest, allowed=allowed)  # fmt: skip


def _pool_core(
    queries, keys, values, bandwidth, *, kernel, method, key_block, nearest, allowed=None
):
    n, m = queries.shape[0], keys.shape[0]
    if n == 0:
        return _pool_program(
            queries,
            keys,
            values,
            bandwidth,
            None,
            allowed,
            kernel=kernel,
            method=method,
            key_block=key_block,
            nearest=nearest,
        )
    host = is_host(queries, keys, values)
    key_count = None
    if method != "fused" and m <= MAX_ROWS:
        key_count = np.int32(m)
        keys, values = padded(keys, values, size=bucket(m))
    results = _pool_program(
        pad_rows(queries, query_bucket(n)),
        keys,
        values,
        bandwidth,
        key_count,
        padded_mask(allowed, query_bucket(n), keys.shape[0]),
        kernel=kernel,
        method=method,
        key_block=key_block,
        nearest=nearest,
    )
    return unpadded(results, n, host=host)


@partial(jax.jit, static_argnames=("kernel", "method", "key_block", "nearest"))
def _pool_program(
    queries, keys, values, bandwidth, key_count, allowed, *, kernel, method, key_block, nearest
):
    def state(q, k, hard=False, bounded=True):
        if method == "pallas" and not hard and (allowed is None or allowed.ndim == 1):
            return pallas.tiled_state(
                q, k, values, divisor, kernel=kernel, key_count=key_count, lengths=allowed
            )
        if method == "fused" and not hard:
            engine = exact_engine(q.shape[0] * k.shape[0])
            return pool_state(
                fused.fused_block(kernel, allowed),
                *fused.centred(q, k, kernel),
                values,
                method=engine,
                key_block=FUSED_KEY_BLOCK,
            )
        engine = "dense" if method == "dense" else "stream"  # (pallas: a mask matrix)
        known = None
        if engine == "stream" and not hard and allowed is None:  # a mask may hide the nearest
            known = nearest_log_weight(q, k, kernel, divisor)
            if known is None and bounded:
                known = log_weight_bound(q, kernel)
        block = kernel_block(
            kernel,
            hard=hard,
            max_log=known,
            streamed=engine == "stream",
            key_count=key_count,
            divisor=None if hard else divisor,
            allowed=allowed,
        )
        return pool_state(block, q, k, values, method=engine, key_block=key_block, hard=hard)

    *scaled, divisor = block_coordinates(queries, keys, bandwidth, kernel)
    result = state(*scaled)
    if (
        method == "stream"
        and allowed is None
        and _kernels.is_monotone(kernel)
        and not kernel.compact
        and scaled[0].shape[1] > 1
    ):
        # rows whose every weight underflowed under the bound: again, with the row maxima
        # (a few rows by themselves; past _AGAIN_SHARE of them, every row)
        info = jnp.finfo(result.weight_sum.dtype)
        floor = scaled[1].shape[0] * _UNDERFLOW_PER_KEY_EPS / float(info.eps) * float(info.tiny)
        low = result.weight_sum < floor
        few = max(1, scaled[0].shape[0] // _AGAIN_SHARE)

        def some_again():
            rows = jnp.nonzero(low, size=few, fill_value=-1)[0]
            rows = jnp.where(rows >= 0, rows, rows[0])  # padding repeats a row that is low
            exact = state(scaled[0][rows], scaled[1], bounded=False)
            return jax.tree_util.tree_map(lambda a, b: a.at[rows].set(b), result, exact)

        def all_again():
            exact = state(*scaled, bounded=False)
            return jax.tree_util.tree_map(
                lambda a, b: jnp.where(low.reshape(-1, *[1] * (a.ndim - 1)), a, b), exact, result
            )

        count = jnp.sum(low)
        result = jax.lax.cond(
            count == 0,
            lambda: result,
            lambda: jax.lax.cond(count <= few, some_again, all_again),
        )
    pooled, empty_rows = finalize(result)

    def closest():
        relative = scale_coordinates(queries, keys, bandwidth, kernel, relative=True)
        return finalize(state(*relative, hard=True))[0]

    pooled = with_nearest_limit(pooled, empty_rows, nearest, closest)
    if allowed is None:
        return pooled, empty_rows
    return _without_keyless(pooled, empty_rows, allowed)


def _without_keyless(result, empty_rows, allowed):
    """``(result, empty)`` with the rows a mask left no key NaN and empty."""
    keyless = keyless_rows(allowed)
    return jnp.where(keyless[:, None], jnp.nan, result), empty_rows | keyless


def with_nearest_limit(result, empty_rows, nearest: bool, closest):
    """``result (n, ·)`` with the nearest-key limit where it is needed, the empty rows NaN
    unless ``nearest``.

    Rows that overflowed (not finite), and empty rows when ``nearest``, take the rows of
    ``closest()`` — the same computation with hard (zero-temperature) weights, traced
    but run only when some row needs it (``lax.cond``).
    """
    overflowed = ~jnp.all(jnp.isfinite(result), axis=1) & ~empty_rows
    fallback = overflowed | (empty_rows & nearest)
    result = jax.lax.cond(
        jnp.any(fallback),
        lambda: jnp.where(fallback[:, None], closest(), result),
        lambda: result,
    )
    return result if nearest else jnp.where(empty_rows[:, None], jnp.nan, result)


def weights_core(queries, keys, bandwidth, *, kernel, nearest, allowed=None):
    """``(weights, empty)`` by the jitted dense program, queries padded to their bucket;
    ``allowed`` as :func:`pool_core`'s (a query left no key has a NaN row)."""
    n = queries.shape[0]
    results = _weights_program(
        pad_rows(queries, query_bucket(n)),
        keys,
        bandwidth,
        padded_mask(allowed, query_bucket(n), keys.shape[0]),
        kernel=kernel,
        nearest=nearest,
    )
    return unpadded(results, n, host=is_host(queries))


@partial(jax.jit, static_argnames=("kernel", "nearest"))
def _weights_program(queries, keys, bandwidth, allowed, *, kernel, nearest):
    q, k, divisor = block_coordinates(queries, keys, bandwidth, kernel)
    matrix = None
    if allowed is not None:
        matrix = allowed_block(allowed, jnp.arange(q.shape[0]), jnp.arange(k.shape[0]))
    weights, empty_rows = dense_weights(q, k, kernel, divisor=divisor, allowed=matrix)

    def closest():
        relative = scale_coordinates(queries, keys, bandwidth, kernel, relative=True)
        return dense_weights(*relative, kernel, hard=True, allowed=matrix)[0]

    weights = with_nearest_limit(weights, empty_rows, nearest, closest)
    if allowed is None:
        return weights, empty_rows
    return _without_keyless(weights, empty_rows, allowed)
