"""Pooling by the host methods (``sparse``, ``fgt``, ``native``, ``tree``, ``topk``,
``binned``) on concrete arrays, each through the backend protocol
(:mod:`attnpool.methods.backends`, as densities call them).

They compute kernel sums in float64 (NumPy/SciPy/JAX; ``native`` in the inputs'
precision). Rows they cannot settle — rows whose error bound exceeds the tolerance,
overflowed or (under ``empty="nearest"``) empty rows — are pooled again exactly, for
those rows only: on the NumPy engine (float64 data, no program) or by the exact
streamed core.
"""

from __future__ import annotations

import numpy as np

from .._support.units import HOST_MAX_EXTENT, extent_in_bandwidths, midrange
from ..kernels import is_builtin
from ..methods.options import exact_engine
from ..sums.local_model import model_for
from .numpy_engine import NUMPY_MAX_WORK, local_fit


def pool_host(q, k, v, h, *, kernel, method, options, nearest, allowed=None):
    """Pooled values ``(n, p)`` in the inputs' dtype and the empty-row mask, NumPy arrays,
    by a host method (``sparse``, ``fgt``, ``native``, ``tree``, ``topk``, ``binned``);
    rows it cannot settle — and rows a mask ``allowed`` (:mod:`attnpool.sums.masks`) keeps
    from some key — are pooled exactly by the streamed core (JAX imported only then)."""
    q, k, v = (np.asarray(a) for a in (q, k, v))  # on the host: no program per shape
    if allowed is not None:
        return _pool_masked(q, k, v, h, kernel, method, options, nearest, allowed)
    dtype = q.dtype
    if not extent_in_bandwidths(q - midrange(k), k - midrange(k), h) <= HOST_MAX_EXTENT:
        # scaled coordinates this large overflow the host methods' float64 arithmetic
        # (KD-tree distances, Taylor boxes); the exact engines take the nearest-key limit
        from ..methods.stream import KEY_BLOCK
        from .programs import pool_core

        found = pool_core(q, k, v, h, kernel=kernel, method=exact_engine(q.shape[0] * k.shape[0]),
                          key_block=KEY_BLOCK, nearest=nearest)  # fmt: skip
        return tuple(np.asarray(a) for a in found)
    from ..methods.backends import host_backend
    from ..sums.problem import SumProblem

    # the backend protocol's sums: each backend centres and scales the inputs itself (a
    # compact support's edge is decided on them, unscaled)
    found = host_backend(method, options).log_sums(SumProblem(q, k, v, h, kernel))
    sums = found.sums
    exact = ~found.settled | ~np.all(np.isfinite(sums), axis=1)
    exact |= ~(sums[:, 0] >= 0)  # a negative weight is rounding no method may return
    empty_rows = (sums[:, 0] == 0) & ~exact
    pooled = sums[:, 1:] / np.where(sums[:, 0] > 0, sums[:, 0], 1.0)[:, None]
    exact |= empty_rows & nearest
    rows = np.flatnonzero(exact)
    if rows.size:  # the inputs, uncentred: exact ties in them stay ties
        redo, redo_empty = _pool_exactly(q[rows], k, v, h, kernel, nearest)
        pooled[rows], empty_rows[rows] = np.asarray(redo), np.asarray(redo_empty)
    pooled = np.where(empty_rows[:, None] & ~nearest, np.nan, pooled)
    return pooled.astype(dtype, copy=False), empty_rows


def _pool_exactly(q, k, v, h, kernel, nearest):
    """The exact pool of the rows a host method left: with a kernel whose profile takes
    NumPy, on the NumPy engine in float64 (as the host methods sum; float32 data
    included), up to :data:`.numpy_engine.NUMPY_MAX_WORK` pairs (no program), else the
    exact engines."""
    host = kernel.similarity == "distance" and (is_builtin(kernel) or kernel.host)
    floating = q.dtype in (np.float32, np.float64)
    if host and floating and q.shape[0] * k.shape[0] <= NUMPY_MAX_WORK:
        q, k, v, h = (np.asarray(a, np.float64) for a in (q, k, v, h))
        fit, _, empty_rows = local_fit(k, v, q, h, model_for(k, kernel=kernel), nearest=nearest)
        return fit, empty_rows
    from ..methods.stream import KEY_BLOCK
    from .programs import pool_core

    method = exact_engine(q.shape[0] * k.shape[0])
    return pool_core(q, k, v, h, kernel=kernel, method=method, key_block=KEY_BLOCK,
                     nearest=nearest)  # fmt: skip


def _pool_masked(q, k, v, h, kernel, method, options, nearest, allowed):
    """A host method's pool under a key mask: the rows it does not restrict by the method,
    the others by the exact engine with the mask."""
    from ..methods.stream import KEY_BLOCK
    from ..sums.masks import every_key_allowed
    from .programs import pool_core

    allowed = np.asarray(allowed)
    full = every_key_allowed(allowed, k.shape[0], q.shape[0])
    pooled = np.empty((q.shape[0], v.shape[1]), q.dtype)
    empty_rows = np.empty(q.shape[0], bool)
    if full.any():
        found = pool_host(
            q[full], k, v, h, kernel=kernel, method=method, options=options, nearest=nearest
        )
        pooled[full], empty_rows[full] = (np.asarray(a) for a in found)
    rest = np.flatnonzero(~full)
    if rest.size:
        found = pool_core(
            q[rest],
            k,
            v,
            h,
            kernel=kernel,
            method=exact_engine(rest.size * k.shape[0]),
            key_block=KEY_BLOCK,
            nearest=nearest,
            allowed=allowed if allowed.shape[0] == 1 else allowed[rest],
        )
        pooled[rest], empty_rows[rest] = (np.asarray(a) for a in found)
    return pooled, empty_rows
