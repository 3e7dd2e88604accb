"""Conditional densities and distributions of mixed data: statsmodels'
``KDEMultivariateConditional`` at the same bandwidths, its criteria, R np's published
bandwidths and values (quoted in statsmodels' ``test_kernel_density.py``, at its
tolerances), and normalisation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from statsmodels.nonparametric.kernel_density import KDEMultivariateConditional

from attnpool import (
    ConditionalDensity,
    conditional_cdf,
    conditional_density,
    select_conditional_bandwidth,
)
from attnpool.density.conditional import conditional_log_density
from attnpool.density.conditional_selection import conditional_criterion
from sklearn_checks import scikit_learn_checks


@pytest.fixture(scope="module")
def italy():
    """R np's Italy data (gdp and year, the first 50 rows) and oecdpanel's growth, as
    statsmodels' tests hold them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
        from statsmodels.nonparametric.tests.test_kernel_density import KDETestBase
    base = KDETestBase()
    base.setup_method()
    return {name: np.asarray(getattr(base, name), float).reshape(-1)
            for name in ("Italy_gdp", "Italy_year", "growth")}  # fmt: skip


def _draw(var_type: str, n: int, rng) -> np.ndarray:
    return np.column_stack([rng.normal(size=n) if t == "c" else rng.integers(0, 4, n).astype(float)
                            for t in var_type])  # fmt: skip


@pytest.mark.parametrize(("y_type", "x_type"), [("c", "o"), ("o", "c"), ("u", "cu"), ("cc", "c")])
def test_equal_to_statsmodels(y_type, x_type):
    rng = np.random.default_rng(len(x_type + y_type))
    x, y = _draw(x_type, 60, rng), _draw(y_type, 60, rng)
    hx = np.array([0.7 if t == "c" else 0.3 for t in x_type])
    hy = np.array([0.5 if t == "c" else 0.2 for t in y_type])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        reference = KDEMultivariateConditional(
            endog=list(y.T), exog=list(x.T), dep_type=y_type, indep_type=x_type,
            bw=np.r_[hy, hx],
        )  # fmt: skip
    options = {"bandwidth": hx, "y_bandwidth": hy, "x_var_type": x_type, "y_var_type": y_type}
    qx, qy = x[:12], y[:12]
    assert conditional_density(x, y, qx, qy, **options) == pytest.approx(
        reference.pdf(endog_predict=qy, exog_predict=qx), rel=1e-10
    )
    assert conditional_cdf(x, y, qx, qy, **options) == pytest.approx(
        reference.cdf(endog_predict=qy, exog_predict=qx), rel=1e-10
    )
    options = {"x_var_type": x_type, "y_var_type": y_type}
    ml = conditional_criterion(x, y, hx, hy, method="cv_ml", **options)
    assert ml * len(x) == pytest.approx(reference.loo_likelihood(np.r_[hy, hx], np.log), rel=1e-12)
    if "o" not in y_type:  # statsmodels' Wang–van Ryzin convolution differs (levels of i only)
        ls = conditional_criterion(x, y, hx, hy, method="cv_ls", **options)
        assert ls == pytest.approx(reference.imse(np.r_[hy, hx]), rel=1e-10)


def test_r_np_bandwidths_densities_and_distributions(italy):
    gdp, year, growth = italy["Italy_gdp"], italy["Italy_year"][:, None], italy["growth"]
    # npcdensbw(gdp ~ ordered(year), bwmethod = "cv.ls"): y's 1.6448, x's 0.2317373
    found = select_conditional_bandwidth(year, gdp, method="cv_ls", x_var_type="o")
    assert found.bandwidth == pytest.approx([0.2317373, 1.6448], abs=1e-3)
    options = {"bandwidth": found.bandwidth[:1], "y_bandwidth": found.bandwidth[1:],
               "x_var_type": "o"}  # fmt: skip
    expected = [0.08469226, 0.01737731, 0.05679909, 0.09744726, 0.15086674]
    assert conditional_density(year, gdp, year[:5], gdp[:5], **options) == pytest.approx(
        expected, abs=1e-3
    )
    expected = [0.8118257, 0.9724863, 0.8843773, 0.7720359, 0.4361867]
    assert conditional_cdf(year, gdp, year[:5], gdp[:5], **options) == pytest.approx(
        expected, abs=1e-3
    )
    # npcdensbw(gdp ~ growth, bwmethod = "cv.ml"): y's 0.5341164, x's 0.04510836
    found = select_conditional_bandwidth(growth[:, None], gdp, method="cv_ml")
    assert found.bandwidth == pytest.approx([0.04510836, 0.5341164], abs=1e-3)
    found = select_conditional_bandwidth(growth[:, None], gdp, method="normal_reference")
    assert found.bandwidth == pytest.approx([0.01535401, 1.283532], abs=1e-1)
    expected = [0.81304920, 0.95046942, 0.86878727, 0.71961748, 0.38685423]
    h, b = found.bandwidth[:1], found.bandwidth[1:]
    got = conditional_cdf(growth[:, None], gdp, growth[:5, None], gdp[:5], bandwidth=h,
                          y_bandwidth=b)  # fmt: skip
    assert got == pytest.approx(expected, abs=1e-3)
    expected = [11.97964, 12.73290, 13.23037, 13.46438, 12.22779]
    got = conditional_density(gdp[:, None], growth, gdp[:5, None], growth[:5],
                              bandwidth=12095254.7, y_bandwidth=0.010043)  # fmt: skip
    assert got == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize("method", ["cv_ml", "cv_ls"])
def test_selection_reaches_the_criterion_s_minimum(method):
    rng = np.random.default_rng(5)
    x = np.c_[rng.normal(size=80), rng.integers(0, 3, 80)]
    y = x[:, 0] + 0.5 * x[:, 1] + rng.normal(0, 0.4, 80)
    found = select_conditional_bandwidth(x, y, method=method, x_var_type="cu")

    def criterion(h):
        return conditional_criterion(x, y, h[:2], h[2:], method=method, x_var_type="cu")

    assert found.objective == pytest.approx(criterion(found.bandwidth), rel=1e-12)
    for column in range(3):
        for factor in np.geomspace(0.5, 2.0, 9):
            h = found.bandwidth.copy()
            h[column] = min(h[column] * factor, 0.66)
            assert found.objective <= criterion(h) + 1e-10 * abs(found.objective)


def test_conditional_densities_integrate_and_sum_to_one():
    rng = np.random.default_rng(9)
    x = np.c_[rng.normal(size=50), rng.integers(0, 3, 50)]
    y_cont = rng.normal(size=50)
    grid = np.linspace(-9, 9, 7201)
    options = {"bandwidth": [0.5, 0.3], "y_bandwidth": 0.4, "x_var_type": "cu"}
    for query in x[:3]:
        queries = np.tile(query, (grid.size, 1))
        f = conditional_density(x, y_cont, queries, grid, **options)
        assert np.trapezoid(f, grid) == pytest.approx(1.0, abs=1e-9)
        f = conditional_cdf(x, y_cont, queries, grid, **options)
        assert np.all(np.diff(f) >= 0) and f[0] < 1e-12 and f[-1] == pytest.approx(1.0)
    y_cat = rng.integers(0, 4, 50).astype(float)
    levels = np.unique(y_cat)
    for query in x[:3]:
        f = conditional_density(x, y_cat, np.tile(query, (4, 1)), levels, bandwidth=[0.5, 0.3],
                                y_bandwidth=0.2, x_var_type="cu", y_var_type="u")  # fmt: skip
        assert np.sum(f) == pytest.approx(1.0, rel=1e-12)


def test_the_estimator():
    rng = np.random.default_rng(4)
    x = np.c_[rng.normal(size=70), rng.integers(0, 3, 70)]
    y = x[:, 0] + rng.normal(0, 0.5, 70)
    model = ConditionalDensity(x_var_type="cu").fit(x, y)
    found = select_conditional_bandwidth(x, y, x_var_type="cu")
    assert np.r_[model.bandwidth_, model.y_bandwidth_] == pytest.approx(found.bandwidth)
    assert model.criterion_ == pytest.approx(found.objective)
    assert model.score(x, y) == pytest.approx(np.sum(np.log(model.pdf(x, y))), rel=1e-12)
    assert np.all((model.cdf(x, y) >= 0) & (model.cdf(x, y) <= 1))
    fixed = ConditionalDensity(bandwidth=[0.5, 0.2, 0.4], x_var_type="cu").fit(x, y)
    assert fixed.y_bandwidth_ == pytest.approx([0.4])
    with pytest.raises(ValueError, match=r"bandwidth: expected 3 numbers"):
        ConditionalDensity(bandwidth=[0.5, 0.4], x_var_type="cu").fit(x, y)
    with pytest.raises(ValueError, match="method: expected one of"):
        ConditionalDensity(bandwidth="aicc").fit(x, y)


@pytest.mark.parametrize("method", ["cv_ml", "normal_reference"])
def test_a_constant_column_is_named_by_its_argument(method):
    """A constant response was reported as ``x``'s column 1 (the joint sample's)."""
    rng = np.random.default_rng(5)
    x = np.c_[rng.normal(size=40), rng.integers(0, 3, 40)]
    y = rng.normal(size=40)
    with pytest.raises(ValueError, match=r"y: column\(s\) \[0\] are constant"):
        select_conditional_bandwidth(x, np.full(40, 2.0), method=method, x_var_type="cu")
    with pytest.raises(ValueError, match=r"x: column\(s\) \[0\] are constant"):
        select_conditional_bandwidth(np.c_[np.ones(40), x[:, 1]], y, method=method,
                                     x_var_type="cu")  # fmt: skip


def test_vanishing_x_bandwidths_take_the_nearest_key_limit():
    """At h = 1e-200 every x weight underflows; the estimate is its limit — y's kernel of
    the training point nearest x (ties shared by their categorical kernel) — not 0/0.
    A compact kernel that reaches no training point gives NaN with a warning."""
    from scipy import stats

    from attnpool import EmptyNeighbourhoodWarning

    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 1))
    y = x[:, 0] + rng.normal(size=200) * 0.5
    qx, qy = x[:5] + 0.01, y[:5]
    nearest = np.argmin(np.abs(qx - x[:, 0]), axis=1)
    limit = stats.norm.pdf(qy, y[nearest], 0.1)
    for x_var_type in (None, "c"):
        got = conditional_density(x, y, qx, qy, bandwidth=1e-200, y_bandwidth=0.1,
                                  x_var_type=x_var_type)  # fmt: skip
        np.testing.assert_allclose(got, limit, rtol=1e-12)
    got = conditional_cdf(x, y, qx, qy + 0.05, bandwidth=1e-200, y_bandwidth=0.1)
    np.testing.assert_allclose(got, stats.norm.cdf(qy + 0.05, y[nearest], 0.1), rtol=1e-12)
    mixed = np.c_[x, x > 0]
    got = conditional_density(mixed, y, np.c_[qx, qx > 0], qy, bandwidth=[1e-200, 0.3],
                              y_bandwidth=0.1, x_var_type="cu")  # fmt: skip
    np.testing.assert_allclose(got, limit, rtol=1e-12)
    with pytest.warns(EmptyNeighbourhoodWarning, match="5 of 5 queries have no training"):
        got = conditional_density(x, y, qx + 50, qy, bandwidth=0.1, y_bandwidth=0.1,
                                  kernel="epanechnikov-product")  # fmt: skip
    assert np.all(np.isnan(got))


@scikit_learn_checks(
    [ConditionalDensity(bandwidth="normal_reference")],
    # score_samples(X, y) scores pairs, not rows of X alone: these checks call it with X
    # only; the same properties on (X, y) are
    # test_scores_are_invariant_to_the_order_and_subsets_of_the_rows
    replaced={
        ("ConditionalDensity", "check_methods_sample_order_invariance"),
        ("ConditionalDensity", "check_methods_subset_invariance"),
        ("ConditionalDensity", "check_array_api_input"),
    },
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_scores_are_invariant_to_the_order_and_subsets_of_the_rows():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(40, 2)), rng.normal(size=40)
    model = ConditionalDensity(bandwidth="normal_reference").fit(x, y)
    queries, targets = rng.normal(size=(25, 2)), rng.normal(size=25)
    whole = model.score_samples(queries, targets)
    order = rng.permutation(25)
    np.testing.assert_allclose(model.score_samples(queries[order], targets[order]), whole[order])
    for part in (slice(0, 7), slice(7, 25)):
        np.testing.assert_allclose(model.score_samples(queries[part], targets[part]), whole[part])
    np.testing.assert_allclose(model.cdf(queries[order], targets[order]),
                               model.cdf(queries, targets)[order])  # fmt: skip
    with pytest.raises(ValueError, match="X has 3 features, but ConditionalDensity is expecting 2"):
        model.score(rng.normal(size=(5, 3)), rng.normal(size=5))


@pytest.mark.parametrize("bandwidth", [2.0**-30, 2.0**-20, 2.0**-8])
def test_small_x_bandwidths_keep_the_ratios_digits(bandwidth):
    """At h = 2^-30 the log densities are near −2^57: their difference kept none of the
    conditional's digits (1.0, where 0.297 was right), and beside x's log weights y's
    terms rounded away in the pooled form; at 2^-20, 3e-6 off. The textbook ratio, x's
    log weights about their largest, is exact on this dyadic grid."""
    from scipy import stats

    rng = np.random.default_rng(0)
    x = rng.integers(-5, 6, (60, 1)).astype(float)  # ties two ways from each half point
    y = rng.normal(size=60)
    qx, qy = np.array([[0.5], [2.25], [-3.0]]), np.array([0.0, 0.3, -0.2])
    log_w = -0.5 * ((qx - x[:, 0]) / bandwidth) ** 2
    w = np.exp(log_w - log_w.max(axis=1, keepdims=True))
    for got, terms in [
        (conditional_density(x, y, qx, qy, bandwidth=bandwidth, y_bandwidth=0.5),
         stats.norm.pdf(qy[:, None], y, 0.5)),
        (np.exp(conditional_log_density(x, y, qx, qy, bandwidth=bandwidth, y_bandwidth=0.5)),
         stats.norm.pdf(qy[:, None], y, 0.5)),
        (conditional_cdf(x, y, qx, qy, bandwidth=bandwidth, y_bandwidth=0.5),
         stats.norm.cdf(qy[:, None], y, 0.5)),
    ]:  # fmt: skip
        np.testing.assert_allclose(got, (w * terms).sum(axis=1) / w.sum(axis=1), rtol=1e-13)


@pytest.mark.parametrize("dx", [1, 2])
def test_conditional_density_equals_statsmodels_and_integrates_to_one(dx):
    from statsmodels.nonparametric.kernel_density import KDEMultivariateConditional

    from attnpool import conditional_density

    rng = np.random.default_rng(80 + dx)
    x = rng.normal(size=(150, dx))
    y = 0.8 * x.sum(axis=1) + rng.normal(0, 0.5, 150)
    qx, qy = rng.normal(size=(20, dx)), rng.normal(size=20)
    h, b = [0.5, 0.7][:dx], 0.3
    model = KDEMultivariateConditional(endog=[y], exog=list(x.T), dep_type="c",
                                       indep_type="c" * dx, bw=[b, *h])  # fmt: skip
    want = model.pdf(endog_predict=qy, exog_predict=qx)
    got = conditional_density(x, y, qx, qy, bandwidth=h, y_bandwidth=b)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    grid = np.linspace(-9, 9, 9001)
    for kernel in ("gaussian", "epanechnikov-product"):
        f = conditional_density(x, y, np.tile(qx[:1], (9001, 1)), grid, kernel=kernel,
                                bandwidth=h, y_bandwidth=b)  # fmt: skip
        np.testing.assert_allclose(np.trapezoid(f, grid), 1.0, rtol=1e-5)
    # a radial kernel acts on x's columns, and y's kernel on y's, as with categorical
    # columns or in conditional_cdf (refused here once, the joint kernel no product)
    u = np.linalg.norm((qx[:, None, :] - x[None]) / 1.5, axis=2)
    weights = np.clip(1.0 - u**2, 0.0, None)
    terms = 0.75 * np.clip(1.0 - (qy[:, None] - y) ** 2, 0.0, None)
    assert np.all(weights.sum(axis=1) > 0)
    got = conditional_density(x, y, qx, qy, kernel="epanechnikov", bandwidth=1.5, y_bandwidth=1.0)
    np.testing.assert_allclose(got, (weights * terms).sum(axis=1) / weights.sum(axis=1), rtol=1e-12)
