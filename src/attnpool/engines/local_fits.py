"""The compiled local fits: local constant and local linear on the pooling engines.

Degree 0 pools the responses; degree 1 pools the local moments ``[y, δ, δδᵀ, δy]``
about each query's heaviest key with the same pooling state and solves them at each query
(:func:`attnpool.sums.local_model.solve_moments`). Leave-one-out fits mask each point's own
pair inside the blocks; the hat diagonal is ``α_ii`` (degree 0) or
``α_ii (1 + μ₁ᵀ C⁻¹ μ₁)`` (degree 1). The formulas are in :mod:`attnpool.regression`.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import kernels as _kernels
from .._support.shapes import MAX_ROWS, bucket, is_host, pad_rows, padded, query_bucket, unpadded
from ..kernels.edges import has_edge
from ..methods import dense_weights, normalise
from ..methods.options import fit_refusal
from ..methods.stream import KEY_BLOCK
from ..sums.costs import block_width
from ..sums.facts import fit_facts
from ..sums.geometry import key_centre, keys_to_unit, lift_exponent
from ..sums.local_model import LocalModel, relative, solve_moments
from ..sums.observation_weights import augmented, column_scale, divided
from ..sums.plan import plan
from ..sums.state import finalize
from .blocks import nearest_key
from .compiled_backends import ENGINES, Rows
from .problem_blocks import BlockArrays, ProblemSums, column_units, log_weights, scaled_rows
from .programs import with_nearest_limit

__all__ = ["FitRequest", "FitRoute", "hat_diagonal", "local_fit", "loo_residuals", "weights_core"]


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


class _Geometry(NamedTuple):
    """A local fit's rows as its engine's blocks take them: ``queries``, ``keys``, the
    ``divisor`` (the bandwidths) and whether the rows are ``scaled`` (their continuous
    columns divided already; the divisor then gives the categorical columns' ``λ``)."""

    queries: Any
    keys: Any
    divisor: Any
    scaled: bool


def _geometry(x_query, x_train, bandwidth, model: LocalModel, engine, *,
              edges: bool = True) -> _Geometry:  # fmt: skip
    """A smooth kernel's rows centred and divided by the bandwidth (:func:`scaled_rows`)
    where the engine takes them so; else the rows as they are, each difference divided in
    the blocks — a compact kernel's edge decided as on every path
    (:mod:`attnpool.kernels.edges`). ``edges=False``: a compact kernel's rows scaled
    too (where no edge is decided exactly: the search for each row's heaviest key)."""
    exact_edges = edges and has_edge(model.kernel)
    if not (engine.scales_rows and model.continuous) or exact_edges:
        return _Geometry(x_query, x_train, bandwidth, False)
    centre = key_centre(x_train[:, jnp.array(model.continuous)])
    return _Geometry(scaled_rows(x_query, bandwidth, centre, model),
                     scaled_rows(x_train, bandwidth, centre, model), bandwidth, True)  # fmt: skip


def _lifted(x_query, x_train, bandwidth, model: LocalModel):
    """``(x_query, x_train, bandwidth, e)``: the continuous columns times the power of two
    ``2^−e ≥ 1`` of :func:`~attnpool.sums.geometry.lifted` (tiny data's differences
    above the subnormals, which XLA flushes to zero; the fit unchanged to the last
    digit)."""
    if not model.continuous:
        return x_query, x_train, bandwidth, jnp.zeros((), int)
    cont = jnp.array(model.continuous, dtype=int)
    exponent = lift_exponent(x_query[:, cont], x_train[:, cont])

    def up(a, columns):
        return a.at[..., columns].set(jnp.ldexp(a[..., columns], -exponent))

    return up(x_query, cont), up(x_train, cont), up(bandwidth, cont), exponent


def _heaviest_keys(search: _Geometry, keys, y, key_count, route: FitRoute, weights=None):
    """Each query's heaviest key — its row of ``keys`` (the sums' coordinates) and its
    response, ``(n, d + p)`` — and its log weight ``(n,)``, found in the ``search``
    geometry: by a sorted search in one continuous column, else (and with observation
    ``weights (m,)``, heaviest by ``w·K``) by the engine's zero-temperature state (ties:
    their mean). No gradient: the fits do not depend on it."""
    model, exclude_self = route.model, route.exclude_self
    queries, candidates, divisor, rows, weights = jax.lax.stop_gradient(
        (*search[:3], jnp.concatenate([keys, y], axis=1), weights)
    )
    if model.var_type == "c" and _kernels.is_monotone(model.kernel) and weights is None:
        index = nearest_key(queries, candidates, key_count=key_count, exclude_self=exclude_self)
        gaps = queries[:, 0] - candidates[index, 0]
        gaps = gaps if search.scaled else gaps / divisor[0]
        return rows[index], model.kernel.log_profile(gaps * gaps)
    state = ENGINES[route.method].problem_state(
        Rows(queries, candidates, divisor),
        rows,
        ProblemSums(model, hard=True, scaled=search.scaled),
        BlockArrays(weights, _left_out(queries, exclude_self), key_count),
        key_block=route.key_block,
    )
    return finalize(state)[0], state.max_log


def _left_out(queries, exclude_self: bool):
    """``(n,)``: the key each row leaves out — its own, the queries being the keys."""
    return jnp.arange(queries.shape[0]) if exclude_self else None


@partial(jax.jit, static_argnames=("route",))
def _local_core(x_train, y_train, x_query, bandwidth, key_count, *, route: FitRoute,
                weights=None):  # fmt: skip
    """The fit of :func:`local_fit` by the blocks every compiled sum takes
    (:mod:`.problem_blocks`)."""
    model, method, exclude_self = route.model, route.method, route.exclude_self
    engine = ENGINES[method]
    d, p = x_train.shape[1], y_train.shape[1]
    x_query, x_train, bandwidth, exponent = _lifted(x_query, x_train, bandwidth, model)
    geometry = _geometry(x_query, x_train, bandwidth, model, engine)
    queries, keys, divisor, scaled = geometry
    known, reference, offset, rows, columns = None, None, None, queries, y_train
    if model.degree == 1:
        # The moments are taken about each query's heaviest key: about the query,
        # E[δδᵀ] − E[δ]E[δ]ᵀ cancels to rounding once that key carries nearly all the
        # weight, and the slope came out of the rounding; about it, its own terms are 0.
        # (About the nearest key where weights make another the heaviest, the slopes of
        # weights spanning 1e±60 were 3e-5 off.)
        search = geometry if scaled else _geometry(x_query, x_train, bandwidth, model, engine,
                                                   edges=False)  # fmt: skip
        reference, known = _heaviest_keys(search, keys, y_train, key_count, route, weights)
        offset = reference[:, :d] - queries
        offset = offset if scaled else offset / column_units(model, bandwidth)
        rows = jnp.concatenate([queries, reference], axis=1)
        columns = jnp.concatenate([jnp.ones((x_train.shape[0], 1), y_train.dtype), y_train],
                                  axis=1)  # fmt: skip
        if weights is not None:  # log w moves the row's largest log weight
            known = None
    state = engine.problem_state(
        Rows(rows, keys, divisor),
        columns,
        ProblemSums(model, scaled=scaled),
        BlockArrays(weights, _left_out(queries, exclude_self), key_count, known),
        key_block=route.key_block,
    )
    means, empty = finalize(state)
    fit, slopes, inverse_11 = solve_moments(means, d, p, model.degree, offset)
    if reference is not None:
        fit = fit + reference[:, d:]
    # (in the inputs' units: a continuous column lifted by 2^−e has its slope times 2^−e)
    lift = (
        jnp.ones(d, slopes.dtype)
        .at[jnp.array(model.continuous, dtype=int)]
        .set(jnp.ldexp(jnp.ones((), slopes.dtype), -exponent))
    )
    slopes = slopes / column_units(model, bandwidth)[None, :, None] * lift[None, :, None]
    hat = None
    if route.with_hat:  # each row's weight on itself, in the convention of the sums
        own = jax.vmap(lambda row: log_weights(model, row[None], row[None], divisor,
                                               scaled=scaled)[0, 0])(queries)  # fmt: skip
        shift = jnp.where(jnp.isfinite(state.max_log), state.max_log, 0.0)
        hat = jnp.exp(own - shift) / jnp.where(empty, 1.0, state.weight_sum) * inverse_11
    if exclude_self:  # leave-one-out: a row that is empty or overflowed stays NaN
        return jnp.where(empty[:, None], jnp.nan, fit), slopes, hat, empty

    def closest():  # ties share in proportion to their observation weights
        nearest_rows = _relative_rows(x_query, x_train, bandwidth, model)
        values = y_train if weights is None else augmented(y_train, weights)
        state = engine.closest(nearest_rows, values, kernel=_kernels.get("gaussian"),
                               key_count=key_count, key_block=route.key_block)  # fmt: skip
        limit = finalize(state)[0]
        return limit if weights is None else divided(limit, y_train)

    return with_nearest_limit(fit, empty, route.nearest, closest), slopes, hat, empty


def _relative_rows(x_query, x_train, bandwidth, model: LocalModel) -> Rows:
    """The nearest-key geometry of both sides (:func:`~attnpool.sums.local_model.relative`),
    the keys at most 1 (:func:`~attnpool.sums.geometry.keys_to_unit`)."""
    cont = jnp.array(model.continuous, dtype=int)
    centre = key_centre(x_train[:, cont]) if model.continuous else None
    return Rows(*keys_to_unit(relative(x_query, bandwidth, centre, model),
                              relative(x_train, bandwidth, centre, model)))  # fmt: skip


def compiled_settings(method: str, block_size: int | None) -> tuple[str | None, int | None]:
    """``(engine, block_size)`` of the compiled fits for a method of
    :data:`attnpool.methods.options.LOCAL_FIT_METHODS`: ``"pallas"`` the tiled kernel,
    ``"stream"`` key blocks of ``block_size`` (by default the stream method's), the
    others the planner's compiled fits' table (engine None, as :func:`local_fit` takes it)."""
    if method == "stream":
        return None, block_size or KEY_BLOCK
    return ("pallas" if method == "pallas" else None), block_size


class FitRequest(NamedTuple):
    """What a compiled local fit is asked for: the ``model``; ``exclude_self``
    (leave-one-out: the queries are the training rows), ``with_hat`` (the hat diagonal),
    ``nearest`` (empty rows take the nearest keys' responses); ``block_size`` (key
    blocks; None: the engine's); ``engine``: ``"dense"``, ``"stream"`` or ``"pallas"``
    (the tiled kernel, :mod:`attnpool.methods.pallas`; continuous columns), None: the
    planner's compiled fits' table (:mod:`attnpool.sums.plan`)."""

    model: LocalModel
    exclude_self: bool = False
    with_hat: bool = False
    nearest: bool = False
    block_size: int | None = None
    engine: str | None = None


def local_fit(x_train, y_train, x_query, bandwidth, request: FitRequest, *, key_count=None,
              weights=None):  # fmt: skip
    """Traceable core: arrays already validated, ``(n, d)``/``(n, p)``, bandwidth ``(d,)``;
    the fit ``request`` says what is asked.

    Returns ``fit (n_q, p)``, ``slopes (n_q, d, p)`` in the inputs' units, the hat
    diagonal (or None) and the ``(n_q,)`` mask of empty neighbourhoods. Rows are padded
    to their buckets (:mod:`attnpool._support.shapes`) unless ``key_count`` says the training
    rows from that one on are padding already (then queries are not padded either).
    ``weights (n,)``: positive observation weights of the training rows (the hat
    diagonal is then that of one copy of each row).
    """
    model, exclude_self, with_hat, nearest, block_size, engine = request
    n, m = x_query.shape[0], x_train.shape[0]
    if key_count is None and 0 < n and m <= MAX_ROWS:
        size = bucket(m)
        x_train, y_train = padded(x_train, y_train, size=size)
        if weights is not None:
            weights = pad_rows(weights, size)
        queries = x_train if exclude_self or with_hat else pad_rows(x_query, query_bucket(n))
        results = local_fit(x_train, y_train, queries, bandwidth, request, key_count=np.int32(m),
                            weights=weights)  # fmt: skip
        return unpadded(results, n, host=is_host(x_train, x_query))
    facts = fit_facts(model, n, m, y_train.shape[1], block_size=block_size is not None)
    method = plan(facts._replace(task="compiled")).backend if engine is None else engine
    reason = fit_refusal(method, model)
    if reason:
        raise ValueError(f"method: {reason}")
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
    request = FitRequest(model, exclude_self=True, block_size=block_size, engine=engine)
    fit, _, _, _ = local_fit(x, y, x, bandwidth, request, key_count=count, weights=weights)
    return y - fit


def hat_diagonal(x, y, bandwidth, model: LocalModel, *, block_size=None, count=None,
                 weights=None, engine=None):  # fmt: skip
    """In-sample fit and the diagonal of the smoother ("hat") matrix (traceable; with
    observation ``weights``, the diagonal of one copy of each row)."""
    request = FitRequest(model, with_hat=True, block_size=block_size, engine=engine)
    fit, _, hat, _ = local_fit(x, y, x, bandwidth, request, key_count=count, weights=weights)
    return fit, hat


@partial(jax.jit, static_argnames=("model", "nearest"))
def weights_core(x_train, x_query, bandwidth, *, model, nearest):
    """``(weights (n_q, n), empty (n_q,))``: the local-constant fit's normalised weights
    of ``model`` (:func:`~.problem_blocks.log_weights`), the nearest-key limit's rows
    where ``nearest`` and a row is empty."""
    weights, empty = normalise(log_weights(model, x_query, x_train, bandwidth))

    def closest():
        rows = _relative_rows(x_query, x_train, bandwidth, model)
        return dense_weights(rows.queries, rows.keys, _kernels.get("gaussian"), hard=True)[0]

    return with_nearest_limit(weights, empty, nearest, closest), empty
