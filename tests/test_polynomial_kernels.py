"""The biweight (quartic) and triweight kernels, ``(1 − u²)²`` and ``(1 − u²)³`` on
``|u| < 1``: statsmodels' ``biw`` and ``triw`` densities, their rules of thumb by the
canonical bandwidths (Silverman's table), their distribution functions by quadrature,
and every method that takes compact kernels against the exact oracle."""

import numpy as np
import pytest
from scipy import integrate
from statsmodels.nonparametric.kde import KDEUnivariate

import attnpool
from attnpool import kernels
from oracle import exact_pool

NAMES = {"biweight": "biw", "triweight": "triw"}


@pytest.mark.parametrize("name", list(NAMES))
def test_densities_equal_statsmodels(name):
    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(0, 1, 300), rng.normal(4, 0.5, 200)]
    grid = np.linspace(-3, 6, 101)
    fitted = KDEUnivariate(x)
    fitted.fit(kernel=NAMES[name], bw=0.8, fft=False)
    theirs = np.array([np.ravel(fitted.evaluate(point))[0] for point in grid])  # a point a call
    ours = attnpool.kernel_density(x, grid, kernel=name, bandwidth=0.8)
    outside = np.isnan(theirs)  # statsmodels: NaN where no point is within reach
    assert outside.sum() <= 5 and np.all(ours[outside] == 0)
    np.testing.assert_allclose(ours[~outside], theirs[~outside], rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("name", list(NAMES))
def test_the_rule_of_thumb_scales_the_gaussians_by_the_canonical_bandwidths(name):
    # Silverman (1986), table 3.1 / Marron & Nolan (1988): the biweight's bandwidth is
    # 2.623 times the Gaussian's, the triweight's 2.978
    x = np.random.default_rng(1).normal(size=400)[:, None]
    ratio = attnpool.rule_of_thumb(x, kernel=name) / attnpool.rule_of_thumb(x)
    assert ratio[0] == pytest.approx({"biweight": 2.6226, "triweight": 2.9781}[name], rel=1e-4)


@pytest.mark.parametrize("name", list(NAMES))
def test_the_distribution_function_is_the_integral_of_the_density(name):
    x = np.array([0.0, 0.4, 1.5])
    points = np.linspace(-1.5, 3.5, 23)
    got = attnpool.kernel_cdf(x, points, kernel=name, bandwidth=0.7)
    for point, value in zip(points, got, strict=True):
        want = integrate.quad(
            lambda t: attnpool.kernel_density(x, [t], kernel=name, bandwidth=0.7)[0],
            -1.0, point, points=np.r_[x, x - 0.7, x + 0.7], limit=200, epsabs=1e-12,
        )[0]  # fmt: skip
        assert value == pytest.approx(want, abs=1e-9)
    assert kernels.get(name).compact and kernels.get(f"{name}-product").product


@pytest.mark.parametrize("name", list(NAMES))
@pytest.mark.parametrize(
    "method", ["dense", "stream", "sparse", attnpool.Binned(tolerance=1e-6), "auto"]
)
@pytest.mark.parametrize("d", [1, 2])
def test_every_compact_method_pools_them_exactly(name, method, d):
    rng = np.random.default_rng(2)
    keys = rng.uniform(0, 5, (700, d)) + 1e6  # far from the origin
    values = np.column_stack([np.sin(keys[:, 0]), rng.normal(size=700)])
    queries = rng.uniform(-0.5, 5.5, (90, d)) + 1e6
    h = np.linspace(0.4, 0.6, d)
    got = attnpool.attention_pool(queries, keys, values, kernel=name, bandwidth=h,
                                  method=method, empty="nearest")  # fmt: skip
    want, _ = exact_pool(queries, keys, values, name, h)
    spread = np.ptp(values, axis=0)
    tolerance = 1e-6 if isinstance(method, attnpool.Binned) else 1e-10
    np.testing.assert_allclose(got, np.asarray(want, float), atol=tolerance * spread.max())


@pytest.mark.parametrize("name", list(NAMES))
def test_a_searched_regression_with_them(name):
    data = attnpool.datasets.sine_data(n=150, seed=3)
    model = attnpool.NadarayaWatson(kernel=name).fit(data.x_train[:, None], data.y_train)
    h = model.bandwidth_
    curve = attnpool.cv_curve(data.x_train, data.y_train, h * np.array([0.9, 1.0, 1.1]),
                              kernel=name)  # fmt: skip
    assert curve[1] <= curve.min() * (1 + 1e-9)  # the search's optimum is the curve's
    want, _ = exact_pool(data.x_val[:, None], data.x_train[:, None], data.y_train, name, h)
    np.testing.assert_allclose(model.predict(data.x_val[:, None]), np.asarray(want, float)[:, 0],
                               rtol=1e-10, atol=1e-12)  # fmt: skip
