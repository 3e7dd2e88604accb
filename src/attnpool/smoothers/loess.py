"""``Loess``: R's ``loess`` as a scikit-learn estimator, exact (``surface = "direct"``)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Self

import numpy as np

from .. import kernels
from .._support.estimator_api import (
    BaseEstimator,
    RegressorMixin,
    check_is_fitted,
    is_dask,
    validate_data,
)
from .._support.hints import ArrayLike
from .._support.units import response_unit
from ..sums.observation_weights import positive_rows
from .loess_fit import LoessResult, fit_loess, fits_and_spread, fits_at, prior_in_unit
from .neighbourhoods import check_several_points, radii, trimmed_scale
from .span_selection import CRITERIA, criteria_in_data_units, select_span

__all__ = ["Loess"]

_FAMILIES = ("gaussian", "symmetric")
_STATISTICS = ("exact", "approximate")


class Loess(RegressorMixin, BaseEstimator):
    """Local polynomial regression on nearest neighbours (Cleveland's LOESS), as R's
    ``loess`` computes it with ``surface = "direct"``.

    At each point a polynomial of ``degree`` in the predictors is fitted by weighted
    least squares to its ``⌊span · n⌋`` nearest neighbours, weighted by the tricube of
    the distance in units of the farthest one's (by ``sample_weight`` too, and by the
    bisquare of the residuals in ``iterations`` fits for the ``"symmetric"`` family).
    With several predictors each is first divided by its 10%-trimmed standard deviation.
    The fit is linear in ``y``, ``ŷ = L y``; its statistics give the standard errors and
    ``t`` intervals of R's ``predict.loess(se = TRUE)``.

    Parameters
    ----------
    span : float or {"gcv", "aicc", "cv"}
        The share of the points in each neighbourhood (above 1: all of them, the radius
        times ``√span``), or a criterion to choose it by over ``spans``: generalised CV
        ``n Σ w r² / (n − tr L)²``, Hurvich, Simonoff & Tsai's AICc, or leave-one-out CV
        ``Σ (rᵢ / (1 − Lᵢᵢ))²``. A constant response, which every span fits exactly,
        takes the largest span with a :class:`attnpool.bandwidth.ConstantResponseWarning`.
    degree : {0, 1, 2}
        Of the local polynomial (2: squares and cross products included).
    family : {"gaussian", "symmetric"}
        Least squares, or ``iterations`` fits reweighted by the bisquare of the residuals
        (robust to outliers).
    kernel : str
        Any compact kernel of :mod:`attnpool.kernels` (tricube, R's, the default).
    normalize : bool
        Divide each of several predictors by its 10%-trimmed standard deviation.
    iterations : int
        Fits of the ``"symmetric"`` family (R's ``loess.control(iterations = 4)``).
    spans : array_like, optional
        The spans a criterion chooses among (default 0.1, 0.15, …, 1).
    neighbours : int, optional
        The neighbours of each fit, ``k``, instead of ``span`` (``span_`` is then
        ``k / n``).
    statistics : {"exact", "approximate"}
        ``δ₁`` and ``δ₂`` from the operator (beyond 4000 rows the small part of ``δ₂``
        estimated from 16 random sign vectors), or from ``tr L`` by Cleveland &
        Grosse's interpolation formulas, as R's default ``statistics = "approximate"``
        (a fit's cost, no more). ``tr L`` is exact either way.

    Attributes
    ----------
    span_ : float
        The span used.
    fitted_values_, residuals_ : ndarray of shape (n_samples,)
    robustness_weights_ : ndarray of shape (n_samples,)
        The bisquare weights of the last fit (ones for ``"gaussian"``).
    trace_hat_, one_delta_, two_delta_ : float
        ``tr L``, ``δ₁ = tr (I − L)ᵀ(I − L)``, ``δ₂ = tr ((I − L)ᵀ(I − L))²``.
    enp_ : float
        The equivalent number of parameters, ``δ₁ + 2 tr L − n`` (R's ``enp``).
    residual_scale_ : float
        ``s = √(Σ w r² / δ₁)`` (pseudovalues' residuals for ``"symmetric"``).
    df_ : float
        ``δ₁² / δ₂``, the degrees of freedom of the intervals.
    divisor_ : ndarray of shape (n_features,)
        What each predictor was divided by.
    criterion_ : ndarray or None
        The criterion at each of ``spans`` when a span was chosen.

    References
    ----------
    Cleveland, W. S. & Devlin, S. J. (1988). Locally weighted regression: an approach to
    regression analysis by local fitting. *JASA* 83, 596–610. Cleveland, W. S., Grosse,
    E. & Shyu, W. M. (1992). Local regression models. In *Statistical Models in S*, ch. 8.

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> x = np.linspace(0.0, 6.0, 60)
    >>> model = attnpool.Loess(span=0.5).fit(x[:, None], np.sin(x))
    >>> fit, se = model.predict([[3.0]], return_std=True)
    >>> bool(abs(fit[0] - np.sin(3.0)) < 1e-3), round(model.enp_, 2)
    (True, 6.32)
    """

    def __init__(
        self,
        span: float | str = 0.75,
        degree: int = 2,
        family: str = "gaussian",
        kernel: str = "tricube",
        normalize: bool = True,
        iterations: int = 4,
        spans: ArrayLike | None = None,
        neighbours: int | None = None,
        statistics: str = "exact",
    ) -> None:
        self.span = span
        self.degree = degree
        self.family = family
        self.kernel = kernel
        self.normalize = normalize
        self.iterations = iterations
        self.spans = spans
        self.neighbours = neighbours
        self.statistics = statistics

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> Self:
        """Fit at every row of ``X`` (shape (n, d)) to ``y`` (shape (n,)).

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
        y : array_like of shape (n_samples,)
        sample_weight : array_like of shape (n_samples,), optional
            Prior weights (R's ``weights``: ``y_i`` has variance ``σ² / w_i``); rows of
            weight 0 are left out. They are not frequencies: a neighbourhood counts
            rows, so a weight of 2 is not a repeated row.

        Returns
        -------
        Loess
            The fitted estimator.
        """
        self._check_parameters()
        self.criterion_ = None
        if is_dask(X) or is_dask(y) or is_dask(sample_weight):
            from ..distributed.loess import distributed_loess, gathered

            found = distributed_loess(self, X, y, sample_weight)
            if found is None:  # a small problem, whose exact δ₂ needs the operator
                return self.fit(*gathered(X, y, sample_weight))
            training, result, self._robust_parts = found
            self._training: Any = training
            return self._fitted(result)
        self._training = None
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        X, y, weights = positive_rows(X, y[:, None], sample_weight, name="sample_weight")
        y = y[:, 0]
        if y.shape[0] < 2:
            raise ValueError(f"Loess needs at least 2 samples; got n_samples = {y.shape[0]}")
        check_several_points(X.min(axis=0), X.max(axis=0))
        prior, self._prior_exponent = prior_in_unit(weights, y.shape[0])
        d = X.shape[1]
        self.divisor_ = trimmed_scale(X) if self.normalize and d > 1 else np.ones(d)
        self._origin = X.min(axis=0)
        scaled = self._scaled_rows(X)
        kernel = self._kernel()
        iterations = 1 if self.family == "gaussian" else int(self.iterations)
        # the fit is equivariant to y's shift and scale: centred, a constant y is fitted
        # exactly; in a power-of-two unit, the squared residuals of y ~ 1e±200 neither
        # overflow nor vanish
        self._level = float(np.median(y))
        self._unit = response_unit(y - self._level)
        self._scaled, self._y, self._prior = scaled, (y - self._level) / self._unit, prior

        def choose(spans: np.ndarray) -> tuple[float, np.ndarray]:
            span, values = select_span(scaled, self._y, prior, spans, self.degree, kernel,
                                       str(self.span))  # fmt: skip
            return span, criteria_in_data_units(values, str(self.span), self._unit,
                                                self._prior_exponent)  # fmt: skip

        self._resolve_span(y.size, choose)
        radius = radii(scaled, scaled, self.span_, self.neighbours)
        result = fit_loess(scaled, self._y, prior, radius, self.degree, kernel, iterations,
                           self.statistics, prior_exponent=self._prior_exponent)  # fmt: skip
        return self._fitted(result)

    def _resolve_span(
        self, n: int, choose: Callable[[np.ndarray], tuple[float, np.ndarray]]
    ) -> None:
        """``span_`` from ``neighbours``, a number, or ``choose(spans)`` for a criterion
        (which also gives ``criterion_``)."""
        if self.neighbours is not None:
            if not (isinstance(self.neighbours, (int, np.integer)) and 1 <= self.neighbours <= n):
                raise ValueError(
                    f"neighbours must be a whole number from 1 to n_samples = {n}; got "
                    f"{self.neighbours!r}"
                )
            self.span_ = int(self.neighbours) / n
        elif isinstance(self.span, str):
            spans = np.arange(2, 21) / 20 if self.spans is None else np.asarray(self.spans, float)
            self.span_, self.criterion_ = choose(spans)
        else:
            self.span_ = float(self.span)

    def _fitted(self, result: LoessResult) -> Self:
        self.fitted_values_ = result.fitted * self._unit + self._level
        self.residuals_ = result.residuals * self._unit
        self.robustness_weights_ = result.robust
        self.trace_hat_ = result.trace_hat
        self.one_delta_ = result.one_delta
        self.two_delta_ = result.two_delta
        self.enp_ = result.enp
        # (R's s = √(Σ w r² / δ₁) scales with the prior weights, held in units of 2ᵉ)
        root = float(np.ldexp(1.0, self._prior_exponent // 2))
        self.residual_scale_ = result.residual_scale * self._unit * root
        self.df_ = result.df
        if result.interpolates:
            warnings.warn(
                f"Loess interpolates the data (span={self.span_!r} leaves each point fewer "
                "neighbours than the polynomial has terms): no residual scale, so no "
                "standard errors or intervals; take a larger span for them",
                RuntimeWarning,
                stacklevel=3,
            )
        return self

    def predict(self, X: ArrayLike, return_std: bool = False) -> Any:
        """The fit at the rows of ``X`` (shape (m, d)), and with ``return_std`` its
        standard error ``s √(Σⱼ Lᵢⱼ² / wⱼ)`` (R's ``se.fit``).

        Parameters
        ----------
        X : array_like of shape (m, n_features)
            A Dask array is predicted block by block of rows, lazily (the fitted data
            travel with each task).
        return_std : bool
            Return ``(fit, se)`` instead of the fit alone.

        Returns
        -------
        ndarray of shape (m,), or a pair of them (Dask arrays for a Dask ``X``)

        Notes
        -----
        The fit at a new point is the last fit's (weighted by the prior weights × the
        robustness weights), so that the rows of ``X`` give back ``fitted_values_``. R's
        ``predict.loess`` and netlib's agree with it without prior weights; with them,
        both weight a robust fit's new points by the prior weights twice, and netlib
        leaves the robustness weights out of the standard errors.
        """
        check_is_fitted(self)
        if self._training is not None:
            from ..distributed.loess import distributed_predict

            return distributed_predict(self, X, return_std)
        if is_dask(X):
            return self._predict_blocks(X, return_std)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        queries = self._scaled_rows(X)
        radius = radii(self._scaled, queries, self.span_, self.neighbours)
        weights = self._prior * self.robustness_weights_
        kernel = self._kernel()
        if not return_std:
            fits = fits_at(self._scaled, self._y, weights, queries, radius, self.degree, kernel)
            return fits * self._unit + self._level
        if not np.isfinite(self.residual_scale_):
            raise ValueError(
                "return_std: this fit interpolates the data and has no residual scale; "
                "fit with a larger span"
            )
        fits, spread = fits_and_spread(self._scaled, self._y, weights, self._prior, queries,
                                       radius, self.degree, kernel)  # fmt: skip
        return fits * self._unit + self._level, self._held_scale() * np.sqrt(spread)

    def _held_scale(self) -> float:
        """The residual scale in the units the prior weights are held in (``2ᵉ``), which
        the standard errors' ``Σⱼ Lᵢⱼ² / wⱼ`` take."""
        return float(np.ldexp(self.residual_scale_, -(self._prior_exponent // 2)))

    def _predict_blocks(self, X: Any, return_std: bool) -> Any:
        """:meth:`predict` of a Dask array, each block of rows a task."""
        columns = self._scaled.shape[1]
        if X.ndim != 2 or X.shape[1] != columns:
            raise ValueError(
                f"X: expected a Dask array of shape (m, {columns}); received shape {X.shape}"
            )
        rows = X.rechunk({1: -1})
        if not return_std:
            return rows.map_blocks(self.predict, dtype=np.float64, drop_axis=1)

        def block(part: np.ndarray) -> np.ndarray:
            return np.column_stack(self.predict(part, return_std=True))

        both = rows.map_blocks(block, dtype=np.float64, chunks=(rows.chunks[0], (2,)))
        return both[:, 0], both[:, 1]

    def predict_interval(self, X: ArrayLike, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Pointwise ``t`` intervals ``fit ± t_{df} se`` at ``level`` (R's
        ``predict(se = TRUE)`` with ``qt((1 + level) / 2, df)``).

        Parameters
        ----------
        X : array_like of shape (m, n_features)
        level : float
            Coverage, in (0, 1).

        Returns
        -------
        lower, upper : ndarray of shape (m,)
        """
        if not 0.0 < level < 1.0:
            raise ValueError(f"level must lie in (0, 1); got {level!r}")
        from scipy.stats import t

        fits, se = self.predict(X, return_std=True)
        half = t.ppf((1.0 + level) / 2.0, self.df_) * se
        return fits - half, fits + half

    def summary(self) -> str:
        """R's ``print(summary(loess(…)))``: the fit's size, span, degree, family,
        equivalent number of parameters, residual scale and trace of the smoother."""
        check_is_fitted(self)
        label = (
            "Residual Standard Error" if self.family == "gaussian" else "Residual Scale Estimate"
        )
        lines = [
            f"Number of Observations: {self.fitted_values_.shape[0]}",
            f"Equivalent Number of Parameters: {self.enp_:.2f}",
            f"{label}: {self.residual_scale_:.4g}",
            f"Trace of smoother matrix: {self.trace_hat_:.2f}  (exact)",
            "",
            "Control settings:",
            f"  span     :  {self.span_:.4g}",
            f"  degree   :  {self.degree}",
            f"  family   :  {self.family}" + (
                f"   iterations = {self.iterations}" if self.family == "symmetric" else ""
            ),
            "  surface  :  direct",
            f"  normalize:  {bool(self.normalize)}",
        ]  # fmt: skip
        return "\n".join(lines)

    def _scaled_rows(self, X: np.ndarray) -> np.ndarray:
        """``X`` less the training rows' least values, divided by ``divisor_``: a fit
        depends on differences only, and dividing large offsets would round them."""
        return np.asarray((X - self._origin) / self.divisor_)

    def _kernel(self) -> kernels.Kernel:
        kernel = kernels.get(self.kernel)
        if not np.isfinite(kernel.support) or kernel.similarity != "distance":
            raise ValueError(
                f"kernel must be a compact distance kernel (tricube, epanechnikov, …); got "
                f"{self.kernel!r}"
            )
        return kernel

    def _check_parameters(self) -> None:
        if self.degree not in (0, 1, 2) or isinstance(self.degree, bool):
            raise ValueError(f"degree must be 0, 1 or 2; got {self.degree!r}")
        if self.family not in _FAMILIES:
            raise ValueError(f"family must be one of {_FAMILIES}; got {self.family!r}")
        if self.statistics not in _STATISTICS:
            raise ValueError(f"statistics must be one of {_STATISTICS}; got {self.statistics!r}")
        if isinstance(self.span, str):
            if self.span not in CRITERIA:
                raise ValueError(
                    f"span must be a number > 0 or one of {CRITERIA}; got {self.span!r}"
                )
        elif not (isinstance(self.span, (int, float)) and np.isfinite(self.span) and self.span > 0):
            raise ValueError(f"span must be a number > 0 or one of {CRITERIA}; got {self.span!r}")
        if not isinstance(self.iterations, (int, np.integer)) or self.iterations < 1:
            raise ValueError(f"iterations must be a whole number ≥ 1; got {self.iterations!r}")
