"""Independent references: the textbook formula in NumPy float64 and brute-force loops."""

from __future__ import annotations

import numpy as np

# K(r) of the scaled distance r = ‖(q − k)/h‖, written out from the textbook formulas.
KERNEL_VALUES = {
    "gaussian": lambda r: np.exp(-(r**2) / 2) / np.sqrt(2 * np.pi),
    "boxcar": lambda r: 0.5 * (r < 1),
    "constant": lambda r: np.ones_like(r),
    "triangular": lambda r: np.clip(1 - r, 0, None),
    "epanechnikov": lambda r: 0.75 * np.clip(1 - r**2, 0, None),
    "tricube": lambda r: 70 / 81 * np.clip(1 - r**3, 0, None) ** 3,
    "biweight": lambda r: 15 / 16 * np.clip(1 - r**2, 0, None) ** 2,
    "triweight": lambda r: 35 / 32 * np.clip(1 - r**2, 0, None) ** 3,
    "laplacian": lambda r: np.exp(-r) / 2,
    "cosine": lambda r: np.where(r < 1, np.pi / 4 * np.cos(np.pi * r / 2), 0.0),
}
DISTANCE_KERNELS = list(KERNEL_VALUES)
COMPACT_KERNELS = [
    "boxcar",
    "triangular",
    "epanechnikov",
    "tricube",
    "cosine",
    "biweight",
    "triweight",
]


def _two_d(x):
    x = np.asarray(x, dtype=np.float64)
    return x[:, None] if x.ndim == 1 else x


def reference_weights(queries, keys, kernel, bandwidth):
    """The four-line formula: distances → kernel → normalise over keys (NaN rows if empty)."""
    q, k = _two_d(queries), _two_d(keys)
    h = np.broadcast_to(np.asarray(bandwidth, dtype=np.float64), (q.shape[1],))
    if kernel == "dot":
        scores = (q / h) @ k.T
        unnormalised = np.exp(scores - scores.max(axis=1, keepdims=True))
    else:
        distances = np.sqrt((((q[:, None, :] - k[None, :, :]) / h) ** 2).sum(axis=-1))
        unnormalised = KERNEL_VALUES[kernel](distances)
    with np.errstate(invalid="ignore"):
        return unnormalised / unnormalised.sum(axis=1, keepdims=True)


def reference_pool(queries, keys, values, kernel, bandwidth):
    values = np.asarray(values, dtype=np.float64)
    return reference_weights(queries, keys, kernel, bandwidth) @ values


def leave_one_out_pool(points, values, bandwidth, kernel):
    """The four-line formula with each point's own pair left out (its row's diagonal 0)."""
    x = _two_d(points)
    h = np.broadcast_to(np.asarray(bandwidth, dtype=np.float64), (x.shape[1],))
    distances = np.sqrt((((x[:, None, :] - x[None, :, :]) / h) ** 2).sum(axis=-1))
    unnormalised = KERNEL_VALUES[kernel](distances)
    np.fill_diagonal(unnormalised, 0.0)
    with np.errstate(invalid="ignore"):  # a point alone in its support: NaN
        weights = unnormalised / unnormalised.sum(axis=1, keepdims=True)
    return weights @ np.asarray(values, dtype=np.float64)


def nearest_values(queries, keys, values, bandwidth=1.0):
    """Brute force: for each query, the mean value of its nearest keys (scaled distance)."""
    q, k = _two_d(queries), _two_d(keys)
    h = np.broadcast_to(np.asarray(bandwidth, dtype=np.float64), (q.shape[1],))
    values = np.asarray(values, dtype=np.float64)
    out = []
    for row in q:
        d2 = (((row - k) / h) ** 2).sum(axis=1)
        out.append(values[d2 == d2.min()].mean(axis=0))
    return np.array(out)


def float64_limit(q, k, v):
    """The limit as ``h → 0`` of the formula in float64: the mean value of the keys whose
    float64 differences ``q − k`` have the smallest squared norm, each row in the power
    of two of its largest difference (exact, so nothing overflows: the float64 sums of
    squares the formula would compare if it could), ties averaged."""
    out = []
    for row in q:
        gaps = row[None, :] - k
        unit = 2.0 ** -np.frexp(np.max(np.abs(gaps)))[1]
        size = np.sum((gaps * unit) ** 2, axis=1)
        out.append(np.asarray(v)[size == size.min()].mean(axis=0))
    return np.array(out)


def stable_gaussian_pool(queries, keys, values, bandwidth):
    """Gaussian pooling in float64, max-shifted (finite where the textbook form underflows)."""
    q, k = _two_d(queries), _two_d(keys)
    h = np.broadcast_to(np.asarray(bandwidth, dtype=np.float64), (q.shape[1],))
    log_k = -0.5 * (((q[:, None, :] - k[None, :, :]) / h) ** 2).sum(axis=-1)
    weights = np.exp(log_k - log_k.max(axis=1, keepdims=True))
    return (weights / weights.sum(axis=1, keepdims=True)) @ np.asarray(values, dtype=np.float64)


def long_double_local_linear(x, y, queries, kernel, bandwidth):
    """Local linear fits ``(k,)`` of ``x (n,)`` or ``(n, 2)`` by weighted least squares in
    long double, in two passes (the weighted mean offset, then the covariances about it):
    exact when one key carries nearly all the weight."""
    from attnpool import kernels

    x = np.asarray(x, np.longdouble).reshape(len(y), -1)
    queries = np.asarray(queries, np.longdouble).reshape(-1, x.shape[1])
    fits = []
    for q in queries:
        d = x - q
        r2 = np.asarray(((d / np.asarray(bandwidth, np.longdouble)) ** 2).sum(axis=1), float)
        log_w = kernels.get(kernel).log_profile(r2)
        w = np.exp(np.asarray(log_w, np.longdouble) - np.max(log_w))
        mean, y_bar = (w[:, None] * d).sum(axis=0) / w.sum(), (w * y).sum() / w.sum()
        c = d - mean
        cov = np.einsum("n,na,nb->ab", w, c, c)
        cross = np.einsum("n,na,n->a", w, c, y - y_bar)
        if x.shape[1] == 1:
            slope = cross / cov[0, 0]
        else:  # Cramer's rule (NumPy's solvers do not take long double)
            det = cov[0, 0] * cov[1, 1] - cov[0, 1] * cov[1, 0]
            slope = (
                np.array(
                    [
                        cross[0] * cov[1, 1] - cov[0, 1] * cross[1],
                        cov[0, 0] * cross[1] - cross[0] * cov[1, 0],
                    ]
                )
                / det
            )
        fits.append(float(y_bar - mean @ slope))
    return np.array(fits)


def gaussian_kernel_sums(queries, keys, scale, values=None):
    """``Σ_j K_ij [1, v_j]`` in float64, pair by pair, ``K`` the Gaussian of the scaled
    distance with ``K(0) = 1`` (the binned methods' units)."""
    gaps = (queries[:, None, :] - keys[None, :, :]) * scale
    weights = np.exp(-0.5 * np.sum(gaps * gaps, axis=2))
    features = np.ones((keys.shape[0], 1)) if values is None else np.c_[np.ones(len(keys)), values]
    return weights @ features
