"""Array type and precision policy: NumPy in → NumPy out, JAX in → JAX out.

NumPy (or list) inputs are computed in their own precision: float64 data runs
inside ``jax.enable_x64(True)`` without touching the global flag, and the result
is copied back to NumPy before the context closes (a float64 JAX array that
leaves the context silently drops to float32 on its next operation). Integer
data computes in float64, like NumPy; float16 data computes in float32 and comes back
in float16. JAX inputs follow JAX's own dtype rules. Value columns near the dtype's
limit are pooled in power-of-two units (:func:`attnpool._units.value_unit`).
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
