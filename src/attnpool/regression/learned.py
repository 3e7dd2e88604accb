"""A scikit-learn regressor over :func:`attnpool.learn.fit_attention` (imports optax)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

import numpy as np

from .._support.estimator_api import MultiOutputRegressor, check_is_fitted, validate_data
from .._support.hints import ArrayLike, NDArray

if TYPE_CHECKING:
    from ..learn.models import AttentionModel

__all__ = ["LearnedAttentionRegressor"]


class LearnedAttentionRegressor(MultiOutputRegressor):
    """Regression by a learned attention model, trained by leave-one-out error.

    A scikit-learn face for :func:`attnpool.learn.fit_attention`: ``fit`` trains the
    model's parameters with optax; ``predict`` pools the training targets with the
    learned weights; ``attention_weights`` as :class:`NadarayaWatson`.

    Parameters
    ----------
    model : {"bandwidth", "ard", "metric", "adaptive", "dot", "additive"} or AttentionModel
        See :mod:`attnpool.learn.models`.
    steps, learning_rate, batch_size, validation_fraction, patience, seed
        As :func:`attnpool.learn.fit_attention` (``validation_fraction`` is its
        ``validation``).

    Attributes
    ----------
    fit_ : attnpool.learn.AttentionFit
    params_ : pytree
        The learned parameters
    parameters_ : dict
        The parameters in the inputs' units (``bandwidth``, ``metric``, …)
    bandwidth_ : ndarray of shape (n_features,)
        For the bandwidth models
    history_ : ndarray
        The training loss at each step
    n_features_in_ : int

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2 (the learned bandwidth). Vaswani, A. et al. (2017). Attention is all
    you need. *NeurIPS* (dot-product scores).

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> model = attnpool.LearnedAttentionRegressor(steps=50).fit(data.x_train[:, None],
    ...                                                         data.y_train)
    >>> model.predict([[2.0]]).round(2)
    array([3.78])
    """

    def __init__(
        self,
        model: str | AttentionModel = "bandwidth",
        *,
        steps: int = 300,
        learning_rate: float = 0.05,
        batch_size: int | None = None,
        validation_fraction: float | None = None,
        patience: int | None = 30,
        seed: int = 0,
    ) -> None:
        self.model = model
        self.steps = steps
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.seed = seed

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> Self:
        """Train the attention model on ``X (n_samples, n_features)``, ``y (n_samples[, p])``;
        ``sample_weight``: observation weights (as :func:`attnpool.learn.fit_attention`
        takes them: a row counts ``w_i`` times as a key and in the loss)."""
        from ..learn import fit_attention
        from ..sums.observation_weights import positive_rows

        X, y = validate_data(self, X, y, multi_output=True, y_numeric=True, dtype=np.float64)
        X, y, weights = positive_rows(X, y, sample_weight, name="sample_weight")
        if X.shape[0] < 2:
            raise ValueError(
                f"X: expected at least 2 samples (each is predicted from the others); "
                f"received n_samples = {X.shape[0]}"
            )
        self.fit_ = fit_attention(
            self.model,
            X,
            y,
            steps=self.steps,
            learning_rate=self.learning_rate,
            batch_size=self.batch_size,
            validation=self.validation_fraction,
            patience=self.patience,
            seed=self.seed,
            weights=weights,
        )
        self.params_ = self.fit_.params
        self.parameters_ = self.fit_.parameters()
        self.history_ = self.fit_.history
        if "bandwidth" in self.parameters_:
            self.bandwidth_ = np.broadcast_to(self.parameters_["bandwidth"], X.shape[1]).copy()
        return self

    def predict(self, X: ArrayLike) -> NDArray:
        """Predictions at ``X``; shape (n,) or (n, n_outputs) like ``y``."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.fit_.predict(X)

    def attention_weights(self, X: ArrayLike) -> NDArray:
        """Learned attention weights of queries ``X`` over the training points."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.fit_.attention_weights(X)
