"""The one call pooling makes once a method is chosen: the method's engine (a host
method's sums of NumPy arrays come back as NumPy, with no program built to move them)."""

from __future__ import annotations

import numpy as np

from ..methods.options import HOST_METHODS
from .pool_route import PoolRoute


def pool_on_engine(q, k, v, h, route: PoolRoute, *, weights: bool = False, allowed=None):
    """``(pooled (n, p), empty (n,))`` — ``((pooled, weights (n, m)), empty)`` with
    ``weights`` — of checked 2-D inputs by ``route``'s method: a host method
    (:mod:`.host_methods`), the dense weight program, or the pooling program
    (:mod:`.programs`). ``allowed``: a key mask (:mod:`attnpool.sums.masks`)."""
    if route.method in HOST_METHODS:
        from .host_methods import pool_host

        pooled, empty_rows = pool_host(q, k, v, h, route, allowed)
        if isinstance(q, np.ndarray):  # NumPy stays NumPy: no program to move it
            return pooled, empty_rows
        import jax.numpy as jnp

        return jnp.asarray(pooled), jnp.asarray(empty_rows)
    import jax
    import jax.numpy as jnp

    from .programs import pool_core, weights_core

    if weights:
        matrix, empty_rows = weights_core(q, k, h, kernel=route.kernel, nearest=route.nearest,
                                          allowed=allowed)  # fmt: skip
        pooled = jnp.matmul(matrix, v, precision=jax.lax.Precision.HIGHEST)
        return (pooled, matrix), empty_rows
    return pool_core(q, k, v, h, route, allowed)
