"""Right-censored regression: Kaplan–Meier (Stute) weights as observation weights,
against statsmodels' KernelCensoredReg on its own test data and against the
Kaplan–Meier estimator."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from statsmodels.nonparametric.kernel_regression import KernelCensoredReg

from attnpool import LocalLinear, censoring_weights


def statsmodels_censored_data():
    # statsmodels' nonparametric/tests/test_kernel_regression.py, test_censored_ll_cvls
    rs = np.random.RandomState(1234)
    nobs = 200
    c1 = rs.normal(size=(nobs,))
    c2 = rs.normal(2, 1, size=(nobs,))
    noise = rs.normal(size=(nobs,))
    y = 0.3 + 1.2 * c1 - 0.9 * c2 + noise
    y[y > 0] = 0  # censor the data
    return np.c_[c1, c2], y


def test_equals_statsmodels_censored_local_linear():
    x, y = statsmodels_censored_data()
    bandwidth = [0.9, 1.1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = KernelCensoredReg(endog=[y], exog=[x[:, 0], x[:, 1]], reg_type="ll",
                                  var_type="cc", bw=bandwidth, censor_val=0)  # fmt: skip
        want_mean, want_effects = model.fit(x)
    ours = LocalLinear(bandwidth=bandwidth).fit(x, y, sample_weight=censoring_weights(y, y == 0))
    np.testing.assert_allclose(ours.predict(x), want_mean, rtol=1e-8)
    np.testing.assert_allclose(ours.marginal_effects(x), want_effects, rtol=1e-7, atol=1e-9)


def test_weights_undo_the_bias_of_independent_censoring():
    # y = 1 + 2x + noise, right-censored at an independent exponential time: dropping the
    # censored rows biases the fit down (large responses are censored more often); the
    # Kaplan–Meier weights move their mass to larger responses and remove most of it
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, 2000)
    truth = 1 + 2 * x + rng.normal(0, 0.5, 2000)
    censor_at = rng.exponential(4.0, 2000)
    y, censored = np.minimum(truth, censor_at), truth > censor_at
    queries = np.array([[0.25], [0.5], [0.75]])
    want = 1 + 2 * queries[:, 0]
    weighted = LocalLinear(bandwidth=0.3).fit(
        x[:, None], y, sample_weight=censoring_weights(y, censored)
    )
    naive = LocalLinear(bandwidth=0.3).fit(x[~censored, None], y[~censored])
    weighted_error = np.abs(weighted.predict(queries) - want)
    naive_error = np.abs(naive.predict(queries) - want)
    assert np.all(weighted_error < naive_error / 2) and np.all(weighted_error < 0.15)


def test_weights_are_the_kaplan_meier_jumps():
    rng = np.random.default_rng(0)
    y = rng.exponential(size=300)
    censored = rng.random(300) < 0.3
    weights = censoring_weights(y, censored) / 300
    assert np.all(weights[censored] == 0) and np.all(weights[~censored] > 0)
    # the Kaplan–Meier survival function, by its product-limit definition
    for t in np.quantile(y, [0.2, 0.5, 0.8]):
        survival = np.prod([1 - np.sum((y == s) & ~censored) / np.sum(y >= s)
                            for s in np.unique(y[(y <= t) & ~censored])])  # fmt: skip
        np.testing.assert_allclose(1 - weights[y <= t].sum(), survival, rtol=1e-12)
    np.testing.assert_allclose(censoring_weights(y, np.zeros(300, bool)), 1.0, rtol=1e-14)


def test_bad_censoring_flags_are_named():
    with pytest.raises(ValueError, match="censored: expected booleans of shape"):
        censoring_weights(np.arange(3.0), [0, 1, 0])
    with pytest.raises(ValueError, match="y: expected one response per row"):
        censoring_weights(np.ones((3, 2)), np.zeros(3, bool))
