"""Key masks (``mask=``): a boolean (n, m) matrix or per-query valid lengths.

Masked keys get no weight on every method, under ``jit`` and ``grad`` and in the
nearest-key limit; a query left no key follows the ``empty=`` policy. The reference is
the textbook formula with the masked weights set to zero before normalising.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from adversarial import assert_rows_meet_the_oracle, problems, row_settings
from attnpool import (
    Binned,
    EmptyNeighbourhoodWarning,
    TopK,
    attention_pool,
    attention_weights,
    nadaraya_watson,
)
from method_data import (
    BINNED_TOLERANCE,
    EXACT_METHOD_CASES,
    data,
    value_range,
)
from reference import nearest_values, reference_weights

N, M = 60, 700


def masked_reference(queries, keys, values, kernel, bandwidth, allowed):
    """The four-line formula, masked weights zeroed, then normalised over the keys."""
    with np.errstate(invalid="ignore"):
        weights = np.nan_to_num(reference_weights(queries, keys, kernel, bandwidth)) * allowed
        weights = weights / weights.sum(axis=1, keepdims=True)
    return weights @ values


def as_matrix(mask, m=M):
    return mask if mask.dtype == bool else np.arange(m)[None, :] < mask[:, None]


def masks(seed, n=N, m=M):
    """A random boolean mask (every row with some keys) and random valid lengths."""
    rng = np.random.default_rng(seed)
    matrix = rng.random((n, m)) < 0.3
    matrix[np.arange(n), rng.integers(0, m, n)] = True
    lengths = rng.integers(1, m + 1, n)
    lengths[:5] = m  # rows a mask does not restrict (the host methods pool those)
    return {"matrix": matrix, "lengths": lengths}


METHODS = [*EXACT_METHOD_CASES, ("binned", "gaussian", 1, None), ("topk", "gaussian", 1, None)]


@pytest.mark.parametrize("kind", ["matrix", "lengths"])
@pytest.mark.parametrize("method, kernel, d, rtol", METHODS)
def test_masked_keys_get_no_weight_on_every_method(method, kernel, d, rtol, kind):
    queries, keys, values = data(40 + d, n=N, m=M, d=d)
    mask = masks(d)[kind]
    bandwidth = 0.8
    want = masked_reference(queries, keys, values, kernel, bandwidth, as_matrix(mask))
    option = {"binned": Binned(), "topk": TopK(k=600)}.get(method, method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyNeighbourhoodWarning)
        got = attention_pool(
            queries, keys, values, kernel=kernel, bandwidth=bandwidth, method=option, mask=mask
        )
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    if rtol is None:  # an approximation: its stated tolerance, on the values' range
        error = np.nanmax(np.abs(got - want), axis=0) / value_range(values)
        assert np.all(error <= BINNED_TOLERANCE)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(values).max())


def test_valid_lengths_are_the_textbooks_valid_lens():
    # the masked softmax of "Dive into Deep Learning": query i attends its first
    # valid_lens[i] keys, as the boolean mask arange(m) < valid_lens[:, None]
    queries, keys, values = data(50, n=8, m=12)
    valid_lens = np.array([1, 2, 3, 12, 5, 6, 7, 8])
    by_lengths = attention_pool(queries, keys, values, bandwidth=2.0, mask=valid_lens)
    by_matrix = attention_pool(queries, keys, values, bandwidth=2.0, mask=as_matrix(valid_lens, 12))
    np.testing.assert_allclose(by_lengths, by_matrix, rtol=1e-14)
    np.testing.assert_allclose(by_lengths[0], values[0], rtol=1e-14)  # one key: its value
    every = attention_pool(queries[3:4], keys, values, bandwidth=2.0)
    np.testing.assert_allclose(by_lengths[3:4], every, rtol=1e-14)
    np.testing.assert_allclose(  # a scalar length is every query's
        attention_pool(queries, keys, values, bandwidth=2.0, mask=np.int64(4)),
        attention_pool(queries, keys, values, bandwidth=2.0, mask=np.full(8, 4)),
        rtol=1e-14,
    )


@pytest.mark.parametrize("kind", ["matrix", "lengths"])
def test_masked_weights_are_zero_and_rows_sum_to_one(kind):
    queries, keys, _ = data(51, n=N, m=M)
    mask = masks(3)[kind]
    weights = attention_weights(queries, keys, bandwidth=0.5, mask=mask)
    assert np.all(weights[~as_matrix(mask)] == 0)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-12)
    want = masked_reference(queries, keys, np.eye(M), "gaussian", 0.5, as_matrix(mask))
    np.testing.assert_allclose(weights, want, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("method", ["dense", "stream"])
def test_masks_hold_under_jit_and_grad(method):
    queries, keys, values = (jnp.asarray(a, jnp.float32) for a in data(52, n=N, m=M))
    mask = masks(4)["matrix"]
    hidden = ~mask.any(axis=0)  # keys no query may attend
    mask[:, :20] = False
    hidden[:20] = True

    def pool(q, v, allowed):
        return attention_pool(q, keys, v, bandwidth=0.5, method=method, mask=allowed)

    jitted = jax.jit(pool)(queries, values, jnp.asarray(mask))
    np.testing.assert_allclose(
        np.asarray(jitted), np.asarray(pool(queries, values, mask)), rtol=1e-5, atol=1e-6
    )
    gradient = jax.grad(lambda v: pool(queries, v, jnp.asarray(mask)).sum())(values)
    assert np.all(np.asarray(gradient)[hidden] == 0)  # a masked key's value changes nothing
    # d/dq by central differences, in float64
    q64, k64, v64 = (np.asarray(a, np.float64) for a in (queries, keys, values))
    with jax.enable_x64(True):

        def total(q):
            return attention_pool(
                q, jnp.asarray(k64), jnp.asarray(v64), bandwidth=0.5, method=method, mask=mask
            ).sum()

        analytic = np.asarray(jax.grad(total)(jnp.asarray(q64)))
        step = 1e-6
        numeric = np.array(
            [
                (total(jnp.asarray(q64 + step * e)) - total(jnp.asarray(q64 - step * e)))
                / (2 * step)
                for e in np.eye(N)[:6, :, None]
            ]
        )
    np.testing.assert_allclose(analytic[:6, 0], numeric, rtol=1e-6, atol=1e-8)


def test_the_nearest_key_limit_skips_masked_keys():
    keys = np.array([0.0, 1.0, 2.0, 3.0])
    values = np.array([10.0, 20.0, 30.0, 40.0])
    queries = np.array([1.0, 1.0, 2.9])
    mask = np.array([[True, True, True, True], [True, False, False, True], [1, 1, 0, 0]], bool)
    # a tiny bandwidth: each query's nearest *allowed* key, ties averaged
    got = attention_pool(queries, keys, values, bandwidth=1e-30, mask=mask)
    np.testing.assert_array_equal(got, [20.0, 10.0, 20.0])
    # a compact kernel whose support holds no allowed key, empty="nearest"
    got = attention_pool(
        queries, keys, values, kernel="boxcar", bandwidth=0.5, empty="nearest", mask=mask
    )
    np.testing.assert_array_equal(got, [20.0, 10.0, 20.0])
    brute_force = [
        nearest_values(queries[i : i + 1], keys[row], values[row])[0] for i, row in enumerate(mask)
    ]
    np.testing.assert_array_equal(got, brute_force)


def test_a_query_left_no_key_follows_the_empty_policy():
    queries, keys, values = data(53, n=10, m=50)
    lengths = np.full(10, 50)
    lengths[[2, 7]] = 0
    for empty in ("nan", "nearest"):
        with pytest.warns(EmptyNeighbourhoodWarning, match="2 of 10 queries have every key masked"):
            got = attention_pool(queries, keys, values, mask=lengths, empty=empty)
        assert np.isnan(got[[2, 7]]).all() and np.isfinite(np.delete(got, [2, 7], 0)).all()
    with pytest.raises(ValueError, match="mask: 2 of 10 queries have every key masked"):
        attention_pool(queries, keys, values, mask=lengths, empty="raise")
    # under jit the row is NaN as well (no warning can be given there)
    jitted = jax.jit(lambda q: attention_pool(q, keys, values, mask=jnp.asarray(lengths)))(
        jnp.asarray(queries, jnp.float32)
    )
    assert np.isnan(np.asarray(jitted)[[2, 7]]).all()
    with pytest.warns(EmptyNeighbourhoodWarning, match="every key masked"):
        weights = attention_weights(queries, keys, mask=lengths)
    assert np.isnan(weights[[2, 7]]).all()


def test_nadaraya_watson_takes_a_mask():
    x = np.linspace(0, 1, 20)
    y = 3 * x
    got = nadaraya_watson(x, y, np.array([0.5, 0.5]), bandwidth=1e-6, mask=np.array([20, 3]))
    # the first query sits halfway between x[9] and x[10]; the second may see x[:3] only
    np.testing.assert_allclose(got, [(y[9] + y[10]) / 2, y[2]], rtol=1e-7)


@pytest.mark.parametrize(
    "mask, message",
    [
        (np.ones((4, 6), bool), r"mask: expected a boolean array of shape .* \(4, 5\).*\(4, 6\)"),
        (np.ones(4), r"mask: .* dtype float64"),
        (np.array([1, 2, 3, 6]), r"mask: valid lengths must lie in \[0, 5\].* to 6"),
        (np.array([-1, 2, 3, 4]), r"mask: valid lengths .* from -1"),
        (np.ones((4, 2), int), r"mask: .* integer lengths of shape \(4, 2\)"),
    ],
)
def test_bad_masks_are_clear_errors(mask, message):
    with pytest.raises(ValueError, match=message):
        attention_pool(np.zeros(4), np.arange(5.0), np.arange(5.0), mask=mask)


# --- hostile data: the exact oracle row by row, on each row's allowed keys -----------------

MASKED_EXAMPLES = row_settings(25)


@pytest.mark.parametrize("method", ["dense", "stream", "fused", "sparse", "fgt", "native", "auto"])
def test_masked_pools_meet_the_oracle_on_adversarial_data(method):
    # bandwidths from 1e-300 to 1e300 of the data's scale, shifts to 1e12, ties, huge
    # values (tests/adversarial.py); each row against the long-double oracle on its keys
    @MASKED_EXAMPLES
    @given(problem=problems(method), seed=st.integers(0, 2**16))
    def run(problem, seed):
        queries, keys, values, kernel, bandwidth, dtype = problem
        rng = np.random.default_rng(seed)
        allowed = rng.random((queries.shape[0], keys.shape[0])) < 0.5
        allowed[np.arange(queries.shape[0]), rng.integers(0, keys.shape[0], queries.shape[0])] = 1
        got = attention_pool(
            queries, keys, values, kernel=kernel, bandwidth=bandwidth, method=method,
            empty="nearest", mask=allowed,
        )  # fmt: skip
        assert_rows_meet_the_oracle(
            method, got, queries, keys, values, kernel, bandwidth, dtype, allowed
        )

    run()
