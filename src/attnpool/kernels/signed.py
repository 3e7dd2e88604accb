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
    far = np.flatnonzero(~(s <= 2.0 ** (900 // max(degree, 1))))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        value = _horner(coefficients, s)  # (overflows where far: replaced)
        if far.size:
            beyond = s.ravel()[far]
            value.ravel()[far] = _horner(coefficients[::-1], 1.0 / beyond)  # P(s) / s^deg
        log_abs = np.log(np.abs(value))
        if far.size:
            log_abs.ravel()[far] += degree * np.log(beyond)
    return log_abs, np.sign(value, out=value)


def _horner(coefficients: Sequence[float], s: np.ndarray) -> np.ndarray:
    """``Σ_k c_k s^k``, a new array."""
    if len(coefficients) == 1:
        return np.full(s.shape, float(coefficients[0]))
    value = s * float(coefficients[-1])
    value += coefficients[-2]
    for c in coefficients[-3::-1]:
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
    log_k, sign = None, None
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for u in us:
            log_p, sign_p = log_abs_polynomial(kernel.polynomial, u * u)
            log_p += np.asarray(pair_log_weights([u], base), np.float64)  # (−inf + inf: NaN)
            log_k = log_p if log_k is None else np.add(log_k, log_p, out=log_k)
            sign = sign_p if sign is None else np.multiply(sign, sign_p, out=sign)
    if log_k is None or sign is None:
        raise ValueError("us: expected the scaled differences of at least one column")
    np.fmax(log_k, -np.inf, out=log_k)  # NaN: outside a support, or overflowed
    sign[log_k == -np.inf] = 0.0
    return log_k, sign
