"""The exact oracle: the seed's formula evaluated in extended precision, with its limits.

``exact_pool`` evaluates distances → kernel → normalise over keys → weighted sum in
``numpy.longdouble`` (x86's 80-bit format: a 64-bit significand and exponents to
±4932), max-shifted, so that

- squared scaled distances of any float64 input are finite (``(1e200 / 1e-300)²`` is),
- the nearest-key limit at tiny bandwidths comes out of the same formula (the other
  weights underflow to exactly zero), ties averaged,
- weighted sums of values near float64's limit do not overflow.

A method computing in a working precision ``eps`` cannot be held to the exact numbers
unconditionally: it forms each scaled distance with rounding, so each log weight may
move by some ``δ_i``. ``rounding_bound`` turns those into the largest move of each
pooled row, in units of the values' range (its docstring gives the model). The
oracle's tolerance for a method is ``(documented tolerance + that bound) × range of the
values + rounding of the sums``; where the bound exceeds 1, only the convex hull of the
values is asserted.
"""

from __future__ import annotations

import numpy as np

LD = np.longdouble
assert np.finfo(LD).maxexp >= 16384, "the oracle needs x86 extended precision"


def _log_kernel(name: str, r2, edge: float = 0.0):
    """``(log K(r²), |d log K / d r|)`` in long double; -inf outside the support.

    ``edge`` moves the boxcar's edge to ``r² < 1 + edge`` (its weight jumps there, so a
    key within rounding of the edge may fall on either side).
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = np.sqrt(r2)
        inside = r2 < 1 + (edge if name == "boxcar" else 0)
        zero = np.zeros_like(r2)
        if name == "gaussian":
            return -r2 / 2, r
        if name == "laplacian":
            return -r, zero + 1
        if name == "constant":
            return zero, zero
        if name == "boxcar":
            return np.where(inside, LD(0), -np.inf), zero
        if name == "triangular":
            log_k, slope = np.log1p(-r), 1 / (1 - r)
        elif name == "epanechnikov":
            log_k, slope = np.log1p(-r2), 2 * r / (1 - r2)
        elif name == "tricube":
            log_k, slope = 3 * np.log1p(-(r * r2)), 9 * r2 / (1 - r * r2)
        elif name == "cosine":
            log_k = np.log(np.cos(LD(np.pi) / 2 * r))
            slope = LD(np.pi) / 2 * np.tan(LD(np.pi) / 2 * r)
        else:
            raise ValueError(name)
        return np.where(inside, log_k, -np.inf), np.where(inside, slope, 0)


def _as_2d(x):
    x = np.asarray(x)
    return (x[:, None] if x.ndim == 1 else x).astype(LD)


def log_weights(queries, keys, kernel: str, bandwidth, edge: float = 0.0):
    """``(log K (n, m), |d log K / d r| (n, m), r² (n, m))`` in long double."""
    q, k = _as_2d(queries), _as_2d(keys)
    h = np.broadcast_to(np.asarray(bandwidth, np.float64).astype(LD), (q.shape[1],))
    if kernel == "dot":
        score = (q / h) @ k.T
        return score, np.ones_like(score), score * score
    u = (q[:, None, :] - k[None, :, :]) / h
    r2 = np.sum(u * u, axis=-1)
    log_k, sens = _log_kernel(kernel, r2, edge)
    return log_k, sens, r2


def exact_pool(
    queries, keys, values, kernel: str, bandwidth, *, empty: str = "nearest", edge: float = 0.0
):
    """Pooled values ``(n, p)`` (long double) and the ``(n,)`` empty-row mask.

    Empty rows (no key in a compact support) get the nearest keys' mean value with
    ``empty="nearest"``, NaN with ``"nan"``.
    """
    v = _as_2d(values)
    log_k, _, r2 = log_weights(queries, keys, kernel, bandwidth, edge)
    top = np.max(log_k, axis=1, keepdims=True)
    empty_rows = ~np.isfinite(top[:, 0])
    with np.errstate(invalid="ignore", over="ignore"):
        weights = np.exp(log_k - np.where(np.isfinite(top), top, 0))
    weights[empty_rows] = 0
    if np.any(empty_rows) and kernel != "dot":
        closest = r2[empty_rows] == np.min(r2[empty_rows], axis=1, keepdims=True)
        weights[empty_rows] = closest if empty == "nearest" else np.nan
    weights /= np.sum(weights, axis=1, keepdims=True)
    return weights @ v, empty_rows


def rounding_bound(queries, keys, kernel: str, bandwidth, unit: float):
    """``(n,)`` bound on how far rounding moves each pooled row, in units of the values' range.

    Each log weight may be off by ``δ_i``: a relative error ``unit`` in the scaled
    distance ``r`` (``unit · r · |d log K/d r|``), an absolute one from coordinates
    scaled before they are subtracted (``unit · X · √d · |d log K/d r|``, ``X`` the
    extent of the centred data in bandwidths) and, in d ≥ 3 where ``r²`` is formed as
    ``‖q‖² + ‖k‖² − 2 q·k``, an absolute error ``unit · X²`` in ``r²`` (a shift of up to
    ``X √unit`` in ``r``), plus ``unit`` itself. Weights ``w_i e^{±δ_i}`` move a
    weighted mean by at most ``Σ α_i (e^{δ_i} − 1) / Σ α_i e^{−δ_i}`` of the range:
    ``≈ Σ α_i δ_i`` when small, and more than 1 (the convex hull and nothing more)
    where rounding swamps the weights.
    """
    log_k, slope, r2 = log_weights(queries, keys, kernel, bandwidth)
    top = np.max(log_k, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        weights = np.exp(log_k - np.where(np.isfinite(top), top, 0))
        delta = unit * (1 + slope * np.sqrt(r2))
        if kernel != "dot":
            q, k = _as_2d(queries), _as_2d(keys)
            d = q.shape[1]
            h = np.broadcast_to(np.asarray(bandwidth, np.float64).astype(LD), (d,))
            centre = k.min(0) / 2 + k.max(0) / 2
            extent = np.max(np.abs(np.concatenate([q, k]) - centre) / h)
            delta = delta + slope * unit * extent * np.sqrt(LD(d))
            if d >= 3:
                matmul = extent**2 * unit / 2 if kernel == "gaussian" else slope * extent
                delta = delta + (matmul if kernel == "gaussian" else matmul * np.sqrt(unit))
        delta = np.minimum(np.nan_to_num(delta, nan=10_000), 10_000)
        moved = np.sum(weights * np.expm1(delta), axis=1)
        kept = np.sum(weights * np.exp(-delta), axis=1)
        bound = np.where(kept > 0, moved / kept, np.inf)
    return np.nan_to_num(bound.astype(np.float64), nan=np.inf)


def magnitude(values) -> np.ndarray:
    """``(p,)`` largest magnitude of each value column (the scale of rounding errors)."""
    return np.max(np.abs(_as_2d(values)), axis=0).astype(np.float64)


def value_range(values) -> np.ndarray:
    """``(p,)`` range of each value column, without overflow (the scale of tolerances)."""
    v = _as_2d(values)
    return (np.max(v, axis=0) - np.min(v, axis=0)).astype(np.float64)
