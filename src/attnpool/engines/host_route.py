"""Pools of NumPy arrays that need no JAX: small ones on the NumPy engine
(:func:`.numpy_engine.pool_if_served`), and large Gaussian ones in several columns on the
``native`` C loop, where ``"auto"`` sends them on a CPU
(:func:`attnpool.methods.choice.choose_method`). A first such call in a process then
costs the loop's sums, not JAX's import (~1.3 s of a first 3·10⁴ × 3·10⁴ pool in eight
columns that took 1.5 s)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._backend import computes_on_cpu
from .._units import HOST_MAX_EXTENT, extent_in_bandwidths, value_unit
from .._validation import check_bandwidth_representable
from ..kernels import Kernel, is_gaussian
from ..methods.options import exact_engine
from .numpy_engine import pool_if_served


def pool_without_jax(q: Any, k: Any, v: Any, h: Any, kernel: Kernel, *, nearest: bool) -> Any:
    """``(pooled (n, p), empty (n,))`` of ``"auto"``'s pool of NumPy arrays where it needs
    no JAX, else None (the compiled path takes it)."""
    found = pool_if_served(q, k, v, h, kernel, nearest=nearest)
    return found if found is not None else _native_pool(q, k, v, h, kernel, nearest)


def _native_pool(q: Any, k: Any, v: Any, h: Any, kernel: Kernel, nearest: bool) -> Any:
    """The pool ``"auto"`` gives on a CPU by the ``native`` loop, by the same call
    (:func:`.host_methods.pool_host`) on the inputs as :func:`attnpool._interop.run_in_policy`
    casts them — the inputs and the bandwidth in their common precision (float32 or
    float64), value columns near the float limit in power-of-two units — or None where
    ``"auto"`` would take another method or the loop is not built yet. Rows the loop
    cannot settle are pooled by the exact engines there (JAX imported then)."""
    from ..methods import native
    from .host_methods import pool_host

    if not all(isinstance(a, np.ndarray) for a in (q, k, v, h)) or q.shape[0] == 0:
        return None
    dtype = np.result_type(q, k, v)
    n, m, d = q.shape[0], k.shape[0], k.shape[1]
    if dtype not in (np.float32, np.float64) or d < 2 or not is_gaussian(kernel):
        return None
    if exact_engine(n * m) == "dense" or v.shape[1] > native.MAX_VALUES:
        return None
    if not (computes_on_cpu() and native.available(dtype == np.float64, d, v.shape[1])):
        return None
    if not extent_in_bandwidths(q, k, h) <= HOST_MAX_EXTENT:  # as "auto" decides
        return None
    check_bandwidth_representable(h, dtype)
    q, k, v, h = (np.asarray(a, dtype) for a in (q, k, v, h))
    unit = value_unit(v)
    pooled, empty_rows = pool_host(
        q, k, v / unit, h, kernel=kernel, method="native", options=None, nearest=nearest
    )
    return (pooled * unit).astype(dtype), empty_rows
