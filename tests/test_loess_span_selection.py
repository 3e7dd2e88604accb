"""Loess' span chosen by a criterion (GCV, AICc, leave-one-out CV) on the data where the
criteria cannot choose one by themselves: spans too small for tied rows, and a constant
response. (The criteria's values are held to netlib's in ``test_loess.py``.)"""

from __future__ import annotations

import numpy as np
import pytest

import attnpool
from attnpool.bandwidth import ConstantResponseWarning


@pytest.mark.parametrize("criterion", ["gcv", "aicc", "cv"])
def test_span_selection_passes_over_spans_too_small_for_tied_rows(criterion):
    """x rounded to 0.1: at span 0.05 each row's 15 nearest rows are its own ties, which
    raised and ended the search; it is infinite there, the others as fitted alone."""
    rng = np.random.default_rng(1)
    x = np.round(rng.uniform(0, 1, 300), 1)[:, None]
    y = np.sin(6 * x[:, 0]) + rng.normal(0, 0.3, 300)
    model = attnpool.Loess(span=criterion, spans=[0.05, 0.3, 0.6]).fit(x, y)
    assert model.criterion_[0] == np.inf and np.isfinite(model.criterion_[1:]).all()
    for span, value in zip([0.3, 0.6], model.criterion_[1:], strict=True):
        alone = attnpool.Loess(span=criterion, spans=[span]).fit(x, y)
        assert alone.criterion_[0] == value
    with pytest.raises(ValueError, match=r"span=0\.05 is too small"):
        attnpool.Loess(span=criterion, spans=[0.02, 0.05]).fit(x, y)


@pytest.mark.parametrize("criterion", ["gcv", "aicc", "cv"])
def test_span_selection_on_a_constant_response_takes_the_largest_span(criterion):
    """Every span fits a constant exactly; computed, the criteria followed rounding
    errors (GCV chose 0.15, AICc 0.35 of the default spans)."""
    X = np.random.default_rng(0).uniform(0.0, 10.0, (200, 2))
    with pytest.warns(ConstantResponseWarning, match="every span"):
        model = attnpool.Loess(span=criterion).fit(X, np.full(200, 3.0))
    assert model.span_ == 1.0
    assert np.all(model.criterion_ == (-np.inf if criterion == "aicc" else 0.0))
    np.testing.assert_array_equal(model.predict(X[:5]), 3.0)


@pytest.mark.parametrize("criterion", ["gcv", "aicc", "cv"])
def test_a_search_on_few_rows_passes_over_spans_that_reach_no_row(criterion):
    """Eight rows: spans below 1/8 take no neighbour at all, which raised ("span=0.1
    leaves no neighbours among 8 rows") though the user gave no span; spans whose fits
    interpolate (0/0 in CV's 1 − Lᵢᵢ and GCV's n − tr L) were NaN. Both are undefined:
    ``inf``, and the search goes on to the spans that fit."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 8)[:, None]
    y = np.sin(6 * x[:, 0]) + 0.1 * rng.normal(size=8)
    model = attnpool.Loess(span=criterion).fit(x, y)
    assert not np.isnan(model.criterion_).any()
    assert model.criterion_[0] == np.inf and np.isfinite(model.criterion_[-1])
    assert model.span_ == 1.0 if criterion == "aicc" else model.span_ == 0.7
    alone = attnpool.Loess(span=criterion, spans=[model.span_]).fit(x, y)
    assert alone.criterion_[0] == np.min(model.criterion_)
    with pytest.raises(ValueError, match=f"spans: the {criterion} criterion is undefined at every"):
        attnpool.Loess(span=criterion).fit(x[:3], y[:3])
