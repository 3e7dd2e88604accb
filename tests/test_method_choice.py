"""Choosing a method: the ``"auto"`` rules branch by branch, clear errors, and the
estimators and bandwidth search with their ``method``/``pooling``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnpool import Binned, TopK, attention_pool, kernels
from attnpool.methods import choice
from method_data import BINNED_TOLERANCE, EXACT_RTOL, FUSED_RTOL, data, exact, value_range
from reference import leave_one_out_pool

# --- the "auto" rules, one test per branch -------------------------------------------------


def choose(
    kernel,
    n,
    m,
    d,
    *,
    bandwidth=0.1,
    traced=False,
    weights=False,
    backend="cpu",
    dtype=np.float32,
    seed=0,
):
    rng = np.random.default_rng(seed)
    queries = rng.uniform(0, 10, (n, d)).astype(dtype)
    keys = rng.uniform(0, 10, (m, d)).astype(dtype)
    return choice.choose_method(
        kernels.get(kernel),
        queries,
        keys,
        np.full(d, bandwidth),
        traced=traced,
        weights=weights,
        backend=backend,
    )


def test_auto_rule_1_weights_are_dense():
    assert choose("gaussian", 3000, 3000, 1, weights=True) == "dense"


def test_auto_rule_2_small_problems_are_dense():
    assert choose("epanechnikov", 1000, 2000, 1) == "dense"


def test_auto_rule_3_traced_inputs_stream_or_on_a_gpu_are_pallas():
    assert choose("epanechnikov", 3000, 3000, 1, traced=True) == "stream"
    assert choose("epanechnikov", 3000, 3000, 1, traced=True, backend="gpu") == "pallas"
    assert choose("gaussian-order4", 3000, 3000, 1, traced=True, backend="gpu") == "stream"


def test_auto_rule_4_one_dimension_compact_kernels_are_sparse_and_the_gaussian_fgt():
    assert choose("boxcar", 3000, 3000, 1, bandwidth=50.0) == "sparse"
    assert choose("gaussian", 3000, 3000, 1) == "fgt"
    assert choose("laplacian", 3000, 3000, 1) == "stream"


def test_auto_rule_5_compact_kernels_with_small_neighbourhoods_are_sparse():
    assert choose("epanechnikov", 3000, 3000, 2, bandwidth=0.5) == "sparse"
    assert choose("epanechnikov", 3000, 3000, 2, bandwidth=5.0) == "stream"  # most keys
    assert choose("epanechnikov", 3000, 3000, 6, bandwidth=0.5) == "stream"  # d > 4


def test_auto_rule_6_non_negative_kernels_on_a_gpu_are_pallas():
    assert choose("gaussian", 3000, 3000, 8, backend="gpu") == "pallas"
    assert choose("dot", 3000, 3000, 8, backend="gpu") == "pallas"
    assert choose("gaussian", 3000, 3000, 8, backend="gpu", dtype=np.float64) == "pallas"
    assert choose("gaussian", 3000, 3000, 2, backend="gpu", bandwidth=1e-3) == "pallas"
    assert choose("laplacian", 3000, 3000, 2, backend="gpu") == "pallas"
    assert choose("epanechnikov", 3000, 3000, 6, backend="gpu", bandwidth=0.5) == "pallas"
    assert choose("gaussian", 3000, 3000, 1, backend="gpu") == "fgt"  # rule 4 first
    assert choose("epanechnikov", 3000, 3000, 2, backend="gpu", bandwidth=0.5) == "sparse"


def test_auto_rule_7_the_gaussian_on_a_cpu_is_native():
    assert choose("gaussian", 3000, 3000, 2) == "native"
    assert choose("gaussian", 3000, 3000, 8, dtype=np.float64) == "native"
    assert choose("gaussian", 3000, 3000, 8, backend="gpu") == "pallas"  # rule 6 first
    assert choose("gaussian", 3000, 3000, 1) == "fgt"  # rule 4 first


def test_auto_rule_7_needs_the_compiled_loops(without_compiled_loops):
    assert choose("gaussian", 3000, 3000, 2) == "stream"


def test_auto_rule_7_serves_the_columns_built():
    assert choose("gaussian", 3000, 3000, 16) == "native"  # d = 9-16 padded to 16
    assert choose("gaussian", 3000, 3000, 17) == "stream"


def test_auto_rule_8_everything_else_streams():
    assert choose("laplacian", 3000, 3000, 2) == "stream"
    assert choose("laplacian", 3000, 3000, 1) == "stream"
    assert choose("laplacian", 3000, 3000, 2, backend="cpu") == "stream"


def test_auto_in_attention_pool_uses_the_rules():
    # "auto" gives what the method its rules choose gives, bit for bit, on this backend
    # (here the CPU's sparse, fgt, native and stream; on a GPU pallas where rule 6 says)
    def chosen(queries, keys, kernel):
        return choice.choose_method(kernels.get(kernel), queries, keys, np.full(keys.shape[1], 0.3),
                                    traced=False, weights=False)  # fmt: skip

    for seed, d, kernel in [(90, 1, "epanechnikov"), (90, 1, "gaussian"), (91, 2, "gaussian"),
                            (91, 2, "laplacian")]:  # fmt: skip
        queries, keys, values = data(seed, n=3000, m=3000, d=d)
        name = chosen(queries, keys, kernel)
        got = attention_pool(queries, keys, values, kernel=kernel, bandwidth=0.3)
        want = attention_pool(queries, keys, values, kernel=kernel, bandwidth=0.3, method=name)
        np.testing.assert_array_equal(got, want)
    if jax.default_backend() == "cpu":
        assert [chosen(*data(s, n=3000, m=3000, d=d)[:2], k) for s, d, k in
                [(90, 1, "epanechnikov"), (90, 1, "gaussian"), (91, 2, "laplacian")]] == [
            "sparse", "fgt", "stream"]  # fmt: skip


# --- clear errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(method="fast"), r"method: expected one of 'auto', .* received 'fast'"),
        (dict(method="binned", kernel="dot"), r"'binned' bins radial, non-negative .* 'dot'"),
        (dict(method="sparse"), r"'sparse' needs a compact-support .* 'gaussian'"),
        (dict(method="fused", kernel="epanechnikov"), r"'fused' supports .* 'epanechnikov'"),
        (
            dict(method="fgt", kernel="laplacian"),
            r"'fgt' pools .* 'gaussian' .* 'laplacian', d = 1",
        ),
        (dict(method="topk", kernel="dot"), r"'topk' needs a built-in .* 'dot'"),
        (dict(method="native", kernel="laplacian"), r"'native' pools .* 'gaussian' .* 'laplacian'"),
        (dict(method="sparse", kernel="boxcar", return_weights=True), r"does not form the weight"),
        (dict(method=TopK(k=0)), r"TopK.k: expected a positive integer; received 0"),
        (dict(method=Binned(tolerance=2.0)), r"Binned.tolerance: expected a number in \(0, 1\)"),
        (dict(method=Binned(grid_size=2)), r"Binned.grid_size: expected at least 4"),
        (dict(method=Binned(tolerance=None)), r"Binned.tolerance: expected a number in \(0, 1\)"),
    ],
)
def test_bad_methods_are_clear_errors(kwargs, message):
    queries, keys, values = data(100, n=10, m=50)
    with pytest.raises(ValueError, match=message):
        attention_pool(queries, keys, values, **kwargs)


def test_binned_needs_at_most_two_dimensions_and_host_methods_concrete_arrays():
    queries, keys, values = data(101, n=10, m=50, d=3)
    with pytest.raises(ValueError, match="'binned' works for d <= 2; received d = 3"):
        attention_pool(queries, keys, values, method="binned")
    with pytest.raises(ValueError, match=r"'fgt' pools .* in one dimension; .* d = 3"):
        attention_pool(queries, keys, values, method="fgt")
    with pytest.raises(ValueError, match="'sparse' needs concrete arrays"):
        jax.jit(lambda q: attention_pool(q, keys, values, kernel="boxcar", method="sparse"))(
            jnp.asarray(queries)
        )


# --- the estimators and the bandwidth search --------------------------------------------


@pytest.mark.parametrize(
    "method, kernel, tolerance",
    [
        ("sparse", "epanechnikov", 1e-9),
        ("binned", "gaussian", BINNED_TOLERANCE),
        ("fused", "gaussian", FUSED_RTOL),
        (TopK(k=400), "tricube", 1e-9),
        ("stream", "gaussian", 1e-12),
        ("native", "gaussian", 1e-12),
    ],
)
def test_nadaraya_watson_predicts_with_every_method(method, kernel, tolerance):
    from attnpool import NadarayaWatson

    queries, keys, values = data(110, d=2)
    fitted = NadarayaWatson(kernel, bandwidth=0.8, method=method, empty="nearest").fit(keys, values)
    want = exact(queries, keys, values, kernel, 0.8)
    error = np.max(np.abs(fitted.predict(queries) - want), axis=0) / value_range(values)
    assert np.all(error <= 2 * tolerance)


def test_sparse_bandwidth_search_is_exact_and_as_good_as_the_exact_search():
    from attnpool import cv_curve, select_bandwidth

    _, keys, values = data(120, m=600, layout="clustered")
    y = values[:, 0] + np.random.default_rng(0).normal(0, 0.3, 600)
    sparse_search = select_bandwidth(keys, y, kernel="epanechnikov", pooling="sparse")
    exact_search = select_bandwidth(keys, y, kernel="epanechnikov", pooling="dense")
    at_optimum = cv_curve(keys, y, [sparse_search.bandwidth[0]], kernel="epanechnikov")[0]
    np.testing.assert_allclose(sparse_search.objective, at_optimum, rtol=EXACT_RTOL)
    assert sparse_search.objective <= exact_search.objective * (1 + 1e-3)


def test_sparse_bandwidth_search_in_two_dimensions():
    from attnpool import cv_curve, select_bandwidth

    _, keys, values = data(121, m=800, d=2)
    y = values[:, 0] + np.random.default_rng(1).normal(0, 0.3, 800)
    found = select_bandwidth(keys, y, kernel="triangular", pooling="sparse")
    assert found.bandwidth.shape == (2,)
    np.testing.assert_allclose(
        found.objective,
        cv_curve(keys, y, found.bandwidth[None], kernel="triangular")[0],
        rtol=EXACT_RTOL,
    )
    assert found.objective <= np.nanmin(found.grid[1])


@pytest.mark.parametrize(
    "pooling, kernel, d",
    [("sparse", "epanechnikov", 1), ("fgt", "gaussian", 1), ("native", "gaussian", 2)],
)
def test_host_methods_leave_one_out_sums_are_the_textbook_ones(pooling, kernel, d):
    from attnpool.kernels import get
    from attnpool.methods.backends import host_backend
    from attnpool.sums import layer
    from attnpool.sums.problem import SumProblem

    _, keys, values = data(127, m=300, d=d, layout="clustered")
    h = np.full(d, 0.4)
    problem = SumProblem.leave_one_out(keys, values, h, get(kernel))
    sums = layer.solve(host_backend(pooling), problem).sums
    want = leave_one_out_pool(keys, values, h, kernel)
    with np.errstate(invalid="ignore"):  # alone in its support: NaN in both
        np.testing.assert_allclose(sums[:, 1:] / sums[:, :1], want, rtol=1e-11, atol=1e-12)
    assert np.isfinite(want).mean() > 0.9


@pytest.mark.parametrize(
    "pooling, kernel, d",
    [("sparse", "triangular", 1), ("fgt", "gaussian", 1), ("native", "gaussian", 2)],
)
def test_searches_on_a_host_methods_sums_find_the_exact_searchs_optimum(pooling, kernel, d):
    from attnpool import cv_curve, select_bandwidth

    _, keys, values = data(128, m=400, d=d)
    y = values[:, 0] + np.random.default_rng(5).normal(0, 0.3, 400)
    found = select_bandwidth(keys, y, kernel=kernel, pooling=pooling)
    exact = select_bandwidth(keys, y, kernel=kernel, pooling="dense")
    np.testing.assert_allclose(
        found.objective, cv_curve(keys, y, found.bandwidth[None], kernel=kernel)[0], rtol=1e-10
    )
    assert found.objective <= exact.objective * (1 + 1e-6)


def test_binned_bandwidth_search_can_be_asked_for_below_its_threshold():
    from attnpool import select_bandwidth

    _, keys, values = data(122, m=400)
    y = values[:, 0] + np.random.default_rng(2).normal(0, 0.3, 400)
    binned_search = select_bandwidth(keys, y, pooling="binned")
    exact_search = select_bandwidth(keys, y, pooling="stream")
    np.testing.assert_allclose(binned_search.bandwidth, exact_search.bandwidth, rtol=1e-3)
    np.testing.assert_allclose(binned_search.objective, exact_search.objective, rtol=1e-6)


def test_estimators_search_with_their_method():
    from attnpool import NadarayaWatson, select_bandwidth

    _, keys, values = data(123, m=500)
    y = values[:, 0]
    fitted = NadarayaWatson("epanechnikov", method="sparse").fit(keys, y)
    direct = select_bandwidth(keys, y, kernel="epanechnikov", pooling="sparse")
    np.testing.assert_array_equal(fitted.bandwidth_, direct.bandwidth)
    assert fitted.cv_score_ == direct.objective


@pytest.mark.parametrize("kernel", ["boxcar", "gaussian"])
def test_an_estimators_method_whose_own_search_cannot_serve_it_searches_exactly(kernel):
    # the binned search takes the smooth built-in kernels of one column: a binned
    # boxcar fit, or one of two columns, has its CV bandwidth from the exact search
    from attnpool import NadarayaWatson, select_bandwidth

    _, keys, values = data(124, m=300)
    keys = keys if kernel == "boxcar" else np.c_[keys, keys[::-1] ** 2]
    fitted = NadarayaWatson(kernel, method="binned").fit(keys, values[:, 0])
    direct = select_bandwidth(keys, values[:, 0], kernel=kernel)
    np.testing.assert_array_equal(fitted.bandwidth_, direct.bandwidth)
    assert fitted.cv_score_ == direct.objective


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda x, y: __import__("attnpool").select_bandwidth(x, y, pooling="fast"),
            r"pooling: .*'fast'",
        ),
        (
            lambda x, y: __import__("attnpool").select_bandwidth(x, y, pooling="sparse"),
            r"'sparse' searches .* kernel='gaussian'",
        ),
        (
            lambda x, y: __import__("attnpool").select_bandwidth(x, y, pooling="topk"),
            r"pooling: expected one of .*'native'.* received 'topk'",
        ),
        (
            lambda x, y: __import__("attnpool").select_bandwidth(
                np.c_[x, x[::-1]], y, pooling="fgt"
            ),
            r"'fgt' searches .* d = 2",
        ),
        (
            lambda x, y: __import__("attnpool").select_bandwidth(x, y, pooling="native", degree=1),
            r"'native' searches .* degree=1",
        ),
        (
            lambda x, y: __import__("attnpool").select_bandwidth(
                np.c_[x, x[::-1]], y, pooling="binned"
            ),
            r"'binned' searches .* one continuous",
        ),
        (
            lambda x, y: __import__("attnpool").LocalLinear(method="sparse").fit(x, y),
            r"method: 'sparse' pools local-constant fits .* degree=1",
        ),
        (
            lambda x, y: __import__("attnpool").NadarayaWatson(method="nope").fit(x, y),
            r"method: expected one of",
        ),
    ],
)
def test_bad_search_or_estimator_methods_are_clear_errors(call, message):
    _, keys, values = data(124, m=100)
    with pytest.raises(ValueError, match=message):
        call(keys, values[:, 0])


@pytest.mark.parametrize("kernel, exact_objective", [("laplacian", False), ("epanechnikov", True)])
def test_large_binned_searches_report_the_best_objective_they_can_afford(
    kernel, exact_objective, monkeypatch
):
    from attnpool import cv_curve, select_bandwidth
    from attnpool.bandwidth import compiled

    monkeypatch.setattr(compiled, "EXACT_OBJECTIVE_MAX_PAIRS", 1000**2)  # as if n were huge
    _, keys, values = data(125, m=2000)
    y = values[:, 0] + np.random.default_rng(3).normal(0, 0.3, 2000)
    found = select_bandwidth(keys, y, kernel=kernel, pooling="binned")  # (auto searches exactly)
    assert found.exact is exact_objective
    at_optimum = cv_curve(keys, y, found.bandwidth, kernel=kernel)[0]
    np.testing.assert_allclose(
        found.objective, at_optimum, rtol=EXACT_RTOL if exact_objective else 1e-4
    )


def test_large_gaussian_searches_report_the_exact_objective_by_fgt(monkeypatch):
    from attnpool import cv_curve, select_bandwidth
    from attnpool.bandwidth import compiled, leave_one_out
    from attnpool.kernels import get

    monkeypatch.setattr(compiled, "EXACT_OBJECTIVE_MAX_PAIRS", 1000**2)  # as if n were huge
    _, keys, values = data(126, m=2100)  # fgt from n² ≥ 2²², n = 2048
    keys[:3, 0] = [-4.0, 15.0, 30.0]  # alone: their leave-one-out weights are summed by pairs
    y = values[:, 0] + np.random.default_rng(4).normal(0, 0.3, 2100)
    found = select_bandwidth(keys, y)
    assert found.exact
    at_optimum = cv_curve(keys, y, found.bandwidth)[0]
    np.testing.assert_allclose(found.objective, at_optimum, rtol=EXACT_RTOL)
    for h in [0.01, 0.1, 1.0]:  # many lonely points, few, none
        np.testing.assert_allclose(
            leave_one_out.cv_objective("fgt", keys, y[:, None], get("gaussian"))(np.log([h])),
            cv_curve(keys, y, [h])[0],
            rtol=EXACT_RTOL,
        )
