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
