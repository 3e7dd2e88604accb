"""A density's kernel sums as a traceable function: :func:`log_kernel_sums` on pooling's
exact engines, for the programs that sum densities inside ``jit`` (a confidence band's
``Σ K``). :func:`attnpool.density.log_density` sums by the sums layer instead (the
compiled engines' :meth:`~attnpool.engines.compiled_backends.Engine.log_sums` where no
host method serves)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import kernels as _kernels
from ..engines.compiled_backends import ENGINES, Rows
from ..methods.options import exact_engine

__all__ = ["log_kernel_sums"]


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
    large inputs: the compiled engine's state of a sum problem
    (:meth:`~attnpool.engines.compiled_backends.Engine.problem_state`). ``weights (m,)``:
    observation weights (None: ones); ``key_count``: training rows from this one on are
    padding; ``method``: ``"dense"`` or ``"stream"`` (None: by the number of pairs)."""
    n, m = x_query.shape[0], x_train.shape[0]
    engine = ENGINES[method or exact_engine(n * m)]
    divisor = jnp.broadcast_to(bandwidth, x_train.shape[1:])  # differences: absolute sums
    ones = jnp.ones((m, 1), x_train.dtype)
    state = engine.problem_state(Rows(x_query, x_train, divisor), ones, kernel=kernel,
                                 factors=weights, key_count=key_count)  # fmt: skip
    sums: jax.Array = state.max_log + jnp.log(state.weighted_values[:, 0])
    return sums
