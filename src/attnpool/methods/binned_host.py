"""The ``binned`` method on concrete arrays: no program to build.

Linear binning is a loop of ``expansions.c`` (:mod:`.binning`), the convolution NumPy's
FFT, the interpolation at the queries NumPy — so a first call costs what its sums cost.
The error bound is :mod:`.binned_bound`'s, convolved with the binned counts as the sums
are; the Gaussian's sums are corrected to third order and bounded by
:mod:`.binned_gaussian`. The rows a bound cannot settle are for an exact method, over
the keys near them (:func:`keys_near`); the traceable forms the bandwidth search
compiles are in :mod:`.binned`.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, NamedTuple

import numpy as np

from .. import kernels
from .._units import column_extremes, midrange
from ..kernels import Kernel
from . import binned_gaussian, fgt
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
from .binned import interpolate as at_corners
from .binned_bound import kernel_tail, nodes_for, pair_error_bound
from .binned_gaussian import (
    QUERIES_PER_NODE,
    aligned_grid,
    gaussian_sums,
    lattice,
)
from .binned_gaussian import nodes_for as gaussian_nodes_for
from .binned_taylor import LINEAR_COLUMNS, taylor_sums
from .binned_taylor import plan as taylor_plan
from .binning import FFT_ROUNDING, QUERY_CHUNK, Binning, bin_points


def interpolate(values, scaled, grid):
    """Multilinear interpolation of grid ``values (*size, f)`` at scaled points ``(n, d)``."""
    out = np.empty((scaled.shape[0], values.shape[-1]))
    for rows in (slice(i, i + QUERY_CHUNK) for i in range(0, scaled.shape[0], QUERY_CHUNK)):
        out[rows] = at_corners(values, corners(scaled[rows], grid, np))
    return out


def kernel_on_grid(kernel: Kernel, grid, reach: tuple[int, ...]):
    """``K(offset) / K(0)`` at the node offsets ``−reach … reach`` (scaled coordinates)."""
    axes = [(np.arange(-r, r + 1) * s) ** 2 for r, s in zip(reach, grid.spacing, strict=True)]
    r2 = sum(np.meshgrid(*axes, indexing="ij"))
    top = np.asarray(kernel.log_profile(np.zeros(())), np.float64)
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(np.exp(np.asarray(kernel.log_profile(r2), np.float64) - top))


def binned_sums(
    queries,
    keys,
    scale,
    kernel: Kernel,
    grid,
    reach,
    values=None,
    cells=False,
    correct_queries=None,
    order=None,
):
    """``(sums (n, 1 + p), error (n,), binning)``: ``[Σ_j K_ij, Σ_j K_ij v_j] / K(0)`` by
    binning, a bound on ``Σ_j |error of K_ij|`` per query (the pair bound convolved with
    the counts, the weight of keys beyond ``reach``, the FFT's rounding) and the
    :class:`Binning`. ``values (m, p)``: None for the counts alone; ``cells``: keep each
    key's cell. The Gaussian's sums are corrected to third order
    (:func:`.binned_gaussian.gaussian_sums`, with ``correct_queries``); with an ``order``,
    the queries are on the grid's nodes and the keys' moments to that order sum them
    (:func:`.binned_taylor.taylor_sums`)."""
    if order is not None:
        return taylor_sums(queries, keys, scale, grid, reach, order, values, cells)
    size = tuple(grid_bucket(s) for s in grid.size)  # a few FFT lengths, not one per size
    grid = type(grid)(grid.start, grid.spacing, size)
    reach = tuple(min(r, s) for r, s in zip(reach, size, strict=True))
    if kernels.is_gaussian(kernel):
        return gaussian_sums(queries, keys, scale, grid, reach, values, cells, correct_queries)
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


#: Node blocks searched for each row's nearest key, at most: larger grids are searched
#: in blocks of several nodes a side.
NEAR_BLOCKS = 2**16


def keys_near(
    scaled_rows, kernel: Kernel, binning: Binning, m: int, least=None, keys=None, scale=None
) -> np.ndarray:
    """Indices of the keys that can weigh more than ``fgt.TOLERANCE`` of a row's sum,
    for rows ``(k, d)`` in scaled coordinates — a superset. A row's sum is at least
    ``least`` (a lower bound in ``K(0)`` units where known, say the binned sum less its
    error bound) and at least ``K(r)``, ``r`` a bound on the distance to its nearest key:
    a node with a positive count has a key within one cell diagonal, and
    :func:`nearest_occupied` finds such nodes near each row's corners. Keys
    beyond ``R`` with ``m K(R) ≤ tolerance · sum`` are left out (the Gaussian: ``R² = r² +
    2 ln(m/tol)``; the Laplacian ``R = r + ln(m/tol)``; a compact kernel its support);
    they are found by the cells within ``R`` of a row — or, in one column binned without
    each key's cell, among the ``keys (m, 1)`` (unscaled; ``scale`` their inverse
    bandwidth) by the rows' merged intervals (:func:`.fgt.keys_within`)."""
    grid, counts, cells, _ = binning
    spacing, start = np.asarray(grid.spacing), np.asarray(grid.start)
    diagonal = float(np.sqrt(np.sum(spacing**2)))
    # blocks of `factor` nodes a side: a block holding a positive count has a key within
    # (factor + 1)/2 spacings of its centre along each axis
    factor = max(1, math.ceil((counts.size / NEAR_BLOCKS) ** (1 / len(grid.size))))
    blocks = _blocks(counts[..., 0] > 0, factor)
    source = nearest_occupied(blocks).reshape(-1)
    indices, _ = corners(scaled_rows, grid, np)
    lowest = np.stack(np.unravel_index(indices, grid.size), axis=-1) // factor
    found = source[np.ravel_multi_index(tuple(np.moveaxis(lowest, -1, 0)), blocks.shape)]
    centres = (np.stack(np.unravel_index(np.maximum(found, 0), blocks.shape), axis=-1) * factor
               + (factor - 1) / 2) * spacing + start  # fmt: skip
    gaps = np.sqrt(np.sum((centres - scaled_rows) ** 2, axis=-1))  # (2^d, k)
    within = (factor + 1) / 2 * diagonal
    nearest = np.min(np.where(found >= 0, gaps, np.inf), axis=0) + within
    if kernel.compact:
        reach = np.full_like(nearest, float(kernel.support))
    else:  # the Gaussian and the Laplacian (the binned kernels are these)
        floor = np.full_like(nearest, np.inf)  # −log of the lower bound on the sum
        if least is not None:
            known = np.asarray(least) > 0
            floor[known] = -np.log(np.asarray(least)[known])
        if kernel.name == "laplacian":
            reach = np.minimum(nearest, floor) + math.log(m / fgt.TOLERANCE)
        else:
            reach = fgt.reach(np.minimum(nearest**2, 2 * floor), m)
    if cells is None:  # one column: the keys within R of a row, by merged intervals
        width = float(np.asarray(scale, np.float64).reshape(-1)[0])
        centres, radii = scaled_rows[:, 0] / width, reach / width
        if binning.beside is not None:  # rows whose keys are all among those beside the ends
            beside, below, above = binning.beside
            if np.all((centres + radii <= below) | (centres - radii >= above)):
                return beside[fgt.keys_within(np.asarray(keys)[beside, 0], centres, radii)]
        least, largest = (float(e[0]) for e in column_extremes(keys))  # (remembered)
        return fgt.keys_within(np.asarray(keys)[:, 0], centres, radii, extent=(least, largest))
    # the blocks within R of a row, then the keys binned into their nodes
    low = np.floor((scaled_rows - reach[:, None] - start) / spacing).astype(np.int64) - 1
    high = np.ceil((scaled_rows + reach[:, None] - start) / spacing).astype(np.int64) + 1
    size = np.asarray(blocks.shape)
    low, high = np.clip(low // factor, 0, size), np.clip(-(-high // factor), 0, size)
    covered = _covered(low, high, size)
    for axis in range(covered.ndim):
        covered = np.repeat(covered, factor, axis=axis)
    nodes = covered[tuple(slice(0, n) for n in grid.size)].reshape(-1)
    return np.flatnonzero(nodes[cells])


def nearest_occupied(occupied) -> np.ndarray:
    """At each node, the flat index of an occupied node near it (−1 when none is): the
    nearest in ``L¹`` over node indices, by a forward and a backward minimum scan per
    axis that carry the node found (its distance is then measured, so any occupied node
    would give a valid bound; a near one gives a tight bound)."""
    distance = np.where(occupied, 0.0, np.inf)
    source = np.where(occupied, np.arange(occupied.size).reshape(occupied.shape), -1)
    for axis in range(occupied.ndim):
        forward, from_forward = _scan(distance, source, axis)
        backward, from_backward = (np.flip(a, axis) for a in _scan(
            np.flip(distance, axis), np.flip(source, axis), axis))  # fmt: skip
        distance = np.minimum(forward, backward)
        source = np.where(forward <= backward, from_forward, from_backward)
    return np.where(np.isfinite(distance), source, -1)


def _scan(distance, source, axis: int):
    """``min_{j ≤ i} (distance_j + (i − j))`` along ``axis`` (unit steps), and the source
    carried from the ``j`` taken: the running minimum of ``distance_j − j``."""
    shape = [1] * distance.ndim
    shape[axis] = distance.shape[axis]
    ramp = np.arange(distance.shape[axis]).reshape(shape)
    shifted = distance - ramp
    least = np.minimum.accumulate(shifted, axis=axis)
    # the last place where the running minimum was taken
    taken = np.maximum.accumulate(np.where(shifted == least, ramp, 0), axis=axis)
    return least + ramp, np.take_along_axis(source, taken, axis)


def _blocks(occupied, factor: int) -> np.ndarray:
    """Whether each block of ``factor`` nodes a side holds an ``occupied`` node (the grid
    padded to whole blocks), axis by axis."""
    blocks = np.pad(occupied, [(0, -s % factor) for s in occupied.shape])
    for axis in range(occupied.ndim):
        every = [slice(None)] * occupied.ndim
        parts = []
        for offset in range(factor):  # strided views, or'ed elementwise
            every[axis] = slice(offset, None, factor)
            parts.append(blocks[tuple(every)])
        blocks = np.logical_or.reduce(parts)
    return blocks


def _covered(low, high, size) -> np.ndarray:
    """Nodes inside any of the boxes ``[low, high)`` (``(k, d)`` each), shape ``size``:
    the boxes' corners marked ±1 and summed along every axis."""
    d = len(size)
    marks = np.zeros(tuple(int(s) + 1 for s in size), np.int64)
    for corner in itertools.product((0, 1), repeat=d):
        at = tuple(np.where(c, high[:, j], low[:, j]) for j, c in enumerate(corner))
        np.add.at(marks, at, (-1) ** sum(corner))
    for axis in range(d):
        marks = np.cumsum(marks, axis=axis)
    return marks[tuple(slice(0, int(s)) for s in size)] > 0


def on_nodes(queries, scale, grid, within: float = 1e-6) -> bool:
    """Whether every query is within ``within`` of a spacing of a node of ``grid`` (the
    lattice is guessed from the first :data:`.binned_gaussian.LATTICE_ROWS` queries: the
    rest are checked here, a chunk at a time)."""
    start, spacing = np.asarray(grid.start), np.asarray(grid.spacing)
    for rows in range(binned_gaussian.LATTICE_ROWS, queries.shape[0], QUERY_CHUNK):
        position = np.asarray(queries[rows : rows + QUERY_CHUNK], np.float64) * scale - start
        position /= spacing
        if np.max(np.abs(position - np.rint(position))) > within:
            return False
    return True


def default_grid(low, high, kernel: Kernel, tolerance: float, budget: int, queries="corrected"):
    """``(grid, hopeless)``: the grid over scaled ``[low, high]`` at
    :func:`.binned_bound.nodes_for` nodes per bandwidth, coarsened to ``budget`` nodes with
    the kernel's reach; ``hopeless``: coarsened so much that no row would be settled."""
    d = np.asarray(low).size
    if kernels.is_gaussian(kernel):
        nodes = gaussian_nodes_for(tolerance, d, queries)
    else:
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
    plan = plan_grid(queries, keys, scale, kernel, grid_size, tolerance)
    grid, reach, n = plan.grid, plan.reach, queries.shape[0]
    if plan.hopeless or n * keys.shape[0] <= np.prod(np.add(grid.size, 2 * np.asarray(reach))):
        # fewer pairs than nodes to convolve: every row is for the exact method
        return np.zeros((n, values.shape[1])), np.zeros(n), np.zeros(n, bool), grid
    # values about their midrange: the FFT's rounding is relative to the largest feature
    middle = midrange(values)
    sums, error, _ = binned_sums(
        queries, keys, scale, kernel, grid, reach, values - middle,
        correct_queries=plan.correct_queries, order=plan.order,
    )  # fmt: skip
    weight = sums[:, 0]
    pooled = sums[:, 1:] / np.where(weight > 0, weight, 1.0)[:, None] + middle
    # |pooled − exact| ≤ Σ_j |error of K_ij| · range(values) / binned weight
    settled = (weight > 0) & (error <= tolerance * weight)
    return pooled, weight, settled, grid


class Plan(NamedTuple):
    """:func:`plan_grid`'s answer: the ``grid``, the kernel's ``reach`` on it, whether it is
    ``hopeless`` (coarsened past :data:`HOPELESS_COARSENING`), ``correct_queries``
    for :func:`binned_sums` (False: many queries on a finer grid, bounded; None: the
    Gaussian's rule), and the ``order`` of the keys' moments where the queries are on
    the grid's nodes (:mod:`.binned_taylor`; None: linear binning)."""

    grid: Any
    reach: tuple[int, ...]
    hopeless: bool
    correct_queries: bool | None = None
    order: int | None = None


def plan_grid(queries, keys, scale, kernel: Kernel, grid_size=None, tolerance=1e-3) -> Plan:
    """The :class:`Plan` of :func:`binned_pool` (its arguments): the default grid or one of
    ``grid_size`` nodes over the scaled points. For the Gaussian, queries on a lattice
    get a grid with them on its nodes, and queries at least
    :data:`.binned_gaussian.QUERIES_PER_NODE` times the nodes of the grid that bounds
    their interpolation (rather than correcting it) get that finer grid."""
    d = queries.shape[1]
    scale = np.broadcast_to(np.asarray(scale, np.float64), (d,))
    # scaling by s > 0 keeps the order, so the extremes of the scaled points are these
    (q_low, q_high), (k_low, k_high) = column_extremes(queries), column_extremes(keys)
    low = np.minimum(q_low, k_low).astype(np.float64) * scale
    high = np.maximum(q_high, k_high).astype(np.float64) * scale
    gaussian = grid_size is None and kernels.is_gaussian(kernel)
    found = (gaussian and lattice(queries)) or None
    if found is not None:  # queries on the nodes: each key's moments about its nearest
        origin, step = (a * scale for a in found)
        budget = LINEAR_COLUMNS * POOL_BUDGET
        taylor = taylor_plan(tolerance, step, high - low, keys.shape[0], budget)
        if taylor is not None:
            order, divisions = taylor
            grid = aligned_grid(low, high, origin, step, divisions, 0.0, POOL_BUDGET)
            if grid is not None and on_nodes(queries, scale, grid):
                return Plan(grid, reach_for(kernel, np.ones(d), grid), False, None, order)
    if gaussian:
        grid, hopeless = default_grid(low, high, kernel, tolerance, POOL_BUDGET, "bounded")
        if not hopeless and queries.shape[0] >= QUERIES_PER_NODE * np.prod(grid.size):
            return Plan(grid, reach_for(kernel, np.ones(d), grid), False, False)
    if grid_size is None:
        grid, hopeless = default_grid(low, high, kernel, tolerance, POOL_BUDGET)
    else:
        size = np.broadcast_to(np.asarray(grid_size, int), (d,))
        spacing = np.maximum(high - low, np.finfo(float).tiny) / np.maximum(size - 3, 1)
        grid = Grid(tuple(low - spacing), tuple(spacing), tuple(int(s) for s in size))
        hopeless = False
    return Plan(grid, reach_for(kernel, np.ones(d), grid), hopeless)
