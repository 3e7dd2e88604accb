"""Estimated distribution functions: products of one-dimensional kernel distribution
functions, ``F̂(x) = Σ_i w_i Π_j G((x_j − x_ij)/h_j) / Σ w``, summed in the log domain.
"""

from __future__ import annotations

import math

import numpy as np

from . import kernels as _kernels
from ._validation import check_bandwidth, check_points
from .observation_weights import check_weights

__all__ = ["CDF_KERNELS", "kernel_cdf"]


def _log_kernel_cdf(name: str, u: np.ndarray) -> np.ndarray:
    """``log G(u)``, ``G`` the distribution function of the normalised one-dimensional
    kernel ``name`` (elementwise, float64; ``−inf`` where it is 0)."""
    from scipy import special

    if name == "gaussian":
        return special.log_ndtr(u)
    if name == "laplacian":
        return np.where(u < 0, u - math.log(2), np.log1p(-0.5 * np.exp(-np.abs(u))))
    c = np.clip(u, -1.0, 1.0)
    a = np.abs(c)
    if name == "boxcar":
        g = (c + 1) / 2
    elif name == "triangular":
        g = np.where(c < 0, (1 + c) ** 2 / 2, 1 - (1 - c) ** 2 / 2)
    elif name == "epanechnikov":
        g = (2 + 3 * c - c**3) / 4
    elif name == "tricube":  # ∫₀^a 70/81 (1 − t³)³ dt, by symmetry
        half = 70 / 81 * (a - 3 * a**4 / 4 + 3 * a**7 / 7 - a**10 / 10)
        g = 0.5 + np.sign(c) * half
    else:  # cosine
        g = (1 + np.sin(np.pi * c / 2)) / 2
    with np.errstate(divide="ignore"):
        return np.log(np.clip(g, 0.0, 1.0))


#: Kernels whose distribution functions :func:`kernel_cdf` knows (one dimension, and in
#: several as products — the Gaussian's product is itself).
CDF_KERNELS = ("gaussian", "boxcar", "triangular", "epanechnikov", "tricube", "cosine", "laplacian")


def kernel_cdf(x_train, x_query, *, kernel="gaussian", bandwidth=1.0, weights=None) -> np.ndarray:
    """The estimated distribution function ``F̂(x) = Σ_i w_i Π_j G((x_j − x_ij)/h_j) / Σ w``
    at ``x_query (k,) | (k, d)`` (``G``: the one-dimensional kernel's distribution
    function): ``(k,)`` in float64, non-decreasing in each coordinate, in ``[0, 1]``. In
    one dimension every kernel of :data:`CDF_KERNELS`; in several the Gaussian and the
    ``-product`` kernels (a radial kernel's distribution function is no product)."""
    from .engines.numpy_engine import NUMPY_CHUNK_PAIRS

    x = np.asarray(check_points(x_train, "x_train"), np.float64)
    q = np.asarray(check_points(x_query, "x_query", dims=x.shape[1]), np.float64)
    record = _kernels.for_dimensions(_kernels.get(kernel), x.shape[1])
    name = record.name.removesuffix("-product")
    several = x.shape[1] > 1 and not (record.product or name == "gaussian")
    if not _kernels.is_builtin(record) or name not in CDF_KERNELS or several:
        raise ValueError(
            f"kernel: distribution functions are products of one-dimensional ones: "
            f"{', '.join(CDF_KERNELS)} in one dimension, the Gaussian and the '-product' "
            f"kernels in several; received {record.name!r} in {x.shape[1]} dimension(s)"
        )
    h = np.asarray(check_bandwidth(bandwidth, x.shape[1]), np.float64)
    w = np.ones(x.shape[0]) if weights is None else check_weights(weights, x.shape[0])
    log_w = np.log(np.asarray(w, np.float64) / np.sum(w))
    result = np.empty(q.shape[0])
    step = max(1, NUMPY_CHUNK_PAIRS // x.shape[0])
    with np.errstate(divide="ignore"):
        for start in range(0, q.shape[0], step):
            rows = slice(start, start + step)
            log_g = log_w[None, :] + sum(
                _log_kernel_cdf(name, (q[rows, j, None] - x[None, :, j]) / h[j])
                for j in range(x.shape[1])
            )
            top = np.max(log_g, axis=1)
            safe = np.where(np.isfinite(top), top, 0.0)
            result[rows] = np.exp(safe) * np.sum(np.exp(log_g - safe[:, None]), axis=1)
    return np.minimum(result, 1.0)
