"""Loess refuses what it cannot fit by name: its parameters, a level, rows at one point."""

from __future__ import annotations

import numpy as np
import pytest

import attnpool


def _data(n=50):
    X = np.random.default_rng(0).uniform(0.0, 30.0, (n, 1))
    return X, np.sin(X[:, 0])


@pytest.mark.parametrize("span", [0.3, 1.0, 2.0, "aicc", "gcv"])
def test_rows_at_one_point_are_named_whatever_the_span(span):
    # no span leaves a neighbourhood: the error names X, not a span to enlarge
    y = np.random.default_rng(0).normal(size=50)
    with pytest.raises(ValueError, match=r"^X: every row is the same point \[3\.0, -1\.0\]"):
        attnpool.Loess(span=span).fit(np.tile([3.0, -1.0], (50, 1)), y)
    weights = np.r_[np.ones(49), 0.0]  # the one distinct row weighs nothing: left out
    with pytest.raises(ValueError, match=r"^X: every row is the same point \[3\.0\]"):
        attnpool.Loess(span=span).fit(np.r_[np.full(49, 3.0), 4.0][:, None], y,
                                      sample_weight=weights)  # fmt: skip


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"degree": 3}, "degree must be 0, 1 or 2; got 3"),
        ({"family": "huber"}, "family must be one of"),
        ({"span": 0.0}, "span must be a number > 0 or one of"),
        ({"span": "bic"}, "span must be a number > 0 or one of"),
        ({"kernel": "gaussian"}, "kernel must be a compact distance kernel"),
        ({"iterations": 0}, "iterations must be a whole number ≥ 1"),
    ],
)
def test_bad_parameters_are_named(options, message):
    X, y = _data()
    with pytest.raises(ValueError, match=message):
        attnpool.Loess(**options).fit(X, y)


def test_bad_level_is_named():
    X, y = _data()
    with pytest.raises(ValueError, match=r"level must lie in \(0, 1\); got 1\.5"):
        attnpool.Loess().fit(X, y).predict_interval(X[:2], level=1.5)
