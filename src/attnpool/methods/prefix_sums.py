"""Window sums of split kernels by prefix sums: the "fast sum updating" of Langrené &
Warin (2019), one dimension.

A built-in compact kernel that splits into ``Σ_j a_j(q) b_j(k)`` on each side of the
query (boxcar, triangular, epanechnikov, cosine) sums a query's window of sorted keys
as a difference of prefix sums of ``b_j(k) F(k)``, ``O((n + m) log m)`` whatever the
number of pairs::

    epanechnikov  1 − (q − k)²  = (1 − q²)·1 + 2q·k − 1·k²
    triangular    1 − |q − k|   = (1 − q) + k  (k ≤ q),   (1 + q) − k  (k > q)
    cosine        cos(π(q − k)/2) = cos(πq/2) cos(πk/2) + sin(πq/2) sin(πk/2)

``q`` and ``k`` are taken about the centre of the key's cell (:data:`CELL_WIDTH` radii
wide; a window spans at most two), so the terms stay O(1) whatever the range over the
bandwidth — about one global centre, ``k²`` grew as (range/h)² and cancelled. Prefix
sums are two-level (blocks, then compensated sums of blocks), so a window's rounding
depends on the keys near it, not on all before it. Rows whose estimated rounding
exceeds :data:`PREFIX_RTOL` of their own sum (every key within rounding of the
support's edge) are reported, for the caller to sum pair by pair.
"""

from __future__ import annotations

import numpy as np

from ..kernels import Kernel

#: Queries whose prefix-sum windows are combined at once.
QUERY_CHUNK = 2**14
#: Prefix-sum rows with a larger estimated relative rounding error are summed by pairs.
PREFIX_RTOL = 1e-10
#: Width (in support radii) of the cells keys are centred in for the prefix sums: more
#: than a window's two radii, so a window spans at most two cells.
CELL_WIDTH = 4.0
#: Bound, in units of eps, on what the rounding of a pair's offsets (each within about
#: three radii of its cell's centre, rounded twice) changes the sum of its split terms:
#: their derivatives are at most ~20 there (epanechnikov), so 256 holds with margin.
ARGUMENT_ROUNDING = 256
#: Keys per block of the two-level prefix sums: about √m, within these limits.
PREFIX_BLOCKS = (64, 4096)


def split_kernel(kernel: Kernel):
    """``(key_terms(k), left_coefficients(q), right_coefficients(q) or None if the same)``,
    or None for a kernel that does not split."""
    from .. import kernels

    if not kernels.is_builtin(kernel):
        return None
    half_pi = np.pi / 2
    one = np.ones_like
    if kernel.name == "boxcar":
        terms, right = [one], None
        left = lambda q: [one(q)]  # noqa: E731
    elif kernel.name == "epanechnikov":
        terms, right = [one, lambda k: k, lambda k: k * k], None
        left = lambda q: [1 - q * q, 2 * q, -one(q)]  # noqa: E731
    elif kernel.name == "triangular":
        terms = [one, lambda k: k]
        left = lambda q: [1 - q, one(q)]  # noqa: E731
        right = lambda q: [1 + q, -one(q)]  # noqa: E731
    elif kernel.name == "cosine":
        terms, right = [lambda k: np.cos(half_pi * k), lambda k: np.sin(half_pi * k)], None
        left = lambda q: [np.cos(half_pi * q), np.sin(half_pi * q)]  # noqa: E731
    else:
        return None
    return terms, left, right


def prefix_sums(queries, keys, values, bandwidth, split, low, high):
    """Window sums ``(n, 1 + p)`` by prefix differences, and the rows whose rounding
    estimate is too large; ``queries``, ``keys`` sorted and unscaled.

    Keys are taken about the centre ``c`` of their cell (``CELL_WIDTH`` support radii
    wide), so every term is O(1); a window (two radii) spans at most two cells, each part
    combined with the query's position about that part's cell. Both offsets are formed
    from the same ``c``, as ``(k − c) / h``: their rounding is ``eps`` of a few radii
    whatever the distance from the origin, and :data:`ARGUMENT_ROUNDING` bounds its
    effect on a pair's terms (cancelling terms near the support's edge are only as
    accurate as their arguments).
    """
    terms, left, right = split
    n, (m, p) = queries.shape[0], values.shape
    origin, width = keys[0], CELL_WIDTH * bandwidth
    # int64: the host methods take extents up to 2^40 radii, beyond int32
    cells = np.floor((keys - origin) / width).astype(np.int64)  # non-decreasing

    def offset(x, cell):
        return (x - (origin + (cell + 0.5) * width)) / bandwidth

    sides = [(left, low, high)]
    if right is not None:  # keys[:middle] are ≤ q; settled windows may end on either side
        middle = np.clip(np.searchsorted(keys, queries, side="right"), low, high)
        sides = [(left, low, middle), (right, middle, high)]
    # each window side, cut where its first key's cell ends
    sides = [
        (coefficients, start, _cell_end(cells, start, stop), stop)
        for coefficients, start, stop in sides
    ]
    eps = np.finfo(np.float64).eps
    # per column: the sums, their rounding estimate, and the window's magnitude (a value
    # column's rounding is judged against its own terms: one huge value in a block must
    # not spoil the windows beside it unnoticed)
    sums, error, magnitude = (np.zeros((n, 1 + p)) for _ in range(3))
    block = _Prefix.block_for(m)
    for j, term in enumerate(terms):  # one term at a time: memory O(m · p)
        # columns: the term (the weights), the term times the values, then the
        # magnitudes of both for the rounding estimate; written straight into the
        # prefix's padded buffer
        rows_in = np.zeros(((m // block + 1) * block, 2 * p + 2))
        for keys_in in (slice(i, min(i + QUERY_CHUNK, m)) for i in range(0, m, QUERY_CHUNK)):
            weights = term(offset(keys[keys_in], cells[keys_in]))
            rows_in[keys_in, 0] = weights
            np.multiply(weights[:, None], values[keys_in], out=rows_in[keys_in, 1 : p + 1])
            np.abs(rows_in[keys_in, : p + 1], out=rows_in[keys_in, p + 1 :])
        prefix = _Prefix(rows_in, block)
        for rows in (slice(i, i + QUERY_CHUNK) for i in range(0, n, QUERY_CHUNK)):
            q = queries[rows]
            for coefficients, starts, splits, stops in sides:
                start, split, stop = starts[rows], splits[rows], stops[rows]
                for first, last, part_cell in [
                    (start, split, cells[np.minimum(start, m - 1)]),
                    (split, stop, cells[np.maximum(stop - 1, 0)]),
                ]:
                    a = coefficients(offset(q, part_cell))[j][:, None]
                    total, ends, across = prefix.window(first, last)
                    sums[rows] += a * total[:, : p + 1]
                    rounding = np.sqrt(block) * ends[:, p + 1 :] + np.abs(across[:, : p + 1])
                    error[rows] += np.abs(a) * eps * (rounding + np.abs(total[:, : p + 1]))
                    magnitude[rows] += np.abs(a) * np.abs(total[:, p + 1 :])
        del prefix, rows_in
    error[:, 0] += (high - low) * ARGUMENT_ROUNDING * eps
    reference = np.concatenate([sums[:, :1], magnitude[:, 1:]], axis=1)
    unreliable = (high > low) & ~np.all(error <= PREFIX_RTOL * reference, axis=1)
    return sums, unreliable


def _cell_end(cells, start, stop):
    """``min(stop, end of start's cell)``, in chunks (memory)."""
    split = np.empty_like(stop)
    for rows in (slice(i, i + 16 * QUERY_CHUNK) for i in range(0, start.size, 16 * QUERY_CHUNK)):
        cell = cells[np.minimum(start[rows], cells.size - 1)]
        split[rows] = np.minimum(np.searchsorted(cells, cell, side="right"), stop[rows])
    return split


class _Prefix:
    """Prefix sums ``P(i) = Σ_{l<i} rows_l`` of ``rows`` in two levels.

    Within blocks of about ``√m`` rows a plain cumulative sum; across blocks a
    compensated (Neumaier) one kept as ``hi + lo``, so the rounding of a window
    sum ``P(stop) − P(start)`` depends on the magnitudes inside two blocks, not
    on everything summed before the window.
    """

    @staticmethod
    def block_for(m: int) -> int:
        return int(np.clip(np.sqrt(m), *PREFIX_BLOCKS))

    def __init__(self, rows, block: int):
        """``rows``: ``(blocks · block, c)``, zero-padded; summed in place."""
        self.block = block
        c = rows.shape[1]
        inclusive = rows.reshape(-1, block, c)
        np.cumsum(inclusive, axis=1, out=inclusive)  # within each block
        self.inclusive = rows
        totals = inclusive[:, -1]
        self.hi, self.lo = np.zeros_like(totals), np.zeros_like(totals)
        hi, lo = np.zeros(c), np.zeros(c)
        for b in range(1, totals.shape[0]):
            x = totals[b - 1]
            t = hi + x
            lo = lo + np.where(np.abs(hi) >= np.abs(x), (hi - t) + x, (x - t) + hi)
            hi = t
            self.hi[b], self.lo[b] = hi, lo

    def _inner(self, index):
        """Sum of the rows from ``index``'s block start up to ``index − 1``."""
        at_start = (index % self.block == 0)[:, None]
        return np.where(at_start, 0.0, self.inclusive[np.maximum(index - 1, 0)])

    def window(self, start, stop):
        """Sums of rows ``start … stop − 1`` ``(n, c)``; for the rounding estimate, the
        within-block partial sums at both ends (``|·|`` added) and the across-block part."""
        b_start, b_stop = start // self.block, stop // self.block
        inner_stop, inner_start = self._inner(stop), self._inner(start)
        across = self.hi[b_stop] - self.hi[b_start]
        total = across + (self.lo[b_stop] - self.lo[b_start]) + (inner_stop - inner_start)
        return total, np.abs(inner_stop) + np.abs(inner_start), across
