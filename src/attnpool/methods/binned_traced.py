"""Binning inside the bandwidth search's programs (traceable, the grid's shape static):
the grid as a pytree (:class:`BinnedPlan`), linear binning with ``jax.numpy``, the
kernel sampled at the grid's offsets, and leave-one-out sums with each point's own
contribution *as binned* removed exactly: with corner weights ``w_c`` it adds
``Σ_{c,c'} w_c w_c' K(c − c')`` to its own interpolated sum (in 1-D
``K(0)((1 − f)² + f²) + 2 f (1 − f) K(Δ)``)."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels import Kernel
from .binned import Grid, convolve, corners, grid_bucket, interpolate

__all__ = ["BinnedPlan", "kernel_on_grid", "leave_one_out_sums", "linear_bin", "self_weight"]


@jax.tree_util.register_pytree_node_class
class BinnedPlan:
    """A grid and the kernel's reach on it, passed to jitted functions as a pytree whose
    leaves are the grid's origin and spacing (traced) and whose structure holds the
    grid's size and the reach (static). ``nearest (n, p)``: each row's limit where no
    other key is within the reach — the response of its nearest other row (a leaf too;
    None: such a row's fit is NaN)."""

    def __init__(self, grid: Grid, reach: tuple[int, ...], nearest=None):
        self.grid, self.reach, self.nearest = grid, reach, nearest

    def tree_flatten(self):
        return (self.grid.start, self.grid.spacing, self.nearest), (self.grid.size, self.reach)

    @classmethod
    def tree_unflatten(cls, static, leaves):
        size, reach = static
        *origin, nearest = leaves
        return cls(Grid(*origin, size), reach, nearest)

    @classmethod
    def bucketed(cls, grid: Grid, reach: tuple[int, ...]) -> BinnedPlan:
        """The plan on ``grid`` grown to a bucketed size (empty nodes past the data)."""
        size = tuple(grid_bucket(s) for s in grid.size)
        origin = (np.asarray(grid.start, np.float64), np.asarray(grid.spacing, np.float64))
        # a reach cut at the grid's size (the kernel spans it all) spans the grown grid
        reach = tuple(
            new if r >= old else r for r, old, new in zip(reach, grid.size, size, strict=True)
        )
        return cls(Grid(*origin, size), reach)


def linear_bin(points, features, grid: Grid, into=None):
    """Binned sums ``(*size, f)`` of ``features (n, f)`` at ``points (n, d)`` (added to
    ``into``, if given), and the corners."""
    indices, weights = corners(points, grid, jnp)
    binned = jnp.zeros((int(np.prod(grid.size)), features.shape[1]), features.dtype)
    if into is not None:
        binned = into.reshape(binned.shape)
    for index, weight in zip(indices, weights, strict=True):
        binned = binned.at[index].add(weight[:, None] * features)
    return binned.reshape(*grid.size, features.shape[1]), (indices, weights)


def kernel_on_grid(kernel: Kernel, bandwidth, grid: Grid, reach: tuple[int, ...]):
    """``K(offset / h) / K(0)`` at the node offsets ``−reach … reach`` (shape ``2·reach + 1``)."""
    bandwidth = jnp.broadcast_to(bandwidth, (len(grid.size),))
    axes = [
        (jnp.arange(-r, r + 1) * spacing / bandwidth[j]) ** 2
        for j, (r, spacing) in enumerate(zip(reach, grid.spacing, strict=True))
    ]
    r2 = sum(jnp.meshgrid(*axes, indexing="ij"))
    return jnp.exp(kernel.log_profile(r2) - kernel.log_profile(jnp.zeros((), r2.dtype)))


def self_weight(weights, corners):
    """A point's own contribution to its interpolated, binned, convolved sum (per unit feature)."""
    d = weights.ndim
    centre = np.array([(w - 1) // 2 for w in weights.shape])
    offsets = list(itertools.product((0, 1), repeat=d))
    _, corner_weights = corners
    total = 0.0
    for a, offset_a in enumerate(offsets):
        for b, offset_b in enumerate(offsets):
            lag = tuple(centre + np.array(offset_a) - np.array(offset_b))
            total = total + corner_weights[a] * corner_weights[b] * weights[lag]
    return total


def leave_one_out_sums(points, features, bandwidth, kernel: Kernel, grid: Grid, reach):
    """``(n, f)``: each point's binned kernel sums of ``features (n, f)`` over the others
    (traceable): the points binned, convolved with the kernel at ``bandwidth``,
    interpolated back, and each point's own contribution *as binned* taken away
    (:func:`self_weight`). ``points (n, d)`` inside ``grid``; rows of zero features bin
    nothing."""
    sums, corners = linear_bin(points, features, grid)
    weights = kernel_on_grid(kernel, bandwidth, grid, reach)
    moments = interpolate(convolve(sums, weights, jnp), corners)
    return moments - self_weight(weights, corners)[:, None] * features
