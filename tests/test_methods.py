"""The pooling methods against the textbook formula and against each other, and the
``"auto"`` rules, branch by branch."""

from __future__ import annotations

import itertools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from attnpool import EmptyNeighbourhoodWarning, TopK, attention_pool, kernels
from attnpool.engines.blocks import nearest_key
from attnpool.methods import binned, prefix_sums, sparse
from method_data import BINNED_TOLERANCE, EXACT_RTOL, FUSED_RTOL, data, value_range
from oracle import exact_pool
from reference import COMPACT_KERNELS, reference_pool

SMOOTH = sorted(binned.SMOOTH_KERNELS)


# --- every method against the textbook formula ----------------------------------------


@pytest.mark.parametrize("kernel", ["gaussian", "dot"])
@pytest.mark.parametrize("d", [1, 2, 8])
def test_fused_equals_the_textbook_formula(kernel, d):
    queries, keys, values = data(d, d=d)
    bandwidth = 0.8 if kernel == "gaussian" else 4.0
    got = attention_pool(queries, keys, values, kernel=kernel, bandwidth=bandwidth, method="fused")
    want = reference_pool(queries, keys, values, kernel, bandwidth)
    np.testing.assert_allclose(
        got, want, rtol=FUSED_RTOL, atol=FUSED_RTOL * value_range(values).max()
    )


def test_fused_streams_key_blocks_and_runs_under_jit_and_grad():
    queries, keys, values = data(3, n=50, m=40000)
    pool = jax.jit(lambda q, h: attention_pool(q, keys, values[:, 0], bandwidth=h, method="fused"))
    got = pool(jnp.asarray(queries, jnp.float32), 0.5)
    want = reference_pool(queries, keys, values[:, 0], "gaussian", 0.5)
    np.testing.assert_allclose(got, want, atol=1e-4)
    gradient = jax.grad(
        lambda h: jnp.sum(
            attention_pool(
                jnp.asarray(queries[:5]), keys[:300], values[:300, 0], bandwidth=h, method="fused"
            )
        )
    )(jnp.float32(0.5))
    dense_gradient = jax.grad(
        lambda h: jnp.sum(
            attention_pool(
                jnp.asarray(queries[:5]), keys[:300], values[:300, 0], bandwidth=h, method="dense"
            )
        )
    )(jnp.float32(0.5))
    np.testing.assert_allclose(gradient, dense_gradient, rtol=1e-3)


@pytest.mark.parametrize("kernel", COMPACT_KERNELS)
@pytest.mark.parametrize("d", [1, 2, 3])
def test_sparse_equals_the_textbook_formula(kernel, d):
    queries, keys, values = data(10 + d, d=d, layout="clustered")
    bandwidth = [0.4, 0.9, 1.3][:d]
    with warnings.catch_warnings():  # clustered keys leave some queries empty (NaN rows)
        warnings.simplefilter("ignore", EmptyNeighbourhoodWarning)
        got = attention_pool(
            queries, keys, values, kernel=kernel, bandwidth=bandwidth, method="sparse"
        )
    want = reference_pool(queries, keys, values, kernel, bandwidth)
    np.testing.assert_allclose(got, want, rtol=EXACT_RTOL, atol=1e-12)


def test_sparse_prefix_sums_stay_exact_when_the_range_dwarfs_the_bandwidth():
    rng = np.random.default_rng(5)
    keys = np.sort(rng.uniform(1e4, 1e4 + 100, 200_000))  # far from 0, 1e4 bandwidths wide
    queries = rng.uniform(1e4, 1e4 + 100, 500)
    values = rng.standard_normal(200_000)
    # the four-line formula over each query's keys within two bandwidths (the sorted
    # keys' window): a compact kernel weighs every other key exactly 0
    low, high = np.searchsorted(keys, queries - 0.02), np.searchsorted(keys, queries + 0.02)
    for kernel in ["epanechnikov", "triangular", "cosine", "boxcar"]:
        got = attention_pool(queries, keys, values, kernel=kernel, bandwidth=0.01, method="sparse")
        want = [
            reference_pool(queries[i : i + 1], keys[a:b], values[a:b], kernel, 0.01)[0]
            for i, (a, b) in enumerate(zip(low, high, strict=True))
        ]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)  # values are O(1)


def test_sparse_prefix_and_pair_sums_agree_row_by_row():
    queries, keys, values = data(6, n=400, m=5000)
    kernel = kernels.get("epanechnikov")
    q, k, h = np.sort(queries[:, 0]), keys[:, 0], 0.3
    order = np.argsort(k)
    low = np.searchsorted(k[order], q - h)
    high = np.searchsorted(k[order], q + h, side="right")
    split = prefix_sums.split_kernel(kernel)
    prefix, unreliable = prefix_sums.prefix_sums(q, k[order], values[order], h, split, low, high)
    pairs = sparse._pairs_1d(q, k[order], values[order], h, kernel, low, high)
    assert unreliable.mean() < 0.01  # the few rows near the edges go to pairs
    np.testing.assert_allclose(prefix[~unreliable], pairs[~unreliable], rtol=1e-10, atol=1e-10)


# --- every pair of methods ---------------------------------------------------------------

PAIRS_KERNEL = "epanechnikov"  # the one kernel every method but fused accepts
PAIR_METHODS = {
    "dense": ("dense", 1e-12),
    "stream": ("stream", 1e-12),
    "sparse": ("sparse", 1e-9),
    "topk": (TopK(k=800), 1e-9),
    "binned": ("binned", BINNED_TOLERANCE),
}


@pytest.mark.parametrize("first, second", list(itertools.combinations(PAIR_METHODS, 2)))
@pytest.mark.parametrize("d", [1, 2])
def test_methods_agree_pairwise(first, second, d):
    queries, keys, values = data(60 + d, d=d)
    results = {}
    for name in (first, second):
        method, _ = PAIR_METHODS[name]
        results[name] = attention_pool(
            queries,
            keys,
            values,
            kernel=PAIRS_KERNEL,
            bandwidth=0.7,
            method=method,
            empty="nearest",
        )
    tolerance = max(PAIR_METHODS[first][1], PAIR_METHODS[second][1])
    error = np.max(np.abs(results[first] - results[second]), axis=0) / value_range(values)
    assert np.all(error <= 2 * tolerance)


@pytest.mark.parametrize(
    "first, second",
    [
        *[("dense", "fused"), ("stream", "fused"), ("binned", "fused"), ("binned", "stream")],
        *[("fgt", "dense"), ("fgt", "stream"), ("fgt", "fused"), ("fgt", "binned")],
        *[("native", "dense"), ("native", "stream"), ("native", "fused"), ("native", "binned")],
        ("native", "fgt"),
    ],
)
def test_gaussian_methods_agree_pairwise(first, second):
    queries, keys, values = data(70, d=1 if "fgt" in (first, second) else 2)
    tolerance = {
        **{"dense": 1e-12, "stream": 1e-12, "fgt": 1e-12, "native": 1e-12},
        **{"fused": FUSED_RTOL, "binned": BINNED_TOLERANCE},
    }
    got = [attention_pool(queries, keys, values, bandwidth=0.4, method=m) for m in (first, second)]
    error = np.max(np.abs(got[0] - got[1]), axis=0) / value_range(values)
    assert np.all(error <= 2 * max(tolerance[first], tolerance[second]))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    kernel=st.sampled_from(COMPACT_KERNELS),
    bandwidth=st.floats(0.01, 5.0),
    m=st.integers(1, 60),
)
@example(seed=478, kernel="triangular", bandwidth=0.1, m=5)  # a key exactly on the edge
@example(seed=1, kernel="boxcar", bandwidth=1.5, m=23)  # a key one bandwidth away
@example(seed=255, kernel="boxcar", bandwidth=0.25, m=22)  # nearest keys tied within rounding
@example(seed=652, kernel="cosine", bandwidth=0.03, m=20)  # only key within rounding of the edge
@example(seed=15347, kernel="boxcar", bandwidth=0.03125, m=47)  # 2.33, 2.45: as far from 2.39
@example(seed=0, kernel="boxcar", bandwidth=0.5, m=41)  # 0.88, 1.88: either side of 1.38's edge
def test_sparse_matches_dense_on_random_data(seed, kernel, bandwidth, m):
    rng = np.random.default_rng(seed)
    keys = np.round(rng.uniform(-3, 3, m), 2)  # ties and repeated keys on purpose
    queries = np.round(rng.uniform(-4, 4, 25), 2)
    values = rng.standard_normal(m)
    options = dict(kernel=kernel, bandwidth=bandwidth, empty="nearest")
    got = attention_pool(queries, keys, values, method="sparse", **options)
    want = attention_pool(queries, keys, values, method="dense", **options)
    if kernel == "boxcar":
        # the boxcar jumps at |u| = 1: a key within rounding of the edge (-1.78 and -0.28
        # at h = 1.5) may fall either side, in each method (design notes, the oracle) —
        # each such key on its own (0.88 and 1.88 from 1.38 at h = 0.5: u = 1 − 2e-16 and
        # 1); an empty row takes its nearest keys, and keys whose distances differ by less
        # than rounding (0.32 and 0.31999999999999995 from -0.62) may tie, or not, as the
        # oracle finds them: every row must be one of those exact answers
        whole = [nearest_with_ties(queries, keys, values, 1e-12)] + [
            exact_pool(queries, keys, values, kernel, bandwidth, edge=e)[0][:, 0]
            for e in (-1e-9, 1e-9)
        ]
        for row, answers in enumerate(boxcar_answers(queries, keys, values, bandwidth)):
            answers += [answer[row] for answer in whole]
            for pooled in (got[row], want[row]):
                error = min(abs(pooled - answer) for answer in answers)
                assert error <= 1e-12 + 1e-9 * abs(pooled)
        return
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def boxcar_answers(queries, keys, values, bandwidth, tolerance=1e-9):
    """Each query's possible boxcar pools (in long double): the mean value of the keys
    inside the support, with each key within ``tolerance`` of its edge in or out."""
    u = np.abs(queries[:, None].astype(np.longdouble) - keys[None, :]) / bandwidth
    rows = []
    for inside, edge in zip(u < 1 - tolerance, np.abs(u - 1) <= tolerance, strict=True):
        means = []
        for chosen in itertools.product([False, True], repeat=int(edge.sum())):
            mask = inside.copy()
            mask[np.flatnonzero(edge)] = chosen
            if mask.any():
                means.append(values[mask].astype(np.longdouble).mean())
        rows.append(means)
    return rows


def nearest_with_ties(queries, keys, values, tolerance: float):
    """Each query's mean value over the keys within ``tolerance`` (relative) of its nearest."""
    distance = np.abs(queries[:, None] - keys[None, :])
    close = distance <= distance.min(axis=1, keepdims=True) * (1 + tolerance)
    return (close * values).sum(axis=1) / close.sum(axis=1)


# --- empty neighbourhoods under every host method ----------------------------------------


@pytest.mark.parametrize("method", ["sparse", "binned", TopK(k=3)])
def test_empty_neighbourhoods_follow_the_policy(method):
    keys = np.array([0.0, 0.5, 1.0])
    values = np.array([1.0, 2.0, 3.0])
    queries = np.array([0.5, 9.0])
    with pytest.warns(EmptyNeighbourhoodWarning, match="1 of 2"):
        got = attention_pool(
            queries, keys, values, kernel="epanechnikov", bandwidth=0.6, method=method
        )
    assert np.isfinite(got[0]) and np.isnan(got[1])
    nearest = attention_pool(
        queries, keys, values, kernel="epanechnikov", bandwidth=0.6, method=method, empty="nearest"
    )
    assert nearest[1] == 3.0
    with pytest.raises(ValueError, match="1 of 2 queries have no key"):
        attention_pool(
            queries,
            keys,
            values,
            kernel="epanechnikov",
            bandwidth=0.6,
            method=method,
            empty="raise",
        )


def test_host_methods_keep_the_array_type_and_precision():
    queries, keys, values = data(80, n=20, m=200)
    for method in ["sparse", "fgt", "native", "binned", TopK(k=50, tolerance=None)]:
        kernel = "gaussian" if method in ("fgt", "native") else "epanechnikov"
        as_numpy = attention_pool(
            queries.astype(np.float32),
            keys.astype(np.float32),
            values[:, 0].astype(np.float32),
            kernel=kernel,
            method=method,
        )
        assert isinstance(as_numpy, np.ndarray) and as_numpy.dtype == np.float32
        as_jax = attention_pool(
            jnp.asarray(queries),
            jnp.asarray(keys),
            jnp.asarray(values),
            kernel=kernel,
            method=method,
        )
        assert isinstance(as_jax, jax.Array) and as_jax.shape == (20, 2)


@pytest.mark.parametrize("kernel, d", [("gaussian", 2), ("laplacian", 2), ("gaussian", 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("far_rows", [1, 2])  # again by themselves / every row again
def test_streamed_rows_far_from_every_key_are_pooled_with_their_maxima(kernel, d, dtype, far_rows):
    """Streamed blocks use an upper bound on the log weights; a row whose weights all
    underflow under it is pooled again with its exact maximum. Keys on a jittered ring
    far around the query: the soft average differs from the nearest key's value."""
    # ring radius (in bandwidths) beyond the underflow of exp, and the radial jitter
    radius, jitter = {
        ("gaussian", np.float32): (20.0, 0.1),
        ("gaussian", np.float64): (45.0, 0.05),
        ("laplacian", np.float32): (100.0, 2.0),
        ("laplacian", np.float64): (800.0, 2.0),
    }[kernel, dtype]
    rng = np.random.default_rng(7)
    angle = rng.uniform(0, 2 * np.pi, 5000)
    r = radius + rng.uniform(0, jitter, 5000)
    keys = np.zeros((5000, d))
    keys[:, 0], keys[:, 1] = r * np.cos(angle), r * np.sin(angle)
    values = np.cos(angle)
    queries = np.zeros((2, d))
    queries[1, 0] = radius if far_rows == 1 else 0.5  # on the ring (no underflow) or inside
    args = (queries.astype(dtype), keys.astype(dtype), values.astype(dtype))
    got = attention_pool(*args, kernel=kernel, bandwidth=1.0, method="stream")
    want = attention_pool(*args, kernel=kernel, bandwidth=1.0, method="dense")
    np.testing.assert_allclose(got, want, rtol=1e-3 if dtype == np.float32 else 1e-9, atol=1e-6)
    nearest = values[np.argmin(np.sum(keys**2, axis=1))]
    assert abs(got[0] - nearest) > 0.05  # the soft average, not the nearest-key limit


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    kernel=st.sampled_from(["gaussian", "laplacian", "triangular", "boxcar", "tricube"]),
    d=st.integers(1, 2),
    bandwidth=st.floats(0.05, 20.0),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_streamed_blocks_match_dense_on_tied_and_repeated_points(seed, kernel, d, bandwidth, dtype):
    """Rounded coordinates put queries exactly on keys (zero distances) and repeat keys;
    streamed blocks compute distances column by column and must agree with dense."""
    rng = np.random.default_rng(seed)
    keys = np.round(rng.uniform(0, 3, (37, d)))
    queries = np.vstack([keys[:5], np.round(rng.uniform(0, 3, (7, d)))])
    values = rng.standard_normal(37)
    args = (queries.astype(dtype), keys.astype(dtype), values.astype(dtype))
    options = dict(kernel=kernel, bandwidth=bandwidth, empty="nearest")
    got = attention_pool(*args, method="stream", block_size=8, **options)
    want = attention_pool(*args, method="dense", **options)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


@settings(max_examples=60, deadline=None)
@given(
    keys=st.lists(st.integers(-20, 20), min_size=12, max_size=12),
    queries=st.lists(st.integers(-25, 25), min_size=6, max_size=6),
    count=st.integers(2, 12),
    exclude_self=st.booleans(),
)
def test_nearest_key_is_the_closest_real_key(keys, queries, count, exclude_self):
    # ties and repeated keys on a coarse grid; padded keys (copies of the first, from
    # ``count`` on) and, leaving one out, the query's own key are never the nearest
    points = np.array(keys[:count] + keys[:1] * (12 - count), float)[:, None] / 4
    asked = points if exclude_self else np.array(queries, float)[:, None] / 4
    with jax.enable_x64(True):
        index = np.asarray(nearest_key(asked, points, key_count=count, exclude_self=exclude_self))
    rows = np.arange(count if exclude_self else len(queries))
    distance = np.abs(asked[rows] - points[None, :count, 0])
    if exclude_self:
        distance[rows, rows] = np.inf
    assert np.all(index[rows] < count)
    np.testing.assert_array_equal(distance[rows, index[rows]], distance.min(axis=1))
