"""Kernel density estimation as an estimator, and its bandwidths.

:class:`KernelDensity` has scikit-learn's interface over :func:`attnpool.density.log_density`;
:func:`select_density_bandwidth` chooses by statsmodels' ``normal_reference`` rule or by
likelihood cross-validation (``cv_ml``), maximising ``Σ_i log f̂₋ᵢ(xᵢ)``
(:func:`loo_log_density`) by the regressions' global grid-then-refine search.
"""

from __future__ import annotations

import math

import numpy as np

from . import kernels as _kernels
from ._estimator_api import BaseEstimator, check_is_fitted, validate_data
from ._validation import check_bandwidth, check_choice, check_points
from .density import kernel_integrals, log_density
from .observation_weights import positive_rows

__all__ = [
    "DENSITY_SELECTORS",
    "KernelDensity",
    "loo_log_density",
    "select_density_bandwidth",
]

#: How :func:`select_density_bandwidth` chooses (``KernelDensity(bandwidth=…)`` too).
DENSITY_SELECTORS = ("cv_ml", "normal_reference")


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
    float64: the criterion of likelihood cross-validation, ``−inf`` for a point no other
    reaches. Sums in NumPy row chunks (differences of the inputs, no program); a Gaussian
    sample of one column from :data:`EXPANSION_MIN_ROWS` points by the ``fgt`` method's
    expansions, ``O(n)`` an evaluation (a point whose sum over the others is below
    ``fgt.LOO_MIN_WEIGHT`` of its own term, or unsettled, summed pair by pair)."""
    record = _kernels.for_dimensions(_kernels.get(kernel), x.shape[1])
    x, h = np.asarray(x, np.float64), np.asarray(bandwidth, np.float64)
    n = x.shape[0]
    if _kernels.is_gaussian(record) and x.shape[1] == 1 and n >= EXPANSION_MIN_ROWS:
        from .methods import fgt

        sums, settled = fgt.expansion_sums(x, x, np.zeros((n, 0)), 1.0 / h)
        rest = sums[:, 0] - 1.0  # each point's own term is exactly K(0) = 1
        again = np.flatnonzero(~settled | ~(rest >= fgt.LOO_MIN_WEIGHT))
        with np.errstate(divide="ignore"):
            log_sums = np.log(np.maximum(rest, 0.0))
        log_sums[again] = _pairwise_log_sums(x, h, record, again)
    else:
        log_sums = _pairwise_log_sums(x, h, record, np.arange(n))
    constant = (
        math.log(n - 1)
        + float(np.sum(np.log(h)))
        + math.log(kernel_integrals(record, x.shape[1])[0])
    )
    return log_sums - constant


#: Points from which a Gaussian sample of one column sums by expansions (below, NumPy's
#: pairs cost less than the expansion's set-up).
EXPANSION_MIN_ROWS = 1000


def _pairwise_log_sums(x, h, record, rows) -> np.ndarray:
    """``log Σ_{j≠i} K((x_i − x_j)/h)`` for the points ``rows``, pair by pair in chunks."""
    from .edges import edge_log_profile, has_edge
    from .engines.numpy_engine import NUMPY_CHUNK_PAIRS

    out = np.empty(rows.size)
    step = max(1, NUMPY_CHUNK_PAIRS // x.shape[0])
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for start in range(0, rows.size, step):
            chunk = rows[start : start + step]
            us = [(x[chunk, k, None] - x[None, :, k]) / h[k] for k in range(x.shape[1])]
            if has_edge(record):
                log_k = edge_log_profile(us, record)
            else:
                log_k = np.asarray(record.log_profile(sum(u * u for u in us)), np.float64)
            log_k[np.arange(chunk.size), chunk] = -np.inf
            top = np.max(log_k, axis=1)
            safe = np.where(np.isfinite(top), top, 0.0)
            out[start : start + chunk.size] = safe + np.log(
                np.sum(np.exp(log_k - safe[:, None]), axis=1)
            )
    return out


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
