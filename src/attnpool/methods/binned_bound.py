"""A bound on linear binning's error, per pair and per query.

:func:`pair_error_bound` gives ``B(u)``, a bound on the error of one pair summed by
linear binning, convolution and interpolation, for every node offset ``u``;
convolved with the binned counts it bounds each query's summed error, so
:mod:`attnpool.methods.binned` can prove its tolerance row by row. :func:`nodes_for`
chooses the grid from the same bound.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from ..kernels import Kernel


@cache
def kernel_tail(kernel: Kernel, dtype=np.float64) -> float:
    """Scaled distance beyond which the kernel is below the dtype's resolution (or zero)."""
    if kernel.compact:
        return float(kernel.support)
    u = np.geomspace(1e-3, 1e4, 4000)
    below = np.flatnonzero(_profile(kernel, u) < np.finfo(dtype).eps / np.e)
    return float(u[below[0]]) if below.size else float(u[-1])


def pair_error_bound(kernel: Kernel, spacing, size: tuple[int, ...], reach: tuple[int, ...]):
    """A bound ``B`` on binning's error for one pair, per node offset, and the largest
    kernel value left out beyond ``reach``.

    A key and a query are each split between their cells' corners, so a pair at offset
    ``t`` is summed as a convex combination of ``K`` at node offsets ``c − c'`` within two
    spacings of ``t`` in each dimension. Its error is at most the kernel's oscillation
    over that box, and, where ``K`` is twice differentiable there, at most
    ``Σ_j Δ_j²/4 · max |∂_jj K|`` (two multilinear interpolations); for a radial profile
    ``|∂_jj K| ≤ max(|p''|, |p'|/r)``. Taking the larger box of four spacings around each
    node offset ``u`` makes ``Σ_{c,c'} w_c w_c' B(c − c')`` bound the pair's error
    whatever ``t`` put weight on ``u``: convolved with the binned counts and interpolated
    like the sums, ``B`` bounds ``Σ_j |error of K_ij|`` for every query, whatever the
    keys' layout.

    Returns ``B`` of shape ``2·(reach + margin) + 1`` and the profile's largest value at
    node offsets beyond ``reach`` (0 when the reach spans the grid or the support).
    """
    spacing = np.asarray(spacing, np.float64)
    margin = np.ceil(4 * np.sqrt(np.sum(spacing**2)) / spacing).astype(int)
    span = tuple(int(min(r + g, s - 1)) for r, g, s in zip(reach, margin, size, strict=True))
    largest = np.sqrt(np.sum((np.asarray(span) * spacing) ** 2))
    step, radial, _ = radial_error_bound(kernel, spacing, largest)
    axes = [np.arange(-r, r + 1) * h for r, h in zip(span, spacing, strict=True)]
    at = np.sqrt(sum(np.meshgrid(*[a**2 for a in axes], indexing="ij"))) / step
    bound = np.maximum(radial[np.floor(at).astype(int)], radial[np.ceil(at).astype(int)])
    left_out = [r * h for r, s, h in zip(reach, size, spacing, strict=True) if r < s - 1]
    outside = float(_profile(kernel, np.array([min(left_out)]))[0]) if left_out else 0.0
    return bound, outside


def radial_error_bound(kernel: Kernel, spacing, largest: float):
    """``(step, B(r), p(r))`` at radii ``0, step, …`` past ``largest``: the pair-error bound
    of :func:`pair_error_bound` as a function of the node offset's length ``r``, and the
    profile ``p``.

    Three bounds on one interpolation's error, each taken over the radii a pair's box
    reaches (``r ± 4‖Δ‖``), the least of them kept: the oscillation of ``p``;
    ``Σ_j Δ_j²/8 · max |∂_jj K|`` where ``K`` is twice differentiable; and
    ``Σ_j Δ_j/4 · V``, with ``V`` the variation of the slope, which holds across a kink (a
    compact kernel's edge, the cone at 0 of the Laplacian and the triangle) as well. The
    derivatives are differences on a table 16 times finer than the grid.
    """
    spacing = np.asarray(spacing, np.float64)
    d = spacing.size
    window = 4 * np.sqrt(np.sum(spacing**2))
    step = spacing.min() / 16
    radii = np.arange(0.0, largest + window + 3 * step, step)
    profile = _profile(kernel, radii)
    padded = np.concatenate([profile[1:2], profile, profile[-1:]])  # even in r; flat at the end
    segment_slope = np.diff(padded) / step
    slope = (segment_slope[1:] + segment_slope[:-1]) / 2
    turn = np.abs(np.diff(segment_slope))  # the slope's variation at each radius
    # ∂_jj K is a convex combination of p'' and p'/r (the level sets' curvature, d ≥ 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        level_curvature = np.where(radii > 0, np.abs(slope) / radii, turn / step)
    bending = turn / step if d == 1 else np.maximum(turn / step, level_curvature)
    width = 2 * int(np.ceil(window / step)) + 3

    def largest_near(table):
        return _window_max(table, width)

    oscillation = largest_near(profile) + largest_near(-profile)
    smooth = np.sum(spacing**2) / 8 * largest_near(bending)
    variation = _window_sum(turn, width)
    if d > 1:
        variation = variation + 2 * window * largest_near(level_curvature)
    across_kinks = np.sum(spacing) / 4 * variation
    # two interpolations (the key's and the query's); 1.25 for the tables' sampling
    return step, 2.5 * np.minimum(oscillation / 2.5, np.minimum(smooth, across_kinks)), profile


def _window_max(table, width: int):
    """The largest entry of the window of ``width`` (odd) entries centred on each entry of
    ``table (n,)``, mirrored at the ends about the first and last entries (``d c b | a b
    c d | c b a``, SciPy's ``mode="mirror"``)."""
    return _over_windows(table, width, np.maximum)


def _window_sum(table, width: int):
    """The sum over the same windows as :func:`_window_max` (sums of non-negative entries
    stay exact to rounding: no differences of running sums)."""
    return _over_windows(table, width, np.add)


def _over_windows(table, width: int, combine):
    """``combine`` over centred windows by doubling: spans of ``2^k`` entries from spans of
    ``2^(k−1)``, then the window as the spans of the bits of ``width`` laid end to end —
    ``O(n log width)``."""
    padded = np.pad(np.asarray(table, np.float64), width // 2, mode="reflect")
    n = padded.size - width + 1
    span, spans, result, offset = padded, 1, None, 0
    while spans <= width:
        if width & spans:
            piece = span[offset : offset + n]
            result = piece if result is None else combine(result, piece)
            offset += spans
        span = combine(span[:-spans], span[spans:]) if 2 * spans <= width else span
        spans *= 2
    return result


def _profile(kernel: Kernel, radii) -> np.ndarray:
    """``K(r) / K(0)`` at ``radii``, in float64 (0 outside a compact support): the built-in
    profiles in NumPy (no program to build)."""
    r2 = np.asarray(radii, np.float64) ** 2
    top = np.asarray(kernel.log_profile(np.zeros(())), np.float64)
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(np.exp(np.asarray(kernel.log_profile(r2), np.float64) - top), nan=0.0)


#: The most grid nodes per bandwidth :func:`nodes_for` considers.
MOST_NODES = 2.0**20
#: The width of the bracket :func:`nodes_for` stops at (0.3%).
PRECISION = 2.0 ** (1 / 256)


@cache
def relative_bound(kernel: Kernel, nodes: float, d: int = 1) -> float:
    """The error bound of :func:`radial_error_bound` on keys of uniform density, relative
    to the kernel sum, at ``nodes`` grid nodes per bandwidth (about ``16 · nodes ·
    tail`` table entries: cached, since a search evaluates it at powers of two); ``inf``
    where the table's first step passes a compact kernel's support (far below one node
    per bandwidth in several columns: the kernel sum's table is 0 beyond its centre)."""
    step, bound, profile = radial_error_bound(kernel, np.full(d, 1.0 / nodes), kernel_tail(kernel))
    radius = (np.arange(bound.size) * step) ** (d - 1)
    with np.errstate(divide="ignore"):
        return float(np.sum(bound * radius) / np.sum(profile * radius))


def nodes_for(kernel: Kernel, tolerance: float, d: int = 1, most: float = MOST_NODES) -> float:
    """Grid nodes per bandwidth at which the error bound on keys of uniform density is
    half of ``tolerance`` (denser or sparser parts of the data may need rows pooled
    exactly; clustered ones do), or ``inf`` where more than ``most`` would be needed.

    Doubling brackets the answer, up to ``most`` (each evaluation costs 16 table entries
    a node); within the bracket the bound is close to a power of the nodes (``nodes⁻¹``
    across a compact kernel's edge, ``nodes⁻²`` where the profile is smooth), so each
    step tries the point where the power through the bracket's ends meets the target,
    and the other side of it by 0.3%: two evaluations where a bisection would take
    eight to come within 0.3%.
    """
    target, most = tolerance / 2, min(most, MOST_NODES)
    low, high = 1.0, min(2.0, most)
    low_bound, high_bound = relative_bound(kernel, low, d), relative_bound(kernel, high, d)
    while high_bound > target:
        if high >= most:
            return math.inf
        low, low_bound = high, high_bound
        high = min(2 * high, most)
        high_bound = relative_bound(kernel, high, d)
    for _ in range(8):
        if high <= low * PRECISION or low_bound <= 0:
            break
        power = np.log(low_bound / max(high_bound, np.finfo(float).tiny)) / np.log(high / low)
        if not np.isfinite(power) or power <= 0:
            middle = np.sqrt(low * high)
        else:
            middle = low * (low_bound / target) ** (1 / power)
        for point in (middle / np.sqrt(PRECISION), middle * np.sqrt(PRECISION)):
            point = min(max(point, low * np.sqrt(PRECISION)), high / np.sqrt(PRECISION))
            if not low < point < high:
                continue
            value = relative_bound(kernel, float(point), d)
            if value > target:
                low, low_bound = float(point), value
            else:
                high, high_bound = float(point), value
    return high
