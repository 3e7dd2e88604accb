"""The ``binned`` method on concrete arrays: no program to build.

Linear binning is a loop of ``expansions.c`` (one pass over the keys, no sort; NumPy's
``bincount`` without a compiler), the convolution NumPy's FFT, the interpolation at the
queries NumPy — so a first call costs what its sums cost. The error bound is
:mod:`.binned_bound`'s, convolved with the binned counts as the sums are; the traceable
forms the bandwidth search compiles are in :mod:`.binned`.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ..kernels import Kernel
from . import native
from .binned import convolve, corners, fft_lengths
from .binned_bound import kernel_tail, nodes_for, pair_error_bound

#: A float64 FFT convolution errs by at most this · log2(length) · ‖x‖₂ · ‖w‖₁ per entry.
FFT_ROUNDING = 8 * np.finfo(np.float64).eps
#: Queries interpolated at once (memory ``O(QUERY_CHUNK · 2^d · f)``).
QUERY_CHUNK = 2**18


def bin_points(points, scale, grid, features=None, *, cells: bool = False):
    """``(binned (*size, f), cells)``: ``features (n, f)`` (None: counts) of ``points (n, d)``,
    scaled by ``scale (d,)``, split between their cells' corners on ``grid``; ``cells``:
    also each point's cell (its lowest corner, flat), else None."""
    points = np.ascontiguousarray(points, np.float64)
    n, d = points.shape
    f = 1 if features is None else features.shape[1]
    size = np.asarray(grid.size, np.int64)
    binned = np.zeros((int(np.prod(size)), f))
    scale = np.ascontiguousarray(np.broadcast_to(np.asarray(scale, np.float64), (d,)))
    where = np.empty(n, np.int64) if cells else None
    compiled = native.expansion_function("linear_bin")
    if compiled is not None:
        start, spacing = (np.ascontiguousarray(a, np.float64) for a in (grid.start, grid.spacing))
        features = None if features is None else np.ascontiguousarray(features, np.float64)
        at = native.address
        compiled(at(points), n, d, at(scale), at(start), at(spacing), at(size),
                 None if features is None else at(features), f, at(binned),
                 None if where is None else at(where))  # fmt: skip
        return binned.reshape(*grid.size, f), where
    for rows in (slice(i, i + QUERY_CHUNK) for i in range(0, n, QUERY_CHUNK)):
        indices, weights = corners(points[rows] * scale, grid, np)
        for index, weight in zip(indices, weights, strict=True):
            for c in range(f):
                taken = weight if features is None else weight * features[rows, c]
                binned[:, c] += np.bincount(index, taken, minlength=binned.shape[0])
        if where is not None:
            where[rows] = indices[0]
    return binned.reshape(*grid.size, f), where


def interpolate(values, scaled, grid):
    """Multilinear interpolation of grid ``values (*size, f)`` at scaled points ``(n, d)``."""
    flat = values.reshape(-1, values.shape[-1])
    out = np.empty((scaled.shape[0], flat.shape[1]))
    for rows in (slice(i, i + QUERY_CHUNK) for i in range(0, scaled.shape[0], QUERY_CHUNK)):
        indices, weights = corners(scaled[rows], grid, np)
        out[rows] = sum(w[:, None] * flat[i] for i, w in zip(indices, weights, strict=True))
    return out


def kernel_on_grid(kernel: Kernel, grid, reach: tuple[int, ...]):
    """``K(offset) / K(0)`` at the node offsets ``−reach … reach`` (scaled coordinates)."""
    axes = [(np.arange(-r, r + 1) * s) ** 2 for r, s in zip(reach, grid.spacing, strict=True)]
    r2 = sum(np.meshgrid(*axes, indexing="ij"))
    top = np.asarray(kernel.log_profile(np.zeros(())), np.float64)
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(np.exp(np.asarray(kernel.log_profile(r2), np.float64) - top))


class Binning(NamedTuple):
    """Keys binned: the ``grid`` used, the ``counts (*size, 1)`` and each key's ``cells``
    (its lowest corner, flat; None unless asked for)."""

    grid: Any
    counts: np.ndarray
    cells: np.ndarray | None


def binned_sums(queries, keys, scale, kernel: Kernel, grid, reach, values=None, cells=False):
    """``(sums (n, 1 + p), error (n,), binning)``: ``[Σ_j K_ij, Σ_j K_ij v_j] / K(0)`` by
    binning, a bound on ``Σ_j |error of K_ij|`` per query (the pair bound convolved with
    the counts, the weight of keys beyond ``reach``, the FFT's rounding) and the
    :class:`Binning`. ``values (m, p)``: None for the counts alone; ``cells``: keep each
    key's cell."""
    from .binned import grid_bucket

    size = tuple(grid_bucket(s) for s in grid.size)  # a few FFT lengths, not one per size
    grid = type(grid)(grid.start, grid.spacing, size)
    reach = tuple(min(r, s) for r, s in zip(reach, size, strict=True))
    bound, outside = pair_error_bound(kernel, grid.spacing, size, reach)
    features = None
    if values is not None:
        features = np.concatenate([np.ones((keys.shape[0], 1)), values], axis=1)
    binned, where = bin_points(keys, scale, grid, features, cells=cells)
    weights = kernel_on_grid(kernel, grid, reach)
    counts = binned[..., :1]
    smoothed = np.concatenate([convolve(binned, weights, np), convolve(counts, bound, np)], axis=-1)
    scaled = np.asarray(queries, np.float64) * np.asarray(scale, np.float64)
    sums = interpolate(smoothed, scaled, grid)
    # an FFT convolution's rounding is bounded by eps·log2(length)·‖counts‖₂·‖weights‖₁
    rounding = (
        FFT_ROUNDING
        * np.log2(np.prod(fft_lengths(size, bound.shape)))
        * float(np.sqrt(np.sum(counts**2)))
        * (float(np.sum(weights)) + float(np.sum(bound)))
    )
    error = sums[:, -1] + outside * keys.shape[0] + rounding
    return sums[:, :-1], error, Binning(grid, counts, where)


#: Rows × occupied nodes beyond which :func:`keys_near` takes every key rather than
#: search for each row's nearest node.
NEAR_MAX_PAIRS = 2**26
#: What the keys a row leaves out may weigh, relative to the row's sum, in
#: :func:`keys_near` (as ``fgt``'s tolerance: below the float64 sum's rounding).
NEAR_TOLERANCE = 1e-14


def keys_near(scaled_rows, kernel: Kernel, binning: Binning, m: int) -> np.ndarray:
    """Indices of the keys that can weigh more than :data:`NEAR_TOLERANCE` of a row's sum,
    for rows ``(k, d)`` in scaled coordinates — a superset, from the counts: a node with
    a positive count has a key within one cell diagonal ``δ``, so a row's nearest key is
    within ``r = (distance to the nearest such node) + δ`` and its sum at least ``K(r)``;
    keys beyond ``R`` with ``m K(R) ≤ tolerance · K(r)`` are left out (the Gaussian:
    ``R² = r² + 2 ln(m/tol)``; the Laplacian ``R = r + ln(m/tol)``; a compact kernel its
    support). Keys are found by the cells within ``R`` of a row."""
    grid, counts, cells = binning
    spacing, start = np.asarray(grid.spacing), np.asarray(grid.start)
    diagonal = float(np.sqrt(np.sum(spacing**2)))
    occupied = np.argwhere(counts[..., 0] > 0) * spacing + start  # (nodes, d)
    nearest = np.full(scaled_rows.shape[0], np.inf)
    if scaled_rows.shape[0] * occupied.shape[0] > NEAR_MAX_PAIRS:  # every key: no search
        return np.arange(cells.shape[0])
    step = max(1, QUERY_CHUNK // max(occupied.shape[0], 1))
    for rows in (slice(i, i + step) for i in range(0, scaled_rows.shape[0], step)):
        gaps = scaled_rows[rows, None, :] - occupied[None, :, :]
        nearest[rows] = np.sqrt(np.min(np.sum(gaps * gaps, axis=2), axis=1)) + diagonal
    spread = math.log(m / NEAR_TOLERANCE)
    if kernel.compact:
        reach = np.full_like(nearest, float(kernel.support))
    elif kernel.name == "laplacian":
        reach = nearest + spread
    else:  # the Gaussian (the binned kernels are these)
        reach = np.sqrt(nearest**2 + 2 * spread)
    marked = np.zeros(grid.size, bool)
    low = np.floor((scaled_rows - reach[:, None] - start) / spacing).astype(np.int64) - 1
    high = np.ceil((scaled_rows + reach[:, None] - start) / spacing).astype(np.int64) + 1
    low, high = np.clip(low, 0, np.asarray(grid.size)), np.clip(high, 0, np.asarray(grid.size))
    for a, b in zip(low, high, strict=True):
        marked[tuple(slice(i, j) for i, j in zip(a, b, strict=True))] = True
    return np.flatnonzero(marked.reshape(-1)[cells])


def default_grid(low, high, kernel: Kernel, tolerance: float, budget: int):
    """``(grid, hopeless)``: the grid over scaled ``[low, high]`` at
    :func:`.binned_bound.nodes_for` nodes per bandwidth, coarsened to ``budget`` nodes with
    the kernel's reach; ``hopeless``: coarsened so much that no row would be settled."""
    from .binned import HOPELESS_COARSENING, grid_for

    d = np.asarray(low).size
    nodes = nodes_for(kernel, tolerance, d)
    grid = grid_for(np.stack([low, high]), np.ones(d), nodes, tail=kernel_tail(kernel),
                    budget=budget)  # fmt: skip
    return grid, bool(np.max(grid.spacing) * nodes > HOPELESS_COARSENING)
