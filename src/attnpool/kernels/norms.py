"""Minkowski norms: kernels of ``‖u‖_p = (Σ_j |u_j|^p)^(1/p)`` instead of the Euclidean
``‖u‖₂`` (KDEpy's ``norm=p``; scikit-learn's ``"manhattan"``, ``p = 1``, and
``"chebyshev"``, ``p = ∞``).

A record made by :func:`attnpool.kernels.with_norm` carries its ``norm``; every path that measures a
distance takes it from :func:`squared_norm`, so all of them see the same number, and the
support's edge is decided on it. A density's constant integrates the kernel over the
norm's own balls: ``∫ K(‖u‖_p) du = d V_p(d) ∫₀^∞ K(r) r^(d−1) dr`` with the unit ball's
volume ``V_p(d) = (2 Γ(1 + 1/p))^d / Γ(1 + d/p)`` (:func:`unit_ball_volume`). The methods
built for the Euclidean distance (``fgt``, ``native``, ``sparse``, ``binned``, ``topk``,
``tree``, ``fused``) take only the built-in records and refuse these; the exact engines
(``dense``, ``stream``, ``pallas``) and the NumPy engine serve them.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .record import Kernel

__all__ = ["NAMED_NORMS", "squared_norm", "unit_ball_volume"]

#: Names of norms, as scikit-learn's metrics call them.
NAMED_NORMS = {"euclidean": 2.0, "manhattan": 1.0, "cityblock": 1.0, "chebyshev": math.inf}


def squared_norm(us: list, kernel: Kernel, xp: Any = np) -> Any:
    """``‖u‖²`` of the scaled differences ``us`` (one array per coordinate) in ``kernel``'s
    norm, elementwise, in NumPy or JAX (``xp``)."""
    p = kernel.norm
    if p == 2.0:
        return sum(u * u for u in us)
    sizes = [xp.abs(u) for u in us]
    if p == math.inf:
        largest = functools.reduce(xp.maximum, sizes)
        return largest * largest
    if p == 1.0:
        total = sum(sizes)
        return total * total
    return sum(size**p for size in sizes) ** (2.0 / p)


def unit_ball_volume(d: int, norm: float = 2.0) -> float:
    """The volume of the unit ball of ``‖·‖_p`` in ``d`` dimensions."""
    if norm == math.inf:
        return 2.0**d
    return math.exp(d * math.log(2 * math.gamma(1 + 1 / norm)) - math.lgamma(1 + d / norm))
