"""Integrals of the kernels: ``∫K`` and ``∫K²`` over ``ℝ^d`` (the constants of densities
and bands) and the one-dimensional kernels' distribution functions."""

from __future__ import annotations

import math
import warnings
from functools import lru_cache

import numpy as np

from .. import kernels as _kernels
from .norms import check_planar, unit_ball_volume

__all__ = ["CDF_KERNELS", "density_integral", "kernel_integrals", "log_kernel_cdf"]


@lru_cache(maxsize=64)
def kernel_integrals(kernel: _kernels.Kernel, d: int) -> tuple[float, float]:
    """``(∫K, ∫K²)`` over ``ℝ^d`` of the radial kernel ``K(‖u‖)``, unnormalised.

    By radial quadrature, ``∫ g(‖u‖) du = S_{d−1} ∫₀^∞ g(r) r^{d−1} dr`` with the
    sphere's area ``S_{d−1} = 2π^{d/2} / Γ(d/2)`` — for a Minkowski norm ``d V_p(d)``
    (:mod:`attnpool.kernels.norms`). A product kernel's integrals are the
    one-dimensional ones to the power ``d``.

    >>> a, b = kernel_integrals(_kernels.get("gaussian"), 1)   # √(2π), √π
    >>> round(a, 6), round(b, 6)
    (2.506628, 1.772454)
    """
    if kernel.integrals is not None:  # a domain of its own (the sphere)
        return kernel.integrals
    check_planar(kernel)
    if kernel.product and d > 1:
        first, second = kernel_integrals(kernel, 1)
        return first**d, second**d
    if _kernels.is_gaussian(kernel):  # exp(−r²/2): (2π)^{d/2} and π^{d/2}
        return (2 * math.pi) ** (d / 2), math.pi ** (d / 2)
    import jax.numpy as jnp

    from .._support.interop import precision_scope

    # the norm's unit sphere: d V_p(d) (Euclidean: 2π^{d/2} / Γ(d/2))
    sphere = d * unit_ball_volume(d, kernel.norm)

    def profile(r):
        with precision_scope(np.float64), np.errstate(over="ignore"):
            return float(np.exp(kernel.log_profile(jnp.asarray(r * r, jnp.float64))))

    upper = kernel.support if kernel.compact else math.inf
    first = _radial(lambda r: profile(r) * r ** (d - 1), upper)
    second = _radial(lambda r: profile(r) ** 2 * r ** (d - 1), upper)
    return sphere * first, sphere * second


def _radial(integrand, upper: float) -> float:
    """``∫₀^upper integrand(r) dr`` of a non-negative integrand by adaptive quadrature.

    Where the quadrature does not converge on an unbounded range, the integral is summed
    over ``[0, 1]`` and the shells ``[2^k, 2^{k+1}]``: finite once a shell adds less than
    :data:`SHELL_TOLERANCE` of the total (a kernel vanishing beyond a support the
    quadrature did not see, a rough profile), else ``∞`` — a tail that decays like
    ``r^{−d}`` or slower adds as much in every shell (the Cauchy kernel in two columns,
    the constant kernel)."""
    from scipy import integrate

    def quad(low: float, high: float) -> tuple[float, bool]:
        value, _, _, *failure = integrate.quad(integrand, low, high, limit=200, full_output=1)
        return float(value), not failure

    value, converged = quad(0.0, upper)
    if converged or not math.isinf(upper):
        return _checked(value, converged)
    total, converged = quad(0.0, 1.0)
    for k in range(SHELLS):
        shell, within = quad(2.0**k, 2.0 ** (k + 1))
        total, converged = total + shell, converged and within
        if shell <= SHELL_TOLERANCE * total:
            return _checked(total, converged)
    return math.inf


def _checked(value: float, converged: bool) -> float:
    """``value``, with a warning where the quadrature did not reach its tolerance."""
    if not converged:
        warnings.warn(
            f"kernel integral: the quadrature did not reach its tolerance on this kernel's "
            f"profile (a rough or oscillating one): ∫ = {value:.10g} is approximate, and "
            "so are the densities and bands normalised by it",
            RuntimeWarning,
            stacklevel=3,
        )
    return value


#: Dyadic shells :func:`_radial` sums out to ``2^SHELLS`` before it calls a tail infinite,
#: and the share of the total below which a shell ends the sum.
SHELLS = 64
SHELL_TOLERANCE = 1e-13


def density_integral(kernel: _kernels.Kernel, d: int) -> float:
    """``∫K`` over ``ℝ^d``, what a density divides by, or a ``ValueError`` naming the
    kernel where it is not a distance kernel of finite, positive integral."""
    first = kernel_integrals(kernel, d)[0] if kernel.similarity == "distance" else 0.0
    if not (0 < first < math.inf):
        raise ValueError(
            f"kernel: a density needs a distance kernel of finite integral; received "
            f"{kernel.name!r}"
        )
    return first


def log_kernel_cdf(name: str, u: np.ndarray) -> np.ndarray:
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
    elif name == "biweight":
        g = 0.5 + 15 / 16 * (c - 2 * c**3 / 3 + c**5 / 5)
    elif name == "triweight":
        g = 0.5 + 35 / 32 * (c - c**3 + 3 * c**5 / 5 - c**7 / 7)
    else:  # cosine
        g = (1 + np.sin(np.pi * c / 2)) / 2
    with np.errstate(divide="ignore"):
        return np.log(np.clip(g, 0.0, 1.0))


#: Kernels whose distribution functions :func:`kernel_cdf` knows (one dimension, and in
#: several as products — the Gaussian's product is itself).
CDF_KERNELS = ("gaussian", "boxcar", "triangular", "epanechnikov", "tricube", "cosine", "laplacian",
               "biweight", "triweight")  # fmt: skip
