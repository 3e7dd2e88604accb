"""Kernel sums pair by pair, for weights the log-domain pooling state cannot form alone:
signed (higher-order) kernels and bandwidths that vary by query or by key.

For a query ``q`` and keys ``k_j`` the weight of a pair is

.. math:: w_j(q) = \\omega_j \\prod_c P(u_c^2) \\; K(u) \\Big/ \\prod_c H_c,
          \\qquad u_c = (q_c - k_{jc}) / H_c

with ``H`` the bandwidths — fixed ``(d,)``, the query's (R np's ``generalized_nn``) or
the key's (``adaptive_nn``; only then does ``Π H_c`` differ between a query's keys and
count) —, ``P`` a higher-order kernel's polynomial (1 otherwise) and ``ω_j`` the
observation weights. Each row is computed in float64 from the log of its magnitude,
``log K + Σ_c log|P(u_c²)| − Σ_c log H_c``, shifted by the row's largest, and its sign,
so no weight overflows or underflows to ``0/0`` however small the bandwidth;
``log|P(s)|`` is formed as ``deg · log s + log|Σ_k c_k s^(k − deg)|`` for ``s > 1``.
The fits are the local-constant ratio and the local linear moments solved at each query
(:func:`attnpool.sums.local_model.solve_moments`); leave-one-out fits drop each point's own
pair (with observation weights, keep ``ω_i − 1`` copies of it).

Rows whose weights sum to zero — no key inside a compact support, or signed weights that
cancel exactly — are *empty*. With ``nearest`` they, and every row of an unbounded
kernel whose distances overflow, take the limit of vanishing bandwidths: the mean
response of the keys nearest in scaled distance (ties by weight), found as every NumPy
path finds them (:func:`attnpool.sums.nearest.closest`: no overflow, ties kept).

The cost is ``O(n m d)`` time in blocks of queries, ``O(block · m)`` memory: the exact
engine of these weights, in NumPy (no program to compile).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .. import kernels as _kernels
from .._support.units import midrange
from .local_model import solve_moments
from .nearest import closest
from .pair_weights import row_blocks, shifted_weights

__all__ = ["BANDWIDTH_SOURCES", "local_fit", "needs_pair_sums", "pool"]

#: Where the bandwidth of a pair comes from: one for all, the query's, or the key's.
BANDWIDTH_SOURCES = ("fixed", "query", "key")
#: Pair entries (pairs × features) per block of queries.
_BLOCK_ENTRIES = 2**22


def needs_pair_sums(kernel: _kernels.Kernel) -> bool:
    """Whether ``kernel`` is computed here in every case (a higher-order kernel)."""
    return kernel.base is not None


def _log_profile(kernel: _kernels.Kernel, r2: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return np.asarray(kernel.log_profile(r2), np.float64)


def _log_abs_polynomial(coefficients, s: np.ndarray):
    """``(log|P(s)|, sign P(s))`` for ``s ≥ 0`` (``inf`` included) without overflow."""
    degree = len(coefficients) - 1
    small = s <= 1.0
    near = np.polynomial.polynomial.polyval(np.where(small, s, 1.0), coefficients)
    with np.errstate(divide="ignore"):
        inverse = np.where(small, 1.0, 1.0 / np.where(small, 1.0, s))
        far = np.polynomial.polynomial.polyval(inverse, coefficients[::-1])  # P(s) / s^deg
        value = np.where(small, near, far)
        log_abs = np.log(np.abs(value))
        log_abs = np.where(small, log_abs, log_abs + degree * np.log(np.where(small, 1.0, s)))
    return log_abs, np.sign(value)


def _log_magnitudes(u2: np.ndarray, kernel: _kernels.Kernel):
    """``(log|K_pair|, sign)`` of ``(b, m)`` pairs from squared scaled differences
    ``u2 (b, m, d)``: a product of one-dimensional kernels (higher-order kernels and
    ``-product`` records), else the radial ``K(Σ_c u_c²)``."""
    base = kernel.base or kernel
    sign = 1.0
    if kernel.product:
        log_k = sum(_log_profile(base, u2[..., c]) for c in range(u2.shape[2]))
    else:
        log_k = _log_profile(base, np.sum(u2, axis=-1))
    for c in range(u2.shape[2] if kernel.polynomial else 0):
        log_p, sign_p = _log_abs_polynomial(kernel.polynomial, u2[..., c])
        with np.errstate(invalid="ignore"):  # −inf + inf: outside a support, or overflowed
            log_k = log_k + log_p
        sign = sign * sign_p
    if kernel.polynomial:
        log_k = np.where(np.isnan(log_k), -np.inf, log_k)
    return log_k, sign


def _row_log_weights(diff, h, kernel: _kernels.Kernel, per_key: bool, allowed):
    """``(log|w|, sign)`` of the pairs ``diff (b, m, d)`` under bandwidths ``h``, ``−inf``
    where not ``allowed (b, m)`` (None: all are). A zero bandwidth (``k`` neighbours
    within a run of repeated values) is its limit: a column's kernel ``K(Δ/h)/h → δ(Δ)``,
    infinite where the coordinates are equal and zero elsewhere — so each row keeps only
    its pairs with the most such infinite factors, weighted by the kernel in the other
    columns."""
    if not np.any(h == 0):
        with np.errstate(over="ignore"):
            log_w, sign = _log_magnitudes((diff / h) ** 2, kernel)
        if per_key:  # the key's 1 / Π h
            log_w = log_w - np.sum(np.log(h), axis=-1)
        return (log_w if allowed is None else np.where(allowed, log_w, -np.inf)), sign
    zero = np.broadcast_to(h == 0, diff.shape)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        u2 = np.where(zero, 0.0, (diff / np.where(h == 0, 1.0, h)) ** 2)
    log_w, sign = _log_magnitudes(u2, kernel)
    if per_key:  # the infinite factors of zero bandwidths are counted apart
        log_w = log_w - np.sum(np.log(np.where(h == 0, 1.0, h)), axis=-1)
    kept = ~np.any(zero & (diff != 0), axis=-1)
    log_w = np.where(kept if allowed is None else kept & allowed, log_w, -np.inf)
    infinities = np.where(np.isfinite(log_w), np.sum(zero, axis=-1), -1)
    log_w = np.where(infinities == infinities.max(axis=1, keepdims=True), log_w, -np.inf)
    return log_w, sign


def _pair_factors(omega, weighted: bool, exclude_self: bool, rows: slice, m: int):
    """``(factors, allowed)`` of a block's pairs: the keys' observation weights (a scalar 1
    without) and the pairs that count (None: all); leaving one out, the own pair (the
    whole row, all of its weight) counts no more."""
    if not (weighted or exclude_self):
        return 1.0, None
    factors = np.broadcast_to(omega, (rows.stop - rows.start, m)).copy()
    if exclude_self:
        ids = np.arange(rows.start, rows.stop)
        factors[np.arange(ids.size), ids] = 0.0
    return factors, factors > 0


def _pair_bandwidths(bandwidth, by: str, rows: slice, m: int, d: int) -> np.ndarray:
    """``H`` broadcast to ``(b, m, d)``-compatible ``(·, ·, d)``."""
    if by == "fixed":
        return np.broadcast_to(bandwidth, (d,))[None, None, :]
    if by == "query":
        return bandwidth[rows][:, None, :]
    return bandwidth[None, :, :]


def local_fit(
    x_train,
    y,
    x_query,
    *,
    kernel: _kernels.Kernel,
    bandwidth,
    by: Literal["fixed", "query", "key"] = "fixed",
    degree: int = 0,
    exclude_self: bool = False,
    weights=None,
    nearest: bool = True,
):
    """``(fit (n, p), slopes (n, d, p), empty (n,))`` of the local fit at ``x_query``.

    ``x_train (m, d)``, ``y (m, p)``, ``x_query (n, d)``; ``bandwidth``: ``(d,)``
    (``by="fixed"``), ``(n, d)`` (``"query"``) or ``(m, d)`` (``"key"``), positive (or
    zero: the limit, see :func:`_row_log_weights`);
    ``degree`` 0 (local constant) or 1 (local linear); ``exclude_self``: query ``i`` is
    training row ``i`` and leaves its pair out; ``weights (m,)``: positive observation
    weights; ``nearest``: whether empty rows take the nearest keys' mean (else NaN).
    ``empty`` marks the rows whose weights summed to zero.
    """
    x_train, x_query = (np.asarray(a, np.float64) for a in (x_train, x_query))
    y = np.asarray(y, np.float64)
    bandwidth = np.asarray(bandwidth, np.float64)
    n, d = x_query.shape
    m, p = y.shape
    omega = np.ones(m) if weights is None else np.asarray(weights, np.float64)
    features = p if degree == 0 else p + d + d * d + d * p
    fit, slopes = np.empty((n, p)), np.zeros((n, d, p))
    empty = np.zeros(n, bool)
    middle = midrange(y) if m else np.zeros(p)
    centred = y - middle  # the local-constant sums: no offset to cancel, nothing to overflow
    for rows in row_blocks(n, m, max(features, d), _BLOCK_ENTRIES):
        diff = x_query[rows][:, None, :] - x_train[None, :, :]
        h = _pair_bandwidths(bandwidth, by, rows, m, d)
        factors, allowed = _pair_factors(omega, weights is not None, exclude_self, rows, m)
        log_w, sign = _row_log_weights(diff, h, kernel, by == "key", allowed)
        heaviest = np.argmax(log_w, axis=1)  # the moments' reference: no cancellation
        w, _, _ = shifted_weights(log_w)
        w = w * factors * sign
        total = w.sum(axis=1)
        hollow = total == 0
        reference = y[heaviest]
        with np.errstate(invalid="ignore", divide="ignore"):
            if degree == 0:
                fit[rows] = middle + (w @ centred) / total[:, None]
            else:
                origin = x_train[heaviest]
                # in bandwidths, about the heaviest key: no square under- or overflows
                unit = np.broadcast_to(h, diff.shape)[np.arange(diff.shape[0]), heaviest]
                unit = np.where(unit == 0, 1.0, unit)  # a zero bandwidth's column: δ = 0
                delta = (x_train[None, :, :] - origin[:, None, :]) / unit[:, None, :]
                response = y[None, :, :] - reference[:, None, :]
                pair = np.concatenate([
                    response, delta,
                    (delta[..., :, None] * delta[..., None, :]).reshape(*delta.shape[:2], d * d),
                    (delta[..., :, None] * response[..., None, :]).reshape(*delta.shape[:2], d * p),
                ], axis=-1)  # fmt: skip
                means = np.einsum("bm,bmf->bf", w, pair) / total[:, None]
                means = np.where(hollow[:, None], 0.0, means)
                local, slopes[rows], _ = solve_moments(
                    means, d, p, 1, (origin - x_query[rows]) / unit,
                    signed=kernel.base is not None,
                )  # fmt: skip
                slopes[rows] /= unit[:, :, None]
                fit[rows] = reference + local
        limit = hollow & nearest
        if limit.any():
            h_rows = np.broadcast_to(h, diff.shape)[limit]
            shares = np.broadcast_to(factors, w.shape)[limit]
            ties = closest(x_query[rows][limit], x_train, np.maximum(h_rows, 5e-324),
                           kernel.norm, shares > 0)  # fmt: skip
            share = np.where(ties, shares, 0.0)
            with np.errstate(invalid="ignore"):
                fit[rows][limit] = (share @ y) / share.sum(axis=1)[:, None]
            slopes[rows][limit] = 0.0
        if not nearest:
            fit[rows][hollow] = np.nan
        empty[rows] = hollow
    return fit, slopes, empty


def pool(q, k, v, h, *, kernel: _kernels.Kernel, method, empty: str, mask, weights,
         return_weights: bool):  # fmt: skip
    """:func:`attnpool.attention_pool` of checked ``q (n, d)``, ``k (m, d)``, ``v (m, p)``,
    ``h (d,)`` with a higher-order kernel: ``(n, p)`` in the values' precision, NumPy or
    JAX as ``v`` is."""
    from .._support.validation import is_jax, is_traced
    from ..methods.options import resolve
    from .empty_policy import report_empty, takes_nearest
    from .observation_weights import check_weights

    refused = {"return_weights": return_weights, "mask": mask is not None}
    for name, asked in refused.items():
        if asked:
            raise ValueError(f"{name}: not available with the higher-order kernel {kernel.name!r}")
    if any(is_traced(a) for a in (q, k, v, h, weights)):
        raise ValueError(
            f"kernel: the higher-order kernel {kernel.name!r} pools concrete arrays, not "
            "values traced by jit or grad"
        )
    method = resolve(method)[0]
    if method not in ("auto", "dense", "stream"):
        raise ValueError(
            f"method: the higher-order kernel {kernel.name!r} is summed pair by pair "
            f"('auto', 'dense' or 'stream'); received {method!r}"
        )
    w = None if weights is None else np.asarray(check_weights(weights, k.shape[0]), np.float64)
    fit, _, empty_rows = local_fit(
        np.asarray(k), np.asarray(v), np.asarray(q), kernel=kernel, bandwidth=np.asarray(h),
        weights=w, nearest=takes_nearest(empty) or not kernel.compact,
    )  # fmt: skip
    report_empty(kernel, empty, empty_rows, stacklevel=4)
    dtype = v.dtype if np.dtype(v.dtype).kind == "f" else np.float64
    if is_jax(v):
        import jax.numpy as jnp

        return jnp.asarray(fit, dtype)
    return fit.astype(dtype)
