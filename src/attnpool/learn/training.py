"""Training a learned attention model by leave-one-out error, with optax.

The loss is the leave-one-out mean squared error

.. math:: L(θ) = \\frac1{|B|} \\sum_{i \\in B} \\Big\\lVert y_i -
    \\sum_{j \\ne i} α(x_i, x_j; θ)\\, y_j \\Big\\rVert^2

over a batch ``B`` of training points, each predicted from all the *others*. Without
leaving the point out (``loss="mse"``) the minimum is the trivial "attend only to
yourself" — bandwidth → 0, training error → 0 — and the model interpolates the noise.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from .._support.hints import ArrayLike
from .._support.interop import precision_scope
from .._support.optional import require
from .._support.progress import ProgressBar
from .._support.units import objective_in_data_units, response_unit
from .._support.validation import check_choice, check_points, check_positive_int
from ..sums.observation_weights import merged_rows, positive_rows
from .attention import learned_pool, learned_weights
from .data import Standardisation, split, training_data
from .models import AttentionModel, Params, get_model

if TYPE_CHECKING:
    import optax
else:
    optax = require("optax", "learned attention (fit_attention)")

__all__ = ["LOSSES", "AttentionFit", "fit_attention"]

LOSSES = ("loo_mse", "mse")


@dataclass(frozen=True)
class AttentionFit:
    """A trained model with its training data.

    Attributes
    ----------
    model : AttentionModel
    params : pytree of arrays
        The parameters kept (the best validation loss with a
        validation set, else the lowest full-batch loss, else the last)
    standardisation : Standardisation of the inputs
    x_train : ndarray (m, d)
    y_train : ndarray (m, p)
    flat_targets : bool
        ``y`` was one-dimensional (predictions are then ``(n,)``)
    history : ndarray (steps,)
        The training loss before each step
    validation_history : ndarray (steps,) or None
        The validation MSE before each step
    best_step : int
        The step whose parameters were kept
    stopped_early : bool
    weights : ndarray (m,) or None
        The training points' observation weights

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> fit = attnpool.fit_attention("bandwidth", data.x_train, data.y_train, steps=60)
    >>> fit.history.shape, fit.predict([2.0]).round(3)
    ((60,), array([3.784]))
    >>> fit.attention_weights([2.0]).shape                # (queries, training points)
    (1, 80)

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2.
    """

    model: AttentionModel
    params: Params
    standardisation: Standardisation
    x_train: np.ndarray
    y_train: np.ndarray
    flat_targets: bool
    history: np.ndarray
    validation_history: np.ndarray | None
    best_step: int
    stopped_early: bool
    weights: np.ndarray | None = None

    def _run(self, function: Any, x: Any = None, *, with_values: bool) -> Any:
        dtype = self.x_train.dtype
        with precision_scope(dtype):
            args = [jnp.asarray(self.standardisation(self.x_train), dtype)]
            if with_values:
                args.append(jnp.asarray(self.y_train, dtype))
            if x is not None:
                x = check_points(x, "X", dims=self.x_train.shape[1])
                args.insert(0, jnp.asarray(self.standardisation(np.asarray(x, dtype)), dtype))
            weights = None if self.weights is None else jnp.asarray(self.weights, dtype)
            return np.asarray(function(self.model, self.params, *args, weights))

    def predict(self, x: ArrayLike) -> np.ndarray:
        """Predictions at inputs ``x (n, d)``: ``(n,)`` or ``(n, p)`` like ``y``."""
        fit: np.ndarray = self._run(_predict, x, with_values=True)
        return fit[:, 0] if self.flat_targets else fit

    def attention_weights(self, x: ArrayLike) -> np.ndarray:
        """``(n, m)`` weights of queries ``x`` over the training points (rows sum to 1)."""
        weights: np.ndarray = self._run(_weights, x, with_values=False)
        return weights

    def loo_error(self) -> float:
        """Leave-one-out mean squared error on the training points."""
        return float(self._run(_loo_error, with_values=True))

    def parameters(self) -> dict[str, Any]:
        """The learned parameters in the inputs' units (bandwidths, metric, …)."""
        return self.model.readable(self.params, self.standardisation.scale)


@functools.partial(jax.jit, static_argnames="model")
def _predict(
    model: Any, params: Any, queries: Any, keys: Any, values: Any, weights: Any = None
) -> Any:
    return learned_pool(model, params, queries, keys, values, weights=weights)[0]


@functools.partial(jax.jit, static_argnames="model")
def _weights(model: Any, params: Any, queries: Any, keys: Any, weights: Any = None) -> Any:
    return learned_weights(model, params, queries, keys, weights)


@functools.partial(jax.jit, static_argnames="model")
def _loo_error(model: Any, params: Any, keys: Any, values: Any, weights: Any = None) -> Any:
    return _batch_loss(model, params, keys, values, jnp.arange(keys.shape[0]), True, weights)


def _batch_loss(
    model: Any, params: Any, x: Any, y: Any, batch: Any, leave_one_out: bool, weights: Any = None
) -> Any:
    """The mean squared error of the batch's fits (rows counted ``weights`` times)."""
    leave_out = batch if leave_one_out else None
    fit, _ = learned_pool(model, params, x[batch], x, y, leave_out=leave_out, weights=weights)
    return _mean(
        jnp.mean((fit - y[batch]) ** 2, axis=1), None if weights is None else weights[batch]
    )


def _mean(losses: Any, weights: Any) -> Any:
    return jnp.mean(losses) if weights is None else jnp.sum(weights * losses) / jnp.sum(weights)


@functools.partial(jax.jit, static_argnames=("model", "optimizer", "leave_one_out"))
def _train_step(
    params: Any,
    opt_state: Any,
    x: Any,
    y: Any,
    batch: Any,
    weights: Any,
    *,
    model: Any,
    optimizer: Any,
    leave_one_out: Any,
) -> Any:
    loss, grads = jax.value_and_grad(_batch_loss, argnums=1)(
        model, params, x, y, batch, leave_one_out, weights
    )
    finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(g)) for g in jax.tree.leaves(grads)]))
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss, finite


@functools.partial(jax.jit, static_argnames="model")
def _validation_loss(
    model: Any,
    params: Any,
    x: Any,
    y: Any,
    x_val: Any,
    y_val: Any,
    weights: Any = None,
    val_weights: Any = None,
) -> Any:
    fit = learned_pool(model, params, x_val, x, y, weights=weights)[0]
    return _mean(jnp.mean((fit - y_val) ** 2, axis=1), val_weights)


@functools.lru_cache(maxsize=32)
def _adam(learning_rate: float) -> optax.GradientTransformation:
    # one object per rate, so that the jitted step is compiled once per shape
    return optax.adam(learning_rate)


def fit_attention(
    model: AttentionModel | str,
    X: ArrayLike,
    y: ArrayLike,
    *,
    loss: str = "loo_mse",
    optimizer: optax.GradientTransformation | None = None,
    learning_rate: float = 0.05,
    steps: int = 300,
    batch_size: int | None = None,
    seed: int = 0,
    validation: Any = None,
    patience: int | None = 30,
    progress: bool | Callable[[int, int, str], None] = False,
    weights: ArrayLike | None = None,
) -> AttentionFit:
    """Train ``model`` to predict ``y`` from ``X`` by attention over the training points.

    Parameters
    ----------
    model : AttentionModel or name (see :func:`attnpool.learn.get_model`)
    X : array of shape (n,) or (n, d); y : array of shape (n,) or (n, p)
    loss : {"loo_mse", "mse"}
        ``"loo_mse"`` predicts each training point from the others; ``"mse"`` keeps
        the point itself among the keys (its minimum is the trivial interpolant).
    optimizer : optax.GradientTransformation, optional
        Default: ``optax.adam(learning_rate)``. Bandwidths are optimised as logarithms.
    learning_rate : float
        For the default optimizer.
    steps : int
        Optimisation steps.
    batch_size : int, optional
        Queries per step, drawn without replacement epoch by epoch (keys are always all
        training points). Default: all points every step.
    seed : int
        Initial parameters, the validation split and the batches.
    validation : float in (0, 1) or (X_val, y_val), optional
        A fraction of the points held out (at random), or a separate set; the parameters
        with the lowest validation error are kept.
    patience : int or None
        Stop after this many steps without a better validation
        error (with ``validation`` only; ``None`` never stops early).
    progress : bool or callable ``(done, total, note)``
        ``True``: tqdm's bar (``tqdm.auto``: a widget in a notebook, text on stderr
        elsewhere) with the loss, once training has taken a second; or your callback.
    weights : array of shape (n,), optional
        Observation weights of the training points (:mod:`attnpool.sums.observation_weights`):
        each point's kernel weight as a key times ``w_i``, its loss counted ``w_i`` times,
        each row left out whole under ``"loo_mse"`` (identical rows merged into one of
        their total weight first), and the standardisation weighted — what the repeated
        rows give, for integer weights and full batches (the models' initial parameters
        count rows, ``n = Σ w``: weights summing to less than two are refused, as by
        :func:`attnpool.rule_of_thumb`). Rows of weight 0 are left out.

    Returns
    -------
    AttentionFit

    Examples
    --------
    >>> import numpy as np
    >>> from attnpool.datasets import sine_data
    >>> data = sine_data()
    >>> fit = fit_attention("bandwidth", data.x_train, data.y_train, steps=100)
    >>> bool(fit.history[-1] < fit.history[0])
    True

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2. Bahdanau, D., Cho, K. & Bengio, Y. (2015). Neural machine translation
    by jointly learning to align and translate. *ICLR* (additive scores).
    """
    model = get_model(model)
    check_choice(loss, "loss", LOSSES)
    steps = check_positive_int(steps, "steps", allow_none=False)
    batch_size = check_positive_int(batch_size, "batch_size")
    patience = check_positive_int(patience, "patience")
    x, y, flat = training_data(X, y)
    x, y, weights = positive_rows(x, y, weights)
    # identical rows are one observation of their total weight: leave-one-out leaves
    # them out together (observation_weights)
    x, y, weights = merged_rows(x, y, weights)
    x, y, x_val, y_val, weights, val_weights = split(x, y, validation, seed, weights)
    if loss == "loo_mse" and x.shape[0] < 2:
        raise ValueError(
            f"X: leave-one-out training needs at least 2 samples; received {x.shape[0]} sample"
        )
    if optimizer is None:
        number = isinstance(learning_rate, int | float) and not isinstance(learning_rate, bool)
        if not (number and np.isfinite(learning_rate) and learning_rate > 0):
            raise ValueError(
                f"learning_rate: expected a positive number; received {learning_rate!r}"
            )
        optimizer = _adam(float(learning_rate))
    if progress is True:
        progress = ProgressBar("training")
    standardisation = Standardisation.of(x, shared=model.shared_scale, weights=weights)
    # the loss of y in a power-of-two unit (exact): Adam's steps do not depend on y's
    # scale (y in 1e-6 units learned another bandwidth) and squares of 1e±200 stay finite
    unit = response_unit(y)

    with precision_scope(x.dtype):
        xs, ys = jnp.asarray(standardisation(x)), jnp.asarray(y / unit)
        w = None if weights is None else jnp.asarray(weights, x.dtype)
        w_val = None if val_weights is None else jnp.asarray(val_weights, x.dtype)
        params = _initial(model, jax.random.key(seed), xs, standardisation.scale, weights)
        opt_state = optimizer.init(params)
        if x_val is not None:
            xv, yv = jnp.asarray(standardisation(x_val)), jnp.asarray(y_val / unit)
        batches = _batches(x.shape[0], batch_size, seed)
        history, validation_history = [], []
        best = (np.inf, params, 0)
        since_best = 0
        for step in range(steps):
            batch = next(batches)
            if x_val is not None:
                score = float(_validation_loss(model, params, xs, ys, xv, yv, w, w_val))
                validation_history.append(score)
            new_params, opt_state, value, finite = _train_step(
                params,
                opt_state,
                xs,
                ys,
                batch,
                w,
                model=model,
                optimizer=optimizer,
                leave_one_out=loss == "loo_mse",
            )
            value = float(value)
            if not (np.isfinite(value) and bool(finite)):
                _close(progress)
                raise ValueError(
                    f"training diverged at step {step}: the loss or its gradient is not finite "
                    f"(loss {value}); lower the learning rate or start from another bandwidth"
                )
            history.append(value)
            if x_val is not None:
                since_best = 0 if score < best[0] else since_best + 1
                best = min(best, (score, params, step), key=lambda b: b[0])
            elif batch_size is None or batch_size >= x.shape[0]:
                best = min(best, (value, params, step), key=lambda b: b[0])
            if progress:
                progress(step + 1, steps, f"loss {value:.4g}")
            if x_val is not None and patience is not None and since_best >= patience:
                break
            params = new_params
        stopped_early = len(history) < steps
        _close(progress)
        if np.isfinite(best[0]):
            _, params, best_step = best
        else:
            best_step = len(history)
        params = jax.tree.map(np.asarray, params)
    return AttentionFit(
        model=model,
        params=params,
        standardisation=standardisation,
        x_train=x,
        y_train=y,
        flat_targets=flat,
        history=objective_in_data_units(history, "cv", unit),
        validation_history=(
            objective_in_data_units(validation_history, "cv", unit) if x_val is not None else None
        ),
        best_step=best_step,
        stopped_early=stopped_early,
        weights=weights,
    )


def _initial(model: AttentionModel, key: Any, x: Any, scale: Any, weights: Any) -> Any:
    """``model.init``, told the weights' sum as its sample size where it takes one."""
    init: Any = model.init  # some models' init also takes the sample size
    if weights is not None and "rows" in inspect.signature(init).parameters:
        rows = float(np.sum(weights))
        if not rows >= 2:  # (a rule of n < 2 observations starts where nothing is learned)
            raise ValueError(
                "weights: the model's initial parameters count row i as w_i observations "
                f"(n = Σ w); received weights summing to {rows:.4g}, which is less than two "
                "(scale relative weights by the number of rows)"
            )
        return init(key, x, scale, rows=rows)
    return model.init(key, x, scale)


def _close(progress: Any) -> None:
    if isinstance(progress, ProgressBar):
        progress.close()


def _batches(n: int, batch_size: int | None, seed: int) -> Any:
    """Query indices per step: all points, or epochs of shuffled fixed-size batches."""
    if batch_size is None or batch_size >= n:
        everything = jnp.arange(n)
        while True:
            yield everything
    rng = np.random.default_rng(seed + 1)
    while True:
        order = rng.permutation(n)
        for start in range(0, n - batch_size + 1, batch_size):
            yield jnp.asarray(order[start : start + batch_size])
