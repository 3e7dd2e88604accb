"""A LOESS fit: the iterations, the robustness weights, the operator's statistics.

The quantities are those of Cleveland & Grosse (1991) as R's ``loess`` reports them with
``surface = "direct"`` and ``statistics = "exact"``: the operator ``L`` (``ŷ = L y``)
of the first, unweighted-by-robustness fit gives ``tr L``, ``δ₁ = tr (I − L)ᵀ(I − L)``
and ``δ₂ = tr ((I − L)ᵀ(I − L))²``; the residual scale is ``s = √(Σ wᵢ rᵢ² / δ₁)``
(pseudovalues' residuals for the symmetric family), the equivalent number of
parameters ``δ₁ + 2 tr L − n``, and the ``t`` intervals have ``δ₁² / δ₂`` degrees of
freedom. ``δ₂`` needs ``(I − L)(I − L)ᵀ``: formed exactly up to
:data:`EXACT_STATISTICS` rows; beyond, all but its small part ``tr E²`` is exact and that
part is estimated from the smooths of random sign vectors (:func:`two_delta`).

Where moments serve (:func:`.operator_rows.served`: one column, or the compiled loop in
several) nothing of ``L`` is formed beyond that size: the fits, ``tr L``, ``Σ L²`` and
the sign vectors' smooths come from each query's moments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .approximate_statistics import approximate_deltas
from .local_polynomial import local_fit
from .neighbour_sums import Neighbourhoods
from .operator_rows import Columns, row_sums, served

__all__ = [
    "PROBES",
    "LoessResult",
    "fit_loess",
    "fits_and_spread",
    "fits_at",
    "leverage",
    "prior_exponent",
    "prior_in_unit",
    "probe_products",
    "probe_signs",
    "pseudo_shares",
    "pseudo_step",
    "pseudovalues",
    "robustness_weights",
    "two_delta",
]

#: Rows up to which δ₂ is computed exactly (a dense n × n product).
EXACT_STATISTICS = 4000
#: Random sign vectors whose smooths estimate δ₂ beyond (every pair of them a sample).
PROBES = 16


@dataclass(frozen=True)
class LoessResult:
    """What a LOESS fit leaves: fits, residuals, robustness weights and statistics."""

    fitted: np.ndarray
    residuals: np.ndarray
    robust: np.ndarray
    trace_hat: float
    one_delta: float
    two_delta: float
    sum_squares: float

    @property
    def enp(self) -> float:
        """Equivalent number of parameters, ``δ₁ + 2 tr L − n`` (R's ``enp``)."""
        return self.one_delta + 2.0 * self.trace_hat - self.fitted.shape[0]

    @property
    def interpolates(self) -> bool:
        """Whether the fit passes through the data (``δ₁ = 0``: as many parameters as
        neighbours), which leaves no residual scale."""
        return not self.one_delta > 1e-9 * self.fitted.shape[0]

    @property
    def residual_scale(self) -> float:
        """``s = √(Σ wᵢ rᵢ² / δ₁)`` (NaN where the fit interpolates)."""
        return (
            float("nan") if self.interpolates else float(np.sqrt(self.sum_squares / self.one_delta))
        )

    @property
    def df(self) -> float:
        """Degrees of freedom of the ``t`` intervals, ``δ₁² / δ₂`` (NaN likewise)."""
        return float("nan") if self.interpolates else self.one_delta**2 / self.two_delta


def prior_exponent(largest: float) -> int:
    """The even exponent ``e`` of the prior weights' unit ``2ᵉ``, the least power of four
    at or above their ``largest`` (0 where it is not positive): divided by it the weights
    are at most 1, so that ``Σ w r²`` neither overflows nor loses subnormal weights, and
    ``√(2ᵉ)`` — by which the residual scale returns to the weights' units — is exact."""
    if not largest > 0:
        return 0
    fraction, exponent = np.frexp(largest)
    exponent = int(exponent) - (fraction == 0.5)  # the least e with 2ᵉ ≥ largest
    return int(exponent + exponent % 2)


def prior_in_unit(weights: np.ndarray | None, n: int) -> tuple[np.ndarray, int]:
    """``(prior (n,), e)``: the prior weights (ones where None) divided by ``2ᵉ``
    (:func:`prior_exponent`)."""
    if weights is None:
        return np.ones(n), 0
    exponent = prior_exponent(float(np.max(weights)))
    return np.ldexp(np.asarray(weights, float), -exponent), exponent


def robustness_weights(residuals: np.ndarray, middle: float | None = None) -> np.ndarray:
    """Bisquare weights of the residuals in units of six median absolute residuals: 1
    within 0.001 of that, 0 beyond 0.999 (``loess``'s ``lowesw``); all 1 where the
    median is zero. ``middle``: that median, where these residuals are a part of the
    data's."""
    size = np.abs(residuals)
    six_mad = 6.0 * float(np.median(size) if middle is None else middle)
    if six_mad < np.finfo(float).tiny:
        return np.ones_like(size)
    inner = (1.0 - (size / six_mad) ** 2) ** 2
    return np.where(size > 0.999 * six_mad, 0.0, np.where(size > 0.001 * six_mad, inner, 1.0))


def pseudovalues(y, fitted, prior, robust, exponent: int = 0) -> np.ndarray:
    """Cleveland & Grosse's pseudovalues, whose smooth's residuals measure the scale of a
    robust fit: ``ŷ + c ρ (y − ŷ)``, ``c = n / Σ √ρ (1 − w e² / (6 MAD)² · 5)``, for the
    prior weights ``w`` and the last fit's weights ``ρ`` (``lowesp``'s ``rwgts``); the
    MAD is that of ``√w e``. ``c ρ`` grows as ``√w`` (netlib's, as R's): with both
    weights given in units of ``2^exponent`` (even), the step is multiplied back by
    ``2^(exponent/2)`` (:func:`pseudo_step`)."""
    spread = float(np.median(np.abs(y - fitted) * np.sqrt(prior)))
    share = pseudo_shares(y, fitted, prior, robust, spread)
    return fitted + pseudo_step(y.shape[0], float(np.sum(share)), exponent) * robust * (y - fitted)


def pseudo_step(n: int, shares: float, exponent: int = 0) -> float:
    """The pseudovalues' ``c`` from the sum of :func:`pseudo_shares` over ``n`` rows, for
    weights held in units of ``2^exponent``: ``n / Σ × 2^(exponent/2)``."""
    return float(np.ldexp(n / shares, exponent // 2))


def pseudo_shares(y, fitted, prior, robust, spread) -> np.ndarray:
    """Each row's term ``√ρ (1 − w e² / (6 MAD)² · 5)`` of the pseudovalues' ``c``.

    Where the MAD is 0 (more than half the residuals vanish, a constant response), the
    terms are their limit: ``√ρ`` for a row of zero residual, ``−∞`` for any other row
    of ``ρ > 0``; ``c`` is then 0 or multiplies zero residuals, and the pseudovalues are
    the fit itself.
    """
    squares = (y - fitted) ** 2 * prior
    scale = (6.0 * spread) ** 2 / 5.0
    if scale > 0:
        ratio = squares / scale
    else:
        ratio = np.where(squares > 0, np.inf, 0.0)
    return np.multiply(1.0 - ratio, np.sqrt(robust), out=np.zeros_like(ratio), where=robust > 0)


def fits_at(X, y, weights, queries, radius, degree, kernel) -> np.ndarray:
    """Local polynomial fits at ``queries``: from moments where they serve, else from the
    operator's rows."""
    if served(X, kernel, X.shape[0] * queries.shape[0]):
        return row_sums(
            X, Columns(y, weights), Neighbourhoods(queries, radius, degree), kernel
        ).fits
    out = np.empty(queries.shape[0])
    for part in local_fit(X, y, weights, queries, radius, degree, kernel):
        out[part.rows] = part.fits
    return out


def fit_loess(X, y, prior, radius, degree, kernel, iterations, statistics="exact", *,
              prior_exponent=0):  # fmt: skip
    """LOESS at the rows of ``X`` (scaled): ``iterations`` fits (1: the gaussian family),
    each after the first weighted by the robustness of the one before. ``statistics``
    ``"approximate"``: ``δ₁`` and ``δ₂`` from ``tr L`` by Cleveland & Grosse's formulas
    (:func:`.approximate_statistics.approximate_deltas`). ``prior``: the prior weights in
    units of ``2^prior_exponent`` (:func:`prior_in_unit`)."""
    n = X.shape[0]
    if statistics == "approximate":
        first, own = leverage(X, y, prior, radius, degree, kernel)
        trace = float(own.sum())
        one_delta, two = approximate_deltas(trace, n, X.shape[1], degree)
    elif n > EXACT_STATISTICS and served(X, kernel, n * n):
        probes = probe_signs(0, n)
        sums = row_sums(X, Columns(y, prior, np.ones(n), probes),
                        Neighbourhoods(X, radius, degree), kernel, at_rows=True)  # fmt: skip
        first, trace, squares = sums.fits, float(sums.own.sum()), float(sums.spread.sum())
        one_delta = n - 2.0 * trace + squares
        two = two_delta(trace, squares, n, probe_products(probes, sums.smooths))
    else:
        trace, one_delta, two, first = _statistics(X, y, prior, radius, degree, kernel)
    fitted, robust = first, np.ones_like(y)
    for _ in range(1, iterations):
        robust = robustness_weights(y - fitted)
        fitted = fits_at(X, y, prior * robust, X, radius, degree, kernel)
    residuals = y - fitted
    if iterations > 1:
        # R and netlib pass the last fit's weights, prior × robustness, as lowesp's rwgts
        pseudo = pseudovalues(y, fitted, prior, prior * robust, prior_exponent)
        smooth = fits_at(X, pseudo, prior, X, radius, degree, kernel)
        sum_squares = float(np.sum(prior * (pseudo - smooth) ** 2))
    else:
        sum_squares = float(np.sum(prior * residuals**2))
    return LoessResult(fitted, residuals, robust, trace, one_delta, two, sum_squares)


def leverage(X, y, prior, radius, degree, kernel) -> tuple[np.ndarray, np.ndarray]:
    """The fits at the rows of ``X`` and each row's weight on itself, ``Lᵢᵢ``: from
    moments where they serve, else from the operator's rows."""
    n = X.shape[0]
    if served(X, kernel, n * n):
        sums = row_sums(X, Columns(y, prior), Neighbourhoods(X, radius, degree), kernel,
                        at_rows=True)  # fmt: skip
        return sums.fits, sums.own
    fitted, own = np.empty(n), np.empty(n)
    for part in local_fit(X, y, prior, X, radius, degree, kernel):
        fitted[part.rows] = part.fits
        mine = part.neighbours == np.arange(part.rows.start, part.rows.stop)[:, None]
        own[part.rows] = np.sum(np.where(mine, part.operator, 0.0), axis=1)
    return fitted, own


def fits_and_spread(X, y, weights, prior, queries, radius, degree, kernel):
    """The fits at ``queries`` and ``Σⱼ Lⱼ² / priorⱼ``, the square of R's standard error in
    units of the residual scale: from moments where they serve, else from the operator's
    rows."""
    inverse = 1.0 / prior
    if served(X, kernel, X.shape[0] * queries.shape[0]):
        sums = row_sums(X, Columns(y, weights, squares=inverse),
                        Neighbourhoods(queries, radius, degree), kernel)  # fmt: skip
        return sums.fits, sums.spread
    fits, spread = np.empty(queries.shape[0]), np.empty(queries.shape[0])
    for part in local_fit(X, y, weights, queries, radius, degree, kernel):
        fits[part.rows] = part.fits
        spread[part.rows] = np.sum(part.operator**2 * inverse[part.neighbours], axis=1)
    return fits, spread


def two_delta(trace: float, squares: float, n: int, products: tuple) -> float:
    """``δ₂ = tr (AᵀA)²``, ``A = I − L``, from ``tr L``, ``Σ L²`` and the
    :func:`probe_products` of the sign vectors: with ``AᵀA = I − E``,
    ``E = L + Lᵀ − LᵀL``, it is ``n − 2 tr E + tr E²``, where ``tr E = 2 tr L − Σ L²`` is
    exact and only the small ``tr E² = E (zᵀ E w)²`` is estimated, over independent random
    signs ``z``, ``w`` (every pair of probes): ``zᵀ E w = zᵀw − (Az)ᵀ(Aw)``."""
    plain, residual = products
    pairs = np.triu_indices(plain.shape[0], k=1)
    samples = plain[pairs] - residual[pairs]  # zᵀ E w
    return n - 2.0 * (2.0 * trace - squares) + float(np.mean(samples**2))


def probe_products(probes: np.ndarray, smoothed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ZᵀZ, (AZ)ᵀ(AZ))`` (P, P) of sign vectors ``Z`` (rows, P) and their smooths
    ``LZ``: sums over rows, so those of the parts of a data set add up."""
    residual = probes - smoothed  # A z for each probe
    return probes.T @ probes, residual.T @ residual


#: SplitMix64's constants: a row's signs are bits of a hash of its index.
_MIX = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)


def probe_signs(start: int, stop: int) -> np.ndarray:
    """The :data:`PROBES` random signs of rows ``start`` to ``stop``, shape
    (stop − start, PROBES): the top bit of SplitMix64 of each (row, probe), so that
    a row has the same signs whichever block of the data holds it."""
    index = np.arange(start, stop, dtype=np.uint64)[:, None] * np.uint64(PROBES)
    z = index + np.arange(PROBES, dtype=np.uint64) + np.uint64(_MIX[0])
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_MIX[1])
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX[2])
    z ^= z >> np.uint64(31)
    return np.where(z >> np.uint64(63), 1.0, -1.0)


def _statistics(X, y, prior, radius, degree, kernel):
    """``tr L``, ``δ₁``, ``δ₂`` and the fits of the first iteration, from the operator's
    rows: ``δ₂`` exactly up to :data:`EXACT_STATISTICS` rows, beyond from the smooths of
    random sign vectors (:func:`two_delta`)."""
    n = X.shape[0]
    fitted = np.empty(n)
    trace = squares = 0.0
    dense = np.eye(n) if n <= EXACT_STATISTICS else None
    probes = None if dense is not None else probe_signs(0, n)
    smoothed = None if probes is None else np.empty_like(probes)
    for part in local_fit(X, y, prior, X, radius, degree, kernel):
        fitted[part.rows] = part.fits
        own = part.neighbours == np.arange(part.rows.start, part.rows.stop)[:, None]
        trace += float(np.sum(part.operator[own]))
        squares += float(np.sum(part.operator**2))
        if dense is not None:
            dense[part.rows] -= _chunk_matrix(part, n).toarray()
        else:
            smoothed[part.rows] = _chunk_matrix(part, n) @ probes
    one_delta = n - 2.0 * trace + squares
    if dense is None:
        two = two_delta(trace, squares, n, probe_products(probes, smoothed))
        return trace, one_delta, two, fitted
    from scipy.linalg.blas import dsyrk

    upper = np.triu(dsyrk(1.0, dense))  # (I − L)(I − L)ᵀ, its upper triangle
    product_squares = float(2.0 * np.sum(upper**2) - np.sum(np.diagonal(upper) ** 2))
    return trace, one_delta, product_squares, fitted


def _chunk_matrix(part, n):
    """A chunk's rows of ``L`` as a sparse (c, n) matrix (padding entries add zero)."""
    from scipy.sparse import csr_matrix

    count, width = part.neighbours.shape
    pointers = np.arange(0, count * width + 1, width)
    return csr_matrix((part.operator.ravel(), part.neighbours.ravel(), pointers), shape=(count, n))
