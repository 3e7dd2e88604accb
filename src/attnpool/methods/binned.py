"""Linear binning and kernel convolution on a regular grid (1-D).

The KernSmooth / KDEpy ``FFTKDE`` approach: each point's features are split
between its two neighbouring grid nodes (linear binning), the binned sums are
convolved with the kernel sampled at the grid offsets (by FFT), and the result
is interpolated back at the points. The cost is ``O(n + G log G)`` for ``G``
grid nodes, whatever the bandwidth, and the error falls as ``(Δ/h)²`` for a
grid spacing ``Δ``.

For leave-one-out sums the point's own contribution *as binned* is removed
exactly: a point at fraction ``f`` between two nodes contributes
``K(0)((1 − f)² + f²) + 2 f (1 − f) K(Δ)`` to its own interpolated sum.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from ..kernels import Kernel

#: Grid nodes per (smallest) bandwidth.
NODES_PER_BANDWIDTH = 16
#: Largest grid.
MAX_NODES = 2**20


class Grid(NamedTuple):
    """A regular grid: ``start + spacing · arange(size)``."""

    start: float
    spacing: float
    size: int


def kernel_tail(kernel: Kernel, dtype=np.float64) -> float:
    """Scaled distance beyond which the kernel is below the dtype's resolution (or zero)."""
    if kernel.compact:
        return float(kernel.support)
    floor = np.log(np.finfo(dtype).eps) - 1.0
    u = np.geomspace(1e-3, 1e4, 4000)
    values = np.asarray(kernel.log_profile(jnp.asarray(u**2))) - float(
        kernel.log_profile(jnp.zeros(()))
    )
    below = np.flatnonzero(values < floor)
    return float(u[below[0]]) if below.size else float(u[-1])


def grid_for(x: np.ndarray, smallest_bandwidth: float) -> Grid:
    """A grid over the range of ``x`` with :data:`NODES_PER_BANDWIDTH` nodes per bandwidth."""
    low, high = float(np.min(x)), float(np.max(x))
    spacing = smallest_bandwidth / NODES_PER_BANDWIDTH
    if (high - low) / spacing > MAX_NODES - 3:
        spacing = (high - low) / (MAX_NODES - 3)
    size = int(np.ceil((high - low) / spacing)) + 3
    return Grid(low - spacing, spacing, size)


def reach_for(kernel: Kernel, largest_bandwidth: float, grid: Grid) -> int:
    """Kernel offsets (in nodes) that matter: up to the kernel's tail, at most the grid."""
    return int(min(np.ceil(kernel_tail(kernel) * largest_bandwidth / grid.spacing), grid.size))


def linear_bin(x, features, grid: Grid):
    """``(size, f)`` sums of ``features (n, f)`` split linearly between neighbouring nodes."""
    position = (x - grid.start) / grid.spacing
    left = jnp.clip(jnp.floor(position), 0, grid.size - 2).astype(jnp.int32)
    fraction = position - left
    binned = jnp.zeros((grid.size, features.shape[1]), features.dtype)
    binned = binned.at[left].add((1 - fraction)[:, None] * features)
    return binned.at[left + 1].add(fraction[:, None] * features), left, fraction


def kernel_on_grid(kernel: Kernel, bandwidth, grid: Grid, reach: int):
    """``K(k Δ / h)`` for ``k = −reach … reach``, relative to ``K(0)``."""
    offsets = jnp.arange(-reach, reach + 1) * grid.spacing / bandwidth
    return jnp.exp(
        kernel.log_profile(offsets**2) - kernel.log_profile(jnp.zeros((), offsets.dtype))
    )


def convolve(binned, weights):
    """Linear (not circular) convolution of each column of ``binned`` with ``weights``."""
    size, reach = binned.shape[0], (weights.shape[0] - 1) // 2
    length = 1 << int(np.ceil(np.log2(size + 2 * reach + 1)))
    spectrum = jnp.fft.rfft(binned, n=length, axis=0) * jnp.fft.rfft(weights, n=length)[:, None]
    full = jnp.fft.irfft(spectrum, n=length, axis=0)
    return full[reach : reach + size]


def interpolate(values, left, fraction):
    """Linear interpolation of grid ``values (size, f)`` at the binned points."""
    return (1 - fraction)[:, None] * values[left] + fraction[:, None] * values[left + 1]


def self_weight(weights, fraction):
    """A point's own contribution to its interpolated, binned, convolved sum (per unit feature)."""
    reach = (weights.shape[0] - 1) // 2
    k0, k1 = weights[reach], weights[reach + 1]
    return k0 * ((1 - fraction) ** 2 + fraction**2) + 2 * fraction * (1 - fraction) * k1
