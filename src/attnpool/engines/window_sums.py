"""Exact kernel sums over sorted windows of one column, from running sums of powers.

For keys ``x_0 ≤ … ≤ x_{n−1}`` with weights ``w_j`` and values ``y_j``, and queries
``q`` each with a radius ``r`` and an index window ``[lo, hi)``, this engine returns the
moments of a local polynomial fit,

    S_m = Σ_{lo ≤ j < hi} w_j K(|x_j − q| / r) ((x_j − q) / r)^m,        m = 0 … M
    T_m = Σ_{lo ≤ j < hi} w_j y_j K(|x_j − q| / r) ((x_j − q) / r)^m,    m = 0 … M_y

for a kernel that is a polynomial in ``|u|`` inside its window, ``K(u) = Σ_t c_t |u|^e_t``
(the tricube is ``1 − 3|u|³ + 3|u|⁶ − |u|⁹``, the Epanechnikov ``1 − u²``, the boxcar
``1``). On either side of ``q``, ``|x − q|^e = (±(x − q))^e``, so every ``S_m`` and
``T_m`` is a combination of raw moments ``Σ w (x − q)^J`` of the window's part left of
``q`` and of its part right of it; those are differences of running sums of powers of
``x − a`` about an anchor ``a``, moved to ``q`` by the binomial theorem. The work is
``O((n + queries) · J)`` for ``J = max e + M`` instead of ``O(queries · window)``:
exact LOWESS in one column at the cost of a sort.

Precision: the queries are cut into segments, each with its own anchor (the middle of
its queries) and its own running sums over the keys its windows cover. A segment ends
before any key it covers lies farther than :data:`REACH` radii from its anchor, for the
smallest radius of its queries, so that no power is summed or shifted at a magnitude
beyond ``(2·REACH − 1)^J`` times the window's own; coordinates are in units of that
radius, so neither huge offsets nor extreme scales overflow the powers. Running sums
are taken in blocks (:func:`running_sums`) so that their rounding grows with the block,
not with ``n``. A caller that needs a guarantee checks the conditioning of its own solve
and recomputes the few rows it flags directly (as :mod:`attnpool.smoothers` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["REACH", "Windows", "polynomial_window_sums", "running_sums"]

#: How far, in radii of its narrowest query, a segment's running sums may reach from
#: its anchor.
REACH = 1.5
#: Rows of a running sum accumulated before a block total is carried over.
BLOCK = 1024
#: Queries whose moments are combined at once.
CHUNK = 16384


class Windows(NamedTuple):
    """Each query's window on the sorted keys: ``queries (q,)`` sorted ascending, each
    one's ``radius (q,)`` (positive, finite), and its keys ``keys[lo:hi]`` (``lo``,
    ``hi``: int arrays of shape (q,))."""

    queries: np.ndarray
    radius: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def running_sums(rows: np.ndarray) -> np.ndarray:
    """Running sums ``[0, a_0, a_0 + a_1, …]`` along the last axis, which grows by one:
    within blocks of :data:`BLOCK` entries, then the block totals, so that the rounding
    of a sum grows with ``BLOCK + len / BLOCK`` terms rather than ``len``."""
    *rest, n = rows.shape
    blocks = -(-n // BLOCK)
    padded = np.zeros((*rest, blocks * BLOCK))
    padded[..., :n] = rows
    within = padded.reshape(*rest, blocks, BLOCK).cumsum(axis=-1)
    carried = np.cumsum(within[..., -1], axis=-1)
    within[..., 1:, :] += carried[..., :-1, None]
    out = np.empty((*rest, n + 1))
    out[..., 0] = 0.0
    out[..., 1:] = within.reshape(*rest, blocks * BLOCK)[..., :n]
    return out


def polynomial_window_sums(
    keys: np.ndarray,
    weights: np.ndarray,
    values: np.ndarray | None,
    windows: Windows,
    profile: Sequence[tuple[int, float]],
    moments: int,
    value_moments: int = -1,
) -> tuple[np.ndarray, np.ndarray]:
    """Kernel-weighted moments ``S`` (queries, moments + 1) and ``T`` (queries,
    value_moments + 1) over each query's window, as defined above.

    Parameters
    ----------
    keys : ndarray, shape (n,)
        Sorted ascending, finite.
    weights : ndarray, shape (n,)
        Observation weights ``w_j``.
    values : ndarray, shape (n,) or (n, c), or None
        The responses ``y_j`` (``None`` when ``value_moments`` is ``-1``); ``c``
        columns give ``c`` sets of ``T``.
    windows : Windows
        The queries, their radii and their keys' index windows ``[lo, hi)``.
    profile : sequence of (int, float)
        ``(e_t, c_t)``: the kernel ``Σ_t c_t |u|^e_t`` inside the window.
    moments, value_moments : int
        The highest ``m`` of ``S_m`` and of ``T_m`` (``-1``: no ``T``).

    Returns
    -------
    S, T : ndarray
        Float64 moments in units of each query's radius; ``T`` of shape (q,
        value_moments + 1) or, for ``c`` columns of values, (q, value_moments + 1, c).
    """
    queries, radius, lo, hi = windows
    n_queries = queries.shape[0]
    reach = max(exponent for exponent, _ in profile)
    depths = (reach + moments, reach + value_moments if values is not None else -1)
    columns = None if values is None else (values if values.ndim == 2 else values[:, None])
    count = 0 if columns is None else columns.shape[1]
    s_out = np.zeros((n_queries, moments + 1))
    t_out = np.zeros((n_queries, value_moments + 1, count))
    for start, stop in _segments(keys, windows):
        rows = slice(start, stop)
        first, last = int(lo[rows].min()), int(hi[rows].max())
        anchor = 0.5 * (queries[start] + queries[stop - 1])
        unit = float(radius[rows].min())
        scaled = (keys[first:last] - anchor) / unit
        split = np.clip(np.searchsorted(keys, queries[rows], side="left"), lo[rows], hi[rows])
        bounds = (lo[rows] - first, split - first, hi[rows] - first)
        shift = (anchor - queries[rows]) / unit
        ratio = unit / radius[rows]
        sides = _side_moments(weights, columns, first, last, scaled, bounds, depths)
        step = max(CHUNK // max(count, 1), 256)  # the combined moments of a chunk in memory
        for chunk in range(0, stop - start, step):
            part = slice(chunk, min(chunk + step, stop - start))
            moved = _taylor_shift(sides[..., part], shift[part]) * _powers(ratio[part], depths[0])
            out_rows = slice(start + part.start, start + part.stop)
            for which in range(1 + count):
                highest = moments if which == 0 else value_moments
                total = np.zeros((highest + 1, part.stop - part.start))
                for exponent, coefficient in profile:
                    signed = moved[1, which] + (-1.0) ** exponent * moved[0, which]
                    total += coefficient * signed[exponent : exponent + highest + 1]
                if which == 0:
                    s_out[out_rows] += total.T
                else:
                    t_out[out_rows, :, which - 1] += total.T
    if values is not None and values.ndim == 1:
        return s_out, t_out[:, :, 0]
    return s_out, t_out


def _taylor_shift(moments: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``Σ_i C(J, i) shift^(J − i) M_i`` for every ``J``: moments about the anchor moved
    to the queries (``(x − q) / unit = z + shift``), by the Taylor-shift triangle (one
    vector update per row; shape (..., depth + 1, queries), a new array)."""
    out = np.array(moments, dtype=float)
    depth = out.shape[-2] - 1
    for k in range(depth):
        out[..., k + 1 :, :] += shift * out[..., k:depth, :]
    return out


def _powers(base: np.ndarray, depth: int) -> np.ndarray:
    """``base^k`` for ``k = 0 … depth``, shape (depth + 1, len), by products."""
    out = np.empty((depth + 1, base.shape[0]))
    out[0] = 1.0
    for k in range(1, depth + 1):
        np.multiply(out[k - 1], base, out=out[k])
    return out


def _side_moments(weights, columns, first, last, scaled, bounds, depths):
    """``Σ w z^i`` (``[:, 0]``) and ``Σ w y z^i`` for each column of values (``[:, 1:]``),
    ``i = 0 … depths``, over each query's keys left of it (``[0]``) and right of it
    (``[1]``), from running sums: shape (2, 1 + c, depths[0] + 1, queries), the rows of
    the values beyond their depth zero."""
    lo, split, hi = bounds
    depth, value_depth = depths
    count = 0 if columns is None else columns.shape[1]
    out = np.zeros((2, 1 + count, depth + 1, lo.shape[0]))
    term = np.array(weights[first:last], dtype=float)
    for power in range(depth + 1):
        sums = running_sums(term)
        out[0, 0, power] = sums[split] - sums[lo]
        out[1, 0, power] = sums[hi] - sums[split]
        if power <= value_depth:
            block = columns[first:last]
            if count == 1:
                weighted = running_sums(term * block[:, 0])[None]
            else:
                weighted = running_sums(np.ascontiguousarray((term[:, None] * block).T))
            out[0, 1:, power] = weighted[:, split] - weighted[:, lo]
            out[1, 1:, power] = weighted[:, hi] - weighted[:, split]
        term = term * scaled
    return out


def _segments(keys: np.ndarray, windows: Windows):
    """``(start, stop)`` runs of queries that share an anchor: the longest runs whose
    covered keys lie within :data:`REACH` radii (their narrowest) of their middle,
    found by doubling then bisecting."""
    queries, radius, lo, hi = windows

    def fits(start: int, stop: int) -> bool:
        rows = slice(start, stop)
        anchor = 0.5 * (queries[start] + queries[stop - 1])
        first, last = int(lo[rows].min()), int(hi[rows].max())
        if last <= first:
            return True
        reach = max(anchor - keys[first], keys[last - 1] - anchor)
        return bool(reach <= REACH * radius[rows].min())

    start, count = 0, queries.shape[0]
    while start < count:
        good, step = start + 1, 1
        while good + step <= count and fits(start, good + step):
            good += step
            step *= 2
        bad = min(good + step, count + 1)
        while bad - good > 1:
            middle = (good + bad) // 2
            if fits(start, middle):
                good = middle
            else:
                bad = middle
        yield start, good
        start = good
