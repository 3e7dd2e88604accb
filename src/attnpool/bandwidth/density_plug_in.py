"""The direct plug-in bandwidth of a density in one column (Wand and Jones's, as
KernSmooth's ``dpik`` computes it).

The AMISE-optimal bandwidth is ``h = δ₀ (ψ̂₄ n)^(−1/5)`` (``δ₀`` the kernel's
canonical factor; the Gaussian's ``(4π)^(−1/10)``), and the functional
``ψ_r = ∫ f^(r) f`` is estimated from a binned sample: at level ``ℓ`` the chain starts
from the normal reference for ``ψ_{2ℓ+4}`` and each ``ψ̂_r`` sets the bandwidth of the
next, ``g_r = (2 K^(r)(0) / (μ₂ ψ̂_{r+2} n))^(1/(r+3))`` with Gaussian pilots. The data
are standardised by a scale estimate first (KernSmooth 2.23's ``"minim"``: the smaller
of the standard deviation and the interquartile range over 1.349). As KernSmooth's
``linbin`` does, a point on the grid's last node is left out of the counts (with the
default range, the sample's maximum).

:func:`binned_functional` is KernSmooth's ``bkfe``: ``ψ̂_r = n⁻² Σ_j c_j Σ_k c_k
φ_g^(r)(g_j − g_k)`` on the grid counts ``c``, the Gaussian cut at ``4 + r`` bandwidths.
"""

from __future__ import annotations

import math

import numpy as np

from .._support.hints import ArrayLike
from .._support.validation import check_choice
from ..smoothers.binned_polynomial import linear_binning

__all__ = ["binned_functional", "density_plug_in_bandwidth"]

#: The kernels' canonical factors ``δ₀`` (KernSmooth's ``del0``), by attnpool name.
CANONICAL = {
    "gaussian": 1 / (4 * math.pi) ** 0.1,
    "boxcar": (9 / 2) ** 0.2,
    "epanechnikov": 15**0.2,
    "biweight": 35**0.2,
    "triweight": (9450 / 143) ** 0.2,
}
#: The normal reference and the pilots' constants of each stage: the order ``r`` of the
#: functional and ``2 K^(r)(0) / μ₂`` of the Gaussian (signs as KernSmooth writes them).
_STAGES = {12: 945, 10: -105, 8: 15, 6: -3}


def binned_functional(counts: np.ndarray, derivative: int, bandwidth: float, a: float,
                      b: float) -> float:  # fmt: skip
    """KernSmooth's ``bkfe``: ``ψ̂_r`` of grid ``counts`` over ``[a, b]`` with the Gaussian
    of standard deviation ``bandwidth`` (``r`` = ``derivative``, even)."""
    m = counts.shape[0]
    n = float(np.sum(counts))
    delta = (b - a) / (m - 1)
    steps = min(math.floor((4 + derivative) * bandwidth / delta), m)
    arg = np.arange(steps + 1) * delta / bandwidth
    weights = np.exp(-(arg**2) / 2) / math.sqrt(2 * math.pi) / bandwidth ** (derivative + 1)
    previous, current = np.ones_like(arg), arg  # Hermite polynomials by recurrence
    hermite = np.ones_like(arg)
    for i in range(2, derivative + 1):
        hermite = arg * current - (i - 1) * previous
        previous, current = current, hermite
    weights = hermite * weights
    symmetric = np.concatenate([weights[:0:-1], weights])
    smoothed = np.convolve(counts, symmetric)[steps : steps + m]
    return float(np.sum(counts * smoothed) / n**2)


def density_plug_in_bandwidth(
    x: ArrayLike,
    *,
    kernel: str = "gaussian",
    level: int = 2,
    scale: str = "minim",
    canonical: bool = False,
    gridsize: int = 401,
    range_x: tuple[float, float] | None = None,
    truncate: bool = True,
) -> float:
    """The direct plug-in bandwidth of a density of one column (KernSmooth's ``dpik``).

    Returns the kernel's own parameter, as attnpool's bandwidths are: the Gaussian's
    standard deviation, a compact kernel's half-width (``canonical``: in the canonical
    scale instead). Also by name: ``KernelDensity(bandwidth="dpik")`` and
    ``rule_of_thumb(x, method="dpik")``.

    Parameters
    ----------
    x : array of shape (n,)
    kernel : {"gaussian", "boxcar", "epanechnikov", "biweight", "triweight"}
    level : int
        Stages of functional estimation, 0 to 5.
    scale : {"minim", "stdev", "iqr"}
        The scale estimate that standardises the data.
    canonical : bool
        The canonical bandwidth (``δ₀ = 1``).
    gridsize : int
        Nodes of the binning grid.
    range_x : (float, float), optional
        The grid's ends; by default the data's range.
    truncate : bool
        Drop points beyond ``range_x``.

    Returns
    -------
    float

    References
    ----------
    Wand, M. P. & Jones, M. C. (1995). *Kernel Smoothing*, section 3.6. Sheather, S. J. &
    Jones, M. C. (1991). A reliable data-based bandwidth selection method for kernel
    density estimation. *JRSS B* 53(3), 683–690. KernSmooth 2.23, ``dpik``.

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> x = np.random.default_rng(0).normal(size=500)
    >>> round(attnpool.density_plug_in_bandwidth(x), 4)
    0.3097
    """
    check_choice(kernel, "kernel", tuple(CANONICAL))
    check_choice(scale, "scale", ("minim", "stdev", "iqr"))
    if isinstance(level, bool) or level not in range(6):
        raise ValueError(f"level: expected an integer from 0 to 5; received {level!r}")
    data = np.asarray(x, float).ravel()
    if data.shape[0] < 2 or not np.all(np.isfinite(data)):
        raise ValueError(f"x: expected at least 2 finite values; received shape {data.shape}")
    n = data.shape[0]
    a, b = (float(data.min()), float(data.max())) if range_x is None else map(float, range_x)
    unit = float(np.max(np.abs(data - np.median(data)))) or 1.0  # squares that cannot underflow
    sd = float(np.std(data / unit, ddof=1)) * unit
    iqr = float(np.subtract(*np.percentile(data, [75, 25]))) / 1.349
    spread = {"stdev": sd, "iqr": iqr, "minim": min(iqr, sd)}[scale]
    if not spread > 0:
        raise ValueError(f"x: the scale estimate ({scale!r}) of the data is 0")
    centre = float(np.mean(data))
    sa, sb = (a - centre) / spread, (b - centre) / spread
    counts, _ = linear_binning(
        (data - centre) / spread, np.zeros(n), sa, sb, gridsize, truncate, last_node=False
    )
    if level == 0:
        psi4 = 3 / (8 * math.sqrt(math.pi))
    else:
        order = 2 * level + 2  # the chain's first functional, from the normal reference
        pilot = (2 * math.sqrt(2) ** (order + 3) / ((order + 1) * n)) ** (1 / (order + 3))
        psi = binned_functional(counts, order, pilot, sa, sb)
        while order > 4:
            order -= 2
            constant = _STAGES[order + 2] * math.sqrt(2 / math.pi)
            pilot = (constant / (psi * n)) ** (1 / (order + 3))
            psi = binned_functional(counts, order, pilot, sa, sb)
        psi4 = psi
    factor = 1.0 if canonical else CANONICAL[kernel]
    return float(spread * factor * (1 / (psi4 * n)) ** 0.2)
