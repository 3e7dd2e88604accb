"""The built-in kernels' log profiles ``log K(r2)`` of the squared scaled distance (NumPy
for NumPy arrays, ``jax.numpy`` otherwise), and the polynomials of the higher-order
kernels built on them: the records are in :mod:`attnpool.kernels`."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np


def namespace(r2):
    """NumPy for NumPy arrays (the NumPy engine's small problems: no program to build),
    ``jax.numpy`` for everything else (traced values). The built-in profiles use only
    functions both share."""
    if isinstance(r2, np.ndarray | np.generic):
        return np
    import jax.numpy as jnp

    return jnp


def safe_sqrt(r2):
    """``sqrt(r2)`` whose gradient at 0 is 0, not inf (a symmetric subgradient).

    Not the double-``where`` idiom: XLA:CPU may fuse the two ``r2 > 0`` tests from
    differently contracted (FMA) copies of ``r2``, and a zero distance then took the
    placeholder's ``sqrt(1)`` (wrong float64 weights under ``jit``, found by a test).
    ``max`` with the smallest normal number is continuous, so no copy can disagree.
    """
    xp = namespace(r2)
    tiny = xp.finfo(xp.result_type(r2, xp.float32)).tiny
    return xp.where(r2 > 0, xp.sqrt(xp.maximum(r2, tiny)), 0.0)


def inside_ball(r2, log_value: Callable):
    """``log_value(r2)`` inside the open unit ball, ``-inf`` outside, NaN-free gradients."""
    xp = namespace(r2)
    mask = r2 < 1.0
    safe = xp.where(mask, r2, 0.0)
    return xp.where(mask, log_value(safe), -xp.inf)


def gaussian(r2):
    """Gaussian: K(u) = exp(−u²/2) / √(2π). The bandwidth is the standard deviation."""
    return -0.5 * r2


def boxcar(r2):
    """Boxcar (uniform): K(u) = 1/2 for |u| < 1, else 0. The bandwidth is the half-width."""
    return inside_ball(r2, namespace(r2).zeros_like)


def constant(r2):
    """Constant: K(u) = 1 for every u (improper). Any bandwidth gives average pooling."""
    return namespace(r2).zeros_like(r2)


def triangular(r2):
    """Triangular: K(u) = 1 − |u| for |u| < 1, else 0. The bandwidth is the half-width."""
    return inside_ball(r2, lambda s: namespace(s).log1p(-safe_sqrt(s)))


def epanechnikov(r2):
    """Epanechnikov: K(u) = 3/4 (1 − u²) for |u| < 1, else 0. The bandwidth is the half-width."""
    return inside_ball(r2, lambda s: namespace(s).log1p(-s))


def tricube(r2):
    """Tricube: K(u) = 70/81 (1 − |u|³)³ for |u| < 1, else 0. The bandwidth is the half-width."""
    return inside_ball(r2, lambda s: 3.0 * namespace(s).log1p(-(safe_sqrt(s) * s)))


def biweight(r2):
    """Biweight (quartic): K(u) = 15/16 (1 − u²)² for |u| < 1, else 0. The bandwidth is the
    half-width."""
    return inside_ball(r2, lambda s: 2.0 * namespace(s).log1p(-s))


def triweight(r2):
    """Triweight: K(u) = 35/32 (1 − u²)³ for |u| < 1, else 0. The bandwidth is the
    half-width."""
    return inside_ball(r2, lambda s: 3.0 * namespace(s).log1p(-s))


def laplacian(r2):
    """Laplacian: K(u) = exp(−|u|) / 2. The bandwidth is the scale (standard deviation √2·h)."""
    return -safe_sqrt(r2)


def cosine(r2):
    """Cosine: K(u) = π/4 cos(πu/2) for |u| < 1, else 0. The bandwidth is the half-width."""
    xp = namespace(r2)
    return inside_ball(r2, lambda s: xp.log(xp.cos(0.5 * xp.pi * safe_sqrt(s))))


def dot(score):
    """Dot product: K(q, k) = exp(q·k / h), softmax attention with temperature h.

    With a per-dimension bandwidth the score is Σ_j q_j k_j / h_j.
    """
    return score


def even_moment(base: str, m: int) -> Fraction:
    """``∫ u^(2m) K(u) du`` of the normalised one-dimensional ``base``, exactly."""
    if base == "gaussian":  # (2m − 1)!!
        return Fraction(math.prod(range(1, 2 * m, 2)))
    return Fraction(3, (2 * m + 1) * (2 * m + 3))  # epanechnikov: 3/4 ∫(u^2m − u^(2m+2))


def moment_polynomial(base: str, order: int) -> tuple[float, ...]:
    """``P`` with ``∫ u^(2i) P(u²) K(u) du = [i = 0]`` for ``2i < order``: a linear system
    in the base's even moments, solved in exact rationals."""
    size = order // 2
    rows = [[even_moment(base, i + j) for j in range(size)] + [Fraction(i == 0)]
            for i in range(size)]  # fmt: skip
    for col in range(size):  # Gauss–Jordan (the moment matrix is positive definite)
        pivot = rows[col][col]
        rows[col] = [entry / pivot for entry in rows[col]]
        for row in range(size):
            if row != col:
                factor = rows[row][col]
                rows[row] = [a - factor * b for a, b in zip(rows[row], rows[col], strict=True)]
    return tuple(float(row[-1]) for row in rows)


#: The smallest padded size of :class:`HostProfile`'s programs.
HOST_PROFILE_MIN_SIZE = 1024


class HostProfile:
    """A callable's log profile on NumPy arrays: one small jitted program of the profile
    alone (elementwise, float64, on sizes padded to powers of two), so that a new Python
    kernel on small NumPy data costs ~0.05 s, not a whole pooling program's compilation
    (0.6–0.8 s for the textbook's 40 × 100 points)."""

    def __init__(self, traced: Callable[[Any], Any]) -> None:
        self.traced = traced
        self.program: Callable[[Any], Any] | None = None

    def __call__(self, r2: Any) -> np.ndarray:
        import jax

        from .._support.interop import precision_scope

        flat = np.asarray(r2, np.float64).reshape(-1)
        padded = np.zeros(max(HOST_PROFILE_MIN_SIZE, 1 << max(flat.size - 1, 0).bit_length()))
        padded[: flat.size] = flat
        with precision_scope(np.float64):
            if self.program is None:
                self.program = jax.jit(self.traced)
            program = self.program
            found = np.array(program(padded), np.float64)  # (writable: shifted after)
        return found[: flat.size].reshape(np.shape(r2))
