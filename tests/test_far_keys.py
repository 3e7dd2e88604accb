"""The compiled loop passes over keys too far to matter (locality order and boxes); its
sums stay the textbook ones, on data built to break the bound: clusters, data far from
the origin, a query far from every key, ties, the matrix-product form, float32."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from attnpool import attention_pool
from attnpool.methods import native, native_layout
from attnpool.methods.locality import bounding_boxes, locality_order


def textbook(queries, keys, values, h, leave_out=None):
    """Max-shifted Gaussian pooling in float64, row block by row block; ``leave_out``:
    the key each query leaves out."""
    q, k, v = (np.asarray(a, np.float64) for a in (queries, keys, values))
    out = []
    for start in range(0, len(q), 256):
        rows = slice(start, min(start + 256, len(q)))
        log_k = -0.5 * (((q[rows, None, :] - k[None, :, :]) / h) ** 2).sum(axis=-1)
        if leave_out is not None:
            log_k[np.arange(log_k.shape[0]), leave_out[rows]] = -np.inf
        w = np.exp(log_k - log_k.max(axis=1, keepdims=True))
        out.append((w @ v) / w.sum(axis=1, keepdims=True))
    return np.vstack(out)


def native_pool(queries, keys, values, h):
    """``method="native"`` as users call it (the engine centres the coordinates)."""
    pooled = attention_pool(queries, keys, values, kernel="gaussian", bandwidth=h, method="native")
    return np.asarray(pooled)


def passes_over(keys, h):
    """Whether these keys at this bandwidth take the path that passes over far boxes."""
    m = keys.shape[0]
    scaled = np.asarray(keys, np.float64) / h
    return len(keys) ** 2 >= native_layout.LOCAL_MIN_PAIRS and native_layout.passes_over(scaled, m)


def clusters(rng, n, d, centres, spread):
    labels = rng.integers(0, len(centres), n)
    return np.asarray(centres, np.float64)[labels] + rng.normal(0, spread, (n, d))


CASES = {
    "uniform, one column": (0.01, lambda rng, n: rng.uniform(0, 5, (n, 1))),
    "two clusters far apart": (
        0.05, lambda rng, n: clusters(rng, n, 2, [[0, 0], [40, -3], [41, 25]], 1.0)
    ),
    "Unix timestamps, product form": (
        40.0, lambda rng, n: 1.7e9 + rng.uniform(0, 4000, (n, 3))
    ),
    "five columns in three clusters, product form": (
        0.3, lambda rng, n: clusters(rng, n, 5, [[0] * 5, [20, 0, 0, 0, 0], [0, 0, 20, 20, 0]], 1.0)
    ),
    "ties: keys on a lattice": (
        0.08, lambda rng, n: np.floor(rng.uniform(0, 5, (n, 2)) * 8) / 8
    ),
}  # fmt: skip


# float32 in the product form loses (coordinates / h)² · 2^-24 of each log weight (its
# own tests hold it to data near the origin): the timestamps' case is float64's
PRECISIONS = [(case, dtype) for case in CASES for dtype in (np.float64, np.float32)
              if dtype == np.float64 or "product form" not in case]  # fmt: skip


@pytest.mark.parametrize(("case", "dtype"), PRECISIONS)
def test_passing_over_far_keys_keeps_the_textbook_sums(case, dtype):
    h, points = CASES[case]
    rng = np.random.default_rng(len(case))
    keys = points(rng, 3000)
    queries = np.vstack([points(rng, 2000), keys[:5] + 30 * h])  # five far from every key
    values = np.column_stack([np.sin(keys).sum(axis=1), rng.standard_normal(3000)])
    assert passes_over(keys, h)
    if dtype == np.float32:  # about the keys' corner: float32 would lose the timestamps
        corner = keys.min(axis=0)
        queries, keys, values = (np.asarray(a, np.float32)
                                 for a in (queries - corner, keys - corner, values))  # fmt: skip
    got = native_pool(queries, keys, values, h)
    want = textbook(queries, keys, values, h)
    tolerance = 1e-12 if dtype == np.float64 else 2e-5  # as the loop's own tests
    assert np.max(np.abs(got - want)) <= tolerance * np.ptp(values)


def test_leave_one_out_sums_in_a_callers_order_leave_out_their_own_pair():
    """The estimate's rows first, each part in locality order (as the CV search holds
    them): every row is its own key, left out."""
    rng = np.random.default_rng(5)
    points = clusters(rng, 4000, 2, [[0, 0], [30, 30]], 2.0)
    first, rest = np.arange(1000), np.arange(1000, 4000)
    order = np.concatenate([first[locality_order(points[first], native_layout.BOX)],
                            rest[locality_order(points[rest], native_layout.BOX)]])  # fmt: skip
    points = points[order]
    values = np.sin(points).sum(axis=1, keepdims=True)
    h = np.array([0.1, 0.1])
    assert passes_over(points, 0.1)
    for rows, ordered in ((1000, True), (None, True), (None, False)):
        sums = native.leave_one_out_sums(points, values, 1.0 / h, rows=rows, ordered=ordered)
        count = 4000 if rows is None else rows
        want = textbook(points[:count], points, values, 0.1, leave_out=np.arange(count))
        np.testing.assert_allclose(sums[:, 1:] / sums[:, :1], want, rtol=0, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(
    d=st.integers(1, 3),
    seed=st.integers(0, 2**16),
    spread=st.floats(0.01, 3.0),
    distance=st.floats(0.0, 200.0),
    h=st.floats(0.005, 0.5),
)
@example(d=2, seed=0, spread=0.01, distance=200.0, h=0.005)  # clusters of near ties
def test_far_keys_never_change_a_sum_beyond_rounding(d, seed, spread, distance, h):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-distance, distance, (4, d))
    keys = clusters(rng, 2100, d, centres, spread)
    far = rng.uniform(-1.5 * distance - 1, 1.5 * distance + 1, (7, d))
    queries = np.vstack([clusters(rng, 2100, d, centres, spread), far])
    if d >= native.MATMUL_MIN_DIM:
        # the product form's own rounding grows with the scaled coordinates' squares
        h = max(h, np.max(np.abs(queries - keys.mean(axis=0))) / 300)
    values = np.column_stack([keys[:, 0], rng.standard_normal(2100)])
    got = native_pool(queries, keys, values, h)
    want = textbook(queries, keys, values, h)
    assert np.max(np.abs(got - want)) <= 1e-11 * np.ptp(values)


def test_locality_order_groups_near_points_into_tight_boxes():
    rng = np.random.default_rng(0)
    points = rng.uniform(0, 1, (64 * 64, 2))
    order = locality_order(points, 64)
    assert np.array_equal(np.sort(order), np.arange(len(points)))
    lo, hi = bounding_boxes(points[order], 64, 64 * 65)
    area = np.prod(hi[:64] - lo[:64], axis=1)
    assert np.mean(area) <= 1.5 / 64  # runs of 64 of 4096 points: 1/64 of the square each
    assert np.all(lo[:64] <= hi[:64]) and np.isinf(lo[64]).all() and np.isinf(hi[64]).all()
    inside = (points[order].reshape(64, 64, 2) >= lo[:64, None]) & (
        points[order].reshape(64, 64, 2) <= hi[:64, None]
    )
    assert inside.all()
    # ties everywhere, and fewer points than a run: still permutations
    assert np.array_equal(np.sort(locality_order(np.zeros((300, 3)), 64)), np.arange(300))
    assert np.array_equal(locality_order(points[:10], 64), np.arange(10))


def textbook_moments(queries, keys, values, h, ref, leave_out=None):
    """``[Σ w, Σ w δ, Σ w δδᵀ, Σ w y', Σ w δ y']`` about the keys ``ref`` (scaled
    coordinates, weights relative to the reference key's), in float64."""
    q, k = queries / h, keys / h
    out = []
    for i in range(len(q)):
        w = np.exp(-0.5 * ((k - q[i]) ** 2).sum(axis=1) + 0.5 * ((k[ref[i]] - q[i]) ** 2).sum())
        if leave_out is not None:
            w[leave_out[i]] = 0.0
        delta, dy = k - k[ref[i]], values - values[ref[i]]
        out.append(np.concatenate([[w.sum()], w @ delta, (delta.T * w @ delta).ravel(),
                                   w @ dy, (dy.T * w @ delta).ravel()]))  # fmt: skip
    return np.array(out)


@pytest.mark.parametrize(("d", "m", "h"), [(1, 20000, 0.02), (3, 3000, 0.1)])
@pytest.mark.parametrize("exclude_self", [False, True])
def test_local_moments_pass_over_far_keys_alike(d, m, h, exclude_self):
    """Local linear's moments weigh far keys by up to ``|k − k_ref|²``: the loop's bound
    counts it, and each row's reference key is named in the caller's order (one column:
    boxes narrower than a bandwidth, where a looser bound shows; three: the product form)."""
    rng = np.random.default_rng(d)
    keys = rng.uniform(0, 5, (m, d))
    queries = keys[:2500] if exclude_self else rng.uniform(-1, 6, (2500, d))
    values = np.column_stack([np.sin(keys).sum(axis=1), keys[:, 0]])
    assert passes_over(keys, h)
    moments, ref = native.native_moments(queries, keys, values, np.full(d, 1 / h),
                                         exclude_self=exclude_self)  # fmt: skip
    leave_out = np.arange(2500) if exclude_self else None
    rows = rng.choice(2500, 60, replace=False)  # the reference: every pair, row by row
    want = textbook_moments(queries[rows], keys, values, h, ref[rows],
                            None if leave_out is None else leave_out[rows])  # fmt: skip
    got = moments[rows]
    scale = np.max(np.abs(want), axis=0)
    assert np.all(np.abs(got - want) <= 1e-11 * scale)
    own = np.exp(-0.5 * (((keys[ref[rows]] - queries[rows]) / h) ** 2).sum(axis=1))
    heaviest = [np.max(np.exp(-0.5 * (((keys - queries[i]) / h) ** 2).sum(axis=1))
                       * (np.arange(m) != (i if exclude_self else -1))) for i in rows]  # fmt: skip
    np.testing.assert_allclose(own, heaviest, rtol=1e-12)


def test_passing_over_is_chosen_where_it_pays():
    """The boxes go where the loop passes over enough of them to repay its checks: not
    for uniform data in eight columns (it skips under 10% of the boxes there even at
    small bandwidths), yes in two and three columns at cross-validation's bandwidths."""
    rng = np.random.default_rng(3)
    m = 30_000
    cube = rng.uniform(0, 5, (m, 8))
    assert not native_layout.passes_over(cube / 0.3, m)
    assert not native_layout.passes_over(cube / 0.1, m)
    assert native_layout.passes_over(rng.uniform(0, 5, (m, 3)) / 0.1, m)
    assert native_layout.passes_over(rng.uniform(0, 5, (m, 2)) / 0.15, m)
    # a column where every key is the same parts none: the others decide
    flat = np.c_[rng.uniform(0, 5, (m, 2)), np.full(m, 2.0)]
    assert native_layout.passes_over(flat / 0.15, m)
    # overflowed or huge coordinates: no boxes, and no warning on the way
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        infinite = np.r_[cube[:99, :3], [[np.inf, 0.0, 0.0]]]
        assert native_layout.visited_share(infinite, 100) == 1.0
        huge = np.where(rng.uniform(size=(500, 20)) < 0.5, -1e307, 1e307)
        assert not native_layout.passes_over(huge, 500)


def test_the_visited_share_falls_as_the_bandwidth_shrinks():
    keys = np.random.default_rng(4).uniform(0, 5, (20_000, 3))
    shares = [native_layout.visited_share(keys / h, 20_000) for h in (2.0, 0.5, 0.2, 0.05)]
    assert all(0.0 <= s <= 1.0 for s in shares)
    assert shares[0] == 1.0 and shares[-1] < 0.1
    assert all(a >= b for a, b in itertools.pairwise(shares))


@pytest.mark.parametrize("d", [2, 3, 8])
def test_the_compiled_locality_order_splits_as_numpys(d):
    # the same k-d splits (runs of 64 as tight as NumPy's), ties and NaN in reasonable time
    from attnpool.methods import native

    rng = np.random.default_rng(d)
    points = rng.normal(size=(20_000, d)) * np.arange(1, d + 1)
    loop = native.order_function()
    assert loop is not None
    compiled = locality_order(points, 64, loop)
    numpy = locality_order(points, 64)
    assert np.array_equal(np.sort(compiled), np.arange(len(points)))
    rows = 64 * -(-len(points) // 64)
    volumes = [np.prod(np.subtract(*bounding_boxes(points[o], 64, rows)[::-1]), axis=1)
               for o in (compiled, numpy)]  # fmt: skip
    np.testing.assert_allclose(np.sort(volumes[0]), np.sort(volumes[1]), rtol=1e-12)
    for hostile in (np.zeros((50_000, d)), np.where(points > 0, np.nan, 1.0)):
        order = locality_order(hostile, 64, loop)
        assert np.array_equal(np.sort(order), np.arange(len(hostile)))
