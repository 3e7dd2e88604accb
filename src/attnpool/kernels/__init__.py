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
``biweight``     15/16 (1 − u²)² for |u| < 1              the half-width
``triweight``    35/32 (1 − u²)³ for |u| < 1              the half-width
``dot``          exp(q·k / h)                             the softmax temperature
===============  ======================================  =====================

the products ``boxcar-product`` (statsmodels' and np's ``uniform``),
``triangular-product``, ``epanechnikov-product``, ``tricube-product``,
``cosine-product``, ``biweight-product`` and ``triweight-product``: ``Π_j K(u_j)``, each
factor as above; and the higher-order kernels
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
from typing import Any

from . import profiles as profiles
from . import record
from .norms import normed
from .record import Kernel

__all__ = [
    "Kernel",
    "get",
    "higher_order",
    "names",
    "register",
    "standard_deviation",
    "with_norm",
]

#: Dimensions from which the Gaussian's log weights are formed as matrix products,
#: ``q·k − |k|²/2`` (below it, by coordinate differences).
MATMUL_MIN_DIM = 3


_REGISTRY: dict[str, Kernel] = {}


def register(kernel: Kernel, *, overwrite: bool = False) -> Kernel:
    """Add ``kernel`` to the registry under ``kernel.name`` and return it.

    Parameters
    ----------
    kernel : Kernel
        The record; its ``name`` is then accepted wherever a kernel name is.
    overwrite : bool, default=False
        Replace a record already registered under that name (a built-in name then
        means the user's kernel, which no method treats as built in).

    Returns
    -------
    Kernel
        ``kernel``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from attnpool import kernels
    >>> cauchy = kernels.Kernel.from_function(lambda u: 1 / (1 + u**2), name="my-cauchy")
    >>> kernels.register(cauchy).name in kernels.names()
    True

    References
    ----------
    Silverman, B. W. (1986). *Density Estimation for Statistics and Data Analysis*,
    section 3.3 (what makes a function a kernel).
    """
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel: expected a Kernel record; received {type(kernel).__name__}")
    if kernel.name in _REGISTRY and not overwrite:
        raise ValueError(
            f"kernel: {kernel.name!r} is already registered; pass overwrite=True to replace it"
        )
    _REGISTRY[kernel.name] = kernel
    return kernel


def names() -> list[str]:
    """Names of the registered kernels, in registration order.

    Returns
    -------
    list of str
        The built-in kernels first (the table of :mod:`attnpool.kernels`), then those
        added by :func:`register`.

    Examples
    --------
    >>> from attnpool import kernels
    >>> kernels.names()[:5]
    ['gaussian', 'boxcar', 'constant', 'triangular', 'epanechnikov']

    References
    ----------
    Wand, M. P. & Jones, M. C. (1995). *Kernel Smoothing*, table 2.1.
    """
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
        "biweight",
        "triweight",
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


def standard_deviation(kernel: str | Kernel | Callable[..., Any]) -> float:
    """The standard deviation ``√μ₂(K)`` of ``kernel`` at bandwidth 1 (one dimension): a
    bandwidth given as the kernel's standard deviation ``s`` (R's and KDEpy's
    convention) is attnpool's ``h = s / standard_deviation(kernel)``.

    Parameters
    ----------
    kernel : str or Kernel
        A kernel of finite variance.

    Returns
    -------
    float

    Examples
    --------
    >>> from attnpool import kernels
    >>> kernels.standard_deviation("gaussian"), round(kernels.standard_deviation("epanechnikov"), 4)
    (1.0, 0.4472)

    References
    ----------
    Wand, M. P. & Jones, M. C. (1995). *Kernel Smoothing*, section 2.7.
    """
    record = get(kernel)
    if not (record.variance and math.isfinite(record.variance)):
        raise ValueError(
            f"kernel: a standard deviation needs a kernel of finite variance; received "
            f"{record.name!r}"
        )
    return math.sqrt(record.variance)


def get(kernel: str | Kernel | Callable[..., Any]) -> Kernel:
    """Resolve a kernel name, a ``Kernel`` record or a callable ``K(u)`` to a record.

    Parameters
    ----------
    kernel : str, Kernel or callable
        A registered name (:func:`names`), a record (returned as it is), or a function
        ``K(u) >= 0`` of the scaled distance written with ``jax.numpy``
        (:meth:`Kernel.from_function`; one record per function).

    Returns
    -------
    Kernel

    Examples
    --------
    >>> from attnpool import kernels
    >>> epanechnikov = kernels.get("epanechnikov")
    >>> epanechnikov.support, round(epanechnikov.variance, 3), round(epanechnikov.roughness, 3)
    (1.0, 0.2, 0.6)

    References
    ----------
    Wand, M. P. & Jones, M. C. (1995). *Kernel Smoothing*, chapter 2.7 (``μ₂(K)`` is
    ``variance``, ``R(K)`` is ``roughness``).
    """
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


def with_norm(kernel: str | Kernel | Callable[..., Any], norm: float | str) -> Kernel:
    """``kernel`` of the Minkowski norm ``‖u‖_p`` (``p ≥ 1``, ``math.inf``, or a name of
    :data:`attnpool.kernels.norms.NAMED_NORMS`) instead of the Euclidean one.

    Parameters
    ----------
    kernel : str, Kernel or callable
        A radial, non-negative distance kernel (as :func:`attnpool.kernels.get` takes it).
    norm : float or str
        ``p``, or ``"euclidean"``, ``"manhattan"`` (``"cityblock"``), ``"chebyshev"``; or
        ``"haversine"``: the great-circle distance of rows ``(latitude, longitude)`` in
        radians, with one bandwidth in radians (:mod:`attnpool.kernels.sphere`).

    Returns
    -------
    Kernel

    References
    ----------
    KDEpy's ``NaiveKDE(norm=p)``; scikit-learn's ``KernelDensity(metric=…)``.

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> manhattan = attnpool.kernels.with_norm(attnpool.kernels.get("epanechnikov"), 1)
    >>> manhattan.name, manhattan.norm
    ('epanechnikov-l1', 1.0)
    >>> attnpool.attention_pool([[0.0, 0.0]], [[0.3, 0.3], [0.5, 0.0]], [1.0, 3.0],
    ...                         kernel=manhattan, bandwidth=1.0).round(4)   # weights 0.64, 0.75
    array([2.0791])
    """
    return normed(get(kernel), norm)


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

    Parameters
    ----------
    kernel : str or Kernel
        ``"gaussian"`` or ``"epanechnikov"``.
    order : {2, 4, 6, 8}
        The order ``ν``.

    Returns
    -------
    Kernel
        The registered record ``"{kernel}-order{order}"`` (the kernel itself for 2).

    Examples
    --------
    >>> k = higher_order("gaussian", 4)   # (3 − u²)/2 · φ(u)
    >>> k.name, k.polynomial
    ('gaussian-order4', (1.5, -0.5))

    References
    ----------
    Gasser, T., Müller, H.-G. & Mammitzsch, V. (1985). Kernels for nonparametric curve
    estimation. *JRSS B* 47(2), 238–252. Hayfield, T. & Racine, J. S. (2008).
    Nonparametric econometrics: the np package. *Journal of Statistical Software*
    27(5) (``ckerorder``).
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
    Kernel("biweight", profiles.biweight, 1.0, 1 / 7, 5 / 7, math.log(15 / 16)),
    Kernel("triweight", profiles.triweight, 1.0, 1 / 9, 350 / 429, math.log(35 / 32)),
    Kernel("dot", profiles.dot, math.inf, None, None, 0.0, similarity="dot"),
):
    register(_kernel)
for _name in ("boxcar", "triangular", "epanechnikov", "tricube", "cosine", "biweight", "triweight"):
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
_BUILTIN: dict[str, Kernel] = record.BUILT_IN
_BUILTIN.update(_REGISTRY)
