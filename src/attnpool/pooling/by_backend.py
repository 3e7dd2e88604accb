"""Pooling by a registered backend (:mod:`attnpool.sums.backends`): the problem built from
:func:`attnpool.attention_pool`'s checked inputs, solved and finished by the sums layer,
returned in the inputs' precision and kind of array."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._support.validation import is_jax, numpy_dtype
from ..kernels import Kernel
from ..sums import layer
from ..sums.empty_policy import fills_empty, report_empty
from ..sums.observation_weights import check_weights
from ..sums.problem import SumProblem

__all__ = ["pool_by_backend", "refuse_options"]


def refuse_options(name: str, **options: Any) -> None:
    """A ``ValueError`` naming the first of ``options`` given (not None nor False): a
    backend computes sums, not masks, weight matrices or key blocks."""
    for argument, given in options.items():
        if given is not None and given is not False:
            raise ValueError(f"{argument}: backend {name!r} computes sums only; pass no {argument}")


def pool_by_backend(
    name: str, q: Any, k: Any, v: Any, h: Any, kernel: Kernel, weights: Any, *, empty: str
) -> Any:
    """``(n, p)``: the pool of ``v`` by the backend ``name`` (arguments as
    :func:`attnpool.attention_pool` checked them)."""
    if v is None:
        raise ValueError(f"values: backend {name!r} pools values; received None")
    dtype = numpy_dtype(q, k, v)
    w = None if weights is None else check_weights(weights, k.shape[0], np.float64)
    q64, k64, v64, h64, w64 = layer.host_arrays(name, q, k, v, h, w)
    problem = SumProblem(q64, k64, v64, h64, kernel, w64)
    nearest = fills_empty(kernel, empty)
    pooled, empty_rows = layer.pool(name, problem, nearest=nearest)
    report_empty(kernel, empty, empty_rows)
    pooled = pooled.astype(dtype)
    if any(is_jax(a) for a in (q, k, v)):
        import jax.numpy as jnp

        return jnp.asarray(pooled)
    return pooled
