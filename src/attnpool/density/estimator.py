"""Kernel density estimation as an estimator, and its bandwidths.

:class:`KernelDensity` has scikit-learn's interface over :func:`attnpool.density.log_density`;
:func:`select_density_bandwidth` chooses by statsmodels' ``normal_reference`` rule or by
likelihood cross-validation (``cv_ml``), maximising ``Σ_i log f̂₋ᵢ(xᵢ)``
(:func:`loo_log_density`) by the regressions' global grid-then-refine search.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, Self

import numpy as np

from .. import kernels as _kernels
from .._estimator_api import BaseEstimator, check_is_fitted, validate_data
from .._frames import fitted_var_type
from .._typing import ArrayLike, Bandwidth, KernelSpec, MethodSpec
from .._validation import check_bandwidth, check_choice, check_points
from ..bandwidth.resolution import TiedDataWarning, bandwidth_floor
from ..bandwidth.rules import CATEGORICAL_START, rule_from_spread, rule_of_thumb
from ..bandwidth.search import (
    GRID,
    BandwidthSelection,
    Counted,
    bandwidth_of,
    host_search,
    to_theta,
)
from ..kernels.mixed import MixedColumns
from ..sums.local_model import model_for
from ..sums.observation_weights import merged_rows, positive_rows
from . import log_density
from .criteria import ExpandedLikelihood, by_expansions, least_squares_criterion, loo_log_density

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
    """Kernel density estimation with scikit-learn's ``KernelDensity`` interface.

    ``fit``, ``score_samples``, ``score`` and ``sample`` work as scikit-learn's do (and
    so ``GridSearchCV``); the bandwidth differs: the named rules scale by each column's
    spread (``"scott"`` is ``1.059 σ n^(−1/(4+d))``, statsmodels' ``normal_reference``,
    where scikit-learn's is ``n^(−1/(d+4))`` of standardised data) and ``bandwidth_``
    holds one bandwidth per column (scikit-learn's is one float).

    Parameters
    ----------
    kernel : str or Kernel, default="gaussian"
        A distance kernel of finite integral (:mod:`attnpool.kernels`; radial in several
        dimensions, or a ``-product`` kernel).
    bandwidth : float, array of shape (n_features,), "scott", "silverman", "normal_reference",
        "cv_ml", "cv_ls" or "isj", default="scott"
        Numbers, a rule of thumb of the data (Scott's by default, as statsmodels'
        ``KDEUnivariate`` and SciPy's ``gaussian_kde``: a fixed 1.0 flattened
        Old Faithful's two modes), or likelihood or least-squares cross-validation
        (:func:`select_density_bandwidth`), as the command line's ``density`` defaults to.
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

    References
    ----------
    Rosenblatt, M. (1956). Remarks on some nonparametric estimates of a density
    function. *Annals of Mathematical Statistics* 27(3), 832–837. Parzen, E. (1962). On
    estimation of a probability density function and mode. *Annals of Mathematical
    Statistics* 33(3), 1065–1076. Li, Q. & Racine, J. (2007). *Nonparametric
    Econometrics*, chapters 1–4. Princeton University Press.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> X = data.x_train[:, None]
    >>> density = attnpool.KernelDensity(bandwidth="cv_ml").fit(X)
    >>> density.bandwidth_.round(3), density.score_samples([[2.5]]).round(3)
    (array([0.201]), array([-1.33]))
    """

    n_features_in_: int

    def __init__(
        self,
        kernel: KernelSpec = "gaussian",
        bandwidth: Bandwidth = "scott",
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
            check_choice(self.bandwidth, "bandwidth", ("scott", "silverman", *DENSITY_SELECTORS))
            if X.shape[0] < 2:
                raise ValueError(
                    f"X: a bandwidth rule needs at least 2 samples; received n_samples={X.shape[0]}"
                )
            if self.bandwidth in DENSITY_SELECTORS:
                found = select_density_bandwidth(
                    X, method=self.bandwidth, kernel=self.kernel,
                    var_type=fitted_var_type(self, self.var_type), weights=weights,
                )  # fmt: skip
                self.bandwidth_ = found.bandwidth
            else:
                self.bandwidth_ = rule_of_thumb(
                    X, method=self.bandwidth, kernel=self.kernel, weights=weights,
                    var_type=fitted_var_type(self, self.var_type),
                )  # fmt: skip
        else:
            self.bandwidth_ = np.asarray(check_bandwidth(self.bandwidth, X.shape[1]), float)
        self.X_train_, self._weights = X, weights
        log_density(X[:1], X[:1], kernel=self.kernel, bandwidth=self.bandwidth_,
                    var_type=fitted_var_type(self, self.var_type))  # the checks  # fmt: skip
        return self

    def score_samples(self, X: ArrayLike) -> np.ndarray:
        """Log density ``(n,)`` at each row of ``X``."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return log_density(
            self.X_train_, X, kernel=self.kernel, bandwidth=self.bandwidth_,
            weights=self._weights, var_type=fitted_var_type(self, self.var_type),
            method=self.method,
        )  # fmt: skip

    def score(self, X: ArrayLike, y: ArrayLike | None = None) -> float:
        """Total log likelihood of ``X`` under the estimate."""
        return float(np.sum(self.score_samples(X)))

    def sample(self, n_samples: int = 1, random_state: int | None = None) -> np.ndarray:
        """``(n_samples, n_features)`` draws: a training row (in proportion to its weight)
        plus the kernel's noise — a normal of standard deviation ``h`` (Gaussian), or a
        point uniform in the ball of radius ``h`` (boxcar)."""
        check_is_fitted(self)
        var_type = fitted_var_type(self, self.var_type)
        if var_type is not None and set(var_type) != {"c"}:
            raise ValueError(
                f"var_type: sample draws from continuous estimates; received var_type={var_type!r}"
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
    (:func:`attnpool.bandwidth.plug_in.isj_bandwidth`; ``weights`` taken), converted to
    other kernels by their canonical bandwidths. ``progress``: called ``(done, total)`` as
    the search's grid and its refinement finish.

    Parameters
    ----------
    X : array of shape (n,) or (n, d)
    method : {"cv_ml", "cv_ls", "normal_reference", "isj"}
    kernel : str or Kernel
    var_type : str, optional
    weights : array of shape (n,), optional
        Observation weights: the rule of thumb is that of the sample repeating row ``i``
        ``w_i`` times; cross-validation leaves each row out whole (identical rows merged
        into one of their total weight first) and weighs its terms by ``w_i``.
    progress : callable ``(done, total)``, optional

    Returns
    -------
    BandwidthSelection

    References
    ----------
    Hall, P. (1987). On Kullback–Leibler loss and density estimation. *Annals of
    Statistics* 15(4), 1491–1519. Rudemo, M. (1982). Empirical choice of histograms and
    kernel density estimators. *Scandinavian Journal of Statistics* 9(2), 65–78. Botev,
    Z. I., Grotowski, J. F. & Kroese, D. P. (2010). Kernel density estimation via
    diffusion. *Annals of Statistics* 38(5), 2916–2957.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.select_density_bandwidth(data.x_train, method="cv_ml").bandwidth.round(3)
    array([0.201])
    """
    check_choice(method, "method", DENSITY_SELECTORS)
    x = np.asarray(check_points(X, "X"), np.float64)
    x, _, weights = positive_rows(x, x[:, :1], weights)  # rows of weight 0 are not in it
    if x.shape[0] < 3:
        raise ValueError(
            f"X: bandwidth selection needs at least 3 rows; received n_samples={x.shape[0]}"
        )
    model = model_for(x, kernel=kernel, var_type=var_type)
    cont = list(model.continuous)
    if method == "isj":
        from ..bandwidth.plug_in import isj_bandwidth

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
        return BandwidthSelection(normal_reference(x, model, weights), math.nan, method, NO_GRID)
    if weights is not None:  # identical rows are one observation, left out together
        x, _, weights = merged_rows(x, x[:, :1], weights)
        model = model_for(x, kernel=kernel, var_type=var_type)

    columns = MixedColumns(x, model.var_type, model.kernel)
    # (validated once: the search keeps h positive and finite)
    by_fgt = method == "cv_ml" and weights is None and by_expansions(x, columns)
    expanded = ExpandedLikelihood(x) if by_fgt else None
    share = None if weights is None else weights / np.sum(weights)

    def objective(h: Any) -> float:
        if method == "cv_ls":
            return least_squares_criterion(x, h, kernel, var_type, weights)
        if expanded is not None:
            return expanded(h)
        values = loo_log_density(x, h, kernel, var_type, weights)
        if not np.all(np.isfinite(values)):
            return np.inf
        return float(-np.mean(values) if share is None else -(share @ values))

    estimate = None if expanded is None else expanded.estimate
    return search(objective, x, model, method, progress, grid_objective=estimate)


#: The ``grid`` of a selection without a search.
NO_GRID = (np.array([]), np.array([]))


def normal_reference(x: np.ndarray, model: Any, weights: Any = None) -> np.ndarray:
    """statsmodels' ``normal_reference``: ``1.06 σ n^(−1/(4+q))`` for each continuous column
    of ``x (n, q)`` (``σ`` with ``ddof=0``; ``q`` counts every column), converted to the
    model's kernel by the canonical bandwidths; ``λ = 0.1`` for categorical columns. With
    observation ``weights``, the sample that repeats row ``i`` ``w_i`` times: ``n = Σ w``,
    the weighted ``σ``."""
    cont = list(model.continuous)
    n = x.shape[0] if weights is None else float(np.sum(weights))
    scale = rule_from_spread(np.ones(x.shape[1]), n, model.kernel) / 1.059
    mean = np.average(x, axis=0, weights=weights)
    spread = np.sqrt(np.average((x - mean) ** 2, axis=0, weights=weights))
    start = np.full(x.shape[1], CATEGORICAL_START)
    start[cont] = (1.06 * spread * scale)[cont]
    return start


def search(
    objective: Callable[[np.ndarray], float],
    x: np.ndarray,
    model: Any,
    method: str,
    progress: Callable[[int, int], None] | None = None,
    grid_objective: Callable[[np.ndarray], float] | None = None,
) -> BandwidthSelection:
    """The bandwidths of ``x (n, q)``'s columns minimising ``objective(h)``: the
    regressions' grid of multiples of Scott's rule (log-bandwidths; categorical columns
    along the same line as logits, in the grid's steps about ``λ = 0.1``), refined by
    the host search. ``grid_objective``: an estimate of ``objective`` that ranks the grid
    (:func:`attnpool.bandwidth.search.host_search`). A
    :class:`~attnpool.bandwidth.BandwidthSelection`."""

    start = rule_of_thumb(x, method="scott", kernel=model.kernel, var_type=model.var_type)
    floor = np.zeros(x.shape[1])
    floor[list(model.continuous)] = bandwidth_floor(x[:, list(model.continuous)])
    # three quarters of the grid at least above the floor
    start = np.maximum(start, floor / GRID[len(GRID) // 4])
    thetas = np.tile(to_theta(start, model), (len(GRID), 1))
    thetas[:, list(model.continuous)] += np.log(GRID)[:, None]
    step = math.log(GRID[1] / GRID[0])
    line = step * (np.arange(len(GRID)) - (len(GRID) - 1) / 2)
    thetas[:, list(model.categorical)] += line[:, None]

    def above_floor(criterion: Callable[[np.ndarray], float]) -> Callable[[np.ndarray], float]:
        # below half the resolution of tied values, a criterion only sees the ties
        def bounded(theta: np.ndarray) -> float:
            h = bandwidth_of(theta, model)
            return math.inf if np.any(h < floor) else criterion(h)

        return bounded

    counted = Counted(above_floor(objective))
    estimated = None if grid_objective is None else Counted(above_floor(grid_objective))
    theta, value, objectives = host_search(
        counted, thetas, GRID, progress,
        smooth=not model.kernel.compact, grid_objective=estimated,
    )  # fmt: skip
    theta, value = _categorical_edges(counted, theta, value, model)
    calls = counted.calls + (0 if estimated is None else estimated.calls)
    bandwidth = bandwidth_of(theta, model)
    on_floor = np.flatnonzero((floor > 0) & (bandwidth <= floor * FLOOR_REACHED))
    if on_floor.size:
        warnings.warn(
            f"bandwidth: the {method} criterion still falls at half the resolution of the "
            f"tied values of column(s) {on_floor.tolist()} (bandwidth "
            f"{', '.join(f'{h:.4g}' for h in bandwidth[on_floor])}): that is the search's "
            "floor, not an optimum; with so many ties prefer 'normal_reference' or 'cv_ml'",
            TiedDataWarning,
            stacklevel=3,
        )
    return BandwidthSelection(bandwidth, value, method, (GRID, objectives), True, calls)


#: A searched bandwidth within this factor of its column's floor has reached it.
FLOOR_REACHED = 1.001


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
