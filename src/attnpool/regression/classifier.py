"""A kernel classifier for scikit-learn: attention pooling of one-hot labels."""

from __future__ import annotations

from typing import Any, Self

import numpy as np

from .. import kernels
from .._support.estimator_api import BaseEstimator, ClassifierMixin, check_is_fitted, validate_data
from .._support.frames import fitted_var_type
from .._support.hints import ArrayLike, Bandwidth, KernelSpec, MethodSpec, NDArray
from .estimator import NadarayaWatson

__all__ = ["NadarayaWatsonClassifier"]


class NadarayaWatsonClassifier(ClassifierMixin, BaseEstimator):
    """Kernel classifier: attention pooling of one-hot labels gives class probabilities.

    ``predict_proba(x)[c] = Σ_i K_h(x − x_i) [y_i = c] / Σ_j K_h(x − x_j)``.
    The bandwidth selectors minimise the leave-one-out Brier score (squared
    error of the one-hot labels). ``empty`` defaults to ``"nearest"``, so that every
    query gets a class.

    Parameters
    ----------
    kernel, bandwidth, var_type, block_size, method
        As :class:`NadarayaWatson` takes them.
    empty : {"nearest", "warn", "nan", "raise"}, default="nearest"

    Attributes
    ----------
    classes_ : ndarray
    bandwidth_ : ndarray of shape (n_features,)
    backend_ : str
        What computes the probabilities at the training rows (:class:`NadarayaWatson`'s)

    References
    ----------
    Hall, P., Racine, J. & Li, Q. (2004). Cross-validation and the estimation of
    conditional probability densities. *JASA* 99(468), 1015–1026 (np's ``npconmode``).

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> X = data.x_train[:, None]
    >>> labels = (data.y_train > 3).astype(int)
    >>> model = attnpool.NadarayaWatsonClassifier(bandwidth=0.5).fit(X, labels)
    >>> model.predict([[0.5], [2.0]]), model.predict_proba([[2.0]]).round(2)
    (array([0, 1]), array([[0.11, 0.89]]))
    """

    def __init__(
        self,
        kernel: KernelSpec = "gaussian",
        bandwidth: Bandwidth = "cv",
        *,
        var_type: str | None = None,
        empty: str = "nearest",
        block_size: int | None = None,
        method: MethodSpec = "auto",
    ) -> None:
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.var_type = var_type
        self.empty = empty
        self.block_size = block_size
        self.method = method

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> Self:
        """Store the training data, one-hot encode ``y`` and choose the bandwidth;
        ``sample_weight``: observation weights, as :meth:`NadarayaWatson.fit` takes them
        (class probabilities pool ``w_i``-weighted labels)."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        _check_labels(y)
        if getattr(kernels.get(self.kernel), "base", None) is not None:
            raise ValueError(
                f"kernel: class probabilities need a non-negative kernel; received the "
                f"higher-order kernel {self.kernel!r}"
            )
        self.classes_, labels = np.unique(y, return_inverse=True)
        onehot = np.zeros((y.shape[0], len(self.classes_)))
        onehot[np.arange(y.shape[0]), labels] = 1.0
        self._regressor = NadarayaWatson(
            self.kernel,
            self.bandwidth,
            var_type=fitted_var_type(self, self.var_type),
            empty=self.empty,
            block_size=self.block_size,
            method=self.method,
        ).fit(X, onehot, sample_weight=sample_weight)
        self.bandwidth_ = self._regressor.bandwidth_
        for name in ("backend_", "cv_score_", "aicc_"):
            if hasattr(self._regressor, name):
                setattr(self, name, getattr(self._regressor, name))
        return self

    def predict_proba(self, X: ArrayLike) -> NDArray:
        """Class probabilities, shape (n_queries, n_classes); rows sum to 1."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        if len(self.classes_) == 1:
            return np.ones((X.shape[0], 1))
        # pooled one-hot labels are convex combinations up to rounding: clip and
        # renormalise so that every probability is in [0, 1] (p_c <= Σ p gives p_c / Σ p <= 1)
        proba = np.clip(self._regressor.predict(X), 0.0, 1.0)
        return np.asarray(proba / np.sum(proba, axis=1, keepdims=True))

    def predict(self, X: ArrayLike) -> NDArray:
        """The most probable class of each query."""
        check_is_fitted(self)
        proba = self.predict_proba(X)
        empty = np.asarray(np.isnan(proba).any(axis=1))
        if np.any(empty):
            raise ValueError(
                f"X: {int(empty.sum())} of {len(empty)} queries have no training point within "
                f"the {self.kernel!r} kernel's support, so no class; widen the bandwidth or "
                "pass empty='nearest'"
            )
        return np.asarray(self.classes_[np.argmax(proba, axis=1)])

    def attention_weights(self, X: ArrayLike) -> NDArray:
        """Attention weights of queries ``X`` over the training points."""
        check_is_fitted(self)
        return self._regressor.attention_weights(X)


def _check_labels(y: Any) -> None:
    """Class labels: anything ``np.unique`` orders, but no fractional numbers."""
    if y.dtype.kind == "f" and not np.all(y == np.round(y)):
        raise ValueError(
            "Unknown label type: continuous. y: expected class labels; received fractional "
            "values (for a numeric target use NadarayaWatson)"
        )
    if y.dtype.kind == "O":
        kinds = {type(label).__name__ for label in y}
        if len(kinds) > 1:
            raise ValueError(
                f"Unknown label type: y mixes label types {sorted(kinds)}; expected one type"
            )
