"""Array type and precision policy: NumPy in → NumPy out, JAX in → JAX out.

NumPy (or list) inputs are computed in their own precision: float64 data runs
inside ``jax.enable_x64(True)`` without touching the global flag, and the result
is copied back to NumPy before the context closes (a float64 JAX array that
leaves the context silently drops to float32 on its next operation). Integer
data computes in float64, like NumPy; float16 data computes in float32 and comes back
in float16. JAX inputs follow JAX's own dtype rules. Value columns near the dtype's
limit are pooled in power-of-two units (:func:`attnpool._support.units.value_unit`).
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np

from ..sums.empty_policy import report_empty
from .program_cache import enable_compilation_cache
from .units import value_unit
from .validation import check_bandwidth_representable, is_jax, is_traced, numpy_dtype

enable_compilation_cache()  # a second process loads its programs instead of compiling


def numpy_mode(*arrays) -> bool:
    """True when no argument is a JAX array or tracer."""
    return not any(is_jax(a) for a in arrays)


def compute_dtype(*data, numpy: bool):
    """Floating dtype for the computation, from the data arrays (not the bandwidth)."""
    if numpy:
        return numpy_dtype(*data)
    dtype = jnp.promote_types(jnp.result_type(*data), jnp.float32)
    return jax.dtypes.canonicalize_dtype(dtype)


def precision_scope(dtype):
    """Context in which arrays of ``dtype`` keep their precision."""
    if np.dtype(dtype) == np.float64 and not jax.config.jax_enable_x64:
        return jax.enable_x64(True)
    return contextlib.nullcontext()


def half_precision(data):
    """The inputs' common dtype if it is a 16-bit float (float16, bfloat16), else None."""
    dtype = jnp.result_type(*data)
    return dtype if jnp.issubdtype(dtype, jnp.floating) and dtype.itemsize == 2 else None


def run_in_policy(compute, args, kernel, empty: str, n: int, keyless=None):
    """``compute(*args)`` under the precision and array-type policy — NumPy in, NumPy
    out; float64 without the global flag; narrow floats computed in float32 and returned
    in their own precision; value columns near the float limit in power-of-two units —
    then the ``empty`` policy on its empty rows (warnings point at the public function's
    caller). ``args``: ``(queries, keys, values, bandwidth)`` (a pool) or ``(queries,
    keys, bandwidth)`` (weights); ``n`` queries; ``keyless (n,)``: the queries a mask
    leaves no key (reported by themselves, not as empty neighbourhoods)."""
    as_numpy = numpy_mode(*args)
    dtype = compute_dtype(*args[:-1], numpy=as_numpy)
    if empty == "raise" and any(is_traced(a) for a in args):
        raise ValueError(
            "empty: 'raise' needs concrete inputs; inside jit, grad or vmap use 'nan' or 'nearest'"
        )
    check_bandwidth_representable(args[-1], dtype)
    with precision_scope(dtype):
        # NumPy stays NumPy until the jitted programs: eager JAX operations would each
        # compile a program for every new shape
        convert = np.asarray if as_numpy else jnp.asarray
        cast = [convert(a, dtype) for a in args]
        if n == 0:
            width = cast[2].shape[1] if len(cast) == 4 else cast[1].shape[0]
            result, empty_rows = jnp.zeros((0, width), dtype), jnp.zeros((0,), bool)
        elif len(cast) == 4:  # pooling: huge value columns in power-of-two units
            q, k, v, h = cast
            unit = value_unit(v)
            result, empty_rows = compute(q, k, v / unit, h)
            if isinstance(result, tuple):  # (pooled, weights)
                result = (result[0] * unit, result[1])
            else:
                result = result * unit
        else:
            result, empty_rows = compute(*cast)
        narrow = half_precision(args[:-1])
        if narrow is not None:  # computed in float32, returned in the inputs' precision
            result = jax.tree_util.tree_map(
                lambda a: a.astype(narrow) if jnp.issubdtype(a.dtype, jnp.floating) else a,
                result,
            )
        if as_numpy:
            result = jax.tree_util.tree_map(np.asarray, result)
    if not is_traced(empty_rows):
        empty_rows = np.asarray(empty_rows)
        if keyless is not None:
            empty_rows = empty_rows & ~keyless
        report_empty(kernel, empty, empty_rows, stacklevel=4)
    return result
