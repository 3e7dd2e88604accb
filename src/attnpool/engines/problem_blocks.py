"""A :class:`~attnpool.sums.problem.SumProblem`'s block function on the compiled engines.

For a block of query rows and key rows (unscaled: each difference is divided by its
column's bandwidth, the exact difference form) the block's pooling state is that of

- the log weights ``r log K`` of the continuous columns plus each categorical column's
  ``log L`` (Wang–van Ryzin's or Aitchison–Aitken's kernel, ``λ`` its bandwidth:
  :func:`attnpool.sums.local_model.log_categorical`), padded keys and each row's
  left-out key at ``−inf``, keys of weight 0 never setting a row's shift, observation
  weights multiplied after the shift;
- summed against ``[1, v]``, or for local linear's moments against ``[r, δ, δδᵀ, δrᵀ]``
  (the ones' sum is the state's weight sum) with ``δ = (k − o) / units`` and
  ``r = v − v_o`` about each row's reference ``(o, v_o)``, whose ``d + p`` numbers follow
  the row's ``d`` coordinates.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp

from ..sums.geometry import block_log_weights
from ..sums.local_model import LocalModel, log_categorical
from ..sums.state import PoolingState, block_state, hard_block_state
from .blocks import mask_own_pairs, mask_padding

__all__ = [
    "BlockArrays",
    "ProblemSums",
    "column_units",
    "log_weights",
    "moment_features",
    "problem_block",
    "scaled_rows",
]


class ProblemSums(NamedTuple):
    """What a problem's blocks sum (static: hashable). ``model``: the kernel, the
    columns' var types and levels, and the degree (1: moments about each row's
    reference, whose ``d + p`` numbers follow the row's ``d`` coordinates); ``power``:
    the kernel's ``r``; ``hard``: the zero-temperature state instead (the mean of each
    row's heaviest keys' columns, by ``w·K`` with observation weights; no reference
    follows the rows); ``scaled``: the rows'
    continuous columns arrive divided by their bandwidths (the divisor then gives the
    categorical columns' ``λ`` alone)."""

    model: LocalModel
    power: int = 1
    hard: bool = False
    scaled: bool = False


class BlockArrays(NamedTuple):
    """What a problem's blocks read beside its rows and columns, each None where absent:
    the keys' observation weights ``factors (m,)``, the key ``left_out (n,)`` of each row
    (``−1``: none), the ``key_count`` (keys from it on are padding) and ``max_log (n,)``,
    each row's largest log weight where known (the blocks then skip their max
    reduction)."""

    factors: Any = None
    left_out: Any = None
    key_count: Any = None
    max_log: Any = None


def problem_block(sums: ProblemSums, divisor: Any, arrays: BlockArrays, *,
                  streamed: bool) -> Any:  # fmt: skip
    """The block function (:func:`~attnpool.methods.stream.stream_state`'s) of the
    problem ``sums`` says, with bandwidths ``divisor (d,)`` and the ``arrays`` beside
    the rows. ``streamed``: the blocks are a scan's (the Gaussian's log weights column by
    column)."""
    model, power, hard, scaled = sums
    factors, left_out, key_count, max_log = arrays
    d = len(model.var_type)
    moments = model.degree == 1 and not hard
    units = None if scaled else column_units(model, divisor)

    def block(query_rows, query_ids, key_rows, key_ids, value_rows) -> PoolingState:
        reference = None
        if moments:
            query_rows, reference = query_rows[:, :d], query_rows[:, d:]
        scores = log_weights(model, query_rows, key_rows, divisor, streamed=streamed,
                             scaled=scaled)  # fmt: skip
        scores = mask_padding(scores if power == 1 else power * scores, key_ids, key_count)
        if factors is not None:  # a key of weight 0 never sets a row's shift (it would
            # leave log 0 beside a far key that weighs)
            scores = jnp.where(factors[key_ids][None, :] > 0, scores, -jnp.inf)
        if left_out is not None:
            scores = mask_own_pairs(scores, left_out[query_ids], key_ids)
        weights = None if factors is None else factors[key_ids][None, :]
        if hard:  # with weights, the heaviest keys by w·K (keys of weight 0 are out above)
            if weights is not None:
                scores = scores + jnp.log(jnp.where(weights > 0, weights, 1.0))
            return hard_block_state(scores, value_rows)
        if reference is not None:
            value_rows = _moment_rows(key_rows, value_rows, reference, units, d)
        known = None if max_log is None else max_log[query_ids]
        return block_state(scores, value_rows, known, factors=weights)

    return block


def column_units(model: LocalModel, divisor: Any) -> Any:
    """``(d,)``: the units of the moments' differences ``δ`` — each continuous column's
    bandwidth, 1 for a categorical one."""
    return jnp.where(jnp.array([t == "c" for t in model.var_type]), divisor, 1.0)


def log_weights(model: LocalModel, q: Any, k: Any, divisor: Any, *, streamed: bool = False,
                scaled: bool = False) -> Any:  # fmt: skip
    """``(n, b)``: ``log K`` of the continuous columns of the unscaled rows ``q (n, d)``
    and ``k (b, d)``, each difference divided by its bandwidth in ``divisor (d,)``, plus
    each categorical column's ``log L`` (its ``λ`` in ``divisor``). ``scaled``: the
    continuous columns are divided already (:func:`scaled_rows`; for a Gaussian in
    three or more of them the matrix-product form, up to a per-row constant)."""
    continuous, categorical = list(model.continuous), list(model.categorical)
    if not continuous:
        scores = jnp.zeros((q.shape[0], k.shape[0]), q.dtype)
    elif not categorical:
        scores = block_log_weights(q, k, model.kernel, by_column=streamed,
                                   divisor=None if scaled else divisor)  # fmt: skip
    else:
        columns = jnp.array(continuous)
        scores = block_log_weights(q[:, columns], k[:, columns], model.kernel,
                                   by_column=streamed,
                                   divisor=None if scaled else divisor[columns])  # fmt: skip
    for j in categorical:
        scores = scores + log_categorical(q[:, j, None], k[None, :, j], divisor[j],
                                          model.var_type[j], model.levels[j], jnp)  # fmt: skip
    return scores


def scaled_rows(rows: Any, bandwidth: Any, centre: Any, model: LocalModel) -> Any:
    """``rows (n, d)`` with each continuous column centred on ``centre`` (the keys'
    midrange: far from the origin, dividing first would lose the low digits) and divided
    by its bandwidth; the categorical columns as they are."""
    continuous = jnp.array(model.continuous, dtype=int)
    return rows.at[:, continuous].set((rows[:, continuous] - centre) / bandwidth[continuous])


def _moment_rows(key_rows: Any, value_rows: Any, reference: Any, units: Any, d: int) -> Any:
    """``(n, b, p + d + d² + d·p)``: :func:`moment_features` of each pair about its row's
    reference (the ones' column is the state's weight sum); ``value_rows (b, 1 + p)``
    are ``[1, v]``."""
    delta = key_rows[None, :, :] - reference[:, None, :d]
    if units is not None:
        delta = delta * (1.0 / units)
    return moment_features(delta, value_rows[None, :, 1:] - reference[:, None, d:])


def moment_features(delta: Any, response: Any) -> Any:
    """``(n, b, p + d + d² + d·p)``: ``[r, δ, δδᵀ, δrᵀ]`` (row-major) of the pairs'
    differences ``delta (n, b, d)`` and responses ``response (n, b, p)``: what local
    linear's moments sum."""
    n, b, d = delta.shape
    p = response.shape[2]
    return jnp.concatenate(
        [
            response,
            delta,
            (delta[..., :, None] * delta[..., None, :]).reshape(n, b, d * d),
            (delta[..., :, None] * response[..., None, :]).reshape(n, b, d * p),
        ],
        axis=-1,
    )
