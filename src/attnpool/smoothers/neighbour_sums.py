"""Each query's neighbours in several columns, summed by the compiled loop.

With ``d ≥ 2`` predictors a LOESS fit sums, at each query ``q`` of radius ``ρ``, over the
keys strictly within ``ρ``: with ``u = (x − q) / ρ``, ``b`` the monomials of ``u`` up to
the degree and ``w`` the prior weight times the kernel ``(1 − |u|^a)^e``,

    G = Σ w b bᵀ,    T = Σ w b yᵀ                       (:func:`neighbour_moments`)

and, in a second pass once ``a = G⁻¹ e₀`` is known, the query's row of the operator
``lⱼ = wⱼ aᵀbⱼ``: ``Σ l² s`` (``s`` per-key weights: 1 for ``δ₁``, ``1 / prior`` for
standard errors) and the smooths ``Σ l z`` of other columns (:func:`neighbour_rows`).
``expansions.c`` computes them, and each query's radius (the distance to its ``k``-th
nearest key, :func:`neighbour_radii`), over keys laid out in strips (:class:`Strips`):
sorted by the first column, cut into runs, each run sorted by the second, so that a
query's candidates are a few contiguous ranges. The work is the pairs within the radii
and the box around them, in batches of keys whose sums run as vector products.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..kernels import Kernel
from ..methods.native import address, expansion_function
from ..methods.threads import cores, thread_pool

__all__ = [
    "KERNEL_FORMS",
    "MAX_COLUMNS",
    "Neighbourhoods",
    "Strips",
    "compiled_neighbours",
    "compiled_radii",
    "neighbour_band",
    "neighbour_moments",
    "neighbour_radii",
    "neighbour_rows",
    "strips",
    "terms",
    "typical_radius",
]

#: Kernels of the form ``(1 − |u|^power)^exponent`` on ``[0, 1)``: ``(power, exponent)``.
KERNEL_FORMS = {
    "tricube": (3, 3),
    "epanechnikov": (2, 1),
    "biweight": (2, 2),
    "triweight": (2, 3),
    "triangular": (1, 1),
    "boxcar": (1, 0),
}
#: Most predictors the compiled loop takes.
MAX_COLUMNS = 8
#: Query parts per core handed to the threads (their neighbourhoods differ in size).
PARTS_PER_CORE = 8
#: Numbers past the last key of every array the loop reads by key (its batch).
PAD = 64


@dataclass(frozen=True)
class Neighbourhoods:
    """Where a local polynomial's operator rows are asked: the ``queries`` (m, d), each
    one's ``radius`` (m,), and the polynomial's ``degree``."""

    queries: np.ndarray
    radius: np.ndarray
    degree: int

    def rows(self, rows: np.ndarray | slice) -> Neighbourhoods:
        """The neighbourhoods of the queries ``rows``."""
        return Neighbourhoods(self.queries[rows], self.radius[rows], self.degree)


@dataclass(frozen=True)
class Strips:
    """Keys laid out for the compiled loop.

    Attributes
    ----------
    keys : ndarray, shape (d, n + PAD)
        The rows, strip after strip, each strip sorted by its second column, by column
        (zeros past the last).
    order : ndarray of int, shape (n,)
        The original row of each: ``keys = X[order]``.
    start : ndarray of int64, shape (strips + 1,)
        Strip ``s`` holds ``keys[start[s]:start[s + 1]]``.
    low, high : ndarray, shape (strips,)
        The least and greatest first coordinate of each strip.
    """

    keys: np.ndarray
    order: np.ndarray
    start: np.ndarray
    low: np.ndarray
    high: np.ndarray

    def query_order(self, queries: np.ndarray) -> np.ndarray:
        """An order of ``queries`` (m, d) strip by strip, then by the second column, so
        that consecutive queries meet the same keys."""
        strip = np.searchsorted(self.high, queries[:, 0], side="left")
        return np.lexsort((queries[:, 1], strip))


def terms(d: int, degree: int) -> int:
    """Monomials of degree up to ``degree`` in ``d`` columns (loess's: no cubes)."""
    return 1 + (d if degree >= 1 else 0) + (d * (d + 1) // 2 if degree >= 2 else 0)


def compiled_neighbours(X: np.ndarray, kernel: Kernel) -> bool:
    """Whether the compiled loop serves these keys (2 to :data:`MAX_COLUMNS` columns) and
    ``kernel``, and runs here (the compiled loops load)."""
    return (
        2 <= X.shape[1] <= MAX_COLUMNS
        and kernel.name in KERNEL_FORMS
        and expansion_function("neighbour_moments") is not None
    )


def typical_radius(X: np.ndarray, count: int) -> float:
    """The radius that holds ``count`` of the ``n`` rows of ``X`` (n, d) were they spread
    evenly over their bounding box: where the strips' width and the radii's search
    start."""
    n, d = X.shape
    extent = np.ptp(X, axis=0)
    extent = np.where(extent > 0, extent, max(float(extent.max()), 1.0))
    ball = math.pi ** (d / 2) / math.gamma(d / 2 + 1)
    return float((count / n * np.prod(extent) / ball) ** (1.0 / d))


def compiled_radii(X: np.ndarray) -> bool:
    """Whether the compiled loop finds radii among these keys (2 to :data:`MAX_COLUMNS`
    columns) here."""
    return 2 <= X.shape[1] <= MAX_COLUMNS and expansion_function("neighbour_radii") is not None


def strips(X: np.ndarray, radius: float) -> Strips:
    """The strips for queries of about ``radius`` over the rows of ``X`` (n, d): about
    eight to a neighbourhood's width, 32 keys each at least."""
    n = X.shape[0]
    width = float(np.ptp(X[:, 0]))
    wanted = 8.0 * width / radius if radius > 0 else 1.0
    number = int(np.clip(round(wanted), 1, max(1, n // 32)))
    by_first = np.argsort(X[:, 0], kind="stable")
    start = np.linspace(0, n, number + 1).astype(np.int64)
    strip = np.repeat(np.arange(number), np.diff(start))
    order = by_first[np.lexsort((X[by_first, 1], strip))]
    first = X[by_first, 0]
    return Strips(_padded(X[order].T), order, start, first[start[:-1]], first[start[1:] - 1])


def _padded(rows: np.ndarray, dtype=np.float64) -> np.ndarray:
    """``rows`` (..., n) with :data:`PAD` zeros after each: shape (..., n + PAD)."""
    out = np.zeros((*rows.shape[:-1], rows.shape[-1] + PAD), dtype)
    out[..., : rows.shape[-1]] = rows
    return out


def neighbour_radii(X: np.ndarray, queries: np.ndarray, count: int) -> np.ndarray:
    """The distance from each query (m, d) to its ``count``-th nearest row of ``X`` (n,
    d). Shape (m,)."""
    guess = typical_radius(X, count)
    layout = strips(X, guess)
    keys = layout.keys
    d, stride = keys.shape
    at = layout.query_order(queries)
    ordered = np.ascontiguousarray(queries[at], dtype=np.float64)
    found = np.empty(at.shape[0])
    function = expansion_function("neighbour_radii")

    def task(lo: int, hi: int) -> int:
        return function(
            address(keys), stride, d, address(layout.start), address(layout.low),
            address(layout.high), layout.start.shape[0] - 1, address(ordered, lo), hi - lo,
            count, guess, address(found, lo),
        )  # fmt: skip

    _run(task, at.shape[0])
    radius = np.empty_like(found)
    radius[at] = found
    return radius


def neighbour_band(
    X: np.ndarray, queries: np.ndarray, inner: np.ndarray, outer: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each query (m, d) and its band ``(inner, outer]`` of squared distances (m,
    each): how many rows of ``X`` (n, d) lie at or within ``inner``, the squared
    distances inside the band (m, width; NaN past the kept), and how many lie inside
    (more than ``width``: the row overflowed). The distances are :func:`neighbour_radii`'s,
    squared."""
    layout = strips(X, float(np.sqrt(np.median(outer))) if outer.size else 1.0)
    keys = layout.keys
    d, stride = keys.shape
    at = layout.query_order(queries)
    ordered = np.ascontiguousarray(queries[at], dtype=np.float64)
    low2 = np.ascontiguousarray(inner[at], dtype=np.float64)
    high2 = np.ascontiguousarray(outer[at], dtype=np.float64)
    m = at.shape[0]
    below, kept = np.zeros(m, np.int64), np.zeros(m, np.int64)
    band = np.full((m, max(width, 1)), np.nan)
    function = expansion_function("neighbour_band")

    def task(lo: int, hi: int) -> int:
        return function(
            address(keys), stride, d, address(layout.start), address(layout.low),
            address(layout.high), layout.start.shape[0] - 1, address(ordered, lo), hi - lo,
            address(low2, lo), address(high2, lo), band.shape[1], address(below, lo),
            address(band, lo), address(kept, lo),
        )  # fmt: skip

    _run(task, m)
    out_below, out_band, out_kept = np.empty_like(below), np.empty_like(band), np.empty_like(kept)
    out_below[at], out_band[at], out_kept[at] = below, band, kept
    return out_below, out_band, out_kept


def neighbour_moments(
    layout: Strips, weights: np.ndarray, values: np.ndarray, at: Neighbourhoods, kernel: Kernel
) -> tuple[np.ndarray, np.ndarray]:
    """``G`` (m, p, p) and ``T`` (m, p, c) in the neighbourhoods ``at``, as defined above;
    ``weights`` (n,) and ``values`` (n, c) in ``X``'s row order."""
    return _sums(layout, weights, values, None, None, at, kernel)


def neighbour_rows(
    layout: Strips,
    weights: np.ndarray,
    signs: np.ndarray,
    square_weights: np.ndarray,
    coefficients: np.ndarray,
    at: Neighbourhoods,
    kernel: Kernel,
) -> tuple[np.ndarray, np.ndarray]:
    """With each query's operator row ``lⱼ = wⱼ aᵀbⱼ`` (``a`` its ``coefficients``, (m, p)):
    ``Σ l² s`` (m,) and ``Σ l signs`` (m, c), the smooths of the sign vectors ``signs``
    (n, c) of ±1 (read as bytes: eight times less memory to stream than numbers)."""
    if not np.all(np.abs(signs) == 1):
        raise ValueError("neighbour_rows smooths sign vectors: every entry must be +1 or -1")
    return _sums(layout, weights, signs.astype(np.float32), square_weights, coefficients, at,
                 kernel)  # fmt: skip


def _sums(layout, weights, values, square_weights, coefficients, at, kernel):
    """The moments (``coefficients`` None: shapes (m, p, p), (m, p, c)) or the operator
    rows' sums ((m,), (m, c)) of :func:`neighbour_moments` and :func:`neighbour_rows`."""
    d, stride = layout.keys.shape
    p, c = terms(d, at.degree), values.shape[1]
    first_shape, second_shape = ((p, p), (p, c)) if coefficients is None else ((), (c,))
    power, exponent = KERNEL_FORMS[kernel.name]
    w = _padded(weights[layout.order])
    by_column = _padded(values[layout.order].T, values.dtype)
    numbers, signs = (None, by_column) if values.dtype == np.float32 else (by_column, None)
    s = None if square_weights is None else _padded(square_weights[layout.order])
    at_order = layout.query_order(at.queries)
    ordered = np.ascontiguousarray(at.queries[at_order], dtype=np.float64)
    reach = np.ascontiguousarray(at.radius[at_order], dtype=np.float64)
    a = None if coefficients is None else np.ascontiguousarray(coefficients[at_order])
    m = at_order.shape[0]
    first, second = np.empty((m, *first_shape)), np.empty((m, *second_shape))
    function = expansion_function("neighbour_moments")

    def task(lo: int, hi: int) -> int:
        return function(
            address(layout.keys), stride, d, address(layout.start), address(layout.low),
            address(layout.high), layout.start.shape[0] - 1, address(w),
            None if numbers is None else address(numbers),
            None if signs is None else address(signs), by_column.shape[0],
            None if s is None else address(s), None if a is None else address(a, lo),
            at.degree, power, exponent, address(ordered, lo), address(reach, lo), hi - lo,
            address(first, lo), address(second, lo),
        )  # fmt: skip

    _run(task, m)
    out_first, out_second = np.empty_like(first), np.empty_like(second)
    out_first[at_order], out_second[at_order] = first, second
    return out_first, out_second


def _run(task, m: int) -> None:
    """``task(lo, hi)`` over parts of the ``m`` queries on this process's threads;
    ``MemoryError`` where a part found no memory."""
    parts = min(m, cores() * PARTS_PER_CORE) if cores() > 1 else 1
    bounds = np.linspace(0, m, max(parts, 1) + 1).astype(np.int64).tolist()
    statuses = list(thread_pool().map(task, bounds[:-1], bounds[1:]))
    if any(status != 0 for status in statuses):
        raise MemoryError("the neighbour sums found no memory for their buffers")
