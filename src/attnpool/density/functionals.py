"""Functions of a one-column kernel density estimate: its survival function and
cumulative hazard, its quantiles (the inverse of its distribution function) and its
differential entropy — statsmodels' ``KDEUnivariate`` ``sf``, ``cumhazard``, ``icdf`` and
``entropy``, here at any points and exact to the float64 sums.

The survival function is summed from the right, ``Ŝ(x) = Σ_i w_i G((x_i − x)/h) / Σ w``
(the kernels are symmetric), so far in the right tail it keeps its digits where
``1 − F̂`` would round to 0 (and the cumulative hazard ``−log Ŝ`` stays finite).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import kernels as _kernels
from .._support.hints import ArrayLike
from .distribution import kernel_cdf, log_cdf

__all__ = ["density_entropy", "density_quantile", "log_survival"]

#: Bisection steps of :func:`density_quantile`: from a bracket of the sample's range
#: plus the kernel's reach, 2⁻⁷⁰ of it is below float64's resolution.
QUANTILE_STEPS = 70


def log_survival(
    x: np.ndarray, points: ArrayLike, kernel: Any, h: np.ndarray, weights: Any = None
) -> np.ndarray:
    """``log Ŝ(points)`` ``(k,)`` of the one-column sample ``x (n, 1)``: ``log(1 − F̂)`` by
    ``log1p`` where ``F̂ ≤ 1/2`` (``Ŝ`` near 1, whose logarithm is small: it keeps its
    relative digits), else the distribution function of the reflected sample at the
    reflected points, in the log domain (finite where ``Ŝ`` itself is below the float
    range)."""
    from ..kernels.mixed import MixedColumns

    points = np.asarray(points, np.float64).reshape(-1, 1)
    kernel_cdf(-x, -points[:1], kernel=kernel, bandwidth=h, weights=weights)  # the checks
    columns = MixedColumns(x, "c", _kernels.for_dimensions(_kernels.get(kernel), 1))
    w = None if weights is None else np.asarray(weights, np.float64)
    h = np.asarray(h, np.float64)
    below = np.exp(log_cdf(x, points, columns, h, w))
    found = np.log1p(-np.minimum(below, 0.5))
    upper = below > 0.5  # (the reflected sums only where they are needed)
    if upper.any():
        found[upper] = log_cdf(-x, -points[upper], columns, h, w)
    return np.asarray(np.minimum(found, 0.0))


def density_quantile(
    x: np.ndarray, p: ArrayLike, kernel: Any, h: np.ndarray, weights: Any = None
) -> np.ndarray:
    """The ``p`` quantiles ``(k,)`` of the estimate: ``F̂(q) = p`` by bisection on a
    bracket where ``F̂`` is 0 and 1 (a compact kernel's support; for an unbounded kernel,
    widened until it holds every ``p``); ``p`` 0 or 1 give the support's ends (``±inf``
    for an unbounded kernel)."""
    record = _kernels.get(kernel)
    probabilities = np.asarray(p, np.float64).reshape(-1)
    if not np.all((probabilities >= 0) & (probabilities <= 1)):
        raise ValueError(f"p: expected probabilities in [0, 1]; received {np.asarray(p)!r}")
    low, high = float(np.min(x)), float(np.max(x))
    reach = float(h[0]) * (record.support if record.compact else 8.0)

    def cdf(points: np.ndarray) -> np.ndarray:
        return kernel_cdf(x, points[:, None], kernel=kernel, bandwidth=h, weights=weights)

    inner = probabilities[(probabilities > 0) & (probabilities < 1)]
    while not record.compact and inner.size:
        ends = cdf(np.array([low - reach, high + reach]))
        if ends[0] < inner.min() and ends[1] > inner.max():
            break
        reach *= 2
    left = np.full(probabilities.shape, low - reach)
    right = np.full(probabilities.shape, high + reach)
    for _ in range(QUANTILE_STEPS):
        middle = (left + right) / 2
        below = cdf(middle) < probabilities
        left, right = np.where(below, middle, left), np.where(below, right, middle)
    found = (left + right) / 2
    first, last = (-math.inf, math.inf) if not record.compact else (low - reach, high + reach)
    return np.where(probabilities == 0, first, np.where(probabilities == 1, last, found))


def density_entropy(x: np.ndarray, kernel: Any, h: np.ndarray, weights: Any = None) -> float:
    """``−∫ f̂ log f̂`` of the one-column estimate, by Gauss–Legendre nodes on pieces where
    the integrand is smooth: a compact kernel's estimate is a polynomial between the
    points where a key's support begins, peaks or ends; an unbounded one's is smooth
    between the keys (the Gaussian's everywhere), on pieces of at most ``PIECE``
    bandwidths out to where every key's kernel has fallen ``e^−REACH_DROP`` below its
    peak (what lies beyond is below float64's resolution of the integral).

    The pieces are summed in frames of at most ``FRAME_SPAN`` bandwidths, each about a
    key of its own and over the keys within reach of it: a node keeps its digits
    relative to ``h`` wherever the keys lie, and the result does not move with them."""
    from . import kernel_density

    record = _kernels.get(kernel)
    band = float(h[0])
    order = np.argsort(x[:, 0], kind="stable")
    keys = x[order, 0]
    w = None if weights is None else np.asarray(weights, np.float64)[order]
    reach = band * (record.support if record.compact else _reach(record))
    a, b = _pieces(keys, band, reach, record)
    u, u_weights = np.polynomial.legendre.leggauss(GAUSS_NODES)
    u, u_weights = (u + 1) / 2, u_weights / 2
    if record.compact:
        # t = a + (b − a) S(u) with S(u) = 6u⁵ − 15u⁴ + 10u³: the nodes gather at both
        # ends, where f̂ may vanish and f̂ log f̂ is not smooth
        step = u**3 * (10 - 15 * u + 6 * u**2)
        stretch = u_weights * 30 * u**2 * (1 - u) ** 2
    else:
        step, stretch = u, u_weights
    total = 0.0
    for lo, hi in _frames(a, b, band):
        centre = keys[min(int(np.searchsorted(keys, a[lo])), keys.size - 1)]
        near = slice(
            np.searchsorted(keys, a[lo] - reach), np.searchsorted(keys, b[hi - 1] + reach, "right")
        )
        t = (a[lo:hi, None] - centre) + (b - a)[lo:hi, None] * step[None, :]
        f = kernel_density(keys[near, None] - centre, t.reshape(-1, 1), kernel=kernel,
                           bandwidth=h, weights=None if w is None else w[near])  # fmt: skip
        f *= (near.stop - near.start) / keys.size if w is None else np.sum(w[near]) / np.sum(w)
        values = np.where(f > 0, -f * np.log(np.where(f > 0, f, 1.0)), 0.0).reshape(t.shape)
        total += float(np.sum((b - a)[lo:hi] * (values @ stretch)))
    return total


def _pieces(keys: np.ndarray, h: float, reach: float, record: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)``, ascending: pieces of at most ``PIECE · h`` covering every ``t`` within
    ``reach`` of a key (sorted ``keys``), broken where the estimate is not smooth — a
    compact kernel's support's ends and peaks, an unbounded kernel's keys unless its
    profile is smooth there (only the Gaussian's, ``log K`` quadratic, is)."""
    keys = np.unique(keys)
    starts, ends = keys - reach, keys + reach
    first = np.r_[True, starts[1:] > ends[:-1]]  # a key beyond the previous one's reach
    last = np.r_[first[1:], True]
    run_starts, run_ends = starts[first], ends[last]
    smooth = record.quadratic is not None  # the Gaussian: smooth at the keys too
    kinks = [starts, keys, ends] if record.compact else [] if smooth else [keys]
    breaks = np.unique(np.concatenate([run_starts, run_ends, *kinks]))
    a, b = breaks[:-1], breaks[1:]
    inside = np.searchsorted(run_starts, a, "right") == np.searchsorted(run_ends, a, "right") + 1
    a, b = a[inside], b[inside]  # (not the gaps between runs of overlapping reaches)
    pieces = np.ceil((b - a) / (PIECE * h)).astype(np.int64)
    owner = np.repeat(np.arange(a.size), pieces)
    index = np.arange(owner.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    width = (b - a)[owner] / pieces[owner]
    left = a[owner] + index * width
    right = np.where(index == pieces[owner] - 1, b[owner], np.r_[left[1:], 0.0])
    return left, right  # (each piece ends where the next begins: they tile exactly)


def _frames(a: np.ndarray, b: np.ndarray, h: float) -> Iterator[tuple[int, int]]:
    """``[lo, hi)`` runs of the pieces, each at most ``FRAME_PIECES`` pieces spanning at
    most ``FRAME_SPAN · h`` (or one piece)."""
    lo = 0
    while lo < a.size:
        span = int(np.searchsorted(b, a[lo] + FRAME_SPAN * h, "right"))
        hi = max(lo + 1, min(lo + FRAME_PIECES, span))
        yield lo, hi
        lo = hi


def _reach(record: Any) -> float:
    """The scaled distance where the kernel has fallen ``e^−REACH_DROP`` below its peak."""
    peak = float(record.log_profile(np.zeros(1))[0])

    def fallen(u: float) -> bool:
        return float(record.log_profile(np.array([u * u]))[0]) < peak - REACH_DROP

    high = 1.0
    while not fallen(high):
        high *= 2
    low = high / 2
    for _ in range(30):
        middle = (low + high) / 2
        low, high = (low, middle) if fallen(middle) else (middle, high)
    return high


#: Gauss–Legendre nodes per interval of :func:`density_entropy`.
GAUSS_NODES = 24
#: The widest piece of the entropy integral, in bandwidths.
PIECE = 2.0
#: The most pieces, and their widest span in bandwidths, that one sum of the entropy
#: integral evaluates about one key.
FRAME_PIECES = 4096
FRAME_SPAN = 64.0
#: How far below its peak (in nats) a key's kernel has fallen where the unbounded
#: kernel's entropy integral stops.
REACH_DROP = 50.0
