"""Kernel density estimation as an estimator, and its bandwidths.

:class:`KernelDensity` has scikit-learn's interface over :func:`attnpool.density.log_density`;
:func:`select_density_bandwidth` chooses by statsmodels' ``normal_reference`` rule or by
likelihood cross-validation (``cv_ml``), maximising ``Σ_i log f̂₋ᵢ(xᵢ)``
(:func:`loo_log_density`) by the regressions' global grid-then-refine search.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from . import kernels as _kernels
from ._estimator_api import BaseEstimator, check_is_fitted, validate_data
from ._typing import ArrayLike, Bandwidth, KernelSpec, MethodSpec
from ._validation import check_bandwidth, check_choice, check_points
from .density import log_density
from .density_methods import expansions_pay
from .observation_weights import positive_rows

if TYPE_CHECKING:
    from .bandwidth.search import BandwidthSelection

__all__ = [
    "DENSITY_SELECTORS",
    "KernelDensity",
    "least_squares_criterion",
    "loo_log_density",
    "select_density_bandwidth",
]

#: How :func:`select_density_bandwidth` chooses (``KernelDensity(bandwidth=…)`` too).
DENSITY_SELECTORS = ("cv_ml", "cv_ls", "normal_reference", "isj")


class KernelDensity(BaseEstimator):
    """Kernel density estimation as scikit-learn's ``KernelDensity`` does it, exactly.

    Parameters
    ----------
    kernel : str or Kernel, default="gaussian"
        A distance kernel of finite integral (:mod:`attnpool.kernels`; radial in several
        dimensions, or a ``-product`` kernel).
    bandwidth : float, array of shape (n_features,), "scott", "silverman", "normal_reference",
        "cv_ml" or "cv_ls" (likelihood or least-squares cross-validation,
        :func:`select_density_bandwidth`)
    var_type : str, optional
        One letter per column, ``c`` continuous, ``o`` ordered, ``u`` unordered (as
        statsmodels' ``KDEMultivariate``); a categorical column's bandwidth is its ``λ``.
    method : str or Binned, default="auto"
        How ``score_samples`` sums (:data:`attnpool.density.DENSITY_METHODS`).

    Attributes
    ----------
    bandwidth_ : ndarray of shape (n_features,)
    n_features_in_ : int

    ``score_samples`` gives log densities (``−inf`` outside a compact kernel's reach),
    ``score`` their sum — the likelihood ``GridSearchCV`` maximises — and ``sample``
    draws from the estimate (Gaussian and boxcar kernels).
    """

    n_features_in_: int

    def __init__(
        self,
        kernel: KernelSpec = "gaussian",
        bandwidth: Bandwidth = 1.0,
        *,
        var_type: str | None = None,
        method: MethodSpec = "auto",
    ) -> None:
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.var_type = var_type
        self.method = method

    def fit(
        self, X: ArrayLike, y: ArrayLike | None = None, sample_weight: ArrayLike | None = None
    ) -> Self:
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
                if weights is not None and self.bandwidth != "isj":
                    raise ValueError(
                        f"sample_weight: bandwidth={self.bandwidth!r} selects for unweighted "
                        "samples; pass a rule ('scott', 'silverman') or numbers"
                    )
                found = select_density_bandwidth(
                    X, method=self.bandwidth, kernel=self.kernel, var_type=self.var_type,
                    weights=weights,
                )  # fmt: skip
                self.bandwidth_ = found.bandwidth
            else:
                self.bandwidth_ = rule_of_thumb(
                    X, method=self.bandwidth, kernel=self.kernel, weights=weights,
                    var_type=self.var_type,
                )  # fmt: skip
        else:
            self.bandwidth_ = np.asarray(check_bandwidth(self.bandwidth, X.shape[1]), float)
        self.X_train_, self._weights = X, weights
        log_density(X[:1], X[:1], kernel=self.kernel, bandwidth=self.bandwidth_,
                    var_type=self.var_type)  # the checks  # fmt: skip
        return self

    def score_samples(self, X: ArrayLike) -> np.ndarray:
        """Log density ``(n,)`` at each row of ``X``."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return log_density(
            self.X_train_, X, kernel=self.kernel, bandwidth=self.bandwidth_,
            weights=self._weights, var_type=self.var_type, method=self.method,
        )  # fmt: skip

    def score(self, X: ArrayLike, y: ArrayLike | None = None) -> float:
        """Total log likelihood of ``X`` under the estimate."""
        return float(np.sum(self.score_samples(X)))

    def sample(self, n_samples: int = 1, random_state: int | None = None) -> np.ndarray:
        """``(n_samples, n_features)`` draws: a training row (in proportion to its weight)
        plus the kernel's noise — a normal of standard deviation ``h`` (Gaussian), or a
        point uniform in the ball of radius ``h`` (boxcar)."""
        check_is_fitted(self)
        if self.var_type is not None and set(self.var_type) != {"c"}:
            raise ValueError(
                f"var_type: sample draws from continuous estimates; received "
                f"var_type={self.var_type!r}"
            )
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
            return np.asarray(rows + rng.normal(size=(n_samples, d)) * self.bandwidth_)
        direction = rng.normal(size=(n_samples, d))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        radius = rng.random(n_samples)[:, None] ** (1.0 / d)
        return np.asarray(rows + direction * radius * self.bandwidth_)


def loo_log_density(
    x: ArrayLike, bandwidth: Bandwidth, kernel: KernelSpec, var_type: str | None = None
) -> np.ndarray:
    """``(n,)`` leave-one-out log densities ``log f̂₋ᵢ(xᵢ)`` of the sample ``x (n, d)`` in
    float64: the criterion of likelihood cross-validation, ``−inf`` for a point no other
    reaches. Sums in NumPy row chunks (:func:`attnpool.mixed_kernels.log_sums`, no
    program; mixed data by ``var_type``); a Gaussian sample of one column of
    :data:`EXPANSION_MIN_ROWS` points (fewer where :func:`attnpool.density_methods.expansions_pay`)
    by the ``fgt`` method's expansions, ``O(n)`` an evaluation (a point whose sum over the
    others is below ``fgt.LOO_MIN_WEIGHT`` of its own term, or unsettled, pair by pair)."""
    from .density import mixed_columns
    from .mixed_kernels import log_sums

    x = np.asarray(x, np.float64)
    columns, h = mixed_columns(x, kernel, bandwidth, var_type or "c" * x.shape[1])
    if _by_expansions(x, columns):
        return _expansion_loo_log_density(x, _centred(x), h, columns)
    normalised = math.log(x.shape[0] - 1)
    return np.asarray(log_sums([(x, x, h, columns, "density")], leave_out=True)) - normalised


def _by_expansions(x: np.ndarray, columns: Any) -> bool:
    return (
        columns.var_type == "c"
        and _kernels.is_gaussian(columns.kernel)
        and (x.shape[0] >= EXPANSION_MIN_ROWS or expansions_pay(x.shape[0] ** 2))
    )


#: Points from which a Gaussian sample of one column sums its leave-one-out densities
#: by expansions even where their compiled loop is still to be built: a search of
#: twenty-odd evaluations pays for building it.
EXPANSION_MIN_ROWS = 1000


def _centred(x: np.ndarray) -> np.ndarray:
    from .density import centred_on_keys

    return centred_on_keys(x, x)[0]  # scaled uncentred, far data lose digits


def _expansion_loo_log_density(
    x: np.ndarray, centred: np.ndarray, h: np.ndarray, columns: Any
) -> np.ndarray:
    """:func:`loo_log_density` of one Gaussian column by the ``fgt`` expansions; ``centred``:
    ``x`` about its midrange."""
    from .methods import fgt
    from .mixed_kernels import log_sums

    n = x.shape[0]
    sums, settled = fgt.expansion_sums(centred, centred, np.zeros((n, 0)), 1.0 / h)
    rest = sums[:, 0] - 1.0  # each point's own term is exactly K(0) = 1
    again = np.flatnonzero(~settled | ~(rest >= fgt.LOO_MIN_WEIGHT))
    with np.errstate(divide="ignore"):
        out = np.log(np.maximum(rest, 0.0)) - math.log(math.sqrt(2 * math.pi) * h[0])
    out[again] = log_sums([(x[again], x, h, columns, "density")], leave_out=again)
    return out - math.log(n - 1)


def least_squares_criterion(
    x: ArrayLike, bandwidth: Bandwidth, kernel: KernelSpec = "gaussian", var_type: str | None = None
) -> float:
    """Least-squares cross-validation's ``∫ f̂² − (2/n) Σ_i f̂₋ᵢ(xᵢ)`` (statsmodels' and
    np's ``cv_ls``): the integrated squared error to a constant, ``∫ f̂²`` from the
    kernels' convolutions (the Gaussian's for continuous columns, sums over the levels
    for categorical ones: :mod:`attnpool.mixed_kernels`)."""
    from .density import mixed_columns
    from .mixed_kernels import log_sums

    x = np.asarray(x, np.float64)
    columns, h = mixed_columns(x, kernel, bandwidth, var_type or "c" * x.shape[1])
    if columns.continuous and not _kernels.is_gaussian(columns.kernel):
        raise ValueError(
            f"kernel: cv_ls integrates f̂² by the kernel's convolution, the Gaussian's; "
            f"received {columns.kernel.name!r} (use cv_ml)"
        )
    n = x.shape[0]
    square = np.exp(log_sums([(x, x, h, columns, "convolution")]) - 2 * math.log(n)).sum()
    loo = np.exp(log_sums([(x, x, h, columns, "density")], leave_out=True) - math.log(n - 1))
    return float(square - 2.0 * np.mean(loo))


def select_density_bandwidth(
    X: ArrayLike,
    *,
    method: str = "cv_ml",
    kernel: KernelSpec = "gaussian",
    var_type: str | None = None,
    weights: ArrayLike | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> BandwidthSelection:
    """The bandwidth ``(d,)`` of a kernel density estimate of ``X (n,) | (n, d)``:
    ``"normal_reference"`` (statsmodels': ``1.06 σ n^(−1/(4+d))``, ``σ`` with ``ddof=0``,
    converted to other kernels by their canonical bandwidths; categorical columns
    ``λ = 0.1``), ``"cv_ml"``, likelihood cross-validation — the bandwidth that maximises
    ``Σ_i log f̂₋ᵢ(xᵢ)`` (:func:`loo_log_density`) —, or ``"cv_ls"``, least squares
    (:func:`least_squares_criterion`), by the regression searches' global
    grid-then-refine search on log-bandwidths (logits of ``λ`` for the categorical columns
    of ``var_type``). Returns a :class:`~attnpool.bandwidth.BandwidthSelection`
    (``objective``: the mean negative leave-one-out log density, or the least-squares
    criterion). ``"isj"``: the improved Sheather–Jones plug-in of one continuous column
    (:func:`attnpool.plug_in.isj_bandwidth`; ``weights`` taken), converted to other kernels
    by their canonical bandwidths. ``progress``: called ``(done, total)`` as the search's
    grid and its refinement finish."""
    from .bandwidth.rules import rule_from_spread
    from .bandwidth.search import BandwidthSelection
    from .local_model import model_for
    from .mixed_kernels import MixedColumns

    check_choice(method, "method", DENSITY_SELECTORS)
    x = np.asarray(check_points(X, "X"), np.float64)
    if x.shape[0] < 3:
        raise ValueError(
            f"X: bandwidth selection needs at least 3 rows; received n_samples={x.shape[0]}"
        )
    model = model_for(x, kernel=kernel, var_type=var_type)
    cont = list(model.continuous)
    if weights is not None and method != "isj":
        raise ValueError(
            f"weights: {method!r} selects for unweighted samples; received weights (use "
            "'isj', a rule of thumb or numbers)"
        )
    if method == "isj":
        from .plug_in import isj_bandwidth

        if x.shape[1] != 1 or cont != [0]:
            raise ValueError(
                f"method: 'isj' takes one continuous column; received {x.shape[1]} column(s) "
                f"of var_type {model.var_type!r}"
            )
        ratio = rule_from_spread(np.ones(1), 1, kernel) / rule_from_spread(
            np.ones(1), 1, "gaussian"
        )
        h = isj_bandwidth(x[:, 0], weights) * ratio
        return BandwidthSelection(h, math.nan, method, NO_GRID)
    if method == "normal_reference":
        return BandwidthSelection(normal_reference(x, model), math.nan, method, NO_GRID)

    columns = MixedColumns(x, model.var_type, model.kernel)
    centred = None
    if method == "cv_ml" and _by_expansions(x, columns):
        x = np.sort(x, axis=0)  # the criterion is a mean over the points: sorted once
        centred = _centred(x)

    def objective(h: Any) -> float:
        if method == "cv_ls":
            return least_squares_criterion(x, h, kernel, var_type)
        if centred is not None:  # validated once: the search keeps h positive and finite
            values = _expansion_loo_log_density(x, centred, np.asarray(h, np.float64), columns)
        else:
            values = loo_log_density(x, h, kernel, var_type)
        return float(-np.mean(values)) if np.all(np.isfinite(values)) else np.inf

    return search(objective, x, model, method, progress)


#: The ``grid`` of a selection without a search.
NO_GRID = (np.array([]), np.array([]))


def normal_reference(x: np.ndarray, model: Any) -> np.ndarray:
    """statsmodels' ``normal_reference``: ``1.06 σ n^(−1/(4+q))`` for each continuous column
    of ``x (n, q)`` (``σ`` with ``ddof=0``; ``q`` counts every column), converted to the
    model's kernel by the canonical bandwidths; ``λ = 0.1`` for categorical columns."""
    from .bandwidth.rules import CATEGORICAL_START, rule_from_spread

    cont = list(model.continuous)
    scale = rule_from_spread(np.ones(x.shape[1]), x.shape[0], model.kernel) / 1.059
    start = np.full(x.shape[1], CATEGORICAL_START)
    start[cont] = (1.06 * np.std(x, axis=0) * scale)[cont]
    return start


def search(
    objective: Callable[[np.ndarray], float],
    x: np.ndarray,
    model: Any,
    method: str,
    progress: Callable[[int, int], None] | None = None,
) -> BandwidthSelection:
    """The bandwidths of ``x (n, q)``'s columns minimising ``objective(h)``: the
    regressions' grid of multiples of Scott's rule (log-bandwidths; categorical columns
    along the same line as logits, in the grid's steps about ``λ = 0.1``), refined by
    the host search. A :class:`~attnpool.bandwidth.BandwidthSelection`."""
    from .bandwidth import rule_of_thumb
    from .bandwidth.search import (
        GRID,
        BandwidthSelection,
        Counted,
        bandwidth_of,
        host_search,
        to_theta,
    )

    start = rule_of_thumb(x, method="scott", kernel=model.kernel, var_type=model.var_type)
    thetas = np.tile(to_theta(start, model), (len(GRID), 1))
    thetas[:, list(model.continuous)] += np.log(GRID)[:, None]
    step = math.log(GRID[1] / GRID[0])
    line = step * (np.arange(len(GRID)) - (len(GRID) - 1) / 2)
    thetas[:, list(model.categorical)] += line[:, None]
    counted = Counted(lambda t: objective(bandwidth_of(t, model)))
    theta, value, objectives = host_search(
        counted, thetas, GRID, progress,
        smooth=not model.kernel.compact,
    )  # fmt: skip
    theta, value = _categorical_edges(counted, theta, value, model)
    return BandwidthSelection(
        bandwidth_of(theta, model), value, method, (GRID, objectives), True, counted.calls
    )


#: The logit beyond which a categorical column's ``λ`` is tried at its edge, and that
#: edge's: ``λ`` within ``2e-16`` of 0 or of its largest value (bandwidths stay positive).
EDGE_LOGIT, EDGE = 15.0, 36.0


def _categorical_edges(
    objective: Callable[[np.ndarray], float], theta: np.ndarray, value: float, model: Any
) -> tuple[np.ndarray, float]:
    """``(θ, objective)`` with each categorical column the search drove beyond
    :data:`EDGE_LOGIT` tried at that edge (:data:`EDGE`) — ``λ → 0`` (the column splits
    the data) or its largest value (the column is ignored), which logits approach only
    slowly, the criterion flat to ~1e-9 there — and kept there where the criterion is no
    larger."""
    for column in model.categorical:
        if abs(theta[column]) > EDGE_LOGIT:
            trial = theta.copy()
            trial[column] = math.copysign(EDGE, theta[column])
            at_edge = objective(trial)
            if at_edge <= value:
                theta, value = trial, at_edge
    return theta, value
