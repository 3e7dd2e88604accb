"""Regression tests: estimators on data that once gave plausible-looking wrong answers."""

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.metrics import log_loss
from sklearn.model_selection import StratifiedKFold

from attnpool import (
    EmptyNeighbourhoodWarning,
    LocalLinear,
    NadarayaWatson,
    NadarayaWatsonClassifier,
)


def test_class_probabilities_never_exceed_one():
    # pooled one-hot labels came out as 1.0000000000000004, which log_loss refuses
    X, y = load_iris(return_X_y=True)
    for train, test in StratifiedKFold(5, shuffle=True, random_state=0).split(X, y):
        proba = NadarayaWatsonClassifier().fit(X[train], y[train]).predict_proba(X[test])
        assert np.all((proba >= 0) & (proba <= 1))
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-15)
        assert log_loss(y[test], proba, labels=[0, 1, 2]) < 1.0


def test_a_query_without_neighbours_gets_no_made_up_class():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    model = NadarayaWatsonClassifier("boxcar", bandwidth=0.6, empty="nan").fit(X, [0, 0, 1, 1])
    with pytest.warns(EmptyNeighbourhoodWarning, match="no key"):
        assert np.isnan(model.predict_proba([[10.0]])).all()
    with pytest.raises(ValueError, match=r"^X: 1 of 2 queries have no training point"):
        with pytest.warns(EmptyNeighbourhoodWarning):
            model.predict([[0.1], [10.0]])
    np.testing.assert_array_equal(model.predict([[0.1], [2.9]]), [0, 1])


@pytest.mark.parametrize("estimator", [NadarayaWatson, LocalLinear])
@pytest.mark.parametrize("labels", [["a", "b"], ["1", "2"]])
def test_regressors_refuse_text_targets(estimator, labels):
    X = np.arange(10.0)[:, None]
    with pytest.raises(ValueError, match=r"^y: expected numeric targets; received .*U1"):
        estimator(bandwidth=1.0).fit(X, np.array(labels * 5))


def _sample(n=60, seed=0):
    # on a grid of 2^-10, so that shifting by 2^30 and scaling by powers of two are exact
    rng = np.random.default_rng(seed)
    x = np.round(rng.uniform(0, 5, n) * 1024) / 1024
    return x[:, None], np.sin(x) + 0.2 * rng.standard_normal(n)


TRANSFORMS = {
    # name: (x -> x', y -> y', bandwidth factor, prediction factor)
    "x shifted by 2^30 (timestamps)": (lambda x: x + 2.0**30, lambda y: y, 1.0, 1.0),
    "x times 2^300": (lambda x: x * 2.0**300, lambda y: y, 2.0**300, 1.0),
    "x times 2^-300": (lambda x: x * 2.0**-300, lambda y: y, 2.0**-300, 1.0),
    "y times 2^500": (lambda x: x, lambda y: y * 2.0**500, 1.0, 2.0**500),
    "y times 2^-500": (lambda x: x, lambda y: y * 2.0**-500, 1.0, 2.0**-500),
}


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("selector", ["cv", "aicc", "scott", "silverman"])
@pytest.mark.parametrize("estimator", [NadarayaWatson, LocalLinear])
def test_bandwidth_selection_is_shift_and_scale_equivariant(estimator, selector, transform):
    # the search once ran in float32 on the raw data: x + 1.7e9 made every candidate
    # undefined, x + 1e8 moved the bandwidth 0.25%, x * 1e160 gave an infinite bandwidth
    to_x, to_y, h_factor, y_factor = TRANSFORMS[transform]
    x, y = _sample()
    base = estimator(bandwidth=selector).fit(x, y)
    moved = estimator(bandwidth=selector).fit(to_x(x), to_y(y))
    np.testing.assert_allclose(moved.bandwidth_, base.bandwidth_ * h_factor, rtol=1e-9)
    np.testing.assert_allclose(
        moved.predict(to_x(x[::7])), base.predict(x[::7]) * y_factor, rtol=1e-9, atol=0
    )
    if selector == "cv":
        np.testing.assert_allclose(moved.cv_score_, base.cv_score_ * y_factor**2, rtol=1e-9)
    if selector == "aicc":
        np.testing.assert_allclose(moved.aicc_, base.aicc_ + 2 * np.log(y_factor), rtol=1e-9)


@pytest.mark.parametrize(
    "transform", ["x shifted by 2^30 (timestamps)", "x times 2^300", "y times 2^-500"]
)
@pytest.mark.parametrize("estimator", [NadarayaWatson, LocalLinear])
def test_searches_in_two_columns_are_shift_and_scale_equivariant(estimator, transform):
    # 300 rows in two columns: the host's L-BFGS over the C loop's leave-one-out sums
    to_x, to_y, h_factor, y_factor = TRANSFORMS[transform]
    (first, y), (second, _) = _sample(300, seed=1), _sample(300, seed=2)
    x = np.column_stack([first[:, 0], second[:, 0]])
    base = estimator().fit(x, y)
    moved = estimator().fit(to_x(x), to_y(y))
    np.testing.assert_allclose(moved.bandwidth_, base.bandwidth_ * h_factor, rtol=1e-9)
    np.testing.assert_allclose(moved.cv_score_, base.cv_score_ * y_factor**2, rtol=1e-9)
    np.testing.assert_allclose(
        moved.predict(to_x(x[::7])), base.predict(x[::7]) * y_factor, rtol=1e-9, atol=0
    )
