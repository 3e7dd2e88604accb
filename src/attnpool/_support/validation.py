"""Input checks shared by every layer.

Each error names the argument, what was received and what is accepted. Arrays
that are JAX tracers (inside ``jit``/``grad``/``vmap``) get the checks that
shapes allow; their values are checked only when they are concrete.
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Sequence

import numpy as np

from .units import REMEMBERED_SIZE, column_extremes, remembering


def is_jax(x) -> bool:
    """True for JAX arrays and tracers (there are none before JAX is imported: the NumPy
    paths never import it)."""
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(x, jax.Array)


def is_traced(x) -> bool:
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(x, jax.core.Tracer)


def as_array(x, name: str):
    """``x`` as a numeric NumPy or JAX array, or ``TypeError`` naming ``name``."""
    if not is_jax(x):
        try:
            x = np.asarray(x)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"{name}: expected a numeric array; received {_describe(x)} ({error})"
            ) from None
    check_numeric_dtype(x.dtype, name)
    return x


def numpy_dtype(*data) -> np.dtype:
    """Floating dtype a computation on NumPy ``data`` runs in: float64 for integers,
    float32 at least."""
    dtype = np.result_type(*(getattr(a, "dtype", a) for a in data))  # JAX arrays too
    if dtype == np.float64:
        return dtype
    if not np.issubdtype(dtype, np.floating):
        return np.dtype(np.float64)
    return np.promote_types(dtype, np.float32)


def check_numeric_dtype(dtype, name: str) -> None:
    """``TypeError`` naming ``name`` unless ``dtype`` is an integer or floating type."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iuf":  # (the common case, without the steps below)
        return
    if dtype == np.bool_ or not (
        np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating)
    ):
        raise TypeError(
            f"{name}: expected a numeric (integer or floating) array; received dtype {dtype}"
        )


def _describe(x) -> str:
    return f"{type(x).__name__} {x!r}"[:80]


def check_finite(x, name: str) -> None:
    """``ValueError`` if a concrete array holds NaN or inf (tracers pass)."""
    if is_traced(x):
        return
    if is_jax(x):
        import jax
        import jax.numpy as jnp

        with jax.ensure_compile_time_eval():  # eager on the device, also inside a trace
            if bool(jnp.isfinite(x).all()):
                return
    a = np.asarray(x)
    if a.dtype.kind in "biu":
        return
    if a.ndim == 2 and a.size > REMEMBERED_SIZE and remembering():  # found once, they say it
        low, high = column_extremes(a)
        if np.isfinite(low).all() and np.isfinite(high).all():
            return
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.add.reduce(a, axis=None)):  # no NaN or inf in a finite sum
            return  # (and no array of flags: 10⁶ points are a megabyte of fresh memory)
    finite = np.isfinite(a)
    if not finite.all():
        bad = np.argwhere(~finite)
        raise ValueError(
            f"{name}: expected finite numbers; received {len(bad)} NaN or infinite "
            f"value(s), the first at index {tuple(int(i) for i in bad[0])}"
        )


def check_points(x, name: str, *, dims: int | None = None, min_rows: int = 0):
    """Validate ``x`` of shape ``(n,)`` or ``(n, d)``; return it as ``(n, d)``.

    ``dims`` (if given) is the required ``d``, taken from another argument; ``min_rows``
    the fewest rows accepted (training data: 1).
    """
    x = as_array(x, name)
    if x.ndim not in (1, 2):
        raise ValueError(
            f"{name}: expected shape (n,) or (n, d); received an array of shape {x.shape}"
        )
    if x.ndim == 1:
        x = x[:, None]
    if x.shape[0] < min_rows:
        raise ValueError(f"{name}: expected at least {min_rows} row(s); received shape {x.shape}")
    if dims is not None and x.shape[1] != dims:
        raise ValueError(
            f"{name}: expected {dims} feature column(s) to match the keys; received shape {x.shape}"
        )
    if x.shape[1] == 0:
        raise ValueError(f"{name}: expected at least one feature column; received shape {x.shape}")
    check_finite(x, name)
    return x


def check_values(values, n_keys: int):
    """Validate ``values`` of shape ``(m,)`` or ``(m, p)``; return ``(m, p)`` and the 1-D flag.

    Booleans are responses of 0 and 1 (the pooled value of a binary outcome is its
    probability), as scikit-learn's regressors and the estimators here take them."""
    values = as_array(_booleans_as_numbers(values), "values")
    if values.ndim not in (1, 2):
        raise ValueError(
            f"values: expected shape (m,) or (m, p); received an array of shape {values.shape}"
        )
    if values.shape[0] != n_keys:
        raise ValueError(
            f"values: expected one row per key ({n_keys} rows); received shape {values.shape}"
        )
    check_finite(values, "values")
    one_dimensional = values.ndim == 1
    return (values[:, None] if one_dimensional else values), one_dimensional


def _booleans_as_numbers(x):
    """``x`` as 0s and 1s of the default floating type where it is an array of booleans
    (or a list of them), else ``x`` unchanged."""
    if is_jax(x):
        return x.astype(float) if x.dtype == np.bool_ else x
    if getattr(x, "dtype", None) is None:
        try:
            x = np.asarray(x)
        except (TypeError, ValueError):
            return x  # (as_array names the argument)
    return np.asarray(x, np.float64) if x.dtype == np.bool_ else x


def check_bandwidth(bandwidth, dims: int):
    """Validate a positive scalar or length-``dims`` bandwidth; return it as ``(dims,)``."""
    if isinstance(bandwidth, str | bytes):
        per_column = "" if dims == 1 else f" or {dims}, one per column"
        raise TypeError(
            f"bandwidth: expected a positive number{per_column} (rules such as 'cv' or "
            f"'scott' are the estimators' and select_bandwidth's); received the string "
            f"{bandwidth!r}"
        )
    h = as_array(bandwidth, "bandwidth")
    if h.ndim > 1 or (h.ndim == 1 and h.shape[0] not in (1, dims)):
        raise ValueError(
            f"bandwidth: expected a positive scalar or a vector of length {dims} "
            f"(one per dimension); received shape {h.shape}"
        )
    if not is_traced(h):
        concrete = np.asarray(h, dtype=float)
        if not (np.isfinite(concrete).all() and (concrete > 0).all()):
            raise ValueError(
                f"bandwidth: expected positive finite number(s); received {concrete.tolist()}"
            )
    if is_jax(h):
        import jax.numpy as jnp

        return jnp.broadcast_to(h, (dims,))
    return np.broadcast_to(h, (dims,))


def check_choice(value, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(
            f"{name}: expected one of {', '.join(repr(c) for c in choices)}; received {value!r}"
        )
    return value


def check_positive_int(value, name: str, *, allow_none: bool = True):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        accepted = "a positive integer" + (" or None" if allow_none else "")
        raise ValueError(f"{name}: expected {accepted}; received {value!r}")
    return int(value)


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


def check_mask(mask, n: int, m: int):
    """``mask`` as the engines take it (:mod:`attnpool.sums.masks`): None, a boolean ``(n, m)``
    matrix (or ``(1, m)``: the same keys for every query), or ``(n,)`` integer valid
    lengths (a scalar is every query's), each in ``[0, m]`` when concrete; else a
    ``ValueError`` naming what is accepted."""
    if mask is None:
        return None
    xp = np
    if is_jax(mask):
        import jax.numpy as xp
    else:
        mask = np.asarray(mask)
    accepted = (
        f"expected a boolean array of shape (n_queries, n_keys) = ({n}, {m}) or (1, {m}), or "
        f"integer valid lengths of shape ({n},)"
    )
    if mask.dtype == bool:
        if mask.shape not in ((n, m), (1, m)):
            raise ValueError(f"mask: {accepted}; received a boolean array of shape {mask.shape}")
        return mask
    if not xp.issubdtype(mask.dtype, xp.integer):
        raise ValueError(f"mask: {accepted}; received an array of dtype {mask.dtype}")
    if mask.ndim == 0:
        mask = xp.broadcast_to(mask, (n,))
    if mask.shape != (n,):
        raise ValueError(f"mask: {accepted}; received integer lengths of shape {mask.shape}")
    if not is_traced(mask) and mask.size and not (0 <= int(mask.min()) and int(mask.max()) <= m):
        raise ValueError(
            f"mask: valid lengths must lie in [0, {m}] (the number of keys); received "
            f"lengths from {int(mask.min())} to {int(mask.max())}"
        )
    return mask.astype(xp.int32)
