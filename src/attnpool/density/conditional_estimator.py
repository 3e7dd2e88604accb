"""The conditional density ``f̂(y | x)`` as a scikit-learn-style estimator, over the
functions of :mod:`attnpool.density.conditional`."""

from __future__ import annotations

import math
from typing import Any, Self

import numpy as np

from .._support.estimator_api import BaseEstimator, check_is_fitted, validate_data
from .._support.frames import fitted_var_type, levels_applied
from .._support.hints import ArrayLike, Bandwidth, KernelSpec
from .conditional import conditional_cdf, conditional_log_density
from .conditional_selection import select_conditional_bandwidth

__all__ = ["ConditionalDensity"]


class ConditionalDensity(BaseEstimator):
    """The conditional density ``f̂(y | x)`` as an estimator (R np's ``npcdens``,
    statsmodels' ``KDEMultivariateConditional``).

    Parameters
    ----------
    kernel : str, default="gaussian"
        The continuous columns' kernel (the Gaussian, or a ``-product`` kernel).
    bandwidth : "cv_ml", "cv_ls", "normal_reference", or numbers for ``x``'s columns then
        ``y``'s
    x_var_type, y_var_type : str, optional
        ``c``, ``o``, ``u`` per column of ``x`` and of ``y``.

    Attributes
    ----------
    bandwidth_ : ndarray of shape (n_x_features,)
        ``x``'s bandwidths
    y_bandwidth_ : ndarray of shape (n_y_features,)
        ``y``'s
    criterion_ : float
        The cross-validation criterion (NaN for given or rule bandwidths)

    References
    ----------
    Hall, P., Racine, J. & Li, Q. (2004). Cross-validation and the estimation of
    conditional probability densities. *JASA* 99(468), 1015–1026.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> X = data.x_train[:, None]
    >>> model = attnpool.ConditionalDensity(bandwidth="normal_reference").fit(X, data.y_train)
    >>> model.bandwidth_.round(3), model.y_bandwidth_.round(3)
    (array([0.735]), array([0.49]))
    >>> model.pdf([[2.0]], [3.5]).round(3)                      # f̂(y = 3.5 | x = 2)
    array([0.476])
    """

    def __init__(
        self,
        kernel: KernelSpec = "gaussian",
        bandwidth: Bandwidth = "cv_ml",
        *,
        x_var_type: str | None = None,
        y_var_type: str | None = None,
    ) -> None:
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.x_var_type = x_var_type
        self.y_var_type = y_var_type

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Keep the sample (``X (n, d)``, ``y (n,) | (n, e)``) and choose the bandwidths.

        Data frames as the regressors take them (text and categorical columns are
        levels, their ``var_type`` letters inferred), for ``y`` too (a ``Series`` or a
        ``DataFrame``)."""
        y = levels_applied(self, y, reset=True, role="y")
        x, yy = validate_data(self, X, y, multi_output=True, y_numeric=True)
        yy = yy.reshape(yy.shape[0], -1)
        d = x.shape[1]
        self._var_types = (
            fitted_var_type(self, self.x_var_type),
            fitted_var_type(self, self.y_var_type, "y"),
        )
        if isinstance(self.bandwidth, str):
            found = select_conditional_bandwidth(
                x, yy, method=self.bandwidth, kernel=self.kernel, x_var_type=self._var_types[0],
                y_var_type=self._var_types[1],
            )  # fmt: skip
            h, self.criterion_ = found.bandwidth, found.objective
        else:
            h = np.asarray(self.bandwidth, np.float64).reshape(-1)
            if h.size != d + yy.shape[1]:
                raise ValueError(
                    f"bandwidth: expected {d + yy.shape[1]} numbers (x's {d} columns, then "
                    f"y's {yy.shape[1]}); received {h.size}"
                )
            self.criterion_ = math.nan
        self.bandwidth_, self.y_bandwidth_ = h[:d], h[d:]
        self.X_train_, self.y_train_ = x, yy
        conditional_log_density(x, yy, x[:1], yy[:1], **self._options())  # the checks
        return self

    def _options(self) -> dict[str, Any]:
        return {"bandwidth": self.bandwidth_, "y_bandwidth": self.y_bandwidth_,
                "kernel": self.kernel, "x_var_type": self._var_types[0],
                "y_var_type": self._var_types[1]}  # fmt: skip

    def score_samples(self, X: ArrayLike, y: ArrayLike) -> np.ndarray:
        """``log f̂(y_i | X_i)``, ``(n,)``."""
        X, y = self._checked(X, y)
        return conditional_log_density(self.X_train_, self.y_train_, X, y, **self._options())

    def pdf(self, X: ArrayLike, y: ArrayLike) -> np.ndarray:
        """``f̂(y_i | X_i)``, ``(n,)``."""
        return np.asarray(np.exp(self.score_samples(X, y)))

    def cdf(self, X: ArrayLike, y: ArrayLike) -> np.ndarray:
        """``F̂(y_i | X_i)``, ``(n,)``."""
        X, y = self._checked(X, y)
        return conditional_cdf(self.X_train_, self.y_train_, X, y, **self._options())

    def _checked(self, X: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(X (k, d), y (k, e))`` of new rows, checked against the fit (feature count and
        names, as scikit-learn checks them)."""
        check_is_fitted(self)
        y = levels_applied(self, y, reset=False, role="y")
        X, yy = validate_data(self, X, y, reset=False, multi_output=True, y_numeric=True)
        return X, yy.reshape(yy.shape[0], -1)

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """The log likelihood ``Σ_i log f̂(y_i | X_i)``."""
        return float(np.sum(self.score_samples(X, y)))
