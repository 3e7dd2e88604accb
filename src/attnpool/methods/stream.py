"""Streaming pooling: key blocks merged into the pooling state inside ``lax.scan``.

Queries are processed in blocks too (``lax.map``), so the largest intermediate
is ``query_block × key_block``; the scan body is rematerialised under
reverse-mode autodiff, so gradients keep the same bound.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..geometry import block_log_weights, closeness
from ..kernels import Kernel
from ..state import PoolingState, block_state, empty_state, hard_block_state, merge

QUERY_BLOCK = 1024
KEY_BLOCK = 2048


def stream_state(
    queries,
    keys,
    values,
    kernel: Kernel,
    *,
    key_block: int = KEY_BLOCK,
    query_block: int = QUERY_BLOCK,
    hard: bool = False,
) -> PoolingState:
    """Pooling state of scaled ``queries (n, d)`` over ``keys (m, d)``, ``values (m, p)``.

    Whole key blocks go through the scan; the last, shorter block is merged
    after it, so no key is padded or masked. Equal to
    :func:`~attnpool.methods.dense_state` up to floating-point rounding.
    """
    n, m, p = queries.shape[0], keys.shape[0], values.shape[1]
    key_block = min(key_block, m)
    query_block = min(query_block, n)
    whole = m - m % key_block
    blocks = (
        keys[:whole].reshape(-1, key_block, keys.shape[1]),
        values[:whole].reshape(-1, key_block, p),
    )
    reduce = hard_block_state if hard else block_state

    def block_update(query_rows, block_keys, block_values):
        if hard:
            return reduce(closeness(query_rows, block_keys, kernel), block_values)
        return reduce(block_log_weights(query_rows, block_keys, kernel), block_values)

    def pool_query_block(query_rows):
        def step(state, block):
            return merge(state, block_update(query_rows, *block), hard=hard), None

        init = empty_state(query_rows.shape[0], p, values.dtype)
        state, _ = jax.lax.scan(jax.checkpoint(step), init, blocks)
        if whole < m:
            state = merge(state, block_update(query_rows, keys[whole:], values[whole:]), hard=hard)
        return state

    if n <= query_block:
        return pool_query_block(queries)
    padded = jnp.pad(queries, [(0, -n % query_block), (0, 0)])
    states = jax.lax.map(pool_query_block, padded.reshape(-1, query_block, queries.shape[1]))
    return PoolingState(*(leaf.reshape(-1, *leaf.shape[2:])[:n] for leaf in states))
