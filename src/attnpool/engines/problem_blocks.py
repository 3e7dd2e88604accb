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

from typing import Any

import jax.numpy as jnp

from ..sums.geometry import block_log_weights
from ..sums.local_model import LocalModel, log_categorical
from ..sums.state import PoolingState, block_state
from .blocks import mask_own_pairs, mask_padding

__all__ = ["moment_features", "problem_block"]


def problem_block(
    model: LocalModel, divisor: Any, *, streamed: bool, factors: Any = None,
    left_out: Any = None, key_count: Any = None, power: int = 1,
) -> Any:  # fmt: skip
    """The block function (:func:`~attnpool.methods.stream.stream_state`'s) of a problem
    of ``model`` (its kernel, var types and levels; degree 1: moments about each row's
    reference) with bandwidths ``divisor (d,)``, observation weights ``factors (m,)``,
    the key ``left_out (n,)`` of each row (``−1``: none), keys from ``key_count`` on
    padding, and the kernel's ``power``. ``streamed``: the blocks are a scan's (the
    Gaussian's log weights column by column)."""
    d = len(model.var_type)
    moments = model.degree == 1
    continuous, categorical = list(model.continuous), list(model.categorical)
    units = jnp.where(jnp.array([t == "c" for t in model.var_type]), divisor, 1.0)

    def block(query_rows, query_ids, key_rows, key_ids, value_rows) -> PoolingState:
        reference = None
        if moments:
            query_rows, reference = query_rows[:, :d], query_rows[:, d:]
        scores = _log_weights(model, query_rows, key_rows, divisor, continuous, categorical,
                              streamed)  # fmt: skip
        scores = mask_padding(scores if power == 1 else power * scores, key_ids, key_count)
        if factors is not None:  # a key of weight 0 never sets a row's shift (it would
            # leave log 0 beside a far key that weighs)
            scores = jnp.where(factors[key_ids][None, :] > 0, scores, -jnp.inf)
        if left_out is not None:
            scores = mask_own_pairs(scores, left_out[query_ids], key_ids)
        weights = None if factors is None else factors[key_ids][None, :]
        if reference is not None:
            value_rows = _moment_rows(key_rows, value_rows, reference, units, d)
        return block_state(scores, value_rows, factors=weights)

    return block


def _log_weights(model: LocalModel, q: Any, k: Any, divisor: Any, continuous: list[int],
                 categorical: list[int], streamed: bool) -> Any:  # fmt: skip
    """``(n, b)``: ``log K`` of the continuous columns plus ``log L`` of the others."""
    if not categorical:
        return block_log_weights(q, k, model.kernel, by_column=streamed, divisor=divisor)
    if continuous:
        columns = jnp.array(continuous)
        scores = block_log_weights(q[:, continuous], k[:, continuous], model.kernel,
                                   by_column=streamed, divisor=divisor[columns])  # fmt: skip
    else:
        scores = jnp.zeros((q.shape[0], k.shape[0]), q.dtype)
    for j in categorical:
        scores = scores + log_categorical(q[:, j, None], k[None, :, j], divisor[j],
                                          model.var_type[j], model.levels[j], jnp)  # fmt: skip
    return scores


def _moment_rows(key_rows: Any, value_rows: Any, reference: Any, units: Any, d: int) -> Any:
    """``(n, b, p + d + d² + d·p)``: :func:`moment_features` of each pair about its row's
    reference (the ones' column is the state's weight sum); ``value_rows (b, 1 + p)``
    are ``[1, v]``."""
    delta = (key_rows[None, :, :] - reference[:, None, :d]) / units
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
