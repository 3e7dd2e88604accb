"""scikit-learn estimators: the estimator checks, pipelines, grid search, pandas."""

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from attnpool import (
    EmptyNeighbourhoodWarning,
    LocalLinear,
    NadarayaWatson,
    NadarayaWatsonClassifier,
    attention_weights,
    datasets,
    local_regression,
    select_bandwidth,
)
from sklearn_checks import scikit_learn_checks


# The checks fit dozens of small data sets of different shapes; a rule of thumb and a
# fixed bandwidth keep each fit cheap. Cross-validated fits are tested below.
@scikit_learn_checks(
    [
        NadarayaWatson(bandwidth="scott"),
        NadarayaWatson(bandwidth=1.0, kernel="epanechnikov", empty="nearest"),
        LocalLinear(bandwidth="silverman"),
        NadarayaWatsonClassifier(bandwidth=1.0),
        NadarayaWatson(bandwidth=2.0, kernel="gaussian-order4"),
        LocalLinear(bandwidth=3, bandwidth_type="adaptive_nn"),
        NadarayaWatson(
            bandwidth=3,
            bandwidth_type="generalized_nn",
            kernel="epanechnikov-product",
            empty="nearest",
        ),
    ],
    # its 15 points in 30 columns make every local linear design singular (the answer is
    # the ridge's, rounding-sensitive): local linear's weights-equal-repeated-rows is
    # test_observation_weights.py::test_estimators_with_sample_weight_fit_the_repeated_rows
    replaced={("LocalLinear", "check_sample_weight_equivalence_on_dense_data")},
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_default_bandwidth_is_cross_validated():
    data = datasets.sine_data(n=80, seed=2)
    model = NadarayaWatson().fit(data.x_train[:, None], data.y_train)
    selection = select_bandwidth(data.x_train, data.y_train)
    np.testing.assert_allclose(model.bandwidth_, selection.bandwidth)
    assert model.cv_score_ == selection.objective
    assert model.n_features_in_ == 1
    np.testing.assert_allclose(
        model.predict(data.x_val[:, None]),
        local_regression(data.x_train, data.y_train, data.x_val, bandwidth=model.bandwidth_),
    )


def test_aicc_attribute():
    data = datasets.sine_data(n=60, seed=3)
    model = LocalLinear(bandwidth="aicc").fit(data.x_train[:, None], data.y_train)
    assert np.isfinite(model.aicc_) and not hasattr(model, "cv_score_")


def test_attention_weights_method():
    data = datasets.sine_data(n=30)
    model = NadarayaWatson(bandwidth=0.4).fit(data.x_train[:, None], data.y_train)
    weights = model.attention_weights(data.x_val[:, None])
    assert weights.shape == (100, 30)
    np.testing.assert_allclose(weights, attention_weights(data.x_val, data.x_train, bandwidth=0.4))
    np.testing.assert_allclose(weights @ data.y_train, model.predict(data.x_val[:, None]))


def test_multi_output():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (40, 2))
    Y = np.column_stack([np.sin(3 * X[:, 0]), X[:, 1] ** 2])
    model = NadarayaWatson(bandwidth=[0.2, 0.3]).fit(X, Y)
    predictions = model.predict(X[:5])
    assert predictions.shape == (5, 2)
    for column in range(2):
        single = NadarayaWatson(bandwidth=[0.2, 0.3]).fit(X, Y[:, column]).predict(X[:5])
        np.testing.assert_allclose(predictions[:, column], single)
    assert np.isfinite(NadarayaWatson().fit(X, Y).cv_score_)


def test_pipeline_grid_search_and_pandas():
    data = datasets.sine_data(n=120, seed=4)
    frame = pd.DataFrame({"x": data.x_train, "noise": np.random.default_rng(1).normal(size=120)})
    search = GridSearchCV(
        make_pipeline(StandardScaler(), NadarayaWatson()),
        {"nadarayawatson__bandwidth": [0.05, 0.2, 1.0]},
        cv=3,
    ).fit(frame[["x"]], pd.Series(data.y_train))
    assert search.best_params_["nadarayawatson__bandwidth"] == 0.2
    assert search.predict(pd.DataFrame({"x": [2.0]})).shape == (1,)


def test_local_linear_beats_nadaraya_watson_at_the_boundary():
    x = np.linspace(0, 1, 100)
    y = 3 * x
    nw = NadarayaWatson(bandwidth=0.1).fit(x[:, None], y)
    ll = LocalLinear(bandwidth=0.1).fit(x[:, None], y)
    edge = np.array([[0.0], [1.0]])
    assert np.abs(ll.predict(edge) - [0, 3]).max() < 1e-10 < np.abs(nw.predict(edge) - [0, 3]).max()
    np.testing.assert_allclose(ll.marginal_effects(edge), [[3.0], [3.0]])


def test_classifier():
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(0, 0.5, (30, 2)), rng.normal(3, 0.5, (30, 2))])
    y = np.array(["a"] * 30 + ["b"] * 30)
    model = NadarayaWatsonClassifier().fit(X, y)
    proba = model.predict_proba([[0.0, 0.0], [3.0, 3.0], [1.5, 1.5]])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert list(model.predict([[0.0, 0.0], [3.0, 3.0]])) == ["a", "b"]
    assert model.score(X, y) == 1.0 and np.isfinite(model.cv_score_)


def test_mixed_variable_types():
    rng = np.random.default_rng(6)
    X = np.column_stack([rng.uniform(0, 5, 80), rng.integers(0, 3, 80)])
    y = np.sin(X[:, 0]) + 2 * (X[:, 1] == 1)
    model = NadarayaWatson(var_type="cu").fit(X, y)
    assert 0 <= model.bandwidth_[1] < 2 / 3
    assert model.score(X, y) > 0.9
    weights = model.attention_weights(X[:3])
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    np.testing.assert_allclose(weights @ y, model.predict(X[:3]))


@pytest.mark.parametrize(
    ("estimator", "pattern"),
    [
        (NadarayaWatson(bandwidth="cv_ml"), "bandwidth: expected one of 'cv', 'aicc'"),
        (NadarayaWatson(bandwidth=-1.0), "bandwidth: expected positive finite"),
        (NadarayaWatson(kernel="nope"), "kernel: unknown kernel 'nope'"),
        (NadarayaWatson(var_type="cc"), "var_type: expected a string of 1 letters"),
        (NadarayaWatson(empty="zero"), "empty: expected one of"),
    ],
)
def test_bad_parameters_fail_at_fit(estimator, pattern):
    with pytest.raises(ValueError, match=pattern):
        estimator.fit(np.linspace(0, 1, 10)[:, None], np.arange(10.0))


def test_the_estimators_speak_scikit_learns_protocol_without_its_bases():
    from sklearn.base import clone, is_classifier, is_regressor
    from sklearn.exceptions import NotFittedError
    from sklearn.model_selection import KFold, cross_val_score

    model = LocalLinear(kernel="epanechnikov", bandwidth=0.5)
    assert repr(model) == "LocalLinear(bandwidth=0.5, kernel='epanechnikov')"
    assert repr(NadarayaWatson()) == "NadarayaWatson()"
    copy = clone(model)
    assert copy is not model and copy.get_params() == model.get_params()
    assert is_regressor(model) and is_classifier(NadarayaWatsonClassifier())
    with pytest.raises(NotFittedError, match="This LocalLinear instance is not fitted yet"):
        model.predict([[0.0]])
    with pytest.raises(ValueError, match="Invalid parameter 'width' for estimator"):
        model.set_params(width=1.0)
    pipeline = make_pipeline(StandardScaler(), NadarayaWatson(bandwidth=0.3))
    pipeline.set_params(nadarayawatson__kernel="tricube")
    assert pipeline.get_params()["nadarayawatson__kernel"] == "tricube"
    data = datasets.sine_data(n=60, seed=4)
    x, y = data.x_train[:, None], data.y_train
    folds = KFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(NadarayaWatson(), x, y, cv=folds)
    by_hand = [NadarayaWatson().fit(x[a], y[a]).score(x[b], y[b]) for a, b in folds.split(x)]
    np.testing.assert_allclose(scores, by_hand, rtol=1e-12)


def test_score_is_scikit_learns_r2_and_accuracy():
    from sklearn.metrics import accuracy_score, r2_score

    rng = np.random.default_rng(5)
    x = rng.uniform(0, 5, (50, 2))
    y = np.column_stack([np.sin(x[:, 0]), x[:, 1] ** 2])
    weights = rng.uniform(0.1, 2, 50)
    model = NadarayaWatson(bandwidth=0.7).fit(x, y)
    predicted = model.predict(x)
    assert model.score(x, y) == pytest.approx(r2_score(y, predicted), rel=1e-12)
    assert model.score(x, y, sample_weight=weights) == pytest.approx(
        r2_score(y, predicted, sample_weight=weights), rel=1e-12
    )
    constant = NadarayaWatson(bandwidth=0.7).fit(x, np.ones(50))
    assert constant.score(x, np.ones(50)) == r2_score(np.ones(50), constant.predict(x))
    labels = np.where(x[:, 0] > 2.5, "high", "low")
    classifier = NadarayaWatsonClassifier(bandwidth=0.5).fit(x, labels)
    assert classifier.score(x, labels, sample_weight=weights) == pytest.approx(
        accuracy_score(labels, classifier.predict(x), sample_weight=weights), rel=1e-12
    )


def test_statsmodels_names_for_the_criteria_are_taken():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 5, (60, 1))
    y = np.sin(X[:, 0]) + rng.normal(0, 0.2, 60)
    plain, alias = NadarayaWatson().fit(X, y), NadarayaWatson(bandwidth="cv_ls").fit(X, y)
    np.testing.assert_array_equal(alias.bandwidth_, plain.bandwidth_)
    assert alias.cv_score_ == plain.cv_score_
    aicc = LocalLinear(bandwidth="aicc").fit(X, y)
    np.testing.assert_array_equal(
        LocalLinear(bandwidth="aic").fit(X, y).bandwidth_, aicc.bandwidth_
    )
    np.testing.assert_array_equal(
        select_bandwidth(X, y, method="cv_ls").bandwidth, plain.bandwidth_
    )


def test_searches_over_compact_kernels_score_finite_and_warn_at_the_users_line():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 5, (60, 1))
    y = np.sin(X[:, 0]) + rng.normal(0, 0.2, 60)
    grid = {"bandwidth": [0.02, 0.1, 1.0]}
    with pytest.warns(EmptyNeighbourhoodWarning) as caught:
        search = GridSearchCV(NadarayaWatson(kernel="epanechnikov"), grid, cv=3).fit(X, y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert {record.filename for record in caught} == {__file__}  # this line, not the library's
