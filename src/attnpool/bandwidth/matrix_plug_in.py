"""The plug-in bandwidth matrix of a Gaussian density in several columns (R ``ks``'s
``Hpi``).

The asymptotic mean integrated squared error of a Gaussian estimate with bandwidth matrix
``H (d, d)`` is

.. math:: \\mathrm{PI}(H) = \\frac{(4π)^{-d/2}}{n \\sqrt{|H|}}
          + \\frac14 \\sum_{ijkl} ψ_{ijkl} H_{ij} H_{kl},
          \\qquad ψ_{ijkl} = \\int ∂_{ijkl} f \\, f,

and ``Hpi`` minimises it with ``ψ`` estimated from the sample: ``ψ̂_α = n⁻² Σ_{a,b}
∂^α φ_{g² I}(X_a − X_b)`` (every pair, the pair of a row with itself included), on the
sphered sample ``X S^{-1/2}``, mapped back by ``S^{1/2} H S^{1/2}``. The pilot ``g``
is ks's:

- ``"samse"`` (ks's default in two columns): one pilot for all fourth-order functionals,
  minimising their summed asymptotic mean squared error (Chacón & Duong 2010), its
  sixth-order functionals estimated in turn with a normal-reference pilot (two stages);
- ``"dscalar"`` (ks's default in other dimensions): the pilot of the scalar
  ``(vec I)ᵀ ψ₆``-type functional ``η`` (Chacón & Duong 2011).

ks 1.14.0 reads its two-stage ``samse`` pilot's sixth-order functionals from the full
vector ``ψ̂₆ (d⁶)`` at the rows of the *unique* index table (the entry for ``(4, 2)``
is the vector's third, ``(5, 1)``): ``ks_indexing=True`` reproduces ks's matrix; the
default uses the functionals the formula names.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy.optimize import minimize

from .._support.hints import ArrayLike
from .matrices import checked_sample, in_data_units, representable, scaled_covariance

__all__ = ["plug_in_matrix"]

#: Pairs of rows formed at a time (memory).
_CHUNK = 2**18

#: A multi-index ``α``: the order of the derivative in each column.
Index = tuple[int, ...]


def _double_factorial(m: int) -> int:
    return math.prod(range(m, 0, -2))


def _odd_factorial(m: int) -> float:
    """ks's ``OF(m) = m! / (2^(m/2) (m/2)!)``: ``(m − 1)!!`` for even ``m``."""
    return float(_double_factorial(m - 1))


def _unique_indices(d: int, order: int) -> list[Index]:
    """Multi-indices of ``order`` in ``d`` columns, in ks's table order (descending)."""
    every = (a for a in itertools.product(range(order + 1), repeat=d) if sum(a) == order)
    return sorted(every, reverse=True)


def _vector_entry(d: int, order: int, position: int) -> Index:
    """The multi-index of entry ``position`` (from 0) of the vector ``D^{⊗order}`` (d^order)."""
    digits = [(position // d**t) % d for t in range(order)]
    return tuple(digits.count(c) for c in range(d))


def _symmetric_sqrt(a: np.ndarray) -> np.ndarray:
    values, vectors = np.linalg.eigh(a)
    return np.asarray((vectors * np.sqrt(values)) @ vectors.T)


def _nu(r: int, a: np.ndarray) -> float:
    """ks's ``nu(r, A)``: ``r! 2^r`` times the ``r``-th term of the traces' recursion."""
    eigenvalues = np.linalg.eigvalsh(a)
    traces = [float(np.sum(eigenvalues**p)) for p in range(1, r + 1)]
    terms = [1.0]
    for p in range(1, r + 1):
        terms.append(sum(t * s for t, s in zip(traces[:p], reversed(terms), strict=True)) / (2 * p))
    return float(math.factorial(r) * 2**r * terms[r])


def _normal_functional(alpha: Index, inverse: np.ndarray, at_zero: float) -> float:
    """``∂^α φ_V(0)`` from ``V⁻¹`` and ``φ_V(0)``: ``(−1)^m φ_V(0)`` times the sum over the
    pairings of the ``2m`` coordinates of the products of ``V⁻¹``'s entries (Isserlis)."""
    coordinates = tuple(c for c, count in enumerate(alpha) for _ in range(count))
    if len(coordinates) % 2:
        return 0.0

    @functools.cache
    def pairings(rest: Index) -> float:
        if not rest:
            return 1.0
        first, others = rest[0], rest[1:]
        return sum(
            float(inverse[first, c]) * pairings(others[:i] + others[i + 1 :])
            for i, c in enumerate(others)
        )

    return float((-1) ** (len(coordinates) // 2) * at_zero * pairings(coordinates))


def _normal_functionals(alphas: Sequence[Index], covariance: np.ndarray) -> np.ndarray:
    """ks's ``psins``: ``∂^α φ_{2Σ}(0)`` for each ``α``, ``Σ = covariance``."""
    v = 2 * covariance
    d = v.shape[0]
    at_zero = (2 * math.pi) ** (-d / 2) / math.sqrt(np.linalg.det(v))
    inverse = np.linalg.inv(v)
    return np.array([_normal_functional(a, inverse, at_zero) for a in alphas])


def _functionals(x: np.ndarray, g: float, alphas: list[Index]) -> np.ndarray:
    """``ψ̂_α = n⁻² Σ_{a,b} ∂^α φ_{g² I}(X_a − X_b)`` for each ``α`` (ks's ``kfe``,
    unbinned, ``inc = 1``): the spherical normal's derivatives are products of one-column
    Hermite functions."""
    n, d = x.shape
    top = max(max(a) for a in alphas)
    totals = np.zeros(len(alphas))
    rows = max(1, _CHUNK // n)
    for start in range(0, n, rows):
        t = (x[start : start + rows, None, :] - x[None, :, :]) / g  # (rows, n, d)
        weight = np.exp(-0.5 * np.sum(t * t, axis=2))
        hermite = [np.ones_like(t), -t]  # (−1)^k He_k(t): ∂^k of e^(−t²/2) over it
        for k in range(1, top):
            hermite.append(-t * hermite[k] - k * hermite[k - 1])
        for i, alpha in enumerate(alphas):
            product = weight
            for c, k in enumerate(alpha):
                if k:
                    product = product * hermite[k][:, :, c]
            totals[i] += float(np.sum(product))
    orders = np.array([sum(a) for a in alphas])
    return np.asarray(totals * (2 * math.pi) ** (-d / 2) * g ** (-d - orders) / n**2)


def _contracted_square(d: int, order: int, value: Callable[[Index], float]) -> float:
    """``‖Σ_a ψ(· + 2e_a)‖²`` over the ``d^(order−2)`` entries of the contraction of a
    symmetric tensor ``ψ`` of ``order`` (given by ``value(α)``) on its first two indices."""
    total = 0.0
    for beta in _unique_indices(d, order - 2):
        count = math.factorial(order - 2) / math.prod(math.factorial(b) for b in beta)
        contraction = sum(value(tuple(b + 2 * (c == a) for c, b in enumerate(beta)))
                          for a in range(d))  # fmt: skip
        total += count * contraction**2
    return total


def _even(alpha: Index) -> bool:
    return all(a % 2 == 0 for a in alpha)


def _samse_pilot(
    covariance: np.ndarray, n: int, order: int, sixth: Callable[[Index], float] | None = None
) -> float:
    """ks's ``gsamse``: the pilot of the functionals of ``order`` (4 or 6); ``sixth(α)``
    gives the estimated sixth-order functionals of a second stage."""
    d = covariance.shape[0]
    even = [a for a in _unique_indices(d, order) if _even(a)]
    k = np.array([(2 * math.pi) ** (-d / 2)
                  * math.prod((-1) ** (a // 2) * _double_factorial(a - 1) for a in alpha)
                  for alpha in even])  # fmt: skip
    shifted = [[tuple(b + 2 * (c == j) for c, b in enumerate(alpha)) for j in range(d)]
               for alpha in even]  # fmt: skip
    if sixth is None:
        psi = np.array([np.sum(_normal_functionals(s, covariance)) for s in shifted])
    else:
        psi = np.array([sum(sixth(a) for a in s) for s in shifted])
    b1 = (2 * order + 2 * d) * np.sum(k * k)
    b2 = (order + d - 2) * np.sum(k * psi)
    b3 = np.sum(psi * psi)
    gamma = (-b2 + math.sqrt(b2 * b2 + 4 * b1 * b3)) / (2 * b1)
    return float((gamma * n) ** (-1 / (order + d + 2)))


def _dscalar_pilot(x: np.ndarray, stages: int) -> float:
    """ks's ``gdscalar`` (``r = 0``): the pilot of the fourth-order functionals."""
    n, d = x.shape
    covariance = np.cov(x, rowvar=False).reshape(d, d)
    inverse = np.linalg.inv(covariance)
    order = 4 + 2 * stages  # the normal reference's functionals: 6, or 8 for two stages

    @functools.cache
    def normal(alpha: Index) -> float:
        return float(_normal_functionals([alpha], covariance)[0])

    b3 = _contracted_square(d, order, normal)
    top = order - 2
    scale = (2 * math.pi) ** -d * _odd_factorial(top)
    b1 = 2 * scale * math.prod(d + 2 * i for i in range(top // 2 + 1))
    b2 = -(d + top - 2) * 2.0 ** (-d / 2 + 2 * stages - 2) * scale * _nu(2 * stages, inverse)
    b2 /= math.sqrt(np.linalg.det(covariance))
    g = (2 * b1 / (-b2 + math.sqrt(b2 * b2 + 4 * b1 * b3))) ** (1 / (d + 8)) * n ** (-1 / (d + 8))
    if stages == 1:
        return float(g)
    # η₆ = n⁻² Σ Δ³ φ_{g² I}(X_a − X_b): the Laplacian's cube through the even functionals
    thirds = _unique_indices(d, 3)
    counts = [6 / math.prod(math.factorial(b) for b in beta) for beta in thirds]
    estimates = _functionals(x, g, [tuple(2 * b for b in beta) for beta in thirds])
    eta = float(np.dot(counts, estimates))
    at_zero = (2 * math.pi) ** (-d / 2)
    a1 = (2 * d + 8) * at_zero**2 * _odd_factorial(4) * _nu(2, np.eye(d))
    a2 = (d + 2) * at_zero * _odd_factorial(4) * eta
    a3 = eta * eta
    return float((2 * a1 / ((-a2 + math.sqrt(a2 * a2 + 4 * a1 * a3)) * n)) ** (1 / (d + 6)))


def _fourth_functionals(
    x: np.ndarray, pilot: str, stages: int, ks_indexing: bool
) -> dict[Index, float]:
    """The estimated ``ψ_α``, ``|α| = 4``, of the (sphered) sample ``x``, by multi-index."""
    n, d = x.shape
    fourth = _unique_indices(d, 4)
    if pilot == "dscalar":
        g = _dscalar_pilot(x, stages)
    elif stages == 1:
        g = _samse_pilot(np.cov(x, rowvar=False).reshape(d, d), n, 4)
    else:
        covariance = np.cov(x, rowvar=False).reshape(d, d)
        g6 = _samse_pilot(covariance, n, 6)
        table = _unique_indices(d, 6)

        def read(alpha: Index) -> Index:
            return _vector_entry(d, 6, table.index(alpha)) if ks_indexing else alpha

        wanted = [a for a in fourth if _even(a)]
        needed = sorted({read(tuple(b + 2 * (c == j) for c, b in enumerate(a)))
                         for a in wanted for j in range(d)})  # fmt: skip
        sixth = dict(zip(needed, _functionals(x, g6, needed), strict=True))
        g = _samse_pilot(covariance, n, 4, sixth=lambda a: sixth[read(a)])
    return dict(zip(fourth, _functionals(x, g, fourth), strict=True))


def _tensor(d: int, psi: dict[Index, float]) -> np.ndarray:
    """The symmetric tensor ``(d, d, d, d)`` of the fourth-order functionals."""
    tensor = np.empty((d,) * 4)
    for index in itertools.product(range(d), repeat=4):
        tensor[index] = psi[tuple(index.count(c) for c in range(d))]
    return tensor


def _pi(h: np.ndarray, tensor: np.ndarray, n: int) -> tuple[float, np.ndarray]:
    """``PI(H)`` and its gradient with respect to ``H`` (symmetric), or ``(inf, 0)``."""
    d = h.shape[0]
    sign, log_det = np.linalg.slogdet(h)
    if sign <= 0:
        return math.inf, np.zeros_like(h)
    variance = (4 * math.pi) ** (-d / 2) / n * math.exp(-log_det / 2)
    bias = np.einsum("ijkl,kl->ij", tensor, h)
    value = variance + 0.25 * float(np.sum(bias * h))
    return value, -0.5 * variance * np.linalg.inv(h) + 0.5 * bias


def _minimise(tensor: np.ndarray, n: int, start: np.ndarray) -> np.ndarray:
    """``argmin PI`` over ``H = L Lᵀ`` (``L`` lower triangular) from ``start``, in units
    of ``start``'s size and criterion."""
    d = start.shape[0]
    lower = np.tril_indices(d)
    scale = math.sqrt(float(np.trace(start)) / d)
    unit = _pi(start, tensor, n)[0]

    def matrix(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        factor = np.zeros((d, d))
        factor[lower] = theta * scale
        return factor @ factor.T, factor

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        h, factor = matrix(theta)
        value, gradient = _pi(h, tensor, n)
        return value / unit, (2 * gradient @ factor)[lower] * scale / unit

    theta = np.linalg.cholesky(start)[lower] / scale
    found = minimize(objective, theta, jac=True, method="BFGS", options={"gtol": 1e-11})
    return matrix(found.x)[0]


def plug_in_matrix(
    x: ArrayLike, *, pilot: str = "auto", stages: int = 2, ks_indexing: bool = False
) -> np.ndarray:
    """The plug-in bandwidth matrix ``(d, d)`` of a Gaussian density of ``x (n, d)``
    (R ``ks``'s ``Hpi`` with ``binned = FALSE``): ``PI(H)`` minimised with the
    fourth-order density functionals estimated from the sphered sample.

    Parameters
    ----------
    x : array of shape (n, d)
    pilot : {"auto", "samse", "dscalar"}
        The functionals' pilot bandwidth: ks's ``"samse"`` (its default in two columns)
        or ``"dscalar"`` (its default otherwise); ``"auto"`` takes ks's default.
    stages : {1, 2}
        ks's ``nstage``: the pilot's own functionals from the normal reference (1) or
        estimated with a normal-reference pilot of their own (2).
    ks_indexing : bool
        Read the two-stage ``"samse"`` pilot's sixth-order functionals at ks 1.14's
        positions, which give ks's matrix; by default, at the multi-indices the formula
        names. The matrices differ (for ``wave_data(300, d=2, seed=5)`` ks's is 16 %
        larger), and only the default's is equivariant under the columns' order.

    Returns
    -------
    ndarray of shape (d, d)

    Notes
    -----
    Every pair of rows is summed (``n²`` work, in blocks): ks bins samples larger than 500
    rows in two columns and 1000 in more (``binned = TRUE``), whose matrix differs from
    the exact one by the binning's error. The result is affine equivariant in scale and
    shift (``plug_in_matrix(c x + b) = c² plug_in_matrix(x)``).

    References
    ----------
    Wand, M. P. & Jones, M. C. (1994). Multivariate plug-in bandwidth selection.
    *Computational Statistics* 9, 97–116. Duong, T. & Hazelton, M. L. (2003). Plug-in
    bandwidth matrices for bivariate kernel density estimation. *Journal of
    Nonparametric Statistics* 15(1), 17–30. Chacón, J. E. & Duong, T. (2010).
    Multivariate plug-in bandwidth selection with unconstrained pilot bandwidth matrices.
    *Test* 19, 375–398. R package ``ks``, ``Hpi``.

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> x = np.random.default_rng(0).normal(size=(300, 2)) @ [[1.0, 0.6], [0.0, 0.8]]
    >>> attnpool.plug_in_matrix(x).round(3)
    array([[0.14 , 0.093],
           [0.093, 0.15 ]])
    """
    data = checked_sample(x)
    n, d = data.shape
    choice = ("samse" if d == 2 else "dscalar") if pilot == "auto" else pilot
    if choice not in ("samse", "dscalar"):
        raise ValueError(f"pilot: expected 'auto', 'samse' or 'dscalar'; received {pilot!r}")
    if stages not in (1, 2) or isinstance(stages, bool):
        raise ValueError(f"stages: expected 1 or 2; received {stages!r}")
    scaled, unit = scaled_covariance(data)
    in_data_units(scaled, unit)  # (refused where the sample has no matrix)
    covariance = np.cov(data, rowvar=False).reshape(d, d)
    root = _symmetric_sqrt(covariance)
    sphered = data @ np.linalg.inv(root)
    tensor = _tensor(d, _fourth_functionals(sphered, choice, stages, ks_indexing))
    start = (4 / (n * (d + 2))) ** (2 / (d + 4)) * np.cov(sphered, rowvar=False).reshape(d, d)
    found = _minimise(tensor, n, start)
    with np.errstate(over="ignore", under="ignore"):
        return representable(root @ found @ root, unit)
