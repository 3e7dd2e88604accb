"""Densities by a registered backend (:mod:`attnpool.sums.backends`): the weights' sums
of :func:`attnpool.log_density`'s problem, solved and finished by the sums layer,
normalised by ``W ∏h ∫K``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import kernels as _kernels
from .._support.validation import check_bandwidth
from ..kernels.calculus import density_integral
from ..sums import layer
from ..sums.observation_weights import check_weights
from ..sums.problem import SumProblem
from . import matrix_bandwidth

__all__ = ["log_density_by_backend"]


def log_density_by_backend(
    name: str, x: Any, q: Any, kernel: Any, bandwidth: Any, weights: Any, var_type: Any
) -> np.ndarray:
    """``(k,)``: ``log f̂`` at the checked queries ``q`` from the checked rows ``x`` by the
    backend ``name``."""
    d = x.shape[1]
    if var_type is not None and set(var_type) != {"c"}:
        raise ValueError(
            f"var_type: backend {name!r} sums continuous columns; received {var_type!r}"
        )
    if matrix_bandwidth.is_matrix(bandwidth):
        raise ValueError(f"bandwidth: backend {name!r} takes one bandwidth per column")
    record = _kernels.for_dimensions(_kernels.get(kernel), d)
    first = density_integral(record, d)
    h = check_bandwidth(bandwidth, d)
    w = None if weights is None else check_weights(weights, x.shape[0])
    x64, q64, h64, w64 = layer.host_arrays(name, x, q, h, w)
    problem = SumProblem(q64, x64, np.zeros((x.shape[0], 0)), h64, record, w64)
    return layer.log_density(name, problem, first)
