"""Rows that nearly repeat (the same y at x a rounding apart) predict each other: a
regression search whose criterion then reproduces every row to rounding says so with a
TiedDataWarning (:func:`attnpool.bandwidth.resolution.warn_if_interpolating`); data
whose criterion does not degenerate get no warning."""

import warnings

import numpy as np
import pytest

import attnpool
from attnpool import TiedDataWarning, select_bandwidth

MESSAGE = "reproduces every row to rounding: rows nearly repeat"


def twice(gap: float, seed: int = 0, n: int = 120):
    """Noisy sine data, each row given again with ``x`` moved by about ``gap``."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 10.0, n)
    y = np.sin(x) + 0.3 * rng.normal(size=n)
    moved = x + gap * rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 1.0, n)
    return np.r_[x, moved][:, None], np.r_[y, y]


def textbook_loo_mse(x: np.ndarray, y: np.ndarray, h: float) -> float:
    """Leave-one-out mean squared error of the Gaussian Nadaraya–Watson fit, brute force
    (log weights shifted by each row's largest, so that no row's weights all underflow)."""
    log_k = -0.5 * ((x[:, None, 0] - x[None, :, 0]) / h) ** 2
    np.fill_diagonal(log_k, -np.inf)
    k = np.exp(log_k - log_k.max(axis=1, keepdims=True))
    return float(np.mean((y - k @ y / k.sum(axis=1)) ** 2))


@pytest.mark.parametrize("gap", [1e-12, 1e-7])
@pytest.mark.parametrize(("method", "degree"), [("cv", 0), ("cv", 1), ("aicc", 0)])
def test_a_search_that_follows_near_repeats_says_so(gap, method, degree):
    # (AICc is tested on its bound σ̂² ≤ exp(AICc − 1): local linear's AICc on these
    # rows, its trace near n, stays above it)
    x, y = twice(gap)
    with pytest.warns(TiedDataWarning, match=MESSAGE) as caught:
        found = select_bandwidth(x, y, method=method, degree=degree)
    assert caught[0].filename == __file__
    assert found.bandwidth[0] < 1e-3  # far below the rows' spacing (~0.08)
    if method == "cv" and degree == 0:  # the claim: each row is predicted by its twin
        assert textbook_loo_mse(x, y, found.bandwidth[0]) < 1e-12 * np.var(y)


def test_the_estimators_neighbour_counts_and_several_outputs_say_so():
    x, y = twice(1e-9, seed=1)
    with pytest.warns(TiedDataWarning, match=MESSAGE):
        attnpool.NadarayaWatson(bandwidth="cv").fit(x, y)
    with pytest.warns(TiedDataWarning, match=MESSAGE):
        found = attnpool.NadarayaWatson(bandwidth="cv", bandwidth_type="generalized_nn").fit(x, y)
    assert found.bandwidth_[0] == 1
    with pytest.warns(TiedDataWarning, match=MESSAGE):
        attnpool.LocalLinear(bandwidth="cv").fit(x, np.c_[y, 3.0 * y + 1.0])
    weights = np.random.default_rng(2).uniform(0.5, 2.0, y.size)
    with pytest.warns(TiedDataWarning, match=MESSAGE):
        select_bandwidth(x, y, weights=weights)


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("error", TiedDataWarning)
        return fit()


@pytest.mark.parametrize("method", ["cv", "aicc"])
@pytest.mark.parametrize("degree", [0, 1])
def test_data_whose_criterion_does_not_degenerate_get_no_warning(method, degree):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.0, 10.0, 150)
    noisy = np.sin(x) + 0.3 * rng.normal(size=150)
    rows = np.r_[np.arange(150), np.arange(40)]  # exact repeats: merged into weights
    for X, y in [
        (x, noisy),
        (x, np.sin(x)),  # no noise: the best fit is smooth, not an interpolation
        (x, 2.0 * x + 1.0),  # local linear reproduces it at every bandwidth
        (x[rows], noisy[rows]),
        twice(0.02),  # twins a quarter of the spacing apart: an optimum, not rounding
    ]:
        found = _quiet(lambda X=X, y=y: select_bandwidth(X, y, method=method, degree=degree))
        assert np.all(np.isfinite(found.bandwidth))


def test_the_warning_needs_a_criterion_at_rounding_where_some_bandwidth_is_not():
    from attnpool.bandwidth.resolution import INTERPOLATING, interpolates

    assert interpolates("cv", 0.0, np.array([0.0, 0.5]), 1.0)
    assert not interpolates("cv", 0.0, np.array([0.0, INTERPOLATING / 2]), 1.0)
    assert not interpolates("cv", 2 * INTERPOLATING, np.array([0.5]), 1.0)
    assert interpolates("aicc", -40.0, np.array([-40.0, -1.0]), 1.0)  # log σ̂² ≤ −41
    assert not interpolates("aicc", -20.0, np.array([-1.0]), 1.0)
    assert not interpolates("cv", 0.0, np.array([0.5]), 0.0)  # (a constant response)
