"""The planner's :class:`~attnpool.sums.plan.Facts`, read from a call's arguments.

Only what decides is read: sizes, what the kernel is, whether the arrays are NumPy,
float64 or traced, the device, and whether the compiled loops are built. The two
readings that cost a pass over the data — the extent in bandwidths and a sampled
neighbourhood's share of the keys — are deferred to the rules that ask for them.
No JAX is imported where the arrays are NumPy and JAX is not loaded already.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import kernels
from .._support.jax_platform import computes_on_cpu
from .._support.units import HOST_MAX_EXTENT, LOOP_MAX_EXTENT, extent_in_bandwidths, midrange
from .._support.validation import numpy_dtype
from ..kernels import Kernel
from .costs import block_width
from .local_model import LocalModel
from .plan import Facts
from .problem import SumProblem
from .thresholds import DENSE_MAX_PAIRS, EXPANSION_MIN_PAIRS

__all__ = ["density_facts", "device", "finish_facts", "fit_facts", "pool_facts", "search_facts"]

#: JAX's names of GPU platforms.
GPU_BACKENDS = frozenset(["gpu", "cuda", "rocm"])


def device(backend: str | None = None) -> str:
    """``"cpu"``, ``"gpu"`` or JAX's name of another platform: ``backend`` (a JAX
    platform name) if given, else where JAX computes (asked without importing it where
    that can be told)."""
    if backend is None:
        if computes_on_cpu():
            return "cpu"
        import jax

        backend = str(jax.default_backend())
    return "gpu" if backend in GPU_BACKENDS else backend


def _kernel_facts(kernel: Kernel) -> dict[str, Any]:
    """What the planner reads of ``kernel`` (remembered for the built-in records)."""
    if kernels.is_builtin(kernel):
        return _builtin_facts(kernel)
    return _read_kernel(kernel)


@functools.cache
def _builtin_facts(kernel: Kernel) -> dict[str, Any]:
    return _read_kernel(kernel)


def _read_kernel(kernel: Kernel) -> dict[str, Any]:
    from ..methods import sparse
    from ..methods.prefix_sums import split_kernel

    distance = kernel.similarity == "distance"
    return {
        "gaussian": kernels.is_gaussian(kernel),
        "compact": kernel.compact,
        "radial": sparse.supports(kernel),
        "split": split_kernel(kernel) is not None,
        "builtin": kernels.is_builtin(kernel),
        "tiled": kernel.base is None and kernel.similarity in ("distance", "dot"),
        "host_profile": distance and (kernels.is_builtin(kernel) or kernel.host),
    }


def _loops(d: int) -> bool:
    from ..methods import native

    return native.available(True, d)


def pool_facts(
    kernel: Kernel, queries: Any, keys: Any, bandwidth: Any, *, values: Any = None,
    numpy: bool = False, backend: str | None = None, **asked: Any,
) -> Facts:  # fmt: skip
    """The facts of a pool of ``queries (n, d)`` over ``keys (m, d)`` (``values (m, p)``
    where known): ``numpy`` where the arrays are NumPy (their precision then read),
    ``backend`` a JAX platform name (None: where JAX computes); ``asked``: the flags
    ``traced``, ``masked``, ``weight_matrix`` and ``block_size`` of :class:`Facts`."""
    n, m, d = queries.shape[0], keys.shape[0], keys.shape[1]
    arrays = (queries, keys) if values is None else (queries, keys, values)
    float64 = numpy and (all(a.dtype == np.float64 for a in arrays)
                         or numpy_dtype(*arrays) == np.float64)  # fmt: skip
    outputs = 1 if values is None else values.shape[1]
    where = device(backend)
    return Facts(
        "pool", n, m, d, outputs, numpy=numpy, float64=float64, device=where,
        loops=where == "cpu" and d >= 2 and _loops(d),
        in_range=functools.partial(_in_range, queries, keys, bandwidth),
        in_loop_range=functools.partial(_in_range, queries, keys, bandwidth, LOOP_MAX_EXTENT),
        neighbour_share=functools.partial(_neighbour_share, queries, keys, bandwidth, kernel),
        **_kernel_facts(kernel), **asked,
    )  # fmt: skip


def density_facts(
    kernel: Kernel, x: Any, q: Any, bandwidth: Any, *, numpy: bool, truncating: bool = True
) -> Facts:
    """The facts of a density of ``x (m, d)`` at ``q (n, d)``; ``truncating``: whether
    observation weights leave ``fgt`` and ``native`` their bound."""
    n, m, d, kernel_facts = q.shape[0], x.shape[0], x.shape[1], _kernel_facts(kernel)
    where = device() if numpy and d >= 2 else "cpu"  # (only the native rule reads it)
    return Facts(
        "density", n, m, d, numpy=numpy, float64=True, truncating=truncating, device=where,
        loops=numpy and where == "cpu" and d >= 2 and _loops(d),
        expansions_ready=numpy and d == 1 and kernel_facts["gaussian"]
        and n * m >= EXPANSION_MIN_PAIRS and _expansions_ready(),
        in_range=functools.partial(_in_range, q, x, bandwidth),
        in_loop_range=functools.partial(_in_range, q, x, bandwidth, LOOP_MAX_EXTENT),
        **kernel_facts,
    )  # fmt: skip


def _expansions_ready() -> bool:
    from ..methods import native

    return native.expansions_ready()


def fit_facts(
    model: LocalModel, queries: int, rows: int, outputs: int, *, weighted: bool = False,
    block_size: bool = False,
) -> Facts:  # fmt: skip
    """The facts of a local fit of ``model`` at ``queries`` points from ``rows`` training
    rows with ``outputs`` responses (sizes only: no reading of the data decides)."""
    from ..methods import native

    d = len(model.var_type)
    moments = model.degree == 1 and native.moments_available(d, outputs)
    return _on_device(Facts(
        "fit", queries, rows, d, outputs, degree=model.degree,
        categorical=set(model.var_type) != {"c"}, weighted=weighted, block_size=block_size,
        moments_loops=moments, **_kernel_facts(model.kernel),
    ))  # fmt: skip


def _on_device(facts: Facts) -> Facts:
    """``facts`` with where JAX computes, read only where a rule asks: the compiled fits'
    ``pallas`` rule, beyond one dense block of pairs times the numbers each holds
    (:func:`~attnpool.sums.costs.block_width`); a small fit imports nothing to tell."""
    if facts.n * facts.m * block_width(facts) <= DENSE_MAX_PAIRS:
        return facts
    return facts._replace(device=device())


def polynomial_facts(
    kernel: kernels.Kernel, queries: int, rows: int, d: int, outputs: int, degree: int
) -> Facts:
    """The facts of a local polynomial fit of ``degree`` (continuous columns, unweighted)."""
    from ..methods import native, native_polynomial

    kernel_facts = _kernel_facts(kernel)
    terms, basis = math.comb(d + 2 * degree, d), math.comb(d + degree, d)
    loops = kernel_facts["gaussian"] and (
        native.moments_available(d, outputs) if degree == 1
        else native_polynomial.serves(d, outputs, terms, basis)
    )  # fmt: skip
    return _on_device(Facts("fit", queries, rows, d, outputs, degree=degree,
                            moments_loops=loops, **kernel_facts))  # fmt: skip


def search_facts(
    model: LocalModel, rows: int, outputs: int, *, weighted: bool = False,
    criterion: str = "cv", block_size: bool = False, spread_out: bool = False,
    truncating: bool = True,
) -> Facts:  # fmt: skip
    """The facts of a bandwidth search of ``model`` over ``rows`` training rows with
    ``outputs`` responses by ``criterion`` (``"cv"``, ``"aicc"``); ``spread_out``: a
    column's standard deviation is many times its robust spread (a heavy tail, a far
    outlier, which can take rows beyond ``fgt``'s range); ``truncating``: the observation
    weights leave ``fgt`` its bound (they span at most ``TRUNCATED_MAX_SPAN``)."""
    from ..methods import native
    from ..methods.options import BINNED_SMOOTH_KERNELS

    d, continuous = len(model.var_type), set(model.var_type) == {"c"}
    loops = continuous and kernels.is_gaussian(model.kernel) and (
        native.moments_available(d, outputs) if model.degree == 1
        else native.available(True, d, min(outputs, native.MAX_VALUES))
    )  # fmt: skip
    return Facts(
        "search", rows, rows, d, outputs, degree=model.degree, categorical=not continuous,
        weighted=weighted, block_size=block_size, criterion=criterion, loo_loops=loops,
        truncating=truncating,
        binnable=kernels.is_builtin(model.kernel, BINNED_SMOOTH_KERNELS) and not spread_out,
        **_kernel_facts(model.kernel),
    )  # fmt: skip


def finish_facts(problem: SumProblem) -> Facts:
    """The facts of summing every pair of ``problem`` again (the layer's finishing step)."""
    from .observation_weights import too_wide_to_truncate

    n, m, d, _ = problem.sizes
    q, k, h = problem.queries, problem.keys, problem.bandwidth
    where = device() if d >= 2 else "cpu"  # (only the native rule reads it)
    kernel_facts = _kernel_facts(problem.kernel)
    return Facts(
        "finish", n, m, d, problem.width, power=problem.power, device=where,
        float64=numpy_dtype(q, k, problem.values) == np.float64,
        degree=problem.degree, categorical=problem.categorical,
        pairs_only=problem.signed or problem.varying,
        truncating=not too_wide_to_truncate(problem.weights),
        loops=where == "cpu" and d >= 2 and _loops(d),
        expansions_ready=d == 1 and kernel_facts["gaussian"]
        and n * m >= EXPANSION_MIN_PAIRS and _expansions_ready(),
        in_range=functools.partial(_in_range, q, k, h),
        in_loop_range=functools.partial(_in_range, q, k, h, LOOP_MAX_EXTENT), **kernel_facts,
    )  # fmt: skip


def _in_range(queries: Any, keys: Any, bandwidth: Any, limit: float = HOST_MAX_EXTENT) -> bool:
    return bool(extent_in_bandwidths(queries, keys, bandwidth) <= limit)


def _neighbour_share(queries: Any, keys: Any, bandwidth: Any, kernel: Kernel,
                     sample: int = 512) -> float:  # fmt: skip
    """Share of keys inside the support of a sample of queries (scaled coordinates)."""
    from scipy.spatial import cKDTree

    rng = np.random.default_rng(0)  # only the sample leaves the device
    q = np.asarray(queries[rng.choice(queries.shape[0], min(sample, queries.shape[0]), False)])
    k = np.asarray(keys[rng.choice(keys.shape[0], min(8 * sample, keys.shape[0]), False)])
    scale, centre = np.asarray(bandwidth, np.float64), midrange(k)
    pairs = cKDTree((q - centre) / scale).count_neighbors(
        cKDTree((k - centre) / scale), kernel.support
    )
    return float(pairs / (q.shape[0] * k.shape[0]))
