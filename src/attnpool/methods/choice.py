"""Which way to pool: the ``method=`` argument, its options and the ``"auto"`` rules.

``method`` is a name or a configured record (:class:`Binned`, :class:`TopK`).
``"auto"`` picks an exact method (never an approximation) from the kernel,
the dimension, the sizes, the device and whether weights were asked for —
the first rule that applies:

====  =============================================  ==========
rule  when                                           method
====  =============================================  ==========
1     the weight matrix is asked for                 ``dense``
2     ``n·m ≤ DENSE_MAX_PAIRS``                      ``dense``
3     traced inputs (inside ``jit``/``grad``/``vmap``) ``pallas`` on
      or a key mask                                  a GPU, else
                                                     ``stream``
4     ``d = 1``: compact kernel / ``gaussian``       ``sparse`` / ``fgt``
5     compact kernel, ``2 ≤ d ≤ 4``, sampled         ``sparse``
      neighbourhoods hold ≤ 5% of the keys
6     GPU, a non-negative kernel                     ``pallas``
7     CPU, ``gaussian``, ``2 ≤ d ≤ 16``, the         ``native``
      compiled loops load
8     otherwise                                      ``stream``
====  =============================================  ==========

On a GPU (rules 3 and 6) the kernels served by ``pallas`` — every kernel but the signed
higher-order ones — run on its tiled kernel; ``fused`` (``jax.nn.dot_product_attention``,
float32 logits) is used only when asked for.

``fgt`` truncates Taylor expansions at a bound of 1e-14 of each query's weight, below
the float64 sum's own rounding, so it counts as exact; ``native`` sums every pair in
the working precision, like ``stream``. ``binned`` (``d ≤ 2``, error
within a stated tolerance) and ``topk`` (a bound on the weight left out) are
approximations, used only when asked for.
"""

from __future__ import annotations

import jax
import numpy as np

from .._units import HOST_MAX_EXTENT, extent_in_bandwidths, midrange
from .._validation import is_traced
from ..kernels import Kernel
from . import fgt, native, pallas, sparse
from .options import TRAITS, exact_engine, refusal, resolve

#: Rule 5: largest sampled share of keys inside a neighbourhood for ``sparse``.
SPARSE_MAX_FRACTION = 0.05
SPARSE_MAX_DIM = 4


def check_applicable(name: str, kernel: Kernel, d: int, *, traced: bool, weights: bool) -> None:
    """A clear error when ``name`` cannot pool this kernel, dimension or input: from
    what the method declares (:data:`attnpool.methods.options.TRAITS`) and its module's
    ``refusal(kernel, d)``."""
    traits = TRAITS[name]
    if weights and not traits.weights:
        raise ValueError(
            f"method: {name!r} does not form the weight matrix; use method='dense' "
            "(or 'auto') with return_weights=True"
        )
    if traced and not traits.traceable:
        raise ValueError(
            f"method: {name!r} needs concrete arrays; inside jit, grad or vmap use "
            "'dense', 'stream' or 'fused'"
        )
    reason = refusal(name, kernel, d)
    if reason:
        raise ValueError(f"method: {reason}")


def choose_method(
    kernel: Kernel,
    queries,
    keys,
    bandwidth,
    *,
    traced: bool,
    weights: bool,
    backend: str | None = None,
) -> str:
    """The method ``"auto"`` uses (the table above). ``queries (n, d)``, ``keys (m, d)``."""
    n, m, d = queries.shape[0], keys.shape[0], keys.shape[1]
    if weights or exact_engine(n * m) == "dense":
        return "dense"
    backend = backend or jax.default_backend()
    tiled = backend in pallas.GPU_BACKENDS and pallas.supports(kernel)
    if traced or not extent_in_bandwidths(queries, keys, bandwidth) <= HOST_MAX_EXTENT:
        return "pallas" if tiled else "stream"
    if d == 1 and fgt.supports(kernel):
        return "fgt"
    if sparse.supports(kernel):
        if d == 1:
            return "sparse"
        if d <= SPARSE_MAX_DIM and _neighbour_fraction(queries, keys, bandwidth, kernel) <= (
            SPARSE_MAX_FRACTION
        ):
            return "sparse"
    if tiled:
        return "pallas"
    if backend == "cpu" and d >= 2 and native.supports(kernel) and native.available(True, d):
        return "native"
    return "stream"


def _neighbour_fraction(queries, keys, bandwidth, kernel: Kernel, sample: int = 512) -> float:
    """Share of keys inside the support of a sample of queries (scaled coordinates)."""
    from scipy.spatial import cKDTree

    rng = np.random.default_rng(0)  # only the sample leaves the device
    q = np.asarray(queries[rng.choice(queries.shape[0], min(sample, queries.shape[0]), False)])
    k = np.asarray(keys[rng.choice(keys.shape[0], min(8 * sample, keys.shape[0]), False)])
    scale, centre = np.asarray(bandwidth, np.float64), midrange(k)
    pairs = cKDTree((q - centre) / scale).count_neighbors(
        cKDTree((k - centre) / scale), kernel.support
    )
    return pairs / (q.shape[0] * k.shape[0])


def choose(method, kernel: Kernel, q, k, h, *, weights: bool, block_size, masked=False):
    """``(name, options)`` for the ``method`` argument of a pool of queries ``q (n, d)``
    over keys ``k (m, d)``: ``"auto"`` resolved by the table above (``block_size`` asks
    for ``stream``; a mask, rule 3), or a clear error if the method cannot apply."""
    name, options = resolve(method)
    traced = any(is_traced(a) for a in (q, k, h))
    if name == "auto":
        if block_size is not None and not weights:
            return "stream", None
        name = choose_method(kernel, q, k, h, traced=traced or masked, weights=weights)
    check_applicable(name, kernel, k.shape[1], traced=traced, weights=weights)
    return name, options
