"""Local polynomial fits on nearest-neighbour windows, as ``loess`` computes them.

At a query ``q`` with radius ``ρ`` the fit is weighted least squares of ``y`` on the
monomials of ``u = (x − q) / ρ`` up to ``degree`` (for degree 2: ``1, u_j, u_j²,
u_j u_k``), with weights ``w_i K(‖u_i‖)``; the fitted value is the intercept. As in
Cleveland, Grosse & Shyu's code the design's columns are scaled to unit norm and the
system solved by its singular values, those below ``100 ε`` of the largest dropped (a
pseudo-inverse where the neighbours cannot carry the polynomial). The value is linear
in ``y``: :func:`local_fit` returns each fit's row of the operator ``L`` (``ŷ = L y``)
over its neighbours, which the statistics (``tr L``, ``δ₁``, ``δ₂``) and standard errors
are made of.

Where the operator itself is not wanted, :mod:`.operator_rows` takes the fits and what
the statistics need of its rows from each query's moments instead (running sums in one
column, the compiled loop in several), solved by :func:`intercept_solution`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .. import kernels
from .windows import CHUNK_ENTRIES

__all__ = [
    "POLYNOMIAL_KERNELS",
    "LocalFit",
    "design",
    "hankel",
    "intercept_solution",
    "local_fit",
    "windows_within",
]

#: Kernels that are polynomials in ``|u|`` on ``[0, 1)``: ``(power, coefficient)``.
POLYNOMIAL_KERNELS = {
    "tricube": ((0, 1.0), (3, -3.0), (6, 3.0), (9, -1.0)),
    "epanechnikov": ((0, 1.0), (2, -1.0)),
    "biweight": ((0, 1.0), (2, -2.0), (4, 1.0)),
    "triweight": ((0, 1.0), (2, -3.0), (4, 3.0), (6, -1.0)),
    "triangular": ((0, 1.0), (1, -1.0)),
    "boxcar": ((0, 1.0),),
}
#: A key counts as inside a query's radius where ``|u| < INSIDE``: the farthest
#: neighbour, on the radius itself, weighs nothing whatever the rounding of ``|u|``
#: (which decides it for a kernel that does not vanish there, the boxcar). The compiled
#: loop (``expansions.c``) holds the same bound.
INSIDE = 1.0 - 1e-12
#: Singular values below this share of the largest are dropped (the pseudo-inverse).
SINGULAR = 100 * np.finfo(float).eps
#: Designs whose Gram matrix has a smaller eigenvalue ratio are solved by SVD.
GRAM_CONDITION = 1e-5


def design(u: np.ndarray, degree: int) -> np.ndarray:
    """The monomials of ``u`` (shape (..., d)) up to ``degree``, in ``loess``'s order:
    ``1``, each ``u_j``, then for each ``j`` its square and its products with the later
    columns. Shape (..., p)."""
    columns = [np.ones(u.shape[:-1])]
    d = u.shape[-1]
    if degree >= 1:
        columns += [u[..., j] for j in range(d)]
    if degree >= 2:
        columns += [u[..., j] * u[..., k] for j in range(d) for k in range(j, d)]
    return np.stack(columns, axis=-1)


def kernel_weights(kernel: kernels.Kernel, u2: np.ndarray) -> np.ndarray:
    """``K(‖u‖)`` from the squared scaled distance, zero from :data:`INSIDE` on (the
    tricube as ``loess`` writes it: ``(1 − (√u²)³)³``)."""
    if kernel.name == "tricube":
        root = np.sqrt(u2)
        return np.where(u2 < INSIDE**2, (1.0 - root**3) ** 3, 0.0)
    with np.errstate(divide="ignore"):
        return np.where(u2 < INSIDE**2, np.exp(kernel.log_profile(u2)), 0.0)


@dataclass(frozen=True)
class LocalFit:
    """Fits at a chunk of queries and their rows of the operator ``L``.

    Attributes
    ----------
    rows : slice
        The chunk's queries.
    neighbours : ndarray of int, shape (c, width)
        Rows of ``X`` each query's fit uses (padding repeats a row with zero weight).
    operator : ndarray, shape (c, width)
        ``L`` over those neighbours: ``fit = operator · y[neighbours]``.
    fits : ndarray, shape (c,)
    """

    rows: slice
    neighbours: np.ndarray
    operator: np.ndarray
    fits: np.ndarray


def local_fit(
    X: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray,
    queries: np.ndarray,
    radius: np.ndarray,
    degree: int,
    kernel: kernels.Kernel,
) -> Iterator[LocalFit]:
    """The local polynomial fits at ``queries`` (shape (m, d), scaled like ``X``), chunk
    by chunk, each with its operator rows. ``weights`` (shape (n,)) multiply the
    kernel's; ``radius`` (shape (m,)) from :func:`.neighbourhoods.radii`."""
    d = X.shape[1]
    p = design(np.zeros((1, d)), degree).shape[-1]
    for rows, neighbours, inside in _neighbour_chunks(X, queries, radius, p):
        u = (X[neighbours] - queries[rows, None, :]) / radius[rows, None, None]
        u2 = np.sum(u * u, axis=-1)
        root = np.sqrt(np.where(inside, weights[neighbours] * kernel_weights(kernel, u2), 0.0))
        operator = _intercept_rows(root[..., None] * design(u, degree)) * root
        yield LocalFit(rows, neighbours, operator, np.sum(operator * y[neighbours], axis=1))


def _neighbour_chunks(X, queries, radius, p):
    """Chunks of queries with the rows within their radius: ``(rows, neighbours,
    inside)``, ``neighbours`` (c, width) padded with a row marked outside. In one column
    a window of the sorted rows; otherwise the k-d tree's nearest rows up to the most any
    query has within its radius."""
    n, count = X.shape[0], queries.shape[0]
    if X.shape[1] == 1:
        order = np.argsort(X[:, 0], kind="stable")
        keys = X[order, 0]
        lo = np.searchsorted(keys, queries[:, 0] - radius, side="left")
        hi = np.searchsorted(keys, queries[:, 0] + radius, side="right")
        step = max(1, CHUNK_ENTRIES // max(int((hi - lo).max(initial=1)) * p, 1))
        for start in range(0, count, step):
            rows = slice(start, min(start + step, count))
            slots = lo[rows, None] + np.arange(max(int((hi[rows] - lo[rows]).max()), 1))
            yield rows, order[np.minimum(slots, n - 1)], slots < hi[rows, None]
        return
    from scipy.spatial import cKDTree

    tree = cKDTree(X)
    reach = radius * (1 + 1e-12)
    within = tree.query_ball_point(queries, reach, return_length=True, workers=-1)
    widest = max(int(within.max()), 1)
    step = max(1, CHUNK_ENTRIES // (widest * p))
    for start in range(0, count, step):
        rows = slice(start, min(start + step, count))
        bound = float(reach[rows].max())
        distance, found = tree.query(
            queries[rows], k=widest, distance_upper_bound=bound, workers=-1
        )
        shape = (rows.stop - rows.start, widest)
        distance, found = np.reshape(distance, shape), np.reshape(found, shape)
        yield rows, np.minimum(found, n - 1), (found < n) & (distance <= reach[rows, None])


def _intercept_rows(basis: np.ndarray) -> np.ndarray:
    """The first row of the pseudo-inverse of each weighted design (c, width, p), after
    scaling its columns to unit norm: shape (c, width). Well-conditioned designs (their
    Gram matrix's eigenvalues within :data:`GRAM_CONDITION` of each other, so that no
    singular value is dropped and the normal equations lose no digit that matters) are
    solved through the small Gram matrix; the others by the singular values."""
    norms = np.sqrt(np.sum(basis * basis, axis=1))
    norms = np.where(norms > 0, norms, 1.0)
    unit = basis / norms[:, None, :]
    gram = np.matmul(unit.transpose(0, 2, 1), unit)
    values, vectors = np.linalg.eigh(gram)
    good = values[:, 0] > GRAM_CONDITION * values[:, -1]
    out = np.empty(basis.shape[:2])
    if good.any():
        inverse_first = np.einsum("cij,cj->ci", vectors[good], vectors[good, 0, :] / values[good])
        out[good] = np.einsum("cwp,cp->cw", unit[good], inverse_first)
    if not good.all():
        left, singular, right = np.linalg.svd(unit[~good], full_matrices=False)
        keep = singular > SINGULAR * singular[:, :1]
        scale = np.where(keep, right[:, :, 0] / np.where(keep, singular, 1.0), 0.0)
        out[~good] = np.einsum("cwj,cj->cw", left, scale)
    return out / norms[:, :1]


def windows_within(keys, queries, radius):
    """``(lo, hi)``: the sorted keys within :data:`INSIDE` of each query's radius (those
    on it weigh nothing), ``keys[lo:hi]``."""
    lo = np.searchsorted(keys, queries - INSIDE * radius, side="right")
    hi = np.searchsorted(keys, queries + INSIDE * radius, side="left")
    return lo, hi


def intercept_solution(gram: np.ndarray, limit: float) -> tuple[np.ndarray, np.ndarray]:
    """``a = G⁻¹ e₀`` for each query's Gram matrix ``G`` (q, p, p) of the monomials (so that
    the fit is ``aᵀ T``), solved with ``G`` scaled to a unit diagonal; and the rows whose
    scaled ``G`` has a condition number beyond ``limit`` (their ``a`` zero), to be fitted
    directly (:func:`local_fit`)."""
    p = gram.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.sqrt(np.abs(np.diagonal(gram, axis1=1, axis2=2)))
        scaled = gram / (scale[:, :, None] * scale[:, None, :])
        scaled = np.where(np.isfinite(scaled), scaled, 0.0)
        size = np.abs(np.linalg.eigvalsh(scaled))  # symmetric: its singular values
        condition = size.max(axis=-1) / size.min(axis=-1)
    good = np.isfinite(condition) & (condition < limit)
    a = np.zeros((gram.shape[0], p))
    if good.any():
        unit = np.zeros((int(good.sum()), p, 1))
        unit[:, 0, 0] = 1.0 / scale[good, 0]
        a[good] = np.linalg.solve(scaled[good], unit)[..., 0] / scale[good]
    return a, ~good


def hankel(s: np.ndarray) -> np.ndarray:
    """The Gram matrices ``G_jk = s_(j+k)`` (q, p, p) of one column's power moments ``s``
    (q, 2p − 1)."""
    p = (s.shape[1] + 1) // 2
    return s[:, np.add.outer(np.arange(p), np.arange(p))]
