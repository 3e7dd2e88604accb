"""scikit-learn regressors: Nadaraya–Watson and local linear.

Small fits run on the NumPy engine and import neither JAX nor scikit-learn; the
compiled engines are imported when a fit first needs them.

Each ``__init__`` only stores its parameters; ``fit`` chooses the bandwidth
(``"cv"`` by default: exact leave-one-out cross-validation, see
:mod:`attnpool.bandwidth`) and returns ``self``; fitted attributes end in ``_``.

>>> import numpy as np
>>> from attnpool import NadarayaWatson
>>> X = np.linspace(0, 5, 60)[:, None]; y = np.sin(X[:, 0])
>>> model = NadarayaWatson(bandwidth=0.2).fit(X, y)
>>> model.bandwidth_
array([0.2])
>>> model.predict([[2.5]]).round(2)
array([0.59])
"""

from __future__ import annotations

from typing import Any, Literal, Self, overload

import numpy as np

from .._support.estimator_api import (
    MultiOutputRegressor,
    check_is_fitted,
    check_numeric_targets,
    is_dask,
    validate_data,
)
from .._support.frames import fitted_var_type
from .._support.hints import ArrayLike, Bandwidth, KernelSpec, MethodSpec, NDArray, Predictions
from ..sums.observation_weights import positive_rows
from . import estimation
from . import pairs as pair_regression
from .summary import FitSummary, r_squared, summarised

__all__ = ["LocalLinear", "NadarayaWatson"]


class _LocalRegression(MultiOutputRegressor):
    _degree = 0
    n_features_in_: int

    def __init__(
        self,
        kernel: KernelSpec = "gaussian",
        bandwidth: Bandwidth = "cv",
        *,
        var_type: str | None = None,
        empty: str = "warn",
        block_size: int | None = None,
        method: MethodSpec = "auto",
        bandwidth_type: str = "fixed",
    ) -> None:
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.var_type = var_type
        self.empty = empty
        self.block_size = block_size
        self.method = method
        self.bandwidth_type = bandwidth_type

    def _options(self) -> estimation.FitOptions:
        return estimation.FitOptions(
            self.kernel, self._degree, fitted_var_type(self, self.var_type), self.empty,
            self.block_size, self.method, type(self).__name__, self.bandwidth_type,
        )  # fmt: skip

    def _by_pairs(self) -> bool:
        return pair_regression.is_pair_fit(self.kernel, self.bandwidth_type)

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> Self:
        """Store the training data and choose the bandwidth.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        sample_weight : array-like of shape (n_samples,), optional
            Observation weights ``w_i ≥ 0``: a row counts ``w_i`` times — in the fit
            (its kernel weight times ``w_i``), in the bandwidth's criterion and rule of
            thumb — so integer weights fit what the repeated rows fit. Rows of weight 0
            are left out.

        Returns
        -------
        self
        """
        if is_dask(X, y, sample_weight):
            if self._by_pairs():
                raise ValueError(
                    "X: Dask inputs take fixed bandwidths and non-negative kernels; received "
                    f"kernel={self.kernel!r}, bandwidth_type={self.bandwidth_type!r}"
                )
            from ..distributed.selection import fit_on_dask

            fit_on_dask(self, X, y, sample_weight)
            return self
        X, y = validate_data(self, X, y, multi_output=True, y_numeric=True, dtype=np.float64)
        check_numeric_targets(y)  # y_numeric converts object arrays, not text ones
        X, y, weights = positive_rows(X, y, sample_weight, name="sample_weight")
        options = self._options()
        self.bandwidth_, scores = estimation.fitted_bandwidth(X, y, self.bandwidth, options,
                                                              weights=weights)  # fmt: skip
        for name, value in scores.items():
            setattr(self, name, value)
        self.X_train_, self.y_train_, self._weights = X, y, weights
        self.backend_ = estimation.planned_backend(X, y, self.bandwidth_, options, weights=weights)
        self._chosen_by = self.bandwidth if isinstance(self.bandwidth, str) else "fixed"
        self._in_sample: np.ndarray | None = None
        self._model_kept = (options, estimation.fit_model(X, options))
        return self

    @property
    def r_squared_(self) -> float | np.ndarray:
        """R² of the in-sample fit as R's np reports it (Doksum & Samarov: the squared
        correlation of fitted and observed about the mean response,
        :func:`attnpool.regression.summary.r_squared`): a float, or one per output. Computed on
        first access."""
        check_is_fitted(self)
        r2 = r_squared(self.y_train_, self._fitted_training_values(), self._weights)
        return float(r2[0]) if np.ndim(self.y_train_) == 1 else r2

    def summary(self) -> FitSummary:
        """Bandwidths and how they were chosen, the criterion's value, R² (np's beside
        scikit-learn's, of the in-sample fit), the data, kernel and method; ``print`` it
        for a table."""
        check_is_fitted(self)
        return summarised(self, fitted_var_type(self, self.var_type))

    def _fitted_training_values(self) -> Any:
        if getattr(self, "_in_sample", None) is None:  # (rows of numbers: no names to check)
            self._in_sample = np.asarray(self._predicted(self.X_train_))
        return self._in_sample

    @overload
    def predict(self, X: ArrayLike, return_std: Literal[False] = False) -> Predictions: ...

    @overload
    def predict(self, X: ArrayLike, return_std: Literal[True]) -> tuple[NDArray, NDArray]: ...

    def predict(self, X: ArrayLike, return_std: bool = False) -> Any:
        """The fitted regression function at ``X``; shape (n,) or (n, n_outputs).

        With ``return_std=True`` also the asymptotic pointwise standard error
        (:mod:`attnpool.inference.bands`), of the same shape.
        """
        check_is_fitted(self)
        if is_dask(X, self.X_train_):
            if return_std:
                raise ValueError("return_std: not available for Dask inputs; received True")
            from .. import distributed

            return distributed.attention_pool(X, self.X_train_, self.y_train_, kernel=self.kernel,
                                              bandwidth=self.bandwidth_,
                                              weights=self._weights)  # fmt: skip
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._predicted(X, return_std)

    def _predicted(self, X: np.ndarray, return_std: bool = False) -> Any:
        """:meth:`predict` of validated rows ``X (n, d)``."""
        if return_std:
            pair_regression.refuse(self.kernel, self.bandwidth_type, "return_std")
        options = self._options()
        model = self._fitted_model(options)
        fit = estimation.predict(self.X_train_, self.y_train_, X, self.bandwidth_, options,
                                 weights=self._weights, model=model)  # fmt: skip
        if not return_std:
            return fit
        return fit, self._band(X, method="asymptotic").std

    def _fitted_model(self, options: estimation.FitOptions) -> Any:
        """The model ``fit`` kept (:func:`estimation.fit_model`), while ``options`` hold."""
        kept = self.__dict__.get("_model_kept")
        if kept is None or kept[0] != options:
            return estimation.fit_model(self.X_train_, options)
        return kept[1]

    def predict_interval(
        self,
        X: ArrayLike,
        level: float = 0.95,
        *,
        method: str = "asymptotic",
        n_boot: int = 500,
        bootstrap: str = "wild",
        seed: int = 0,
    ) -> tuple[NDArray, NDArray]:
        """A pointwise ``level`` confidence band at ``X``: ``(lower, upper)``, each shaped
        like :meth:`predict`'s output.

        ``method="asymptotic"`` (continuous inputs) or ``"bootstrap"`` (``bootstrap="wild"``
        or ``"residual"``, ``n_boot`` replicates, seeded); see :mod:`attnpool.inference.bands`
        for the formulas and the behaviour near the boundaries.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        band = self._band(X, level=level, method=method, n_boot=n_boot, bootstrap=bootstrap,
                          seed=seed)  # fmt: skip
        return band.lower, band.upper

    def _band(self, X: Any, **options: Any) -> Any:
        from ..inference.bands import confidence_band

        pair_regression.refuse(self.kernel, self.bandwidth_type, "predict_interval")
        if self._weights is not None:
            raise ValueError(
                "sample_weight: confidence bands (return_std, predict_interval) are computed "
                "for unweighted fits; this one was fitted with sample_weight"
            )
        return confidence_band(self.X_train_, self.y_train_, X, kernel=self.kernel,
                               bandwidth=self.bandwidth_, degree=self._degree,
                               var_type=fitted_var_type(self, self.var_type),
                               **options)  # fmt: skip


class NadarayaWatson(_LocalRegression):
    """Nadaraya–Watson (local constant) kernel regression — attention pooling of ``y``.

    .. math:: \\hat g(x) = \\sum_i K_h(x - x_i) y_i \\Big/ \\sum_j K_h(x - x_j)

    Parameters
    ----------
    kernel : str, Kernel or callable, default="gaussian"
        See :mod:`attnpool.kernels`.
    bandwidth : {"cv", "aicc", "scott", "silverman", "dpill"}, float or array of shape (n_features,)
        A selector (``"dpill"``: the local linear plug-in bandwidth, one Gaussian
        column, :func:`attnpool.local_linear_plug_in_bandwidth`) or fixed bandwidths
        (``λ ∈ (0, 1)`` for categorical columns); with
        nearest-neighbour bandwidths, ``"cv"`` or the numbers of neighbours ``k``.
        statsmodels' names ``"cv_ls"`` and ``"aic"`` are taken for ``"cv"`` and
        ``"aicc"`` (the same criteria).
    var_type : str, optional
        One letter per column: ``c`` continuous, ``o`` ordered, ``u`` unordered
        (as statsmodels). Default: all continuous.
    empty : {"warn", "nearest", "nan", "raise"}, default="warn"
        What a query with no training point inside a compact kernel's support gets:
        its nearest training point's response, with one
        :class:`~attnpool.EmptyNeighbourhoodWarning` per call counting such queries
        (``"warn"``: predictions stay finite, as scikit-learn's scorers need), the same
        silently (``"nearest"``), NaN with that warning (``"nan"``), or an error.
    block_size : int, optional
        Stream the training points in blocks of this size.
    method : str, Binned or TopK, default="auto"
        How predictions pool (see :func:`attnpool.attention_pool`); methods other
        than ``"auto"``, ``"dense"`` and ``"stream"`` need continuous columns and a
        local-constant fit. The CV search uses the method's own pooling where it has
        one (``"binned"`` for one column, ``"sparse"``) and the exact search otherwise.
    bandwidth_type : {"fixed", "generalized_nn", "adaptive_nn"}, default="fixed"
        R np's ``bwtype``: one bandwidth per column, or per column the distance to the
        ``k``-th nearest training value of each query (``"generalized_nn"``) or of each
        training point (``"adaptive_nn"``, whose kernel is then ``K(u) / h``); see
        :mod:`attnpool.regression.pairs`. Continuous columns; with higher-order kernels
        (``"gaussian-order4"`` …) they are fitted pair by pair (:mod:`attnpool.sums.pairs`)
        and give predictions, scores, summaries and local-linear slopes.

    Attributes
    ----------
    bandwidth_ : ndarray of shape (n_features,)
    cv_score_ : float
        The leave-one-out mean squared error (``bandwidth="cv"``)
    aicc_ : float
        The AICc (``bandwidth="aicc"``)
    r_squared_ : float or ndarray of shape (n_outputs,)
        R² as R's np reports it
    backend_ : str
        What computes the fit at the training rows, resolved in ``fit`` (as scikit-learn
        resolves ``algorithm="auto"``): the method named, ``"pairs"``, ``"dask"`` or
        ``auto``'s choice by the planner; ``predict`` asks it for its own size
    n_features_in_ : int

    See Also
    --------
    summary : The attributes with the data, the kernel and the method.
    marginal_effects : The fit's gradient.
    LocalLinear : Less bias at the boundaries.

    References
    ----------
    Nadaraya, E. A. (1964). On estimating regression. *Theory of Probability & Its
    Applications* 9(1), 141–142. Watson, G. S. (1964). Smooth regression analysis.
    *Sankhyā A* 26(4), 359–372. Racine, J. & Li, Q. (2004). Nonparametric estimation of
    regression functions with both categorical and continuous data. *Journal of
    Econometrics* 119(1), 99–130.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> X = data.x_train[:, None]
    >>> model = attnpool.NadarayaWatson().fit(X, data.y_train)    # bandwidth by CV
    >>> model.bandwidth_.round(3), round(model.cv_score_, 3)
    (array([0.255]), 0.269)
    >>> model.predict([[2.0]]).round(3)
    array([3.784])
    """

    _degree = 0

    def marginal_effects(self, X: ArrayLike) -> NDArray:
        """The gradient of the fit at ``X``: ``(n, n_features)`` or ``(n, n_features,
        n_outputs)`` — exact derivatives of the Nadaraya–Watson fit with the kernel's own
        derivative (:func:`attnpool.regression.fit_parts.local_constant_slopes`); continuous
        columns.
        """
        check_is_fitted(self)
        pair_regression.refuse(self.kernel, self.bandwidth_type, "marginal_effects")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        var_type = fitted_var_type(self, self.var_type)
        if var_type and set(var_type) != {"c"}:
            raise ValueError(
                "var_type: the local-constant fit's marginal effects are derivatives, "
                f"defined for continuous columns ('c'); received var_type={var_type!r} "
                "(LocalLinear gives slopes for every column)"
            )
        from .fit_parts import local_constant_slopes

        return np.asarray(
            local_constant_slopes(
                self.X_train_,
                self.y_train_,
                X,
                kernel=self.kernel,
                bandwidth=self.bandwidth_,
                empty=self.empty,
                block_size=self.block_size,
                weights=self._weights,
            )
        )

    def attention_weights(self, X: ArrayLike) -> NDArray:
        """Attention weights of queries ``X`` over the training points, ``(n_queries, n_train)``
        (the rows of positive weight, with ``sample_weight``)."""
        check_is_fitted(self)
        pair_regression.refuse(self.kernel, self.bandwidth_type, "attention_weights")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        from .fit_parts import weight_matrix

        return weight_matrix(
            self.X_train_,
            X,
            kernel=self.kernel,
            bandwidth=self.bandwidth_,
            var_type=fitted_var_type(self, self.var_type),
            empty=self.empty,
            weights=self._weights,
        )


class LocalLinear(_LocalRegression):
    """Local linear kernel regression: a weighted least-squares line at each query.

    Less bias than Nadaraya–Watson at the boundaries and where the inputs are
    unevenly spread; reproduces linear functions exactly. Attributes as
    :class:`NadarayaWatson`.

    Parameters
    ----------
    kernel, bandwidth, var_type, empty, block_size, method, bandwidth_type
        As :class:`NadarayaWatson` takes them (``bandwidth="aicc"``: the criterion
        Hurvich, Simonoff & Tsai made for local linear fits).

    References
    ----------
    Fan, J. & Gijbels, I. (1996). *Local Polynomial Modelling and Its Applications*.
    Chapman & Hall. Hurvich, C. M., Simonoff, J. S. & Tsai, C.-L. (1998). Smoothing
    parameter selection in nonparametric regression using an improved Akaike
    information criterion. *JRSS B* 60(2), 271–293.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> X = data.x_train[:, None]
    >>> model = attnpool.LocalLinear(bandwidth="aicc").fit(X, data.y_train)
    >>> model.bandwidth_.round(3), model.predict([[2.0]]).round(3)
    (array([0.38]), array([3.652]))
    >>> model.marginal_effects([[2.0]]).round(2)                 # the local slope
    array([[0.31]])
    """

    _degree = 1

    def marginal_effects(self, X: ArrayLike) -> NDArray:
        """The gradient of the fit at ``X``: ``(n, n_features)`` or ``(n, n_features, n_outputs)``.

        The same as the second output of statsmodels' ``KernelReg(reg_type="ll").fit``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        if self._by_pairs():
            return np.asarray(pair_regression.estimator_prediction(
                self.X_train_, self.y_train_, X, self.bandwidth_, self._options(),
                weights=self._weights, return_slopes=True,
            ))  # fmt: skip
        from . import local_regression

        _, slopes = local_regression(
            self.X_train_,
            self.y_train_,
            X,
            kernel=self.kernel,
            bandwidth=self.bandwidth_,
            degree=1,
            var_type=fitted_var_type(self, self.var_type),
            empty=self.empty,
            block_size=self.block_size,
            return_slopes=True,
            weights=self._weights,
        )
        return np.asarray(slopes)
