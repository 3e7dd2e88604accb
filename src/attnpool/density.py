"""Kernel density estimates on the pooling engines: attention pooling's denominator.

.. math:: \\hat f(x) = \\frac{1}{\\sum_i w_i} \\sum_i w_i \\,
          \\frac{K((x - x_i) / h)}{\\prod_j h_j \\int K}

(``w_i = 1`` without observation weights). ``Σ_i w_i K(u_i)`` is the pooling state of
the values ``w`` — ``m + log t`` in the log domain — on the exact engines (dense or
streamed key blocks, a compact kernel's edge decided as pooling decides it), so a
density far from the data is a finite log density, not 0 or ``log 0``. ``∫K`` is over
``ℝ^d``: radial kernels by radial quadrature, product kernels the one-dimensional
integral to the power ``d`` (:func:`kernel_integrals`).

>>> import numpy as np
>>> from attnpool.density import kernel_density
>>> kernel_density(np.zeros(1), np.array([0.0, 1.0]), bandwidth=1.0).round(4)  # φ(0), φ(1)
array([0.3989, 0.242 ])
"""

from __future__ import annotations

import math
from functools import lru_cache, partial

import jax
import jax.numpy as jnp
import numpy as np
from scipy import integrate, special

from . import kernels as _kernels
from ._estimator_api import BaseEstimator, check_is_fitted, validate_data
from ._interop import compute_dtype, precision_scope
from ._shapes import MAX_ROWS, bucket, pad_rows, padded, query_bucket
from ._validation import check_bandwidth, check_choice, check_points
from .engines.programs import kernel_block, pool_state
from .geometry import MATMUL_MIN_DIM, block_coordinates
from .methods.options import exact_engine
from .methods.stream import KEY_BLOCK
from .observation_weights import check_weights, positive_rows

__all__ = [
    "CDF_KERNELS",
    "KernelDensity",
    "conditional_density",
    "kernel_cdf",
    "kernel_density",
    "kernel_integrals",
    "log_density",
    "log_kernel_sums",
    "loo_log_density",
    "select_density_bandwidth",
]


@lru_cache(maxsize=64)
def kernel_integrals(kernel: _kernels.Kernel, d: int) -> tuple[float, float]:
    """``(∫K, ∫K²)`` over ``ℝ^d`` of the radial kernel ``K(‖u‖)``, unnormalised.

    By radial quadrature, ``∫ g(‖u‖) du = S_{d−1} ∫₀^∞ g(r) r^{d−1} dr`` with the
    sphere's area ``S_{d−1} = 2π^{d/2} / Γ(d/2)``. A product kernel's integrals are the
    one-dimensional ones to the power ``d``.

    >>> a, b = kernel_integrals(_kernels.get("gaussian"), 1)   # √(2π), √π
    >>> round(a, 6), round(b, 6)
    (2.506628, 1.772454)
    """
    if kernel.product and d > 1:
        first, second = kernel_integrals(kernel, 1)
        return first**d, second**d
    sphere = 2 * math.pi ** (d / 2) / special.gamma(d / 2)

    def profile(r):
        with precision_scope(np.float64):
            return float(np.exp(kernel.log_profile(jnp.asarray(r * r, jnp.float64))))

    upper = kernel.support if kernel.compact else np.inf
    first = integrate.quad(lambda r: profile(r) * r ** (d - 1), 0, upper, limit=200)[0]
    second = integrate.quad(lambda r: profile(r) ** 2 * r ** (d - 1), 0, upper, limit=200)[0]
    return float(sphere * first), float(sphere * second)


def log_kernel_sums(x_train, x_query, bandwidth, kernel: _kernels.Kernel, weights=None,
                    key_count=None):  # fmt: skip
    """``log Σ_i w_i K((x − x_i)/h)`` at each query, ``(n_q,)`` (traceable), streamed for
    large inputs: pooling's coordinates and blocks. ``weights (m,)``: positive observation
    weights (None: ones); ``key_count``: training rows from this one on are padding."""
    queries, keys, divisor = block_coordinates(x_query, x_train, bandwidth, kernel)
    n, m = queries.shape[0], keys.shape[0]
    method = exact_engine(n * m)
    block = kernel_block(kernel, streamed=method == "stream", divisor=divisor, key_count=key_count)
    values = jnp.ones((m, 1), keys.dtype) if weights is None else weights[:, None]
    state = pool_state(block, queries, keys, values, method=method, key_block=KEY_BLOCK)
    sums = state.max_log + jnp.log(state.weighted_values[:, 0])
    if kernel.quadratic is not None and divisor is None and queries.shape[1] >= MATMUL_MIN_DIM:
        # the matrix-product form drops each query's own term, quadratic · ‖q‖²: a sum
        # is absolute here, not a weight relative to others
        sums = sums + kernel.quadratic * jnp.sum(queries * queries, axis=1)
    return sums


@partial(jax.jit, static_argnames="kernel")
def _log_density_program(x_train, x_query, bandwidth, weights, key_count, constant, *, kernel):
    sums = log_kernel_sums(x_train, x_query, bandwidth, kernel, weights, key_count)
    return sums - constant


def log_density(x_train, x_query, *, kernel="gaussian", bandwidth=1.0, weights=None) -> np.ndarray:
    """``log f̂`` at ``x_query (k,) | (k, d)`` of the sample ``x_train (n,) | (n, d)``:
    ``(k,)`` in float64 (the inputs' precision if narrower), ``−inf`` where a compact
    kernel covers no training point. ``weights (n,)``: observation weights."""
    record = _kernels.get(kernel)
    x = check_points(x_train, "x_train")
    if x.shape[0] == 0:
        raise ValueError(f"x_train: expected at least one row; received shape {x.shape}")
    q = check_points(x_query, "x_query", dims=x.shape[1])
    record = _kernels.for_dimensions(record, x.shape[1])
    first = kernel_integrals(record, x.shape[1])[0] if record.similarity == "distance" else 0.0
    if not (0 < first < math.inf):
        raise ValueError(
            f"kernel: a density needs a distance kernel of finite integral; received "
            f"{record.name!r}"
        )
    h = np.asarray(check_bandwidth(bandwidth, x.shape[1]), np.float64)
    dtype = np.dtype(compute_dtype(x, q, numpy=True))
    w = None if weights is None else check_weights(weights, x.shape[0], dtype)
    total = x.shape[0] if w is None else float(np.sum(w))
    constant = math.log(total) + float(np.sum(np.log(h))) + math.log(first)
    n, m = q.shape[0], x.shape[0]
    if n == 0:
        return np.zeros(0)
    count = None
    keys = np.asarray(x, dtype)
    if m <= MAX_ROWS:  # rows padded to their buckets: a program per bucket, not per size
        count = np.int32(m)
        keys = pad_rows(keys, bucket(m))
        w = None if w is None else padded(np.asarray(w, dtype), size=bucket(m))[0]
    with precision_scope(dtype):
        result = _log_density_program(
            keys, pad_rows(np.asarray(q, dtype), query_bucket(n)), np.asarray(h, dtype),
            None if w is None else np.asarray(w, dtype), count, np.asarray(constant, dtype),
            kernel=record,
        )  # fmt: skip
    return np.asarray(result, np.float64)[:n]


def kernel_density(x_train, x_query, **options) -> np.ndarray:
    """The density ``f̂`` at ``x_query``: ``exp`` of :func:`log_density` (same options)."""
    return np.exp(log_density(x_train, x_query, **options))


class KernelDensity(BaseEstimator):
    """Kernel density estimation as scikit-learn's ``KernelDensity`` does it, exactly.

    Parameters
    ----------
    kernel : str or Kernel, default="gaussian"
        A distance kernel of finite integral (:mod:`attnpool.kernels`; radial in several
        dimensions, or a ``-product`` kernel).
    bandwidth : float, array of shape (n_features,), "scott", "silverman", "normal_reference"
        or "cv_ml" (likelihood cross-validation, :func:`select_density_bandwidth`)

    Attributes
    ----------
    bandwidth_ : ndarray of shape (n_features,)
    n_features_in_ : int

    ``score_samples`` gives log densities (``−inf`` outside a compact kernel's reach),
    ``score`` their sum — the likelihood ``GridSearchCV`` maximises — and ``sample``
    draws from the estimate (Gaussian and boxcar kernels).
    """

    def __init__(self, kernel="gaussian", bandwidth=1.0):
        self.kernel = kernel
        self.bandwidth = bandwidth

    def fit(self, X, y=None, sample_weight=None):
        """Keep the sample ``X (n_samples, n_features)`` (``y`` is ignored) and its
        observation weights; rules of thumb choose the bandwidth if one is named."""
        X = validate_data(self, X, requires_y=False)
        X, _, weights = positive_rows(X, X[:, :1], sample_weight, name="sample_weight")
        if isinstance(self.bandwidth, str):
            from .bandwidth import rule_of_thumb

            check_choice(self.bandwidth, "bandwidth", ("scott", "silverman", *DENSITY_SELECTORS))
            if X.shape[0] < 2:
                raise ValueError(
                    f"X: a bandwidth rule needs at least 2 samples; received n_samples={X.shape[0]}"
                )
            if self.bandwidth in DENSITY_SELECTORS:
                if weights is not None:
                    raise ValueError(
                        f"sample_weight: bandwidth={self.bandwidth!r} selects for unweighted "
                        "samples; pass a rule ('scott', 'silverman') or numbers"
                    )
                found = select_density_bandwidth(X, method=self.bandwidth, kernel=self.kernel)
                self.bandwidth_ = found.bandwidth
            else:
                self.bandwidth_ = rule_of_thumb(
                    X, method=self.bandwidth, kernel=self.kernel, weights=weights
                )
        else:
            self.bandwidth_ = np.asarray(check_bandwidth(self.bandwidth, X.shape[1]), float)
        self.X_train_, self._weights = X, weights
        log_density(X[:1], X[:1], kernel=self.kernel, bandwidth=self.bandwidth_)  # checks
        return self

    def score_samples(self, X) -> np.ndarray:
        """Log density ``(n,)`` at each row of ``X``."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return log_density(
            self.X_train_, X, kernel=self.kernel, bandwidth=self.bandwidth_, weights=self._weights
        )

    def score(self, X, y=None) -> float:
        """Total log likelihood of ``X`` under the estimate."""
        return float(np.sum(self.score_samples(X)))

    def sample(self, n_samples: int = 1, random_state=None) -> np.ndarray:
        """``(n_samples, n_features)`` draws: a training row (in proportion to its weight)
        plus the kernel's noise — a normal of standard deviation ``h`` (Gaussian), or a
        point uniform in the ball of radius ``h`` (boxcar)."""
        check_is_fitted(self)
        record = _kernels.for_dimensions(_kernels.get(self.kernel), self.n_features_in_)
        if not _kernels.is_builtin(record, ("gaussian", "boxcar")):
            raise ValueError(
                f"kernel: sample draws from the 'gaussian' and 'boxcar' kernels; this estimate "
                f"has {record.name!r}"
            )
        rng = np.random.default_rng(random_state)
        n, d = self.X_train_.shape
        p = None if self._weights is None else self._weights / np.sum(self._weights)
        rows = self.X_train_[rng.choice(n, size=n_samples, p=p)]
        if record.name == "gaussian":
            return rows + rng.normal(size=(n_samples, d)) * self.bandwidth_
        direction = rng.normal(size=(n_samples, d))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        radius = rng.random(n_samples)[:, None] ** (1.0 / d)
        return rows + direction * radius * self.bandwidth_


def loo_log_density(x, bandwidth, kernel) -> np.ndarray:
    """``(n,)`` leave-one-out log densities ``log f̂₋ᵢ(xᵢ)`` of the sample ``x (n, d)`` in
    float64, by NumPy in row chunks (differences of the inputs, no program): the
    criterion of likelihood cross-validation. ``−inf`` for a point no other reaches."""
    from .edges import edge_log_profile, has_edge
    from .engines.numpy_engine import NUMPY_CHUNK_PAIRS

    record = _kernels.for_dimensions(_kernels.get(kernel), x.shape[1])
    x, h = np.asarray(x, np.float64), np.asarray(bandwidth, np.float64)
    n = x.shape[0]
    sums = np.empty(n)
    step = max(1, NUMPY_CHUNK_PAIRS // n)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for start in range(0, n, step):
            rows = np.arange(start, min(start + step, n))
            us = [(x[rows, k, None] - x[None, :, k]) / h[k] for k in range(x.shape[1])]
            if has_edge(record):
                log_k = edge_log_profile(us, record)
            else:
                log_k = np.asarray(record.log_profile(sum(u * u for u in us)), np.float64)
            log_k[np.arange(rows.size), rows] = -np.inf
            top = np.max(log_k, axis=1)
            safe = np.where(np.isfinite(top), top, 0.0)
            sums[rows] = safe + np.log(np.sum(np.exp(log_k - safe[:, None]), axis=1))
    constant = (
        math.log(n - 1)
        + float(np.sum(np.log(h)))
        + math.log(kernel_integrals(record, x.shape[1])[0])
    )
    return sums - constant


def select_density_bandwidth(X, *, method: str = "cv_ml", kernel="gaussian"):
    """The bandwidth ``(d,)`` of a kernel density estimate of ``X (n,) | (n, d)``:
    ``"normal_reference"`` (statsmodels': ``1.06 σ n^(−1/(4+d))``, ``σ`` with ``ddof=0``,
    converted to other kernels by their canonical bandwidths) or
    ``"cv_ml"``, likelihood cross-validation — the bandwidth that maximises
    ``Σ_i log f̂₋ᵢ(xᵢ)`` (:func:`loo_log_density`), by the regression searches' global
    grid-then-refine search on log-bandwidths. Returns a
    :class:`~attnpool.bandwidth.BandwidthSelection` (``objective``: the mean negative
    leave-one-out log density)."""
    from .bandwidth import rule_of_thumb
    from .bandwidth.rules import rule_from_spread
    from .bandwidth.search import GRID, BandwidthSelection, select_on_host

    check_choice(method, "method", DENSITY_SELECTORS)
    x = np.asarray(check_points(X, "X"), np.float64)
    if x.shape[0] < 3:
        raise ValueError(
            f"X: bandwidth selection needs at least 3 rows; received n_samples={x.shape[0]}"
        )
    if method == "normal_reference":  # statsmodels': 1.06 σ (ddof 0) n^(−1/(4+d))
        scale = rule_from_spread(np.ones(x.shape[1]), x.shape[0], kernel) / 1.059
        start = 1.06 * np.std(x, axis=0) * scale
        return BandwidthSelection(start, float("nan"), method, (np.array([]), np.array([])))
    start = rule_of_thumb(x, method="scott", kernel=kernel)
    thetas = np.log(start)[None, :] + np.log(GRID)[:, None]

    def objective(theta) -> float:
        values = loo_log_density(x, np.exp(theta), kernel)
        return float(-np.mean(values)) if np.all(np.isfinite(values)) else np.inf

    record = _kernels.get(kernel)
    found = select_on_host(objective, thetas, None, smooth=not record.compact)
    return found._replace(method=method)


#: How :func:`select_density_bandwidth` chooses (``KernelDensity(bandwidth=…)`` too).
DENSITY_SELECTORS = ("cv_ml", "normal_reference")


def _log_kernel_cdf(name: str, u: np.ndarray) -> np.ndarray:
    """``log G(u)``, ``G`` the distribution function of the normalised one-dimensional
    kernel ``name`` (elementwise, float64; ``−inf`` where it is 0)."""
    from scipy import special

    if name == "gaussian":
        return special.log_ndtr(u)
    if name == "laplacian":
        return np.where(u < 0, u - math.log(2), np.log1p(-0.5 * np.exp(-np.abs(u))))
    c = np.clip(u, -1.0, 1.0)
    a = np.abs(c)
    if name == "boxcar":
        g = (c + 1) / 2
    elif name == "triangular":
        g = np.where(c < 0, (1 + c) ** 2 / 2, 1 - (1 - c) ** 2 / 2)
    elif name == "epanechnikov":
        g = (2 + 3 * c - c**3) / 4
    elif name == "tricube":  # ∫₀^a 70/81 (1 − t³)³ dt, by symmetry
        half = 70 / 81 * (a - 3 * a**4 / 4 + 3 * a**7 / 7 - a**10 / 10)
        g = 0.5 + np.sign(c) * half
    else:  # cosine
        g = (1 + np.sin(np.pi * c / 2)) / 2
    with np.errstate(divide="ignore"):
        return np.log(np.clip(g, 0.0, 1.0))


#: Kernels whose distribution functions :func:`kernel_cdf` knows (one dimension, and in
#: several as products — the Gaussian's product is itself).
CDF_KERNELS = ("gaussian", "boxcar", "triangular", "epanechnikov", "tricube", "cosine", "laplacian")


def kernel_cdf(x_train, x_query, *, kernel="gaussian", bandwidth=1.0, weights=None) -> np.ndarray:
    """The estimated distribution function ``F̂(x) = Σ_i w_i Π_j G((x_j − x_ij)/h_j) / Σ w``
    at ``x_query (k,) | (k, d)`` (``G``: the one-dimensional kernel's distribution
    function): ``(k,)`` in float64, non-decreasing in each coordinate, in ``[0, 1]``. In
    one dimension every kernel of :data:`CDF_KERNELS`; in several the Gaussian and the
    ``-product`` kernels (a radial kernel's distribution function is no product)."""
    from .engines.numpy_engine import NUMPY_CHUNK_PAIRS

    x = np.asarray(check_points(x_train, "x_train"), np.float64)
    q = np.asarray(check_points(x_query, "x_query", dims=x.shape[1]), np.float64)
    record = _kernels.for_dimensions(_kernels.get(kernel), x.shape[1])
    name = record.name.removesuffix("-product")
    several = x.shape[1] > 1 and not (record.product or name == "gaussian")
    if not _kernels.is_builtin(record) or name not in CDF_KERNELS or several:
        raise ValueError(
            f"kernel: distribution functions are products of one-dimensional ones: "
            f"{', '.join(CDF_KERNELS)} in one dimension, the Gaussian and the '-product' "
            f"kernels in several; received {record.name!r} in {x.shape[1]} dimension(s)"
        )
    h = np.asarray(check_bandwidth(bandwidth, x.shape[1]), np.float64)
    w = np.ones(x.shape[0]) if weights is None else check_weights(weights, x.shape[0])
    log_w = np.log(np.asarray(w, np.float64) / np.sum(w))
    result = np.empty(q.shape[0])
    step = max(1, NUMPY_CHUNK_PAIRS // x.shape[0])
    with np.errstate(divide="ignore"):
        for start in range(0, q.shape[0], step):
            rows = slice(start, start + step)
            log_g = log_w[None, :] + sum(
                _log_kernel_cdf(name, (q[rows, j, None] - x[None, :, j]) / h[j])
                for j in range(x.shape[1])
            )
            top = np.max(log_g, axis=1)
            safe = np.where(np.isfinite(top), top, 0.0)
            result[rows] = np.exp(safe) * np.sum(np.exp(log_g - safe[:, None]), axis=1)
    return np.minimum(result, 1.0)


def conditional_density(
    x_train, y_train, x_query, y_query, *, kernel="gaussian", bandwidth=1.0, y_bandwidth=1.0
) -> np.ndarray:
    """``f̂(y | x)`` at the pairs ``(x_query[i], y_query[i])``: the attention pooling of the
    values ``K_b(y − y_i)`` with weights ``K_h(x − x_i)``,

    .. math:: \\hat f(y \\mid x) = \\frac{\\sum_i K((x - x_i)/h) \\, K((y - y_i)/b)}
              {\\prod_j b_j \\int K \\; \\sum_i K((x - x_i)/h)}

    in the log domain (both sums by :func:`log_kernel_sums`): ``(k,)`` in float64, NaN
    where no training point reaches ``x`` (a compact kernel). The Gaussian or a
    ``-product`` kernel (the joint kernel is then the product of the two). Continuous
    columns; ``bandwidth`` is ``x``'s, ``y_bandwidth`` ``y``'s.
    """
    x = np.asarray(check_points(x_train, "x_train"), np.float64)
    y = np.asarray(check_points(y_train, "y_train"), np.float64)
    if y.shape[0] != x.shape[0]:
        raise ValueError(
            f"y_train: expected one row per row of x_train ({x.shape[0]}); received {y.shape}"
        )
    qx = np.asarray(check_points(x_query, "x_query", dims=x.shape[1]), np.float64)
    qy = np.asarray(check_points(y_query, "y_query", dims=y.shape[1]), np.float64)
    if qy.shape[0] != qx.shape[0]:
        raise ValueError(
            f"y_query: expected one row per row of x_query ({qx.shape[0]}); received {qy.shape}"
        )
    record = _kernels.get(kernel)
    if not (_kernels.is_gaussian(record) or (record.product and _kernels.is_builtin(record))):
        raise ValueError(
            f"kernel: a conditional density needs the Gaussian or a '-product' kernel (the "
            f"joint kernel a product of x's and y's); received {record.name!r}"
        )
    h = np.asarray(check_bandwidth(bandwidth, x.shape[1]), np.float64)
    b = np.asarray(check_bandwidth(y_bandwidth, y.shape[1]), np.float64)
    joint = log_density(np.hstack([x, y]), np.hstack([qx, qy]), kernel=record,
                        bandwidth=np.concatenate([h, b]))  # fmt: skip
    marginal = log_density(x, qx, kernel=record, bandwidth=h)
    with np.errstate(invalid="ignore"):
        return np.exp(joint - marginal)
