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
    """``log K(r²)`` in long double, -inf outside the support.

    ``edge`` moves the boxcar's edge to ``r² < 1 + edge`` (its weight jumps there, so a
    key within rounding of the edge may fall on either side).
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = np.sqrt(r2) if name in ("laplacian", "triangular", "tricube", "cosine") else None
        inside = r2 < 1 + (edge if name == "boxcar" else 0)
        if name == "gaussian":
            return -r2 / 2
        if name == "laplacian":
            return -r
        if name == "constant":
            return np.zeros_like(r2)
        if name == "boxcar":
            log_k = np.zeros_like(r2)
        elif name == "triangular":
            log_k = np.log1p(-r)
        elif name == "epanechnikov":
            log_k = np.log1p(-r2)
        elif name == "tricube":
            log_k = 3 * np.log1p(-(r * r2))
        elif name == "biweight":
            log_k = 2 * np.log1p(-r2)
        elif name == "triweight":
            log_k = 3 * np.log1p(-r2)
        elif name == "cosine":
            log_k = np.log(np.cos(LD(np.pi) / 2 * r))
        else:
            raise ValueError(name)
        return np.where(inside, log_k, -np.inf)


def _as_2d(x):
    x = np.asarray(x)
    return (x[:, None] if x.ndim == 1 else x).astype(LD)


def _scaled(queries, keys, bandwidth):
    """Queries and keys ``(n, d)``, ``(m, d)`` in long double and the ``(d,)`` bandwidths."""
    q, k = _as_2d(queries), _as_2d(keys)
    h = np.broadcast_to(np.asarray(bandwidth, np.float64).astype(LD), (q.shape[1],))
    return q, k, h


def squared_distances(queries, keys, bandwidth):
    """``r² (n, m)``: squared scaled distances in long double."""
    q, k, h = _scaled(queries, keys, bandwidth)
    u = (q[:, None, :] - k[None, :, :]) / h
    return np.sum(u * u, axis=-1)


def _coordinates(queries, keys, bandwidth):
    """``u (n, m, d)``: the scaled differences in long double."""
    q, k, h = _scaled(queries, keys, bandwidth)
    return (q[:, None, :] - k[None, :, :]) / h


def log_weights(queries, keys, kernel: str, bandwidth, edge: float = 0.0):
    """``(log K (n, m), r² (n, m))`` in long double (for ``"dot"``: scores and their
    squares); a ``-product`` kernel sums its one-dimensional kernel's log over the
    coordinates."""
    if kernel == "dot":
        q, k, h = _scaled(queries, keys, bandwidth)
        score = (q / h) @ k.T
        return score, score * score
    r2 = squared_distances(queries, keys, bandwidth)
    if kernel.endswith("-product"):
        u = _coordinates(queries, keys, bandwidth)
        one = kernel.removesuffix("-product")
        return sum(_log_kernel(one, u[..., j] ** 2, edge) for j in range(u.shape[2])), r2
    return _log_kernel(kernel, r2, edge), r2


def exact_pool(
    queries, keys, values, kernel: str, bandwidth, *, empty: str = "nearest", edge: float = 0.0,
    weights=None,
):  # fmt: skip
    """Pooled values ``(n, p)`` (long double) and the ``(n,)`` empty-row mask.

    Empty rows (no key in a compact support) get the nearest keys' mean value with
    ``empty="nearest"``, NaN with ``"nan"``. ``weights``: :func:`log_weights`' answer for
    these arguments, where the caller has it already.
    """
    v = _as_2d(values)
    log_k, r2 = (
        weights if weights is not None else log_weights(queries, keys, kernel, bandwidth, edge)
    )
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


def log_weight_intervals(queries, keys, kernel: str, bandwidth, unit: float, matmul=False):
    """``(lowest, highest)`` log weights ``(n, m)`` that rounding can give each pair.

    A method computing in working precision ``unit`` forms each scaled distance ``r``
    with an absolute error up to ``unit · r + 2 unit · X · √d``, ``X`` the extent of the
    centred data in bandwidths (coordinates are scaled before they are subtracted, and
    XLA may fuse ``a·s − b·s`` into a fused multiply-add); in d ≥ 3, where ``r²`` may be
    formed as ``‖q‖² + ‖k‖² − 2 q·k`` — at every d for a method that forms its logits as
    matrix products (``matmul``: fused attention) — ``r²`` is off by up to
    ``unit · d · X²`` more.
    Radial kernels decrease with ``r``, so the interval is the kernel at the ends of the
    interval of ``r²``, widened by ``unit`` for the kernel's own rounding. The boxcar is
    flat inside its support: its edge is the caller's concern (``exact_pool(edge=…)``).
    """
    q, k, h = _scaled(queries, keys, bandwidth)
    d = q.shape[1]
    with np.errstate(invalid="ignore", over="ignore"):
        if kernel == "dot":
            score = (q / h) @ k.T
            spread = unit * (1 + (np.abs(q) / h) @ np.abs(k).T)
            return score - spread, score + spread
        r2 = squared_distances(queries, keys, bandwidth)
        if kernel in ("boxcar", "boxcar-product"):
            log_k, _ = log_weights(queries, keys, kernel, bandwidth)
            return log_k - d * unit, log_k + d * unit
        centre = k.min(0) / 2 + k.max(0) / 2
        extent = np.max(np.abs(np.concatenate([q, k]) - centre) / h)
        if kernel.endswith("-product"):  # each coordinate's interval, as in one dimension
            one, u = kernel.removesuffix("-product"), np.abs(_coordinates(queries, keys, h))
            error = unit * u + 2 * unit * extent
            near, far = np.maximum(u - error, 0) ** 2, (u + error) ** 2
            lowest = sum(_log_kernel(one, far[..., j]) for j in range(d))
            highest = sum(_log_kernel(one, near[..., j]) for j in range(d))
            return lowest - d * unit, highest + d * unit
        r = np.sqrt(r2)
        error = unit * r + 2 * unit * extent * np.sqrt(LD(d))
        near, far = np.maximum(r - error, 0) ** 2, (r + error) ** 2
        if d >= 3 or matmul:
            near, far = np.maximum(near - unit * d * extent**2, 0), far + unit * d * extent**2
        return _log_kernel(kernel, far) - unit, _log_kernel(kernel, near) + unit


def rounding_bound(
    queries, keys, kernel: str, bandwidth, unit: float, matmul=False, log_k=None
):  # fmt: skip
    """``(n,)`` bound on how far rounding moves each pooled row, in units of the values' range.

    With each weight anywhere in ``[lo_i, hi_i]`` (:func:`log_weight_intervals`), a
    weighted mean moves by at most ``Σ (hi_i − lo_i) / Σ lo_i`` of the range: more
    than 1 (the convex hull and nothing more) where rounding swamps the weights.
    ``log_k``: :func:`log_weights`' first answer, where the caller has it already.
    """
    lowest, highest = log_weight_intervals(queries, keys, kernel, bandwidth, unit, matmul)
    if log_k is None:
        log_k, _ = log_weights(queries, keys, kernel, bandwidth)
    top = np.max(log_k, axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        lo = np.exp(np.minimum(lowest - top, 10_000))
        hi = np.exp(np.minimum(highest - top, 10_000))
        kept = np.sum(lo, axis=1)
        bound = np.where(kept > 0, np.sum(hi - lo, axis=1) / kept, np.inf)
    return np.nan_to_num(bound.astype(np.float64), nan=np.inf)


def magnitude(values) -> np.ndarray:
    """``(p,)`` largest magnitude of each value column (the scale of rounding errors)."""
    return np.max(np.abs(_as_2d(values)), axis=0).astype(np.float64)


def value_range(values) -> np.ndarray:
    """``(p,)`` range of each value column, without overflow (the scale of tolerances)."""
    v = _as_2d(values)
    return (np.max(v, axis=0) - np.min(v, axis=0)).astype(np.float64)
