"""The one call pooling makes once a method is chosen: the method's engine (a host
method's sums of NumPy arrays come back as NumPy, with no program built to move them)."""

from __future__ import annotations

import numpy as np

from ..kernels import Kernel
from ..methods.options import HOST_METHODS


def pool_on_engine(
    q,
    k,
    v,
    h,
    *,
    kernel: Kernel,
    method: str,
    options,
    nearest: bool,
    block_size,
    weights: bool,
    allowed=None,
):
    """``(pooled (n, p), empty (n,))`` — ``((pooled, weights (n, m)), empty)`` with
    ``weights`` — of checked 2-D inputs by ``method``: a host method
    (:mod:`.host_methods`), the dense weight program, or the pooling program with key
    blocks of ``block_size`` (:mod:`.programs`). ``allowed``: a key mask
    (:mod:`attnpool.sums.masks`)."""
    if method in HOST_METHODS:
        from .host_methods import pool_host

        pooled, empty_rows = pool_host(
            q,
            k,
            v,
            h,
            kernel=kernel,
            method=method,
            options=options,
            nearest=nearest,
            allowed=allowed,
        )
        if isinstance(q, np.ndarray):  # NumPy stays NumPy: no program to move it
            return pooled, empty_rows
        import jax.numpy as jnp

        return jnp.asarray(pooled), jnp.asarray(empty_rows)
    import jax
    import jax.numpy as jnp

    from ..methods.stream import KEY_BLOCK
    from .programs import pool_core, weights_core

    if weights:
        matrix, empty_rows = weights_core(q, k, h, kernel=kernel, nearest=nearest, allowed=allowed)
        pooled = jnp.matmul(matrix, v, precision=jax.lax.Precision.HIGHEST)
        return (pooled, matrix), empty_rows
    return pool_core(
        q,
        k,
        v,
        h,
        kernel=kernel,
        method=method,
        key_block=block_size or KEY_BLOCK,
        nearest=nearest,
        allowed=allowed,
    )
