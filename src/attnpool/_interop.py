"""Array type and precision policy: NumPy in → NumPy out, JAX in → JAX out.

NumPy (or list) inputs are computed in their own precision: float64 data runs
inside ``jax.enable_x64(True)`` without touching the global flag, and the result
is copied back to NumPy before the context closes (a float64 JAX array that
leaves the context silently drops to float32 on its next operation). Integer
data computes in float64, like NumPy; float16 data computes in float32 and comes back
in float16. JAX inputs follow JAX's own dtype rules. Value columns near the dtype's
limit are pooled in power-of-two units (:func:`value_unit`).
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np

from ._cache import enable_compilation_cache
from ._validation import is_jax, numpy_dtype

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


def value_unit(values):
    """A power of two ``(p,)`` per value column: 1, or for a column whose largest
    magnitude exceeds the square root of the dtype's largest number, the power of
    two at most it (``largest / unit`` in [1, 2)).

    Pooling ``values / unit`` and scaling the result back is exact, and the weighted
    sums ``Σ w v`` (weights up to 1 after the log-domain shift) then cannot overflow
    for values near the dtype's limit. Other columns are left alone, so one-hot
    weights still return each value exactly, the smallest normal numbers included.
    """
    xp = np if isinstance(values, np.ndarray) else jnp
    largest = xp.max(xp.abs(values), axis=0)
    _, exponent = xp.frexp(xp.where(largest > 0, largest, 1.0))
    exponent = xp.where(exponent > xp.finfo(values.dtype).maxexp // 2, exponent - 1, 0)
    unit = xp.ldexp(xp.ones_like(largest), exponent)
    return unit if xp is np else jax.lax.stop_gradient(unit)


def check_bandwidth_representable(original, dtype) -> None:
    """``ValueError`` if a concrete bandwidth is subnormal (or zero) in ``dtype``."""
    if is_jax(original):
        return
    tiny = np.finfo(dtype).tiny  # subnormals are flushed to zero on accelerators and XLA:CPU
    if not np.all(np.asarray(original).astype(dtype) >= tiny):
        raise ValueError(
            f"bandwidth: {np.asarray(original).tolist()} is below the smallest normal "
            f"{np.dtype(dtype)} number; accepted: bandwidths >= {tiny}"
        )
