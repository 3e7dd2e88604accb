"""The kernel record: a kernel's log profile and the metadata bandwidth rules, moments
and methods read (registered and resolved by name in :mod:`attnpool.kernels`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from . import profiles as profiles

#: ``log K`` of the squared scaled distance, elementwise (JAX-traceable).
LogProfile = Callable[[Any], Any]

#: The built-in records by name, filled by :mod:`attnpool.kernels` as it makes them: a
#: pickled built-in (a Dask task's argument, a saved model) comes back as the same
#: record, which the methods built for it recognise (a copy would be a user's kernel).
BUILT_IN: dict[str, Kernel] = {}


def built_in(name: str) -> Kernel:
    """The built-in record ``name`` (what a pickled built-in is rebuilt by)."""
    return BUILT_IN[name]


@dataclass(frozen=True)
class Kernel:
    """A kernel for attention pooling.

    Attributes
    ----------
    name : str
        Registry name.
    log_profile : callable
        ``log K`` as a function of the squared scaled distance ``r2 >= 0``
        (elementwise, traceable by JAX); ``-inf`` where the kernel is zero. For
        ``similarity="dot"`` it receives the score ``q·k / h`` instead.
    support : float
        Radius of the support in scaled units (``inf`` for unbounded kernels).
    variance : float or None
        ``∫ u² K(u) du`` of the normalised one-dimensional kernel.
    roughness : float or None
        ``R(K) = ∫ K(u)² du`` of the normalised one-dimensional kernel.
    log_norm : float
        Log of the constant that normalises the one-dimensional kernel.
    similarity : {"distance", "dot"}
        Whether the kernel acts on the scaled distance or on the scaled dot product.
    quadratic : float or None
        Set when ``log K(r2) = quadratic · r2`` exactly (the Gaussian: −1/2). Such a
        kernel's log weights are a matrix product, the fast form in many dimensions.
    product : bool
        A product kernel: ``log K = Σ_j log_profile(u_j²)`` over the coordinates (the
        one-dimensional kernel in each), not ``log_profile(Σ_j u_j²)``.
    order : int
        The kernel's order ``ν``: its first nonzero moment past ``∫K`` is ``∫ u^ν K``
        (2 for every non-negative kernel).
    polynomial : tuple of float
        A higher-order kernel's ``P`` (coefficients of ``1, u², u⁴, …``): ``K_ν(u) =
        P(u²) K(u)`` with ``K`` the record ``base``, in one dimension (a product over
        the coordinates in several). Empty for ordinary kernels.
    base : Kernel or None
        The non-negative kernel a higher-order kernel multiplies.
    host : bool
        ``log_profile`` also takes NumPy arrays, in float64, and returns NumPy (a
        callable's kernel, :meth:`from_function`): small NumPy problems are then summed
        on the host with no program to build for each new function.
    norm : float or str
        The Minkowski ``p`` of the distance the kernel sees (2: Euclidean; a record of
        another norm comes from :func:`attnpool.kernels.with_norm`), or ``"haversine"``:
        the great-circle distance of ``(latitude, longitude)`` rows
        (:mod:`attnpool.kernels.sphere`).
    integrals : tuple of float or None
        ``(∫K, ∫K²)`` over the kernel's own domain where it is not ``ℝ^d``, in units of
        the squared bandwidth (a kernel of the chord on the sphere, for one bandwidth
        ``h``: its masses over ``h²``, which the density divides by apart); None for the
        others.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.kernels.get("epanechnikov").support              # zero beyond |u| = 1
    1.0
    >>> cauchy = attnpool.Kernel.from_function(lambda u: 1 / (1 + u**2), name="cauchy")
    >>> attnpool.nadaraya_watson(data.x_train, data.y_train, [2.0], cauchy,
    ...                          bandwidth=0.5).round(3)
    array([3.347])

    References
    ----------
    Silverman, B. W. (1986). *Density Estimation for Statistics and Data Analysis*,
    section 3.3 (the kernels and their constants). Wand, M. P. & Jones, M. C. (1995).
    *Kernel Smoothing*, chapter 2.7 (``R(K)`` and ``μ₂(K)``). Vaswani, A. et al. (2017).
    Attention is all you need. *NeurIPS* 30 (the ``dot`` score).
    """

    name: str
    log_profile: LogProfile
    support: float = math.inf
    variance: float | None = None
    roughness: float | None = None
    log_norm: float = 0.0
    similarity: Literal["distance", "dot"] = "distance"
    quadratic: float | None = None
    product: bool = False
    order: int = 2
    polynomial: tuple[float, ...] = ()
    base: Kernel | None = None
    host: bool = False
    norm: float | str = 2.0
    integrals: tuple[float, float] | None = None

    def __reduce_ex__(self, protocol: Any) -> Any:
        if BUILT_IN.get(self.name) is self:  # by name: the same record once unpickled
            return built_in, (self.name,)
        return super().__reduce_ex__(protocol)

    @property
    def doc(self) -> str:
        """The kernel's formula and the meaning of its bandwidth."""
        return (self.log_profile.__doc__ or "").strip()

    @property
    def compact(self) -> bool:
        """True when the kernel is zero beyond a finite radius."""
        return math.isfinite(self.support)

    def __call__(self, u: np.ndarray) -> np.ndarray:
        """Evaluate the normalised one-dimensional kernel ``K(u)`` (for plots).

        For ``dot`` the argument is the score and the profile is ``exp(score)``; a
        higher-order kernel is signed.
        """
        import jax.numpy as jnp

        from .._support.interop import precision_scope

        u = np.asarray(u, dtype=np.float64)
        if self.base is not None:
            return np.asarray(
                self.base(u) * np.polynomial.polynomial.polyval(u**2, self.polynomial)
            )
        arg = u if self.similarity == "dot" else u**2
        with precision_scope(np.float64):
            log_k = np.asarray(self.log_profile(jnp.asarray(arg)))
        return np.asarray(np.exp(self.log_norm + log_k))

    @classmethod
    def from_function(
        cls, function: Callable[..., Any], *, name: str | None = None, support: float = math.inf
    ) -> Kernel:
        """Wrap ``function(u) -> K(u) >= 0`` of the scaled distance ``u >= 0``.

        ``function`` must be traceable by JAX (use ``jax.numpy``). It is probed
        once on ``u ∈ [0, 10]``: a negative or NaN value raises ``ValueError``.

        >>> import jax.numpy as jnp
        >>> k = Kernel.from_function(lambda u: 1 / (1 + u**2), name="cauchy")
        >>> float(k.log_profile(jnp.asarray(1.0)))  # log(1 / (1 + 1))
        -0.693...
        """
        import jax.numpy as jnp

        label = str(name or getattr(function, "__name__", "custom"))
        probe = np.asarray(function(jnp.linspace(0.0, 10.0, 201)))
        if probe.shape != (201,) or not np.all(probe >= 0):
            raise ValueError(
                f"kernel: a callable kernel must map the scaled distance u >= 0 elementwise to "
                f"K(u) >= 0; {label!r} returned shape {probe.shape} with values in "
                f"[{np.nanmin(probe) if probe.size else 'none'}, "
                f"{np.nanmax(probe) if probe.size else 'none'}] (NaN present: "
                f"{bool(np.isnan(probe).any())})"
            )

        def traced(r2: Any) -> Any:
            return jnp.log(function(profiles.safe_sqrt(r2)))

        on_host = profiles.HostProfile(traced)

        def log_profile(r2: Any) -> Any:
            if isinstance(r2, np.ndarray | np.generic):  # host sums: float64, NumPy out
                return on_host(r2)
            return traced(r2)

        log_profile.__doc__ = function.__doc__ or f"User kernel {label!r}: K(u) = {label}(u)."
        return cls(label, log_profile, support=support, host=True)
