"""The NumPy engine: the estimators' small fits, without compiled programs.

Held to the compiled engines (the same formula in XLA), to the exact oracle
(``test_oracle_host.py``), and to the estimators' empty policies.
"""

import warnings

import numpy as np
import pytest

import attnpool
from attnpool import (
    EmptyNeighbourhoodWarning,
    LocalLinear,
    NadarayaWatson,
    cv_curve,
    kernels,
    local_regression,
    select_bandwidth,
)
from attnpool.engines import numpy_engine, numpy_search
from attnpool.methods import native
from attnpool.sums.local_model import model_for
from reference import long_double_local_linear, stable_gaussian_pool

DISTANCE_KERNELS = [k for k in kernels.names() if k != "dot" and kernels.get(k).base is None]


def _data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 5, (n, d))
    y = np.column_stack([np.sin(x[:, 0]) + x.sum(axis=1), np.cos(x[:, -1])])
    return x + rng.normal(0, 1e-3, x.shape), y + 0.1 * rng.standard_normal(y.shape)


@pytest.mark.parametrize("kernel", DISTANCE_KERNELS)
@pytest.mark.parametrize("degree", [0, 1])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_predictions_equal_the_compiled_engines(kernel, degree, d):
    # supports that hold enough points for a local linear design in three columns (with
    # fewer, the solution is the ridge's, and rounding decides it in either engine)
    x, y = _data(400, d)
    queries = np.random.default_rng(1).uniform(-0.5, 5.5, (30, d))
    bandwidth = np.linspace(1.5, 2.5, d)
    model = model_for(x, kernel=kernel, degree=degree)
    got, slopes, empty = numpy_engine.local_fit(x, y, queries, bandwidth, model)
    want, want_slopes = local_regression(  # a block size: the compiled (streamed) engine
        x, y, queries, kernel=kernel, bandwidth=bandwidth, degree=degree, return_slopes=True,
        block_size=64,
    )  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(slopes, want_slopes, rtol=1e-9, atol=1e-11)
    np.testing.assert_array_equal(empty, np.isnan(want).any(axis=1))


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "tricube", "laplacian"])
@pytest.mark.parametrize("degree", [0, 1])
@pytest.mark.parametrize("d", [1, 2])
def test_leave_one_out_objective_equals_the_compiled_one(kernel, degree, d):
    x, y = _data(60, d, seed=2)
    bandwidths = np.geomspace(0.3, 3.0, 5)
    objective = numpy_search.loo_objective(x, y, model_for(x, kernel=kernel, degree=degree))
    got = [objective(np.full(d, np.log(h))) for h in bandwidths]
    want = cv_curve(x, y, bandwidths, kernel=kernel, degree=degree)
    np.testing.assert_allclose(got, want, rtol=1e-11)  # inf where a point is alone


@pytest.mark.parametrize("degree", [0, 1])
@pytest.mark.parametrize("d", [1, 2])
def test_the_search_finds_the_compiled_searchs_optimum(degree, d):
    x, y = _data(120, d, seed=3)
    assert numpy_engine.serves(model_for(x, degree=degree), 120, 120, 2)
    fast = select_bandwidth(x, y, degree=degree)
    compiled = select_bandwidth(x, y, degree=degree, pooling="dense")
    np.testing.assert_allclose(fast.bandwidth, compiled.bandwidth, rtol=1e-5)
    assert fast.objective <= compiled.objective * (1 + 1e-12)


def test_small_fits_in_one_column_build_no_program():
    x, y = _data(200, 1, seed=4)
    with attnpool.count_programs() as count:
        for estimator in (NadarayaWatson(), LocalLinear(kernel="epanechnikov")):
            estimator.fit(x, y).predict(x[:17])
    assert (count.traced, count.built) == (0, 0)
    x, y = _data(200, 2, seed=4)
    with attnpool.count_programs() as count:  # the search compiles; predictions do not
        model = LocalLinear(bandwidth=[0.5, 0.7]).fit(x, y)
        model.predict(x[:17])
        model.predict(x[:18])
    assert (count.traced, count.built) == (0, 0)


def test_large_fits_go_to_the_compiled_engines(monkeypatch):
    model = model_for(np.zeros((1, 2)), kernel="epanechnikov", degree=1)
    rows = int(np.sqrt(numpy_engine.NUMPY_MAX_WORK / 9)) + 1
    assert not numpy_engine.serves(model, rows, rows, 1)
    # the Gaussian's: on the native loop where the compiled loops run
    gaussian = model_for(np.zeros((1, 2)), degree=1)
    assert numpy_engine.serves(gaussian, rows, rows, 1)
    with monkeypatch.context() as without:
        without.setenv("ATTNPOOL_INSTRUCTION_SET", "none")
        assert not numpy_engine.serves(gaussian, rows, rows, 1)
    assert not numpy_engine.serves(gaussian, rows, rows, 1, weighted=True)
    assert numpy_engine.serves(model_for(np.zeros((1, 2)), var_type="cu"), 10, 10, 1)
    # a callable's kernel takes NumPy too (host=True): small fits are summed here, with no
    # pooling program per new function; a record whose profile takes only JAX is not
    custom = kernels.Kernel.from_function(lambda u: 1 / (1 + u**2), name="cauchy-test")
    assert custom.host and numpy_engine.serves(
        model_for(np.zeros((1, 1)), kernel=custom), 10, 10, 1
    )
    jax_only = kernels.Kernel("jax-only", custom.log_profile)
    assert not numpy_engine.serves(model_for(np.zeros((1, 1)), kernel=jax_only), 10, 10, 1)


@pytest.mark.parametrize("estimator", [NadarayaWatson, LocalLinear])
def test_huge_and_tiny_responses_keep_their_digits(estimator):
    x, y = _data(300, 1, seed=5)
    small = estimator(bandwidth=0.4).fit(x, y[:, 0]).predict(x[:20])
    # one column near the largest float, one near the smallest normal: each in its units
    both = np.column_stack([y[:, 0] * 2.0**1015, y[:, 0] * 2.0**-1015])
    got = estimator(bandwidth=0.4).fit(x, both).predict(x[:20])
    np.testing.assert_allclose(got[:, 0], small * 2.0**1015, rtol=1e-12)
    np.testing.assert_allclose(got[:, 1], small * 2.0**-1015, rtol=1e-12)


def test_empty_neighbourhoods_follow_each_estimators_policy():
    x = np.array([[0.0], [1.0], [2.0]])
    y = np.array([1.0, 2.0, 4.0])
    far = np.array([[0.1], [9.0]])
    fit = NadarayaWatson(kernel="boxcar", bandwidth=0.5, empty="nearest").fit(x, y)
    np.testing.assert_array_equal(fit.predict(far), [1.0, 4.0])
    # by default the estimators' predictions stay finite, with one warning counting them
    with pytest.warns(EmptyNeighbourhoodWarning, match="1 of 2 queries .* nearest key's value"):
        got = NadarayaWatson(kernel="boxcar", bandwidth=0.5).fit(x, y).predict(far)
    np.testing.assert_array_equal(got, [1.0, 4.0])
    with pytest.warns(EmptyNeighbourhoodWarning, match="1 of 2 queries .* NaN"):
        got = NadarayaWatson(kernel="boxcar", bandwidth=0.5, empty="nan").fit(x, y).predict(far)
    np.testing.assert_array_equal(got, [1.0, np.nan])
    with pytest.raises(ValueError, match=r"^empty: 1 of 2 queries have no key"):
        NadarayaWatson(kernel="boxcar", bandwidth=0.5, empty="raise").fit(x, y).predict(far)
    with pytest.raises(ValueError, match=r"^empty: 1 of 2 queries have no training point"):
        LocalLinear(kernel="boxcar", bandwidth=1.5, empty="raise").fit(x, y).predict(far)
    # an unbounded kernel whose weights all underflow takes the nearest training point
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tiny = NadarayaWatson(bandwidth=1e-160).fit(x, y).predict(np.array([[0.4], [1.7]]))
    np.testing.assert_array_equal(tiny, [1.0, 4.0])


def test_a_user_kernel_under_a_built_in_name_is_left_to_the_compiled_engines():
    import jax.numpy as jnp

    original = kernels.get("epanechnikov")
    # a JAX-only profile (NumPy arrays would not survive it) registered over a built-in
    impostor = kernels.Kernel("epanechnikov", lambda r2: jnp.log1p(-jnp.minimum(r2, 0.5)))
    x, y = _data(60, 1, seed=6)
    try:
        kernels.register(impostor, overwrite=True)
        assert not numpy_engine.serves(model_for(x, kernel="epanechnikov"), 60, 60, 2)
        got = NadarayaWatson(kernel="epanechnikov", bandwidth=0.8).fit(x, y).predict(x[:9])
    finally:
        kernels.register(original, overwrite=True)
    want = local_regression(x, y, x[:9], kernel=impostor, bandwidth=0.8, block_size=64)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_block_size_asks_for_the_compiled_streamed_engines():
    x, y = _data(100, 1, seed=7)
    with attnpool.count_programs() as count:  # a block size no other test uses: a new program
        NadarayaWatson(bandwidth=0.5, block_size=37).fit(x, y).predict(x[:5])
    assert count.traced >= 1


@pytest.mark.parametrize(("kernel", "bandwidth"), [("gaussian", 0.01), ("laplacian", 1e-3)])
def test_local_linear_with_one_dominant_key_matches_the_exact_weighted_fit(kernel, bandwidth):
    # the second key weighs 1e-15 to 1e-50 of the first: in one pass, E[δ²] − E[δ]²
    # cancelled to rounding and the slope came out of it (17% off); about the weighted
    # mean (two passes) it is exact
    rng = np.random.default_rng(0)
    x = np.round(rng.uniform(0, 5, 200) * 1024) / 1024
    y = np.sin(x) + 0.2 * rng.standard_normal(200)
    queries = rng.uniform(-1, 6, 30)
    got = (
        LocalLinear(kernel=kernel, bandwidth=bandwidth).fit(x[:, None], y).predict(queries[:, None])
    )
    want = long_double_local_linear(x, y, queries, kernel, bandwidth)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_the_native_leave_one_out_objective_is_the_textbook_one(d):
    # at n = 400 Nadaraya–Watson's leave-one-out sums run on the compiled C loop (own
    # pair masked), down to bandwidths beyond its reach (NumPy settles those)
    assert native.available()
    x, y = _data(400, d, seed=5)
    x = x + 1.7e9 * (d == 2)  # far from the origin
    y = y * np.array([1.0, 1e150])  # and a huge column beside a small one
    bandwidths = np.concatenate([np.geomspace(0.05, 5.0, 7), [1e-4]])
    assert numpy_search.native_serves(model_for(x), *y.shape)
    objective = numpy_search.loo_objective(x, y, model_for(x))
    got = [objective(np.full(d, np.log(h))) for h in bandwidths]
    want = []
    for h in bandwidths:  # the textbook formula, own pair removed
        r2 = sum(np.subtract.outer(x[:, j], x[:, j]) ** 2 for j in range(d)) / h**2
        log_w = -0.5 * r2
        np.fill_diagonal(log_w, -np.inf)
        w = np.exp(log_w - log_w.max(axis=1, keepdims=True))
        fit = (w / w.sum(axis=1, keepdims=True)) @ y
        want.append(np.mean((y - fit) ** 2))
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize(("d", "smallest"), [(1, 0.01), (2, 0.4), (3, 0.8)])
def test_the_native_local_linear_objective_equals_the_compiled_one(d, smallest):
    # local linear's leave-one-out moments on the C loop, about each row's heaviest key;
    # in one column down to bandwidths where one key carries nearly all of a row's
    # weight (weights below 2^-1020 of the heaviest are 0 on the loop); in several down
    # to where the local designs are still well posed (below, rounding decides the
    # slopes in any engine)
    x, y = _data(300, d, seed=8)
    x = x + 1.7e9 * (d == 2)
    bandwidths = np.geomspace(smallest, 5.0, 7)
    model = model_for(x, degree=1)
    assert numpy_search.native_serves(model, *y.shape)
    objective = numpy_search.loo_objective(x, y, model)
    got = [objective(np.full(d, np.log(h))) for h in bandwidths]
    want = cv_curve(x, y, bandwidths, degree=1)
    np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("degree", [0, 1])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_the_native_search_finds_the_compiled_searchs_optimum(d, degree):
    x, y = _data(300, d, seed=6)
    assert numpy_search.searches(model_for(x, degree=degree), 300, 2)
    with attnpool.count_programs() as count:
        fast = select_bandwidth(x, y, degree=degree)
    assert count.traced == 0
    compiled = select_bandwidth(x, y, degree=degree, pooling="dense")
    # the host's objective is the compiled engines', and its optimum at least as good
    # (local linear's objective is flat enough that the compiled search stops 3% short
    # in one column, and in three leaves an irrelevant column's bandwidth at 26, not 2e6)
    here = cv_curve(x, y, fast.bandwidth[None], degree=degree)[0]
    np.testing.assert_allclose(fast.objective, here, rtol=1e-10)
    assert fast.objective <= compiled.objective * (1 + 1e-12)
    if degree == 0:
        np.testing.assert_allclose(fast.bandwidth, compiled.bandwidth, rtol=1e-5)


def test_a_small_search_runs_on_the_loop_and_equals_numpys(monkeypatch):
    x, y = _data(60, 2, seed=8)
    on_the_loop = select_bandwidth(x, y)
    monkeypatch.setenv("ATTNPOOL_INSTRUCTION_SET", "none")
    on_numpy = select_bandwidth(x, y)
    np.testing.assert_allclose(on_the_loop.objective, on_numpy.objective, rtol=1e-9)
    np.testing.assert_allclose(on_the_loop.bandwidth, on_numpy.bandwidth, rtol=1e-4)


def test_large_gaussian_predictions_run_on_the_loop(monkeypatch):
    # from NATIVE_POOL_MIN_PAIRS pairs Nadaraya–Watson with the Gaussian runs on the C
    # loop (a NumPy pair costs ~20 times more); without it in NumPy. Either way: the
    # max-shifted textbook formula in float64.
    x, y = _data(600, 2, seed=10)
    queries = np.random.default_rng(11).uniform(-1, 6, (500, 2))
    h = np.array([0.3, 0.5])
    assert queries.shape[0] * x.shape[0] >= numpy_engine.NATIVE_POOL_MIN_PAIRS
    reference = stable_gaussian_pool(queries, x, y, h)
    with monkeypatch.context() as without:
        without.setenv("ATTNPOOL_INSTRUCTION_SET", "none")
        on_numpy = NadarayaWatson(bandwidth=h).fit(x, y).predict(queries)
    calls, native_sums = [], native.native_sums
    monkeypatch.setattr(
        native, "native_sums", lambda *a, **k: calls.append(1) or native_sums(*a, **k)
    )
    on_the_loop = NadarayaWatson(bandwidth=h).fit(x, y).predict(queries)
    assert calls
    np.testing.assert_allclose(on_numpy, reference, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(on_the_loop, reference, rtol=1e-12, atol=1e-12)


def test_large_numpy_predictions_build_no_program():
    # a NumPy predict a host backend serves stays NumPy: Nadaraya–Watson by a host method
    # (its sums come back as NumPy), local linear by the loop's moments;
    # each new query count costs no program. Both equal the textbook formula in float64.
    x, y = _data(20_000, 1, seed=12)
    h = np.array([0.05])
    queries = [np.random.default_rng(13).uniform(-0.5, 5.5, (k, 1)) for k in (700, 900, 1100)]
    constant = NadarayaWatson(bandwidth=h).fit(x, y)
    linear = LocalLinear(bandwidth=h).fit(x, y[:, 0])
    constant.predict(queries[0][:5]), linear.predict(queries[0][:5])  # modules loaded
    with attnpool.count_programs() as count:
        pooled = [constant.predict(q) for q in queries]
        fitted = [linear.predict(q) for q in queries]
    assert (count.traced, count.compiled) == (0, 0)
    for q, found in zip(queries, pooled, strict=True):
        np.testing.assert_allclose(found, stable_gaussian_pool(q, x, y, h), rtol=1e-9, atol=1e-9)
    reference = long_double_local_linear(x[:, 0], y[:, 0], queries[0][:200, 0], "gaussian", h[0])
    np.testing.assert_allclose(fitted[0][:200], reference, rtol=1e-9, atol=1e-9)


def test_local_linear_on_the_loop_keeps_a_weight_near_the_float_limit():
    # h = 1e-6 on 4000 points: a query's second key weighs e^(−708) of its first, near
    # the float limit; the loop's moments (relative to the heaviest key) keep it and meet
    # the long-double fit, where XLA's flushed it (1.2e-3 off)
    rng = np.random.default_rng(0)
    for _ in range(2):  # (the draws of the case found)
        rng.uniform(0, 5, (4000, 1)), rng.normal(0, 0.1, 4000), rng.uniform(-0.5, 5.5, (300, 1))
    x = rng.uniform(0, 5, (4000, 1))
    y = np.sin(x[:, 0]) + rng.normal(0, 0.1, 4000)
    q = rng.uniform(-0.5, 5.5, (300, 1))[287:288]
    model = LocalLinear(bandwidth=1e-6).fit(x, y)
    assert numpy_engine.serves(model_for(x, degree=1), 300, 4000, 1)
    fitted = model.predict(np.repeat(q, 300, axis=0))[0]  # 300 queries: on the loop
    want = long_double_local_linear(x[:, 0], y, q[:, 0], "gaussian", 1e-6)[0]
    assert fitted == pytest.approx(want, rel=1e-12)
