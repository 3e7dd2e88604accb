"""A LOESS fit: the iterations, the robustness weights, the operator's statistics.

The quantities are those of Cleveland & Grosse (1991) as R's ``loess`` reports them with
``surface = "direct"`` and ``statistics = "exact"``: the operator ``L`` (``ŷ = L y``)
of the first, unweighted-by-robustness fit gives ``tr L``, ``δ₁ = tr (I − L)ᵀ(I − L)``
and ``δ₂ = tr ((I − L)ᵀ(I − L))²``; the residual scale is ``s = √(Σ wᵢ rᵢ² / δ₁)``
(pseudovalues' residuals for the symmetric family), the equivalent number of
parameters ``δ₁ + 2 tr L − n``, and the ``t`` intervals have ``δ₁² / δ₂`` degrees of
freedom. ``δ₂`` needs ``(I − L)(I − L)ᵀ``: formed exactly up to
:data:`EXACT_STATISTICS` rows; beyond, all but its small part ``tr E²`` is exact and that
part is estimated from the smooths of random sign vectors
(:func:`.window_statistics.two_delta`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .local_polynomial import POLYNOMIAL_KERNELS, local_fit, window_fit
from .window_statistics import PROBES, two_delta, window_statistics

__all__ = [
    "LoessResult",
    "fit_loess",
    "fits_at",
    "pseudovalues",
    "robustness_weights",
    "windowed",
]

#: Rows up to which δ₂ is computed exactly (a dense n × n product).
EXACT_STATISTICS = 4000
#: Queries × neighbours from which one-column fits take running moments.
WINDOW_WORK = 2**20


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


def robustness_weights(residuals: np.ndarray) -> np.ndarray:
    """Bisquare weights of the residuals in units of six median absolute residuals: 1
    within 0.001 of that, 0 beyond 0.999 (``loess``'s ``lowesw``); all 1 where the
    median is zero."""
    size = np.abs(residuals)
    six_mad = 6.0 * float(np.median(size))
    if six_mad < np.finfo(float).tiny:
        return np.ones_like(size)
    inner = (1.0 - (size / six_mad) ** 2) ** 2
    return np.where(size > 0.999 * six_mad, 0.0, np.where(size > 0.001 * six_mad, inner, 1.0))


def pseudovalues(y, fitted, prior, robust) -> np.ndarray:
    """Cleveland & Grosse's pseudovalues, whose smooth's residuals measure the scale of a
    robust fit: ``ŷ + c ρ (y − ŷ)``, ``c = n / Σ √ρ (1 − w e² / (6 MAD)² · 5)``."""
    spread = float(np.median(np.abs(y - fitted) * np.sqrt(prior)))
    share = (1.0 - (y - fitted) ** 2 * prior / ((6.0 * spread) ** 2 / 5.0)) * np.sqrt(robust)
    return fitted + (y.shape[0] / np.sum(share)) * robust * (y - fitted)


def fits_at(X, y, weights, queries, radius, degree, kernel, *, moments=True) -> np.ndarray:
    """Local polynomial fits at ``queries`` (no operator): from running moments in one
    column with a polynomial kernel and enough work to pay for them (the rows they
    cannot vouch for refitted directly), directly otherwise."""
    if moments and windowed(X, kernel, X.shape[0] * queries.shape[0]):
        order = np.argsort(X[:, 0], kind="stable")
        at = np.argsort(queries[:, 0], kind="stable")
        found, redo = window_fit(
            X[order, 0], y[order], weights[order], queries[at, 0], radius[at], degree, kernel
        )
        fits = np.empty(queries.shape[0])
        fits[at] = found
        if redo.any():
            again = at[redo]
            fits[again] = fits_at(
                X, y, weights, queries[again], radius[again], degree, kernel, moments=False
            )
        return fits
    out = np.empty(queries.shape[0])
    for part in local_fit(X, y, weights, queries, radius, degree, kernel):
        out[part.rows] = part.fits
    return out


def windowed(X, kernel, work) -> bool:
    """Whether a problem of ``work`` queries × rows in ``X`` takes its moments from
    running sums: one column, a polynomial kernel, enough work to pay for them."""
    return X.shape[1] == 1 and kernel.name in POLYNOMIAL_KERNELS and work > WINDOW_WORK


def fit_loess(X, y, prior, radius, degree, kernel, iterations) -> LoessResult:
    """LOESS at the rows of ``X`` (scaled): ``iterations`` fits (1: the gaussian family),
    each after the first weighted by the robustness of the one before. Beyond
    :data:`EXACT_STATISTICS` rows in one column with a polynomial kernel, the statistics
    come from running moments (:mod:`.window_statistics`)."""
    n = X.shape[0]
    if n > EXACT_STATISTICS and windowed(X, kernel, n * n):
        order = np.argsort(X[:, 0], kind="stable")
        found = window_statistics(X[order, 0], y[order], prior[order], radius[order], degree,
                                  kernel)  # fmt: skip
        first = np.empty(n)
        first[order] = found[0]
        trace, one_delta, two_delta = found[1:]
    else:
        trace, one_delta, two_delta, first = _statistics(X, y, prior, radius, degree, kernel)
    fitted, robust = first, np.ones_like(y)
    for _ in range(1, iterations):
        robust = robustness_weights(y - fitted)
        fitted = fits_at(X, y, prior * robust, X, radius, degree, kernel)
    residuals = y - fitted
    if iterations > 1:
        pseudo = pseudovalues(y, fitted, prior, robust)
        smooth = fits_at(X, pseudo, prior, X, radius, degree, kernel)
        sum_squares = float(np.sum(prior * (pseudo - smooth) ** 2))
    else:
        sum_squares = float(np.sum(prior * residuals**2))
    return LoessResult(fitted, residuals, robust, trace, one_delta, two_delta, sum_squares)


def _statistics(X, y, prior, radius, degree, kernel):
    """``tr L``, ``δ₁``, ``δ₂`` and the fits of the first iteration, from the operator's
    rows: ``δ₂`` exactly up to :data:`EXACT_STATISTICS` rows, beyond from the smooths of
    random sign vectors (:func:`.window_statistics.two_delta`)."""
    n = X.shape[0]
    fitted = np.empty(n)
    trace = squares = 0.0
    dense = np.eye(n) if n <= EXACT_STATISTICS else None
    probes = (
        None if dense is not None else np.random.default_rng(0).choice([-1.0, 1.0], (n, PROBES))
    )
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
        return trace, one_delta, two_delta(trace, squares, probes, smoothed), fitted
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
