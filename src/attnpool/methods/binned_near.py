"""The keys that can matter to a row a binning left unsettled, and its exact sum over them.

A row whose binned sum a bound cannot settle (little weight: the tails, the gaps
between clusters) is summed exactly, but only over the keys within its *reach*: its
sum is at least ``K(r)``, ``r`` a bound on the distance to its nearest key (an
occupied node near it, :func:`nearest_occupied`), and at least the binned sum less its
error bound; the keys beyond ``R`` with ``m K(R) ≤ tolerance · sum`` cannot matter.
:func:`keys_near` finds those keys (each key's node from the binning pass, or in one
column the rows' merged intervals); for the Gaussian in two columns,
:func:`near_log_sums` sums them in one compiled pass, the keys sorted by cells of
several nodes, each row over the cells along its chords within its reach (``expansions.c``'s
``box_gaussian_log_sums``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .._support.units import column_extremes
from ..kernels import Kernel, is_gaussian
from . import fgt, native
from .binning import Binning

#: Node blocks searched for each row's nearest key, at most: larger grids are searched
#: in blocks of several nodes a side.
NEAR_BLOCKS = 2**16
#: :func:`near_log_sums` sums over the keys by cells of several nodes a side, sized so
#: that a row of median reach spans about this many rows of them (at most
#: :data:`MAX_SUM_CELL` nodes a side): fewer visits, a few more keys looked at.
SUM_CELL_ROWS, MAX_SUM_CELL = 4, 16


def row_reach(scaled_rows, kernel: Kernel, binning: Binning, m: float, least=None):
    """``(reach (k,), blocks, factor)``: the distance (scaled) beyond which ``m`` keys (with
    observation weights: their total in units of the smallest)
    weigh at most ``fgt.TOLERANCE`` of each row's sum, for rows ``(k, d)`` in scaled
    coordinates; the occupied ``blocks`` of ``factor`` nodes a side searched for the
    nearest key. A row's sum is at least ``least`` (a lower bound in ``K(0)`` units
    where known, say the binned sum less its error bound) and at least ``K(r)``: a node
    with a positive count has a key within one cell diagonal. The Gaussian: ``R² = r² +
    2 ln(m/tol)``; the Laplacian ``R = r + ln(m/tol)``; a compact kernel its support."""
    grid = binning.grid
    spacing, start = np.asarray(grid.spacing), np.asarray(grid.start)
    factor, blocks, source, within = _occupied(binning)
    node = np.clip(np.rint((scaled_rows - start) / spacing), 0, np.asarray(grid.size) - 1)
    found = source[np.ravel_multi_index(tuple((node.astype(np.int64) // factor).T),
                                        blocks.shape)]  # fmt: skip
    centres = (np.stack(np.unravel_index(np.maximum(found, 0), blocks.shape), axis=-1) * factor
               + (factor - 1) / 2) * spacing + start  # fmt: skip
    nearest = np.sqrt(np.sum((centres - scaled_rows) ** 2, axis=-1)) + within
    nearest[found < 0] = np.inf
    if kernel.compact:
        return np.full_like(nearest, float(kernel.support)), blocks, factor
    # the Gaussian and the Laplacian (the binned kernels are these)
    floor = np.full_like(nearest, np.inf)  # −log of the lower bound on the sum
    if least is not None:
        known = np.asarray(least) > 0
        floor[known] = -np.log(np.asarray(least)[known])
    if kernel.name == "laplacian":
        reach = np.minimum(nearest, floor) + math.log(m / fgt.TOLERANCE)
    else:
        reach = fgt.reach(np.minimum(nearest**2, 2 * floor), m)
    return reach, blocks, factor


def keys_near(
    scaled_rows, kernel: Kernel, binning: Binning, m: float, least=None, keys=None, scale=None
) -> np.ndarray:
    """Indices of the keys that can weigh more than ``fgt.TOLERANCE`` of a row's sum,
    for rows ``(k, d)`` in scaled coordinates — a superset: those within
    :func:`row_reach` of a row, found by the cells within it — or, in one column binned
    without each key's cell, among the ``keys (m, 1)`` (unscaled; ``scale`` their
    inverse bandwidth) by the rows' merged intervals (:func:`.fgt.keys_within`)."""
    grid, cells = binning.grid, binning.cells
    reach, blocks, factor = row_reach(scaled_rows, kernel, binning, m, least)
    if cells is None:  # one column: the keys within R of a row, by merged intervals
        width = float(np.asarray(scale, np.float64).reshape(-1)[0])
        centres, radii = scaled_rows[:, 0] / width, reach / width
        if binning.beside is not None:  # rows whose keys are all among those beside the ends
            beside, below, above = binning.beside
            if np.all((centres + radii <= below) | (centres - radii >= above)):
                return beside[fgt.keys_within(np.asarray(keys)[beside, 0], centres, radii)]
        least, largest = (float(e[0]) for e in column_extremes(keys))  # (remembered)
        return fgt.keys_within(np.asarray(keys)[:, 0], centres, radii, extent=(least, largest))
    return _keys_in_boxes(*_node_boxes(scaled_rows, reach, grid), blocks.shape, factor, binning)


def near_log_sums(
    scaled_rows, kernel: Kernel, binning: Binning, m: float, least, keys, scale
) -> np.ndarray | None:
    """``(k,)`` each row's ``log Σ_j K_ij / K(0)`` over every key within its
    :func:`row_reach`, exact to rounding (``−inf`` where none is), in one compiled pass:
    the Gaussian in two columns binned with each key's cell. None elsewhere (no
    compiled loops, another kernel): :func:`keys_near` and an exact method serve."""
    grid, cells = binning.grid, binning.cells
    compiled = native.expansion_function("box_gaussian_log_sums")
    if cells is None or len(grid.size) != 2 or not is_gaussian(kernel) or compiled is None:
        return None
    rows = np.ascontiguousarray(scaled_rows, np.float64)
    factor, blocks, source, within = _occupied(binning)
    reach, covered = np.empty(rows.shape[0]), np.zeros(blocks.shape, np.uint8)
    # (every array the loops read is held here: ctypes takes bare addresses)
    bounds = None if least is None else np.ascontiguousarray(least, np.float64)
    start, spacing = (np.ascontiguousarray(a, np.float64) for a in (grid.start, grid.spacing))
    source = np.ascontiguousarray(source, np.int64)
    block_shape, size = np.array(blocks.shape, np.int64), np.array(grid.size, np.int64)
    at = native.address
    if native.expansion_function("gaussian_reach")(
        at(rows), rows.shape[0], at(source), at(block_shape), factor, at(start), at(spacing),
        at(size), None if bounds is None else at(bounds), 2 * math.log(m / fgt.TOLERANCE),
        within, at(reach), at(covered),
    ):  # fmt: skip
        return None
    near = _keys_in_cover(covered.astype(bool), factor, binning)
    # cells of `side` nodes a side: a row visits about 2R/(side·spacing) rows of them
    side = int(np.clip(np.median(reach) / (SUM_CELL_ROWS * np.max(spacing)), 1, MAX_SUM_CELL))
    shape = -(-np.asarray(grid.size, np.int64) // side)
    nodes = np.divmod(cells[near], grid.size[1])
    in_cell = nodes[0] // side * shape[1] + nodes[1] // side
    by_cell = np.argsort(in_cell, kind="stable")
    sorted_keys = np.ascontiguousarray(np.asarray(keys)[near[by_cell]] * scale, np.float64)
    offsets = np.zeros(int(np.prod(shape)) + 1, np.int64)
    np.cumsum(np.bincount(in_cell, minlength=offsets.size - 1), out=offsets[1:])
    # a key lies within a spacing of its node: within that of its cell's nodes' span
    out, width = np.empty(rows.shape[0]), side * spacing
    compiled(at(rows), rows.shape[0], at(sorted_keys), at(offsets), at(shape), at(start),
             at(width), at(spacing), at(reach), at(out))  # fmt: skip
    return out


def _node_boxes(scaled_rows, reach, grid) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)``, each ``(k, d)``: the nodes ``low ≤ node < high`` (clipped to the
    grid) whose keys may lie within ``reach`` of each row — a key's node is its nearest
    or its cell's lowest corner, hence one node of slack on each side."""
    spacing, start = np.asarray(grid.spacing), np.asarray(grid.start)
    low = np.floor((scaled_rows - reach[:, None] - start) / spacing).astype(np.int64) - 1
    high = np.ceil((scaled_rows + reach[:, None] - start) / spacing).astype(np.int64) + 1
    size = np.asarray(grid.size)
    return np.clip(low, 0, size), np.clip(high, 0, size)


def _occupied(binning: Binning) -> tuple[int, np.ndarray, np.ndarray, float]:
    """``(factor, blocks, source, within)``: the grid in blocks of ``factor`` nodes a side
    (at most :data:`NEAR_BLOCKS` of them), whether each holds a positive count, at each
    the flat index of an occupied block near it (:func:`nearest_occupied`), and how far
    beyond an occupied block's centre its key may lie (``(factor + 1)/2`` spacings along
    each axis: a node with a count has a key within a spacing of it)."""
    grid, counts = binning.grid, binning.counts
    factor = max(1, math.ceil((counts.size / NEAR_BLOCKS) ** (1 / len(grid.size))))
    blocks = _blocks(counts[..., 0] > 0, factor)
    within = (factor + 1) / 2 * float(np.sqrt(np.sum(np.asarray(grid.spacing) ** 2)))
    return factor, blocks, nearest_occupied(blocks).reshape(-1), within


def _keys_in_boxes(low, high, shape, factor: int, binning: Binning) -> np.ndarray:
    """Indices of the keys whose cells lie in any of the node boxes ``[low, high)``,
    marked on the blocks of ``factor`` nodes a side (``shape``) that hold them."""
    size = np.asarray(shape)
    low, high = np.clip(low // factor, 0, size), np.clip(-(-high // factor), 0, size)
    return _keys_in_cover(_covered(low, high, size), factor, binning)


def _keys_in_cover(covered, factor: int, binning: Binning) -> np.ndarray:
    """Indices of the keys whose cells lie in the ``covered`` blocks of ``factor`` nodes."""
    for axis in range(covered.ndim):
        covered = np.repeat(covered, factor, axis=axis)
    nodes = covered[tuple(slice(0, n) for n in binning.grid.size)].reshape(-1)
    return np.flatnonzero(np.take(nodes, binning.cells))


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
