"""The log-domain pooling state: one block equals its parts merged, in any order.

Held to the textbook formula (weights normalised over keys, then the weighted sum) in
NumPy float64, and to the monoid laws the dense, streamed and distributed paths rely
on: the empty state is the identity, merging is associative and commutative, and
``merge_stacked`` is ``merge`` folded over the stacked axis. Log weights span hundreds
of units, where ``exp`` of them would underflow or overflow.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attnpool.sums.state import (
    PoolingState,
    block_state,
    empty_state,
    finalize,
    hard_block_state,
    merge,
    merge_stacked,
)

N, P = 3, 2


@pytest.fixture(autouse=True)
def _float64():
    with jax.enable_x64(True):
        yield


def _log_weights(columns: int):
    # −inf: a key outside a compact kernel's support; no subnormal log weights (XLA:CPU
    # flushes them to zero, and a weight's logarithm is never that close to 0 but 0)
    finite = st.floats(-700.0, 700.0, allow_subnormal=False)
    return hnp.arrays(np.float64, (N, columns), elements=st.one_of(finite, st.just(-np.inf)))


def _values(columns: int):
    return hnp.arrays(np.float64, (columns, P), elements=st.floats(-1e3, 1e3))


@st.composite
def _blocks(draw, count: int = 3):
    """``count`` blocks of keys: ``[(log_weights (N, b), values (b, P)), …]``."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=count, max_size=count))
    return [(draw(_log_weights(b)), draw(_values(b))) for b in sizes]


def _textbook(log_weights, values):
    """Distances → kernel → normalise over keys → weighted sum, in float64 (rows with
    no weight: NaN)."""
    with np.errstate(invalid="ignore"):  # a row of −inf only: NaN, as it should be
        weights = np.exp(log_weights - np.max(log_weights, axis=1, keepdims=True))
        return (weights / weights.sum(axis=1, keepdims=True)) @ values


def _pooled(state: PoolingState):
    pooled, empty = finalize(state)
    return np.where(np.asarray(empty)[:, None], np.nan, np.asarray(pooled))


def _close(a: PoolingState, b: PoolingState) -> None:
    # states equal up to their shared shift: the same maximum and pooled values
    np.testing.assert_array_equal(a.max_log, b.max_log)
    np.testing.assert_allclose(a.weight_sum, b.weight_sum, rtol=1e-13)
    np.testing.assert_allclose(_pooled(a), _pooled(b), rtol=1e-12, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(blocks=_blocks())
def test_a_block_equals_its_parts_merged_and_the_textbook_formula(blocks):
    log_weights = np.concatenate([w for w, _ in blocks], axis=1)
    values = np.concatenate([v for _, v in blocks])
    whole = block_state(log_weights, values)
    parts = [block_state(w, v) for w, v in blocks]
    merged = merge(merge(parts[0], parts[1]), parts[2])
    _close(merged, whole)
    np.testing.assert_allclose(_pooled(whole), _textbook(log_weights, values),
                               rtol=1e-12, atol=1e-9)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(blocks=_blocks())
def test_merge_is_associative_and_commutative_with_the_empty_state_as_identity(blocks):
    a, b, c = (block_state(w, v) for w, v in blocks)
    _close(merge(merge(a, b), c), merge(a, merge(b, c)))
    _close(merge(a, b), merge(b, a))
    identity = empty_state(N, P, np.float64)
    for state in (a, merge(a, b)):
        for merged in (merge(identity, state), merge(state, identity)):
            np.testing.assert_array_equal(merged.max_log, state.max_log)
            np.testing.assert_array_equal(merged.weight_sum, state.weight_sum)
            np.testing.assert_array_equal(merged.weighted_values, state.weighted_values)


@settings(max_examples=60, deadline=None)
@given(blocks=_blocks(count=4), hard=st.booleans())
def test_merge_stacked_is_merge_folded(blocks, hard):
    if hard:
        states = [hard_block_state(w, v) for w, v in blocks]
    else:
        states = [block_state(w, v) for w, v in blocks]
    folded = states[0]
    for state in states[1:]:
        folded = merge(folded, state, hard=hard)
    leaves = zip(*states, strict=True)
    stacked = PoolingState(*(jax.numpy.stack(leaf, axis=1) for leaf in leaves))
    _close(merge_stacked(stacked, axis=1, hard=hard), folded)


@settings(max_examples=60, deadline=None)
@given(blocks=_blocks())
def test_the_hard_state_averages_the_closest_keys_over_all_blocks(blocks):
    closeness = np.concatenate([w for w, _ in blocks], axis=1)
    values = np.concatenate([v for _, v in blocks])
    parts = [hard_block_state(w, v) for w, v in blocks]
    merged = merge(merge(parts[0], parts[1], hard=True), parts[2], hard=True)
    best = closeness.max(axis=1, keepdims=True)
    ties = (closeness == best) & np.isfinite(closeness)
    with np.errstate(invalid="ignore"):
        want = (ties @ values) / ties.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(_pooled(merged), want, rtol=1e-13, atol=1e-12)


def test_a_block_without_weight_is_reported_empty_not_nan():
    state = block_state(np.full((N, 2), -np.inf), np.ones((2, P)))
    pooled, empty = finalize(state)
    assert np.all(np.asarray(empty)) and np.all(np.asarray(pooled) == 0)
    merged = merge(state, block_state(np.zeros((N, 1)), np.full((1, P), 5.0)))
    np.testing.assert_array_equal(_pooled(merged), np.full((N, P), 5.0))


def test_no_gradient_flows_through_the_shift():
    # m only moves the reference point: the pooled value's gradient is the textbook's
    log_weights, values = np.array([[0.3, -1.2, 2.0]]), np.array([[1.0], [-2.0], [4.0]])

    def pooled(w):
        return finalize(block_state(w, values))[0][0, 0]

    def textbook(w):
        weights = jax.numpy.exp(w - 2.0)
        return (weights @ values)[0, 0] / weights.sum()

    np.testing.assert_allclose(jax.grad(pooled)(log_weights), jax.grad(textbook)(log_weights),
                               rtol=1e-13)  # fmt: skip
