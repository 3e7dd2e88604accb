"""Pooling with a learned attention model, on the same engines as fixed kernels.

Queries and keys are embedded once (``O(n + m)``); the score and the log-domain pooling
state are then computed block by block (:mod:`attnpool.methods`), so memory stays
``O(block)`` for large key sets, and the gradient with respect to the parameters is
exact (the streamed body is rematerialised under reverse-mode autodiff).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ..engines.blocks import mask_own_pairs
from ..engines.compiled_backends import pool_state
from ..methods import normalise
from ..methods.options import exact_engine
from ..methods.stream import KEY_BLOCK
from ..sums.state import block_state, finalize
from .models import AttentionModel, Params

__all__ = ["learned_pool", "learned_weights"]


def learned_pool(
    model: AttentionModel,
    params: Params,
    queries: jax.Array,
    keys: jax.Array,
    values: jax.Array,
    *,
    leave_out: jax.Array | None = None,
    weights: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
    """``(n, p)`` pooled values ``Σ_i α(q, k_i; θ) v_i`` and the ``(n,)`` empty-row mask.

    ``queries``, ``keys`` and ``values`` are already standardised.
    ``leave_out (n,)``: for each query, the index of a key to exclude (its own row, for
    leave-one-out), or ``-1`` for none. ``weights (m,)``: the keys' positive observation
    weights, ``log w`` added to their log weights (a left-out key is left out whole:
    :mod:`attnpool.sums.observation_weights`).

    Parameters
    ----------
    model : AttentionModel
    params : dict
        The model's parameters (:attr:`attnpool.learn.AttentionFit.params`).
    queries : array of shape (n, d)
    keys : array of shape (m, d)
    values : array of shape (m, p)
    leave_out : int array of shape (n,), optional
    weights : array of shape (m,), optional

    Returns
    -------
    pooled : array of shape (n, p)
    empty : bool array of shape (n,)

    Examples
    --------
    >>> import jax.numpy as jnp, attnpool
    >>> from attnpool import learn
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> fit = attnpool.fit_attention("bandwidth", data.x_train, data.y_train, steps=60)
    >>> keys = jnp.asarray(fit.standardisation(fit.x_train))      # standardised inputs
    >>> pooled, empty = learn.learned_pool(fit.model, fit.params, keys[:2], keys,
    ...                                    jnp.asarray(fit.y_train))
    >>> pooled.round(3).tolist(), empty.tolist()      # each point from all 80
    ([[0.436], [0.544]], [False, False])

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2. Rabe, M. N. & Staats, C. (2021). Self-attention does not need O(n²)
    memory. arXiv:2112.05682 (the streamed log-domain state).
    """
    embedded_queries = model.embed_queries(params, queries)
    embedded_keys = model.embed_keys(params, keys)

    def block(query_rows: Any, query_ids: Any, key_rows: Any, key_ids: Any, value_rows: Any) -> Any:
        log_w = model.log_weights(params, query_rows, key_rows)
        if weights is not None:
            log_w = log_w + jnp.log(weights)[key_ids][None, :]
        if leave_out is not None:
            own = leave_out[query_ids]
            log_w = mask_own_pairs(log_w, own, key_ids)  # the whole row
        return block_state(log_w, value_rows)

    n, m = queries.shape[0], keys.shape[0]
    state = pool_state(
        block,
        embedded_queries,
        embedded_keys,
        values,
        method=exact_engine(n * m * model.pair_width),
        key_block=max(64, KEY_BLOCK // model.pair_width),
    )
    pooled: tuple[jax.Array, jax.Array] = finalize(state)
    return pooled


def learned_weights(
    model: AttentionModel,
    params: Params,
    queries: jax.Array,
    keys: jax.Array,
    weights: jax.Array | None = None,
) -> jax.Array:
    """``(n, m)`` attention weights of a learned model (rows sum to 1); ``weights``: the
    keys' positive observation weights.

    Parameters
    ----------
    model : AttentionModel
    params : dict
        The model's parameters (:attr:`attnpool.learn.AttentionFit.params`).
    queries : array of shape (n, d)
    keys : array of shape (m, d)
    weights : array of shape (m,), optional

    Returns
    -------
    array of shape (n, m)

    Examples
    --------
    >>> import jax.numpy as jnp, attnpool
    >>> from attnpool import learn
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> fit = attnpool.fit_attention("bandwidth", data.x_train, data.y_train, steps=60)
    >>> keys = jnp.asarray(fit.standardisation(fit.x_train))      # standardised inputs
    >>> alpha = learn.learned_weights(fit.model, fit.params, keys[:2], keys)
    >>> alpha.shape, alpha.sum(axis=1).round(6).tolist()
    ((2, 80), [1.0, 1.0])

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2 (its weights are this matrix transposed: keys × queries).
    """
    log_w = model.log_weights(
        params, model.embed_queries(params, queries), model.embed_keys(params, keys)
    )
    if weights is not None:
        log_w = log_w + jnp.log(weights)[None, :]
    weights_matrix: jax.Array = normalise(log_w)[0]
    return weights_matrix
