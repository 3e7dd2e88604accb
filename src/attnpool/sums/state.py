"""The log-domain pooling state shared by the dense, streaming and distributed paths.

For one query and a block of keys with log weights ``l_i = log K(q, k_i)``::

    m = max_i l_i,   s = Σ_i exp(l_i − m),   t = Σ_i exp(l_i − m) v_i

Two states merge exactly, as softmax blocks do in FlashAttention::

    m = max(m1, m2),  s = s1 e^(m1−m) + s2 e^(m2−m),  t = t1 e^(m1−m) + t2 e^(m2−m)

and the pooled value is ``t / s``. A block where every weight is zero (an empty
compact-support neighbourhood) has ``m = −inf, s = 0, t = 0``; it merges as the
identity, and :func:`finalize` reports it instead of dividing 0 by 0.

The same algebra at zero temperature (``e^(m_i−m)`` replaced by ``[m_i = m]``)
averages the values of the *closest* keys: :func:`hard_block_state` and
``merge(..., hard=True)``. It gives the nearest-key limit used where a state is
empty.

>>> import jax.numpy as jnp
>>> logw = jnp.log(jnp.array([[1.0, 3.0]]))
>>> values = jnp.array([[0.0], [4.0]])
>>> whole = block_state(logw, values)
>>> parts = merge(block_state(logw[:, :1], values[:1]), block_state(logw[:, 1:], values[1:]))
>>> float(finalize(whole)[0][0, 0]), float(finalize(parts)[0][0, 0])
(3.0, 3.0)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "PoolingState",
    "block_state",
    "empty_state",
    "finalize",
    "hard_block_state",
    "merge",
    "merge_stacked",
]

_HIGHEST = jax.lax.Precision.HIGHEST


class PoolingState(NamedTuple):
    """Running log-sum-exp state of attention pooling for ``n`` queries.

    Attributes
    ----------
    max_log : (n,) array
        ``m``, the largest log weight seen (``-inf`` if none).
    weight_sum : (n,) array
        ``s = Σ exp(l_i − m)``.
    weighted_values : (n, p) array
        ``t = Σ exp(l_i − m) v_i``.

    References
    ----------
    Milakov, M. & Gimelshein, N. (2018). Online normalizer calculation for softmax.
    arXiv:1805.02867. Dao, T. et al. (2022). FlashAttention. *NeurIPS*.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from attnpool.sums.state import block_state, finalize, merge
    >>> values = jnp.array([[10.0], [20.0]])
    >>> whole = block_state(jnp.log(jnp.array([[1.0, 3.0]])), values)
    >>> left = block_state(jnp.log(jnp.array([[1.0]])), values[:1])
    >>> right = block_state(jnp.log(jnp.array([[3.0]])), values[1:])
    >>> float(finalize(whole)[0][0, 0]), float(finalize(merge(left, right))[0][0, 0])
    (17.5, 17.5)
    """

    max_log: jnp.ndarray
    weight_sum: jnp.ndarray
    weighted_values: jnp.ndarray


def empty_state(n: int, p: int, dtype: Any) -> PoolingState:
    """The identity of :func:`merge`: no keys seen."""
    return PoolingState(
        jnp.full((n,), -jnp.inf, dtype), jnp.zeros((n,), dtype), jnp.zeros((n, p), dtype)
    )


def _shift(max_log: jax.Array) -> jax.Array:
    return jax.lax.stop_gradient(jnp.where(jnp.isfinite(max_log), max_log, 0.0))


def block_state(
    log_weights: jax.Array,
    values: jax.Array,
    max_log: jax.Array | None = None,
    factors: jax.Array | None = None,
) -> PoolingState:
    """State of one block: ``log_weights (n, b)`` and ``values (b, p)``.

    ``values`` may also be per query–key pair, ``(n, b, p)`` (local moments).
    ``max_log (n,)``, when known in advance (the largest log weight over *all* keys),
    saves the block's max reduction; every block then shares it.
    ``factors (n, b)``: positive multipliers of the weights after the shift (observation
    weights: kept out of the log weights, where beside huge ones they would round away).
    """
    # m is only a reference point: it cancels in t / s, so it carries no gradient.
    if max_log is None:
        max_log = jnp.max(log_weights, axis=1)
    max_log = jax.lax.stop_gradient(max_log)
    weights = jnp.exp(log_weights - _shift(max_log)[:, None])
    if factors is not None:
        weights = weights * factors
    if values.ndim == 3:
        weighted = jnp.einsum("nb,nbp->np", weights, values, precision=_HIGHEST)
    else:
        weighted = jnp.matmul(weights, values, precision=_HIGHEST)
    return PoolingState(max_log, weights.sum(axis=1), weighted)


def hard_block_state(closeness: jax.Array, values: jax.Array) -> PoolingState:
    """Zero-temperature state: mean of the values of the closest keys (ties averaged).

    ``closeness (n, b)`` is larger for closer keys; ``-inf`` marks keys to ignore.
    """
    best = jnp.max(closeness, axis=1)
    ties = ((closeness == best[:, None]) & jnp.isfinite(closeness)).astype(values.dtype)
    return PoolingState(best, ties.sum(axis=1), jnp.matmul(ties, values, precision=_HIGHEST))


def merge(a: PoolingState, b: PoolingState, *, hard: bool = False) -> PoolingState:
    """Combine the states of two disjoint key blocks for the same queries."""
    max_log = jnp.maximum(a.max_log, b.max_log)
    if hard:
        scale_a = (a.max_log == max_log).astype(a.weight_sum.dtype)
        scale_b = (b.max_log == max_log).astype(b.weight_sum.dtype)
    else:
        shift = _shift(max_log)
        scale_a, scale_b = jnp.exp(a.max_log - shift), jnp.exp(b.max_log - shift)
    return PoolingState(
        max_log,
        a.weight_sum * scale_a + b.weight_sum * scale_b,
        a.weighted_values * scale_a[:, None] + b.weighted_values * scale_b[:, None],
    )


def merge_stacked(state: PoolingState, axis: int, *, hard: bool = False) -> PoolingState:
    """Merge states stacked along ``axis`` of every leaf (``max_log`` and ``weight_sum``
    of shape ``(..., J, ...)``, ``weighted_values`` with one more trailing axis) at once.

    The same log-sum-exp as :func:`merge` (or, ``hard``, the same zero-temperature
    merge), for many blocks: what a tree reduction's combine step does with the states
    of several key chunks. NumPy states are merged by NumPy (no program per shape).
    """
    xp: Any = np if isinstance(state.max_log, np.ndarray) else jnp
    top = xp.max(state.max_log, axis=axis, keepdims=True)
    shift = np.where(np.isfinite(top), top, 0.0) if xp is np else _shift(top)
    if hard:
        scale = (state.max_log == top).astype(state.weight_sum.dtype)
    else:
        scale = xp.exp(state.max_log - shift)
    return PoolingState(
        xp.squeeze(top, axis),
        xp.sum(state.weight_sum * scale, axis=axis),
        xp.sum(state.weighted_values * scale[..., None], axis=axis),
    )


def finalize(state: PoolingState) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Pooled values ``t / s`` (0 where empty) and the ``(n,)`` mask of empty states (in
    NumPy for NumPy states)."""
    empty = state.weight_sum == 0
    xp: Any = np if isinstance(state.weight_sum, np.ndarray) else jnp
    safe_sum = xp.where(empty, 1.0, state.weight_sum)
    return state.weighted_values / safe_sum[..., None], empty
