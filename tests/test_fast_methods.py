"""The fast methods against the textbook formula: fgt (exact to rounding), binned (within
its tolerance) and top-k (within its checked bound)."""

from __future__ import annotations

import decimal
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnpool import Binned, TopK, attention_pool, kernels
from attnpool.methods import binned, fgt
from attnpool.methods.topk import topk_state
from method_data import BINNED_TOLERANCE, EXACT_RTOL, data, exact, value_range
from reference import nearest_values, reference_pool

SMOOTH = sorted(binned.SMOOTH_KERNELS)


@pytest.mark.parametrize("layout", ["uniform", "clustered"])
@pytest.mark.parametrize("bandwidth", [0.01, 0.07, 0.5, 4.0, 300.0])
def test_fgt_equals_the_textbook_formula(layout, bandwidth):
    queries, keys, values = data(12, n=400, m=3000, layout=layout)
    queries[:5, 0] = [-3.0, -0.2, 10.3, 14.0, 40.0]  # outside the keys, some far outside
    got = attention_pool(queries, keys, values, bandwidth=bandwidth, method="fgt")
    want = reference_pool(queries, keys, values, "gaussian", bandwidth)
    finite = np.isfinite(want).all(axis=1)  # the textbook formula underflows far away
    np.testing.assert_allclose(got[finite], want[finite], rtol=EXACT_RTOL, atol=1e-12)
    # where it does, the nearest-key limit, as the exact paths give
    np.testing.assert_allclose(got, exact(queries, keys, values, "gaussian", bandwidth), atol=1e-12)


def test_fgt_keys_far_from_zero_and_rows_far_from_every_key():
    rng = np.random.default_rng(13)
    keys = rng.uniform(1e4, 1e4 + 50, 20_000)  # 1e5 bandwidths from 0, 500 wide
    queries = np.concatenate([rng.uniform(1e4, 1e4 + 50, 300), [1e4 - 2.0, 1e4 + 60.0]])
    values = rng.standard_normal(20_000)
    got = attention_pool(queries, keys, values, bandwidth=0.1, method="fgt")
    want = reference_pool(queries, keys, values, "gaussian", 0.1)
    # the scaled coordinates (1e5) round at 1e-11; the differences inherit that
    np.testing.assert_allclose(got[:300], want[:300], rtol=1e-8, atol=1e-9)
    # 20 and 100 bandwidths from the nearest key: pooled exactly (the nearest key's value)
    far = exact(queries[300:], keys, values, "gaussian", 0.1)
    np.testing.assert_allclose(got[300:], far, rtol=1e-12)


def test_fgt_evaluates_many_boxes_in_several_groups():
    rng = np.random.default_rng(14)
    keys = rng.uniform(0, 400, 4000)  # 400 boxes of one bandwidth: > 256 chunks of queries
    queries = rng.uniform(0, 400, 3000)
    values = np.sin(keys)
    got = attention_pool(queries, keys, values, bandwidth=1.0, method="fgt")
    want = reference_pool(queries, keys, values, "gaussian", 1.0)
    np.testing.assert_allclose(got, want, rtol=EXACT_RTOL, atol=1e-12)


@pytest.mark.parametrize("reach", [4.0, 9.1, 12.0])
def test_fgt_plan_meets_its_truncation_bound(reach):
    width, half, order = fgt.plan(reach)
    assert half * width >= reach  # the window covers the reach
    largest = (half + 0.5) * width * width / 2  # the largest |s·t| in the window
    # the Taylor remainder of exp at that argument relative to the term, both signs,
    # in 50-digit decimals (float64 would add its own cancellation)
    with decimal.localcontext(decimal.Context(prec=50)):
        for x in [decimal.Decimal(largest), -decimal.Decimal(largest)]:
            taylor = sum(x**j / math.factorial(j) for j in range(order))
            assert abs(taylor - x.exp()) / x.exp() <= fgt.TOLERANCE


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    bandwidth=st.floats(0.005, 20.0),
    m=st.integers(1, 300),
    spread=st.sampled_from([1.0, 100.0]),
)
def test_fgt_matches_dense_on_random_data(seed, bandwidth, m, spread):
    rng = np.random.default_rng(seed)
    keys = np.round(rng.uniform(-spread, spread, m), 3)  # ties and repeated keys on purpose
    queries = rng.uniform(-1.5 * spread, 1.5 * spread, 40)
    values = rng.standard_normal(m)
    got = attention_pool(queries, keys, values, bandwidth=bandwidth, method="fgt")
    want = attention_pool(queries, keys, values, bandwidth=bandwidth, method="dense")
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("kernel", SMOOTH)
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("layout", ["uniform", "clustered"])
def test_binned_meets_its_tolerance(kernel, d, layout):
    queries, keys, values = data(20 + d, d=d, layout=layout, m=3000)
    for bandwidth in [0.15, 0.6]:
        got = attention_pool(
            queries,
            keys,
            values,
            kernel=kernel,
            bandwidth=bandwidth,
            method="binned",
            empty="nearest",
        )
        want = exact(queries, keys, values, kernel, bandwidth)
        error = np.max(np.abs(got - want), axis=0) / value_range(values)
        assert np.all(error <= BINNED_TOLERANCE), (bandwidth, error)


def test_binned_error_falls_with_the_tolerance_and_a_given_grid_is_used():
    queries, keys, values = data(30, m=3000)
    want = reference_pool(queries, keys, values, "gaussian", 0.2)
    errors = []
    for tolerance in [1e-2, 1e-3, 1e-4, 1e-5]:
        got = attention_pool(
            queries, keys, values, bandwidth=0.2, method=Binned(tolerance=tolerance)
        )
        errors.append(np.max(np.abs(got - want) / value_range(values)))
        assert errors[-1] <= tolerance
    assert errors == sorted(errors, reverse=True)
    coarse = Binned(grid_size=70, tolerance=0.5)
    got = attention_pool(queries, keys, values, bandwidth=0.2, method=coarse)
    assert np.max(np.abs(got - want)) > 10 * np.max(np.abs(errors[0]))


@pytest.mark.parametrize("kernel", SMOOTH)
@pytest.mark.parametrize("d", [1, 2])
def test_binned_meets_its_tolerance_on_clustered_keys_and_step_values(kernel, d):
    """Keys in five tight clusters (each within a grid cell), values a step: queries
    near a cluster's edge sum a few kernel values near the kink, where binning's error
    is first order. The bound finds those rows and they are pooled exactly."""
    rng = np.random.default_rng(7 + d)
    centres = rng.uniform(0, 5, (5, d))
    keys = centres[rng.integers(0, 5, 4000)] + rng.normal(0, 0.003, (4000, d))
    values = 1.0 * (keys[:, :1] > np.median(keys[:, 0])) + (rng.random((4000, 1)) < 0.5)
    queries = rng.uniform(-0.5, 5.5, (300, d))
    with np.errstate(invalid="ignore"):
        want = reference_pool(queries, keys, values, kernel, 0.5)
    empty = ~np.isfinite(want[:, 0])
    if np.any(empty):
        want[empty] = nearest_values(queries[empty], keys, values)
    for tolerance in [1e-2, 1e-3]:
        got = attention_pool(
            queries, keys, values, kernel=kernel, bandwidth=0.5,
            method=Binned(tolerance=tolerance), empty="nearest",
        )  # fmt: skip
        assert np.max(np.abs(got - want)) <= tolerance * np.ptp(values), tolerance


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
@pytest.mark.parametrize("shift, scale", [(1.7e9, 1.0), (-1e12, 2.0**-300), (3.0, 2.0**300)])
def test_binned_meets_its_tolerance_far_from_the_origin_and_at_any_scale(kernel, shift, scale):
    queries, keys, values = data(60, m=3000, layout="clustered")
    moved = [(points + shift) * scale for points in (queries, keys)]
    got = attention_pool(
        *moved, values, kernel=kernel, bandwidth=0.4 * scale, method="binned", empty="nearest"
    )
    want = exact(queries, keys, values, kernel, 0.4)
    assert np.all(np.max(np.abs(got - want), axis=0) <= BINNED_TOLERANCE * value_range(values))


def test_binned_pools_sparse_rows_exactly():
    """A query far from every key has almost no binned weight: it is pooled exactly."""
    keys = np.array([0.0, 0.1, 0.2, 10.0])
    values = np.array([1.0, 2.0, 3.0, 40.0])
    queries = np.array([5.3, 0.1])
    got = attention_pool(queries, keys, values, bandwidth=0.5, method="binned")
    want = reference_pool(queries, keys, values, "gaussian", 0.5)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    assert abs(got[1] - want[1]) <= BINNED_TOLERANCE * np.ptp(values)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "laplacian", "boxcar"])
@pytest.mark.parametrize("d", [1, 3])
def test_topk_is_within_its_bound(kernel, d):
    queries, keys, values = data(40 + d, d=d, m=3000)
    bandwidth = 0.15 if kernel in ("gaussian", "laplacian") else 0.6
    scaled = queries / bandwidth, keys / bandwidth
    largest = []
    for k in [8, 64, 512]:
        state, bound = topk_state(*scaled, values, kernels.get(kernel), k)
        with np.errstate(invalid="ignore"):  # empty rows of compact kernels
            got = np.asarray(state.weighted_values / state.weight_sum[:, None])
        want = exact(queries, keys, values, kernel, bandwidth)
        rows = np.asarray(state.weight_sum) > 0
        error = np.abs(got - want)[rows] / value_range(values)
        assert np.all(error <= bound[rows, None] + 1e-12)
        largest.append(bound.max())
    assert largest == sorted(largest, reverse=True) and largest[0] > largest[-1]


def test_topk_checks_its_tolerance():
    queries, keys, values = data(50, m=3000)
    with pytest.raises(ValueError, match=r"TopK\(k=4\) leaves out .* raise k"):
        attention_pool(queries, keys, values, bandwidth=0.5, method=TopK(k=4))
    loose = attention_pool(queries, keys, values, bandwidth=0.5, method=TopK(k=4, tolerance=None))
    assert np.all(np.isfinite(loose))
    everything = attention_pool(queries, keys, values, bandwidth=0.5, method=TopK(k=10_000))
    np.testing.assert_allclose(everything, exact(queries, keys, values, "gaussian", 0.5))


def test_rows_a_host_method_leaves_are_pooled_in_float64_by_the_compiled_engines():
    # under "auto" a compact kernel's empty rows go back to the exact engines when they
    # are too many for the NumPy engine; those ran in float32 (the global flag's
    # precision), giving each far query its nearest value to 4e-8
    rng = np.random.default_rng(0)
    keys, values = rng.normal(size=(20_000, 3)), rng.normal(size=20_000)
    queries = rng.normal(size=(2_000, 3)) + 5.0
    nearest = values[np.argmin(((queries[:, None] - keys[None]) ** 2).sum(axis=2), axis=1)]
    got = attention_pool(queries, keys, values, kernel="epanechnikov", bandwidth=0.01,
                         empty="nearest")  # fmt: skip
    np.testing.assert_array_equal(got, nearest)
