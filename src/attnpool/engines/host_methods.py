"""Pooling by the host methods (``sparse``, ``fgt``, ``native``, ``tree``, ``topk``,
``binned``) on concrete arrays, each through the backend protocol
(:mod:`attnpool.methods.backends`, as densities call them) and finished by the sums
layer as every backend is (:func:`attnpool.sums.layer.pool`): rows a method cannot
settle — its error bound above the tolerance, sums not finite — are summed again
exactly (NumPy pairs, or an exact host backend or compiled engine for many), and empty
rows take the nearest-key limit where asked.
"""

from __future__ import annotations

import numpy as np

from .._support.units import HOST_MAX_EXTENT, extent_in_bandwidths, midrange
from ..methods.options import exact_engine
from .pool_route import PoolRoute


def pool_host(q, k, v, h, route: PoolRoute, allowed=None):
    """Pooled values ``(n, p)`` in the inputs' dtype and the empty-row mask, NumPy arrays,
    by ``route``'s host method (``sparse``, ``fgt``, ``native``, ``tree``, ``topk``,
    ``binned``, configured by ``route.options``); rows a mask ``allowed``
    (:mod:`attnpool.sums.masks`) keeps from some key are pooled exactly by the streamed
    core (JAX imported only then)."""
    q, k, v = (np.asarray(a) for a in (q, k, v))  # on the host: no program per shape
    if allowed is not None:
        return _pool_masked(q, k, v, h, route, allowed)
    dtype = q.dtype
    if not extent_in_bandwidths(q - midrange(k), k - midrange(k), h) <= HOST_MAX_EXTENT:
        # scaled coordinates this large overflow the host methods' float64 arithmetic
        # (KD-tree distances, Taylor boxes); the exact engines take the nearest-key limit
        from .programs import pool_core

        found = pool_core(q, k, v, h, _exact(route, q.shape[0] * k.shape[0]))
        return tuple(np.asarray(a) for a in found)
    from ..methods.backends import host_backend
    from ..sums import layer
    from ..sums.problem import SumProblem

    # in the inputs' precision: each backend centres and scales them itself (a compact
    # support's edge is decided on them, unscaled, as every method decides it)
    problem = SumProblem(q, k, v, np.asarray(h), route.kernel)
    backend = host_backend(route.method, route.options)
    pooled, empty_rows = layer.pool(backend, problem, nearest=route.nearest)
    return pooled.astype(dtype, copy=False), empty_rows


def _exact(route: PoolRoute, pairs: int) -> PoolRoute:
    """``route`` on the exact compiled engine for ``pairs`` pairs (its default blocks)."""
    return route._replace(method=exact_engine(pairs), key_block=None, options=None)


def _pool_masked(q, k, v, h, route: PoolRoute, allowed):
    """A host method's pool under a key mask: the rows it does not restrict by the method,
    the others by the exact engine with the mask."""
    from ..sums.masks import every_key_allowed
    from .programs import pool_core

    allowed = np.asarray(allowed)
    full = every_key_allowed(allowed, k.shape[0], q.shape[0])
    pooled = np.empty((q.shape[0], v.shape[1]), q.dtype)
    empty_rows = np.empty(q.shape[0], bool)
    if full.any():
        found = pool_host(q[full], k, v, h, route)
        pooled[full], empty_rows[full] = (np.asarray(a) for a in found)
    rest = np.flatnonzero(~full)
    if rest.size:
        mask = allowed if allowed.shape[0] == 1 else allowed[rest]
        found = pool_core(q[rest], k, v, h, _exact(route, rest.size * k.shape[0]), mask)
        pooled[rest], empty_rows[rest] = (np.asarray(a) for a in found)
    return pooled, empty_rows
