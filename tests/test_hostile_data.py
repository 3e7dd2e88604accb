"""Regression tests: data that once gave plausible-looking wrong numbers on the default path."""

import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnpool import LocalLinear, TopK, attention_pool, attention_weights
from oracle import exact_pool
from reference import stable_gaussian_pool


@pytest.mark.parametrize(
    ("dtype", "bandwidth"), [(np.float32, 1e-5), (np.float32, 1e-7), (np.float64, 1e-10)]
)
@pytest.mark.parametrize("method", ["native", "stream", "auto"])
def test_small_bandwidths_give_the_nearest_key(method, dtype, bandwidth):
    # native added chunks whose log weights rounding kept above the row's shift (|out| 1e38)
    rng = np.random.default_rng(0)
    queries = rng.uniform(size=(1000, 3)).astype(dtype)
    keys = rng.uniform(size=(3000, 3)).astype(dtype)
    values = rng.normal(size=3000).astype(dtype)
    got = attention_pool(queries, keys, values, bandwidth=bandwidth, method=method)
    expected, _ = exact_pool(queries, keys, values, "gaussian", bandwidth)
    np.testing.assert_allclose(got, expected[:, 0].astype(np.float64), rtol=1e-6)


@pytest.mark.parametrize("method", ["dense", "stream", "fgt", "native", "auto"])
def test_coordinates_far_from_the_origin_keep_the_nearest_key(method):
    got = attention_pool(
        np.array([1.1e200]), np.array([1e200, 3e200]), np.array([5.0, 7.0]), method=method
    )
    np.testing.assert_array_equal(got, [5.0])


def test_weights_far_from_the_origin_are_one_hot():
    weights = attention_weights(np.array([1.1e200]), np.array([1e200, 3e200]))
    np.testing.assert_array_equal(weights, [[1.0, 0.0]])


@pytest.mark.parametrize(("dtype", "scale"), [(np.float64, 1e306), (np.float32, 1e36)])
@pytest.mark.parametrize("method", ["dense", "stream", "fgt"])
def test_values_near_the_dtype_limit_do_not_overflow(method, dtype, scale):
    rng = np.random.default_rng(1)
    keys, queries = rng.uniform(size=1000), rng.uniform(size=5)
    values = (rng.uniform(1, 2, size=1000) * scale).astype(dtype)
    got = attention_pool(
        queries.astype(dtype), keys.astype(dtype), values, bandwidth=0.1, method=method
    )
    expected = stable_gaussian_pool(queries, keys, values / scale, 0.1) * scale
    np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("method", ["dense", "stream", "native", "fgt"])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_an_exact_shift_changes_nothing(method, d):
    if method == "fgt" and d > 1:
        return
    rng = np.random.default_rng(2)
    # multiples of 2^-20 in [0, 5]: x + 1e8 is exact in float64
    grid = lambda *shape: np.round(rng.uniform(0, 5, shape) * 2**20) / 2**20  # noqa: E731
    keys, queries = grid(400, d), grid(50, d)
    values = np.sin(keys).sum(axis=1)
    here = attention_pool(queries, keys, values, bandwidth=0.05, method=method)
    there = attention_pool(queries + 1e8, keys + 1e8, values, bandwidth=0.05, method=method)
    np.testing.assert_allclose(there, here, rtol=0, atol=1e-12)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(log_bandwidth=st.floats(-1, 12), slope=st.floats(-5, 5), intercept=st.floats(-5, 5))
def test_local_linear_reproduces_lines_at_every_bandwidth(log_bandwidth, slope, intercept):
    # the limit at large bandwidths is ordinary least squares, exact for a line
    x = np.linspace(0, 5, 40)[:, None]
    model = LocalLinear(bandwidth=10.0**log_bandwidth).fit(x, slope * x[:, 0] + intercept)
    queries = np.array([[0.0], [2.5], [5.0]])
    np.testing.assert_allclose(
        model.predict(queries), slope * queries[:, 0] + intercept, rtol=1e-8, atol=1e-8
    )


def test_float16_in_float16_out():
    rng = np.random.default_rng(3)
    queries, keys = rng.uniform(size=(5, 1)), rng.uniform(size=(40, 1))
    values = rng.normal(size=40)
    half = [a.astype(np.float16) for a in (queries, keys, values)]
    got = attention_pool(*half, bandwidth=0.2)
    assert got.dtype == np.float16
    single = attention_pool(*(a.astype(np.float32) for a in half), bandwidth=0.2)
    np.testing.assert_array_equal(got, single.astype(np.float16))
    weights = attention_weights(queries.astype(np.float16), keys.astype(np.float16), bandwidth=0.2)
    assert weights.dtype == np.float16


@pytest.mark.parametrize(
    ("method", "kernel", "d", "bandwidth"),
    [
        ("sparse", "epanechnikov", 1, 1e-200),  # all NaN and 110 RuntimeWarnings
        ("sparse", "tricube", 2, 1e-200),  # SciPy: "floating point overflow … p too large"
        ("sparse", "tricube", 2, 1e-30),
        ("topk", "gaussian", 2, 1e-300),  # IndexError
        ("auto", "tricube", 2, 1e-200),  # auto's neighbour count overflowed too
    ],
)
def test_host_methods_at_tiny_bandwidths_give_the_nearest_key(method, kernel, d, bandwidth):
    rng = np.random.default_rng(4)
    queries, keys = rng.uniform(size=(50, d)), rng.uniform(size=(3000, d))
    values = rng.normal(size=3000)
    option = TopK(k=8) if method == "topk" else method
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = attention_pool(
            queries,
            keys,
            values,
            kernel=kernel,
            bandwidth=bandwidth,
            method=option,
            empty="nearest",
        )
    expected, _ = exact_pool(queries, keys, values, kernel, bandwidth)
    np.testing.assert_array_equal(got, expected[:, 0].astype(np.float64))


def _boxcar_by_differences(queries, keys, values, bandwidth):
    """The textbook boxcar with the difference taken before the division:
    ``u_j = (q_j − k_j) / h`` in the inputs' precision, and ``Σ_j u_j² < 1`` decided in
    exact rational arithmetic wherever rounding could matter."""
    dtype = np.result_type(queries, np.float32)
    us = [
        (queries[:, None, j] - keys[None, :, j]) / dtype.type(bandwidth)
        for j in range(queries.shape[1])
    ]
    r2 = sum(np.asarray(u, np.float64) ** 2 for u in us)
    inside = r2 < 1
    for i, j in np.argwhere(np.abs(r2 - 1) < 1e-5):
        inside[i, j] = sum(Fraction(float(u[i, j])) ** 2 for u in us) < 1
    return (inside @ values) / inside.sum(axis=1)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("bandwidth", [0.3, 0.7, 1.0])
def test_ties_on_the_boxcar_edge_are_decided_alike_by_every_method(dtype, d, bandwidth):
    """Data with one decimal and h = 0.3: many keys are one bandwidth away up to rounding
    (0.7 − 0.4 = 0.29999999999999993); with h = 1, many exactly (1.3 − 0.3 = 1: out).
    Every method — engines, host methods, Dask — forms (q − k)/h from the unscaled
    inputs, and decides Σ u_j² < 1 by exact products and error-free sums, so they keep
    the same keys — in d = 2 with h = 1, u₀² + u₁² is 1 up to rounding for many pairs,
    and XLA:CPU fuses one of the squares into a multiply-add in some loops."""
    import dask.array as da

    from attnpool import distributed

    rng = np.random.default_rng(d)
    keys = np.round(rng.uniform(0, 3, (300, d)), 1).astype(dtype)
    queries = np.round(rng.uniform(0, 3, (40, d)), 1).astype(dtype)
    values = rng.normal(size=300).astype(dtype)
    want = _boxcar_by_differences(queries, keys, values.astype(np.float64), bandwidth)
    assert np.all(np.isfinite(want))
    # a wrong key moves a mean by ~0.1; float32 sums round at ~1e-7
    close = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    methods = ["dense", "stream", "sparse", "auto", TopK(k=300, tolerance=None)]
    for method in methods:
        got = attention_pool(queries, keys, values, kernel="boxcar", bandwidth=bandwidth,
                             method=method)  # fmt: skip
        np.testing.assert_allclose(got, want, **close, err_msg=str(method))
    weights = attention_weights(queries, keys, kernel="boxcar", bandwidth=bandwidth)
    np.testing.assert_allclose(np.asarray(weights) @ values, want, **close)
    lazy = distributed.attention_pool(
        queries, da.from_array(keys, 100), values, kernel="boxcar", bandwidth=bandwidth
    )
    np.testing.assert_allclose(lazy.compute(scheduler="synchronous"), want, **close)


@pytest.mark.parametrize("method", ["dense", "stream", "sparse", "auto"])
def test_the_boxcar_leaves_out_keys_exactly_on_its_edge(method):
    # |u| < 1, as the textbook and scikit-learn's tophat: a key one bandwidth away is out
    keys = np.array([-0.5, -0.25, 0.0, 0.25, 0.5, 1.0])
    values = np.array([100.0, 1.0, 2.0, 3.0, -100.0, 7.0])
    got = attention_pool(
        np.array([0.0, 1.0]), keys, values, kernel="boxcar", bandwidth=0.5, method=method
    )
    np.testing.assert_array_equal(got, [2.0, 7.0])
    weights = attention_weights(np.array([0.0]), keys, kernel="boxcar", bandwidth=0.5)
    np.testing.assert_array_equal(weights, [[0, 1 / 3, 1 / 3, 1 / 3, 0, 0]])


@pytest.mark.parametrize("kernel", ["epanechnikov", "cosine", "triangular", "tricube"])
@pytest.mark.parametrize("d", [1, 2])
def test_sparse_keeps_its_digits_over_millions_of_bandwidths(kernel, d):
    # offsets once came from scaled coordinates (q/h − k/h rounds at eps·|q/h|): 3e-10 off
    # at 7e6 bandwidths from the keys' centre; now from (q − k)/h, as the exact engines
    rng = np.random.default_rng(3)
    keys = np.column_stack([rng.uniform(0, 2e5, 20000), rng.uniform(0, 1, (20000, d - 1))])
    queries = keys[:300] + rng.uniform(-0.01, 0.01, (300, d))
    values = rng.normal(size=20000)
    got = attention_pool(queries, keys, values, kernel=kernel, bandwidth=0.03, method="sparse")
    want, _ = exact_pool(queries, keys, values, kernel, 0.03)
    np.testing.assert_allclose(got, want[:, 0].astype(np.float64), rtol=0, atol=1e-12)
