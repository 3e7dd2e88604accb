"""A LOESS fit: the iterations, the robustness weights, the operator's statistics.

The quantities are those of Cleveland & Grosse (1991) as R's ``loess`` reports them with
``surface = "direct"`` and ``statistics = "exact"``: the operator ``L`` (``ŷ = L y``)
of the first, unweighted-by-robustness fit gives ``tr L``, ``δ₁ = tr (I − L)ᵀ(I − L)``
and ``δ₂ = tr ((I − L)ᵀ(I − L))²``; the residual scale is ``s = √(Σ wᵢ rᵢ² / δ₁)``
(pseudovalues' residuals for the symmetric family), the equivalent number of
parameters ``δ₁ + 2 tr L − n``, and the ``t`` intervals have ``δ₁² / δ₂`` degrees of
freedom. ``δ₂`` needs ``(I − L)(I − L)ᵀ``: formed exactly up to
:data:`EXACT_STATISTICS` rows, estimated beyond by Hutchinson's trace estimator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .local_polynomial import POLYNOMIAL_KERNELS, local_fit, window_fit

__all__ = ["LoessResult", "fit_loess", "fits_at", "pseudovalues", "robustness_weights"]

#: Rows up to which δ₂ is computed exactly (a dense n × n product).
EXACT_STATISTICS = 4000
#: Random sign vectors of the δ₂ estimate beyond that.
PROBES = 64
#: Entries of the operator kept in memory for δ₂'s estimate (recomputed beyond).
KEPT_ENTRIES = 3 * 10**7
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
    polynomial = kernel.name in POLYNOMIAL_KERNELS and X.shape[1] == 1
    if moments and polynomial and X.shape[0] * queries.shape[0] > WINDOW_WORK:
        order = np.argsort(X[:, 0], kind="stable")
        at = np.argsort(queries[:, 0], kind="stable")
        profile = POLYNOMIAL_KERNELS[kernel.name]
        keys, sorted_queries = X[order, 0], queries[at, 0]
        found, redo = window_fit(
            keys, y[order], weights[order], sorted_queries, radius[at], degree, profile
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


def fit_loess(X, y, prior, radius, degree, kernel, iterations) -> LoessResult:
    """LOESS at the rows of ``X`` (scaled): ``iterations`` fits (1: the gaussian family),
    each after the first weighted by the robustness of the one before."""
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
    rows (``δ₂`` exact up to :data:`EXACT_STATISTICS` rows)."""
    n = X.shape[0]
    fitted = np.empty(n)
    trace = squares = 0.0
    dense = np.eye(n) if n <= EXACT_STATISTICS else None
    kept: list | None = None if dense is not None else []
    for part in local_fit(X, y, prior, X, radius, degree, kernel):
        fitted[part.rows] = part.fits
        own = part.neighbours == np.arange(part.rows.start, part.rows.stop)[:, None]
        trace += float(np.sum(part.operator[own]))
        squares += float(np.sum(part.operator**2))
        matrix = _chunk_matrix(part, n)
        if dense is not None:
            dense[part.rows] -= matrix.toarray()
        elif kept is not None:
            kept.append((part.rows, matrix))
            if sum(chunk.nnz for _, chunk in kept) > KEPT_ENTRIES:
                kept = None  # recomputed in two passes instead
    one_delta = n - 2.0 * trace + squares
    if dense is not None:
        from scipy.linalg.blas import dsyrk

        upper = np.triu(dsyrk(1.0, dense))  # (I − L)(I − L)ᵀ, its upper triangle
        two_delta = float(2.0 * np.sum(upper**2) - np.sum(np.diagonal(upper) ** 2))
    else:
        if kept is None:
            kept = _Rows(X, y, prior, radius, degree, kernel)
        two_delta = _estimated_two_delta(n, kept)
    return trace, one_delta, two_delta, fitted


def _chunk_matrix(part, n):
    """A chunk's rows of ``L`` as a sparse (c, n) matrix (padding entries add zero)."""
    from scipy.sparse import csr_matrix

    count, width = part.neighbours.shape
    pointers = np.arange(0, count * width + 1, width)
    return csr_matrix((part.operator.ravel(), part.neighbours.ravel(), pointers), shape=(count, n))


class _Rows:
    """The operator's rows recomputed chunk by chunk, each time they are iterated."""

    def __init__(self, X, y, prior, radius, degree, kernel):
        self.arguments = (X, y, prior, X, radius, degree, kernel)

    def __iter__(self):
        n = self.arguments[0].shape[0]
        for part in local_fit(*self.arguments):
            yield part.rows, _chunk_matrix(part, n)


def _estimated_two_delta(n, rows) -> float:
    """``tr (A Aᵀ)² = E ‖A Aᵀ z‖²`` over random signs ``z`` (``A = I − L``), from two
    passes over the operator's rows (``(slice, sparse chunk)`` pairs); fixed seed,
    :data:`PROBES` vectors."""
    probes = np.random.default_rng(0).choice([-1.0, 1.0], size=(n, PROBES))
    transposed = probes.copy()  # Aᵀ z = z − Lᵀ z
    for where, matrix in rows:
        transposed -= matrix.T @ probes[where]
    total = 0.0
    for where, matrix in rows:
        applied = transposed[where] - matrix @ transposed
        total += float(np.sum(applied**2))
    return total / PROBES
