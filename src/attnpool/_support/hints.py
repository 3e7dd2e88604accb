"""Type aliases of the public API's annotations (NumPy only at run time).

``ArrayLike`` is what the functions take: NumPy arrays, JAX arrays, nested sequences,
scalars, pandas columns. ``Array`` is what pooling returns: NumPy in, NumPy out; JAX in,
JAX out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import dask.array
    import jax

    from ..kernels import Kernel
    from ..methods.options import Binned, TopK

__all__ = [
    "Array",
    "ArrayLike",
    "Bandwidth",
    "HostArrayLike",
    "HostBandwidth",
    "KernelSpec",
    "MethodSpec",
    "NDArray",
    "Predictions",
]

ArrayLike: TypeAlias = npt.ArrayLike
NDArray: TypeAlias = npt.NDArray[Any]
Array: TypeAlias = "np.ndarray[Any, Any] | jax.Array"
#: What the functions take when no JAX array is among the inputs — NumPy arrays, nested
#: sequences, scalars: they then return NumPy arrays (the overloads say so).
HostArrayLike: TypeAlias = "np.ndarray[Any, Any] | Sequence[Any] | float | np.generic"
#: A bandwidth with no JAX array in it.
HostBandwidth: TypeAlias = "float | str | np.ndarray[Any, Any] | Sequence[Any] | np.generic"
#: An estimator's predictions: NumPy, or Dask for an estimator fitted on Dask arrays.
Predictions: TypeAlias = "np.ndarray[Any, Any] | dask.array.Array"
#: A bandwidth: a number, one per column, or a selector's name.
Bandwidth: TypeAlias = "float | str | npt.ArrayLike"
#: A kernel: a registered name, a :class:`~attnpool.kernels.Kernel`, or ``K(u)``.
KernelSpec: TypeAlias = "str | Kernel | Callable[..., Any]"
#: A pooling method: a name, or a configured :class:`Binned` or :class:`TopK`.
MethodSpec: TypeAlias = "str | Binned | TopK"
