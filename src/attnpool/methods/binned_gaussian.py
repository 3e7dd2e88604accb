"""Gaussian binning with its leading error taken away, and a bound on what is left.

Binning a key linearly and interpolating at a query multilinearly sums each pair as the
tensor-product interpolant of ``F(q, x) = K(q − x)`` over the ``2d`` coordinates of both,
on the grid's nodes. Along one coordinate, a point ``a`` above its lower node and ``b``
below its upper one (``a + b = Δ``), linear interpolation errs by ``½ ab ∂²F + R`` with
``|R| ≤ Δ³/48 · max |∂³F|`` (Taylor to third order at the point). Telescoped over the
coordinates, for the scaled Gaussian ``K(u) = Π_j φ(u_j)``:

    Σ_i K̃(q, x_i) = Σ_i K(q − x_i)
                    + ½ Σ_j [α_j β_j(q) Σ_i K_jj(q − x_i) + Σ_i a_ij b_ij K_jj(q − x_i)] + E

The two second-derivative sums are binned as well (the keys' ``a_ij b_ij`` as weights)
and taken away. What is left, per pair, with maxima over the pair's box (``±2Δ`` about
each node offset it weighs), ``K_jjkk = ∂⁴K / ∂u_j² ∂u_k²``, ``c_jj = 5/64``, ``c_jk = 3/32``:

    |E| ≤ Σ_j Δ_j³/24 · max |K_jjj| + Σ_{j,k} c_jk Δ_j² Δ_k² · max |K_jjkk|

(the third-order remainders of both interpolations; the second-derivative sums' own
binning error and the telescoping's cross terms). Of third order and summed without
cancellation, it settles a density to 1e-3 of itself at 6.6 nodes per bandwidth in one
dimension and 8.7 in two, where the second-order bound of :mod:`.binned_bound` (which
serves the other kernels) needs 27 and 49. The bound is a sum of separable terms, as
the kernels are: every kernel's spectrum is an outer product of one-dimensional ones.
Queries on a lattice (a plotting grid) are found here (:func:`lattice`) and summed
from the keys' moments about their nearest nodes on a grid aligned with them
(:func:`aligned_grid`, :mod:`.binned_taylor`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

from .binned import corners, interpolate
from .binning import (
    FFT_ROUNDING,
    QUERY_CHUNK,
    Binning,
    GridPlan,
    bin_points,
    counted_features,
    key_total,
    second_moments,
)

#: Half-width of a pair's box about a node offset it weighs, in spacings.
BOX = 2
#: Queries whose ``α_j β_j`` are all below this times ``Δ_j²`` count as on the nodes:
#: their second-order sums are left in (and bounded), not computed.
ON_NODE = 1e-9


def derivative(order: int, t: Any) -> Any:
    """``φ⁽ᵏ⁾(t)`` of ``φ(t) = exp(−t²/2)``: ``(−1)ᵏ Heₖ(t) φ(t)`` (Hermite polynomials)."""
    t = np.asarray(t, np.float64)
    previous, hermite = np.zeros_like(t), np.ones_like(t)
    for k in range(order):  # He_{k+1} = t He_k − k He_{k−1}
        previous, hermite = hermite, t * hermite - k * previous
    return (-1.0) ** order * hermite * np.exp(-0.5 * t * t)


#: Where ``|φ⁽ᵏ⁾|`` may peak, ``k = 0 … 4``: the roots of ``He_{k+1}``.
CRITICAL = (
    (0.0,),
    (-1.0, 1.0),
    (-math.sqrt(3.0), 0.0, math.sqrt(3.0)),
    tuple(s * math.sqrt(3.0 + r * math.sqrt(6.0)) for s in (-1, 1) for r in (-1, 1)),
    (0.0, *(s * math.sqrt(5.0 + r * math.sqrt(10.0)) for s in (-1, 1) for r in (-1, 1))),
)


def box_maxima(spacing: float, span: int) -> np.ndarray:
    """``(5, 2·span + 1)``: ``max |φ⁽ᵏ⁾(t)|`` over ``|t − vΔ| ≤ 2Δ``, ``k = 0 … 4``, at node
    offsets ``v = −span … span`` (scaled units): :func:`hermite_maxima` over boxes of
    :data:`BOX` spacings."""
    return np.stack([hermite_maxima(k, spacing, span, BOX * spacing) for k in range(5)])


def hermite_maxima(order: int, spacing: float, span: int, half: float) -> np.ndarray:
    """``max |φ^(order)(u)|`` over ``|u − vΔ| ≤ half``, node offsets ``v = −span … span``:
    the larger of the ends and of the critical points inside (the roots of
    ``He_{order+1}``), raised by a few roundings."""
    centre = np.arange(-span, span + 1) * spacing
    low, high = centre - half, centre + half
    largest = np.maximum(np.abs(derivative(order, low)), np.abs(derivative(order, high)))
    for root, peak in _critical(order):
        largest = np.where((low <= root) & (root <= high), np.maximum(largest, peak), largest)
    return np.asarray(largest * (1 + 1e-12))


@cache
def _critical(order: int) -> tuple[tuple[float, float], ...]:
    """The roots of ``He_{order+1}`` (where ``|φ^(order)|`` may peak) and ``|φ^(order)|``
    there: :data:`CRITICAL` up to order 4; beyond, the eigenvalues of the Jacobi matrix
    of the probabilists' Hermite polynomials (to ~1e-14, the peaks raised by 1e-9)."""
    if order < len(CRITICAL):
        return tuple((r, abs(float(derivative(order, r)))) for r in CRITICAL[order])
    jacobi = np.diag(np.sqrt(np.arange(1.0, order + 1)), 1)
    roots = np.linalg.eigvalsh(jacobi + jacobi.T)
    return tuple((float(r), abs(float(derivative(order, r))) * (1 + 1e-9)) for r in roots)


def bound_terms(
    spacing: Any, spans: Sequence[int], place: Any = None, corrected: bool = True
) -> list[tuple[float, list[np.ndarray]]]:
    """The pair bound ``B(v)`` as separable terms ``(coefficient, [table per axis])``:
    ``B(v) = Σ coefficient · Π_j table_j(v_j)``, tables over ``−span_j … span_j``.

    ``place (d,)``: the queries' largest ``α_j β_j`` (None: ``Δ_j²/4``, any query; 0 for
    queries on nodes); a key's is at most ``Δ_j²/4``. With ``t`` a coordinate's ``ab``,
    its third-order remainder is at most ``t (Δ² − 2t) / (6Δ) · max |K_jjj|``; with
    ``T_j`` the sum of the key's and the query's ``t`` and ``S_j`` that of their squares,
    the fourth-order terms are ``⅜ Σ_{j,k} T_j T_k max |K_jjkk| − ⅛ Σ_j S_j max |K_jjjj|``
    (``Δ_j²/4`` for both gives the module's ``5/64`` and ``3/32``). ``corrected=False``:
    the queries' second-order sums are not taken away, adding ``½ α_j β_j max |K_jj|``."""
    spacing = np.asarray(spacing, np.float64)
    d = spacing.size
    key = spacing**2 / 4
    query = key if place is None else np.minimum(np.asarray(place, np.float64), key)
    total, squares = key + query, key**2 + query**2
    maxima = [box_maxima(h, span) for h, span in zip(spacing, spans, strict=True)]

    def tables(orders: dict[int, int]) -> list[np.ndarray]:
        return [maxima[a][orders.get(a, 0)] for a in range(d)]

    terms = []
    for j in range(d):
        third = sum(t * (spacing[j] ** 2 - 2 * t) for t in (key[j], query[j])) / (6 * spacing[j])
        terms.append((float(third), tables({j: 3})))
        same = 3 / 8 * total[j] ** 2 - squares[j] / 8
        terms.append((float(same), tables({j: 4})))
        terms.extend((float(3 / 8 * total[j] * total[k]), tables({j: 2, k: 2}))
                     for k in range(d) if k != j)  # fmt: skip
        if not corrected:
            terms.append((float(query[j] / 2), tables({j: 2})))
    return terms


#: How a grid serves its queries: their second-order sums taken away (``"corrected"``),
#: queries on its nodes (``"on nodes"``: nothing to correct), or many queries on a finer
#: grid, their interpolation's error bounded instead (``"bounded"``: cheaper per query).
QUERY_MODES = ("corrected", "on nodes", "bounded")
#: Queries per node of the ``"bounded"`` grid from which that grid is used.
QUERIES_PER_NODE = 8


def relative_bound(spacing: float, d: int, queries: str = "corrected") -> float:
    """The bound over the density, both summed over an infinite grid of keys one per node
    (keys spread evenly), at ``spacing`` in every dimension, for the ``queries`` of one
    of :data:`QUERY_MODES`."""
    span = int(np.ceil(9.0 / spacing)) + BOX
    offsets = np.arange(-span, span + 1) * spacing
    place = np.zeros(d) if queries == "on nodes" else None
    corrected = queries == "corrected"
    terms = bound_terms(np.full(d, spacing), [span] * d, place, corrected)
    bound = sum(c * np.prod([np.sum(t) for t in tables]) for c, tables in terms)
    return float(bound / np.sum(derivative(0, offsets)) ** d)


@cache
def nodes_for(tolerance: float, d: int, queries: str = "corrected") -> float:
    """Grid nodes per bandwidth at which :func:`relative_bound` is half of ``tolerance``
    (to 1%): secant steps on ``log bound`` against ``log nodes``, which is close to a
    line (of slope −3, or −2 for ``"bounded"`` queries)."""
    target = math.log(tolerance / 2)

    def excess(nodes: float) -> float:
        return math.log(relative_bound(1.0 / nodes, d, queries)) - target

    nodes, slope = 4.0, -3.0
    value = excess(nodes)
    for _ in range(20):
        step = min(max(-value / slope, -2.0), 2.0)  # at most e² a step
        if abs(step) < 0.005 and value <= 0:
            break
        following = nodes * math.exp(step + (0.002 if abs(step) < 0.005 else 0.0))
        new = excess(following)
        if new != value:
            slope = min((new - value) / math.log(following / nodes), -0.5)
        nodes, value = following, new
    return nodes


#: Distinct values per column up to which queries are checked for a lattice.
LATTICE_MAX = 2**16
#: Queries looked at for a lattice (rounded data pass the first test: sorting all of
#: them would cost more than the alignment saves).
LATTICE_ROWS = 2**18


def lattice(points: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """``(origin, step)``, each ``(d,)``, when every column's distinct values among the
    first :data:`LATTICE_ROWS` points are evenly spaced (a meshgrid, a plotting grid,
    KDEpy's grid; to 1e-6 of a step), else None. Only a guess: the sums measure where
    every query falls in its cell, so a wrong one costs time, never accuracy."""
    origin, step = [], []
    for column in np.asarray(points[:LATTICE_ROWS], np.float64).T:
        head = np.unique(column[:256])  # most scattered data fail here, before a sort
        gaps = np.diff(head)
        if head.size > 1 and np.any(np.abs(gaps / gaps.min() - np.round(gaps / gaps.min())) > 1e-6):
            return None
        values = np.unique(column)
        if not 2 <= values.size <= LATTICE_MAX:
            return None
        even = (values[-1] - values[0]) / (values.size - 1)
        if not even > 0 or np.max(np.abs(np.diff(values) - even)) > 1e-6 * even:
            return None
        origin.append(values[0])
        step.append(even)
    return np.array(origin), np.array(step)


def aligned_grid(
    low: Any, high: Any, origin: Any, step: Any, divisions: Any, tail: float, budget: int
) -> Any:
    """A grid over scaled ``[low, high]`` with the scaled query lattice ``origin + i·step``
    on its nodes, ``step / divisions`` apart (``divisions (d,)`` integers); None where it
    would pass ``budget`` nodes with the kernel's ``tail``."""
    from .binned import Grid

    spacing = step / np.asarray(divisions)
    before = np.ceil((origin - low) / spacing) + 1
    start = origin - before * spacing
    size = np.ceil((high - start) / spacing).astype(int) + 2
    if np.prod(size + 2 * np.ceil(tail / spacing)) > budget:
        return None
    return Grid(tuple(start), tuple(spacing), tuple(int(n) for n in size))


def outside(spacing: Any, reach: Sequence[int], size: Sequence[int]) -> float:
    """The most one pair can add to a sum's error by weighing node offsets beyond
    ``reach`` (left out of the convolutions): ``K + ¼ Σ_j Δ_j² |K_jj|`` at ``r = (reach −
    2)Δ`` and beyond, with ``|K_jj| ≤ (r² + 1) K`` (``(r² + 1) e^{−r²/2}`` falls past
    ``r = 1`` and is at most ``2e^{−1/2}``); 0 when the reach spans the grid."""
    cut = [(r - BOX) * s for r, s, n in zip(reach, spacing, size, strict=True) if r < n - 1]
    if not cut:
        return 0.0
    t0, squares = max(min(cut), 0.0), 0.25 * float(np.sum(np.square(spacing)))
    if t0 < 1.0:
        return 1.0 + squares * 2.0 * math.exp(-0.5)
    return float(np.exp(-0.5 * t0 * t0) * (1.0 + squares * (t0 * t0 + 1.0)))


def fast_length(n: int) -> int:
    """The least ``2^a 3^b 5^c ≥ n`` (an FFT length NumPy's FFT handles quickly)."""
    best = 1 << int(np.ceil(np.log2(max(n, 1))))
    five = 1
    while five < best:
        three = five
        while three < best:
            power = three * (1 << max(0, int(np.ceil(np.log2(n / three)))))
            best = min(best, power) if power >= n else best
            three *= 3
        five *= 5
    return best


def _spectra(tables: Sequence[np.ndarray], lengths: Sequence[int]) -> Any:
    """The spectrum (as ``rfftn`` lays it out) of the separable kernel ``Π_j tables[j]``."""
    d = len(tables)
    spectrum = np.ones(())
    for j, (table, length) in enumerate(zip(tables, lengths, strict=True)):
        axis = np.fft.rfft(table, length) if j == d - 1 else np.fft.fft(table, length)
        spectrum = np.multiply.outer(spectrum, axis)
    return spectrum


def _padded(table: np.ndarray, span: int) -> np.ndarray:
    """A table over ``−r … r`` placed in one over ``−span … span`` (zeros beyond ``r``)."""
    extra = span - (table.size - 1) // 2
    return np.pad(table, extra)


def gaussian_sums(
    queries: Any,
    keys: Any,
    scale: Any,
    plan: GridPlan,
    values: Any = None,
    *,
    cells: bool = False,
    weights: Any = None,
) -> tuple[np.ndarray, np.ndarray, Any]:
    """:func:`.binned_host.binned_sums` for the Gaussian, corrected to third order:
    ``(sums (n, 1 + p), error (n,), binning)``, ``sums`` the ``[Σ_j K_ij, Σ_j K_ij v_j] /
    K(0)`` with binning's second-order error taken away, ``error`` a bound on ``Σ_j |error
    of K_ij|`` per query (:func:`bound_terms` convolved with the counts, the weight of
    offsets beyond the plan's ``reach``, the FFT's rounding). The plan's
    ``correct_queries``: False leaves the queries' second-order sums in and bounds them
    (the ``"bounded"`` queries of :data:`QUERY_MODES`); None takes them away unless the
    queries are on the nodes."""
    grid, reach, correct_queries = plan.grid, plan.reach, plan.correct_queries
    d, m = len(grid.size), keys.shape[0]
    spacing, size = np.asarray(grid.spacing, np.float64), grid.size
    scale = np.broadcast_to(np.asarray(scale, np.float64), (d,))
    features = counted_features(m, values, weights)
    f = 1 if features is None else features.shape[1]
    binned, where = bin_points(keys, scale, grid, features, cells=cells, moments=True)

    # every table centred in one of half-width `spans` (the bound's): one crop for all
    kernel_spans = [min(r, s - 1) for r, s in zip(reach, size, strict=True)]
    spans = [min(r + 2 * BOX, s - 1) for r, s in zip(reach, size, strict=True)]
    lengths = [fast_length(s + 2 * w) for s, w in zip(size, spans, strict=True)]
    value_tables, curvature_tables = [], []
    for r, w, h in zip(kernel_spans, spans, spacing, strict=True):
        offsets = np.arange(-r, r + 1) * h
        value_tables.append(_padded(derivative(0, offsets), w))
        curvature_tables.append(_padded(derivative(2, offsets), w))

    def kernel(j: int | None = None) -> list[np.ndarray]:  # K, or K_jj
        return [curvature_tables[a] if a == j else value_tables[a] for a in range(d)]

    queries = np.asarray(queries)
    n = queries.shape[0]
    chunks = [slice(i, i + QUERY_CHUNK) for i in range(0, n, QUERY_CHUNK)]

    def scaled(rows: slice) -> Any:
        return np.asarray(queries[rows], np.float64) * scale

    place = np.zeros(d)  # the queries' largest α_j β_j
    for rows in chunks:
        place = np.maximum(place, np.max(second_moments(scaled(rows), grid), axis=0))
    # queries on nodes (to rounding): their second-order sums are not worth two FFTs
    corrected = bool(np.any(place > ON_NODE * spacing**2)) and correct_queries is not False
    terms = bound_terms(spacing, spans, place, corrected)

    # features first: the FFTs run over contiguous planes
    axes = tuple(range(1, d + 1))
    data = np.fft.rfftn(np.ascontiguousarray(np.moveaxis(binned, -1, 0)), s=lengths, axes=axes)
    columns = f * (d + 1 if corrected else 1)
    spectra = np.empty((columns + 1, *data.shape[1:]), data.dtype)
    np.multiply(data[:f], _spectra(kernel(), lengths), out=spectra[:f])
    for j in range(d):
        curvature = _spectra(kernel(j), lengths)
        spectra[:f] -= 0.5 * data[f * (j + 1) : f * (j + 2)] * curvature
        if corrected:
            np.multiply(data[:f], curvature, out=spectra[f * (j + 1) : f * (j + 2)])
    bound = sum(c * _spectra(tables, lengths) for c, tables in terms)
    np.multiply(data[0], bound, out=spectra[-1])
    del data, bound
    full = np.fft.irfftn(spectra, s=lengths, axes=axes).reshape(spectra.shape[0], -1)
    del spectra
    full = np.ascontiguousarray(full.T)  # (nodes, columns): a query gathers whole rows

    # interpolated in the uncropped result (the grid moved back by the tables' spans),
    # a chunk of queries at a time
    padded = type(grid)(tuple(np.asarray(grid.start) - np.asarray(spans) * spacing),
                        grid.spacing, tuple(lengths))  # fmt: skip
    sums, bounded = np.empty((n, f)), np.empty(n)
    for rows in chunks:
        points = scaled(rows)
        at = interpolate(full, corners(points, padded, np))
        sums[rows] = at[:, :f]
        if corrected:
            moments = second_moments(points, grid)
            for j in range(d):
                sums[rows] -= 0.5 * moments[:, j, None] * at[:, f * (j + 1) : f * (j + 2)]
        bounded[rows] = at[:, -1]

    # an FFT convolution's rounding is bounded by eps·log2(length)·‖data‖₂·‖kernel‖₁
    norm = float(np.sqrt(np.sum(binned[..., 0] ** 2)))
    norms = [norm * np.prod([np.sum(np.abs(t)) for t in kernel()])]
    for j in range(d):
        curvature_norm = np.prod([np.sum(np.abs(t)) for t in kernel(j)])
        second = float(np.sqrt(np.sum(binned[..., f * (j + 1)] ** 2)))
        norms.append(0.5 * (second + (place[j] if corrected else 0) * norm) * curvature_norm)
    norms.append(norm * sum(c * np.prod([np.sum(t) for t in tables]) for c, tables in terms))
    rounding = FFT_ROUNDING * np.log2(np.prod(lengths)) * float(np.sum(norms))
    error = bounded + outside(spacing, kernel_spans, size) * key_total(m, weights) + rounding
    return sums, error, Binning(grid, binned[..., :1], where)
