"""The compiled local fits: local constant and local linear on the pooling engines.

Degree 0 pools the responses; degree 1 pools the local moments ``[y, δ, δδᵀ, δy]``
about each query's heaviest key with the same pooling state and solves them at each query
(:func:`attnpool.sums.local_model.solve_moments`). Leave-one-out fits mask each point's own
pair inside the blocks; the hat diagonal is ``α_ii`` (degree 0) or
``α_ii (1 + μ₁ᵀ C⁻¹ μ₁)`` (degree 1). The formulas are in :mod:`attnpool.regression`.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import kernels as _kernels
from .._support.shapes import MAX_ROWS, bucket, is_host, pad_rows, padded, query_bucket, unpadded
from ..kernels.edges import has_edge
from ..methods import dense_weights, normalise, pallas
from ..methods.pallas_kernel import pair_log_weights
from ..methods.stream import KEY_BLOCK
from ..sums.facts import fit_facts
from ..sums.geometry import key_centre
from ..sums.local_model import LocalModel, log_weights, prepare, relative, solve_moments
from ..sums.observation_weights import augmented, column_scale, divided
from ..sums.plan import block_width, plan
from ..sums.state import block_state, finalize, hard_block_state
from .blocks import (
    kernel_block,
    mask_own_pairs,
    mask_padding,
    nearest_key,
    nearest_log_weight,
)
from .compiled_backends import pool_state
from .problem_blocks import moment_features
from .programs import with_nearest_limit

__all__ = ["FitRoute", "hat_diagonal", "local_fit", "loo_residuals", "tiled_model", "weights_core"]


def _block_function(
    model: LocalModel,
    lambdas,
    *,
    exclude_self: bool,
    max_log=None,
    key_count=None,
    hard=False,
    weights=None,
    raw=None,
):
    """Block function of the local fits. Degree 0 pools the responses; degree 1 the
    moments ``[y, δ, δδᵀ, δy]`` about a reference point (a key and its response) that
    follows each query's ``d`` coordinates in its row. ``hard``: the zero-temperature
    state of ``[key, y]`` rows — each query's reference, its heaviest key. ``weights``:
    the keys' positive observation weights, multiplying their kernel weights (leaving one
    out, the whole row: :mod:`attnpool.sums.observation_weights`). ``raw``: the
    continuous columns' unscaled queries, keys and bandwidths (:func:`_raw_columns`),
    whose differences give a compact kernel's weights."""
    d = len(model.var_type)

    def block(q, q_ids, k, k_ids, v):
        q, origin = q[:, :d], q[:, d:]
        pairs = None if raw is None else (raw[0][q_ids], raw[1][k_ids], raw[2])
        logw = mask_padding(log_weights(q, k, lambdas, model, pairs), k_ids, key_count)
        factors = None  # the keys' weights multiply their kernel weights after the shift:
        # as log offsets they were lost beside log weights of ~1e15 (tiny bandwidths)
        if weights is not None and not hard:
            factors = jnp.broadcast_to(weights[k_ids][None, :], logw.shape)
        if exclude_self:  # the whole row, all of its weight
            logw = mask_own_pairs(logw, q_ids, k_ids)
        if hard:
            return hard_block_state(logw, v)
        known = None if max_log is None else max_log[q_ids]
        if model.degree == 0:
            return block_state(logw, v, known, factors)
        delta = k[None, :, :] - origin[:, None, :d]
        response = v[None, :, :] - origin[:, None, d:]
        return block_state(logw, moment_features(delta, response), known, factors)

    return block


class FitRoute(NamedTuple):
    """A compiled local fit's static settings (hashable: the program's static argument):
    the model, the engine and its key blocks, leave-one-out, the hat diagonal, and the
    nearest-key limit for empty rows."""

    model: LocalModel
    method: str
    key_block: int
    exclude_self: bool = False
    with_hat: bool = False
    nearest: bool = False


def _heaviest_keys(queries, keys, y, lambdas, key_count, route: FitRoute):
    """Each query's heaviest key with its response, ``(n, d + p)``, and its log weight
    ``(n,)``: by a sorted search in one continuous column, else by an exp-free pass over
    the keys (ties: their mean). No gradient: the fits do not depend on it."""
    model, exclude_self = route.model, route.exclude_self
    method, key_block = route.method, route.key_block
    lambdas, queries, keys, y = jax.lax.stop_gradient((lambdas, queries, keys, y))
    rows = jnp.concatenate([keys, y], axis=1)
    if model.var_type == "c" and _kernels.is_monotone(model.kernel):
        index = nearest_key(queries, keys, key_count=key_count, exclude_self=exclude_self)
        gaps = queries[:, 0] - keys[index, 0]
        return rows[index], model.kernel.log_profile(gaps * gaps)
    block = _block_function(
        model, lambdas, exclude_self=exclude_self, key_count=key_count, hard=True
    )
    state = pool_state(block, queries, keys, rows, method=method, key_block=key_block, hard=True)
    return finalize(state)[0], state.max_log


@partial(jax.jit, static_argnames=("route",))
def _local_core(x_train, y_train, x_query, bandwidth, key_count, *, route: FitRoute,
                weights=None):  # fmt: skip
    model, method, exclude_self = route.model, route.method, route.exclude_self
    cont = jnp.array(model.continuous, dtype=int)
    centre = key_centre(x_train[:, cont]) if model.continuous else None
    lambdas = bandwidth[jnp.array(model.categorical, dtype=int)] if model.categorical else None
    keys = prepare(x_train, bandwidth, centre, model)
    queries = prepare(x_query, bandwidth, centre, model)
    known, reference, offset, rows = None, None, None, queries
    d, p = x_train.shape[1], y_train.shape[1]
    if model.degree == 1:
        # The moments are taken about each query's heaviest key: about the query,
        # E[δδᵀ] − E[δ]E[δ]ᵀ cancels to rounding once that key carries nearly all the
        # weight, and the slope came out of the rounding; about it, its own terms are 0.
        reference, known = _heaviest_keys(queries, keys, y_train, lambdas, key_count, route)
        offset = reference[:, :d] - queries
        rows = jnp.concatenate([queries, reference], axis=1)
        if weights is not None:  # log w moves the row's largest log weight
            known = None
    elif method == "stream" and not exclude_self and model.var_type == "c" and weights is None:
        # the nearest key's log weight is each row's maximum (not when leaving one out)
        known = nearest_log_weight(queries, keys, model.kernel)
    if method == "pallas":
        state = pallas.tiled_state(
            rows,
            keys,
            y_train,
            kernel=model.kernel,
            key_count=key_count,
            left_out=jnp.arange(rows.shape[0]) if exclude_self else None,
            factors=weights,
            moments=model.degree == 1,
        )
    else:
        block = _block_function(
            model,
            lambdas,
            exclude_self=exclude_self,
            max_log=known,
            key_count=key_count,
            weights=weights,
            raw=_raw_columns(x_query, x_train, bandwidth, model),
        )
        state = pool_state(block, rows, keys, y_train, method=method, key_block=route.key_block)
    means, empty = finalize(state)
    fit, slopes, inverse_11 = solve_moments(means, d, p, model.degree, offset)
    if reference is not None:
        fit = fit + reference[:, d:]
    units = jnp.ones(d, x_train.dtype)
    if model.continuous:
        units = units.at[: len(model.continuous)].set(bandwidth[cont])
    slopes = (slopes / units[None, :, None])[:, np.argsort(model.order), :]
    hat = None
    if route.with_hat:
        self_log = _self_log_weights(queries, lambdas, model, method)
        shift = jnp.where(jnp.isfinite(state.max_log), state.max_log, 0.0)
        hat = jnp.exp(self_log - shift) / jnp.where(empty, 1.0, state.weight_sum) * inverse_11
    if exclude_self:  # leave-one-out: a row that is empty or overflowed stays NaN
        return jnp.where(empty[:, None], jnp.nan, fit), slopes, hat, empty

    def closest():  # ties share in proportion to their observation weights
        hard = kernel_block(_kernels.get("gaussian"), hard=True, key_count=key_count)
        state = pool_state(
            hard,
            relative(x_query, bandwidth, centre, model),
            relative(x_train, bandwidth, centre, model),
            y_train if weights is None else augmented(y_train, weights),
            method=method,
            key_block=route.key_block,
            hard=True,
        )
        limit = finalize(state)[0]
        return limit if weights is None else divided(limit, y_train)

    return with_nearest_limit(fit, empty, route.nearest, closest), slopes, hat, empty


def _raw_columns(x_query, x_train, bandwidth, model: LocalModel):
    """``(queries, keys, bandwidths)`` of the continuous columns, unscaled, for a compact
    kernel's weights (:func:`attnpool.sums.local_model.log_weights`); else None."""
    if not (model.continuous and has_edge(model.kernel)):
        return None
    cont = jnp.array(model.continuous, dtype=int)
    return x_query[:, cont], x_train[:, cont], bandwidth[cont]


def _self_log_weights(queries, lambdas, model: LocalModel, method: str):
    """Each row's log weight on itself, in the convention of ``method``'s sums."""
    if method == "pallas":  # the difference form, exactly
        columns = [queries[:, j] for j in range(queries.shape[1])]
        return pair_log_weights(columns, columns, model.kernel)
    return jax.vmap(lambda row: log_weights(row[None], row[None], lambdas, model)[0, 0])(queries)


def tiled_model(model: LocalModel) -> bool:
    """Whether the tiled kernel serves ``model``: continuous columns, a kernel it sums."""
    return not model.categorical and pallas.supports(model.kernel)


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
    weights=None,
    engine=None,
):
    """Traceable core: arrays already validated, ``(n, d)``/``(n, p)``, bandwidth ``(d,)``.

    Returns ``fit (n_q, p)``, ``slopes (n_q, d, p)`` in the inputs' units, the hat
    diagonal (or None) and the ``(n_q,)`` mask of empty neighbourhoods. Rows are padded
    to their buckets (:mod:`attnpool._support.shapes`) unless ``key_count`` says the training
    rows from that one on are padding already (then queries are not padded either).
    ``weights (n,)``: positive observation weights of the training rows (the hat
    diagonal is then that of one copy of each row). ``engine``: ``"dense"``, ``"stream"``
    or ``"pallas"`` (the tiled kernel, :mod:`attnpool.methods.pallas`; continuous
    columns); None: the planner's compiled fits' table (:mod:`attnpool.sums.plan`).
    """
    n, m = x_query.shape[0], x_train.shape[0]
    if key_count is None and 0 < n and m <= MAX_ROWS:
        size = bucket(m)
        x_train, y_train = padded(x_train, y_train, size=size)
        if weights is not None:
            weights = pad_rows(weights, size)
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
            weights=weights,
            engine=engine,
        )
        return unpadded(results, n, host=is_host(x_train, x_query))
    facts = fit_facts(model, n, m, y_train.shape[1], block_size=block_size is not None)
    method = plan(facts._replace(task="compiled")).backend if engine is None else engine
    if method == "pallas" and not tiled_model(model):
        raise ValueError(
            "method: 'pallas' fits continuous columns with a non-negative kernel; "
            f"received var_type={model.var_type!r}, kernel={model.kernel.name!r}"
        )
    key_block = block_size or max(64, KEY_BLOCK // block_width(facts))
    route = FitRoute(model, method, key_block, exclude_self, with_hat, nearest)
    if weights is not None:  # the responses in units of their column's largest: the
        # weights' span (to 2⁵¹¹) times responses of 2⁻¹⁰⁰⁰ underflowed (the fit is linear in y)
        scale = column_scale(y_train)
        fit, slopes, *rest = _local_core(x_train, y_train / scale, x_query, bandwidth,
                                         key_count, route=route, weights=weights)  # fmt: skip
        return (fit * scale, slopes * scale, *rest)
    return _local_core(x_train, y_train, x_query, bandwidth, key_count, route=route)


def loo_residuals(x, y, bandwidth, model: LocalModel, *, block_size=None, count=None,
                  weights=None, engine=None):  # fmt: skip
    """Leave-one-out residuals ``y_i − ĝ₋ᵢ(x_i)`` (traceable); NaN where no neighbour is left.

    ``count``: rows from this one on are padding (their residuals mean nothing).
    ``weights``: observation weights (each point left out whole).
    """
    fit, _, _, _ = local_fit(
        x, y, x, bandwidth, model, exclude_self=True, block_size=block_size, key_count=count,
        weights=weights, engine=engine,
    )  # fmt: skip
    return y - fit


def hat_diagonal(x, y, bandwidth, model: LocalModel, *, block_size=None, count=None,
                 weights=None, engine=None):  # fmt: skip
    """In-sample fit and the diagonal of the smoother ("hat") matrix (traceable; with
    observation ``weights``, the diagonal of one copy of each row)."""
    fit, _, hat, _ = local_fit(
        x, y, x, bandwidth, model, with_hat=True, block_size=block_size, key_count=count,
        weights=weights, engine=engine,
    )  # fmt: skip
    return fit, hat


@partial(jax.jit, static_argnames=("model", "nearest"))
def weights_core(x_train, x_query, bandwidth, *, model, nearest):
    cont = jnp.array(model.continuous, dtype=int)
    centre = key_centre(x_train[:, cont]) if model.continuous else None
    lambdas = bandwidth[jnp.array(model.categorical, dtype=int)] if model.categorical else None
    keys = prepare(x_train, bandwidth, centre, model)
    queries = prepare(x_query, bandwidth, centre, model)
    raw = _raw_columns(x_query, x_train, bandwidth, model)
    weights, empty = normalise(log_weights(queries, keys, lambdas, model, raw))

    def closest():
        geometry = (
            relative(x_query, bandwidth, centre, model),
            relative(x_train, bandwidth, centre, model),
        )
        return dense_weights(*geometry, _kernels.get("gaussian"), hard=True)[0]

    return with_nearest_limit(weights, empty, nearest, closest), empty
