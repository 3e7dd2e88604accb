"""Bandwidth searches held to their criterion: never worse than a local search from the
rule of thumb, at least as low as a dense grid of the criterion, and never led to h → 0
by a degenerate criterion — tied (recorded) values, weights, repeated rows.

References are computed here: the criteria's own curves on dense grids, SciPy's
Nelder–Mead from the rule of thumb, brute-force weighted leave-one-out fits in NumPy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import optimize

from attnpool import (
    KernelDensity,
    LocalLinear,
    NadarayaWatson,
    TiedDataWarning,
    aicc_curve,
    censoring_weights,
    cv_curve,
    rule_of_thumb,
    select_bandwidth,
)
from attnpool.bandwidth.plug_in import isj_bandwidth
from attnpool.bandwidth.resolution import bandwidth_floor, resolution
from attnpool.density.criteria import least_squares_criterion, loo_log_density
from attnpool.density.selection import select_density_bandwidth


def three_columns(seed=21):
    """The audit's recipe: y = sin(x0)·x1 + noise, x2 irrelevant, n = 120."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 4, (120, 2))
    y = np.sin(x[:, 0]) * x[:, 1] + rng.normal(0, 0.2, 120)
    return np.c_[x, rng.normal(size=120)], y


def local_search_from_the_rule(x, y, **options):
    """Nelder–Mead on log-bandwidths from Scott's rule: a local search as statsmodels runs."""
    start = np.log(rule_of_thumb(x))

    def cv(theta):
        value = float(cv_curve(x, y, np.exp(theta)[None, :], **options)[0])
        return value if np.isfinite(value) else 1e300

    found = optimize.minimize(cv, start, method="Nelder-Mead", options={"maxiter": 600})
    return float(found.fun)


@pytest.mark.parametrize("pooling", ["auto", "dense"])
def test_a_global_search_is_never_worse_than_a_local_one_from_the_rule(pooling):
    x, y = three_columns()
    found = select_bandwidth(x, y, pooling=pooling)
    local = local_search_from_the_rule(x, y)
    assert found.objective <= local * (1 + 1e-4)
    # statsmodels' cv_ls optimum on these data: [0.171, 0.402, 1.4e7], CV 0.0710
    assert found.objective <= 0.07099
    assert found.bandwidth[0] == pytest.approx(0.171, rel=0.02)
    assert found.bandwidth[1] == pytest.approx(0.402, rel=0.02)
    assert found.bandwidth[2] > 30  # the irrelevant column is smoothed out
    model = NadarayaWatson().fit(x, y)
    assert model.cv_score_ <= local * (1 + 1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_searches_in_several_columns_beat_their_local_search_on_other_draws(seed):
    x, y = three_columns(seed)
    assert select_bandwidth(x, y).objective <= local_search_from_the_rule(x, y) * (1 + 1e-4)
    got = select_bandwidth(x, y, degree=1).objective
    assert got <= local_search_from_the_rule(x, y, degree=1) * (1 + 1e-4)


@pytest.mark.parametrize(("degree", "kernel"), [(0, "gaussian"), (1, "gaussian"), (0, "tricube")])
def test_one_column_searches_reach_the_dense_grid_optimum(degree, kernel):
    rng = np.random.default_rng(5)
    x = np.sort(rng.uniform(0, 6, 150))
    y = np.sin(2 * x) + rng.normal(0, 0.3, x.size)
    found = select_bandwidth(x, y, degree=degree, kernel=kernel)
    grid = np.geomspace(0.01, 5, 800)
    curve = cv_curve(x, y, grid, degree=degree, kernel=kernel)
    assert found.objective <= np.min(curve[np.isfinite(curve)]) * (1 + 1e-9)


def far_outlier(columns=1, seed=4):
    """30 points on ``[0, 1]`` and one at ``10⁹``: the standard deviation ``2·10⁸``, the
    interquartile range ``0.5``."""
    rng = np.random.default_rng(seed)
    x = np.r_[rng.uniform(0, 1, (30, columns)), np.full((1, columns), 1e9)]
    x[-1, 1:] = rng.uniform(0, 1, columns - 1)  # (only the first column's point is far)
    return x, np.r_[np.sin(3 * x[:-1, 0]), 5.0]


@pytest.mark.parametrize("pooling", ["auto", "dense"])
@pytest.mark.parametrize("degree", [0, 1])
def test_a_far_outlier_does_not_hide_the_clusters_bandwidths(degree, pooling):
    """Local linear CV chose 2.6·10⁸ (CV 5·10¹⁵) where 0.015 gives 0.75: Scott's rule follows
    the outlier, and the grid of 0.05× to 5× it lay on a ridge. The grid now reaches
    down to the robust spread's rule as well; local constant CV is still lowest at large
    bandwidths for these data, and keeps them."""
    x, y = far_outlier()
    found = select_bandwidth(x, y, degree=degree, pooling=pooling)
    curve = cv_curve(x, y, np.geomspace(1e-4, 1e10, 700), degree=degree)
    # (the compiled search refines in float32 first, then stops at its Newton steps' 1e-7)
    assert found.objective <= np.min(curve) * (1 + (1e-9 if pooling == "auto" else 1e-6))
    assert cv_curve(x, y, found.bandwidth[None], degree=degree)[0] == pytest.approx(
        found.objective, rel=1e-9
    )
    assert len(found.grid[0]) == len(found.grid[1]) > 16  # the grid's steps below
    assert np.allclose(np.diff(np.log(found.grid[0])), np.log(found.grid[0][1] / found.grid[0][0]))


def test_only_a_far_outlier_extends_the_grid():
    from attnpool.bandwidth.grid import GRID, multipliers, steps_below

    rng = np.random.default_rng(0)
    for ordinary in (rng.normal(size=(500, 2)), rng.lognormal(0, 1, (500, 1)),
                     np.round(rng.uniform(0, 3, (200, 1)))):  # fmt: skip
        assert steps_below(ordinary, range(ordinary.shape[1])) == 0
    assert multipliers(len(GRID)) is GRID
    x = far_outlier(columns=2)[0]
    below = steps_below(x, [0, 1])
    assert steps_below(x, [1]) == 0 and below > 0
    # down to 0.05× the rule of the robust spread (the smaller of the quartiles' and the
    # spacing's: 0.4 × the distinct values × their median gap), in the grid's steps
    values = np.unique(x[:, 0])
    robust = min(np.subtract(*np.percentile(x[:, 0], [75, 25])) / 1.349,
                 0.4 * values.size * np.median(np.diff(values)))  # fmt: skip
    ratio = np.std(x[:, 0], ddof=1) / robust
    grid = multipliers(len(GRID) + below)
    assert grid[0] <= GRID[0] / ratio < grid[1] and np.allclose(grid[below:], GRID, rtol=1e-15)


def test_a_far_outlier_in_a_large_sample_is_searched_exactly():
    """1100 rows and weights: the planner's binned search, whose grid cannot resolve the
    cluster's bandwidths beside 10⁹ (it asked for 80 GB); and the float32 coarse search,
    which holds the cluster as one point there. ``pooling="binned"`` itself searches the
    bandwidths its grid resolves."""
    rng = np.random.default_rng(3)
    cluster = np.sort(rng.uniform(0, 1, 1100))
    x, y = np.r_[cluster, 1e9], np.r_[np.sin(12 * cluster) + rng.normal(0, 0.1, 1100), 0.3]
    weights = np.r_[np.ones(1100), 2.0]
    found = select_bandwidth(x, y, weights=weights)
    curve = cv_curve(x, y, np.geomspace(1e-3, 1, 200), weights=weights)
    assert found.objective <= np.min(curve) * (1 + 1e-7)
    binned = select_bandwidth(x, y, pooling="binned")
    assert binned.bandwidth[0] > 1e3 and len(binned.grid[0]) >= 16


def test_a_far_outlier_in_one_of_two_columns_and_in_a_density():
    x, y = far_outlier(columns=2)
    found = LocalLinear().fit(x, y)
    line = np.geomspace(1e-3, 1e3, 61)
    pairs = np.stack(np.meshgrid(line, line), axis=-1).reshape(-1, 2)
    assert found.cv_score_ <= np.min(cv_curve(x, y, pairs, degree=1)) * (1 + 1e-9)
    sample = far_outlier()[0]
    density = select_density_bandwidth(sample, method="cv_ls")
    curve = [least_squares_criterion(sample, np.array([h]), "gaussian", None, None)
             for h in np.geomspace(1e-3, 1e9, 241)]  # fmt: skip
    assert density.objective <= np.min(curve) + 1e-9 * abs(np.min(curve))


def recorded_mixture(seed=0, step=1.0):
    """A two-mode sample recorded to ``step`` (waiting times in whole minutes)."""
    rng = np.random.default_rng(seed)
    x = np.r_[rng.normal(54, 6, 100), rng.normal(80, 6, 172)]
    return np.round(x / step) * step


def test_resolution_is_the_step_of_tied_values_only():
    x = recorded_mixture()
    assert resolution(x[:, None])[0] == 1.0
    assert bandwidth_floor(x[:, None])[0] == 0.5
    continuous = np.random.default_rng(1).normal(size=(50, 2))
    np.testing.assert_array_equal(resolution(continuous), [0.0, 0.0])


@pytest.mark.parametrize("method", ["cv_ls", "cv_ml"])
def test_density_searches_on_recorded_values_stop_at_a_local_optimum(method):
    x = recorded_mixture()
    # the criteria fall (least squares) or wander (likelihood) without end below 1
    criterion = (
        (lambda h: least_squares_criterion(x[:, None], [h]))
        if method == "cv_ls"
        else (lambda h: -np.mean(loo_log_density(x[:, None], [h], "gaussian")))
    )
    if method == "cv_ls":
        assert criterion(1e-4) < criterion(2.5) - 10
    found = select_density_bandwidth(x, method=method)
    h = float(found.bandwidth[0])
    assert 1.0 < h < 8.0
    # a local minimum of the criterion, the best one above the floor on a dense grid
    grid = np.geomspace(0.5, 30, 400)
    values = np.array([criterion(g) for g in grid])
    assert found.objective <= np.min(values) + 1e-9 * abs(np.min(values))
    assert criterion(h * 0.97) >= found.objective and criterion(h * 1.03) >= found.objective


def test_faithful_waiting_least_squares_equals_r_ks_hlscv():
    # R: ks::hlscv(faithful$waiting) = 2.64 (the criterion's local minimum; below the
    # resolution of whole minutes it falls to −∞). faithful$waiting from R's datasets.
    waiting = np.array(FAITHFUL_WAITING, float)
    found = select_density_bandwidth(waiting, method="cv_ls")
    assert found.bandwidth[0] == pytest.approx(2.64, abs=0.01)


def test_a_criterion_still_falling_at_the_floor_warns():
    # a sample of few values, many ties: least squares falls all the way to the floor
    rng = np.random.default_rng(3)
    x = np.r_[np.zeros(40), rng.integers(-30, 30, 60).astype(float) * 1.2]
    with pytest.warns(TiedDataWarning, match="search's floor, not an optimum"):
        found = select_density_bandwidth(x, method="cv_ls")
    assert found.bandwidth[0] >= bandwidth_floor(x[:, None])[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        select_density_bandwidth(recorded_mixture(), method="cv_ls")  # an interior optimum


def test_isj_on_recorded_values_stays_above_the_floor_or_says_why():
    x = recorded_mixture(step=0.1 * 6)
    assert isj_bandwidth(x) >= bandwidth_floor(x[:, None])[0]
    atoms = np.r_[np.full(60, 2.0), np.full(140, 4.0), np.linspace(1.6, 5.1, 99).round(2)]
    try:
        h = isj_bandwidth(atoms)
    except ValueError as error:
        assert "half the resolution of their tied values" in str(error)
    else:
        assert h >= bandwidth_floor(atoms[:, None])[0]


def brute_weighted_loo(x, y, w, h, degree):
    """Weighted leave-one-out CV of a local constant or linear Gaussian fit: each row left
    out whole, the criterion ``Σ w_i r_i² / Σ w_i`` (NumPy, row by row)."""
    residuals = np.empty(x.size)
    for i in range(x.size):
        others = np.arange(x.size) != i
        k = w[others] * np.exp(-0.5 * ((x[others] - x[i]) / h) ** 2)
        design = np.ones((others.sum(), 1))
        if degree == 1:
            design = np.c_[design, x[others] - x[i]]
        root = np.sqrt(k)[:, None]
        beta = np.linalg.lstsq(design * root, y[others] * root[:, 0], rcond=None)[0]
        residuals[i] = y[i] - beta[0]
    return float(w @ residuals**2 / w.sum())


@pytest.mark.parametrize("degree", [0, 1])
def test_weighted_cv_leaves_the_whole_row_out(degree):
    rng = np.random.default_rng(7)
    x = np.sort(rng.uniform(0, 3, 60))
    y = np.exp(np.sin(x)) + rng.exponential(0.3, x.size)
    censored = rng.uniform(size=x.size) < 0.3
    w = censoring_weights(y, censored)
    for h in (0.05, 0.2, 0.6):
        got = cv_curve(x, y, [h], degree=degree, weights=w)[0]
        assert got == pytest.approx(brute_weighted_loo(x, y, w, h, degree), rel=1e-10)
    # the guide's censoring recipe: a bandwidth of the data's scale, not one that interpolates
    model = (LocalLinear if degree else NadarayaWatson)().fit(x[:, None], y, sample_weight=w)
    grid = np.geomspace(0.02, 3, 200)
    curve = [brute_weighted_loo(x, y, w, h, degree) for h in grid]
    assert model.bandwidth_[0] > 0.05
    assert model.cv_score_ <= min(curve) * (1 + 1e-6)


@pytest.mark.parametrize("estimator", [NadarayaWatson, LocalLinear])
def test_equal_weights_and_repeated_rows_select_what_the_plain_sample_selects(estimator):
    rng = np.random.default_rng(8)
    x = rng.uniform(0, 4, (70, 1))
    y = np.sin(2 * x[:, 0]) + rng.normal(0, 0.25, 70)
    plain = estimator().fit(x, y)
    twice = estimator().fit(x, y, sample_weight=np.full(70, 2.0))
    repeated = estimator().fit(np.r_[x, x], np.r_[y, y])
    for other in (twice, repeated):
        np.testing.assert_allclose(other.bandwidth_, plain.bandwidth_, rtol=1e-6)
        assert other.cv_score_ == pytest.approx(plain.cv_score_, rel=1e-9)
    # integer weights select what the repeated rows select (scikit-learn's check)
    counts = rng.integers(1, 4, 70)
    weighted = estimator().fit(x, y, sample_weight=counts.astype(float))
    rows = np.repeat(np.arange(70), counts)
    copies = estimator().fit(x[rows], y[rows])
    np.testing.assert_allclose(weighted.bandwidth_, copies.bandwidth_, rtol=1e-6)
    np.testing.assert_allclose(weighted.predict(x[:5]), copies.predict(x[:5]), rtol=1e-9)


# R's datasets::faithful$waiting (Azzalini & Bowman, 1990), 272 eruptions of Old Faithful.
FAITHFUL_WAITING = [
    int(v)
    for v in """
79 54 74 62 85 55 88 85 51 85 54 84 78 47 83 52 62 84 52 79 51 47 78 69 74 83 55 76
78 79 73 77 66 80 74 52 48 80 59 90 80 58 84 58 73 83 64 53 82 59 75 90 54 80 54 83
71 64 77 81 59 84 48 82 60 92 78 78 65 73 82 56 79 71 62 76 60 78 76 83 75 82 70 65
73 88 76 80 48 86 60 90 50 78 63 72 84 75 51 82 62 88 49 83 81 47 84 52 86 81 75 59
89 79 59 81 50 85 59 87 53 69 77 56 88 81 45 82 55 90 45 83 56 89 46 82 51 86 53 79
81 60 82 77 76 59 80 49 96 53 77 77 65 81 71 70 81 93 53 89 45 86 58 78 66 76 63 88
52 93 49 57 77 68 81 81 73 50 85 74 55 77 83 83 51 78 84 46 83 55 81 57 76 84 77 81
87 77 51 78 60 82 91 53 78 46 77 84 49 83 71 80 49 75 64 76 53 94 55 76 50 82 54 75
78 79 78 78 70 79 70 54 86 50 90 54 54 77 79 64 75 47 86 63 85 82 57 82 67 74 54 83
73 73 88 80 71 83 56 79 78 84 58 83 43 60 75 81 46 90 46 74
""".split()
]


@pytest.mark.parametrize("d, degree, method", [(1, 0, "cv"), (3, 1, "cv"), (2, 0, "aicc")])
def test_a_search_does_not_depend_on_the_rows_order(d, degree, method):
    # rows are searched in their sorted order: a flat criterion left the optimiser's
    # stopping point (1.8e-4 of a bandwidth in 30 columns) to the summation's order
    rng = np.random.default_rng(12)
    x = rng.uniform(0, 3, (70, d))
    y = np.sin(x.sum(axis=1)) + rng.normal(0, 0.2, 70)
    w = rng.uniform(0.5, 2.0, 70)
    shuffled = rng.permutation(70)
    for weights in (None, w):
        moved = None if weights is None else weights[shuffled]
        found = select_bandwidth(x, y, weights=weights, degree=degree, method=method)
        again = select_bandwidth(x[shuffled], y[shuffled], weights=moved, degree=degree,
                                 method=method)  # fmt: skip
        np.testing.assert_array_equal(again.bandwidth, found.bandwidth)
        assert again.objective == found.objective


def test_density_conditional_and_pair_fit_searches_do_not_depend_on_the_rows_order():
    from attnpool import NadarayaWatson, select_conditional_bandwidth, select_density_bandwidth

    rng = np.random.default_rng(13)
    x = rng.uniform(0, 3, (70, 2))
    y = np.sin(x.sum(axis=1)) + rng.normal(0, 0.2, 70)
    shuffled = rng.permutation(70)
    searches = [
        lambda x, y: select_density_bandwidth(x).bandwidth,
        lambda x, y: select_density_bandwidth(x, method="cv_ls").bandwidth,
        lambda x, y: select_conditional_bandwidth(x, y).bandwidth,
        lambda x, y: NadarayaWatson("gaussian-order4").fit(x, y).bandwidth_,
    ]
    for search in searches:  # (2e-8 to 4e-8 apart before, the optimiser's stopping point)
        np.testing.assert_array_equal(search(x[shuffled], y[shuffled]), search(x, y))


def test_scikit_learns_weights_check_holds_under_cross_validation():
    # integer weights against removed or repeated rows, each fit choosing its bandwidth by
    # CV (local linear's designs are singular on the check's data: its equivalence is
    # test_equal_weights_and_repeated_rows_select_what_the_plain_sample_selects)
    from sklearn.utils.estimator_checks import check_sample_weight_equivalence_on_dense_data

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Estimator .* does not inherit from")
        check_sample_weight_equivalence_on_dense_data("NadarayaWatson", NadarayaWatson())


def test_aicc_with_weights_counts_rows_and_never_rewards_interpolation():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 4, 60)
    y = np.sin(2 * x) + rng.normal(0, 0.3, 60)
    plain = select_bandwidth(x, y, method="aicc")
    doubled = select_bandwidth(x, y, method="aicc", weights=np.full(60, 2.0))
    np.testing.assert_allclose(doubled.bandwidth, plain.bandwidth, rtol=1e-8)
    assert doubled.objective == pytest.approx(plain.objective, rel=1e-10)
    # interpolation (tr H = the rows) is undefined, with weights as without
    for w in (None, np.full(60, 2.0), rng.uniform(0.5, 3.0, 60)):
        assert np.isinf(aicc_curve(x, y, [1e-4], weights=w)[0])
    scaled = select_bandwidth(x, y, method="aicc", weights=7.5 * np.arange(1, 61) / 60)
    relative = select_bandwidth(x, y, method="aicc", weights=np.arange(1, 61) / 60)
    np.testing.assert_allclose(scaled.bandwidth, relative.bandwidth, rtol=1e-8)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        (np.full(20, 0.05), "summing to 1, which is less than two"),
        (np.r_[-1.0, np.ones(19)], "expected finite non-negative weights"),
        (np.ones(19), r"shape \(20,\); received shape \(19,\)"),
    ],
)
def test_rules_of_thumb_and_isj_name_bad_weights(weights, message):
    x = np.random.default_rng(0).normal(size=20)
    with pytest.raises(ValueError, match=rf"weights: .*{message}"):
        rule_of_thumb(x, weights=weights)
    if "summing" not in message:
        with pytest.raises(ValueError, match=rf"weights: .*{message}"):
            isj_bandwidth(x, weights)
    np.testing.assert_allclose(rule_of_thumb(x, weights=np.ones((20, 1))), rule_of_thumb(x))


def test_the_default_bandwidth_is_scotts_rule_of_the_data():
    x = np.random.default_rng(3).normal(0, 5, (200, 2))
    model = KernelDensity().fit(x)
    np.testing.assert_allclose(model.bandwidth_, rule_of_thumb(x))
    assert KernelDensity().get_params()["bandwidth"] == "scott"


@pytest.mark.parametrize("degree", [0, 1])
def test_large_one_column_searches_with_weights_or_repeats_are_exact(degree):
    # weights, and repeated rows merged into weights, select what the exact engines do
    rng = np.random.default_rng(9)
    x = rng.uniform(0, 5, 3000)
    y = np.sin(x) + rng.normal(0, 0.3, x.size)
    rows = np.r_[np.arange(3000), np.arange(300)]  # 10 % of the rows twice
    repeated = select_bandwidth(x[rows], y[rows], degree=degree)
    counts = np.bincount(rows, minlength=3000).astype(float)
    weighted = select_bandwidth(x, y, degree=degree, weights=counts)
    exact = select_bandwidth(x, y, degree=degree, weights=counts, pooling="dense")
    np.testing.assert_allclose(repeated.bandwidth, weighted.bandwidth, rtol=1e-9)
    np.testing.assert_allclose(weighted.bandwidth, exact.bandwidth, rtol=1e-4)
    assert weighted.exact and weighted.objective == pytest.approx(exact.objective, rel=1e-8)
    grid = np.geomspace(0.5, 2, 41) * weighted.bandwidth[0]
    curve = cv_curve(x, y, grid, degree=degree, weights=counts)
    assert weighted.objective <= np.min(curve) * (1 + 1e-8)
