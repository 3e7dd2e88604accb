"""What a fitted regressor reports: R² as R's np and scikit-learn define it, the summary,
the AICc curve and the local-constant marginal effects — each against an independent
computation (the formula in NumPy, a brute-force hat matrix, statsmodels, finite
differences)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from attnpool import (
    EmptyNeighbourhoodWarning,
    LocalLinear,
    NadarayaWatson,
    aicc_curve,
    nadaraya_watson,
    select_bandwidth,
)
from attnpool.regression.summary import r_squared


@pytest.fixture(autouse=True)
def _quiet_statsmodels():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # statsmodels' own, about its RNG
        yield


KERNELS = {
    "gaussian": lambda u: np.exp(-0.5 * u**2),
    "epanechnikov": lambda u: np.clip(1 - u**2, 0, None),
}


def sample(seed=0, n=120, d=1):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 5, (n, d))
    y = np.sin(x).sum(axis=1) + rng.normal(0, 0.3, n)
    return x, y


def np_r_squared(y, fitted, centre):
    """R's np RSQfunc (Doksum & Samarov, 1995), centred on ``centre``."""
    numerator = np.sum((y - centre) * (fitted - centre)) ** 2
    return numerator / (np.sum((y - centre) ** 2) * np.sum((fitted - centre) ** 2))


def hat_matrix(x, h, kernel, degree):
    """The smoother matrix of a 1-D local constant or local linear fit, row by row."""
    n = x.shape[0]
    hat = np.empty((n, n))
    for i in range(n):
        w = KERNELS[kernel]((x - x[i]) / h)
        design = np.stack([np.ones(n), x - x[i]], axis=1)[:, : degree + 1]
        hat[i] = np.linalg.solve(design.T @ (w[:, None] * design), (design * w[:, None]).T)[0]
    return hat


def test_r_squared_is_nps_and_statsmodels_centres_on_the_fit():
    from statsmodels.nonparametric.kernel_regression import KernelReg

    x, y = sample()
    model = NadarayaWatson(bandwidth=0.4).fit(x, y)
    fitted = model.predict(x)
    np.testing.assert_allclose(model.r_squared_, np_r_squared(y, fitted, y.mean()), rtol=1e-12)
    reference = KernelReg(y, x, "c", reg_type="lc", bw=[0.4])
    np.testing.assert_allclose(reference.fit(x)[0], fitted, rtol=1e-10)
    # statsmodels' r_squared is the same statistic centred on the fitted values' mean
    np.testing.assert_allclose(
        reference.r_squared(), np_r_squared(y, fitted, fitted.mean()), rtol=1e-10
    )
    assert model.r_squared_ != pytest.approx(reference.r_squared(), rel=1e-9)


def test_r_squared_edges_and_outputs():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    assert r_squared(y, y)[0] == 1.0
    assert r_squared(y, np.full(4, 2.5))[0] == 0.0  # a constant fit
    assert r_squared(np.ones(4), np.ones(4))[0] == 1.0  # a constant target fitted exactly
    assert r_squared(np.ones(4), y)[0] == 0.0
    x, y = sample(1)
    two = LocalLinear(bandwidth=0.5).fit(x, np.c_[y, 2 * y + x[:, 0]])
    assert two.r_squared_.shape == (2,)
    one = LocalLinear(bandwidth=0.5).fit(x, 2 * y + x[:, 0])
    np.testing.assert_allclose(two.r_squared_[1], one.r_squared_, rtol=1e-12)


@pytest.mark.parametrize("bandwidth", ["cv", "aicc", "scott", 0.3])
def test_summary_reports_the_fit(bandwidth):
    from sklearn.metrics import r2_score

    x, y = sample(2, d=2)
    model = LocalLinear(bandwidth=bandwidth).fit(x, y)
    summary = model.summary()
    np.testing.assert_array_equal(summary.bandwidth, model.bandwidth_)
    assert summary.n_samples == 120 and summary.var_type == "cc"
    assert summary.kernel == "gaussian" and summary.method == "auto"
    chosen = bandwidth if isinstance(bandwidth, str) else "fixed"
    assert summary.chosen_by == chosen
    want = {"cv": getattr(model, "cv_score_", None), "aicc": getattr(model, "aicc_", None)}
    assert summary.criterion == want.get(chosen)
    np.testing.assert_allclose(summary.r_squared, [model.r_squared_], rtol=1e-12)
    np.testing.assert_allclose(summary.score, r2_score(y, model.predict(x)), rtol=1e-12)
    assert summary.score == pytest.approx(model.score(x, y), rel=1e-12)
    text = str(summary)
    assert text.startswith("LocalLinear kernel regression")
    assert ("CV (mean squared error)" in text) == (chosen == "cv")
    assert ("AICc" in text) == (chosen == "aicc")
    assert f"{summary.r_squared[0]:.4f}" in text


def test_refitting_recomputes_r_squared():
    x, y = sample(3)
    model = NadarayaWatson(bandwidth=0.2).fit(x, y)
    first = model.r_squared_
    model.set_params(bandwidth=2.0).fit(x, y)
    assert model.r_squared_ < first


@pytest.mark.parametrize("degree", [0, 1])
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_aicc_curve_is_the_hurvich_simonoff_tsai_criterion(kernel, degree):
    x, y = sample(4, n=80)
    bandwidths = [0.5, 0.8, 1.5]
    got = aicc_curve(x, y, bandwidths, kernel=kernel, degree=degree)
    want = []
    for h in bandwidths:
        hat = hat_matrix(x[:, 0], h, kernel, degree)
        trace, n = np.trace(hat), x.shape[0]
        sigma2 = np.mean((y - hat @ y) ** 2)
        want.append(np.log(sigma2) + (1 + trace / n) / (1 - (trace + 2) / n))
    np.testing.assert_allclose(got, want, rtol=1e-9)


def test_aicc_curve_matches_statsmodels_and_the_search():
    from statsmodels.nonparametric.kernel_regression import KernelReg

    x, y = sample(5, n=60)
    reference = KernelReg(y, x, "c", reg_type="lc", bw=[0.5])
    for h in (0.3, 0.6):
        np.testing.assert_allclose(
            aicc_curve(x, y, [h])[0], reference.aic_hurvich(np.array([h])), rtol=1e-9
        )
    found = select_bandwidth(x, y, method="aicc", degree=1)
    at = aicc_curve(x, y, [found.bandwidth[0], found.bandwidth[0] * 1.05], degree=1)
    np.testing.assert_allclose(at[0], found.objective, rtol=1e-10)
    assert at[0] <= at[1]


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "tricube"])
@pytest.mark.parametrize("d", [1, 2])
def test_local_constant_marginal_effects_are_the_fits_derivatives(kernel, d):
    x, y = sample(6, n=300, d=d)
    responses = np.c_[y, np.cos(x[:, 0])]
    model = NadarayaWatson(kernel=kernel, bandwidth=1.2).fit(x, responses)
    queries = np.random.default_rng(7).uniform(1, 4, (6, d))
    slopes = model.marginal_effects(queries)
    assert slopes.shape == (6, d, 2)
    step = 1e-6
    for j in range(d):
        shift = step * np.eye(d)[j]
        fd = (
            nadaraya_watson(x, responses, queries + shift, kernel=kernel, bandwidth=1.2)
            - nadaraya_watson(x, responses, queries - shift, kernel=kernel, bandwidth=1.2)
        ) / (2 * step)
        np.testing.assert_allclose(slopes[:, j], fd, rtol=1e-6, atol=1e-7)
    flat = NadarayaWatson(kernel=kernel, bandwidth=1.2).fit(x, y).marginal_effects(queries)
    np.testing.assert_allclose(flat, slopes[..., 0], rtol=1e-12)


def test_local_constant_marginal_effects_follow_the_empty_policy():
    x = np.array([[0.0], [1.0], [2.0], [10.0]])
    y = np.array([0.0, 1.0, 4.0, 9.0])
    far = np.array([[5.0], [0.5]])  # no point within the support of the first
    with pytest.warns(EmptyNeighbourhoodWarning, match="1 of 2 queries"):
        model = NadarayaWatson("epanechnikov", bandwidth=1.5, empty="nan").fit(x, y)
        nan = model.marginal_effects(far)
    assert np.isnan(nan[0, 0]) and np.isfinite(nan[1, 0])
    nearest = NadarayaWatson("epanechnikov", bandwidth=1.5, empty="nearest").fit(x, y)
    slopes = nearest.marginal_effects(far)
    assert slopes[0, 0] == 0.0  # the nearest point's response does not move with x
    np.testing.assert_allclose(slopes[1], nan[1], rtol=1e-12)


def test_local_constant_marginal_effects_need_continuous_columns():
    x = np.c_[np.linspace(0, 1, 30), np.arange(30) % 3]
    model = NadarayaWatson(bandwidth=[0.3, 0.2], var_type="cu").fit(x, x[:, 0])
    with pytest.raises(ValueError, match=r"var_type: .*continuous columns.*'cu'"):
        model.marginal_effects(x[:3])


def test_gaussian_slopes_in_numpy_equal_the_programs():
    # small Gaussian fits differentiate in NumPy (no program); the compiled forward mode
    # (block_size forces it) is the reference, with observation weights too
    from attnpool.regression.fit_parts import local_constant_slopes

    rng = np.random.default_rng(21)
    x, y = rng.uniform(0, 5, (150, 2)), rng.normal(size=(150, 2))
    queries = rng.uniform(0, 5, (40, 2))
    weights = rng.uniform(0.5, 2.0, 150)
    for w in (None, weights):
        got = local_constant_slopes(x, y, queries, bandwidth=[0.4, 0.7], weights=w)
        want = local_constant_slopes(x, y, queries, bandwidth=[0.4, 0.7], weights=w,
                                     block_size=64)  # fmt: skip
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    # scaled distances beyond the float range: the programs' nearest-key limit, slope 0
    tiny = local_constant_slopes(x, y[:, 0], queries[:3], bandwidth=1e-300)
    np.testing.assert_array_equal(tiny, np.zeros((3, 2)))
