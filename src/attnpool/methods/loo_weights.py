"""A sorted sample's leave-one-out Gaussian log weights by the ``fgt`` expansions:
``log Σ_{j≠i} exp(−(p_i − p_j)²/2)`` for the points ``p = c · scale`` of one column, the
criterion of likelihood cross-validation at each of a search's bandwidths.

Each point's weight over all points (its own term ``1`` included, the expansions' error
below ``tolerance`` of it) less that term; a point whose rest is below
:data:`~attnpool.methods.fgt.LOO_MIN_WEIGHT` (where that error would show) is summed pair
by pair over the points within :func:`~attnpool.methods.fgt.reach` of it — its nearest
other, a neighbour in the order, sets the reach and the shift. One call of
``expansions.c``'s ``fgt_leave_one_out`` does it all where the compiled loops run and the
sample small enough for one thread; else the expansions' pieces (threaded) and NumPy.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import fgt, native

__all__ = ["leave_one_out_log_weights"]

#: Most pairs :func:`_by_pairs` sums at once.
PAIRS_AT_ONCE = 2**20


def leave_one_out_log_weights(
    centred: np.ndarray, scale: float, tolerance: float = fgt.TOLERANCE, raw=None
) -> np.ndarray:
    """``(n,)``: ``log Σ_{j≠i} exp(−((c_i − c_j) · scale)²/2)`` for ``centred (n,)`` in
    ascending order (centred on its midrange: scaled uncentred, far data lose digits),
    ``scale`` the inverse bandwidth; ``−inf`` for a sample of one point. ``raw``: the
    sample before it was centred, whose differences are exact where centring rounded a
    cluster far from the midrange (pairs are then taken from it)."""
    n = centred.shape[0]
    exact = centred if raw is None else raw
    farthest, (width, half, order) = _plan(n, tolerance)
    boxes = math.floor(float(centred[-1] - centred[0]) * scale / width) + 1 if n else 0
    if n < 2 or (boxes + 4 * half + 3) * order > fgt.MAX_COEFFICIENTS:
        return _by_pairs(exact, scale, np.arange(n), tolerance)
    compiled = native.expansion_function("fgt_leave_one_out")
    if compiled is not None and n * (2 * half + 1) * order < fgt.THREAD_MIN_TERMS:
        centred = np.ascontiguousarray(centred, np.float64)
        out = np.empty(n)
        at = native.address
        if not compiled(at(centred), n, scale, width, half, order, fgt.LOO_MIN_WEIGHT,
                        farthest**2, at(out)):  # fmt: skip
            return out
    points = centred * scale
    weights = fgt.sorted_sums(points, np.zeros(n), points, np.ones((n, 1)), farthest, tolerance,
                              (exact, exact, scale))  # fmt: skip
    rest = weights[:, 0] - 1.0
    alone = np.flatnonzero(~(rest >= fgt.LOO_MIN_WEIGHT))  # NaN too: a window off the table
    out = np.log(rest, out=np.full(n, np.nan), where=rest >= fgt.LOO_MIN_WEIGHT)
    if alone.size:
        out[alone] = _by_pairs(exact, scale, alone, tolerance)
    return out


@functools.cache
def _plan(n: int, tolerance: float) -> tuple[float, tuple[float, int, int]]:
    """``(R, fgt.plan)`` for ``n`` points, each its own nearest key (``R = fgt.reach``)."""
    farthest = math.sqrt(2 * math.log(max(n, 1) / tolerance))
    return farthest, fgt.plan(farthest, counts=True, tolerance=tolerance)


def _by_pairs(c: np.ndarray, scale: float, rows: np.ndarray, tolerance: float) -> np.ndarray:
    """The log weights of ``rows`` pair by pair over the points within reach of each, in
    row chunks of at most :data:`PAIRS_AT_ONCE` pairs."""
    n = c.shape[0]
    if n < 2:
        return np.full(rows.size, -np.inf)
    gaps = np.diff(c) * scale
    nearest = np.minimum(np.r_[np.inf, gaps][rows], np.r_[gaps, np.inf][rows])
    radius = fgt.reach(nearest**2, n, tolerance) / scale
    low = np.searchsorted(c, c[rows] - radius, "left")
    high = np.searchsorted(c, c[rows] + radius, "right")
    out = np.empty(rows.size)
    chunk = max(1, PAIRS_AT_ONCE // int((high - low).max(initial=1)))
    for start in range(0, rows.size, chunk):
        part = slice(start, start + chunk)
        columns = low[part, None] + np.arange(int((high[part] - low[part]).max()))
        inside = (columns < high[part, None]) & (columns != rows[part, None])
        d = (c[rows[part], None] - c[np.minimum(columns, n - 1)]) * scale
        top = -0.5 * nearest[part] ** 2  # the largest term: the nearest other's
        exponents = np.where(inside, -0.5 * d * d - top[:, None], -np.inf)
        out[part] = top + np.log(np.exp(exponents).sum(axis=1))
    return out
