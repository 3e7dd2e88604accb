"""Array type and precision policy: NumPy in → NumPy out, JAX in → JAX out.

NumPy (or list) inputs are computed in their own precision: float64 data runs
inside ``jax.enable_x64(True)`` without touching the global flag, and the result
is copied back to NumPy before the context closes (a float64 JAX array that
leaves the context silently drops to float32 on its next operation). Integer
data computes in float64, like NumPy. JAX inputs follow JAX's own dtype rules.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np

from ._validation import is_jax


def numpy_mode(*arrays) -> bool:
    """True when no argument is a JAX array or tracer."""
    return not any(is_jax(a) for a in arrays)


def compute_dtype(*data, numpy: bool):
    """Floating dtype for the computation, from the data arrays (not the bandwidth)."""
    if numpy:
        dtype = np.result_type(*data)
        if not np.issubdtype(dtype, np.floating):
            return np.dtype(np.float64)
        return np.promote_types(dtype, np.float32)
    dtype = jnp.promote_types(jnp.result_type(*data), jnp.float32)
    return jax.dtypes.canonicalize_dtype(dtype)


def precision_scope(dtype):
    """Context in which arrays of ``dtype`` keep their precision."""
    if np.dtype(dtype) == np.float64 and not jax.config.jax_enable_x64:
        return jax.enable_x64(True)
    return contextlib.nullcontext()
