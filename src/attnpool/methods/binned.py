"""Linear binning and kernel convolution on a regular grid (``d ≤ 2``).

The KernSmooth / KDEpy ``FFTKDE`` approach: each key's features are split
between the ``2^d`` corners of its grid cell (linear binning), the binned sums
are convolved with the kernel sampled at the grid offsets (by FFT), and the
result is interpolated back at the queries (multilinearly). The cost is
``O(m + G log G + n)`` for ``G`` grid nodes, whatever the bandwidth, and the
error falls as ``(Δ/h)²`` for a grid spacing ``Δ``.

For leave-one-out sums a point's own contribution *as binned* is removed
exactly: with corner weights ``w_c`` it adds ``Σ_{c,c'} w_c w_c' K(c − c')``
to its own interpolated sum (in 1-D ``K(0)((1 − f)² + f²) + 2 f (1 − f) K(Δ)``).

This module holds the grid (its planning, the cells' corners, the FFT convolution and
the interpolation, in NumPy or ``jax.numpy`` as ``xp`` says) and what ``binned`` takes,
and imports no JAX; :mod:`.binned_host` bins on concrete arrays (pooling and densities),
:mod:`.binned_traced` inside the bandwidth search's programs.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .._support.shapes import bucket, query_bucket
from .._support.units import column_extremes
from ..kernels import Kernel, is_builtin
from .binned_bound import kernel_tail
from .options import BINNED_SMOOTH_KERNELS

if TYPE_CHECKING:
    from ..sums.local_model import LocalModel

#: Grid nodes per (smallest) bandwidth for the bandwidth search.
NODES_PER_BANDWIDTH = 16
#: Largest grid (nodes in all): the bandwidth search coarsens above it, pooling refuses.
MAX_NODES = 2**24
#: The built-in kernels the bandwidth search bins (:mod:`attnpool.methods.options`).
SMOOTH_KERNELS = BINNED_SMOOTH_KERNELS
#: Largest default grid for pooling, counted with the kernel's reach on each side (the
#: convolution's length): a larger one would be coarsened, its rows pooled exactly where
#: the bound is not met.
POOL_BUDGET = 2**22
#: A default grid coarsened by more than this (to fit the budget) is not binned at all.
HOPELESS_COARSENING = 4.0


def refusal(kernel: Kernel, d: int) -> str | None:
    """Why ``binned`` cannot pool this kernel in ``d`` dimensions, or None: it bins
    radial, non-negative kernels of the Euclidean distance — the built-in ones, the
    boxcar among them, and kernels of your own (``Kernel.from_function``)."""
    if d > 2:
        return f"'binned' works for d <= 2; received d = {d}"
    radial = kernel.similarity == "distance" and not kernel.product and kernel.norm == 2.0
    if not radial or kernel.base is not None or kernel.order != 2:
        return (
            "'binned' bins radial, non-negative kernels of the Euclidean distance (built-in "
            f"or your own); received {kernel.name!r}"
        )
    return None


def search_refusal(model: LocalModel, criterion: str) -> str | None:
    """Why the binned bandwidth search cannot serve ``model`` by ``criterion``, or None:
    it searches CV bandwidths of one continuous column with :data:`SMOOTH_KERNELS`."""
    if criterion == "cv" and model.var_type == "c" and is_builtin(model.kernel, SMOOTH_KERNELS):
        return None
    return (
        "'binned' searches CV bandwidths for one continuous column with the kernels "
        f"{sorted(SMOOTH_KERNELS)}; received method={criterion!r}, "
        f"var_type={model.var_type!r}, kernel={model.kernel.name!r}"
    )


class Grid(NamedTuple):
    """A regular grid: node ``i`` of dimension ``j`` is at ``start[j] + spacing[j] · i``."""

    start: tuple[float, ...]
    spacing: tuple[float, ...]
    size: tuple[int, ...]


#: Grids up to this many nodes per dimension grow to a power of two (their FFTs are
#: cheap, their sizes many); larger ones by at most 1/8.
SMALL_GRID = 2**10


def grid_bucket(size: int) -> int:
    """The nodes a grid dimension of ``size`` nodes is grown to
    (:mod:`attnpool._support.shapes`)."""
    return query_bucket(size) if size <= SMALL_GRID else bucket(size)


def grid_for(
    points,
    smallest_bandwidth,
    nodes_per_bandwidth: float = NODES_PER_BANDWIDTH,
    *,
    tail: float = 0.0,
    budget: int = MAX_NODES,
) -> Grid:
    """A grid over the range of ``points (n, d)``, ``nodes_per_bandwidth`` nodes per bandwidth.

    Where the grid, padded on each side by the kernel's ``tail`` (in bandwidths, as the
    convolution is), would exceed ``budget`` nodes the spacing grows (and the error
    with it).
    """
    points = np.asarray(points, dtype=float).reshape(len(points), -1)
    d = points.shape[1]
    low, high = column_extremes(points)
    bandwidth = np.broadcast_to(np.asarray(smallest_bandwidth, float), (d,))
    spacing = bandwidth / nodes_per_bandwidth

    def padded_nodes(spacing):
        cells = np.maximum((high - low) / spacing, 1.0) + 3
        return np.prod(cells + 2 * np.minimum(tail * bandwidth / spacing, cells))

    for _ in range(4):  # the padding is capped at the grid, so shrink until it fits
        if padded_nodes(spacing) <= budget:
            break
        spacing = spacing * (padded_nodes(spacing) / budget) ** (1 / d) * 1.01
    cells = np.maximum((high - low) / spacing, 1.0)
    size = np.ceil(cells).astype(int) + 3
    return Grid(tuple(low - spacing), tuple(spacing), tuple(int(s) for s in size))


def resolves(points, smallest_bandwidth, budget: int = MAX_NODES) -> bool:
    """Whether a grid of at most ``budget`` nodes over ``points (n, d)`` holds
    :data:`NODES_PER_BANDWIDTH` nodes per ``smallest_bandwidth`` (else its spacing grows:
    a far outlier's range in the cluster's bandwidths)."""
    grid = grid_for(points, smallest_bandwidth, budget=budget)
    wanted = np.broadcast_to(np.asarray(smallest_bandwidth, float), (len(grid.spacing),))
    return bool(np.all(np.asarray(grid.spacing) <= wanted / NODES_PER_BANDWIDTH * (1 + 1e-9)))


def reach_for(kernel: Kernel, largest_bandwidth, grid: Grid) -> tuple[int, ...]:
    """Kernel offsets (in nodes, per dimension) that matter: up to the kernel's tail."""
    h = np.broadcast_to(np.asarray(largest_bandwidth, float), (len(grid.size),))
    return tuple(
        int(min(np.ceil(kernel_tail(kernel) * h_j / spacing), size))
        for h_j, spacing, size in zip(h, grid.spacing, grid.size, strict=True)
    )


def corners(points, grid: Grid, xp):
    """Flat node index ``(2^d, n)`` and weight ``(2^d, n)`` of each point's cell corners
    (its lowest corner clipped to the grid); ``xp``: ``jax.numpy`` (traceable) or NumPy."""
    start, spacing = xp.asarray(grid.start), xp.asarray(grid.spacing)
    position = (points - start) / spacing
    left = xp.clip(xp.floor(position), 0, xp.asarray(grid.size) - 2)
    fraction = position - left
    left = left.astype(np.int64 if xp is np else xp.int32)
    strides = np.cumprod((*grid.size[1:], 1)[::-1])[::-1]
    indices, weights = [], []
    for corner in itertools.product((0, 1), repeat=len(grid.size)):
        offset = xp.asarray(corner)
        indices.append(xp.sum((left + offset) * strides, axis=1))
        weights.append(xp.prod(xp.where(offset == 1, fraction, 1 - fraction), axis=1))
    return xp.stack(indices), xp.stack(weights)


def fft_lengths(size, weights_shape) -> list[int]:
    """The FFT's length in each dimension for :func:`convolve`: a power of two past the
    grid and the weights together (a linear, not circular, convolution)."""
    return [1 << int(np.ceil(np.log2(s + w))) for s, w in zip(size, weights_shape, strict=True)]


def convolve(binned, weights, xp):
    """Linear (not circular) convolution of each feature of ``binned (*size, f)`` with
    ``weights (2·reach + 1)``, cropped back to the grid; ``xp``: ``jax.numpy`` or NumPy."""
    d = weights.ndim
    size = binned.shape[:d]
    reach = [(w - 1) // 2 for w in weights.shape]
    lengths = fft_lengths(size, weights.shape)
    axes = tuple(range(d))
    spectrum = xp.fft.rfftn(binned, s=lengths, axes=axes)
    spectrum = spectrum * xp.fft.rfftn(weights, s=lengths, axes=axes)[..., None]
    full = xp.fft.irfftn(spectrum, s=lengths, axes=axes)
    return full[tuple(slice(r, r + s) for r, s in zip(reach, size, strict=True))]


def interpolate(values, corners):
    """Multilinear interpolation of grid ``values (*size, f)`` at the binned points."""
    indices, weights = corners
    flat = values.reshape(-1, values.shape[-1])
    return sum(
        weight[:, None] * flat[index] for index, weight in zip(indices, weights, strict=True)
    )
