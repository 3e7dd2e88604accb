"""Densities with a full bandwidth matrix: the data seen through its Cholesky factor.

For a radial kernel ``K`` and ``H = L Lᵀ`` (``L`` lower triangular),
``|H|^(−1/2) K(H^(−1/2) u)`` depends on ``u`` only through ``uᵀ H⁻¹ u = ‖L⁻¹ u‖²``, so
``f̂_H(x) = |L|⁻¹ ĝ(L⁻¹ x)`` with ``ĝ`` the estimate of the rows ``L⁻¹ X_i`` at bandwidth 1:
every engine serves a matrix unchanged. ``H = diag(h²)`` is the diagonal bandwidth ``h``
(for the Gaussian, ``H`` is the kernel's covariance, as in R's ``ks``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.linalg import solve_triangular

from .. import kernels as _kernels

__all__ = ["cholesky_factor", "is_matrix", "whitened"]


def is_matrix(bandwidth: Any) -> bool:
    """Whether ``bandwidth`` is given as a matrix (two dimensions)."""
    return np.ndim(bandwidth) == 2


def cholesky_factor(bandwidth: Any, d: int, kernel: _kernels.Kernel) -> np.ndarray:
    """The lower Cholesky factor ``(d, d)`` of a bandwidth matrix, or a ``ValueError``
    naming what is wrong (its shape, symmetry, definiteness, or a kernel that is not
    radial)."""
    if kernel.similarity != "distance" or (kernel.product and d > 1):
        raise ValueError(
            f"bandwidth: a bandwidth matrix needs a radial kernel; received {kernel.name!r}"
        )
    matrix = np.asarray(bandwidth, float)
    if matrix.shape != (d, d) or not np.all(np.isfinite(matrix)):
        raise ValueError(
            f"bandwidth: expected a finite ({d}, {d}) matrix for {d} columns; received an "
            f"array of shape {matrix.shape}"
        )
    if not np.allclose(matrix, matrix.T, rtol=1e-12, atol=0):
        raise ValueError("bandwidth: expected a symmetric matrix; received an asymmetric one")
    try:
        return np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        raise ValueError("bandwidth: expected a positive definite matrix") from None


def whitened(points: Any, factor: np.ndarray) -> np.ndarray:
    """``L⁻¹ x`` of each row of ``points (n, d)``."""
    return np.asarray(solve_triangular(factor, np.asarray(points, float).T, lower=True).T)
