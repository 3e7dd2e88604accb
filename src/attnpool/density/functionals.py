"""Functions of a one-column kernel density estimate: its survival function and
cumulative hazard, its quantiles (the inverse of its distribution function) and its
differential entropy — statsmodels' ``KDEUnivariate`` ``sf``, ``cumhazard``, ``icdf`` and
``entropy``, here at any points and exact to the float64 sums.

The survival function is summed from the right, ``Ŝ(x) = Σ_i w_i G((x_i − x)/h) / Σ w``
(the kernels are symmetric), so far in the right tail it keeps its digits where
``1 − F̂`` would round to 0 (and the cumulative hazard ``−log Ŝ`` stays finite).
"""

from __future__ import annotations

import itertools
import math
import warnings
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
    """``−∫ f̂ log f̂`` of the one-column estimate. A compact kernel's estimate is smooth
    between the points where a key's support begins, peaks or ends: Gauss–Legendre
    nodes on each of those intervals, all in one vectorised sum. An unbounded kernel's:
    adaptive quadrature between the estimate's quantiles (its mass in equal parts) and
    out to where it vanishes."""
    from . import kernel_density

    record = _kernels.get(kernel)

    def entropy_density(t: np.ndarray) -> np.ndarray:
        f = kernel_density(x, t[:, None], kernel=kernel, bandwidth=h, weights=weights)
        return np.where(f > 0, -f * np.log(np.where(f > 0, f, 1.0)), 0.0)

    if record.compact:
        reach = float(h[0]) * record.support
        breaks = np.unique(np.r_[x[:, 0] - reach, x[:, 0], x[:, 0] + reach])
        # Gauss–Legendre in u, t = a + (b − a) S(u) with S(u) = 6u⁵ − 15u⁴ + 10u³: the
        # nodes gather at both ends, where f̂ may vanish and f̂ log f̂ is not smooth
        u, u_weights = np.polynomial.legendre.leggauss(GAUSS_NODES)
        u, u_weights = (u + 1) / 2, u_weights / 2
        step = u**3 * (10 - 15 * u + 6 * u**2)
        stretch = u_weights * 30 * u**2 * (1 - u) ** 2
        total = 0.0
        for part in np.array_split(np.arange(breaks.size - 1), max(1, breaks.size // 512)):
            a, b = breaks[part], breaks[part + 1]
            t = a[:, None] + (b - a)[:, None] * step[None, :]
            values = entropy_density(t.reshape(-1)).reshape(t.shape)
            total += float(np.sum((b - a) * (values @ stretch)))
        return total
    from scipy import integrate

    edges = density_quantile(x, np.linspace(0, 1, 65), kernel, h, weights)
    edges[0] = float(np.min(x)) - 40 * float(h[0])  # beyond, f̂ < e^(−800)
    edges[-1] = float(np.max(x)) + 40 * float(h[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)  # (rounding, at 1e-13)
        return float(sum(
            integrate.quad(lambda s: float(entropy_density(np.array([s]))[0]), a, b,
                           limit=200, epsabs=1e-13)[0]
            for a, b in itertools.pairwise(edges) if b > a
        ))  # fmt: skip


#: Gauss–Legendre nodes per interval of :func:`density_entropy` (compact kernels).
GAUSS_NODES = 24
