"""Equivariance in the data's scale, to ``1e±200``, where squares in the data's own units
overflow or vanish.

The response: ``y`` times ``s`` scales every fit, standard error and residual scale by
``s``, leaves every chosen bandwidth, span and p-value alone, and moves the criteria as
their units say (mean squares by ``s²``, AICc by ``2 log s``). A column of ``x`` times
``s``: every rule of thumb and selector scales its bandwidth by ``s``. Each case here
failed before these computations took the data in a power-of-two unit."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attnpool

SCALES = [1e-200, 1e200]


def _data(n=120, seed=9):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, n)
    return x, np.sin(6 * x) + rng.normal(0, 0.3, n)


def _close(actual, expected, rtol=1e-12):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=0)


@pytest.mark.parametrize("scale", SCALES)
def test_criterion_curves(scale):
    x, y = _data()
    grid = [0.05, 0.1, 0.2]
    _close(attnpool.aicc_curve(x, y * scale, grid), attnpool.aicc_curve(x, y, grid)
           + 2 * math.log(scale))  # fmt: skip
    expected = 0.0 if scale < 1 else np.inf  # s² beyond float64: its limit, not NaN
    assert np.all(attnpool.cv_curve(x, y * scale, grid) == expected)
    _close(attnpool.cv_curve(x, y * 1e100, grid), attnpool.cv_curve(x, y, grid) * 1e200)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize(
    "options",
    [{"kernel": "gaussian-order4"}, {"bandwidth_type": "adaptive_nn"}],
    ids=["higher-order", "neighbours"],
)
def test_pair_fits_choose_the_same_setting(scale, options):
    x, y = _data()
    plain = attnpool.NadarayaWatson(**options).fit(x[:, None], y)
    scaled = attnpool.NadarayaWatson(**options).fit(x[:, None], y * scale)
    _close(scaled.bandwidth_, plain.bandwidth_, rtol=1e-10)  # (y · s rounds: the search's)


@pytest.mark.parametrize("scale", SCALES)
def test_local_polynomial_cross_validation(scale):
    x, y = _data()
    plain = attnpool.LocalPolynomial(degree=2).fit(x[:, None], y)
    scaled = attnpool.LocalPolynomial(degree=2).fit(x[:, None], y * scale)
    _close(scaled.bandwidth_, plain.bandwidth_, rtol=1e-10)  # (y · s rounds: the search's)
    _close(scaled.predict([[0.5]]) / scale, plain.predict([[0.5]]), rtol=1e-10)


@pytest.mark.parametrize("scale", [1e-200, 1e-80, 1e80, 1e200])
def test_coefficients_of_determination(scale):
    x, y = _data()
    plain = attnpool.NadarayaWatson(bandwidth=0.05).fit(x[:, None], y)
    scaled = attnpool.NadarayaWatson(bandwidth=0.05).fit(x[:, None], y * scale)
    _close(scaled.score(x[:, None], y * scale), plain.score(x[:, None], y))
    _close(scaled.r_squared_, plain.r_squared_)


@pytest.mark.parametrize("scale", SCALES)
def test_loess(scale):
    x, y = _data()
    queries = np.linspace(0.1, 0.9, 5)[:, None]
    plain = attnpool.Loess(span="aicc").fit(x[:, None], y)
    scaled = attnpool.Loess(span="aicc").fit(x[:, None], y * scale)
    assert scaled.span_ == plain.span_
    _close(scaled.criterion_, plain.criterion_ + 2 * math.log(scale))
    _close(scaled.residual_scale_ / scale, plain.residual_scale_)
    _close(scaled.fitted_values_ / scale, plain.fitted_values_, rtol=1e-11)
    for ours, theirs in zip(scaled.predict(queries, return_std=True),
                            plain.predict(queries, return_std=True), strict=True):  # fmt: skip
        _close(ours / scale, theirs, rtol=1e-11)
    gcv = attnpool.Loess(span="gcv").fit(x[:, None], y * scale)
    assert gcv.span_ == attnpool.Loess(span="gcv").fit(x[:, None], y).span_


@pytest.mark.parametrize("scale", [1e-6, 1e-200, 1e200])
def test_learned_attention(scale):
    """Adam's steps on the loss in y's own units: y in 1e-6 units learned a bandwidth
    of 0.103 where y learns 0.042 (its ε outweighed the gradients)."""
    x, y = _data()
    plain = attnpool.LearnedAttentionRegressor(steps=60).fit(x[:, None], y)
    scaled = attnpool.LearnedAttentionRegressor(steps=60).fit(x[:, None], y * scale)
    # (y · s rounds, and sixty steps carry that to 1e-6)
    _close(scaled.bandwidth_, plain.bandwidth_, rtol=1e-5)
    _close(scaled.predict(x[:5, None]) / scale, plain.predict(x[:5, None]), rtol=1e-5)


RULES = ["bw.nrd0", "bw.nrd", "bw.SJ", "bw.SJ-dpi", "bw.ucv", "bw.bcv", "scipy.scott",
         "scipy.silverman", "statsmodels.normal_reference", "normal_reference"]  # fmt: skip


@pytest.mark.filterwarnings("ignore:the [bu]cv criterion's minimum is at one end")
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("rule", RULES)
def test_rules_of_thumb_and_r_selectors_scale_with_x(scale, rule):
    """R's ``bw.nrd0`` was 17% off at 1e-200, ``bw.nrd`` and SciPy's 0, R's selectors
    failed (``float division by zero``, NaN), statsmodels' normal reference was 0 or
    ``inf``."""
    x = np.random.default_rng(3).normal(size=(150, 1))
    if rule == "normal_reference":
        for weights in (None, np.arange(1.0, 151.0)):
            plain = attnpool.select_density_bandwidth(x, method=rule, weights=weights).bandwidth
            found = attnpool.select_density_bandwidth(x * scale, method=rule, weights=weights)
            _close(found.bandwidth / scale, plain, rtol=1e-14)
        return
    plain = attnpool.KernelDensity(bandwidth=rule).fit(x).bandwidth_
    # (x · s rounds: R's searches stop within 1e-13 of each other)
    _close(attnpool.KernelDensity(bandwidth=rule).fit(x * scale).bandwidth_ / scale, plain,
           rtol=1e-12)  # fmt: skip


@pytest.mark.filterwarnings("ignore:the [bu]cv criterion's minimum is at one end")
def test_r_selectors_take_their_limits_in_the_data_units():
    x = np.random.default_rng(3).normal(size=150)
    for selector in (attnpool.sheather_jones_bandwidth, attnpool.unbiased_cv_bandwidth,
                     attnpool.biased_cv_bandwidth):  # fmt: skip
        plain = selector(x, lower=0.1, upper=0.5)
        _close(selector(x * 1e-200, lower=0.1e-200, upper=0.5e-200) / 1e-200, plain, rtol=1e-12)


@pytest.mark.parametrize("scale", [2.0**-600, 1e-200, 1e200, 2.0**300])
@pytest.mark.parametrize("method", ["cv_ml", "cv_ls"])
def test_density_and_conditional_searches_scale_with_the_data(scale, method):
    """``cv_ls`` chose bandwidths 73% off at 1e200 and failed at 1e-200 (the criterion
    ~ 1/s² beyond float64, a NaN step in the conditional search); ``cv_ml`` moved 2e-5.
    A power-of-two scale now changes no digit; another rounds the data, and the search
    stops within its tolerance (``xatol`` 1e-5 in log-bandwidth, a few of them apart)."""
    rng = np.random.default_rng(0)
    x = np.round(rng.uniform(0, 3, 60), 1)  # (ties: the search's floor scales too)
    level = rng.integers(0, 3, 60).astype(float)  # a categorical column stays as it is
    y = 2 * np.sin(x) + x + rng.normal(0, 0.3, 60)
    scaled = np.array([scale, 1.0, scale])
    rtol = 0 if math.frexp(scale)[0] == 0.5 else 5e-5
    joint = np.c_[x, level, y]
    plain = attnpool.select_density_bandwidth(joint, method=method, var_type="cuc")
    found = attnpool.select_density_bandwidth(joint * scaled, method=method, var_type="cuc")
    _close(found.bandwidth / scaled, plain.bandwidth, rtol=rtol)
    plain = attnpool.select_conditional_bandwidth(joint[:, :2], y, method=method,
                                                  x_var_type="cu")  # fmt: skip
    found = attnpool.select_conditional_bandwidth(joint[:, :2] * scaled[:2], y * scale,
                                                  method=method, x_var_type="cu")  # fmt: skip
    _close(found.bandwidth / scaled, plain.bandwidth, rtol=rtol)
    # the criterion in the data's units: f̂(y | x) scales as 1/s
    if method == "cv_ml":
        _close(found.objective, plain.objective + math.log(scale), rtol=1e-12)
    else:
        _close(found.objective * scale, plain.objective, rtol=1e-12 if rtol == 0 else 1e-9)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("method", ["numpy", "native", "dense"])
def test_local_polynomial_derivatives_scale_with_x(scale, method):
    """The moments' powers of ``x − q`` left the float range: NaN from 1e±155."""
    x, y = _data()
    queries = np.array([0.3, 0.6])
    for derivative in (0, 1):
        options = {"degree": 3, "derivative": derivative, "method": method}
        plain = attnpool.local_polynomial(x, y, queries, bandwidth=0.1, **options)
        scaled = attnpool.local_polynomial(x * scale, y, queries * scale, bandwidth=0.1 * scale,
                                           **options)  # fmt: skip
        _close(scaled * scale**derivative, plain, rtol=1e-13)


@pytest.mark.parametrize("scale", SCALES)
def test_local_polynomial_cross_validation_scales_with_x(scale):
    """``np.std`` of x ~ 1e−200 underflowed ("a constant column has no scale")."""
    x, y = _data()
    plain = attnpool.LocalPolynomial(degree=2).fit(x[:, None], y)
    scaled = attnpool.LocalPolynomial(degree=2).fit(x[:, None] * scale, y)
    _close(scaled.bandwidth_ / scale, plain.bandwidth_, rtol=1e-10)  # (x · s rounds)
    _close(scaled.cv_score_, plain.cv_score_, rtol=1e-12)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("estimator", [attnpool.NadarayaWatson, attnpool.LocalLinear])
def test_significance_and_slopes_scale_with_x(scale, estimator):
    """The squared slopes of a column of x ~ 1e±200 left the float range (p = 1), and
    the Gaussian's local-constant slopes divided by ``h²`` (0 or ``inf``)."""
    from attnpool.regression.fit_parts import local_constant_slopes

    rng = np.random.default_rng(12)
    x = rng.uniform(0, 1, (80, 2))
    y = np.sin(6 * x[:, 0]) + rng.normal(0, 0.3, 80)
    stretch = np.array([scale, 1.0])
    for column in (0, 1):
        plain = estimator(bandwidth=[0.1, 0.3]).fit(x, y)
        scaled = estimator(bandwidth=[0.1 * scale, 0.3]).fit(x * stretch, y)
        ours = attnpool.significance_test(scaled, column, n_boot=19)
        assert ours.p_value == attnpool.significance_test(plain, column, n_boot=19).p_value
    plain = local_constant_slopes(x, y, x[:3], bandwidth=[0.1, 0.3])
    scaled = local_constant_slopes(x * stretch, y, x[:3] * stretch, bandwidth=[0.1 * scale, 0.3])
    _close(scaled * stretch[None, :], plain, rtol=1e-13)


def test_a_far_query_leaves_the_units_of_the_others():
    """The unit follows the training rows' span: taken over the queries too, one query
    at 1e300 put every other's moments out of range (NaN)."""
    x, y = _data()
    near = attnpool.local_polynomial(x, y, [0.5], bandwidth=0.1, degree=3)
    both = attnpool.local_polynomial(x, y, [0.5, 1e300], bandwidth=0.1, degree=3)
    assert both[0] == near[0]


@pytest.mark.parametrize("dtype, power", [(np.float64, -1019), (np.float32, -124)])
def test_the_compiled_engines_at_the_bottom_of_the_float_range(dtype, power):
    # normal inputs whose differences are subnormal: XLA flushes those to zero, and
    # pools, fits and densities were 1e-2 to 0.2 off; the coordinates are now lifted by a
    # power of two first, which changes no digit of a kernel's argument
    rng = np.random.default_rng(41)
    x = np.c_[rng.uniform(1, 5, 200), rng.uniform(1, 3, 200)]
    y = np.sin(x.sum(axis=1)) + rng.normal(0, 0.3, 200)
    queries = np.c_[np.linspace(1.2, 4.8, 7), np.linspace(1.1, 2.9, 7)]
    s = 2.0**power

    def both(call):
        return [np.asarray(call(dtype(queries * f), dtype(x * f), dtype(0.4 * f)), float)
                for f in (s, 1.0)]  # fmt: skip

    calls = [
        *(lambda q, k, h, m=m, kernel=kernel: attnpool.attention_pool(
            q, k, dtype(y), bandwidth=h, kernel=kernel, method=m)
          for m in ("dense", "stream") for kernel in ("gaussian", "epanechnikov")),
        lambda q, k, h: attnpool.attention_pool(q, k, dtype(y), bandwidth=h, method="fused"),
        lambda q, k, h: attnpool.local_regression(k, dtype(y), q, bandwidth=h, degree=1,
                                                  method="stream"),
        lambda q, k, h: attnpool.log_density(k, q, bandwidth=h, method="dense") + 2 * np.log(h),
    ]  # fmt: skip
    for call in calls:
        tiny, plain = both(call)
        np.testing.assert_allclose(tiny, plain, rtol=1e-5 if dtype is np.float32 else 1e-13)
