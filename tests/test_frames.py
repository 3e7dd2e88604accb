"""Data frames as R np users have them: text, category and ordered Categorical columns
encoded by their levels, ``var_type`` inferred from the dtypes, no warning of the
library's own making — each fit equal to the same fit on the levels' positions."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from attnpool import (
    ConditionalDensity,
    KernelDensity,
    LocalLinear,
    NadarayaWatson,
    NadarayaWatsonClassifier,
)
from attnpool._support.frames import encode


@pytest.fixture
def cars():
    rng = np.random.default_rng(0)
    n = 120
    size = rng.choice(["small", "medium", "large"], n)
    frame = pd.DataFrame(
        {
            "hp": rng.uniform(50, 200, n),
            "trans": rng.choice(["manual", "auto"], n),  # text
            "maker": pd.Categorical(rng.choice(["b", "a", "c"], n)),  # unordered category
            "size": pd.Categorical(size, categories=["small", "medium", "large"], ordered=True),
        }
    )
    codes = {"small": 0, "medium": 1, "large": 2}
    y = (frame.hp / 50 + (frame.trans == "auto") * 2 + np.vectorize(codes.get)(size)
         + rng.normal(0, 0.3, n))  # fmt: skip
    numbers = np.c_[
        frame.hp,
        (frame.trans == "manual").astype(float),  # sorted levels: auto 0, manual 1
        frame.maker.cat.codes,  # the categories' order: a, b, c
        np.vectorize(codes.get)(size),  # the ordered categories' order, not the sorted one
    ]
    return frame, np.asarray(y), numbers


def test_levels_are_positions_among_the_categories_or_the_sorted_values(cars):
    frame, _, numbers = cars
    found = encode(frame)
    np.testing.assert_array_equal(found.values, numbers)
    assert found.var_type == "cuuo"
    assert found.levels[1] == ("auto", "manual") and found.levels[3] == ("small", "medium", "large")


@pytest.mark.parametrize("estimator", [NadarayaWatson, LocalLinear])
def test_a_frame_fit_is_the_fit_of_its_levels_with_var_type_from_the_dtypes(cars, estimator):
    frame, y, numbers = cars
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning of the library's own making
        model = estimator().fit(frame, y)
        predicted = model.predict(frame.iloc[:7])
        r2, summary = model.r_squared_, str(model.summary())
    reference = estimator(var_type="cuuo").fit(numbers, y)
    np.testing.assert_allclose(model.bandwidth_, reference.bandwidth_, rtol=1e-12)
    np.testing.assert_allclose(predicted, reference.predict(numbers[:7]), rtol=1e-12)
    assert r2 == pytest.approx(reference.r_squared_, rel=1e-12)
    assert "'cuuo'" in summary
    # the user's var_type is kept where it says levels; a level column read as a number is not
    same = estimator(var_type="cuuo").fit(frame, y)
    np.testing.assert_allclose(same.bandwidth_, model.bandwidth_, rtol=1e-12)
    with pytest.raises(ValueError, match=r"var_type: column\(s\) \[1, 2\] hold levels"):
        estimator(var_type="ccco").fit(frame, y)


def test_new_rows_take_the_fits_levels_and_an_unseen_level_is_named(cars):
    frame, y, _ = cars
    model = NadarayaWatson(bandwidth=[30.0, 0.2, 0.2, 0.3]).fit(frame, y)
    row = frame.iloc[[5]].copy()
    # a new frame whose categorical column lists other categories still maps by value
    row["maker"] = pd.Categorical([frame.maker.iloc[5]], categories=["c", "b", "a"])
    np.testing.assert_allclose(model.predict(row), model.predict(frame.iloc[[5]]), rtol=1e-13)
    unseen = frame.iloc[[0]].copy()
    unseen["trans"] = "cvt"
    with pytest.raises(ValueError, match=r"column 'trans' has the level 'cvt'.*'auto', 'manual'"):
        model.predict(unseen)


def test_densities_and_classes_of_frames(cars):
    frame, _, numbers = cars
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        density = KernelDensity(bandwidth=[20.0, 0.1, 0.1, 0.2]).fit(frame)
        got = density.score_samples(frame.iloc[:5])
        classifier = NadarayaWatsonClassifier(bandwidth=[30.0, 0.3, 0.3]).fit(
            frame[["hp", "maker", "size"]], frame.trans
        )
        labels = classifier.predict(frame[["hp", "maker", "size"]].iloc[:5])
    want = KernelDensity(bandwidth=[20.0, 0.1, 0.1, 0.2], var_type="cuuo").fit(numbers)
    np.testing.assert_allclose(got, want.score_samples(numbers[:5]), rtol=1e-12)
    assert set(labels) <= {"auto", "manual"}


def test_a_conditional_density_of_frames_is_that_of_their_levels(cars):
    frame, y, numbers = cars
    x_frame, y_frame = frame[["hp", "size"]], frame.trans  # f̂(transmission | hp, size)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = ConditionalDensity(bandwidth="normal_reference").fit(x_frame, y_frame)
        got = model.pdf(x_frame.iloc[:6], y_frame.iloc[:6])
        searched = ConditionalDensity().fit(x_frame, y_frame)
    reference = ConditionalDensity(
        bandwidth="normal_reference", x_var_type="co", y_var_type="u"
    ).fit(numbers[:, [0, 3]], numbers[:, 1])
    np.testing.assert_allclose(model.bandwidth_, reference.bandwidth_, rtol=1e-12)
    np.testing.assert_allclose(got, reference.pdf(numbers[:6, [0, 3]], numbers[:6, 1]), rtol=1e-12)
    # the two levels' probabilities at one x sum to 1 (a conditional distribution of y)
    both = pd.Series(["auto", "manual"], dtype=object)
    x_twice = pd.concat([x_frame.iloc[[0]]] * 2, ignore_index=True)
    assert searched.pdf(x_twice, both).sum() == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(ValueError, match=r"column 'trans' has the level 'cvt'"):
        model.pdf(x_frame.iloc[:1], pd.Series(["cvt"], name="trans"))
    # numbers for y: a continuous y's density, as before (var_type 'c')
    cont = ConditionalDensity(bandwidth="normal_reference").fit(x_frame, pd.Series(y, name="y"))
    assert cont.y_bandwidth_.shape == (1,) and cont.y_bandwidth_[0] > 0.1
