"""Kernels of the great-circle distance: rows ``(latitude, longitude)`` in radians on the
unit sphere, as scikit-learn's ``metric="haversine"`` takes them.

A key's weight is ``K(θ / h)``, ``θ`` the angle between query and key (the haversine
distance) and ``h`` one bandwidth in radians. The sums are those of the rows' unit vectors
``e = (cos φ cos λ, cos φ sin λ, sin φ)`` in three columns with bandwidth 1 under the
kernel of their chord ``c = ‖e_q − e_k‖ = 2 sin(θ/2)`` (:func:`arc_kernel`), so every
exact engine serves them. A density is per steradian: it divides by

.. math:: C(h) = \\int_{S^2} K(θ/h) \\, dA = 2π \\int_0^π K(θ/h) \\sin θ \\, dθ,

the kernel's mass on the sphere (``2π h² ∫ K(u) u du`` in the limit of small ``h``,
the plane's constant, which scikit-learn uses at every ``h``).

The unit vectors carry an absolute rounding error of about ``2e-16``, so ``θ`` is exact
to that much (about a nanometre on the Earth) and ``θ / h`` to ``2e-16 / h``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from typing import Any

import numpy as np

from .._support.validation import check_points, is_jax, is_traced
from .profiles import namespace, safe_sqrt
from .record import Kernel

__all__ = ["HAVERSINE", "arc_kernel", "haversine", "is_haversine", "on_sphere", "to_chords"]

#: The ``norm`` of a kernel of the great-circle distance.
HAVERSINE = "haversine"


def haversine(kernel: Kernel) -> Kernel:
    """``kernel`` of the great-circle distance between ``(latitude, longitude)`` rows."""
    if kernel.similarity != "distance" or kernel.product or kernel.base is not None:
        raise ValueError(
            f"kernel: the haversine distance takes a radial, non-negative distance kernel; "
            f"received {kernel.name!r}"
        )
    if kernel.norm == HAVERSINE:
        return kernel
    return dataclasses.replace(
        kernel,
        name=f"{kernel.name.split('-l')[0]}-{HAVERSINE}",
        norm=HAVERSINE,
        quadratic=None,
    )


def is_haversine(kernel: Any) -> bool:
    return isinstance(kernel, Kernel) and kernel.norm == HAVERSINE


def on_sphere(points: Any, name: str) -> Any:
    """``(n, 3)`` unit vectors of checked ``(latitude, longitude)`` rows ``points (n, 2)``
    in radians (NumPy in float64, or JAX: gradients flow through)."""
    if points.shape[1] != 2:
        raise ValueError(
            f"{name}: the haversine distance takes rows (latitude, longitude) in radians, "
            f"shape (n, 2); received shape {tuple(points.shape)}"
        )
    dtype = None
    xp: Any = np
    if is_jax(points):
        import jax.numpy as jnp

        xp = jnp
    else:  # in float64, returned in the rows' own precision
        dtype = points.dtype if points.dtype in (np.float32, np.float64) else np.float64
        points = np.asarray(points, np.float64)
    if not is_traced(points) and points.shape[0]:
        largest = float(xp.max(xp.abs(points[:, 0])))
        if not largest <= math.pi / 2:
            raise ValueError(
                f"{name}: latitudes are radians in [-pi/2, pi/2]; received one of "
                f"{largest:g} in absolute value (degrees? np.radians converts them)"
            )
    lat, lon = points[:, 0], points[:, 1]
    # latitude ±π/2 (rounded, 6e-17 short of it) is the pole, whatever the longitude
    across = xp.where(xp.abs(lat) >= math.pi / 2, 0.0, xp.cos(lat))
    e = xp.stack([across * xp.cos(lon), across * xp.sin(lon), xp.sin(lat)], axis=1)
    return e if dtype is None else e.astype(dtype)


def _bandwidth(bandwidth: Any) -> float:
    if is_traced(bandwidth):
        raise ValueError(
            "bandwidth: a haversine kernel takes a fixed bandwidth in radians; received a "
            "traced value (differentiate with respect to queries, keys and values)"
        )
    value = np.asarray(bandwidth, np.float64).ravel()
    if not (value.size and np.all(value == value[0]) and np.isfinite(value[0]) and value[0] > 0):
        raise ValueError(
            f"bandwidth: a haversine kernel takes one positive bandwidth in radians (or "
            f"the same one for both columns); received {bandwidth!r}"
        )
    return float(value[0])


@functools.lru_cache(maxsize=64)
def arc_kernel(kernel: Kernel, bandwidth: float) -> Kernel:
    """The kernel of the chord ``c`` (bandwidth 1) that is ``kernel`` of ``θ / bandwidth``,
    ``θ = 2 arcsin(c / 2)``, with its integrals on the sphere over ``h²``
    (:func:`masses_per_square`)."""
    base = kernel.log_profile
    h = bandwidth

    def log_profile(r2: Any) -> Any:
        xp = namespace(r2)
        half_chord = xp.minimum(safe_sqrt(r2) / 2, 1.0)
        theta = 2 * xp.arcsin(half_chord)
        return base((theta / h) ** 2)

    log_profile.__doc__ = f"{kernel.doc} Of the great-circle distance, bandwidth {h!r} rad."
    reach = h * kernel.support  # the angle beyond which the kernel is zero
    return Kernel(
        f"{kernel.name}-arc-{h!r}",
        log_profile,
        # a compact kernel stays compact (its empty rows, its methods): its chord's reach,
        # a rounding wider, so that the edge is the profile's own, decided on θ
        support=2 * math.sin(reach / 2) * (1 + 1e-12) if reach < math.pi else math.inf,
        host=True,
        integrals=masses_per_square(kernel, h),  # the density divides by h² apart
    )


def sphere_integrals(kernel: Kernel, bandwidth: float) -> tuple[float, float]:
    """``(∫ K(θ/h) dA, ∫ K(θ/h)² dA)`` over the unit sphere."""
    first, second = masses_per_square(kernel, bandwidth)
    return first * bandwidth**2, second * bandwidth**2


def masses_per_square(kernel: Kernel, bandwidth: float) -> tuple[float, float]:
    """:func:`sphere_integrals` over ``h²`` (finite for any ``h``), by quadrature in
    ``u = θ/h``: ``2π ∫₀^{π/h} K(u)^k sin(h u)/h du``, split at doublings of ``u`` so
    that a narrow kernel is seen."""
    from scipy import integrate

    h = bandwidth
    upper = min(math.pi / h, kernel.support)

    def profile(u: float) -> float:
        log_k = kernel.log_profile(np.asarray(u * u, np.float64))
        if not isinstance(log_k, np.ndarray | np.generic):  # a profile in JAX only
            import jax.numpy as jnp

            from .._support.interop import precision_scope

            with precision_scope(np.float64):
                log_k = np.asarray(kernel.log_profile(jnp.asarray(u * u, jnp.float64)))
        return float(np.exp(log_k))

    cuts = [0.0, *(2.0**k for k in range(-4, 12) if 2.0**k < upper), upper]

    def mass(power: int) -> float:
        total = sum(
            integrate.quad(lambda u: profile(u) ** power * (math.sin(h * u) / h), a, b,
                           epsabs=0.0, epsrel=1e-13, limit=200)[0]
            for a, b in itertools.pairwise(cuts)
        )  # fmt: skip
        return 2 * math.pi * total

    return mass(1), mass(2)


def to_chords(
    queries: Any,
    keys: Any,
    kernel: Kernel,
    bandwidth: Any,
    names: tuple[str, str] = ("queries", "keys"),
) -> tuple[Any, Any, Kernel]:
    """``(queries, keys, kernel)`` in the chords' terms: unit vectors ``(·, 3)`` of the
    checked rows and the arc kernel of ``bandwidth``, which the sums take with bandwidth 1.
    ``names``: the arguments' names in the caller's errors."""
    keys = on_sphere(check_points(keys, names[1]), names[1])
    queries = on_sphere(check_points(queries, names[0], dims=2), names[0])
    return queries, keys, arc_kernel(kernel, _bandwidth(bandwidth))
