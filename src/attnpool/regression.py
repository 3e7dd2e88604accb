"""Local polynomial regression on the pooling engines: Nadaraya–Watson and local linear.

Degree 0 (local constant, Nadaraya–Watson) pools the responses. Degree 1 (local
linear) pools the local moments of ``δ = x_j − x`` — ``Σw``, ``Σw δ``,
``Σw δδᵀ``, ``Σw y``, ``Σw δ y`` — with the *same* pooling state, and solves
at each query

.. math::

    \\min_{a, b} \\sum_j w_j (y_j - a - b^\\top δ_j)^2 ,\\qquad \\hat g(x) = a,
    \\quad \\nabla \\hat g(x) = b

by the Schur complement ``C = E_w[δδᵀ] − E_w[δ]E_w[δ]ᵀ`` (a weighted
covariance, computed in bandwidth-scaled units and solved with unit diagonal plus a
ridge of ``1e-12`` — ``1e-6`` in float32 — relative to each column's local spread, so
linear data are reproduced at every bandwidth and a singular local design falls back
to the local mean).

Mixed data follow statsmodels/np: ``var_type`` has one letter per column —
``c`` continuous (the kernel of the scaled distance over all continuous columns),
``o`` ordered (Wang–van Ryzin: ``1 − λ`` if equal, else ``½(1 − λ) λ^|x − X|``),
``u`` unordered (Aitchison–Aitken: ``1 − λ`` if equal, else ``λ / (c − 1)`` with
``c`` levels) — multiplied across columns. For categorical columns the
"bandwidth" is ``λ ∈ [0, 1)``; ``λ = 0`` matches exactly.

Leave-one-out fits mask each point's own pair inside the blocks (no refits, no
subtraction that could cancel). The hat-matrix diagonal ``W_ii`` (for AICc) is
``α_ii`` for degree 0 and ``α_ii (1 + μ₁ᵀ C⁻¹ μ₁)`` for degree 1.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from . import kernels as _kernels
from . import numpy_engine
from ._interop import compute_dtype, precision_scope
from ._shapes import MAX_ROWS, bucket, is_host, pad_rows, padded, query_bucket, unpadded
from ._validation import check_bandwidth, check_choice, check_points, check_values
from .empty_policy import EMPTY_POLICIES, check_empty
from .engine import (
    empty_as_nan,
    kernel_block,
    mask_padding,
    nearest_log_weight,
    needs_nearest,
    pool_state,
)
from .geometry import key_centre
from .local_model import LocalModel, log_weights, model_for, prepare, relative, solve_moments
from .methods import dense_weights, normalise
from .methods.choice import exact_engine
from .methods.stream import KEY_BLOCK
from .state import block_state, finalize

__all__ = ["LocalModel", "hat_diagonal", "local_regression", "loo_residuals", "model_for"]


def _block_function(
    model: LocalModel, lambdas, *, exclude_self: bool, max_log=None, key_count=None
):
    def block(q, q_ids, k, k_ids, v):
        logw = mask_padding(log_weights(q, k, lambdas, model), k_ids, key_count)
        if exclude_self:
            logw = jnp.where(q_ids[:, None] == k_ids[None, :], -jnp.inf, logw)
        known = None if max_log is None else max_log[q_ids]
        if model.degree == 0:
            return block_state(logw, v, known)
        nq, nk, d, p = q.shape[0], k.shape[0], q.shape[1], v.shape[1]
        delta = k[None, :, :] - q[:, None, :]
        features = jnp.concatenate(
            [
                jnp.broadcast_to(v[None], (nq, nk, p)),
                delta,
                (delta[..., :, None] * delta[..., None, :]).reshape(nq, nk, d * d),
                (delta[..., :, None] * v[None, :, None, :]).reshape(nq, nk, d * p),
            ],
            axis=-1,
        )
        return block_state(logw, features, known)

    return block


@partial(
    jax.jit,
    static_argnames=("model", "method", "key_block", "exclude_self", "with_hat", "nearest"),
)
def _local_core(
    x_train,
    y_train,
    x_query,
    bandwidth,
    key_count,
    *,
    model,
    method,
    key_block,
    exclude_self,
    with_hat,
    nearest,
):
    cont = jnp.array(model.continuous, dtype=int)
    centre = key_centre(x_train[:, cont]) if model.continuous else None
    lambdas = bandwidth[jnp.array(model.categorical, dtype=int)] if model.categorical else None
    keys = prepare(x_train, bandwidth, centre, model)
    queries = prepare(x_query, bandwidth, centre, model)
    # The nearest key's log weight is each row's maximum, except when leaving one out
    # (the point itself is the nearest, and its weight is masked).
    known = None
    if method == "stream" and not exclude_self and model.var_type == "c":
        known = nearest_log_weight(queries, keys, model.kernel)
    block = _block_function(
        model, lambdas, exclude_self=exclude_self, max_log=known, key_count=key_count
    )
    state = pool_state(block, queries, keys, y_train, method=method, key_block=key_block)
    means, empty = finalize(state)
    d, p = x_train.shape[1], y_train.shape[1]
    fit, slopes, inverse_11 = solve_moments(means, d, p, model.degree)
    units = jnp.ones(d, x_train.dtype)
    if model.continuous:
        units = units.at[: len(model.continuous)].set(bandwidth[cont])
    slopes = (slopes / units[None, :, None])[:, np.argsort(model.order), :]
    hat = None
    if with_hat:
        self_log = jax.vmap(lambda row: log_weights(row[None], row[None], lambdas, model)[0, 0])(
            queries
        )
        shift = jnp.where(jnp.isfinite(state.max_log), state.max_log, 0.0)
        hat = jnp.exp(self_log - shift) / jnp.where(empty, 1.0, state.weight_sum) * inverse_11
    if exclude_self:  # leave-one-out: a row that is empty or overflowed stays NaN
        return jnp.where(empty[:, None], jnp.nan, fit), slopes, hat, empty
    fallback = needs_nearest(fit, empty, nearest)

    def with_nearest():
        hard = kernel_block(_kernels.get("gaussian"), hard=True, key_count=key_count)
        state = pool_state(
            hard,
            *relative(queries, keys, bandwidth, model),
            y_train,
            method=method,
            key_block=key_block,
            hard=True,
        )
        return jnp.where(fallback[:, None], finalize(state)[0], fit)

    fit = jax.lax.cond(jnp.any(fallback), with_nearest, lambda: fit)
    fit = empty_as_nan(fit, empty, nearest)
    return fit, slopes, hat, empty


def local_fit(
    x_train,
    y_train,
    x_query,
    bandwidth,
    model: LocalModel,
    *,
    exclude_self=False,
    with_hat=False,
    nearest=False,
    block_size=None,
    key_count=None,
):
    """Traceable core: arrays already validated, ``(n, d)``/``(n, p)``, bandwidth ``(d,)``.

    Returns ``fit (n_q, p)``, ``slopes (n_q, d, p)`` in the inputs' units, the hat
    diagonal (or None) and the ``(n_q,)`` mask of empty neighbourhoods. Rows are padded
    to their buckets (:mod:`attnpool._shapes`) unless ``key_count`` says the training
    rows from that one on are padding already (then queries are not padded either).
    """
    n, m = x_query.shape[0], x_train.shape[0]
    if key_count is None and 0 < n and m <= MAX_ROWS:
        size = bucket(m)
        x_train, y_train = padded(x_train, y_train, size=size)
        queries = x_train if exclude_self or with_hat else pad_rows(x_query, query_bucket(n))
        results = local_fit(
            x_train,
            y_train,
            queries,
            bandwidth,
            model,
            exclude_self=exclude_self,
            with_hat=with_hat,
            nearest=nearest,
            block_size=block_size,
            key_count=np.int32(m),
        )
        return unpadded(results, n, host=is_host(x_train, x_query))
    width = 1 if model.degree == 0 else (1 + x_train.shape[1]) ** 2 * y_train.shape[1]
    method = "stream" if block_size is not None else exact_engine(n * m * width)
    key_block = block_size or max(64, KEY_BLOCK // width)
    return _local_core(
        x_train,
        y_train,
        x_query,
        bandwidth,
        key_count,
        model=model,
        method=method,
        key_block=key_block,
        exclude_self=exclude_self,
        with_hat=with_hat,
        nearest=nearest,
    )


def _validated(x_train, y_train, x_query, bandwidth, kernel, var_type, degree):
    x = check_points(x_train, "x_train")
    y, flat = check_values(y_train, x.shape[0])
    q = x if x_query is None else check_points(x_query, "x_query", dims=x.shape[1])
    model = model_for(x, kernel=kernel, var_type=var_type, degree=degree)
    h = np.asarray(check_bandwidth(bandwidth, x.shape[1]), dtype=float)
    for j in model.categorical:
        if not h[j] < 1:
            raise ValueError(
                f"bandwidth: column {j} is categorical ({model.var_type[j]!r}); its bandwidth λ "
                f"must lie in [0, 1); received {h[j]}"
            )
    return x, y, q, h, model, flat


def local_regression(
    x_train,
    y_train,
    x_query,
    *,
    kernel="gaussian",
    bandwidth=1.0,
    degree: int = 0,
    var_type: str | None = None,
    empty: str = "nan",
    block_size: int | None = None,
    return_slopes: bool = False,
):
    """Local constant (``degree=0``) or local linear (``degree=1``) regression.

    Shapes: ``x_train (n,) | (n, d)``, ``y_train (n,) | (n, p)``, ``x_query (k,) | (k, d)``.
    Returns the fit ``(k,)`` or ``(k, p)``; with ``return_slopes`` also the
    gradient of the fit, ``(k, d)`` or ``(k, d, p)`` (statsmodels' marginal effects).
    Small problems of continuous columns with a built-in kernel run on the NumPy engine
    (:mod:`attnpool.numpy_engine`), the rest on the compiled ones (``block_size`` streams
    the training points in blocks of that size).
    ``empty`` as in :func:`attnpool.attention_pool` (a query whose neighbourhood is
    empty gets NaN, the nearest training response, or an error).
    """
    check_choice(empty, "empty", EMPTY_POLICIES)
    x, y, q, h, model, flat = _validated(
        x_train, y_train, x_query, bandwidth, kernel, var_type, degree
    )
    dtype = compute_dtype(x, y, q, numpy=True)
    if block_size is None and numpy_engine.serves(model, q.shape[0], x.shape[0], y.shape[1]):
        # small: no program to build (computed in float64, returned in the inputs' type)
        fit, slopes, empty_rows = numpy_engine.local_fit(
            x, y, q, h, model, nearest=empty == "nearest"
        )
        fit, slopes = fit.astype(dtype), slopes.astype(dtype)
    else:
        with precision_scope(dtype):
            fit, slopes, _, empty_rows = local_fit(
                np.asarray(x, dtype),
                np.asarray(y, dtype),
                np.asarray(q, dtype),
                np.asarray(h, dtype),
                model,
                nearest=empty == "nearest",
                block_size=block_size,
            )
            fit, slopes = np.asarray(fit), np.asarray(slopes)
            empty_rows = np.asarray(empty_rows)
    check_empty(empty, empty_rows)
    if flat:
        fit, slopes = fit[:, 0], slopes[..., 0]
    return (fit, slopes) if return_slopes else fit


def loo_residuals(x, y, bandwidth, model: LocalModel, *, block_size=None, count=None):
    """Leave-one-out residuals ``y_i − ĝ₋ᵢ(x_i)`` (traceable); NaN where no neighbour is left.

    ``count``: rows from this one on are padding (their residuals mean nothing).
    """
    fit, _, _, _ = local_fit(
        x, y, x, bandwidth, model, exclude_self=True, block_size=block_size, key_count=count
    )
    return y - fit


def hat_diagonal(x, y, bandwidth, model: LocalModel, *, block_size=None, count=None):
    """In-sample fit and the diagonal of the smoother ("hat") matrix (traceable)."""
    fit, _, hat, _ = local_fit(
        x, y, x, bandwidth, model, with_hat=True, block_size=block_size, key_count=count
    )
    return fit, hat


@partial(jax.jit, static_argnames=("model", "nearest"))
def _weights_core(x_train, x_query, bandwidth, *, model, nearest):
    cont = jnp.array(model.continuous, dtype=int)
    centre = key_centre(x_train[:, cont]) if model.continuous else None
    lambdas = bandwidth[jnp.array(model.categorical, dtype=int)] if model.categorical else None
    keys = prepare(x_train, bandwidth, centre, model)
    queries = prepare(x_query, bandwidth, centre, model)
    weights, empty = normalise(log_weights(queries, keys, lambdas, model))
    fallback = needs_nearest(weights, empty, nearest)

    def with_nearest():
        nearest_geometry = relative(queries, keys, bandwidth, model)
        closest, _ = dense_weights(*nearest_geometry, _kernels.get("gaussian"), hard=True)
        return jnp.where(fallback[:, None], closest, weights)

    weights = jax.lax.cond(jnp.any(fallback), with_nearest, lambda: weights)
    return empty_as_nan(weights, empty, nearest), empty


def weight_matrix(
    x_train, x_query, *, kernel="gaussian", bandwidth=1.0, var_type=None, empty="nan"
):
    """Attention weights ``(n_query, n_train)`` of the (mixed-type) product kernel; rows sum to 1.

    Rows of queries with an empty neighbourhood are NaN (``empty="nan"``) or
    shared by the nearest training points (``"nearest"``).
    """
    check_choice(empty, "empty", EMPTY_POLICIES)
    x, _, q, h, model, _ = _validated(
        x_train, np.zeros(len(np.asarray(x_train))), x_query, bandwidth, kernel, var_type, 0
    )
    dtype = compute_dtype(x, q, numpy=True)
    with precision_scope(dtype):
        weights, empty_rows = _weights_core(
            jnp.asarray(x, dtype),
            jnp.asarray(q, dtype),
            jnp.asarray(h, dtype),
            model=model,
            nearest=empty == "nearest",
        )
        weights, empty_rows = np.asarray(weights), np.asarray(empty_rows)
    check_empty(empty, empty_rows)
    return weights
