"""LOESS in one column from running moments: the operator's statistics and standard
errors without forming the operator.

At a query with moments ``G = Σⱼ wⱼ Kⱼ bⱼ bⱼᵀ`` (``b`` the monomials of ``u = (x − q) / ρ``)
the fit's weights on the data are ``Lⱼ = wⱼ Kⱼ bⱼᵀ a`` with ``a = G⁻¹ e₀``, so that

- the fit is ``aᵀ T``, ``T = Σ w K y b``;
- a point's weight on itself is ``Lᵢᵢ = wᵢ K(0) a₀`` (``u = 0``), whence ``tr L``;
- ``Σⱼ Lⱼ² / vⱼ = aᵀ H a`` with ``H = Σ w² K² b bᵀ / v``, the kernel squared being a
  polynomial in ``|u|`` too: ``δ₁ = n − 2 tr L + Σᵢ aᵢᵀ Hᵢ aᵢ`` (``v = 1``) and R's
  standard errors (``v`` the prior weights);
- ``δ₂ = tr (AᵀA)²``, ``A = I − L``: with ``AᵀA = I − E``, ``E = L + Lᵀ − LᵀL``, it is
  ``n − 2 tr E + tr E²`` where ``tr E = 2 tr L − Σ L²`` is exact and only the small
  ``tr E² = E (zᵀ E w)²`` is estimated, over independent random signs ``z``, ``w``:
  ``zᵀ E w = zᵀw − (Az)ᵀ(Aw)`` needs the smoother applied to :data:`PROBES` sign vectors,
  every pair of them a sample (:func:`two_delta`).

All of it comes from :func:`attnpool.engines.window_sums.polynomial_window_sums` in
``O(n log n)``; rows whose small systems are ill-conditioned are computed from their
operator rows (:func:`.local_polynomial.local_fit`).
"""

from __future__ import annotations

import numpy as np

from ..engines.window_sums import polynomial_window_sums
from .local_polynomial import POLYNOMIAL_KERNELS, gram_solution, local_fit, windows_within

__all__ = [
    "PROBES",
    "squared",
    "two_delta",
    "window_leverage",
    "window_standard_errors",
    "window_statistics",
]

#: Random sign vectors whose smooths estimate δ₂ (every pair of them is a sample).
PROBES = 16


def squared(profile):
    """The profile of ``K²`` from that of ``K`` (products of the ``|u|`` powers)."""
    terms: dict[int, float] = {}
    for e1, c1 in profile:
        for e2, c2 in profile:
            terms[e1 + e2] = terms.get(e1 + e2, 0.0) + c1 * c2
    return tuple(sorted(terms.items()))


def _quadratic(a, h, degree):
    """``aᵀ H a`` with ``H`` from the moments ``h`` (q, 2·degree + 1)."""
    matrix = h[:, np.add.outer(np.arange(degree + 1), np.arange(degree + 1))]
    return np.einsum("qi,qij,qj->q", a, matrix, a)


def window_statistics(keys, y, prior, radius, degree, kernel):
    """Fits at the sorted one-column ``keys`` themselves and ``tr L``, ``δ₁``, ``δ₂``:
    ``(fits, trace, one_delta, two_delta)``."""
    n = keys.shape[0]
    profile = POLYNOMIAL_KERNELS[kernel.name]
    lo, hi = windows_within(keys, keys, radius)
    probes = np.random.default_rng(0).choice([-1.0, 1.0], size=(n, PROBES))
    values = np.column_stack([y, probes])
    s, t = polynomial_window_sums(keys, prior, values, keys, radius, lo, hi, profile,
                                  2 * degree, degree)  # fmt: skip
    a, redo = gram_solution(s, degree)
    smoothed = np.einsum("qi,qic->qc", a, t)  # L [y, probes]
    own = prior * a[:, 0]  # K(0) = 1
    h, _ = polynomial_window_sums(keys, prior**2, None, keys, radius, lo, hi, squared(profile),
                                  2 * degree)  # fmt: skip
    squares = _quadratic(a, h, degree)
    if redo.any():
        rows = np.flatnonzero(redo)
        for part in local_fit(keys[:, None], y, prior, keys[rows, None], radius[rows],
                              degree, kernel):  # fmt: skip
            where = rows[part.rows]
            smoothed[where] = np.einsum("cw,cwk->ck", part.operator, values[part.neighbours])
            mine = part.neighbours == where[:, None]
            own[where] = np.sum(np.where(mine, part.operator, 0.0), axis=1)
            squares[where] = np.sum(part.operator**2, axis=1)
    trace, total = float(own.sum()), float(squares.sum())
    one_delta = n - 2.0 * trace + total
    return smoothed[:, 0], trace, one_delta, two_delta(trace, total, probes, smoothed[:, 1:])


def window_leverage(keys, y, prior, radius, degree, kernel):
    """Fits at the sorted one-column ``keys`` themselves and each point's weight on
    itself, ``Lᵢᵢ``: ``(fits, own)``, what the span criteria need."""
    profile = POLYNOMIAL_KERNELS[kernel.name]
    lo, hi = windows_within(keys, keys, radius)
    s, t = polynomial_window_sums(keys, prior, y, keys, radius, lo, hi, profile, 2 * degree,
                                  degree)  # fmt: skip
    a, redo = gram_solution(s, degree)
    fits, own = np.einsum("qi,qi->q", a, t), prior * a[:, 0]
    if redo.any():
        rows = np.flatnonzero(redo)
        for part in local_fit(keys[:, None], y, prior, keys[rows, None], radius[rows], degree,
                              kernel):  # fmt: skip
            where = rows[part.rows]
            fits[where] = part.fits
            own[where] = np.sum(np.where(part.neighbours == where[:, None], part.operator, 0.0), 1)
    return fits, own


def two_delta(trace: float, squares: float, probes: np.ndarray, smoothed: np.ndarray) -> float:
    """``δ₂ = n − 2 tr E + tr E²`` (see above) from ``tr L``, ``Σ L²``, the sign vectors
    ``probes`` (n, P) and their smooths ``L probes``."""
    n, count = probes.shape
    residual = probes - smoothed  # A z for each probe
    pairs = np.triu_indices(count, k=1)
    samples = (probes.T @ probes)[pairs] - (residual.T @ residual)[pairs]  # zᵀ E w
    return n - 2.0 * (2.0 * trace - squares) + float(np.mean(samples**2))


def window_standard_errors(keys, y, weights, variance_weights, queries, radius, degree, kernel):
    """Fits at sorted ``queries`` and ``Σⱼ Lⱼ² / vⱼ`` for each (``weights`` those of the
    fit, ``variance_weights`` the ``v``): ``(fits, spread)``."""
    profile = POLYNOMIAL_KERNELS[kernel.name]
    lo, hi = windows_within(keys, queries, radius)
    s, t = polynomial_window_sums(keys, weights, y, queries, radius, lo, hi, profile,
                                  2 * degree, degree)  # fmt: skip
    a, redo = gram_solution(s, degree)
    fits = np.einsum("qi,qi->q", a, t)
    h, _ = polynomial_window_sums(keys, weights**2 / variance_weights, None, queries, radius,
                                  lo, hi, squared(profile), 2 * degree)  # fmt: skip
    spread = _quadratic(a, h, degree)
    if redo.any():
        rows = np.flatnonzero(redo)
        for part in local_fit(keys[:, None], y, weights, queries[rows, None], radius[rows],
                              degree, kernel):  # fmt: skip
            where = rows[part.rows]
            fits[where] = part.fits
            spread[where] = np.sum(part.operator**2 / variance_weights[part.neighbours], axis=1)
    return fits, spread
