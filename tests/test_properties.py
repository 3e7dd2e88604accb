"""Properties of attention pooling, checked by hypothesis on random data."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attnpool import attention_pool

N, M, D = 6, 9, 2
# XLA flushes subnormal numbers to zero, so they are left out of the data.
coordinates = st.floats(-100, 100, allow_nan=False, allow_subnormal=False)
points = arrays(np.float64, (M, D), elements=coordinates)
queries_ = arrays(np.float64, (N, D), elements=coordinates)
values_ = arrays(
    np.float64, (M,), elements=st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False)
)
bandwidths = st.floats(0.05, 500.0)
kernels_ = st.sampled_from(["gaussian", "epanechnikov", "laplacian", "tricube", "boxcar"])
PROPERTY = settings(max_examples=40, deadline=None)


def pool(queries, keys, values, kernel="gaussian", bandwidth=1.0):
    return attention_pool(
        queries, keys, values, kernel=kernel, bandwidth=bandwidth, empty="nearest"
    )


@PROPERTY
@given(
    keys=arrays(np.float64, (M,), elements=st.integers(-50, 50).map(float), unique=True),
    values=values_,
)
def test_one_hot_weights_are_exact_lookup(keys, values):
    # Keys at distinct integers and a boxcar narrower than their spacing: each query sees one key.
    got = pool(keys, keys, values, kernel="boxcar", bandwidth=0.4)
    np.testing.assert_array_equal(got, values)


@PROPERTY
@given(queries=queries_, keys=points, values=values_)
def test_constant_kernel_is_average_pooling(queries, keys, values):
    np.testing.assert_allclose(
        pool(queries, keys, values, kernel="constant"), values.mean(), rtol=1e-9, atol=1e-9
    )


@PROPERTY
@given(queries=queries_, keys=points, values=values_, kernel=kernels_, h=bandwidths)
def test_outputs_lie_in_the_values_range(queries, keys, values, kernel, h):
    got = pool(queries, keys, values, kernel, h)
    slack = 1e-9 * (1 + np.abs(values).max())
    assert np.all(got >= values.min() - slack) and np.all(got <= values.max() + slack)


@PROPERTY
@given(
    queries=queries_,
    keys=points,
    values=values_,
    kernel=kernels_,
    h=bandwidths,
    seed=st.integers(0, 2**32 - 1),
)
def test_permuting_keys_with_their_values_changes_nothing(queries, keys, values, kernel, h, seed):
    order = np.random.default_rng(seed).permutation(M)
    np.testing.assert_allclose(
        pool(queries, keys[order], values[order], kernel, h),
        pool(queries, keys, values, kernel, h),
        rtol=1e-9,
        atol=1e-9 * (1 + np.abs(values).max()),
    )


@PROPERTY
@given(
    queries=queries_,
    keys=points,
    values=values_,
    kernel=kernels_,
    h=bandwidths,
    shift=arrays(np.float64, (D,), elements=st.floats(-1e3, 1e3, allow_subnormal=False)),
)
def test_translating_queries_and_keys_together_changes_nothing(
    queries, keys, values, kernel, h, shift
):
    # on a dyadic grid, so that the translation itself is exact: otherwise a key at a
    # distance tied with another (the nearest-key limit) or on the kernel's edge is
    # moved off the tie by the shift's rounding, and the translated problem differs
    def dyadic(a):
        return np.round(np.asarray(a) * 2.0**20) / 2.0**20

    queries, keys, shift = dyadic(queries), dyadic(keys), dyadic(shift)
    np.testing.assert_allclose(
        pool(queries + shift, keys + shift, values, kernel, h),
        pool(queries, keys, values, kernel, h),
        rtol=1e-6,
        atol=1e-6 * (1 + np.abs(values).max()),
    )


@PROPERTY
@given(
    queries=queries_,
    keys=points,
    values=values_,
    kernel=kernels_,
    h=bandwidths,
    scale=st.sampled_from([1e-3, 0.5, 2.0, 1e3]),
)
def test_scaling_inputs_and_bandwidth_together_changes_nothing(
    queries, keys, values, kernel, h, scale
):
    # powers of two and decimal scales: compare with a tolerance for the rounding of the scaling
    np.testing.assert_allclose(
        pool(queries * scale, keys * scale, values, kernel, h * scale),
        pool(queries, keys, values, kernel, h),
        rtol=1e-6,
        atol=1e-6 * (1 + np.abs(values).max()),
    )
