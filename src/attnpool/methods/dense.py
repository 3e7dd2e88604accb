"""Dense pooling: all keys in one block (the ``(n, m)`` matrix is formed)."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from ..kernels import Kernel
from ..sums.geometry import block_log_weights, nearest_closeness
from ..sums.state import PoolingState

#: ``(query_rows, query_ids, key_rows, key_ids, value_rows) -> PoolingState`` of one block.
BlockFunction = Callable[..., PoolingState]


def dense_state(block_function: BlockFunction, queries, keys, values) -> PoolingState:
    """Pooling state of all ``queries`` over all ``keys`` as a single block."""
    return block_function(
        queries, jnp.arange(queries.shape[0]), keys, jnp.arange(keys.shape[0]), values
    )


def normalise(scores, *, hard: bool = False):
    """Row-normalised weights from ``(n, m)`` log weights, and the ``(n,)`` empty-row mask.

    ``hard=True`` takes closeness scores instead and gives the zero-temperature weights:
    uniform over each row's maxima. Empty rows (every weight zero) are all zero.
    """
    if hard:
        top = (scores == jnp.max(scores, axis=1, keepdims=True)) & (scores > -jnp.inf)
        unnormalised = top.astype(scores.dtype)
    else:
        shift = jax.lax.stop_gradient(jnp.max(scores, axis=1, keepdims=True))
        unnormalised = jnp.exp(scores - jnp.where(jnp.isfinite(shift), shift, 0.0))
    total = unnormalised.sum(axis=1, keepdims=True)
    empty = total[:, 0] == 0
    return unnormalised / jnp.where(total == 0, 1.0, total), empty


def dense_weights(queries, keys, kernel: Kernel, *, hard: bool = False, divisor=None, allowed=None):
    """``(n, m)`` attention weights (rows sum to 1) and the ``(n,)`` empty-row mask.

    ``hard=True`` gives the zero-temperature weights: uniform over the closest keys.
    Empty rows are all zero. ``divisor``: unscaled coordinates (see
    :func:`attnpool.sums.geometry.block_coordinates`). ``allowed (n, m)``: the keys each
    query may attend (the others get no weight).
    """
    if hard:
        scores = nearest_closeness(queries, keys, kernel)
    else:
        scores = block_log_weights(queries, keys, kernel, divisor=divisor)
    if allowed is not None:
        scores = jnp.where(allowed, scores, -jnp.inf)
    return normalise(scores, hard=hard)
