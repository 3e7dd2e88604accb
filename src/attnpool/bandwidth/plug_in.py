"""The improved Sheather–Jones plug-in bandwidth of one column (Botev, Grotowski and
Kroese, "Kernel density estimation via diffusion", Annals of Statistics, 2010).

The AMISE-optimal Gaussian bandwidth is ``t* = (2 N √π ‖f''‖²)^(−2/5)`` (``t = h²``), and
``‖f^(s)‖²`` is estimated at the time ``t_s`` that is optimal for estimating *it*, which
depends on ``‖f^(s+1)‖²``: ISJ closes this chain at depth ``ℓ = 7`` and solves the fixed
point ``t = ξ γ^[ℓ](t)`` instead of assuming a normal reference at the end of the chain.
Every ``‖f^(s)‖²`` at time ``t`` is a sum over the cosine transform ``a_k`` of the
binned sample (the diffusion's solution on the interval):

.. math:: \\|f_t^{(s)}\\|^2 = \\frac{π^{2s}}2 \\sum_{k \\ge 1} k^{2s} a_k^2 e^{-k^2 π^2 t}

on the unit interval; the data's interval is the sample's range padded by a tenth on each
side (Botev's choice), binned on ``2^14`` points, and ``h = √t* × its length``.
"""

from __future__ import annotations

import math

import numpy as np

from .._support.hints import ArrayLike
from .._support.validation import check_choice
from ..sums.observation_weights import check_weights
from .resolution import bandwidth_floor

__all__ = ["isj_bandwidth"]

#: Depth of the chain of functionals (the paper's ℓ = 7: five steps).
DEPTH = 7
#: Points of the binning grid.
GRID_POINTS = 2**14
#: Padding of the data's range on each side, in ranges.
PADDING = 0.1


def _squared_norm(s: int, t: float, k2: np.ndarray, a2: np.ndarray) -> float:
    """``‖f_t^(s)‖²`` on the unit interval from the squared frequencies ``k²`` and
    coefficients ``a_k²``."""
    return 0.5 * math.pi ** (2 * s) * float(np.sum(k2**s * a2 * np.exp(-k2 * math.pi**2 * t)))


def _fixed_point(t: float, n: int, k2: np.ndarray, a2: np.ndarray) -> float:
    """``t − ξ γ^[ℓ](t)``: zero at the plug-in time (``−inf`` where a norm vanished: every
    frequency damped, an optimal time beyond any)."""
    norm = _squared_norm(DEPTH, t, k2, a2)
    for s in range(DEPTH - 1, 1, -1):
        if not norm > 0:
            return -math.inf
        odd = math.prod(range(1, 2 * s + 1, 2))  # (2s − 1)!!
        constant = (1 + 0.5 ** (s + 0.5)) / 3
        time = (2 * constant * odd / math.sqrt(2 * math.pi) / (n * norm)) ** (2 / (3 + 2 * s))
        norm = _squared_norm(s, time, k2, a2)
    if not norm > 0:
        return -math.inf
    return t - float((2 * n * math.sqrt(math.pi) * norm) ** (-0.4))


def isj_bandwidth(
    x: ArrayLike, weights: ArrayLike | None = None, *, convention: str = "botev"
) -> float:
    """The improved Sheather–Jones bandwidth (a Gaussian kernel's standard deviation) of
    the one-column sample ``x (n,) | (n, 1)``, with optional positive observation
    ``weights``. Raises when the fixed point has no root (too few distinct points).

    Parameters
    ----------
    x : array (n,) or (n, 1)
    weights : array (n,), optional
        Observation weights (a point of weight 0 is not in the sample).
    convention : {"botev", "kdepy"}
        Botev's (the paper's and its MATLAB code's: ``h = √t* × the padded interval's
        length``), or KDEpy's ``improved_sheather_jones``, reproduced: its grid (1024
        points, the range padded by ``max(range/2, 6)`` in the data's units), linear
        binning, its root search, and ``h = √t* × the data's range`` — which scales
        ``h`` by range/interval, a factor that depends on the data's units (a third
        of Botev's on a standard normal sample).

    Returns
    -------
    float
        The bandwidth, the Gaussian kernel's standard deviation.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(-2, 0.5, 300), rng.normal(2, 1, 300)]   # two modes
    >>> round(isj_bandwidth(x), 4)
    0.229

    References
    ----------
    Botev, Z. I., Grotowski, J. F. & Kroese, D. P. (2010). Kernel density estimation
    via diffusion. *Annals of Statistics* 38(5), 2916–2957.
    """
    from scipy import fft, optimize

    check_choice(convention, "convention", ("botev", "kdepy"))
    x = np.asarray(x, np.float64).reshape(-1)
    w = np.ones(x.size) if weights is None else np.asarray(check_weights(weights, x.size), float)
    x, w = x[w > 0], w[w > 0]  # a point of weight 0 is not in the sample (its range)
    low, high = float(np.min(x)), float(np.max(x))
    span = high - low
    distinct = np.unique(x).size
    if distinct < 2:
        raise ValueError(
            f"X: the ISJ bandwidth needs at least 2 distinct values; received {distinct}"
        )
    if convention == "kdepy":
        return _kdepy_isj(x, w, distinct)
    low, high = low - PADDING * span, high + PADDING * span
    counts, _ = np.histogram(x, bins=GRID_POINTS, range=(low, high), weights=w)
    a = fft.dct(counts / counts.sum(), type=2)
    k2 = np.arange(1, GRID_POINTS, dtype=np.float64) ** 2
    a2 = a[1:] ** 2

    def equation(t: float) -> float:
        return _fixed_point(t, distinct, k2, a2)

    # the fixed point is the first change of sign from below, scanned from t = 1e-12 or,
    # for recorded (tied) values, from half their resolution: below, the root is the
    # ties' spikes (attnpool.bandwidth.resolution)
    floor = float(bandwidth_floor(x[:, None])[0]) / (high - low)
    times = np.geomspace(max(1e-12, floor**2), 1.0, 97)
    values = np.array([equation(t) for t in times])
    change = np.flatnonzero((values[:-1] < 0) & (values[1:] >= 0))
    if change.size == 0:
        step = 2 * floor * (high - low)
        tied = f" at or above half the resolution of their tied values ({step:.4g})"
        tied = tied if floor > 0 else ""
        raise ValueError(
            f"X: the ISJ fixed point has no root{tied} for these {x.size} points "
            f"({distinct} distinct); use 'normal_reference' or cross-validation"
        )
    i = int(change[0])
    t_star = optimize.brentq(equation, times[i], times[i + 1], xtol=1e-300, rtol=1e-14)
    return float(math.sqrt(t_star) * (high - low))


def _kdepy_isj(x: np.ndarray, w: np.ndarray, distinct: int) -> float:
    """KDEpy's ``improved_sheather_jones`` (version 1.1): the fixed point on its grid,
    ``h = √t* × the data's range``."""
    from scipy import fft, optimize

    low, high = float(np.min(x)), float(np.max(x))
    outside = max(0.5 * (high - low), 6.0)
    grid = np.linspace(low - outside, high + outside, KDEPY_GRID_POINTS)
    # linear binning: each point shared by its two nodes, in proportion to its nearness
    position = (x - grid[0]) / (grid[1] - grid[0])
    left = np.clip(np.floor(position).astype(np.intp), 0, KDEPY_GRID_POINTS - 2)
    share = position - left
    counts = np.bincount(left, w * (1 - share), KDEPY_GRID_POINTS)
    counts += np.bincount(left + 1, w * share, KDEPY_GRID_POINTS)
    a = fft.dct(counts / counts.sum(), type=2)
    k2 = np.arange(1, KDEPY_GRID_POINTS, dtype=np.float64) ** 2
    args = (distinct, k2, a[1:] ** 2)
    # KDEpy's root search: brentq on [0, tol], tol doubled until a positive root converges
    clipped = max(min(1050, distinct), 50)
    tol = 10e-12 + 0.01 * (clipped - 50) / 1000
    while tol < 1:
        try:
            root, result = optimize.brentq(_fixed_point, 0, tol, args=args, full_output=True)
        except ValueError:
            root, result = 0.0, None
        if result is not None and result.converged and root > 0:
            return float(math.sqrt(root) * (high - low))
        tol *= 2.0
    raise ValueError(
        f"X: KDEpy's ISJ root search did not converge for these {x.size} points "
        f"({distinct} distinct); use convention='botev', 'normal_reference' or cross-validation"
    )


#: Points of KDEpy's ISJ grid.
KDEPY_GRID_POINTS = 2**10
