"""Standard errors and confidence bands (attnpool.inference.bands) and their use in estimators."""

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest

import attnpool
from attnpool import LocalLinear, NadarayaWatson, confidence_band, datasets, kernels
from attnpool.inference import BeyondTheDataWarning
from attnpool.inference.bands import kernel_integrals
from reference import reference_weights

GRID = np.linspace(0.5, 4.5, 41)  # away from the boundaries of [0, 5]
TRUTH = 2 * np.sin(GRID) + GRID


@pytest.mark.parametrize("d", [1, 2, 3])
def test_kernel_integrals_of_the_gaussian_and_the_boxcar(d):
    first, second = kernel_integrals(kernels.get("gaussian"), d)
    assert first == pytest.approx((2 * math.pi) ** (d / 2), rel=1e-8)
    assert second == pytest.approx(math.pi ** (d / 2), rel=1e-8)
    ball = math.pi ** (d / 2) / math.gamma(d / 2 + 1)  # the boxcar is 1 on the unit ball
    assert kernel_integrals(kernels.get("boxcar"), d) == pytest.approx((ball, ball), rel=1e-8)


@pytest.mark.parametrize("name", ["epanechnikov", "triangular", "tricube", "cosine", "laplacian"])
def test_kernel_integrals_give_the_recorded_roughness_in_one_dimension(name):
    kernel = kernels.get(name)
    first, second = kernel_integrals(kernel, 1)
    assert second / first**2 == pytest.approx(kernel.roughness, rel=1e-7)


def _cauchy(u):
    return 1.0 / (1.0 + u**2)


def _heavy(u):  # (1 + r²)^(−1.1): integrable in two columns, not in three
    return (1.0 + u**2) ** -1.1


@pytest.mark.filterwarnings("error")  # no quadrature warning let out
def test_kernel_integrals_of_heavy_tails_are_finite_or_infinite_in_closed_form():
    kernel_integrals.cache_clear()
    # ∫ dx/(1+x²) = π, ∫ dx/(1+x²)² = π/2; over ℝ² the first diverges, the second is π
    assert kernel_integrals(kernels.get(_cauchy), 1) == pytest.approx((math.pi, math.pi / 2))
    first, second = kernel_integrals(kernels.get(_cauchy), 2)
    assert first == math.inf and second == pytest.approx(math.pi)
    # 2π ∫₀^∞ r (1+r²)^(−1.1) dr = 2π / 0.2; in three columns r² (1+r²)^(−1.1) ~ r^(−0.2)
    assert kernel_integrals(kernels.get(_heavy), 2)[0] == pytest.approx(10 * math.pi)
    assert kernel_integrals(kernels.get(_heavy), 3)[0] == math.inf
    assert kernel_integrals(kernels.get("constant"), 1) == (math.inf, math.inf)


def _rough(u):  # compact, but its support unseen: |sin 60u| + 0.1 on [−1, 1]
    return np.where(np.abs(u) <= 1, np.abs(np.sin(60 * u)) + 0.1, 0.0)


def test_a_rough_profile_the_quadrature_cannot_settle_is_finite_and_warned():
    kernel_integrals.cache_clear()
    # 2 ∫₀¹ (|sin 60r| + 0.1) dr: 19 whole arches of area 2 below 60, then 1 − cos(60 − 19π)
    exact = 2 * ((2 * 19 + 1 - math.cos(60 - 19 * math.pi)) / 60 + 0.1)
    with pytest.warns(RuntimeWarning, match="kernel integral: .* approximate"):
        first, _ = kernel_integrals(kernels.get(_rough), 1)
    assert first == pytest.approx(exact, rel=1e-6)


@pytest.mark.parametrize("n", [200, 5000])  # NumPy pairs; the compiled engines
@pytest.mark.parametrize("degree", [0, 1])
def test_the_asymptotic_band_beyond_the_data_says_it_is_no_standard_error(n, degree):
    """Twenty bandwidths beyond the data ``Σ K`` is 1e-88 and the formula's standard
    error 1e42 where the fit's own is of the noise's size (the bootstrap's): a warning
    names the queries; inside the data, and for the bootstrap, none."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, n)
    y = np.sin(6 * x) + rng.normal(0, 0.1, n)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inside = confidence_band(x, y, [0.2, 0.5, 0.9], bandwidth=0.05, degree=degree)
        confidence_band(x, y, [2.0], bandwidth=0.05, degree=degree, method="bootstrap",
                        n_boot=20)  # fmt: skip
    assert np.all(inside.std < 0.1)
    with pytest.warns(BeyondTheDataWarning, match=r"x_query: 2 of 3 queries have less than one .*"
                      r"no standard error of the fit; method='bootstrap'"):  # fmt: skip
        beyond = confidence_band(x, y, [0.5, 1.5, 2.0], bandwidth=0.05, degree=degree)
    assert beyond.std[2] > 1e30


def test_kernels_of_infinite_integral_have_no_density_and_no_asymptotic_band():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(60, 2))
    y = x[:, 0] + 0.1 * rng.normal(size=60)
    with pytest.raises(ValueError, match=r"kernel: a density needs .* finite integral"):
        attnpool.kernel_density(x, x[:3], bandwidth=0.5, kernel=_cauchy)
    with pytest.raises(ValueError, match=r"kernel: method 'asymptotic' .* 2 column.*'_cauchy'"):
        confidence_band(x, y, x[:3], bandwidth=0.5, kernel=_cauchy)
    band = confidence_band(x, y, x[:3], bandwidth=0.5, kernel=_cauchy, method="bootstrap",
                           n_boot=40)  # fmt: skip
    assert np.all(np.isfinite(band.std)) and np.all(band.std > 0)
    one = confidence_band(x[:, :1], y, x[:3, :1], bandwidth=0.5, kernel=_cauchy)
    assert np.all(np.isfinite(one.std)) and np.all(one.std > 0)


def test_asymptotic_standard_error_is_the_formula_in_numpy():
    data = datasets.sine_data(n=150, seed=4)
    x, y, h = data.x_train, data.y_train, 0.3
    # leave-one-out residuals, their Nadaraya–Watson smooth, and the points under the kernel
    loo = reference_weights(x, x, "gaussian", h) * (1 - np.eye(len(x)))
    loo /= loo.sum(axis=1, keepdims=True)
    residuals = y - loo @ y
    noise = reference_weights(GRID, x, "gaussian", h) @ residuals**2
    points = np.exp(-0.5 * ((GRID[:, None] - x[None, :]) / h) ** 2).sum(axis=1)
    expected = np.sqrt(noise * (math.sqrt(math.pi) / math.sqrt(2 * math.pi)) / points)
    std = confidence_band(x, y, GRID, bandwidth=h).std
    np.testing.assert_allclose(std, expected, rtol=1e-10)


@pytest.mark.parametrize("d", [2, 3, 5])
def test_asymptotic_standard_error_is_the_formula_in_several_columns(d):
    # from three columns on the Gaussian's log weights are matrix products without each
    # query's own term: the band's count of points under the kernel lacked it (a factor
    # exp(−‖q‖²/2h²) off), so standard errors were wrong there
    rng = np.random.default_rng(d)
    x = rng.uniform(0, 3, (300, d))
    y = np.sin(x).sum(axis=1) + rng.normal(0, 0.3, 300)
    queries, h = rng.uniform(0.5, 2.5, (20, d)), 0.6
    loo = reference_weights(x, x, "gaussian", h) * (1 - np.eye(len(x)))
    loo /= loo.sum(axis=1, keepdims=True)
    noise = reference_weights(queries, x, "gaussian", h) @ (y - loo @ y) ** 2
    r2 = (((queries[:, None, :] - x[None, :, :]) / h) ** 2).sum(axis=2)
    points = np.exp(-0.5 * r2).sum(axis=1)
    ratio = (math.sqrt(math.pi) / math.sqrt(2 * math.pi)) ** d  # ∫K² / ∫K over ℝ^d
    std = confidence_band(x, y, queries, bandwidth=h).std
    np.testing.assert_allclose(std, np.sqrt(noise * ratio / points), rtol=1e-9)


@pytest.mark.parametrize("method", ["asymptotic", "bootstrap"])
@pytest.mark.parametrize("degree", [0, 1])
def test_band_coverage_by_simulation(method, degree):
    """The issue's check: known noise, repeated samples, 95% bands away from the edges."""
    hits = []
    for replicate in range(100):
        data = datasets.sine_data(n=200, seed=1000 + replicate)
        band = confidence_band(
            data.x_train,
            data.y_train,
            GRID,
            bandwidth=0.2,
            degree=degree,
            method=method,
            n_boot=200,
            seed=replicate,
        )
        hits.append((band.lower <= TRUTH) & (TRUTH <= band.upper))
    coverage = np.mean(hits)
    assert 0.90 <= coverage <= 0.99


def test_standard_errors_match_the_spread_of_fits_over_samples():
    fits, errors = [], {"asymptotic": [], "wild": [], "residual": []}
    for replicate in range(60):
        data = datasets.sine_data(n=200, seed=2000 + replicate)
        args = (data.x_train, data.y_train, GRID[::5])
        band = confidence_band(*args, bandwidth=0.2)
        fits.append(band.fit)
        errors["asymptotic"].append(band.std)
        for kind in ("wild", "residual"):
            errors[kind].append(
                confidence_band(
                    *args, bandwidth=0.2, method="bootstrap", bootstrap=kind, seed=replicate
                ).std
            )
    spread = np.std(fits, axis=0).mean()
    for kind, values in errors.items():
        assert np.mean(values) == pytest.approx(spread, rel=0.2), kind


def test_bootstrap_is_seeded_and_handles_categorical_columns():
    rng = np.random.default_rng(0)
    x = np.column_stack([rng.uniform(0, 5, 120), rng.integers(0, 3, 120)])
    y = np.sin(x[:, 0]) + x[:, 1] + rng.normal(0, 0.3, 120)
    query = np.array([[2.0, 0.0], [2.0, 2.0]])
    options = dict(bandwidth=[0.4, 0.2], var_type="cu", method="bootstrap", n_boot=300)
    first = confidence_band(x, y, query, seed=1, **options)
    np.testing.assert_array_equal(first.std, confidence_band(x, y, query, seed=1, **options).std)
    assert not np.array_equal(first.std, confidence_band(x, y, query, seed=2, **options).std)
    assert np.all(first.lower < first.fit) and np.all(first.fit < first.upper)
    with pytest.raises(ValueError, match="'asymptotic' needs continuous columns only"):
        confidence_band(x, y, query, bandwidth=[0.4, 0.2], var_type="cu")


def test_vector_targets_get_one_band_per_column():
    data = datasets.sine_data(n=100)
    y = np.column_stack([data.y_train, 3 * data.y_train])
    band = confidence_band(data.x_train, y, GRID, bandwidth=0.3)
    assert band.std.shape == (41, 2)
    np.testing.assert_allclose(band.std[:, 1], 3 * band.std[:, 0], rtol=1e-10)


def test_estimators_predict_with_standard_errors_and_intervals():
    data = datasets.sine_data(n=150)
    X = data.x_train[:, None]
    for estimator in (NadarayaWatson(bandwidth=0.3), LocalLinear(bandwidth=0.3)):
        estimator.fit(X, data.y_train)
        mean, std = estimator.predict(GRID[:, None], return_std=True)
        np.testing.assert_array_equal(mean, estimator.predict(GRID[:, None]))
        lower, upper = estimator.predict_interval(GRID[:, None], level=0.9)
        np.testing.assert_allclose(upper - lower, 2 * 1.6448536269514722 * std, rtol=1e-9)
        wide = estimator.predict_interval(GRID[:, None], level=0.99, method="bootstrap")
        assert np.all(wide[1] - wide[0] > 0)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        (dict(level=1.5), "level: expected a number strictly between 0 and 1"),
        (dict(method="jackknife"), "method: expected one of"),
        (dict(bootstrap="pairs"), "bootstrap: expected one of"),
        (dict(n_boot=0), "n_boot: expected a positive integer"),
    ],
)
def test_bad_options_name_the_argument(options, match):
    data = datasets.sine_data()
    with pytest.raises(ValueError, match=match):
        confidence_band(data.x_train, data.y_train, GRID, bandwidth=0.3, **options)


@pytest.mark.parametrize("degree", [0, 1])
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_a_small_asymptotic_band_is_numpys_and_the_compiled_engines(degree, kernel):
    """Where the planner gives the NumPy engine the fits, the band is computed there (no
    JAX, no program) and equals the compiled engines' to rounding."""
    from attnpool.inference.band_sums import BandSettings
    from attnpool.inference.bands import _compiled_band
    from attnpool.regression import validated

    data = datasets.sine_data(n=120, seed=4)
    x, y, q, h, model, _ = validated(data.x_train, data.y_train, GRID, 0.4, kernel, None,
                                     degree)  # fmt: skip
    band = confidence_band(data.x_train, data.y_train, GRID, bandwidth=0.4, kernel=kernel,
                           degree=degree)  # fmt: skip
    fit, std = _compiled_band(x, y, q, h, model, BandSettings("asymptotic", 10, "wild", 0))
    np.testing.assert_allclose(band.fit, fit[:, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(band.std, std[:, 0], rtol=1e-10)


def test_an_asymptotic_band_and_a_significance_test_on_the_host_need_no_jax():
    # (the local-constant slopes of a significance test imported JAX before their NumPy path)
    script = (
        "import sys, attnpool\n"
        "data = attnpool.datasets.sine_data(n=80, seed=1)\n"
        "attnpool.confidence_band(data.x_train, data.y_train, [1.0, 2.0], bandwidth=0.4)\n"
        "attnpool.LocalLinear(bandwidth=0.4).fit(data.x_train[:, None], data.y_train)"
        ".predict_interval([[1.0], [2.0]])\n"
        "for model in (attnpool.NadarayaWatson, attnpool.LocalLinear):\n"
        "    fitted = model(bandwidth=0.4).fit(data.x_train[:, None], data.y_train)\n"
        "    attnpool.significance_test(fitted, 0, n_boot=9)\n"
        "large = attnpool.datasets.sine_data(n=6000, seed=1)  # the fgt backend's sums\n"
        "attnpool.confidence_band(large.x_train, large.y_train, [1.0, 2.0], bandwidth=0.2)\n"
        "print('jax' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    assert out.split() == ["False"]


@pytest.mark.parametrize("kernel, d, backend", [("gaussian", 1, "fgt"),
                                                ("epanechnikov", 1, "sparse"),
                                                ("gaussian", 3, "native")])  # fmt: skip
def test_a_large_local_constant_band_is_the_host_backends_and_the_compiled_ones(kernel, d, backend):
    """Beyond the NumPy engine, the asymptotic band of a local-constant fit takes its
    sums — the fit, the leave-one-out residuals, their smooth, ``Σ K`` — from the exact
    host backend the planner names, through the sums layer (no JAX), and equals the
    compiled engines' band to rounding."""
    from attnpool.inference.band_sums import BandSettings
    from attnpool.inference.bands import _compiled_band
    from attnpool.regression import validated
    from attnpool.sums.facts import pool_facts
    from attnpool.sums.plan import plan

    rng = np.random.default_rng(d)
    x = rng.uniform(0, 10, (6000, d)) + 1e6
    y = np.sin(x[:, 0]) + 0.2 * rng.normal(size=6000)
    q = rng.uniform(0, 10, (200, d)) + 1e6
    h = 0.2 if d == 1 else 1.0
    x64, y64, q64, h64, model, _ = validated(x, y, q, h, kernel, None, 0)
    assert plan(pool_facts(model.kernel, x64, x64, h64, values=y64, numpy=True)).backend == (
        backend)  # fmt: skip
    band = confidence_band(x, y, q, bandwidth=h, kernel=kernel)
    fit, std = _compiled_band(x64, y64, q64, h64, model, BandSettings("asymptotic", 10, "wild", 0))
    np.testing.assert_allclose(band.fit, fit[:, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(band.std, std[:, 0], rtol=1e-10)


@pytest.mark.parametrize("scale", [1e-200, 1e200])
@pytest.mark.parametrize("method", ["asymptotic", "bootstrap"])
def test_bands_scale_with_y_to_the_float_range(scale, method):
    """The squared residuals of y ~ 1e−200 underflowed (a band of width 0) and of
    y ~ 1e200 overflowed (NaN); the band scales with y, as the estimators' do."""
    data = datasets.sine_data(n=120, seed=4)
    x, y = data.x_train, np.c_[data.y_train, -3.0 * data.y_train]
    options = {"bandwidth": 0.4, "method": method, "n_boot": 20, "degree": 1}
    plain = confidence_band(x, y, GRID, **options)
    scaled = confidence_band(x, y * scale, GRID, **options)
    for name in ("fit", "std", "lower", "upper"):
        np.testing.assert_allclose(getattr(scaled, name) / scale, getattr(plain, name), rtol=1e-13)
    model = attnpool.NadarayaWatson(bandwidth=0.4).fit(x[:, None], y[:, 0] * scale)
    std = model.predict(GRID[:, None], return_std=True)[1]
    np.testing.assert_allclose(std / scale, confidence_band(x, y[:, 0], GRID, bandwidth=0.4).std,
                               rtol=1e-13)  # fmt: skip


def test_queries_no_training_point_reaches_are_reported_not_silently_nan():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(0, 4, 300), rng.uniform(6, 10, 300)])
    with pytest.warns(attnpool.EmptyNeighbourhoodWarning, match=r"^1 of 3 queries have no "
                      r"training point within the 'epanechnikov' kernel's support"):  # fmt: skip
        band = confidence_band(x, np.sin(x), [1.0, 5.0, 8.0], bandwidth=0.3,
                               kernel="epanechnikov")  # fmt: skip
    assert np.isnan(band.fit[1]) and np.isnan(band.upper[1]) and np.all(np.isfinite(band.fit[::2]))


@pytest.mark.parametrize("n", [200, 6000])  # the NumPy engine; the exact host or compiled
@pytest.mark.parametrize("degree", [0, 1])
def test_a_vanishing_bandwidth_gives_the_nearest_fit_and_an_unbounded_band(n, degree):
    # the fit was NaN and the band NaN, reported as "no training point within the
    # 'gaussian' kernel's support", where predict() gave the nearest keys' value
    rng = np.random.default_rng(4)
    x = rng.integers(0, 20, n).astype(float)
    y = np.sin(x) + 0.1 * rng.normal(size=n)
    q = np.array([3.5, 7.25])
    want = attnpool.local_regression(x, y, q, bandwidth=1e-300, degree=degree)
    with pytest.warns(BeyondTheDataWarning, match="2 of 2 queries .* down to 0"):
        band = attnpool.confidence_band(x, y, q, bandwidth=1e-300, degree=degree)
    np.testing.assert_allclose(band.fit, want, rtol=1e-12)
    assert np.all(np.isinf(band.std)) and np.all(band.lower == -np.inf)
    boot = attnpool.confidence_band(x, y, q, bandwidth=1e-300, degree=degree,
                                    method="bootstrap", n_boot=20)  # fmt: skip
    np.testing.assert_allclose(boot.fit, want, rtol=1e-12)
    assert np.all(np.isfinite(boot.std))
