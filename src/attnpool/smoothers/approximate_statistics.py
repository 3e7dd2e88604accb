"""``δ₁`` and ``δ₂`` of a LOESS fit from its ``tr L`` alone: Cleveland & Grosse's
interpolation formulas, what R's ``loess`` computes with ``statistics = "approximate"``
(its default).

For a local polynomial of degree 1 or 2 in ``d`` predictors with ``τ`` parameters
(``d + 1``, or ``(d + 2)(d + 1) / 2``), put ``c = √(τ / n)`` and
``z = (√(τ / tr L) − c) / (1 − c)`` clamped to ``[0, 1]``; then

    δᵢ ≈ n − tr L · exp(c₁ z^c₂ (1 − z)^c₃ e^g(z)),

with ``c₁, c₂, c₃`` fitted per ``δᵢ``, degree and ``d`` (extrapolated linearly beyond
``d = 4``) and ``g`` a cubic Hermite interpolant on ten knots: the tables of netlib's
``loess`` (``ehg141``, ``ehg176``), which R and scikit-misc run. A degree between the
two (``τ`` between theirs, as with dropped squares) interpolates linearly in ``τ``
(``lowesa``); degree 0 takes degree 1's formula, as R does.

Reference: Cleveland, W. S. & Grosse, E. (1991). Computational methods for local
regression. *Statistics and Computing* 1, 47–62.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

__all__ = ["approximate_deltas"]

#: ``c₁, c₂, c₃`` by [δ₁ or δ₂][degree 1 or 2][d = 1 … 4] (netlib's ``ehg141``).
_COEFFICIENTS = np.array(
    [
        0.2971620, 0.3802660, 0.5886043, 0.4263766, 0.3346498, 0.6271053,
        0.5241198, 0.3484836, 0.6687687, 0.6338795, 0.4076457, 0.7207693,
        0.1611761, 0.3091323, 0.4401023, 0.2939609, 0.3580278, 0.5555741,
        0.3972390, 0.4171278, 0.6293196, 0.4675173, 0.4699070, 0.6674802,
        0.2848308, 0.2254512, 0.2914126, 0.5393624, 0.2517230, 0.3898970,
        0.7603231, 0.2969113, 0.4740130, 0.9664956, 0.3629838, 0.5348889,
        0.2075670, 0.2822574, 0.2369957, 0.3911566, 0.2981154, 0.3623232,
        0.5508869, 0.3501989, 0.4371032, 0.7002667, 0.4291632, 0.4930370,
    ]
).reshape(2, 2, 4, 3)  # fmt: skip
#: The knots of ``g`` with its values and slopes there (netlib's ``ehg176``).
_KNOTS = np.array(
    [
        (-0.005, -9.0572e-2, 4.4844),
        (0.1204, 9.5807e-2, -0.7978),
        (0.2017, 2.6152e-2, -0.7286),
        (0.2815, -3.1926e-2, -0.4457),
        (0.3705, -5.3718e-2, -0.3495),
        (0.4536, -6.4170e-2, 3.2813e-2),
        (0.5591, -5.8387e-2, 0.1611),
        (0.7132, -2.0636e-2, 0.3350),
        (0.8751, 4.0172e-2, -4.1032e-2),
        (1.005, -1.0856e-2, -0.7736),
    ]
)


def approximate_deltas(trace: float, n: int, d: int, degree: int) -> tuple[float, float]:
    """``(δ₁, δ₂)`` of a fit with ``tr L = trace`` on ``n`` rows in ``d`` predictors with
    a local polynomial of ``degree`` (0, 1 or 2; all squares and cross products)."""
    linear, quadratic = d + 1, (d + 2) * (d + 1) / 2
    tau = quadratic if degree == 2 else linear
    share = (tau - linear) / (quadratic - linear)
    first = _deltas(trace, n, d, 1, tau)
    second = _deltas(trace, n, d, 2, tau)
    return tuple((1 - share) * a + share * b for a, b in zip(first, second, strict=True))  # type: ignore[return-value]


def _deltas(trace, n, d, degree, tau):
    """netlib's ``ehg141``: both deltas by the formula of ``degree``."""
    corner = math.sqrt(tau / n)
    z = (math.sqrt(tau / trace) - corner) / (1 - corner)
    if not 0.0 <= z <= 1.0:
        warnings.warn(
            f"the approximate statistics assume tr L between the polynomial's {tau:g} "
            f"parameters and n = {n}; this fit has tr L = {trace:.4g}, so δ₁ and δ₂ are "
            "extrapolated (R warns 'Chernobyl!'): take statistics='exact'",
            RuntimeWarning,
            stacklevel=2,
        )
    z = min(1.0, max(0.0, z))
    scale = math.exp(_correction(z))
    out = []
    for which in range(2):
        table = _COEFFICIENTS[which, degree - 1]
        c = table[min(d, 4) - 1]
        if d > 4:  # linear beyond the fitted d = 1 … 4
            c = c + (d - 4) * (table[3] - table[2])
        c1, c2, c3 = c
        out.append(n - trace * math.exp(c1 * z**c2 * (1 - z) ** c3 * scale))
    return out


def _correction(z: float) -> float:
    """``g(z)``: the cubic Hermite interpolant through :data:`_KNOTS`."""
    knots = _KNOTS[:, 0]
    i = int(np.clip(np.searchsorted(knots, z, side="left") - 1, 0, knots.size - 2))
    (x0, y0, s0), (x1, y1, s1) = _KNOTS[i], _KNOTS[i + 1]
    width = x1 - x0
    h = (z - x0) / width
    return (
        (1 - h) ** 2 * (1 + 2 * h) * y0
        + h**2 * (3 - 2 * h) * y1
        + (h * (1 - h) ** 2 * s0 + h**2 * (h - 1) * s1) * width
    )
