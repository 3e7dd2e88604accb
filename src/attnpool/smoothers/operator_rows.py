"""What LOESS needs of its operator's rows, from each query's moments rather than the rows.

At a query with moments ``G = Σⱼ wⱼ Kⱼ bⱼ bⱼᵀ`` (``b`` the monomials of ``u = (x − q) / ρ``)
the fit's weights on the data are ``Lⱼ = wⱼ Kⱼ bⱼᵀ a`` with ``a = G⁻¹ e₀``, so that

- the fit is ``aᵀ T``, ``T = Σ w K y b``, and the smooth of any other column likewise;
- a point's weight on itself is ``Lᵢᵢ = wᵢ K(0) a₀`` (``u = 0``, ``K(0) = 1``), whence
  ``tr L`` and the leave-one-out residuals;
- ``Σⱼ Lⱼ² sⱼ`` is ``aᵀ H a`` with ``H = Σ w² K² s b bᵀ``: ``δ₁`` (``s = 1``) and R's
  standard errors (``s`` the reciprocal prior weights).

Two engines give them. In one column, with a kernel that is a polynomial in ``|u|``,
running sums of powers (:func:`attnpool.engines.window_sums.polynomial_window_sums`)
give ``G``, ``T`` and ``H`` in ``O(n log n)``, the kernel squared being a polynomial too.
In two to eight columns the compiled loop (:mod:`.neighbour_sums`) sums ``G`` and ``T``
over each neighbourhood, then ``Σ l² s`` and the smooths in a second pass with ``a``.
Rows whose small systems are too ill-conditioned for either (the sums' rounding, or a
neighbourhood that cannot carry the polynomial) are computed from their operator rows by
:func:`.local_polynomial.local_fit`, whose pseudo-inverse is ``loess``'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engines.window_sums import polynomial_window_sums
from ..kernels import Kernel
from .local_polynomial import (
    POLYNOMIAL_KERNELS,
    hankel,
    intercept_solution,
    local_fit,
    windows_within,
)
from .neighbour_sums import (
    compiled_neighbours,
    neighbour_moments,
    neighbour_rows,
    strips,
    terms,
)

__all__ = ["MOMENT_WORK", "RowSums", "row_sums", "served"]

#: Queries × rows from which the moments pay for themselves.
MOMENT_WORK = 2**20
#: Condition numbers beyond which a row is refitted from its operator row: running sums
#: lose digits to cancellation that the direct sums of several columns do not.
CONDITION = {"windows": 1e8, "neighbours": 1e5}
#: Entries of the queries' Gram matrices held at once in several columns (32 MB).
GRAM_ENTRIES = 2**22


@dataclass(frozen=True)
class RowSums:
    """Sums over each query's row of the operator ``L``.

    Attributes
    ----------
    fits : ndarray, shape (m,)
        ``L y``.
    own : ndarray or None, shape (m,)
        ``Lᵢᵢ``, where the queries are the rows of ``X``.
    spread : ndarray or None, shape (m,)
        ``Σⱼ Lᵢⱼ² sⱼ``, where ``s`` was given.
    smooths : ndarray or None, shape (m, c)
        ``L Z`` of the ``extra`` columns, where given.
    """

    fits: np.ndarray
    own: np.ndarray | None
    spread: np.ndarray | None
    smooths: np.ndarray | None


def served(X: np.ndarray, kernel: Kernel, work: int) -> bool:
    """Whether moments serve a problem of ``work`` queries × rows of ``X``: one column and
    a polynomial kernel, or the compiled loop's columns and kernels; and enough work."""
    if work <= MOMENT_WORK:
        return False
    if X.shape[1] == 1:
        return kernel.name in POLYNOMIAL_KERNELS
    return compiled_neighbours(X, kernel)


def row_sums(
    X: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray,
    queries: np.ndarray,
    radius: np.ndarray,
    degree: int,
    kernel: Kernel,
    *,
    at_rows: bool = False,
    square_weights: np.ndarray | None = None,
    extra: np.ndarray | None = None,
) -> RowSums:
    """The fits at ``queries`` (m, d) of ``radius`` (m,) on ``X`` (n, d), ``y`` and
    ``weights`` (n,), with ``Lᵢᵢ`` if ``at_rows`` (the queries are ``X``'s rows), ``Σ L² s``
    for ``square_weights`` ``s`` (n,) and the smooths of ``extra`` (n, c), as
    :func:`served` allows."""
    engine = _windows if X.shape[1] == 1 else _neighbours
    fits, a, spread, smooths, redo = engine(
        X, y, weights, queries, radius, degree, kernel, square_weights, extra
    )
    own = weights * a[:, 0] if at_rows else None
    if redo.any():
        rows = np.flatnonzero(redo)
        for part in local_fit(X, y, weights, queries[rows], radius[rows], degree, kernel):
            where = rows[part.rows]
            fits[where] = part.fits
            if own is not None:
                mine = part.neighbours == where[:, None]
                own[where] = np.sum(np.where(mine, part.operator, 0.0), axis=1)
            if spread is not None:
                squares = part.operator**2 * square_weights[part.neighbours]
                spread[where] = np.sum(squares, axis=1)
            if smooths is not None:
                smooths[where] = np.einsum("cw,cwk->ck", part.operator, extra[part.neighbours])
    return RowSums(fits, own, spread, smooths)


def _windows(X, y, weights, queries, radius, degree, kernel, square_weights, extra):
    """One column: ``G``, ``T`` and ``H`` from running sums over the sorted keys."""
    keys, queries = X[:, 0], queries[:, 0]
    order = np.argsort(keys, kind="stable")
    at = np.argsort(queries, kind="stable")
    ordered, reach = queries[at], radius[at]
    profile = POLYNOMIAL_KERNELS[kernel.name]
    values = y[:, None] if extra is None else np.column_stack([y, extra])
    lo, hi = windows_within(keys[order], ordered, reach)
    s, t = polynomial_window_sums(keys[order], weights[order], values[order], ordered, reach,
                                  lo, hi, profile, 2 * degree, degree)  # fmt: skip
    a, redo = intercept_solution(hankel(s), CONDITION["windows"])
    smoothed = np.einsum("qi,qic->qc", a, t)
    spread = None
    if square_weights is not None:
        squares = (weights**2 * square_weights)[order]
        h, _ = polynomial_window_sums(keys[order], squares, None, ordered, reach, lo, hi,
                                      _squared(profile), 2 * degree)  # fmt: skip
        spread = np.empty(at.shape[0])
        spread[at] = np.einsum("qi,qij,qj->q", a, hankel(h), a)
    back = np.empty_like(a)
    back[at] = a
    found, again = np.empty_like(smoothed), np.empty_like(redo)
    found[at], again[at] = smoothed, redo
    return found[:, 0], back, spread, None if extra is None else found[:, 1:], again


def _squared(profile):
    """The profile of ``K²`` from that of ``K`` (products of the ``|u|`` powers)."""
    terms: dict[int, float] = {}
    for e1, c1 in profile:
        for e2, c2 in profile:
            terms[e1 + e2] = terms.get(e1 + e2, 0.0) + c1 * c2
    return tuple(sorted(terms.items()))


def _neighbours(X, y, weights, queries, radius, degree, kernel, square_weights, extra):
    """Several columns: ``G`` and ``T`` from the compiled loop, then the rows' sums."""
    layout = strips(X, float(np.median(radius)))
    m, p = queries.shape[0], terms(X.shape[1], degree)
    a, fits, redo = np.empty((m, p)), np.empty(m), np.empty(m, dtype=bool)
    order = layout.query_order(queries)
    step = max(1, GRAM_ENTRIES // (p * p))
    for start in range(0, m, step):  # neighbouring queries together, a bounded G at once
        rows = order[start : start + step]
        gram, cross = neighbour_moments(layout, weights, y[:, None], queries[rows],
                                        radius[rows], degree, kernel)  # fmt: skip
        a[rows], redo[rows] = intercept_solution(gram, CONDITION["neighbours"])
        fits[rows] = np.einsum("qi,qi->q", a[rows], cross[:, :, 0])
    if square_weights is None and extra is None:
        return fits, a, None, None, redo
    columns = np.zeros((X.shape[0], 0)) if extra is None else extra
    squares = np.ones(X.shape[0]) if square_weights is None else square_weights
    spread, smooths = neighbour_rows(layout, weights, columns, squares, a, queries, radius,
                                     degree, kernel)  # fmt: skip
    return (fits, a, None if square_weights is None else spread,
            None if extra is None else smooths, redo)  # fmt: skip
