"""attention_pool / attention_weights / nadaraya_watson against the NumPy float64 reference."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnpool
from attnpool import EmptyNeighbourhoodWarning, attention_pool, attention_weights, nadaraya_watson
from oracle import exact_pool
from reference import (
    COMPACT_KERNELS,
    DISTANCE_KERNELS,
    nearest_values,
    reference_pool,
    reference_weights,
    stable_gaussian_pool,
)

ALL_KERNELS = [*DISTANCE_KERNELS, "dot"]


def make_data(n=23, m=31, d=1, p=None, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    shape = (lambda rows: (rows,)) if d is None else (lambda rows: (rows, d))
    queries = rng.uniform(0, 1, shape(n)).astype(dtype)
    keys = rng.uniform(0, 1, shape(m)).astype(dtype)
    values = rng.normal(size=(m,) if p is None else (m, p)).astype(dtype)
    return queries, keys, values


@pytest.mark.parametrize("kernel", ALL_KERNELS)
@pytest.mark.parametrize("d", [None, 1, 3])
@pytest.mark.parametrize("p", [None, 2])
@pytest.mark.parametrize("bandwidth", ["scalar", "vector"])
def test_matches_textbook_formula(kernel, d, p, bandwidth):
    queries, keys, values = make_data(d=d, p=p)
    dims = 1 if d is None else d
    h = 0.4 if bandwidth == "scalar" else np.linspace(0.3, 0.6, dims)
    if kernel in COMPACT_KERNELS:
        h = 2.0 * np.asarray(h)  # wide enough that no neighbourhood is empty
    expected = reference_pool(queries, keys, values, kernel, h)
    got = attention_pool(queries, keys, values, kernel=kernel, bandwidth=h)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    weights = attention_weights(queries, keys, kernel=kernel, bandwidth=h)
    np.testing.assert_allclose(weights, reference_weights(queries, keys, kernel, h), atol=1e-12)


@pytest.mark.parametrize("kernel", ALL_KERNELS)
@pytest.mark.parametrize("d", [1, 8])
def test_float32_stays_float32_and_is_accurate(kernel, d):
    queries, keys, values = make_data(d=d, p=3, dtype=np.float32)
    h = 3.0 if kernel in COMPACT_KERNELS else 0.5
    got = attention_pool(queries, keys, values, kernel=kernel, bandwidth=h)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, reference_pool(queries, keys, values, kernel, h), atol=2e-5)


def test_float64_does_not_need_the_global_x64_flag():
    assert not jax.config.jax_enable_x64
    queries, keys, values = make_data()
    got = attention_pool(queries + 1e-9, keys, values, bandwidth=0.1)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, reference_pool(queries + 1e-9, keys, values, "gaussian", 0.1))
    assert not jax.config.jax_enable_x64


def test_integer_and_list_inputs_compute_in_float64():
    got = attention_pool([0, 1, 2], [0, 1, 2, 3], [1, 2, 3, 4], bandwidth=1)
    assert got.dtype == np.float64
    np.testing.assert_allclose(
        got, reference_pool([0, 1, 2], [0, 1, 2, 3], [1, 2, 3, 4], "gaussian", 1)
    )


def test_jax_in_jax_out():
    queries, keys, values = make_data(dtype=np.float32)
    got = attention_pool(jnp.asarray(queries), jnp.asarray(keys), jnp.asarray(values))
    assert isinstance(got, jax.Array) and got.dtype == jnp.float32


def test_nadaraya_watson_is_attention_pool_with_training_data_as_keys():
    x, _, y = make_data(n=40, m=40)
    x_query = np.linspace(0, 1, 7)
    np.testing.assert_array_equal(
        nadaraya_watson(x, y, x_query, bandwidth=0.2),
        attention_pool(x_query, x, y, bandwidth=0.2),
    )


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "dot", "laplacian"])
@pytest.mark.parametrize("d", [1, 2, 5])
@pytest.mark.parametrize("block_size", [1, 7, 64, 1000])
def test_streaming_equals_dense(kernel, d, block_size):
    queries, keys, values = make_data(n=37, m=101, d=d, p=2)
    h = 3.0 if kernel == "epanechnikov" else 0.3
    dense = attention_pool(queries, keys, values, kernel=kernel, bandwidth=h)
    streamed = attention_pool(
        queries, keys, values, kernel=kernel, bandwidth=h, block_size=block_size
    )
    np.testing.assert_allclose(streamed, dense, rtol=1e-12, atol=1e-13)


def test_streaming_with_many_query_blocks_equals_reference():
    queries, keys, values = make_data(n=2500, m=300, d=2)
    got = attention_pool(queries, keys, values, bandwidth=0.05, block_size=128)
    np.testing.assert_allclose(
        got, reference_pool(queries, keys, values, "gaussian", 0.05), rtol=1e-10
    )


def test_large_problems_stream_automatically():
    # 3000 × 3000 pairs exceed DENSE_MAX_PAIRS: the streamed path must equal the reference.
    queries, keys, values = make_data(n=3000, m=3000, d=1)
    assert 3000 * 3000 > attnpool.pooling.DENSE_MAX_PAIRS
    got = attention_pool(queries, keys, values, bandwidth=0.01)
    np.testing.assert_allclose(
        got, reference_pool(queries, keys, values, "gaussian", 0.01), rtol=1e-9
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [1, 2, 8])
@pytest.mark.parametrize("relative_bandwidth", [1e-3, 1e-6])
@pytest.mark.parametrize("block_size", [None, 16])
def test_no_nan_at_tiny_bandwidths(dtype, d, relative_bandwidth, block_size):
    queries, keys, values = make_data(n=50, m=60, d=d, dtype=dtype)
    queries = queries * 10 + 3  # spread over [3, 13]
    keys = keys * 10 + 3
    h = 10 * relative_bandwidth
    got = attention_pool(queries, keys, values, bandwidth=h, block_size=block_size)
    assert np.all(np.isfinite(got))
    tolerance = 1e-9 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(got, stable_gaussian_pool(queries, keys, values, h), atol=tolerance)


def test_textbook_formula_fails_where_attnpool_does_not():
    queries, keys, values = make_data(n=5, m=8, d=None, dtype=np.float32)
    queries = queries + 50.0  # far from every key
    with np.errstate(all="ignore"):
        naive = np.exp(-((queries[:, None] - keys[None]) ** 2) / (2 * 0.01**2))
        textbook = (naive / naive.sum(1, keepdims=True)) @ values
    assert np.all(np.isnan(textbook))
    got = attention_pool(queries, keys, values, bandwidth=0.01)
    np.testing.assert_allclose(got, nearest_values(queries, keys, values), rtol=1e-6)


@pytest.mark.parametrize("bandwidth", [1e-30, 2e-38])
def test_vanishing_bandwidth_gives_nearest_key_even_when_distances_overflow(bandwidth):
    queries, keys, values = make_data(n=20, m=30, d=2, dtype=np.float32)
    got = attention_pool(queries, keys, values, bandwidth=bandwidth)
    np.testing.assert_allclose(got, nearest_values(queries, keys, values), rtol=1e-6)


def test_subnormal_bandwidth_is_rejected():
    queries, keys, values = make_data(dtype=np.float32)
    with pytest.raises(ValueError, match=r"bandwidth: .* below the smallest normal float32"):
        attention_pool(queries, keys, values, bandwidth=1e-39)


def test_dot_kernel_with_vanishing_temperature_is_hard_attention():
    queries, keys, values = make_data(n=20, m=30, d=3, dtype=np.float32)
    got = attention_pool(queries, keys, values, kernel="dot", bandwidth=1e-30)
    expected = values[np.argmax(queries @ keys.T, axis=1)]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_nearest_ties_are_averaged():
    got = attention_pool(
        np.array([0.5]), np.array([0.0, 1.0, 3.0]), np.array([2.0, 4.0, 9.0]), bandwidth=1e-9
    )
    np.testing.assert_allclose(got, [3.0])


class TestEmptyNeighbourhoods:
    keys = np.array([0.0, 1.0, 2.0])
    values = np.array([10.0, 20.0, 30.0])
    queries = np.array([0.1, 5.0, 1.9, -4.0])

    @pytest.mark.parametrize("kernel", COMPACT_KERNELS)
    @pytest.mark.parametrize("block_size", [None, 2])
    def test_nan_policy_warns_once_with_the_count(self, kernel, block_size):
        with pytest.warns(EmptyNeighbourhoodWarning, match="2 of 4 queries") as record:
            got = attention_pool(
                self.queries,
                self.keys,
                self.values,
                kernel=kernel,
                bandwidth=0.5,
                block_size=block_size,
            )
        assert len(record) == 1
        assert np.isnan(got[[1, 3]]).all() and np.isfinite(got[[0, 2]]).all()
        np.testing.assert_allclose(
            got, reference_pool(self.queries, self.keys, self.values, kernel, 0.5)
        )

    @pytest.mark.parametrize("kernel", COMPACT_KERNELS)
    @pytest.mark.parametrize("block_size", [None, 2])
    def test_nearest_policy(self, kernel, block_size):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = attention_pool(
                self.queries,
                self.keys,
                self.values,
                kernel=kernel,
                bandwidth=0.5,
                empty="nearest",
                block_size=block_size,
            )
        np.testing.assert_allclose(got[[1, 3]], [30.0, 10.0])
        expected = reference_pool(self.queries, self.keys, self.values, kernel, 0.5)
        np.testing.assert_allclose(got[[0, 2]], expected[[0, 2]])

    def test_raise_policy(self):
        with pytest.raises(ValueError, match="2 of 4 queries have no key"):
            attention_pool(
                self.queries, self.keys, self.values, kernel="boxcar", bandwidth=0.5, empty="raise"
            )

    def test_weights_rows(self):
        with pytest.warns(EmptyNeighbourhoodWarning):
            weights = attention_weights(
                self.queries, self.keys, kernel="epanechnikov", bandwidth=0.5
            )
        assert np.isnan(weights[1]).all()
        np.testing.assert_allclose(weights[0], [1.0, 0.0, 0.0])
        nearest = attention_weights(
            self.queries, self.keys, kernel="epanechnikov", bandwidth=0.5, empty="nearest"
        )
        np.testing.assert_allclose(nearest[1], [0.0, 0.0, 1.0])

    def test_points_outside_the_support_get_no_weight(self):
        weights = attention_weights(
            np.array([0.0]), np.array([-0.99, 0.0, 0.99, 1.01]), kernel="tricube", bandwidth=1.0
        )
        assert weights[0, 3] == 0.0 and np.all(weights[0, :3] > 0)


def test_return_weights():
    queries, keys, values = make_data(d=2, p=3)
    pooled, weights = attention_pool(queries, keys, values, bandwidth=0.3, return_weights=True)
    assert weights.shape == (23, 31)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    np.testing.assert_allclose(pooled, weights @ values, rtol=1e-12)
    np.testing.assert_allclose(
        pooled, attention_pool(queries, keys, values, bandwidth=0.3), rtol=1e-12
    )


def test_return_weights_refuses_a_matrix_too_large_for_memory():
    queries = np.zeros(10_000)
    keys = np.zeros(10_000)
    with pytest.raises(
        ValueError, match="return_weights: the weight matrix would have 10000 × 10000"
    ):
        attention_pool(queries, keys, keys, return_weights=True)
    with pytest.raises(ValueError, match="return_weights"):
        attention_weights(queries, keys)


def test_no_queries():
    _, keys, values = make_data(p=2)
    assert attention_pool(np.zeros((0,)), keys, values).shape == (0, 2)
    assert attention_weights(np.zeros((0,)), keys).shape == (0, 31)


def test_exact_lookup_with_one_hot_weights_is_the_identity_heatmap():
    keys = np.arange(10.0)
    weights = attention_weights(keys, keys, kernel="boxcar", bandwidth=0.5)
    np.testing.assert_array_equal(weights, np.eye(10))


def test_readme_example_runs():
    # the README's usage example, kept in sync by the README doctest too
    data = attnpool.datasets.sine_data(n=40, seed=0)
    fit = nadaraya_watson(data.x_train, data.y_train, data.x_val, bandwidth=0.5)
    assert fit.shape == data.x_val.shape and np.mean((fit - data.y_val) ** 2) < 0.5


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "tricube", "laplacian"])
@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_small_numpy_problems_pool_on_the_numpy_engine(kernel, dtype):
    # no program for a small problem on NumPy float64 or integer arrays: the exact
    # formula in float64; empty rows follow the policy as on every path
    rng = np.random.default_rng(3)
    keys, values = rng.uniform(0, 50, (60, 2)), rng.normal(0, 100, (60, 3))
    queries = np.concatenate([rng.uniform(0, 50, (20, 2)), [[400.0, 400.0]]])  # one far away
    args = (queries.astype(dtype), keys.astype(dtype), values.astype(dtype))
    with attnpool.count_programs() as count, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = attention_pool(*args, kernel=kernel, bandwidth=7.0)
    assert count.traced == 0 and got.dtype == np.float64
    want, _ = exact_pool(*(a.astype(np.float64) for a in args), kernel, 7.0, empty="nan")
    want = np.asarray(want, np.float64)
    tolerance = 1e-12
    if kernel in ("epanechnikov", "tricube"):  # the far query has no key in the support
        assert np.all(np.isnan(got[-1])) and len(caught) == 1
        got, want = got[:-1], want[:-1]
        nearest = attention_pool(*args, kernel=kernel, bandwidth=7.0, empty="nearest")
        np.testing.assert_allclose(nearest[:-1], got, rtol=tolerance)
        with pytest.raises(ValueError, match="empty"):
            attention_pool(*args, kernel=kernel, bandwidth=7.0, empty="raise")
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
