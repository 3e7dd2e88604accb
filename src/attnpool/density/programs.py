"""The compiled density program: :func:`log_kernel_sums` on pooling's exact engines, as
:func:`attnpool.density.log_density` runs it where no host method serves (JAX arrays,
kernels the host methods do not take, inputs beyond their range)."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from .. import kernels as _kernels
from ..engines.blocks import kernel_block, pool_state
from ..methods.options import exact_engine
from ..methods.stream import KEY_BLOCK

__all__ = ["log_density_program", "log_kernel_sums"]


def log_kernel_sums(
    x_train: jax.Array,
    x_query: jax.Array,
    bandwidth: jax.Array,
    kernel: _kernels.Kernel,
    weights: jax.Array | None = None,
    key_count: jax.Array | None = None,
    method: str | None = None,
) -> jax.Array:
    """``log Σ_i w_i K((x − x_i)/h)`` at each query, ``(n_q,)`` (traceable), streamed for
    large inputs: pooling's coordinates and blocks. ``weights (m,)``: positive observation
    weights (None: ones); ``key_count``: training rows from this one on are padding;
    ``method``: ``"dense"`` or ``"stream"`` (None: by the number of pairs)."""
    # A density is an absolute sum: the matrix-product form's −‖q‖²/2, added back, cancels
    # for queries far from the keys' mean in bandwidths; differences of the unscaled
    # rows divided by the bandwidth are exact to rounding wherever the query is.
    queries, keys, divisor = x_query, x_train, jnp.broadcast_to(bandwidth, x_train.shape[1:])
    n, m = queries.shape[0], keys.shape[0]
    method = method or exact_engine(n * m)
    # keys of weight 0 never set a row's shift (they would leave log 0 beside a far key
    # that carries weight)
    allowed = None if weights is None else (weights > 0)[None, :]
    block = kernel_block(
        kernel, streamed=method == "stream", divisor=divisor, key_count=key_count, allowed=allowed
    )
    values = jnp.ones((m, 1), keys.dtype) if weights is None else weights[:, None]
    state = pool_state(block, queries, keys, values, method=method, key_block=KEY_BLOCK)
    sums: jax.Array = state.max_log + jnp.log(state.weighted_values[:, 0])
    return sums


@partial(jax.jit, static_argnames=("kernel", "method"))
def log_density_program(
    x_train: Any,
    x_query: Any,
    bandwidth: Any,
    weights: Any,
    key_count: Any,
    constant: Any,
    *,
    kernel: Any,
    method: Any = None,
) -> Any:
    sums = log_kernel_sums(x_train, x_query, bandwidth, kernel, weights, key_count, method)
    return sums - constant
