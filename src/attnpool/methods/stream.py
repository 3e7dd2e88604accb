"""Streaming pooling: key blocks merged into the pooling state inside ``lax.scan``.

Queries are processed in blocks too (``lax.map``), so the largest intermediate
is ``query_block × key_block``; the scan body is rematerialised under
reverse-mode autodiff, so gradients keep the same bound.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..sums.state import PoolingState, empty_state, merge
from .dense import BlockFunction

QUERY_BLOCK = 1024
KEY_BLOCK = 2048
#: Keys narrower than this are scanned column by column (see :func:`stream_state`; a
#: compact kernel's streamed pool in 3–8 columns took twice as long with its key blocks
#: scanned whole).
SPLIT_BELOW_DIM = 9


def stream_state(
    block_function: BlockFunction,
    queries,
    keys,
    values,
    *,
    key_block: int = KEY_BLOCK,
    query_block: int = QUERY_BLOCK,
    hard: bool = False,
) -> PoolingState:
    """Pooling state of ``queries (n, ·)`` over ``keys (m, ·)`` with ``values (m, ·)``.

    ``block_function(query_rows, query_ids, key_rows, key_ids, value_rows)``
    returns the state of one block (ids are global row numbers, for masks such
    as leave-one-out). Whole key blocks go through the scan; the last, shorter
    block is merged after it, so no key is padded or masked. Equal to
    :func:`~attnpool.methods.dense_state` up to floating-point rounding.

    Parameters
    ----------
    block_function : callable
        As :func:`~attnpool.methods.dense_state` takes it.
    queries : array of shape (n, ·)
    keys : array of shape (m, ·)
    values : array of shape (m, p)
    key_block, query_block : int
        Keys and queries per block: the memory is ``O(query_block × key_block)``.
    hard : bool
        Merge the blocks' zero-temperature states (the nearest-key limit).

    Returns
    -------
    PoolingState

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from attnpool import PoolingState
    >>> def gaussian_block(q, q_ids, k, k_ids, v):
    ...     log_w = -0.5 * (q - k.T) ** 2
    ...     top = log_w.max(axis=1)
    ...     shifted = jnp.exp(log_w - top[:, None])
    ...     return PoolingState(top, shifted.sum(axis=1), shifted @ v)
    >>> state = stream_state(gaussian_block, jnp.array([[0.0], [2.0]]),
    ...                      jnp.array([[0.0], [1.0], [3.0]]), jnp.array([[1.0], [2.0], [4.0]]),
    ...                      key_block=2)
    >>> (state.weighted_values / state.weight_sum[:, None]).round(3)
    Array([[1.396],
           [2.799]], dtype=float32)
    """
    n, m = queries.shape[0], keys.shape[0]
    key_block = min(key_block, m)
    query_block = min(query_block, n)
    whole = m - m % key_block
    key_ids = jnp.arange(m)
    # Narrow keys are scanned one coordinate per array: a column sliced out of a scanned
    # (blocks, key_block, d) array is a strided read that XLA:CPU does not vectorise
    # (d = 2 ran ten times slower than d = 1, a compact kernel in d = 3–8 twice as slow);
    # stacked again inside, the slices fold away.
    split = keys.ndim == 2 and 1 < keys.shape[1] < SPLIT_BELOW_DIM
    columns = tuple(keys[:, j] for j in range(keys.shape[1])) if split else (keys,)
    blocks = tuple(
        x[:whole].reshape(-1, key_block, *x.shape[1:]) for x in (*columns, key_ids, values)
    )
    width = jax.eval_shape(
        block_function, queries[:1], key_ids[:1], keys[:1], key_ids[:1], values[:1]
    ).weighted_values.shape[1]

    def pool_query_block(query_rows, query_ids):
        def step(state, block):
            *key_columns, ids, value_rows = block
            key_rows = jnp.stack(key_columns, axis=1) if split else key_columns[0]
            update = block_function(query_rows, query_ids, key_rows, ids, value_rows)
            return merge(state, update, hard=hard), None

        init = empty_state(query_rows.shape[0], width, values.dtype)
        state, _ = jax.lax.scan(jax.checkpoint(step), init, blocks)
        if whole < m:
            rest = block_function(
                query_rows, query_ids, keys[whole:], key_ids[whole:], values[whole:]
            )
            state = merge(state, rest, hard=hard)
        return state

    query_ids = jnp.arange(n)
    if n <= query_block:
        return pool_query_block(queries, query_ids)
    pad = -n % query_block
    padded = jnp.pad(queries, [(0, pad)] + [(0, 0)] * (queries.ndim - 1))
    padded_ids = jnp.pad(query_ids, (0, pad), constant_values=-1)
    states = jax.lax.map(
        lambda args: pool_query_block(*args),
        (padded.reshape(-1, query_block, *queries.shape[1:]), padded_ids.reshape(-1, query_block)),
    )
    return PoolingState(*(leaf.reshape(-1, *leaf.shape[2:])[:n] for leaf in states))
