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
from . import fgt, native
from .binned import (
    HOPELESS_COARSENING,
    POOL_BUDGET,
    Grid,
    convolve,
    corners,
    fft_lengths,
    grid_bucket,
    grid_for,
    reach_for,
)
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


def keys_near(scaled_rows, kernel: Kernel, binning: Binning, m: int) -> np.ndarray:
    """Indices of the keys that can weigh more than ``fgt.TOLERANCE`` of a row's sum,
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
    spread = math.log(m / fgt.TOLERANCE)
    if kernel.compact:
        reach = np.full_like(nearest, float(kernel.support))
    elif kernel.name == "laplacian":
        reach = nearest + spread
    else:  # the Gaussian (the binned kernels are these)
        reach = fgt.reach(nearest**2, m)
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
    d = np.asarray(low).size
    nodes = nodes_for(kernel, tolerance, d)
    grid = grid_for(np.stack([low, high]), np.ones(d), nodes, tail=kernel_tail(kernel),
                    budget=budget)  # fmt: skip
    return grid, bool(np.max(grid.spacing) * nodes > HOPELESS_COARSENING)


def binned_pool(queries, keys, values, scale, kernel: Kernel, *, grid_size=None, tolerance=1e-3):
    """Pooled values on a grid, with each row's binned weight and whether it is settled.

    Parameters
    ----------
    queries : (n, d) and keys : (m, d) arrays, ``d ≤ 2``, any float precision.
    values : (m, p) array.
    scale : (d,) the inverse bandwidths; scaled float64 coordinates are formed in chunks.
    grid_size : int or tuple, optional
        Nodes per dimension; by default :func:`.binned_bound.nodes_for` nodes per bandwidth, fewer
        where the grid with the kernel's reach would exceed :data:`POOL_BUDGET` nodes.

    Returns
    -------
    pooled : (n, p) float64; weight : (n,) ``Σ_j K_ij / K(0)`` as binned; settled : (n,)
    bool; and the :class:`Grid` used.

    A row is *settled* when the bound of :func:`.binned_bound.pair_error_bound` on its kernel sums
    proves ``|pooled − exact| ≤ tolerance × range(values)`` in every column: with binned
    weight ``D_i`` and summed pair-error bound ``E_i``, ``|pooled − exact| ≤ range · E_i /
    D_i``. Rows that are not settled (little weight, most of it near a kernel's kink or
    edge, keys clustered within a cell) are for an exact method to pool; so is every
    row when there are fewer pairs than nodes to convolve, and when the default grid
    had to be coarsened more than :data:`HOPELESS_COARSENING` times to fit
    :data:`POOL_BUDGET`.
    """
    queries, keys, values = np.asarray(queries), np.asarray(keys), np.asarray(values)
    grid, reach, hopeless = plan_grid(queries, keys, scale, kernel, grid_size, tolerance)
    n = queries.shape[0]
    if hopeless or n * keys.shape[0] <= np.prod(np.add(grid.size, 2 * np.asarray(reach))):
        # fewer pairs than nodes to convolve: every row is for the exact method
        return np.zeros((n, values.shape[1])), np.zeros(n), np.zeros(n, bool), grid
    # values about their midrange: the FFT's rounding is relative to the largest feature
    middle = values.min(axis=0) * 0.5 + values.max(axis=0) * 0.5
    sums, error, _ = binned_sums(queries, keys, scale, kernel, grid, reach, values - middle)
    weight = sums[:, 0]
    pooled = sums[:, 1:] / np.where(weight > 0, weight, 1.0)[:, None] + middle
    # |pooled − exact| ≤ Σ_j |error of K_ij| · range(values) / binned weight
    settled = (weight > 0) & (error <= tolerance * weight)
    return pooled, weight, settled, grid


def plan_grid(queries, keys, scale, kernel: Kernel, grid_size=None, tolerance=1e-3):
    """``(grid, reach, hopeless)`` of :func:`binned_pool` (its arguments): the default grid
    or one of ``grid_size`` nodes over the scaled points, the kernel's reach on it, and
    whether the default grid had to be coarsened past :data:`HOPELESS_COARSENING`."""
    d = queries.shape[1]
    scale = np.broadcast_to(np.asarray(scale, np.float64), (d,))
    # scaling by s > 0 keeps the order, so the extremes of the scaled points are these
    low = np.minimum(queries.min(axis=0), keys.min(axis=0)).astype(np.float64) * scale
    high = np.maximum(queries.max(axis=0), keys.max(axis=0)).astype(np.float64) * scale
    if grid_size is None:
        grid, hopeless = default_grid(low, high, kernel, tolerance, POOL_BUDGET)
    else:
        size = np.broadcast_to(np.asarray(grid_size, int), (d,))
        spacing = np.maximum(high - low, np.finfo(float).tiny) / np.maximum(size - 3, 1)
        grid = Grid(tuple(low - spacing), tuple(spacing), tuple(int(s) for s in size))
        hopeless = False
    return grid, reach_for(kernel, np.ones(d), grid), hopeless
