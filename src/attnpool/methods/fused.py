"""Fused pooling: ``jax.nn.dot_product_attention`` as the block function.

Softmax attention computes ``softmax(s · q·k + b) v`` in one fused kernel on
GPUs (flash attention), never writing the ``(n, m)`` weights out. Two kernels
fit that form exactly:

- ``dot``: ``log K = q·k / h`` — the queries arrive already divided by ``h``;
- ``gaussian``: ``log K = −‖q − k‖²/2 = q·k − ‖k‖²/2 − ‖q‖²/2`` in scaled
  coordinates; the per-key ``−‖k‖²/2`` is the bias and the per-query term
  cancels when the weights are normalised.

The softmax's log-sum-exp (``return_residual=True``) makes each block a
:class:`~attnpool.sums.state.PoolingState` (``m = lse, s = 1, t = output``), so the
fused block streams and merges like any other. The Gaussian's matrix-product
form cancels on uncentred data: coordinates are centred on the keys' mean
first, and the error still grows as ``eps · (extent / h)²``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..kernels import Kernel
from ..sums.masks import allowed_block
from ..sums.state import PoolingState

#: Kernels with an exact fused form.
FUSED_KERNELS = frozenset(["gaussian", "dot"])


def supports(kernel: Kernel) -> bool:
    from .. import kernels

    return kernels.is_builtin(kernel, FUSED_KERNELS)


def refusal(kernel: Kernel, d: int) -> str | None:
    """Why ``fused`` cannot pool this kernel, or None."""
    if not supports(kernel):
        return f"'fused' supports the kernels {sorted(FUSED_KERNELS)}; received {kernel.name!r}"
    return None


def centred(queries, keys, kernel: Kernel):
    """Scaled coordinates centred on the keys' mean (a distance kernel's weights do not change)."""
    if kernel.similarity == "dot":
        return queries, keys
    centre = jnp.mean(keys, axis=0)
    return queries - centre, keys - centre


def fused_block(kernel: Kernel, allowed=None):
    """Block function ``(query_rows, query_ids, key_rows, key_ids, value_rows) -> PoolingState``;
    ``allowed``: the keys each query may attend (:mod:`attnpool.sums.masks`), passed to the
    fused kernel as its mask (a query with no allowed key in the block has no weight)."""

    def block(query_rows, query_ids, key_rows, key_ids, value_rows):
        d, p = query_rows.shape[1], value_rows.shape[1]
        width = max(d, p)

        def heads(x):  # (rows, ·) -> (1, rows, 1, width): one batch, one head
            return jnp.pad(x, ((0, 0), (0, width - x.shape[1])))[None, :, None, :]

        bias = None
        if kernel.similarity == "distance":
            bias = (-0.5 * jnp.sum(key_rows * key_rows, axis=1))[None, None, None, :]
        mask = None if allowed is None else allowed_block(allowed, query_ids, key_ids)
        with jax.default_matmul_precision("highest"):
            out, lse = jax.nn.dot_product_attention(
                heads(query_rows),
                heads(key_rows),
                heads(value_rows),
                bias=bias,
                mask=None if mask is None else mask[None, None],
                scale=1.0,
                return_residual=True,
            )
        lse = lse.reshape(query_rows.shape[0])
        out = out.reshape(query_rows.shape[0], width)[:, :p]
        if mask is None:
            return PoolingState(lse, jnp.ones_like(lse), out)
        some = jnp.any(mask, axis=1)
        return PoolingState(
            jnp.where(some, lse, -jnp.inf),
            some.astype(lse.dtype),
            jnp.where(some[:, None], out, 0.0),
        )

    return block
