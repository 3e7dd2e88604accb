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

import math

import numpy as np

from .. import kernels
from .._support.units import column_extremes, midrange
from ..kernels import Kernel
from . import binned_gaussian
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
from .binned_bound import MOST_NODES, kernel_tail, nodes_for, pair_error_bound
from .binned_gaussian import QUERIES_PER_NODE, aligned_grid, gaussian_sums, lattice
from .binned_gaussian import nodes_for as gaussian_nodes_for
from .binned_taylor import LINEAR_COLUMNS, taylor_sums
from .binned_taylor import plan as taylor_plan
from .binning import (
    FFT_ROUNDING,
    QUERY_CHUNK,
    Binning,
    GridPlan,
    bin_points,
    counted_features,
    key_total,
)


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
    queries, keys, scale, kernel: Kernel, plan: GridPlan, values=None, *, cells=False, weights=None
):
    """``(sums (n, 1 + p), error (n,), binning)``: ``[Σ_j K_ij, Σ_j K_ij v_j] / K(0)`` by
    binning on ``plan``'s grid, a bound on ``Σ_j |error of K_ij|`` per query (the pair
    bound convolved with the counts, the weight of keys beyond the reach, the FFT's
    rounding) and the :class:`Binning`. ``values (m, p)``: None for the counts alone;
    ``cells``: keep each key's cell. The Gaussian's sums are corrected to third order
    (:func:`.binned_gaussian.gaussian_sums`, with the plan's ``correct_queries``); with
    the plan's ``order``, the queries are on the grid's nodes and the keys' moments to
    that order sum them (:func:`.binned_taylor.taylor_sums`). ``weights (m,)``: each key
    counted by its weight (``Σ_j w_j K_ij`` and the bounds in weights; None: by one)."""
    if plan.order is not None:
        return taylor_sums(queries, keys, scale, plan, values, cells=cells, weights=weights)
    grid = plan.grid
    size = tuple(grid_bucket(s) for s in grid.size)  # a few FFT lengths, not one per size
    grid = type(grid)(grid.start, grid.spacing, size)
    reach = tuple(min(r, s) for r, s in zip(plan.reach, size, strict=True))
    if kernels.is_gaussian(kernel):
        plan = plan._replace(grid=grid, reach=reach)
        return gaussian_sums(queries, keys, scale, plan, values, cells=cells, weights=weights)
    bound, outside = pair_error_bound(kernel, grid.spacing, size, reach)
    features = counted_features(keys.shape[0], values, weights)
    binned, where = bin_points(keys, scale, grid, features, cells=cells)
    stencil = kernel_on_grid(kernel, grid, reach)
    counts = binned[..., :1]
    smoothed = np.concatenate([convolve(binned, stencil, np), convolve(counts, bound, np)],
                              axis=-1)  # fmt: skip
    scaled = np.asarray(queries, np.float64) * np.asarray(scale, np.float64)
    sums = interpolate(smoothed, scaled, grid)
    # an FFT convolution's rounding is bounded by eps·log2(length)·‖counts‖₂·‖stencil‖₁
    rounding = (
        FFT_ROUNDING
        * np.log2(np.prod(fft_lengths(size, bound.shape)))
        * float(np.sqrt(np.sum(counts**2)))
        * (float(np.sum(stencil)) + float(np.sum(bound)))
    )
    error = sums[:, -1] + outside * key_total(keys.shape[0], weights) + rounding
    return sums[:, :-1], error, Binning(grid, counts, where)


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
    extremes, tail = np.stack([low, high]), kernel_tail(kernel)
    if kernels.is_gaussian(kernel):
        nodes = gaussian_nodes_for(tolerance, d, queries)
    else:
        # the budget's spacing: a grid needing more than HOPELESS_COARSENING times its
        # nodes per bandwidth is hopeless, whatever more the bound would ask
        finest = grid_for(extremes, np.ones(d), MOST_NODES, tail=tail, budget=budget)
        nodes = nodes_for(kernel, tolerance, d, HOPELESS_COARSENING / max(finest.spacing))
        if math.isinf(nodes):
            return finest, True
    grid = grid_for(extremes, np.ones(d), nodes, tail=tail, budget=budget)
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
    sums, error, _ = binned_sums(queries, keys, scale, kernel, plan, values - middle)
    weight = sums[:, 0]
    pooled = sums[:, 1:] / np.where(weight > 0, weight, 1.0)[:, None] + middle
    # |pooled − exact| ≤ Σ_j |error of K_ij| · range(values) / binned weight
    settled = (weight > 0) & (error <= tolerance * weight)
    return pooled, weight, settled, grid


def plan_grid(queries, keys, scale, kernel: Kernel, grid_size=None, tolerance=1e-3) -> GridPlan:
    """The :class:`.binning.GridPlan` of :func:`binned_pool` (its arguments): the default
    grid or one of ``grid_size`` nodes over the scaled points. For the Gaussian, queries
    on a lattice get a grid with them on its nodes, and queries at least
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
                return GridPlan(grid, reach_for(kernel, np.ones(d), grid), order=order)
    if gaussian:
        grid, hopeless = default_grid(low, high, kernel, tolerance, POOL_BUDGET, "bounded")
        if not hopeless and queries.shape[0] >= QUERIES_PER_NODE * np.prod(grid.size):
            return GridPlan(grid, reach_for(kernel, np.ones(d), grid), correct_queries=False)
    if grid_size is None:
        grid, hopeless = default_grid(low, high, kernel, tolerance, POOL_BUDGET)
    else:
        size = np.broadcast_to(np.asarray(grid_size, int), (d,))
        spacing = np.maximum(high - low, np.finfo(float).tiny) / np.maximum(size - 3, 1)
        grid = Grid(tuple(low - spacing), tuple(spacing), tuple(int(s) for s in size))
        hopeless = False
    return GridPlan(grid, reach_for(kernel, np.ones(d), grid), hopeless)
