"""Minkowski norms: kernels of ``‖u‖_p = (Σ_j |u_j|^p)^(1/p)`` instead of the Euclidean
``‖u‖₂`` (KDEpy's ``norm=p``; scikit-learn's ``"manhattan"``, ``p = 1``, and
``"chebyshev"``, ``p = ∞``).

A record made by :func:`with_norm` carries its ``norm``; every path that measures a
distance takes it from :func:`squared_norm`, so all of them see the same number, and the
support's edge is decided on it. A density's constant integrates the kernel over the
norm's own balls: ``∫ K(‖u‖_p) du = d V_p(d) ∫₀^∞ K(r) r^(d−1) dr`` with the unit ball's
volume ``V_p(d) = (2 Γ(1 + 1/p))^d / Γ(1 + d/p)`` (:func:`unit_ball_volume`). The methods
built for the Euclidean distance (``fgt``, ``native``, ``sparse``, ``binned``, ``topk``,
``tree``, ``fused``) take only the built-in records and refuse these; the exact engines
(``dense``, ``stream``, ``pallas``) and the NumPy engine serve them.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np

from .record import Kernel
from .sphere import HAVERSINE, haversine

__all__ = ["NAMED_NORMS", "normed", "squared_norm", "unit_ball_volume"]

#: Names of norms, as scikit-learn's metrics call them.
NAMED_NORMS = {"euclidean": 2.0, "manhattan": 1.0, "cityblock": 1.0, "chebyshev": math.inf}


def normed(kernel: Kernel, norm: float | str) -> Kernel:
    """The record :func:`attnpool.kernels.with_norm` returns, of a ``kernel`` record."""
    if norm == HAVERSINE:
        return haversine(kernel)
    p = NAMED_NORMS.get(norm, norm) if isinstance(norm, str) else norm
    if isinstance(p, str) or isinstance(p, bool) or not isinstance(p, int | float | np.number):
        raise ValueError(
            f"norm: expected a number p >= 1, math.inf, one of {sorted(NAMED_NORMS)} or "
            f"'haversine'; "
            f"received {norm!r}"
        )
    p = float(p)
    if not p >= 1:
        raise ValueError(f"norm: expected p >= 1 (a norm); received {norm!r}")
    if kernel.similarity != "distance" or kernel.product or kernel.base is not None:
        raise ValueError(
            f"kernel: a norm takes a radial, non-negative distance kernel; received {kernel.name!r}"
        )
    if p == kernel.norm:
        return kernel
    label = "linf" if p == math.inf else f"l{p:g}"
    return dataclasses.replace(
        kernel,
        name=f"{kernel.name.split('-l')[0]}-{label}",
        norm=p,
        quadratic=None,
        # the NumPy paths evaluate it where the profile takes and returns NumPy
        host=kernel.host or isinstance(kernel.log_profile(np.zeros(2)), np.ndarray),
    )


def squared_norm(us: list, kernel: Kernel, xp: Any = np) -> Any:
    """``‖u‖²`` of the scaled differences ``us`` (one array per coordinate) in ``kernel``'s
    norm, elementwise, in NumPy or JAX (``xp``)."""
    p = kernel.norm
    if p == 2.0:
        return sum(u * u for u in us)
    check_planar(kernel)
    sizes = [xp.abs(u) for u in us]
    if p == math.inf:
        largest = functools.reduce(xp.maximum, sizes)
        return largest * largest
    if p == 1.0:
        total = sum(sizes)
        return total * total
    return sum(size**p for size in sizes) ** (2.0 / p)


def check_planar(kernel: Kernel) -> None:
    """Refuse a kernel of the great-circle distance where a path measures distances in
    the plane (the front ends that take one turn it into chords first)."""
    if kernel.norm == HAVERSINE:
        raise ValueError(
            f"kernel: {kernel.name!r} measures great-circle distances of (latitude, "
            "longitude) rows, which pooling (attention_pool, nadaraya_watson, "
            "NadarayaWatson with a given bandwidth) and densities (log_density, "
            "kernel_density, KernelDensity) take; this function does not"
        )


def unit_ball_volume(d: int, norm: float = 2.0) -> float:
    """The volume of the unit ball of ``‖·‖_p`` in ``d`` dimensions."""
    if norm == math.inf:
        return 2.0**d
    return math.exp(d * math.log(2 * math.gamma(1 + 1 / norm)) - math.lgamma(1 + d / norm))
