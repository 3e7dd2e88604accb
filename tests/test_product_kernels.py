"""Product kernels (``<name>-product``): ``Π_j K(u_j)``, as statsmodels and R's np define
their multivariate kernels, against statsmodels' own product machinery (``gpke``) with
the one-dimensional kernels written as statsmodels writes its own, against the
textbook formula, and on the cube support every path decides alike."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.nonparametric import _kernel_base
from statsmodels.nonparametric import kernels as sm_kernels
from statsmodels.nonparametric.kernel_regression import KernelReg

import attnpool
from attnpool import (
    LocalLinear,
    NadarayaWatson,
    attention_pool,
    cv_curve,
    kernels,
    local_regression,
)
from attnpool.inference.bands import kernel_integrals


def _statsmodels_style(profile):
    """A one-dimensional kernel with statsmodels' signature ``(h, Xi, x)``."""

    def kernel(h, Xi, x):
        u = (Xi - x) / h
        return np.where(np.abs(u) <= 1, profile(np.minimum(np.abs(u), 1.0)), 0.0)

    return kernel


# statsmodels' KernelReg multiplies one-dimensional kernels from this table; its own has
# only 'gaussian' and 'tricube' for continuous columns, so the others are added here in
# its signature (the textbook formulas), and 'tricube' corrected (see below)
ONE_DIMENSIONAL = {
    "epanechnikov": lambda u: 0.75 * (1 - u**2),
    "boxcar": lambda u: 0.5 * np.ones_like(u),
    "triangular": lambda u: 1 - u,
    "tricube": lambda u: 70 / 81 * (1 - u**3) ** 3,
}


@pytest.fixture
def statsmodels_kernels(monkeypatch):
    for name, profile in ONE_DIMENSIONAL.items():
        monkeypatch.setitem(_kernel_base.kernel_func, f"test_{name}", _statsmodels_style(profile))


def data(seed, n=120, d=2):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 4, (n, d))
    return x, np.sin(x).sum(axis=1) + rng.normal(0, 0.2, n), rng.uniform(0.5, 3.5, (30, d))


@pytest.mark.parametrize("name", list(ONE_DIMENSIONAL))
@pytest.mark.parametrize("reg_type", ["lc", "ll"])
def test_statsmodels_product_kernel_regression(statsmodels_kernels, name, reg_type):
    x, y, queries = data(1)
    bandwidth = np.array([0.9, 1.3])
    model = KernelReg(y, x, var_type="cc", reg_type=reg_type, bw=bandwidth,
                      ckertype=f"test_{name}")  # fmt: skip
    want, _ = model.fit(queries)
    got = local_regression(x, y, queries, kernel=f"{name}-product", bandwidth=bandwidth,
                           degree=int(reg_type == "ll"))  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-8)
    # the compiled path agrees with the NumPy engine (small problems run there)
    streamed = local_regression(x, y, queries, kernel=f"{name}-product", bandwidth=bandwidth,
                                degree=int(reg_type == "ll"), block_size=32)  # fmt: skip
    np.testing.assert_allclose(streamed, want, rtol=1e-8)


def test_statsmodels_tricube_weighs_points_outside_its_support_the_most():
    # a known fault: statsmodels sets u = 0 where |u| > 1, so a point two bandwidths away
    # gets K(0) = 70/81, the largest weight, where the tricube is 0 — we follow the
    # mathematics (tested against the corrected kernel above)
    far, near = sm_kernels.tricube(1.0, np.array([2.0, 0.5]), 0.0)
    assert far == pytest.approx(70 / 81) and far > near
    assert float(kernels.get("tricube-product")(np.array([2.0]))[0]) == 0.0


@pytest.mark.parametrize("name", ["epanechnikov", "boxcar", "triangular", "tricube", "cosine"])
def test_product_kernels_are_products_of_one_dimensional_kernels(name):
    x, y, queries = data(2, d=3)
    bandwidth = np.array([0.8, 1.1, 1.4])
    one = kernels.get(name)
    u = (queries[:, None, :] - x[None, :, :]) / bandwidth
    weights = np.prod(one(u), axis=2)  # Π_j K(u_j), normalised per factor
    want = weights @ y / weights.sum(axis=1)
    for method in ("auto", "dense", "stream"):
        got = attention_pool(queries, x, y, kernel=f"{name}-product", bandwidth=bandwidth,
                             method=method)  # fmt: skip
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # the cube |u_j| < 1 is the support: a key at (0.9, 0.9, 0.9) bandwidths counts, one
    # at (1.1, 0, 0) does not — the radial kernel says the opposite of the first
    keys = np.array([[0.9, 0.9, 0.9], [1.1, 0, 0]])
    corner = attention_pool(np.zeros((1, 3)), keys, np.array([1.0, 2.0]),
                            kernel=f"{name}-product", bandwidth=1.0)  # fmt: skip
    np.testing.assert_allclose(corner, [1.0])


def test_in_one_dimension_a_product_kernel_is_its_kernel():
    x, y, queries = data(3, d=1)
    for method in ("auto", "sparse", "binned"):
        options = {"method": attnpool.Binned(tolerance=1e-6)} if method == "binned" else {
            "method": method}  # fmt: skip
        np.testing.assert_allclose(
            attention_pool(queries, x, y, kernel="epanechnikov-product", bandwidth=0.5, **options),
            attention_pool(queries, x, y, kernel="epanechnikov", bandwidth=0.5, **options),
            rtol=1e-14,
        )


def test_methods_of_balls_refuse_product_kernels_and_name_those_that_pool_them():
    x, y, queries = data(4)
    for method in ("sparse", "binned", "topk", "fgt", "native"):
        with pytest.raises(ValueError, match="epanechnikov-product"):
            attention_pool(queries, x, y, kernel="epanechnikov-product", method=method)


def test_estimators_select_and_fit_with_product_kernels():
    x, y, queries = data(5)
    candidates = np.array([[0.6, 0.6], [1.0, 1.0], [1.6, 1.6]])
    curve = cv_curve(x, y, candidates, kernel="epanechnikov-product")
    # leave-one-out by the textbook: each point's product weights over the others
    u = (x[:, None, :] - x[None, :, :])[None] / candidates[:, None, None, :]
    weights = np.prod(np.where(np.abs(u) < 1, 1 - u**2, 0.0), axis=3)
    weights[:, np.arange(120), np.arange(120)] = 0
    loo = np.einsum("kij,j->ki", weights, y) / weights.sum(axis=2)
    np.testing.assert_allclose(curve, np.mean((y - loo) ** 2, axis=1), rtol=1e-10)
    for estimator in (NadarayaWatson, LocalLinear):
        model = estimator(kernel="triangular-product").fit(x, y)
        assert np.all(np.isfinite(model.predict(queries)))
        assert model.cv_score_ <= cv_curve(x, y, [model.bandwidth_ * 1.1],
                                           kernel="triangular-product",
                                           degree=estimator._degree)[0]  # fmt: skip


def test_band_constants_of_a_product_kernel_are_powers_of_the_one_dimensional_ones():
    first, second = kernel_integrals(kernels.get("epanechnikov-product"), 2)
    one_first, one_second = kernel_integrals(kernels.get("epanechnikov"), 1)
    np.testing.assert_allclose([first, second], [one_first**2, one_second**2], rtol=1e-12)
    # against a grid quadrature of (1 − u²)(1 − v²) on the square
    grid = np.linspace(-1, 1, 2001)
    u, v = np.meshgrid(grid, grid)
    square = (1 - u**2) * (1 - v**2)
    np.testing.assert_allclose(first, np.trapezoid(np.trapezoid(square, grid), grid), rtol=1e-6)
