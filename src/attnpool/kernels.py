"""Kernels: records of a kernel's log profile and the metadata bandwidth rules need.

A kernel is stored by its *log profile* as a function of the squared scaled
distance ``r2 = ‖u‖² = Σ_j ((q_j − k_j) / h_j)²``::

    log K(r2)  (−inf outside a compact support)

Working with ``r2`` (not ``‖u‖``) keeps smooth kernels differentiable where a
query equals a key, and working in logs lets pooling normalise with
log-sum-exp, so that no weight underflows to 0/0. Normalising constants cancel
in attention weights; they are kept in ``log_norm`` for plots and for the
moments below. In more than one dimension a distance kernel is *radial*, ``K(‖u‖)``
with ``u`` the per-dimension scaled difference, or — the ``-product`` records, as
statsmodels and R's np define their kernels — a *product* of one-dimensional kernels,
``Π_j K(|u_j|)``, supported on the cube ``|u_j| < 1`` instead of the ball. The two agree
in one dimension, and for the Gaussian in any (its product is radial).

The ``dot`` kernel is the exception: its log profile is the score itself,
``q·k / h`` (softmax attention with temperature ``h``).

Built-in kernels (``u`` is the scaled distance, ``h`` the bandwidth):

===============  ======================================  =====================
name             K(u), normalised in 1-D                  bandwidth h is
===============  ======================================  =====================
``gaussian``     exp(−u²/2) / √(2π)                       the standard deviation
``boxcar``       1/2 for |u| < 1                          the half-width
``constant``     1 (improper)                             irrelevant: average pooling
``triangular``   1 − |u| for |u| < 1                      the half-width
``epanechnikov`` 3/4 (1 − u²) for |u| < 1                 the half-width
``tricube``      70/81 (1 − |u|³)³ for |u| < 1            the half-width
``laplacian``    exp(−|u|) / 2                            the scale (sd = √2 h)
``cosine``       π/4 cos(πu/2) for |u| < 1                the half-width
``dot``          exp(q·k / h)                             the softmax temperature
===============  ======================================  =====================

the products ``boxcar-product`` (statsmodels' and np's ``uniform``),
``triangular-product``, ``epanechnikov-product``, ``tricube-product`` and
``cosine-product``: ``Π_j K(u_j)``, each factor as above; and the higher-order kernels
``gaussian-order4``, ``-order6``, ``-order8`` and ``epanechnikov-order4`` … ``-order8``
(:func:`higher_order`, R np's ``ckerorder``), signed, products in several dimensions.

>>> from attnpool import kernels
>>> kernels.get("epanechnikov").support
1.0
>>> "gaussian" in kernels.names()
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from . import kernel_profiles as profiles

__all__ = ["Kernel", "get", "higher_order", "names", "register"]

#: ``log K`` of the squared scaled distance, elementwise (JAX-traceable).
LogProfile = Callable[[Any], Any]

#: Dimensions from which the Gaussian's log weights are formed as matrix products,
#: ``q·k − |k|²/2`` (below it, by coordinate differences).
MATMUL_MIN_DIM = 3


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

        from ._interop import precision_scope

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

        on_host = _HostProfile(traced)

        def log_profile(r2: Any) -> Any:
            if isinstance(r2, np.ndarray | np.generic):  # host sums: float64, NumPy out
                return on_host(r2)
            return traced(r2)

        log_profile.__doc__ = function.__doc__ or f"User kernel {label!r}: K(u) = {label}(u)."
        return cls(label, log_profile, support=support, host=True)


class _HostProfile:
    """A callable's log profile on NumPy arrays: one small jitted program of the profile
    alone (elementwise, float64, on sizes padded to powers of two), so that a new Python
    kernel on small NumPy data costs ~0.05 s, not a whole pooling program's compilation
    (0.6–0.8 s for the textbook's 40 × 100 points)."""

    def __init__(self, traced: Callable[[Any], Any]) -> None:
        self.traced = traced
        self.program: Callable[[Any], Any] | None = None

    def __call__(self, r2: Any) -> np.ndarray:
        import jax

        from ._interop import precision_scope

        flat = np.asarray(r2, np.float64).reshape(-1)
        padded = np.zeros(max(HOST_PROFILE_MIN_SIZE, 1 << max(flat.size - 1, 0).bit_length()))
        padded[: flat.size] = flat
        with precision_scope(np.float64):
            if self.program is None:
                self.program = jax.jit(self.traced)
            program = self.program
            found = np.array(program(padded), np.float64)  # (writable: shifted after)
        return found[: flat.size].reshape(np.shape(r2))


#: The smallest padded size of :class:`_HostProfile`'s programs.
HOST_PROFILE_MIN_SIZE = 1024

_REGISTRY: dict[str, Kernel] = {}


def register(kernel: Kernel, *, overwrite: bool = False) -> Kernel:
    """Add ``kernel`` to the registry under ``kernel.name`` and return it."""
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel: expected a Kernel record; received {type(kernel).__name__}")
    if kernel.name in _REGISTRY and not overwrite:
        raise ValueError(
            f"kernel: {kernel.name!r} is already registered; pass overwrite=True to replace it"
        )
    _REGISTRY[kernel.name] = kernel
    return kernel


def names() -> list[str]:
    """Names of the registered kernels, in registration order."""
    return list(_REGISTRY)


_FROM_CALLABLE: dict[Callable[..., Any], Kernel] = {}


def is_builtin(kernel: Kernel, names: Collection[str] | None = None) -> bool:
    """Whether ``kernel`` is one of the built-in records (and, given ``names``, one of
    them): the kernels whose closed forms, splits or NumPy profiles methods build in. A
    user kernel, even one registered under a built-in name, is not."""
    return _BUILTIN.get(kernel.name) is kernel and (names is None or kernel.name in names)


#: Built-in kernels whose weight never grows with the distance: the nearest key's is
#: the largest.
MONOTONE = frozenset(
    [
        "gaussian",
        "boxcar",
        "constant",
        "triangular",
        "epanechnikov",
        "tricube",
        "laplacian",
        "cosine",
    ]
)


def is_monotone(kernel: Kernel) -> bool:
    """Whether ``kernel`` is a built-in distance kernel whose weight never grows with the
    distance."""
    return is_builtin(kernel, MONOTONE)


def is_gaussian(kernel: Kernel) -> bool:
    """Whether ``kernel`` is the built-in ``"gaussian"``: the one kernel whose closed forms
    the ``fgt`` and ``native`` methods build in."""
    return is_builtin(kernel, ("gaussian",))


def for_dimensions(kernel: Kernel, d: int) -> Kernel:
    """``kernel`` as it acts in ``d`` dimensions: a built-in product kernel in one
    dimension is its one-dimensional kernel (the same function, and every method's)."""
    if kernel.product and d <= 1 and is_builtin(kernel):
        return _BUILTIN[kernel.name.removesuffix("-product")]
    return kernel


def get(kernel: str | Kernel | Callable[..., Any]) -> Kernel:
    """Resolve a kernel name, a ``Kernel`` record or a callable ``K(u)`` to a record."""
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, str):
        try:
            return _REGISTRY[kernel]
        except KeyError:
            raise ValueError(
                f"kernel: unknown kernel {kernel!r}; accepted names: {', '.join(names())}, "
                "a Kernel record or a callable K(u)"
            ) from None
    if callable(kernel):
        if kernel not in _FROM_CALLABLE:  # one record per callable keeps jit caches warm
            _FROM_CALLABLE[kernel] = Kernel.from_function(kernel)
        return _FROM_CALLABLE[kernel]
    raise TypeError(
        f"kernel: expected a kernel name, a Kernel record or a callable; "
        f"received {type(kernel).__name__}"
    )


#: The bases and orders of the built-in higher-order kernels (R np's ``ckerorder``).
HIGHER_ORDERS = {"gaussian": (4, 6, 8), "epanechnikov": (4, 6, 8)}


def _higher_order_record(base: Kernel, order: int) -> Kernel:
    name = f"{base.name}-order{order}"
    polynomial = profiles.moment_polynomial(base.name, order)
    terms = " ".join(
        f"{'−' if c < 0 else '+'} {abs(c):.6g}{f' u^{2 * j}' if j else ''}"
        for j, c in enumerate(polynomial)
    ).removeprefix("+ ")

    def signed(r2: Any) -> Any:
        raise ValueError(
            f"kernel: {name!r} is a higher-order kernel, negative in places, with no log "
            "weight; attention_pool and nadaraya_watson (methods 'auto', 'dense', 'stream') "
            "and the NadarayaWatson and LocalLinear estimators take it, this function takes "
            "non-negative kernels"
        )

    signed.__doc__ = (
        f"Order-{order} {base.name}: K(u) = ({terms}) · {base.name}(u); its moments "
        f"∫u^j K vanish for 0 < j < {order}. The bandwidth is the {base.name}'s."
    )
    return Kernel(name, signed, base.support, None, None, base.log_norm, product=True,
                  order=order, polynomial=polynomial, base=base)  # fmt: skip


def higher_order(kernel: str | Kernel, order: int) -> Kernel:
    """The order-``order`` kernel on ``kernel`` (R np's ``ckerorder``): ``K_ν(u) = P(u²)
    K(u)``, ``P`` the polynomial of degree ``ν − 2`` in ``u`` that makes the moments
    ``∫ u^j K_ν`` vanish for ``0 < j < ν``, so that a fit's bias is ``O(h^ν)`` instead of
    ``O(h²)`` where the function is smooth. Gaussian or Epanechnikov, order 2 (the kernel
    itself), 4, 6 or 8; products of one-dimensional kernels in several dimensions.

    >>> k = higher_order("gaussian", 4)   # (3 − u²)/2 · φ(u)
    >>> k.name, k.polynomial
    ('gaussian-order4', (1.5, -0.5))
    """
    record = get(kernel)
    orders = HIGHER_ORDERS.get(record.name, ())
    if order == 2 and is_builtin(record, HIGHER_ORDERS):
        return record
    if not (is_builtin(record, HIGHER_ORDERS) and order in orders):
        raise ValueError(
            f"order: higher-order kernels are built on {' or '.join(HIGHER_ORDERS)} with "
            f"order 2, 4, 6 or 8; received kernel {record.name!r} and order {order!r}"
        )
    return _REGISTRY[f"{record.name}-order{order}"]


_PI = math.pi
for _kernel in (
    Kernel(
        "gaussian",
        profiles.gaussian,
        math.inf,
        1.0,
        1 / (2 * math.sqrt(_PI)),
        -0.5 * math.log(2 * _PI),
        quadratic=-0.5,
    ),
    Kernel("boxcar", profiles.boxcar, 1.0, 1 / 3, 1 / 2, math.log(1 / 2)),
    Kernel("constant", profiles.constant, math.inf, math.inf, math.inf, 0.0),
    Kernel("triangular", profiles.triangular, 1.0, 1 / 6, 2 / 3, 0.0),
    Kernel("epanechnikov", profiles.epanechnikov, 1.0, 1 / 5, 3 / 5, math.log(3 / 4)),
    Kernel("tricube", profiles.tricube, 1.0, 35 / 243, 175 / 247, math.log(70 / 81)),
    Kernel("laplacian", profiles.laplacian, math.inf, 2.0, 1 / 4, math.log(1 / 2)),
    Kernel("cosine", profiles.cosine, 1.0, 1 - 8 / _PI**2, _PI**2 / 16, math.log(_PI / 4)),
    Kernel("dot", profiles.dot, math.inf, None, None, 0.0, similarity="dot"),
):
    register(_kernel)
for _name in ("boxcar", "triangular", "epanechnikov", "tricube", "cosine"):
    _one = _REGISTRY[_name]
    register(
        Kernel(
            f"{_name}-product",
            _one.log_profile,
            _one.support,
            _one.variance,
            _one.roughness,
            _one.log_norm,
            product=True,
        )
    )
for _name, _orders in HIGHER_ORDERS.items():
    for _order in _orders:
        register(_higher_order_record(_REGISTRY[_name], _order))
#: The built-in records, as registered here (a later ``register(..., overwrite=True)``
#: does not make a user kernel built in).
_BUILTIN: dict[str, Kernel] = dict(_REGISTRY)
