"""Observation weights (``weights=``, ``sample_weight=``): a key's log weight plus log w_i.

References: repeated rows (an integer weight is that many copies of the row, in the
pools, the criteria, the rules of thumb and the estimators), the textbook weighted
formula in NumPy float64, the long-double oracle on the repeated keys (hostile data),
weighted least squares by ``numpy.linalg.lstsq`` and central finite differences.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adversarial import assert_rows_meet_the_oracle, problems, row_settings
from attnpool import (
    Binned,
    LocalLinear,
    NadarayaWatson,
    NadarayaWatsonClassifier,
    TopK,
    aicc_curve,
    attention_pool,
    attention_weights,
    cv_curve,
    local_regression,
    select_bandwidth,
)
from attnpool.bandwidth import rule_of_thumb
from method_data import EXACT_METHOD_CASES, EXACT_RTOL, data
from reference import reference_weights

N, M = 50, 400


def integer_weights(seed, m, high=4):
    """Weights in ``0 … high − 1`` (some zero, some positive) and the repeated row index."""
    w = np.random.default_rng(seed).integers(0, high, m).astype(float)
    w[0] = max(w[0], 1.0)
    return w, np.repeat(np.arange(m), w.astype(int))


def weighted_reference(queries, keys, values, kernel, bandwidth, w):
    """The four-line formula with each kernel weight times ``w_i`` (or ``w (n, m)``, per
    query), then normalised."""
    weights = reference_weights(queries, keys, kernel, bandwidth) * (w if w.ndim == 2 else w[None])
    return (weights / weights.sum(axis=1, keepdims=True)) @ values


METHODS = [*EXACT_METHOD_CASES, ("auto", "gaussian", 3, EXACT_RTOL)]


@pytest.mark.parametrize("method, kernel, d, rtol", METHODS)
def test_integer_weights_pool_as_repeated_keys_on_every_method(method, kernel, d, rtol):
    queries, keys, values = data(70 + d, n=N, m=M, d=d)
    w, repeated = integer_weights(d, M)
    got = attention_pool(queries, keys, values, kernel=kernel, bandwidth=0.6, method=method,
                         weights=w)  # fmt: skip
    want = attention_pool(queries, keys[repeated], values[repeated], kernel=kernel,
                          bandwidth=0.6, method="dense")  # fmt: skip
    atol = rtol * np.abs(values).max()
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    reference = weighted_reference(queries, keys, values, kernel, 0.6, w)
    np.testing.assert_allclose(got, reference, rtol=rtol, atol=atol)


@pytest.mark.parametrize("method", ["binned", "topk"])
def test_approximations_refuse_weights(method):
    queries, keys, values = data(80, n=10, m=50)
    option = {"binned": Binned(), "topk": TopK(k=10)}[method]
    with pytest.raises(ValueError, match=rf"weights: method '{method}' bounds its error"):
        attention_pool(queries, keys, values, method=option, weights=np.ones(50))


def test_zero_weights_remove_keys_with_masks_and_in_the_nearest_limit():
    queries, keys, values = data(81, n=30, m=60)
    w = np.ones(60)
    w[::3] = 0
    kept = w > 0
    got = attention_pool(queries, keys, values, bandwidth=0.3, weights=w)
    np.testing.assert_allclose(got, attention_pool(queries, keys[kept], values[kept],
                                                   bandwidth=0.3), rtol=1e-13)  # fmt: skip
    # valid lengths count the kept keys among each query's first keys
    lengths = np.random.default_rng(1).integers(2, 61, 30)
    matrix = np.arange(60)[None, :] < lengths[:, None]
    by_lengths = attention_pool(queries, keys, values, bandwidth=0.3, weights=w, mask=lengths)
    by_matrix = attention_pool(queries, keys, values, bandwidth=0.3, weights=w, mask=matrix)
    want = weighted_reference(queries, keys, values, "gaussian", 0.3, w * matrix)
    np.testing.assert_allclose(by_lengths, want, rtol=1e-12)
    np.testing.assert_allclose(by_matrix, want, rtol=1e-12)
    # the limit: the nearest key of positive weight; tied keys in proportion to weights
    limit = attention_pool([1.0], [1.0, 0.0, 2.0], [5.0, 10.0, 30.0], weights=[0, 1, 3],
                           bandwidth=1e-300)  # fmt: skip
    np.testing.assert_allclose(limit, [25.0], rtol=1e-15)


def test_attention_weights_with_weights_are_the_weighted_shares():
    queries, keys, _ = data(82, n=20, m=80)
    w, _ = integer_weights(5, 80)
    got = attention_weights(queries, keys, bandwidth=0.4, weights=w)
    want = reference_weights(queries, keys, "gaussian", 0.4) * w[None, :]
    np.testing.assert_allclose(got, want / want.sum(axis=1, keepdims=True), rtol=1e-12)
    assert np.all(got[:, w == 0] == 0)
    pooled, matrix = attention_pool(queries, keys, np.eye(80), bandwidth=0.4, weights=w,
                                    return_weights=True)  # fmt: skip
    np.testing.assert_allclose(matrix, got, rtol=1e-13)
    np.testing.assert_allclose(pooled, got, rtol=1e-9, atol=1e-15)


def test_traced_weights_under_jit_and_grad():
    queries, keys, values = (jnp.asarray(a, jnp.float32) for a in data(83, n=20, m=90))
    w, _ = integer_weights(6, 90)

    def pool(weights):
        return attention_pool(queries, keys, values, bandwidth=0.3, weights=weights)

    jitted = jax.jit(pool)(jnp.asarray(w, jnp.float32))
    np.testing.assert_allclose(np.asarray(jitted), pool(w), rtol=1e-5, atol=1e-6)
    # zero weights under jit are masked: the nearest key of positive weight in the limit
    tiny = jax.jit(lambda weights: attention_pool(queries, keys, values, bandwidth=1e-30,
                                                  weights=weights))(jnp.asarray(w))  # fmt: skip
    np.testing.assert_allclose(np.asarray(tiny), attention_pool(
        np.asarray(queries), np.asarray(keys)[w > 0], np.asarray(values)[w > 0],
        bandwidth=1e-30), rtol=1e-6)  # fmt: skip
    # d/dw against central differences, in float64
    q64, k64, v64 = (np.asarray(a, np.float64) for a in (queries, keys, values))
    positive = w + 0.5
    with jax.enable_x64(True):
        gradient = jax.grad(
            lambda u: attention_pool(q64, k64, v64, bandwidth=0.3, weights=u).sum()
        )(jnp.asarray(positive))
    for j in (0, 7, 40):
        step = np.zeros(90)
        step[j] = 1e-6
        difference = (
            weighted_reference(q64, k64, v64, "gaussian", 0.3, positive + step).sum()
            - weighted_reference(q64, k64, v64, "gaussian", 0.3, positive - step).sum()
        )
        np.testing.assert_allclose(float(gradient[j]), difference / 2e-6, rtol=1e-6, atol=1e-9)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(scale=st.floats(1e-100, 1e100), seed=st.integers(0, 2**16))
def test_weights_are_relative(scale, seed):
    # multiplying every weight by one number changes nothing
    queries, keys, values = data(84, n=10, m=40)
    w = np.random.default_rng(seed).uniform(0.1, 3.0, 40)
    np.testing.assert_allclose(
        attention_pool(queries, keys, values, bandwidth=0.5, weights=w * scale),
        attention_pool(queries, keys, values, bandwidth=0.5, weights=w),
        rtol=1e-13,
    )


@pytest.mark.parametrize(
    "weights, message",
    [
        (np.full(5, -1.0), "non-negative"),
        (np.array([1, 2, np.nan, 1, 1]), "non-negative"),
        (np.zeros(5), "some positive weight"),
        (np.ones(4), r"shape \(5,\)"),
        (np.array([1e-200, 1, 1, 1, 1e200]), "span"),
    ],
)
def test_bad_weights_name_the_argument(weights, message):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # (a span beyond the floats: no overflow)
        with pytest.raises(ValueError, match=f"weights: .*{message}"):
            attention_pool(np.zeros(2), np.arange(5.0), np.arange(5.0), weights=weights)


@pytest.mark.parametrize("method", ["dense", "stream", "fused", "sparse", "fgt", "native", "auto"])
def test_weighted_pools_meet_the_oracle_on_adversarial_data(method):
    # bandwidths from 1e-300 to 1e300 of the data's scale, shifts to 1e12, ties, huge
    # values; integer weights against the long-double oracle on the repeated keys
    @row_settings(15)
    @given(problem=problems(method), seed=st.integers(0, 2**16))
    def run(problem, seed):
        queries, keys, values, kernel, bandwidth, dtype = problem
        w, repeated = integer_weights(seed, keys.shape[0])
        got = attention_pool(queries, keys, values, kernel=kernel, bandwidth=bandwidth,
                             method=method, empty="nearest", weights=w)  # fmt: skip
        values = np.asarray(values)[repeated]
        assert_rows_meet_the_oracle(
            method, got, queries, keys[repeated], values, kernel, bandwidth, dtype
        )

    run()


@pytest.mark.parametrize("method", ["dense", "stream", "sparse", "auto"])  # (others: span 1024)
@pytest.mark.parametrize("scale", [2.0**-1000, 2.0**1000])
def test_weights_spanning_widely_keep_values_at_the_floats_ends(method, scale):
    # the pooled [w, w·v] once multiplied 2⁻¹⁰⁰⁰ values by weights 2⁻³⁰⁰ below the
    # largest: 0, and a query on such a key got 0 for its value
    rng = np.random.default_rng(5)
    kernel = "epanechnikov"
    keys = rng.uniform(0, 10, (300, 1))
    queries = np.r_[keys[:20], rng.uniform(0, 10, (20, 1))]
    values = rng.normal(size=300) * scale
    w = 2.0 ** rng.uniform(-250, 250, 300)
    got = attention_pool(queries, keys, values, kernel=kernel, bandwidth=0.05, method=method,
                         weights=w, empty="nearest")  # fmt: skip
    u = (queries - keys.T) / 0.05
    with np.errstate(divide="ignore"):
        log_k = -u * u / 2 if kernel == "gaussian" else np.log(np.clip(1 - u * u, 0, None))
    log_w = log_k + np.log(w)
    share = np.exp(log_w - log_w.max(axis=1, keepdims=True))
    with np.errstate(invalid="ignore"):
        want = share @ (values / scale) / share.sum(axis=1) * scale
    nearest = values[np.argmin(np.abs(u), axis=1)]  # rows no key reaches (no ties here)
    want = np.where(np.isnan(want), nearest, want)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * scale)
    model = NadarayaWatson(kernel=kernel, bandwidth=0.05, method=method, empty="nearest")
    fitted = model.fit(keys, values, sample_weight=w).predict(queries)
    np.testing.assert_allclose(fitted, want, rtol=1e-9, atol=1e-12 * scale)


@pytest.mark.parametrize("estimator", [NadarayaWatson, LocalLinear])
@pytest.mark.parametrize("method", ["dense", "stream", "auto"])
def test_weighted_fits_scale_with_their_responses_to_the_floats_ends(estimator, method):
    # scaling the responses by a power of two scales the fit exactly, weights spanning
    # 2^±250 or not
    rng = np.random.default_rng(6)
    x = rng.uniform(0, 10, (300, 2))
    y = np.sin(x).sum(axis=1)
    w = 2.0 ** rng.uniform(-250, 250, 300)
    queries = np.r_[x[:10], rng.uniform(0, 10, (10, 2))]

    def fitted(scale):
        model = estimator(kernel="epanechnikov", bandwidth=1.5, method=method, empty="nearest")
        return model.fit(x, y * scale, sample_weight=w).predict(queries) / scale

    unit = fitted(1.0)
    assert np.isfinite(unit).all()
    for scale in (2.0**-1000, 2.0**1000):
        np.testing.assert_allclose(fitted(scale), unit, rtol=1e-12, atol=1e-12)


def smooth_data(seed, n, d):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 5, (n, d))
    return x, np.sin(x).sum(axis=1) + rng.normal(0, 0.3, n)


@pytest.mark.parametrize(
    "degree, kernel, d, var_type",
    [(0, "gaussian", 1, None), (1, "gaussian", 2, None), (0, "epanechnikov", 2, None),
     (1, "tricube", 1, None), (0, "gaussian", 2, "cu"), (1, "gaussian", 2, "co")],
)  # fmt: skip
def test_criteria_with_integer_weights_are_those_of_the_repeated_rows(degree, kernel, d, var_type):
    x, y = smooth_data(d + degree, 60, d)
    if var_type:
        x[:, 1] = np.round(x[:, 1])
    w, repeated = integer_weights(10 + d, 60)
    continuous = np.array([0.6] + [0.8 if not var_type else 0.3] * (d - 1))
    candidates = np.stack([continuous * f for f in (0.5, 1.0, 2.0)])
    if var_type:
        candidates[:, 1] = [0.1, 0.3, 0.6]
    for curve in (cv_curve, aicc_curve):
        got = curve(x, y, candidates, kernel=kernel, degree=degree, var_type=var_type, weights=w)
        want = curve(x[repeated], y[repeated], candidates, kernel=kernel, degree=degree,
                     var_type=var_type)  # fmt: skip
        np.testing.assert_allclose(got, want, rtol=1e-11)
    got = select_bandwidth(x, y, kernel=kernel, degree=degree, var_type=var_type, weights=w)
    want = select_bandwidth(x[repeated], y[repeated], kernel=kernel, degree=degree,
                            var_type=var_type)  # fmt: skip
    np.testing.assert_allclose(got.objective, want.objective, rtol=1e-9)


def test_selection_and_rules_with_integer_weights_are_those_of_the_repeated_rows():
    x, y = smooth_data(3, 80, 1)
    w = np.random.default_rng(4).integers(1, 3, 80).astype(float)
    repeated = np.repeat(np.arange(80), w.astype(int))
    for method in ("scott", "silverman"):
        for counts in (w, w.astype(int).tolist()):  # an array, or a plain list of counts
            np.testing.assert_allclose(
                rule_of_thumb(x, method=method, weights=counts),
                rule_of_thumb(x[repeated], method=method),
                rtol=1e-13,
            )
    got = select_bandwidth(x, y, weights=w)
    want = select_bandwidth(x[repeated], y[repeated])
    np.testing.assert_allclose(got.objective, want.objective, rtol=1e-9)
    np.testing.assert_allclose(got.bandwidth, want.bandwidth, rtol=1e-5)
    with pytest.raises(ValueError, match="pooling: 'fgt' has no weighted leave-one-out"):
        select_bandwidth(x, y, weights=w, pooling="fgt")


def weighted_least_squares(x, y, query, kernel_weights):
    """The local linear fit at ``query`` by ``lstsq`` on √weights-scaled rows."""
    design = np.hstack([np.ones((x.shape[0], 1)), x - query])
    root = np.sqrt(kernel_weights)[:, None]
    return np.linalg.lstsq(design * root, y * root[:, 0], rcond=None)[0][0]


@pytest.mark.parametrize("block_size", [None, 64])
def test_weighted_local_linear_is_weighted_least_squares(block_size):
    x, y = smooth_data(5, 70, 2)
    w = np.random.default_rng(6).uniform(0.2, 3.0, 70)
    queries = np.random.default_rng(7).uniform(0.5, 4.5, (12, 2))
    got = local_regression(x, y, queries, bandwidth=0.9, degree=1, weights=w,
                           block_size=block_size)  # fmt: skip
    kernel = reference_weights(queries, x, "gaussian", 0.9) * w[None, :]
    want = [weighted_least_squares(x, y, q, k) for q, k in zip(queries, kernel, strict=True)]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("estimator", [NadarayaWatson, LocalLinear])
@pytest.mark.parametrize("bandwidth", ["cv", "scott", 0.7])
def test_estimators_with_sample_weight_fit_the_repeated_rows(estimator, bandwidth):
    x, y = smooth_data(8, 70, 1)
    w = np.random.default_rng(9).integers(0, 3, 70).astype(float)
    repeated = np.repeat(np.arange(70), w.astype(int))
    queries = np.linspace(0.2, 4.8, 25)[:, None]
    weighted = estimator(bandwidth=bandwidth).fit(x, y, sample_weight=w)
    plain = estimator(bandwidth=bandwidth).fit(x[repeated], y[repeated])
    np.testing.assert_allclose(weighted.bandwidth_, plain.bandwidth_, rtol=1e-5)
    np.testing.assert_allclose(weighted.predict(queries), plain.predict(queries), rtol=1e-6)
    np.testing.assert_allclose(
        weighted.marginal_effects(queries), plain.marginal_effects(queries), rtol=1e-5, atol=1e-8
    )
    np.testing.assert_allclose(weighted.r_squared_, plain.r_squared_, rtol=1e-6)
    with pytest.raises(ValueError, match="sample_weight: confidence bands"):
        weighted.predict(queries, return_std=True)


@pytest.mark.parametrize(
    "estimator",
    [NadarayaWatson(bandwidth="scott"), NadarayaWatsonClassifier(bandwidth="silverman")],
)
def test_scikit_learn_sample_weight_checks(estimator):
    # scikit-learn's own checks: weights equal removed or repeated rows, lists, Series,
    # shapes, no copy kept. Its data are 15 points in 30 columns: there CV and AICc of
    # repeated rows have no unique optimum (duplicates predict each other) and a local
    # linear design is singular (its answer is the ridge's, rounding-sensitive), so the
    # check runs at bandwidths the data define; local linear's equivalence is tested
    # above on data that determine it
    from sklearn.utils import estimator_checks as checks

    name = type(estimator).__name__
    for check in (
        checks.check_sample_weight_equivalence_on_dense_data,
        checks.check_sample_weights_list,
        checks.check_sample_weights_pandas_series,
        checks.check_sample_weights_not_an_array,
        checks.check_sample_weights_shape,
        checks.check_sample_weights_not_overwritten,
    ):
        check(name, estimator)


def test_classifier_with_sample_weight_pools_weighted_labels():
    x, y = smooth_data(11, 60, 2)
    labels = (y > 1).astype(int)
    w, repeated = integer_weights(12, 60)
    queries = np.random.default_rng(13).uniform(0, 5, (15, 2))
    got = NadarayaWatsonClassifier(bandwidth=0.8).fit(x, labels, sample_weight=w)
    want = NadarayaWatsonClassifier(bandwidth=0.8).fit(x[repeated], labels[repeated])
    np.testing.assert_allclose(got.predict_proba(queries), want.predict_proba(queries), rtol=1e-12)


@pytest.mark.parametrize("model", ["bandwidth", "ard", "metric", "adaptive", "dot"])
def test_learned_attention_with_weights_trains_as_on_repeated_rows(model):
    # full batches: the weighted loss, the keys' log w, rows left out whole, the weighted
    # standardisation and the rules of thumb at n = Σ w give the repeated rows' steps
    from attnpool.learn import fit_attention

    x, y = smooth_data(14, 40, 2)
    w, repeated = integer_weights(15, 40)
    weighted = fit_attention(model, x, y, weights=w, steps=25)
    plain = fit_attention(model, x[repeated], y[repeated], steps=25)
    np.testing.assert_allclose(weighted.history, plain.history, rtol=1e-9)
    queries = np.random.default_rng(16).uniform(0, 5, (10, 2))
    np.testing.assert_allclose(weighted.predict(queries), plain.predict(queries), rtol=1e-9)
    np.testing.assert_allclose(weighted.loo_error(), plain.loo_error(), rtol=1e-9)
    shares = weighted.attention_weights(queries)
    assert shares.shape == (10, int(np.sum(w > 0))) and np.allclose(shares.sum(axis=1), 1)


def test_learned_regressor_passes_the_sample_weight_checks():
    from sklearn.utils import estimator_checks as checks

    from attnpool import LearnedAttentionRegressor

    estimator = LearnedAttentionRegressor(steps=20)
    for check in (
        checks.check_sample_weight_equivalence_on_dense_data,
        checks.check_sample_weights_list,
        checks.check_sample_weights_pandas_series,
        checks.check_sample_weights_shape,
        checks.check_sample_weights_not_overwritten,
    ):
        check("LearnedAttentionRegressor", estimator)


@pytest.mark.parametrize("block_size", [None, 16])
@pytest.mark.parametrize("degree", [0, 1])
def test_tied_nearest_keys_at_a_vanishing_bandwidth_share_by_weight(block_size, degree):
    # the nearest-key limit of the local fits: two keys equally far from the query share
    # it, in proportion to their weights (the compiled path rounded its relative rows
    # twice, dividing by h and multiplying back, and broke the tie)
    x = np.array([[0.0, 0.0], [2.0, 0.0], [5.0, 5.0]])
    y, query = np.array([10.0, 30.0, 0.0]), np.array([[1.0, 0.0]])
    options = {"bandwidth": 1e-300, "degree": degree, "block_size": block_size, "empty": "nearest"}
    np.testing.assert_allclose(local_regression(x, y, query, **options), [20.0], rtol=1e-15)
    weighted = local_regression(x, y, query, weights=[1.0, 3.0, 1.0], **options)
    np.testing.assert_allclose(weighted, [25.0], rtol=1e-15)
    if degree == 0:  # the soft pass too, where log K ~ −5e23: weights multiply, not add logs
        tiny = {**options, "bandwidth": 1e-12}
        np.testing.assert_allclose(
            local_regression(x, y, query, weights=[1.0, 3.0, 1.0], **tiny), [25.0], rtol=1e-12
        )
