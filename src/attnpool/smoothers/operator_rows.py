"""What LOESS needs of its operator's rows, from each query's moments rather than the rows.

At a query with moments ``G = Σⱼ wⱼ Kⱼ bⱼ bⱼᵀ`` (``b`` the monomials of ``u = (x − q) / ρ``)
the fit's weights on the data are ``Lⱼ = wⱼ Kⱼ bⱼᵀ a`` with ``a = G⁻¹ e₀``, so that

- the fit is ``aᵀ T``, ``T = Σ w K y b``, and the smooth of any other column likewise;
- a point's weight on itself is ``Lᵢᵢ = wᵢ K(0) a₀`` (``u = 0``, ``K(0) = 1``), whence
  ``tr L`` and the leave-one-out residuals;
- ``Σⱼ Lⱼ² sⱼ`` is ``aᵀ H a`` with ``H = Σ w² K² s b bᵀ``: ``δ₁`` (``s = 1``) and R's
  standard errors (``s`` the reciprocal prior weights).

``G``, ``T`` and, given ``a``, ``Σ l² s`` and ``Σ l z`` are sums over the keys: an engine
(:func:`key_engine`) holds one set of keys and returns them for any queries, so that the
sums over a whole data set are those over its parts added (as Dask's fit adds them,
:mod:`attnpool.distributed.loess`). Three engines give them. In one column, with a
kernel that is a polynomial in ``|u|``, running sums of powers
(:func:`attnpool.engines.window_sums.polynomial_window_sums`) in ``O(n log n)``, the
kernel squared being a polynomial too. In two to eight columns the compiled loop
(:mod:`.neighbour_sums`) over each neighbourhood. Any other kernel or width: every pair
in bounded tiles. Rows whose small systems are too ill-conditioned for the sums (their
rounding, or a neighbourhood that cannot carry the polynomial) are computed from their
operator rows by :func:`.local_polynomial.local_fit` (:func:`refit`), whose
pseudo-inverse is ``loess``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engines.window_sums import Windows, polynomial_window_sums
from ..kernels import Kernel
from .local_polynomial import (
    POLYNOMIAL_KERNELS,
    design,
    hankel,
    intercept_solution,
    kernel_weights,
    local_fit,
    windows_within,
)
from .neighbour_sums import (
    Neighbourhoods,
    compiled_neighbours,
    neighbour_moments,
    neighbour_rows,
    strips,
    terms,
)
from .windows import CHUNK_ENTRIES

__all__ = [
    "MOMENT_WORK",
    "Columns",
    "RowSums",
    "engine_type",
    "key_engine",
    "refit",
    "row_sums",
    "served",
]

#: Queries × rows from which the moments pay for themselves.
MOMENT_WORK = 2**20
#: Entries of the queries' Gram matrices held at once (32 MB).
GRAM_ENTRIES = 2**22


@dataclass
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
    """Whether moments serve a problem of ``work`` queries × rows of ``X``: running sums
    or the compiled loop serve its columns and kernel (:func:`engine_type`; every pair
    would not beat the operator's rows), and there is enough work."""
    return work > MOMENT_WORK and engine_type(X.shape[1], kernel) is not PairEngine


class WindowEngine:
    """One column and a kernel polynomial in ``|u|``: running sums over the sorted keys.
    Their cancellation costs digits that direct sums do not, hence the looser bound on
    the systems' condition numbers."""

    condition = 1e8

    def __init__(self, X: np.ndarray, weights: np.ndarray, kernel: Kernel) -> None:
        self.order = np.argsort(X[:, 0], kind="stable")
        self.keys, self.weights = X[self.order, 0], weights[self.order]
        self.profile = POLYNOMIAL_KERNELS[kernel.name]

    def query_order(self, queries: np.ndarray) -> np.ndarray:
        return np.argsort(queries[:, 0], kind="stable")

    def _windows(self, at, weights, values, profile, moments, value_moments):
        order = self.query_order(at.queries)
        ordered, reach = at.queries[order, 0], at.radius[order]
        lo, hi = windows_within(self.keys, ordered, reach)
        windows = Windows(ordered, reach, lo, hi)
        s, t = polynomial_window_sums(self.keys, weights, values, windows, profile, moments,
                                      value_moments)  # fmt: skip
        found_s, found_t = np.empty_like(s), np.empty_like(t)
        found_s[order], found_t[order] = s, t
        return found_s, found_t

    def moments(self, values: np.ndarray, at: Neighbourhoods):
        """``G`` (m, p, p) and ``T`` (m, p, c) of ``values`` (n, c)."""
        s, t = self._windows(at, self.weights, values[self.order], self.profile,
                             2 * at.degree, at.degree)  # fmt: skip
        return hankel(s), t

    def rows(self, columns: np.ndarray, squares: np.ndarray, a: np.ndarray, at: Neighbourhoods):
        """``Σ l² s`` (m,) and the smooths ``Σ l z`` (m, c) of ``columns`` (n, c)."""
        squared = self.weights**2 * squares[self.order]
        h, t = self._windows(at, squared, None, _squared(self.profile), 2 * at.degree, -1)
        spread = np.einsum("qi,qij,qj->q", a, hankel(h), a)
        if columns.shape[1] == 0:
            return spread, np.zeros((a.shape[0], 0))
        _, t = self._windows(at, self.weights, columns[self.order], self.profile, at.degree,
                             at.degree)  # fmt: skip
        return spread, np.einsum("qi,qic->qc", a, t)


def _squared(profile):
    """The profile of ``K²`` from that of ``K`` (products of the ``|u|`` powers)."""
    terms: dict[int, float] = {}
    for e1, c1 in profile:
        for e2, c2 in profile:
            terms[e1 + e2] = terms.get(e1 + e2, 0.0) + c1 * c2
    return tuple(sorted(terms.items()))


class NeighbourEngine:
    """Two to eight columns: the compiled loop over each neighbourhood (the smoothed
    ``columns`` of its second pass must be signs, ±1)."""

    condition = 1e5

    def __init__(self, X, weights, kernel, radius_hint):
        self.layout = strips(X, radius_hint)
        self.weights, self.kernel = weights, kernel

    def query_order(self, queries: np.ndarray) -> np.ndarray:
        return self.layout.query_order(queries)

    def moments(self, values: np.ndarray, at: Neighbourhoods):
        return neighbour_moments(self.layout, self.weights, values, at, self.kernel)

    def rows(self, columns: np.ndarray, squares: np.ndarray, a: np.ndarray, at: Neighbourhoods):
        return neighbour_rows(self.layout, self.weights, columns, squares, a, at, self.kernel)


class PairEngine:
    """Any kernel and width: every query–key pair, in tiles of bounded size."""

    condition = 1e5

    def __init__(self, X, weights, kernel):
        self.X, self.weights, self.kernel = X, weights, kernel

    def query_order(self, queries: np.ndarray) -> np.ndarray:
        return np.arange(queries.shape[0])

    def _tiles(self, at: Neighbourhoods):
        """``(rows, w K, b)`` for tiles of queries: (c, n) and (c, n, p)."""
        n, d = self.X.shape
        step = max(1, CHUNK_ENTRIES // max(n * terms(d, at.degree), 1))
        for start in range(0, at.queries.shape[0], step):
            rows = slice(start, start + step)
            u = (self.X[None] - at.queries[rows, None, :]) / at.radius[rows, None, None]
            weighted = self.weights * kernel_weights(self.kernel, np.sum(u * u, axis=-1))
            yield rows, weighted, design(u, at.degree)

    def moments(self, values: np.ndarray, at: Neighbourhoods):
        m, p = at.queries.shape[0], terms(self.X.shape[1], at.degree)
        gram, cross = np.empty((m, p, p)), np.empty((m, p, values.shape[1]))
        for rows, weighted, basis in self._tiles(at):
            gram[rows] = np.einsum("cn,cnp,cnr->cpr", weighted, basis, basis)
            cross[rows] = np.einsum("cn,cnp,nk->cpk", weighted, basis, values)
        return gram, cross

    def rows(self, columns: np.ndarray, squares: np.ndarray, a: np.ndarray, at: Neighbourhoods):
        spread = np.empty(at.queries.shape[0])
        smooths = np.empty((at.queries.shape[0], columns.shape[1]))
        for rows, weighted, basis in self._tiles(at):
            operator = weighted * np.einsum("cnp,cp->cn", basis, a[rows])
            spread[rows] = np.sum(operator**2 * squares, axis=1)
            smooths[rows] = operator @ columns
        return spread, smooths


def engine_type(d: int, kernel: Kernel) -> type:
    """Which engine serves keys of ``d`` columns and ``kernel``: running sums, the compiled
    loop, or every pair."""
    if d == 1 and kernel.name in POLYNOMIAL_KERNELS:
        return WindowEngine
    if compiled_neighbours(np.empty((0, d)), kernel):
        return NeighbourEngine
    return PairEngine


def key_engine(X: np.ndarray, weights: np.ndarray, kernel: Kernel, radius_hint: float):
    """The engine (:func:`engine_type`) for the keys ``X`` (n, d) with ``weights`` (n,).
    ``radius_hint``: a typical query radius."""
    engine = engine_type(X.shape[1], kernel)
    if engine is NeighbourEngine:
        return NeighbourEngine(X, weights, kernel, radius_hint)
    return engine(X, weights, kernel)


def query_chunks(order: np.ndarray, p: int):
    """``order`` cut into runs whose Gram matrices (p × p each) hold
    :data:`GRAM_ENTRIES` numbers."""
    step = max(1, GRAM_ENTRIES // (p * p))
    return [order[start : start + step] for start in range(0, order.shape[0], step)]


@dataclass(frozen=True)
class Columns:
    """What a query's operator row is summed against, per training row: the responses
    ``values`` (n,) and prior ``weights`` (n,); for the second pass the weights
    ``squares`` of ``Σ L² s`` (n,) and the ``extra`` columns to smooth (n, c: ±1 signs in
    several predictors), or None. (Over Dask blocks: each a list of per-block arrays.)"""

    values: Any
    weights: Any
    squares: Any = None
    extra: Any = None

    def of(self, index: Any) -> Columns:
        """Each column's entries ``index`` (over blocks: block ``index``'s arrays)."""
        return Columns(*(None if c is None else c[index] for c in self._fields()))

    @staticmethod
    def joined(pieces: list[Columns]) -> Columns:
        """The ``pieces``' rows, one after another."""
        fields = zip(*(piece._fields() for piece in pieces), strict=True)
        return Columns(*(None if c[0] is None else np.concatenate(c) for c in fields))

    def _fields(self) -> tuple:
        return self.values, self.weights, self.squares, self.extra


def row_sums(
    X: np.ndarray, columns: Columns, at: Neighbourhoods, kernel: Kernel, *, at_rows: bool = False
) -> RowSums:
    """The fits in the neighbourhoods ``at`` (m queries) on ``X`` (n, d) and its
    ``columns``, with ``Lᵢᵢ`` if ``at_rows`` (the queries are ``X``'s rows), ``Σ L² s`` for
    ``columns.squares`` and the smooths of ``columns.extra``."""
    y, weights = columns.values, columns.weights
    engine = key_engine(X, weights, kernel, float(np.median(at.radius)))
    m, p = at.queries.shape[0], terms(X.shape[1], at.degree)
    a, fits, redo = np.empty((m, p)), np.empty(m), np.empty(m, dtype=bool)
    for rows in query_chunks(engine.query_order(at.queries), p):
        gram, cross = engine.moments(y[:, None], at.rows(rows))
        a[rows], redo[rows] = intercept_solution(gram, engine.condition)
        fits[rows] = np.einsum("qi,qi->q", a[rows], cross[:, :, 0])
    sums = RowSums(fits, weights * a[:, 0] if at_rows else None, None, None)
    if columns.squares is not None or columns.extra is not None:
        extra = np.zeros((X.shape[0], 0)) if columns.extra is None else columns.extra
        squares = np.ones(X.shape[0]) if columns.squares is None else columns.squares
        spread, smooths = engine.rows(extra, squares, a, at)
        sums.spread = None if columns.squares is None else spread
        sums.smooths = None if columns.extra is None else smooths
    if redo.any():
        rows = np.flatnonzero(redo)
        refit(sums, rows, X, columns, at.rows(rows), kernel, own_rows=rows if at_rows else None)
    return sums


def refit(
    sums: RowSums,
    rows: np.ndarray,
    X: np.ndarray,
    columns: Columns,
    at: Neighbourhoods,
    kernel: Kernel,
    own_rows: np.ndarray | None = None,
) -> None:
    """Replace ``rows`` of ``sums`` by the sums over the operator rows in the
    neighbourhoods ``at`` (of those rows), computed directly from keys ``X`` that hold
    every neighbour of them; ``own_rows``: each query's own row of ``X`` (where
    ``sums.own`` is kept)."""
    parts = local_fit(X, columns.values, columns.weights, at.queries, at.radius, at.degree, kernel)
    for part in parts:
        where = rows[part.rows]
        sums.fits[where] = part.fits
        if sums.own is not None:
            mine = part.neighbours == own_rows[part.rows, None]
            sums.own[where] = np.sum(np.where(mine, part.operator, 0.0), axis=1)
        if sums.spread is not None:
            squares = part.operator**2 * columns.squares[part.neighbours]
            sums.spread[where] = np.sum(squares, axis=1)
        if sums.smooths is not None:
            extra = columns.extra[part.neighbours]
            sums.smooths[where] = np.einsum("cw,cwk->ck", part.operator, extra)
