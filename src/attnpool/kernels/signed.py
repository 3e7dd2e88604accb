"""The weights of a higher-order kernel, signed, as a log magnitude and a sign.

A higher-order kernel of order ``ν`` is ``K_ν(u) = Π_c P(u_c²) K(u_c)`` (a product
over the columns, ``K`` its non-negative ``base``, ``P`` the polynomial that makes its
moments ``∫ u^j K_ν`` vanish for ``0 < j < ν``): negative in places, so it has no log
weight. Its pairs are weighed by

.. math:: \\log|K_ν(u)| = \\sum_c \\big(\\log K(u_c) + \\log|P(u_c^2)|\\big), \\qquad
          \\operatorname{sign} K_ν(u) = \\prod_c \\operatorname{sign} P(u_c^2),

each column's ``log K`` with its edge decided exactly
(:func:`attnpool.kernels.edges.pair_log_weights`), and ``log|P(s)|`` formed as
``deg · log s + log|Σ_k c_k s^(k − deg)|`` for ``s > 1``, so nothing overflows to
``inf − inf`` however far the pair.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .edges import pair_log_weights
from .record import Kernel

__all__ = ["log_abs_polynomial", "signed_log_weights"]


def log_abs_polynomial(
    coefficients: Sequence[float], s: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(log|P(s)|, sign P(s))`` of ``P(s) = Σ_k c_k s^k`` for ``s ≥ 0`` (``inf``
    included), without overflow: by Horner's rule where ``s^deg`` stays below ``2^900``,
    beyond as ``deg · log s + log|Σ_k c_k s^(k − deg)|``."""
    degree = len(coefficients) - 1
    s = np.asarray(s, np.float64)
    far = ~(s <= 2.0 ** (900 // max(degree, 1)))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        value = _horner(coefficients, s)  # (overflows where far: replaced)
        if far.any():
            beyond = s[far]
            value[far] = _horner(coefficients[::-1], 1.0 / beyond)  # P(s) / s^deg
        log_abs = np.log(np.abs(value))
        if far.any():
            log_abs[far] += degree * np.log(beyond)
    return log_abs, np.sign(value)


def _horner(coefficients: Sequence[float], s: np.ndarray) -> np.ndarray:
    """``Σ_k c_k s^k``, a new array."""
    value = np.full(s.shape, float(coefficients[-1]))
    for c in coefficients[-2::-1]:
        value *= s
        value += c
    return value


def signed_log_weights(us: Sequence[np.ndarray], kernel: Kernel) -> tuple[np.ndarray, np.ndarray]:
    """``(log|K_ν|, sign)`` of the pairs whose scaled differences are ``us`` (one array
    per column, all of one shape) under the higher-order ``kernel``; ``−inf`` and sign 0
    where a pair has no weight."""
    base = kernel.base
    if base is None:
        raise ValueError(f"kernel: expected a higher-order kernel; received {kernel.name!r}")
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        log_k = sum(np.asarray(pair_log_weights([u], base), np.float64) for u in us)
        sign = np.ones(np.shape(log_k))
        for u in us:
            log_p, sign_p = log_abs_polynomial(kernel.polynomial, u * u)
            log_k = log_k + log_p  # −inf + inf: outside a support, or overflowed
            sign = sign * sign_p
    log_k = np.where(np.isnan(log_k), -np.inf, log_k)
    return log_k, np.where(log_k > -np.inf, sign, 0.0)
