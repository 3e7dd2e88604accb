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
    """Pooling state of all ``queries`` over all ``keys`` as a single block.

    Parameters
    ----------
    block_function : callable
        ``(query_rows, query_ids, key_rows, key_ids, value_rows) -> PoolingState``: the
        state of one block (ids are the rows' global numbers, for masks such as
        leave-one-out).
    queries : array of shape (n, ·)
    keys : array of shape (m, ·)
    values : array of shape (m, p)

    Returns
    -------
    PoolingState
        ``(max_log (n,), weight_sum (n,), weighted_values (n, p))``; the pool is
        ``weighted_values / weight_sum``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from attnpool import PoolingState
    >>> def gaussian_block(q, q_ids, k, k_ids, v):      # log weights −u²/2, u = q − k
    ...     log_w = -0.5 * (q - k.T) ** 2
    ...     top = log_w.max(axis=1)
    ...     shifted = jnp.exp(log_w - top[:, None])
    ...     return PoolingState(top, shifted.sum(axis=1), shifted @ v)
    >>> state = dense_state(gaussian_block, jnp.array([[0.0], [2.0]]),
    ...                     jnp.array([[0.0], [1.0], [3.0]]), jnp.array([[1.0], [2.0], [4.0]]))
    >>> (state.weighted_values / state.weight_sum[:, None]).round(3)
    Array([[1.396],
           [2.799]], dtype=float32)
    """
    return block_function(
        queries, jnp.arange(queries.shape[0]), keys, jnp.arange(keys.shape[0]), values
    )


def normalise(scores, *, hard: bool = False):
    """Row-normalised weights from ``(n, m)`` log weights, and the ``(n,)`` empty-row mask.

    ``hard=True`` takes closeness scores instead and gives the zero-temperature weights:
    uniform over each row's maxima. Empty rows (every weight zero) are all zero.

    Parameters
    ----------
    scores : array of shape (n, m)
        Log weights (``-inf``: no weight), or closeness scores with ``hard``.
    hard : bool

    Returns
    -------
    weights : array of shape (n, m)
    empty : array of bool, shape (n,)

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> weights, empty = normalise(jnp.log(jnp.array([[1.0, 3.0], [0.0, 0.0]])))
    >>> weights.round(2), empty
    (Array([[0.25, 0.75],
           [0.  , 0.  ]], dtype=float32), Array([False,  True], dtype=bool))
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
    Empty rows are all zero.

    Parameters
    ----------
    queries : array of shape (n, d)
    keys : array of shape (m, d)
        In units of the bandwidth, or unscaled with ``divisor``.
    kernel : Kernel
    hard : bool
    divisor : array of shape (d,), optional
        The bandwidths of unscaled coordinates (see
        :func:`attnpool.sums.geometry.block_coordinates`).
    allowed : array of bool, shape (n, m), optional
        The keys each query may attend (the others get no weight).

    Returns
    -------
    weights : array of shape (n, m)
        Each row sums to 1, or is 0 where no key weighs (the kernel's support misses
        every key, or ``allowed`` leaves none).
    empty : array of bool, shape (n,)
        Those rows.

    Examples
    --------
    >>> import jax.numpy as jnp, numpy as np
    >>> from attnpool import kernels
    >>> weights, _ = dense_weights(jnp.array([[0.0], [2.0]]), jnp.array([[0.0], [1.0], [3.0]]),
    ...                            kernels.get("gaussian"))
    >>> np.asarray(weights, np.float64).round(3)
    array([[0.618, 0.375, 0.007],
           [0.1  , 0.45 , 0.45 ]])
    """
    if hard:
        scores = nearest_closeness(queries, keys, kernel)
    else:
        scores = block_log_weights(queries, keys, kernel, divisor=divisor)
    if allowed is not None:
        scores = jnp.where(allowed, scores, -jnp.inf)
    return normalise(scores, hard=hard)
