"""Pools of NumPy arrays that need no JAX, where the planner's pooling table
(:mod:`attnpool.sums.plan`) sends ``"auto"``: small ones to the NumPy engine
(:func:`.numpy_engine.pool`, rule 3), one column to the ``fgt`` expansions or
the ``sparse`` windows (rule 6), compact kernels of small neighbourhoods to ``sparse``
(rule 7), large Gaussian ones in several columns on a CPU to the ``native`` C loop
(rule 9); and a host method asked for by name (``sparse``, ``fgt``, ``native``,
``tree``, ``topk``, ``binned``). A first such call in a process then costs the loop's
sums, not JAX's import (~1.3 s of a first 3·10⁴ × 3·10⁴ pool in eight columns that took
1.5 s)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._support.units import value_unit
from .._support.validation import check_bandwidth_representable
from ..kernels import Kernel
from ..methods.options import check_applicable
from ..sums.facts import pool_facts
from ..sums.plan import plan
from . import numpy_engine
from .pool_route import PoolRoute

#: The planner's backends that pool NumPy arrays here, on the host, without JAX.
HOST_BACKENDS = ("fgt", "sparse", "native")


def pool_without_jax(
    q: Any, k: Any, v: Any, h: Any, kernel: Kernel, *, nearest: bool
) -> tuple[Any, str | None]:
    """``(found, backend)``: the planner's backend for ``"auto"``'s pool of NumPy arrays
    (None for JAX arrays), and ``(pooled (n, p), empty (n,))`` where that backend runs
    here without JAX, else None (the compiled path takes it)."""
    if not all(isinstance(a, np.ndarray) for a in (q, k, v, h)) or q.shape[0] == 0:
        return None, None
    facts = pool_facts(kernel, q, k, h, values=v, numpy=True)
    backend = plan(facts).backend
    if backend == "numpy":
        return numpy_engine.pool(q, k, v, h, kernel, nearest=nearest), None
    if backend in HOST_BACKENDS:
        return _host_pool(backend, q, k, v, h, kernel, nearest), backend
    return None, backend


def pool_named_on_host(
    name: str, options: Any, q: Any, k: Any, v: Any, h: Any, kernel: Kernel, *, nearest: bool
) -> Any:
    """``(pooled (n, p), empty (n,))`` of NumPy arrays by the host method ``name`` asked
    for (with its record ``options``), checked as every named method is, here without
    JAX where that method's module needs none; None for JAX arrays, other precisions
    or a ``native`` loop not built (the compiled path then runs it)."""
    if not all(isinstance(a, np.ndarray) for a in (q, k, v, h)) or q.shape[0] == 0:
        return None
    check_applicable(name, kernel, k.shape[1], traced=False, weights=False)
    return _host_pool(name, q, k, v, h, kernel, nearest, options)


def _host_pool(
    name: str, q: Any, k: Any, v: Any, h: Any, kernel: Kernel, nearest: bool, options: Any = None
) -> Any:
    """The pool the planner gives a host method (``fgt``, ``sparse``, ``native``), by the
    same call (:func:`.host_methods.pool_host`) on the inputs as
    :func:`attnpool._support.interop.run_in_policy` casts them — the inputs and the bandwidth in
    their common precision (float32 or float64), value columns near the float limit in
    power-of-two units — or None where the inputs are of another precision or the
    ``native`` loop of this precision and these value columns is not built (the compiled
    path then runs it). Rows the method cannot settle are pooled exactly there (on the
    NumPy engine where it serves them, else by the exact engines, JAX imported then)."""
    from ..methods import native
    from .host_methods import pool_host

    dtype = np.result_type(q, k, v)
    if dtype not in (np.float32, np.float64):
        return None
    if name == "native" and not (
        v.shape[1] <= native.MAX_VALUES
        and native.available(dtype == np.float64, k.shape[1], v.shape[1])
    ):
        return None
    check_bandwidth_representable(h, dtype)
    q, k, v, h = (np.asarray(a, dtype) for a in (q, k, v, h))
    unit = value_unit(v)
    pooled, empty_rows = pool_host(
        q, k, v / unit, h, PoolRoute(kernel, name, nearest, None, options)
    )
    return (pooled * unit).astype(dtype), empty_rows
