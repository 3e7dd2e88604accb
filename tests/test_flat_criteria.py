"""A regression's criterion flat at its best over a range of small bandwidths — at
rounding (classes apart, rows that nearly repeat) or at its h → 0 limit (an unlucky
sample): the searches take the largest such bandwidth and say so with a
FlatCriterionWarning (:mod:`attnpool.bandwidth.flat_criteria`); data whose criterion has
an optimum get no warning and the same search as before."""

import warnings

import numpy as np
import pytest

import attnpool
from attnpool import select_bandwidth
from attnpool.bandwidth import FlatCriterionWarning
from attnpool.bandwidth.flat_criteria import (
    AT_ROUNDING,
    FLAT,
    at_rounding,
    rounding_limit,
    smoothest_at_rounding,
)

MESSAGE = "at rounding — the fit reproduces every row — at every bandwidth up to"


def twice(gap: float, seed: int = 0, n: int = 120):
    """Noisy sine data, each row given again with ``x`` moved by about ``gap``."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 10.0, n)
    y = np.sin(x) + 0.3 * rng.normal(size=n)
    moved = x + gap * rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 1.0, n)
    return np.r_[x, moved][:, None], np.r_[y, y]


def apart(seed: int = 0):
    """Two classes 10 apart (labels 0 and 1)."""
    rng = np.random.default_rng(seed)
    x = np.r_[rng.normal(0.0, 1.0, 50), rng.normal(10.0, 1.0, 50)]
    return x[:, None], np.repeat([0.0, 1.0], 50)


def textbook_loo_mse(x: np.ndarray, y: np.ndarray, h: float) -> float:
    """Leave-one-out mean squared error of the Gaussian Nadaraya–Watson fit, brute force
    (log weights shifted by each row's largest, so that no row's weights all underflow)."""
    log_k = -0.5 * ((x[:, None, 0] - x[None, :, 0]) / h) ** 2
    np.fill_diagonal(log_k, -np.inf)
    k = np.exp(log_k - log_k.max(axis=1, keepdims=True))
    return float(np.mean((y - k @ y / k.sum(axis=1)) ** 2))


def test_classes_apart_get_the_largest_bandwidth_that_still_fits_every_row():
    x, labels = apart()
    limit = AT_ROUNDING * np.var(labels)
    with pytest.warns(FlatCriterionWarning, match=MESSAGE) as caught:
        model = attnpool.NadarayaWatsonClassifier().fit(x, labels)
    assert caught[0].filename == __file__
    h = model.bandwidth_[0]
    # (the search stopped at h = 9e-5 before: each point classed by its nearest neighbour)
    assert textbook_loo_mse(x, labels, h) <= limit < textbook_loo_mse(x, labels, 1.02 * h)
    assert 0.5 < h < 3.0
    np.testing.assert_allclose(model.cv_score_, textbook_loo_mse(x, labels, h), atol=1e-15)


@pytest.mark.parametrize("gap", [1e-12, 1e-7])
@pytest.mark.parametrize(("method", "degree"), [("cv", 0), ("cv", 1), ("aicc", 0)])
def test_rows_that_nearly_repeat_say_so(gap, method, degree):
    # (AICc is held to its bound σ̂² ≤ exp(AICc − 1): local linear's AICc on these rows,
    # its trace near n, stays above it)
    x, y = twice(gap)
    with pytest.warns(FlatCriterionWarning, match=MESSAGE):
        found = select_bandwidth(x, y, method=method, degree=degree)
    if method == "cv" and degree == 0:  # each row predicted by its twin, up to h
        h = found.bandwidth[0]
        limit = AT_ROUNDING * np.var(y)
        assert textbook_loo_mse(x, y, h) <= limit < textbook_loo_mse(x, y, 1.02 * h)
    assert found.bandwidth[0] < 0.08  # (below the rows' spacing: the twins decide it)


def test_where_the_search_stopped_in_the_flat_range_does_not_show():
    # weights of 2 select what the plain sample selects, shifts and scales move h with x
    # (the factor found to 1% left where the search had stopped, in rounding noise, showing)
    x, labels = apart()
    with pytest.warns(FlatCriterionWarning, match=MESSAGE):
        base = select_bandwidth(x, labels).bandwidth
    for X, weights, factor in [
        (x, np.full(100, 2.0), 1.0),
        (x, np.full(100, 1e300), 1.0),
        (x + 1e6, None, 1.0),
        (x * 1e150, None, 1e150),
    ]:
        with pytest.warns(FlatCriterionWarning, match=MESSAGE):
            found = select_bandwidth(X, labels, weights=weights)
        np.testing.assert_allclose(found.bandwidth / factor, base, rtol=2e-4)


def test_neighbour_counts_several_outputs_weights_and_local_polynomials():
    x, labels = apart(1)
    with pytest.warns(FlatCriterionWarning, match=MESSAGE):
        counted = attnpool.NadarayaWatson(bandwidth_type="generalized_nn").fit(x, labels)
    assert 1 < counted.bandwidth_[0] < 50  # not the nearest neighbour alone
    with pytest.warns(FlatCriterionWarning, match=MESSAGE):
        attnpool.LocalLinear().fit(x, np.c_[labels, 3.0 * labels + 1.0])
    weights = np.random.default_rng(2).uniform(0.5, 2.0, labels.size)
    with pytest.warns(FlatCriterionWarning, match=MESSAGE):
        found = select_bandwidth(x, labels, weights=weights)
    assert 0.5 < found.bandwidth[0] < 3.0
    with pytest.warns(FlatCriterionWarning, match=MESSAGE):
        model = attnpool.LocalPolynomial(degree=2).fit(x, labels)
    assert 0.2 < model.bandwidth_[0] < 3.0


@pytest.mark.parametrize("criterion", ["gcv", "aicc", "cv"])
def test_a_loess_span_search_takes_the_largest_span_at_rounding(criterion):
    x, labels = apart()
    with pytest.warns(FlatCriterionWarning, match="every span up to 0.5, which is returned"):
        model = attnpool.Loess(span=criterion).fit(x, labels)
    at = model.criterion_ <= rounding_limit(criterion, np.var(labels))
    assert model.span_ == 0.5 and np.all(at[:9]) and not np.any(at[9:])  # spans 0.1–0.5
    # (it took 0.15, 0.25 and 0.5 by the criteria's rounding noise)
    noisy = labels + 0.1 * np.random.default_rng(1).normal(size=labels.size)
    _quiet(lambda: attnpool.Loess(span=criterion).fit(x, noisy))


def unlucky(seed: int):
    """A small sample whose CV is lowest in its h → 0 limit (found among 300 draws)."""
    rng = np.random.default_rng(seed)
    n = rng.integers(5, 30)
    x = rng.uniform(0.0, 1.0, n)
    return x, np.sin(3.0 * x) + rng.normal(size=n) * rng.choice([0.05, 0.3, 1.0])


def nearest_neighbour_loo_mse(x: np.ndarray, y: np.ndarray) -> float:
    """CV's h → 0 limit, brute force: each row predicted by its nearest other row."""
    distance = np.abs(x[:, None] - x[None, :])
    np.fill_diagonal(distance, np.inf)
    return float(np.mean((y - y[np.argmin(distance, axis=1)]) ** 2))


@pytest.mark.parametrize("seed", [23, 108])
def test_an_unlucky_sample_gets_the_largest_bandwidth_at_its_nearest_neighbour_limit(seed):
    x, y = unlucky(seed)
    level = nearest_neighbour_loo_mse(x, y) + FLAT * np.var(y)
    with pytest.warns(FlatCriterionWarning, match="lowest in its h → 0 limit"):
        found = select_bandwidth(x, y)
    h = found.bandwidth[0]
    # (it stopped at 1e-4 of the rows' spacing; now ~0.05–0.09 of it)
    assert attnpool.cv_curve(x, y, [h])[0] <= level < attnpool.cv_curve(x, y, [1.02 * h])[0]
    assert found.objective <= level
    _quiet(lambda: select_bandwidth(x, y, method="aicc"))  # (its penalty: no such limit)


def test_a_categorical_column_that_separates_the_classes_smooths_the_others_out():
    from attnpool.bandwidth.search import SMOOTHED_OUT

    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 2, 100), rng.uniform(0.0, 1.0, 100)]
    with pytest.warns(FlatCriterionWarning, match=MESSAGE):
        found = select_bandwidth(X, 3.0 * X[:, 0], var_type="uc")
    half = (X[:, 1].max() - X[:, 1].min()) / 2
    # (the λ found was read back clipped to 1e-6: the continuous column then stayed 0.58)
    assert found.bandwidth[0] < 1e-9
    np.testing.assert_allclose(found.bandwidth[1], SMOOTHED_OUT * half, rtol=1e-12)
    assert found.objective <= AT_ROUNDING * np.var(3.0 * X[:, 0])


def textbook_loo_mse_columns(X: np.ndarray, y: np.ndarray, h: np.ndarray) -> float:
    """:func:`textbook_loo_mse` with one Gaussian bandwidth per column (a product kernel)."""
    log_k = -0.5 * np.sum(((X[:, None, :] - X[None, :, :]) / h) ** 2, axis=2)
    np.fill_diagonal(log_k, -np.inf)
    k = np.exp(log_k - log_k.max(axis=1, keepdims=True))
    return float(np.mean((y - k @ y / k.sum(axis=1)) ** 2))


def test_columns_the_fit_does_not_need_are_smoothed_out():
    from attnpool.bandwidth.search import SMOOTHED_OUT

    x, labels = apart(3)
    rng = np.random.default_rng(3)
    noise, group = rng.normal(size=labels.size), rng.integers(0, 3, labels.size)
    with pytest.warns(FlatCriterionWarning, match=MESSAGE):
        alone = select_bandwidth(x, labels).bandwidth[0]
    limit = AT_ROUNDING * np.var(labels)
    X = np.c_[x, noise]
    half = (noise.max() - noise.min()) / 2
    for fit in (
        lambda: select_bandwidth(X, labels).bandwidth,
        lambda: select_bandwidth(X, labels, method="aicc").bandwidth,  # (ends at the edge)
        lambda: attnpool.NadarayaWatsonClassifier().fit(X, labels).bandwidth_,
        lambda: attnpool.NadarayaWatson(kernel="gaussian-order4").fit(X, labels).bandwidth_,
    ):
        with pytest.warns(FlatCriterionWarning, match=MESSAGE):
            h = fit()
        # (the noise column was scaled with the other: 0.35, splitting the classes' fits)
        np.testing.assert_allclose(h[1], SMOOTHED_OUT * half, rtol=1e-12)
        assert h[0] > 0.5
    with pytest.warns(FlatCriterionWarning, match=MESSAGE):
        h = select_bandwidth(X, labels).bandwidth  # (the textbook's: noise does not count)
    np.testing.assert_allclose(h[0], alone, rtol=1e-3)
    assert textbook_loo_mse_columns(X, labels, h) <= limit
    with pytest.warns(FlatCriterionWarning, match=MESSAGE):
        found = select_bandwidth(np.c_[x, group], labels, var_type="cu")
    assert found.bandwidth[1] == pytest.approx(2 / 3, rel=1e-12)  # every level alike
    np.testing.assert_allclose(found.bandwidth[0], alone, rtol=1e-3)
    twin = np.c_[x, x[:, 0] + 0.01 * noise]  # two columns that do the same work: one kept
    with pytest.warns(FlatCriterionWarning, match=MESSAGE):
        h = select_bandwidth(twin, labels).bandwidth
    assert h[0] > 1e5 and 0.5 < h[1] < 3.0
    assert textbook_loo_mse_columns(twin, labels, h) <= limit


def test_columns_the_fit_needs_are_not_smoothed_out():
    # four clusters at the corners of a square, each its own level: both columns count
    rng = np.random.default_rng(5)
    corners = np.array([[0.0, 0.0], [0.0, 10.0], [10.0, 0.0], [10.0, 10.0]])
    X = np.repeat(corners, 25, axis=0) + rng.normal(0.0, 1.0, (100, 2))
    y = np.repeat(np.arange(4.0), 25)
    with pytest.warns(FlatCriterionWarning, match=MESSAGE):
        h = select_bandwidth(X, y).bandwidth
    assert np.all((h > 0.3) & (h < 5.0))
    assert textbook_loo_mse_columns(X, y, h) <= AT_ROUNDING * np.var(y)
    assert textbook_loo_mse_columns(X, y, 1.02 * h) > AT_ROUNDING * np.var(y)


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FlatCriterionWarning)
        return fit()


@pytest.mark.parametrize("method", ["cv", "aicc"])
@pytest.mark.parametrize("degree", [0, 1])
def test_data_whose_criterion_has_an_optimum_get_no_warning(method, degree):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.0, 10.0, 150)
    noisy = np.sin(x) + 0.3 * rng.normal(size=150)
    rows = np.r_[np.arange(150), np.arange(40)]  # exact repeats: merged into weights
    for X, y in [
        (x, noisy),
        (x, np.sin(x)),  # no noise: the best fit is smooth, not at rounding
        (x, 2.0 * x + 1.0),  # local linear reproduces it at every bandwidth
        (x[rows], noisy[rows]),
        twice(0.02),  # twins a quarter of the spacing apart: an optimum, not rounding
    ]:
        found = _quiet(lambda X=X, y=y: select_bandwidth(X, y, method=method, degree=degree))
        assert np.all(np.isfinite(found.bandwidth))


def test_at_rounding_needs_some_bandwidth_that_is_not():
    assert at_rounding("cv", 0.0, np.array([0.0, 0.5]), 1.0)
    assert not at_rounding("cv", 0.0, np.array([0.0, AT_ROUNDING / 2]), 1.0)
    assert not at_rounding("cv", 2 * AT_ROUNDING, np.array([0.5]), 1.0)
    assert at_rounding("aicc", -40.0, np.array([-40.0, -1.0]), 1.0)  # log σ̂² ≤ −41
    assert not at_rounding("aicc", -20.0, np.array([-1.0]), 1.0)
    assert not at_rounding("cv", 0.0, np.array([0.5]), 0.0)  # (a constant response)


@pytest.mark.parametrize("edge", [1.0, 7.3, 1e3, 1e9, 1e20])
def test_the_smoothest_factor_is_found_to_a_percent(edge):
    asked = []

    def values_at(factors):
        asked.append(len(factors))
        return np.where(factors <= edge, 0.0, 1.0)

    factor, value = smoothest_at_rounding(values_at, 0.0, 1e-12)
    assert value == 0.0 and factor <= edge
    assert factor >= min(edge, 8.0**16) / 1.02
    assert set(asked) == {4}  # (each call a round of four: one Dask pass)
    capped, _ = smoothest_at_rounding(values_at, 0.0, 1e-12, largest=100.0)
    assert capped == (100.0 if edge >= 100.0 else factor)
    asked.clear()  # (already smoothed out: nothing to ask)
    assert smoothest_at_rounding(values_at, 0.0, 1e-12, largest=1.0) == (1.0, 0.0) and not asked


def test_the_command_line_says_so_in_one_line_naming_its_option(tmp_path, monkeypatch, capsys):
    from attnpool.cli import main

    monkeypatch.chdir(tmp_path)
    x, labels = apart(4)
    (tmp_path / "classes.csv").write_text(
        "x,label\n" + "".join(f"{a:.17g},{b:g}\n" for a, b in zip(x[:, 0], labels, strict=True))
    )
    code = main(["fit", "classes.csv", "--x", "x", "--y", "label", "--out", "fit.csv"])
    warning = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert code == 0 and (tmp_path / "fit.csv").exists()
    assert len(warning) == 1 and warning[0].startswith(
        "attnpool: warning: bandwidth: the cv criterion is at rounding"
    )
    assert warning[0].endswith("or take a rule of thumb (--bandwidth scott)")
