"""``method=Tree(rtol, atol)``: kernel sums within a stated tolerance by a k-d tree, against
the textbook formula in NumPy float64, the exact oracle on adversarial data, and
scikit-learn's ``KernelDensity(atol, rtol)`` (the same guarantee)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.neighbors import KernelDensity as SklearnDensity

import attnpool
from adversarial import oracle_test
from attnpool import Tree
from reference import reference_pool

test_method_meets_the_oracle = oracle_test(["tree"])


def data(seed, n, m, d):
    rng = np.random.default_rng(seed)
    keys = np.concatenate([rng.normal(0, 1, (m // 2, d)), rng.uniform(-4, 4, (m - m // 2, d))])
    queries = rng.uniform(-4, 4, (n, d))
    values = np.stack([np.sin(keys).sum(1), keys[:, 0] ** 2], axis=1)
    return queries, keys, values


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "laplacian", "tricube"])
@pytest.mark.parametrize("d", [1, 2, 5])
@pytest.mark.parametrize("rtol", [1e-2, 1e-5])
def test_pooled_values_are_within_the_stated_tolerance(kernel, d, rtol):
    queries, keys, values = data(d, n=200, m=4000, d=d)
    got = attnpool.attention_pool(queries, keys, values, kernel=kernel, bandwidth=0.6,
                                  method=Tree(rtol=rtol), empty="nan")  # fmt: skip
    want = reference_pool(queries, keys, values, kernel, 0.6)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    error = np.nanmax(np.abs(got - want), axis=0)
    assert np.all(error <= rtol / (1 - rtol) * np.ptp(values, axis=0) + 1e-12)


@pytest.mark.parametrize("atol", [0.5, 20.0])
def test_pooling_honours_the_absolute_tolerance_of_the_weight_sum(atol):
    # the weight sum Σ K within atol (rtol = 0): a pooled value within atol / (s − atol)
    # of the values' range, s the row's weight sum; atol was ignored when pooling
    queries, keys, values = data(4, n=100, m=4000, d=2)
    got = attnpool.attention_pool(queries, keys, values, bandwidth=0.6,
                                  method=Tree(rtol=0.0, atol=atol))  # fmt: skip
    want = reference_pool(queries, keys, values, "gaussian", 0.6)
    u2 = (((queries[:, None] - keys[None]) / 0.6) ** 2).sum(axis=-1)
    weight = np.exp(-u2 / 2).sum(axis=1)
    rows = weight > 2 * atol
    bound = atol / (weight[rows] - atol)
    error = np.abs(got - want)[rows] / np.ptp(values, axis=0)
    assert np.all(error <= bound[:, None] + 1e-12)
    tight = attnpool.attention_pool(queries, keys, values, bandwidth=0.6,
                                    method=Tree(rtol=0.0, atol=1e-9))  # fmt: skip
    assert np.max(np.abs(got - want)) > 10 * np.max(np.abs(tight - want))  # atol is used


def test_far_boxes_are_taken_whole_and_crowded_rows_are_left_to_the_exact_engines():
    # at a loose tolerance most rows settle by boxes, within the bound; the rows the walk
    # leaves (it would visit a quarter of the leaves) come back unsettled
    from attnpool.methods import tree

    queries, keys, values = data(7, n=300, m=20000, d=2)
    for h, settles in ((0.5, True), (50.0, True)):
        sums, _, unsettled = tree.tree_sums(
            queries / h, keys / h, values, attnpool.kernels.get("gaussian"), rtol=1e-2
        )
        assert (unsettled.mean() < 0.5) == settles
        rows = ~unsettled
        want = reference_pool(queries[rows], keys, values, "gaussian", h)
        got = sums[rows, 1:] / sums[rows, :1]
        assert np.max(np.abs(got - want), axis=0).max() <= 0.0102 * np.ptp(values)
    sums, _, unsettled = tree.tree_sums(
        queries / 0.5, keys / 0.5, values, attnpool.kernels.get("gaussian"), rtol=1e-12
    )
    assert unsettled.mean() > 0.9 and np.all(sums[unsettled] == 0)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "exponential", "tophat"])
@pytest.mark.parametrize("atol, rtol", [(0.0, 1e-3), (1e-4, 0.0), (1e-5, 1e-2)])
def test_densities_keep_scikit_learns_guarantee(kernel, atol, rtol):
    # |f̂ − f| ≤ atol + rtol·f, as scikit-learn's KernelDensity(atol, rtol) promises
    names = {"exponential": "laplacian", "tophat": "boxcar"}
    ours = names.get(kernel, kernel)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3000, 3))
    q = rng.normal(size=(100, 3)) * 1.5
    h = 0.4
    exact = np.exp(attnpool.log_density(x, q, kernel=ours, bandwidth=h))
    got = np.exp(attnpool.log_density(x, q, kernel=ours, bandwidth=h,
                                      method=Tree(rtol=rtol, atol=atol)))  # fmt: skip
    assert np.all(np.abs(got - exact) <= atol + rtol * exact + 1e-15 * exact)
    sk = SklearnDensity(kernel=kernel, bandwidth=h, atol=atol, rtol=rtol).fit(x)
    theirs = np.exp(sk.score_samples(q))
    if kernel in ("gaussian", "epanechnikov", "tophat"):  # normalised alike
        assert np.all(np.abs(theirs - exact) <= atol + rtol * exact + 1e-12)


def test_product_kernels_and_compact_edges_are_summed_as_the_exact_paths_sum_them():
    grid = np.arange(-3.0, 4.0)
    keys = np.stack(np.meshgrid(grid, grid), -1).reshape(-1, 2).repeat(3, axis=0)
    values = np.arange(keys.shape[0], dtype=float)
    for kernel in ("epanechnikov", "boxcar", "triangular-product"):
        got = attnpool.attention_pool(keys, keys, values, kernel=kernel, bandwidth=1.0,
                                      method=Tree(rtol=1e-9))  # fmt: skip
        want = attnpool.attention_pool(keys, keys, values, kernel=kernel, bandwidth=1.0,
                                       method="dense")  # fmt: skip
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9 * np.ptp(values))


def test_the_record_is_checked():
    with pytest.raises(ValueError, match=r"Tree\.rtol: expected a number in"):
        attnpool.attention_pool([0.0], [0.0, 1.0], [1.0, 2.0], method=Tree(rtol=2.0))
    with pytest.raises(ValueError, match=r"Tree\.atol: expected a non-negative number"):
        attnpool.attention_pool([0.0], [0.0, 1.0], [1.0, 2.0], method=Tree(atol=-1.0))
    with pytest.raises(ValueError, match="'tree' needs a built-in distance kernel"):
        attnpool.attention_pool([0.0], [0.0, 1.0], [1.0, 2.0], kernel="dot", method="tree")
    for method in ("tree", Tree(rtol=1e-6)):  # its bound is for unweighted sums
        with pytest.raises(ValueError, match=r"^method: 'tree' bounds its error for unweighted"):
            attnpool.kernel_density([0.0, 1.0], [0.5], method=method, weights=[1.0, 2.0])
        with pytest.raises(ValueError, match=r"^weights: method 'tree' bounds its error"):
            attnpool.attention_pool([0.5], [0.0, 1.0], [1.0, 2.0], method=method,
                                    weights=[1.0, 2.0])  # fmt: skip


@pytest.mark.parametrize("atol", [0.0, 1e-3])
def test_densities_at_a_huge_bandwidth_keep_their_guarantee(atol):
    # at h = 1e300 the absolute tolerance in the sums' units, atol · m · ∏h ∫K, overflows
    # a float (it raised OverflowError); it is then infinite: the density within atol
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, (400, 2))
    got = attnpool.log_density(x, x[:20], bandwidth=1e300, method=Tree(rtol=1e-6, atol=atol))
    want = attnpool.log_density(x, x[:20], bandwidth=1e300, method="dense")
    assert np.all(np.isfinite(got))
    if atol == 0:
        np.testing.assert_allclose(got, want, rtol=1e-12)
    else:
        assert np.all(np.abs(np.exp(got) - np.exp(want)) <= atol + 1e-6 * np.exp(want))
