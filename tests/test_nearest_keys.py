"""The host's one nearest-key search (:func:`attnpool.sums.nearest.closest`): the keys
nearest each query in the kernel's norm, ties kept, compared without overflow or false
ties however far apart the scales — the limit every NumPy path takes as ``h → 0``: the
NumPy engine, the pair engine of higher-order kernels and varying bandwidths, and the
conditional densities."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnpool
from attnpool.sums.nearest import closest
from reference import float64_limit


def brute_force(q, k, h, norm):
    distance = np.linalg.norm((q[:, None, :] - k[None, :, :]) / h, ord=norm, axis=-1)
    return distance == distance.min(axis=1, keepdims=True)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), norm=st.sampled_from([1.0, 2.0, 3.0, math.inf]),
       exponent=st.integers(-300, 300), h=st.sampled_from([(1.0, 2.0), (0.3, 0.3)]))  # fmt: skip
def test_the_nearest_keys_at_any_scale_are_brute_forces(seed, norm, exponent, h):
    rng = np.random.default_rng(seed)
    k = rng.integers(-6, 7, (40, 2)).astype(float)  # integer grids: many exact ties
    q = rng.integers(-6, 7, (8, 2)).astype(float)
    scale = 2.0**exponent  # exact: the same ties at 2^±300
    found = closest(q * scale, k * scale, np.array(h) * scale, norm)
    # in units of the smallest bandwidth the brute force's arithmetic is exact
    assert np.array_equal(found, brute_force(q, k, np.array(h) / min(h), norm))


def test_ties_the_logarithms_would_break_are_kept():
    # 3² + 4² = 5²: log-sum-exp rounds the two distances apart
    found = closest(np.zeros((1, 2)), np.array([[3.0, 4.0], [5.0, 0.0], [0.0, 5.1]]), np.ones(2))
    assert found.tolist() == [[True, True, False]]


def test_distances_far_apart_neither_tie_nor_overflow():
    q = np.array([[0.0], [1e308]])
    k = np.array([[1e-200], [2e-200], [1e300], [-1e308], [9e307]])
    found = closest(q, k, np.ones(1))
    assert found[0].tolist() == [True, False, False, False, False]
    assert found[1].tolist() == [False, False, False, False, True]
    exact = closest(np.zeros((1, 1)), np.array([[1e-200], [0.0], [-0.0], [1e300]]), np.ones(1))
    assert exact.tolist() == [[False, True, True, False]]


def test_keys_not_allowed_are_passed_over_and_a_row_of_none_has_none():
    q, k = np.zeros((2, 1)), np.array([[0.0], [1.0], [1.0]])
    allowed = np.array([[False, True, True], [False, False, False]])
    assert closest(q, k, np.ones(1), allowed=allowed).tolist() == [
        [False, True, True], [False, False, False]]  # fmt: skip


KEYS = np.array([[3.0, 4.0], [5.0, 0.0], [-6.0, 0.0]])
VALUES = np.array([1.0, 3.0, 100.0])


@pytest.mark.parametrize("kernel", ["epanechnikov", "epanechnikov-order4"])
def test_every_route_averages_tied_nearest_keys(kernel):
    # the origin lies outside every support: the nearest-key limit, (3, 4) and (5, 0) tied
    fit = attnpool.NadarayaWatson(kernel=kernel, bandwidth=0.5, empty="nearest")
    got = fit.fit(KEYS, VALUES).predict(np.zeros((1, 2)))
    assert got.tolist() == [2.0]


def test_the_conditional_densitys_limit_averages_tied_nearest_keys():
    y = np.array([[0.0], [2.0], [50.0]])
    # the x weights all underflow (x bandwidth 1e-200): y's density from the tied pair
    found = attnpool.conditional_density(KEYS, y, np.zeros((1, 2)), np.array([[0.5]]),
                                         bandwidth=1e-200, y_bandwidth=1.0)  # fmt: skip
    both = np.mean([np.exp(-0.5 * u**2) / math.sqrt(2 * math.pi) for u in (0.5, 1.5)])
    assert math.isclose(float(found[0]), both, rel_tol=1e-12)


def test_a_key_overflowing_its_difference_is_still_measured():
    fit = attnpool.NadarayaWatson(kernel="gaussian", bandwidth=1.0)
    keys = np.array([[-1e308], [9e307], [0.0]])
    got = fit.fit(keys, np.array([1.0, 2.0, 3.0])).predict(np.array([[1e308]]))
    assert got.tolist() == [2.0]


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("exponent", [-600, 0, 600])
def test_every_compiled_route_takes_the_limit_with_near_and_far_queries(d, exponent):
    # a query far from the keys beside ones among them: one power of two for all the
    # rows once flushed the near rows' differences to 0 (the mean of every key), and
    # the compiled local fits' squares overflowed for the far one (0)
    rng = np.random.default_rng(d)
    scale = 2.0**exponent
    keys = rng.integers(-6, 7, (20, d)) * scale  # integer grids: exact ties
    values = rng.normal(size=20)
    near = (rng.integers(-6, 7, (4, d)) + 0.25) * scale
    far = np.array([[2.0**400] + [0.0] * (d - 1), [-(2.0**300)] + [1.0] * (d - 1)]) * scale
    queries = np.vstack([near, far])
    want = float64_limit(queries, keys, values)
    h = 2.0 ** (exponent - 400)  # the far rows' squared distances beyond the float range
    for method in ("dense", "stream"):
        pooled = attnpool.attention_pool(queries, keys, values, bandwidth=h, method=method)
        np.testing.assert_array_equal(pooled, want)
        compact = attnpool.attention_pool(queries, keys, values, kernel="epanechnikov",
                                          bandwidth=h, method=method, empty="nearest")  # fmt: skip
        np.testing.assert_array_equal(compact, want)
        for degree in (0, 1):
            fit = attnpool.local_regression(keys, values, queries, bandwidth=h, degree=degree,
                                            method=method)  # fmt: skip
            np.testing.assert_allclose(fit, want, rtol=1e-15, atol=0)
    weights = attnpool.attention_weights(queries, keys, bandwidth=h)
    np.testing.assert_allclose(weights @ values, want, rtol=1e-15)


@pytest.mark.parametrize("method", ["dense", "stream"])
def test_float32_queries_far_beyond_tiny_keys_take_the_limit(method):
    # keys near 1e-30 are brought to 1; a query at 1e10 kept the float64 headroom of
    # 2^1000 and overflowed float32 (2^128)
    keys = np.array([0.0, 1e-30, 2e-30], np.float32)
    values = np.array([1.0, 2.0, 3.0], np.float32)
    queries = np.array([0.4e-30, 1e10, 1.7e-30], np.float32)
    options = {"kernel": "epanechnikov", "method": method, "empty": "nearest"}
    got = attnpool.attention_pool(queries, keys, values, bandwidth=np.float32(2e-38), **options)
    np.testing.assert_array_equal(got, [1.0, 2.0, 3.0])
