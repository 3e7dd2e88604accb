"""Bandwidth selection: rules of thumb, leave-one-out CV and AICc, against statsmodels,
brute-force refits and exhaustive grids."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from statsmodels.nonparametric.kernel_regression import KernelReg

from attnpool import cv_curve, local_regression, rule_of_thumb, select_bandwidth
from attnpool.bandwidth.search import SMOOTHED_OUT
from attnpool.engines.local_fits import loo_residuals
from attnpool.regression import model_for
from regression_data import continuous_data, mixed_data


@pytest.fixture(autouse=True)
def _quiet_statsmodels():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        yield


@pytest.mark.parametrize(
    ("reg_type", "method", "sm_bw"),
    [("lc", "cv", "cv_ls"), ("ll", "cv", "cv_ls"), ("lc", "aicc", "aic")],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_selected_bandwidth_is_at_least_as_good_as_statsmodels(reg_type, method, sm_bw, seed):
    x, y = continuous_data(seed, n=80, d=1)
    reference = KernelReg(y, x, "c", reg_type=reg_type, bw=sm_bw)
    if method == "cv":
        theirs = float(np.squeeze(reference.cv_loo(reference.bw, reference.est[reg_type])))
    else:
        theirs = float(np.squeeze(reference.aic_hurvich(reference.bw)))
    ours = select_bandwidth(x, y, method=method, degree=0 if reg_type == "lc" else 1)
    assert ours.objective <= theirs + 1e-12 * abs(theirs)
    np.testing.assert_allclose(ours.bandwidth, reference.bw, rtol=1e-2)


def test_cv_search_finds_the_global_minimum():
    # Two well-separated regimes give the CV curve two local minima; a search that
    # starts at the rule of thumb and walks downhill (statsmodels' fmin) can stop in
    # the wrong one. The grid + gradient search must reach the curve's lowest value.
    x, y = continuous_data(7, n=120, d=1)
    candidates = np.geomspace(0.01, 5, 400)
    curve = cv_curve(x, y, candidates)
    selection = select_bandwidth(x, y, method="cv")
    assert selection.objective <= np.min(curve[np.isfinite(curve)]) + 1e-12
    np.testing.assert_allclose(
        cv_curve(x, y, selection.bandwidth[None, :]), [selection.objective], rtol=1e-9
    )


def test_cv_curve_matches_brute_force_refits():
    x, y = continuous_data(8, n=30, d=1)
    for h in [0.2, 0.7]:
        brute = np.mean(
            [
                (
                    y[i]
                    - local_regression(
                        np.delete(x, i, 0), np.delete(y, i), x[i : i + 1], bandwidth=h
                    )[0]
                )
                ** 2
                for i in range(len(y))
            ]
        )
        np.testing.assert_allclose(cv_curve(x, y, [h]), [brute], rtol=1e-10)


def test_cv_with_compact_kernel_scores_empty_neighbourhoods_as_inf():
    x = np.array([0.0, 0.1, 0.2, 5.0, 5.1, 5.2])
    y = np.arange(6.0)
    assert cv_curve(x, y, [0.05], kernel="epanechnikov")[0] == np.inf
    assert np.isfinite(cv_curve(x, y, [1.0], kernel="epanechnikov")[0])


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "tricube", "laplacian"])
def test_selection_for_every_kernel_and_streamed(kernel):
    x, y = continuous_data(9, n=150, d=1)
    dense = select_bandwidth(x, y, kernel=kernel)
    streamed = select_bandwidth(x, y, kernel=kernel, block_size=32)
    np.testing.assert_allclose(streamed.objective, dense.objective, rtol=1e-9)
    assert np.isfinite(dense.objective)


def test_mixed_data_selection():
    x, y = mixed_data(10, n=80)
    selection = select_bandwidth(x, y, var_type="cou")
    assert (
        0 < selection.bandwidth[0]
        and 0 <= selection.bandwidth[1] < 1
        and 0 <= selection.bandwidth[2] < 1
    )
    assert np.isfinite(selection.objective)
    reference = KernelReg(y, x, "cou", reg_type="lc", bw=list(selection.bandwidth))
    expected = float(np.squeeze(reference.cv_loo(selection.bandwidth, reference.est["lc"])))
    np.testing.assert_allclose(selection.objective, expected, rtol=1e-9)


def test_rules_of_thumb():
    x, _ = continuous_data(11, n=200, d=2)
    sigma = x.std(axis=0, ddof=1)
    np.testing.assert_allclose(rule_of_thumb(x), 1.059 * sigma * 200 ** (-1 / 6))
    # a kernel's rule follows from the Gaussian's by the ratio of canonical bandwidths
    ratio = rule_of_thumb(x, kernel="epanechnikov") / rule_of_thumb(x)
    np.testing.assert_allclose(ratio, (15**0.2) / (1 / (2 * np.sqrt(np.pi))) ** 0.2, rtol=1e-12)
    assert np.all(rule_of_thumb(x, method="silverman") <= rule_of_thumb(x) * 0.9 / 1.059 + 1e-12)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        (
            {"method": "cv_ml"},
            r"method: expected one of 'cv', 'aicc', 'scott', 'silverman', 'dpill', 'cv_ls', 'aic'; "
            r"received 'cv_ml'",
        ),
        ({"var_type": "cx"}, r"var_type: expected a string of 1 letters"),
        (
            {"degree": 2},
            r"degree: expected 0 \(Nadaraya–Watson\) or 1 \(local linear\); received 2",
        ),
        ({"kernel": "dot"}, r"kernel: regression needs a distance kernel"),
    ],
)
def test_selection_errors(kwargs, pattern):
    x, y = continuous_data(12, n=20, d=1)
    with pytest.raises(ValueError, match=pattern):
        select_bandwidth(x, y, **kwargs)


def test_too_few_rows():
    with pytest.raises(
        ValueError, match="X: bandwidth selection needs at least 3 rows; received n_samples=2"
    ):
        select_bandwidth([0.0, 1.0], [1.0, 2.0])


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "laplacian"])
@pytest.mark.parametrize("degree", [0, 1])
def test_binned_loo_objective_matches_the_exact_one(kernel, degree):
    from attnpool.bandwidth.criteria import binned_loo_residuals
    from attnpool.methods import binned
    from attnpool.methods.binned_traced import BinnedPlan

    x, y = continuous_data(14, n=1500, d=1)
    model = model_for(x, kernel=kernel, degree=degree)
    grid = binned.grid_for(x[:, 0], 0.02)
    plan = BinnedPlan(grid, binned.reach_for(model.kernel, 2.0, grid))
    with jax.enable_x64(True):
        for h in [0.05, 0.2, 1.0]:
            args = (jnp.asarray(x), jnp.asarray(y)[:, None], jnp.asarray([h]), model)
            approximate = float(jnp.mean(binned_loo_residuals(*args, plan) ** 2))
            exact = float(jnp.mean(loo_residuals(*args) ** 2))
            np.testing.assert_allclose(approximate, exact, rtol=1e-4)  # 16+ nodes per bandwidth


@pytest.mark.parametrize("degree", [0, 1])
def test_binned_search_reaches_the_exact_minimum(degree):
    # asked for by name, the search runs on the binned objective; on evenly spread rows
    # the reported objective is exact and no candidate on a fine exact CV curve is lower
    x, y = continuous_data(15, n=1200, d=1)
    selection = select_bandwidth(x, y, degree=degree, pooling="binned")
    exact = cv_curve(x, y, selection.bandwidth[None, :], degree=degree)[0]
    np.testing.assert_allclose(selection.objective, exact, rtol=1e-12)
    around = cv_curve(x, y, selection.bandwidth[0] * np.geomspace(0.9, 1.1, 41), degree=degree)
    assert selection.objective <= around.min() * (1 + 1e-9)


@pytest.mark.parametrize(("kernel", "degree", "n", "seed", "around"), [
    ("gaussian", 1, 5000, 500_001, [0.0606, 0.04, 0.042, 0.043, 0.044, 0.046]),
    ("epanechnikov", 0, 1500, 5, np.geomspace(0.1, 1.0, 12)),
])  # fmt: skip
def test_default_searches_of_large_samples_are_exact(kernel, degree, n, seed, around):
    # from 1000 rows ``auto`` searched one column on a binned grid, whose leave-one-out
    # sums of the tails' isolated rows miss its tolerance: local linear's optimum 0.0606
    # where the exact criterion's is 0.0432 (0.091652 against 0.091483), and the
    # epanechnikov search an error ("undefined at the binned search's bandwidth")
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = np.sin(3 * x / x.std()) + rng.normal(0, 0.3, n)
    found = select_bandwidth(x, y, kernel=kernel, degree=degree)
    curve = cv_curve(x, y, np.asarray(around), kernel=kernel, degree=degree)
    assert found.exact and found.objective <= np.min(curve[np.isfinite(curve)]) * (1 + 1e-9)


def isolated_point(seed=2):
    """1500 points on [0, 1] and one at 3: beyond the kernel's reach on the binned grid at
    every bandwidth near the optimum."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, 1500)
    return np.r_[x, 3.0][:, None], np.r_[np.sin(8 * x) + rng.normal(0, 0.2, 1500), 1.0]


def test_a_binned_search_gives_an_isolated_point_its_nearest_neighbours_response():
    """The binned objective was undefined where a row had no other within the kernel's
    reach on the grid, so the search stayed above such bandwidths (0.0125, 36% off the
    exact search's 0.0196); the exact fit tends to the nearest other row's response as
    the far weights fall away, and the binned fit now takes that limit."""
    x, y = isolated_point()
    binned = select_bandwidth(x, y, pooling="binned")
    exact = select_bandwidth(x, y, pooling="dense")
    assert binned.bandwidth[0] == pytest.approx(exact.bandwidth[0], rel=1e-3)
    curve = cv_curve(x, y, np.geomspace(0.005, 1, 400))
    assert binned.objective <= np.min(curve) * (1 + 1e-7)


@pytest.mark.parametrize("kernel", ["biweight", "epanechnikov"])
def test_a_binned_search_whose_criterion_is_undefined_says_so(kernel):
    """A compact kernel leaves the isolated point no neighbour below a bandwidth of 2: the
    exact searches said the criterion is undefined; the binned one returned a bandwidth
    with an infinite objective."""
    x, y = isolated_point()
    with pytest.raises(ValueError, match="undefined at the binned search's bandwidth"):
        select_bandwidth(x, y, kernel=kernel, pooling="binned")
    with pytest.raises(ValueError, match="undefined at every candidate"):
        select_bandwidth(x, y, kernel=kernel, pooling="dense")


@pytest.mark.parametrize("degree", [0, 1])
@pytest.mark.parametrize("d", [2, 3])
def test_the_search_in_several_columns_reaches_the_minimum_of_a_grid_around_it(d, degree):
    # the host's search (L-BFGS on forward differences) against an exhaustive grid
    # of ±5% about its answer in every column: no grid point is lower
    x, y = continuous_data(16, n=300, d=d)
    selection = select_bandwidth(x, y, degree=degree)
    steps = np.array(np.meshgrid(*[np.geomspace(0.95, 1.05, 5)] * d)).reshape(d, -1).T
    around = cv_curve(x, y, selection.bandwidth * steps, degree=degree)
    assert selection.objective <= around.min() * (1 + 1e-10)
    exact = cv_curve(x, y, selection.bandwidth[None], degree=degree)[0]
    np.testing.assert_allclose(selection.objective, exact, rtol=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_column_local_linear_fits_exactly_is_smoothed_out_at_no_cost(seed):
    # y linear in x₁: local linear's CV keeps falling as h₁ → ∞ (for some samples the
    # noise makes a finite bandwidth best). Either way no large finite bandwidth beats
    # the search, and a smoothed-out column gets SMOOTHED_OUT × its half-width.
    x, y = continuous_data(seed, n=300, d=2)
    selection = select_bandwidth(x, y, degree=1)
    wide = np.column_stack([np.full(13, selection.bandwidth[0]), np.geomspace(1, 1e7, 13)])
    assert selection.objective <= cv_curve(x, y, wide, degree=1).min() * (1 + 1e-10)
    if selection.bandwidth[1] > 1e3:
        half = np.ptp(x[:, 1]) / 2
        np.testing.assert_allclose(selection.bandwidth[1], SMOOTHED_OUT * half, rtol=1e-14)


@pytest.mark.parametrize("factor", [3.0, 0.7, 1e-5])
def test_a_smoothed_out_column_scales_with_its_column(factor):
    # scale equivariance holds for the limit too: a column × c, its bandwidth × c, by
    # any factor (the search's units are powers of two; the limit is in half-widths)
    x, y = continuous_data(0, n=300, d=2)
    plain = select_bandwidth(x, y, degree=1)
    scaled = select_bandwidth(x * [1.0, factor], y, degree=1)
    assert plain.bandwidth[1] > 1e5 * np.ptp(x[:, 1])  # smoothed out
    np.testing.assert_allclose(scaled.bandwidth, plain.bandwidth * [1.0, factor], rtol=1e-7)
    np.testing.assert_allclose(scaled.objective, plain.objective, rtol=1e-12)


def test_a_nearly_flat_objective_takes_no_step_to_overflowing_bandwidths():
    # two columns that do not matter: the search's quasi-Newton steps along them once
    # ran to θ ~ ±1000 (bandwidths 0 and inf, with warnings from NumPy)
    rng = np.random.default_rng(38)
    x = rng.uniform(0, 5, (450, 4))
    y = np.exp(-x[:, 0]) + 0.1 * x[:, 1] ** 2 + rng.normal(0, 0.3, 450)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        selection = select_bandwidth(x, y, degree=1)
    assert np.all(np.isfinite(selection.bandwidth))
    exact = cv_curve(x, y, selection.bandwidth[None], degree=1)[0]
    np.testing.assert_allclose(selection.objective, exact, rtol=1e-10)


def test_curves_evaluate_categorical_bandwidths_as_given():
    # a categorical λ near 0 (here the search's optimum, 9e-8) was evaluated at the search
    # start's clip, 1e-6 of its range: the curve disagreed with the search it plots
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 5, (60, 2))
    x[:, 1] = np.round(x[:, 1])
    # y far apart by category: λ → 0 pays (repeated rows no longer do: they are merged)
    y = np.sin(x[:, 0]) + 3 * np.cos(2 * x[:, 1]) + rng.normal(0, 0.1, 60)
    found = select_bandwidth(x, y, var_type="cu")
    assert found.bandwidth[1] < 1e-6  # below the search start's clip, 1e-6 × 5/6
    np.testing.assert_allclose(
        cv_curve(x, y, found.bandwidth[None], var_type="cu"), [found.objective], rtol=1e-10
    )
    # λ = 0 is a bandwidth: exact matching, each point predicted from its own category
    h = found.bandwidth[0]
    kernel = np.exp(-0.5 * ((x[:, None, 0] - x[None, :, 0]) / h) ** 2)
    kernel *= x[:, None, 1] == x[None, :, 1]
    np.fill_diagonal(kernel, 0.0)
    textbook = np.mean((y - kernel @ y / kernel.sum(axis=1)) ** 2)
    np.testing.assert_allclose(cv_curve(x, y, [[h, 0.0]], var_type="cu"), [textbook], rtol=1e-9)
    with pytest.raises(ValueError, match=r"λ in \(0, 1\) for categorical"):
        cv_curve(x, y, [[0.5, 1.2]], var_type="cu")


def test_a_search_reports_its_objective_evaluations():
    from attnpool.bandwidth.search import GRID, SearchLine, select_on_host

    calls = []

    def objective(theta):
        calls.append(theta)
        return float(np.sum((theta - np.log([0.3, 0.5])) ** 2))

    thetas = np.log(GRID[:, None] * np.array([[0.4, 0.4]]))
    found = select_on_host(objective, SearchLine(thetas), None)
    assert found.evaluations == len(calls) > len(GRID)
    np.testing.assert_allclose(found.bandwidth, [0.3, 0.5], rtol=1e-4)
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 5, (300, 2))
    y = np.sin(x[:, 0]) + rng.normal(0, 0.3, 300)
    assert select_bandwidth(x, y).evaluations > len(GRID)  # the C loop's host search
    assert select_bandwidth(x[:, :1], y, block_size=64).evaluations > len(GRID)  # compiled
    assert select_bandwidth(x, y, method="scott").evaluations == 0


@pytest.mark.parametrize("method", ["cv", "aicc"])
@pytest.mark.parametrize("d", [1, 2])
def test_a_constant_response_gets_the_rule_of_thumb_and_a_warning(method, d):
    """Every bandwidth fits a constant exactly: CV was 0 everywhere and the search went
    below its grid to 4e-6 (one column) or 6e-3 (two); AICc's log σ̂² was −∞ everywhere
    and the search raised. The rule of thumb, with a warning, and the criterion's value."""
    import attnpool

    x = np.random.default_rng(3).uniform(size=(120, d))
    warning = attnpool.bandwidth.ConstantResponseWarning
    with pytest.warns(warning, match=f"y: the response is constant: .* {method} criterion"):
        found = select_bandwidth(x, np.full(120, 2.5), method=method)
    np.testing.assert_allclose(found.bandwidth, rule_of_thumb(x), rtol=1e-12)
    assert found.method == method and found.objective == (0.0 if method == "cv" else -np.inf)
    for estimator in (attnpool.NadarayaWatson, attnpool.LocalLinear):
        with pytest.warns(warning, match="the response is constant"):
            model = estimator(bandwidth=method).fit(x, np.full(120, -7.0))
        np.testing.assert_allclose(model.predict(x[:5]), -7.0, rtol=1e-14)
    if method == "cv":  # the pair fits' searches: a higher-order kernel, neighbours
        with pytest.warns(warning, match="the rule of thumb is returned"):
            model = attnpool.NadarayaWatson(bandwidth="cv", kernel="gaussian-order4").fit(
                x, np.full(120, 3.0)
            )
        np.testing.assert_allclose(model.bandwidth_, rule_of_thumb(x), rtol=1e-12)
        with pytest.warns(warning, match="the largest number of neighbours is returned"):
            model = attnpool.NadarayaWatson(bandwidth="cv", bandwidth_type="adaptive_nn").fit(
                x, np.full(120, 3.0)
            )
        assert np.all(model.bandwidth_ == 119) and model.cv_score_ == 0.0


def test_the_selection_names_its_criterion_on_every_route():
    """AICc selected on the NumPy engine's route reported ``method='cv'``."""
    rng = np.random.default_rng(4)
    for n in (80, 3000):  # NumPy pairs; the compiled search
        x = rng.uniform(size=(n, 1))
        y = np.sin(6 * x[:, 0]) + rng.normal(0, 0.2, n)
        assert select_bandwidth(x, y, method="aicc").method == "aicc"
        assert select_bandwidth(x, y, method="cv").method == "cv"
