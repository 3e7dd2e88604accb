"""Significance tests (np's npsigtest, statsmodels' sig_test): size and power by
simulation, statsmodels' own test data, and the bootstrap replicates against refits."""

from __future__ import annotations

import numpy as np
import pytest

from attnpool import LocalLinear, NadarayaWatson, significance_test
from attnpool.inference.significance import _Fit


def statsmodels_continuous_data():
    # statsmodels' nonparametric/tests/test_kernel_regression.py,
    # test_significance_continuous: y depends on C1 (and on C2, which is left out), not C3
    rs = np.random.RandomState(12345)
    nobs = 250
    c1 = rs.normal(size=(nobs,))
    c2 = rs.normal(2, 1, size=(nobs,))
    c3 = rs.beta(0.5, 0.2, size=(nobs,))
    noise = rs.normal(size=(nobs,))
    return np.c_[c1, c3], 1.2 * c1 + 3.7 * c2 + noise


def test_agrees_with_statsmodels_on_its_continuous_test_data():
    # its bandwidths (cv_ls, local linear) and its outcomes: C1 significant, C3 not, and
    # the two jointly not (C3's slope noise swamps C1's effect in the joint statistic)
    x, y = statsmodels_continuous_data()
    model = LocalLinear(bandwidth=[11108137.1087194, 1333821.85150218]).fit(x, y)
    assert significance_test(model, [0], n_boot=199).p_value < 0.05
    assert significance_test(model, [1], n_boot=199).p_value > 0.1
    # borderline there (p ≈ 0.1 by 99 to 399 replicates): not significant at 5 %
    assert significance_test(model, [0, 1], n_boot=199).p_value > 0.05


def test_a_categorical_regressor_by_the_racine_test():
    # statsmodels' test_significance_discrete data: y depends on an ordered column
    rs = np.random.RandomState(12345)
    ordered = rs.binomial(2, 0.5, size=(200,)).astype(float)
    rs.normal(2, 1, size=(200,))
    c3 = rs.beta(0.5, 0.2, size=(200,))
    y = 1.2 * ordered + rs.normal(size=(200,))
    model = NadarayaWatson(bandwidth=[0.2, 0.5], var_type="oc").fit(np.c_[ordered, c3], y)
    found = significance_test(model, 0, n_boot=99)
    assert found.kind == "categorical" and found.p_value < 0.05
    null = NadarayaWatson(bandwidth=[0.2, 0.5], var_type="oc").fit(
        np.c_[ordered, c3], rs.normal(size=200)
    )
    assert significance_test(null, 0, n_boot=99).p_value > 0.05


def audit_data(seed):
    """y = sin(x0)·x1 + N(0, 0.2²) with an irrelevant x2, n = 120 (the audit's design)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 4, (120, 2))
    y = np.sin(x[:, 0]) * x[:, 1] + rng.normal(0, 0.2, 120)
    return np.c_[x, rng.normal(size=120)], y


@pytest.mark.parametrize("estimator", [NadarayaWatson, LocalLinear])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_strong_signal_is_found_and_an_irrelevant_column_is_not(estimator, seed):
    # with CV bandwidths: the tests had p ≈ 0.5–0.9 for x0 and x1 (the null fit's
    # residuals carried their effect into the replicates) and p = 0.015 for x2
    x, y = audit_data(seed)
    model = estimator().fit(x, y)
    p_values = [significance_test(model, j, n_boot=199, seed=seed).p_value for j in range(3)]
    assert p_values[0] < 0.01 and p_values[1] < 0.01, p_values
    assert p_values[2] > 0.1, p_values


def test_size_under_cross_validated_bandwidths():
    # the bandwidths chosen on each data set, as a user runs the test: x1 is irrelevant
    rng = np.random.default_rng(11)
    rejected = []
    for trial in range(40):
        x = rng.uniform(0, 1, (80, 2))
        y = np.sin(2 * np.pi * x[:, 0]) + rng.normal(0, 0.4, 80)
        model = LocalLinear().fit(x, y)
        rejected.append(significance_test(model, 1, n_boot=99, seed=trial).p_value <= 0.1)
    assert np.mean(rejected) <= 0.2, np.mean(rejected)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"bandwidth": [10, 10], "bandwidth_type": "generalized_nn"}, "'generalized_nn'"),
        ({"bandwidth": [10, 10], "bandwidth_type": "adaptive_nn"}, "'adaptive_nn'"),
        ({"bandwidth": 0.3, "kernel": "gaussian-order4"}, "'gaussian-order4'"),
    ],
)
def test_fits_the_tests_cannot_refit_are_refused_by_name(options, message):
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (60, 2))
    model = NadarayaWatson(**options).fit(x, np.sin(4 * x[:, 0]) + rng.normal(0, 0.3, 60))
    with pytest.raises(ValueError, match=rf"significance_test: not available .*{message}"):
        significance_test(model, 0, n_boot=19)


# measured rejection rates at 10 % over 200 data sets of this design (errors from the
# unrestricted fit's leave-one-out residuals): local linear 0.085 (iid) and 0.095 (wild);
# Nadaraya–Watson 0.155 and 0.135 — its bias at h = 0.1 against sin(2πx) leaves part of
# the signal in the residuals; power 1.0 for all four
@pytest.mark.parametrize("estimator, largest", [(LocalLinear, 0.17), (NadarayaWatson, 0.22)])
def test_size_near_the_nominal_level_and_power_under_an_alternative(estimator, largest):
    # 100 data sets under the null (y ignores x1) and 30 under an alternative
    rng = np.random.default_rng(0)
    rejections, power = [], []
    for trial in range(130):
        x = rng.uniform(0, 1, (80, 2))
        effect = 0.0 if trial < 100 else 0.6
        y = np.sin(2 * np.pi * x[:, 0]) + effect * np.cos(3 * x[:, 1]) + rng.normal(0, 0.4, 80)
        model = estimator(bandwidth=[0.1, 0.25]).fit(x, y)
        rejected = significance_test(model, 1, n_boot=99, seed=trial).p_value <= 0.1
        (rejections if trial < 100 else power).append(rejected)
    # nominal 10 %: 100 trials give a standard deviation of 3 %
    assert 0.02 <= np.mean(rejections) <= largest, np.mean(rejections)
    assert np.mean(power) >= 0.8, np.mean(power)


@pytest.mark.parametrize("degree", [0, 1])
def test_bootstrap_replicates_are_refits_of_each_response(degree):
    # the statistic of a block of responses, column by column, equals separate fits
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, (60, 2))
    responses = rng.normal(size=(60, 5))
    model = (LocalLinear if degree else NadarayaWatson)(bandwidth=[0.2, 0.3]).fit(
        x, responses[:, 0]
    )
    fit = _Fit(model, x, "cc")
    together = fit.in_chunks(lambda block: fit.mean_squared_effect(block, (1,)), responses)
    one_by_one = [fit.mean_squared_effect(responses[:, [b]], (1,))[0] for b in range(5)]
    np.testing.assert_allclose(together, one_by_one, rtol=1e-12)
    slopes = model.marginal_effects(x) if degree == 0 else None
    if slopes is not None:  # λ is the mean squared marginal effect
        np.testing.assert_allclose(
            fit.mean_squared_effect(responses[:, [0]], (1,))[0], np.mean(slopes[:, 1] ** 2)
        )


def test_the_p_value_counts_the_statistic_among_the_replicates():
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 1, (50, 1))
    model = NadarayaWatson(bandwidth=0.2).fit(x, rng.normal(size=50))
    found = significance_test(model, 0, n_boot=49, bootstrap="wild", seed=5)
    assert found.p_value == (1 + np.sum(found.null_statistics >= found.statistic)) / 50
    assert found.null_statistics.shape == (49,)
    assert "p-value" in str(found)


@pytest.mark.parametrize("estimator", [NadarayaWatson, LocalLinear])
def test_the_p_value_does_not_depend_on_the_scale_of_y(estimator):
    """y ~ 1e±200: the squared effects underflowed or overflowed, and p was 1."""
    rng = np.random.default_rng(9)
    x = np.c_[rng.uniform(0, 1, (80, 2)), rng.integers(0, 3, 80)]
    y = np.sin(6 * x[:, 0]) + rng.normal(0, 0.3, 80)
    found = {}
    for scale in (1.0, 1e-200, 1e200, 3.0):
        model = estimator(bandwidth=[0.1, 0.3, 0.2], var_type="ccu").fit(x, y * scale)
        found[scale] = [significance_test(model, c, n_boot=19) for c in (0, 1, 2)]
    for scale in (1e-200, 1e200, 3.0):
        assert [t.p_value for t in found[scale]] == [t.p_value for t in found[1.0]]
    assert found[1.0][0].p_value == 0.05  # the signal is found at every scale
    for t, plain in zip(found[3.0], found[1.0], strict=True):  # the statistic in y² units
        assert t.statistic == pytest.approx(9 * plain.statistic, rel=1e-12)


@pytest.mark.parametrize(
    "columns, message",
    [(5, r"columns: expected distinct column indices in \[0, 2\)"), ([0, 0], "distinct"),
     ([0, 1], "one categorical column"), (1.5, "column indices")],
)  # fmt: skip
def test_bad_columns_are_named(columns, message):
    rng = np.random.default_rng(6)
    x = np.c_[rng.uniform(0, 1, 40), rng.integers(0, 3, 40)]
    model = NadarayaWatson(bandwidth=[0.3, 0.2], var_type="co").fit(x, rng.normal(size=40))
    with pytest.raises(ValueError, match=message):
        significance_test(model, columns)
