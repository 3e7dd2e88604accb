"""Local fits, leave-one-out sums and bandwidth searches on the tiled Pallas kernel (in
Pallas' interpret mode here): equal to the textbook formulas in float64 and to the
streamed engine, gradients included."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import attnpool
from attnpool.engines.local_fits import FitRequest, hat_diagonal, local_fit, loo_residuals
from attnpool.sums.local_model import model_for
from reference import leave_one_out_pool, long_double_local_linear


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


def smooth(seed, n, d):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 5, (n, d))
    y = np.stack([np.sin(x).sum(1) + rng.normal(0, 0.2, n), x[:, 0] ** 2], axis=1)
    return x, y


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "tricube-product"])
def test_leave_one_out_residuals_equal_the_textbook_formula(x64, kernel):
    x, y = smooth(1, 230, 2)
    h = np.full(2, 1.1)
    got = loo_residuals(x, y, h, model_for(x, kernel=kernel), engine="pallas")
    if kernel.endswith("-product"):  # against the streamed engine's
        want = loo_residuals(x, y, h, model_for(x, kernel=kernel), block_size=64)
    else:
        want = y - leave_one_out_pool(x, y, h, kernel)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("d, kernel", [(1, "gaussian"), (2, "gaussian"), (2, "biweight")])
def test_local_linear_fits_equal_long_double_least_squares(x64, d, kernel):
    x, y = smooth(2, 260, d)
    queries = np.random.default_rng(3).uniform(0.5, 4.5, (70, d))
    model = model_for(x, kernel=kernel, degree=1)
    h = np.full(d, 1.2)
    fit, slopes, _, _ = local_fit(x, y, queries, h, FitRequest(model, engine="pallas"))
    want = long_double_local_linear(x, y[:, 0], queries, kernel, 1.2)
    np.testing.assert_allclose(fit[:, 0], want, rtol=1e-10, atol=1e-10)
    _, streamed_slopes, _, _ = local_fit(x, y, queries, h, FitRequest(model, block_size=64))
    np.testing.assert_allclose(slopes, streamed_slopes, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("degree", [0, 1])
def test_hat_diagonal_and_weighted_sums_equal_the_streamed_engine(x64, degree):
    x, y = smooth(4, 240, 3)
    model = model_for(x, kernel="gaussian", degree=degree)
    h = np.full(3, 1.4)
    weights = np.random.default_rng(4).uniform(0.2, 3.0, 240)
    for options in ({}, {"weights": weights}):
        got_fit, got_hat = hat_diagonal(x, y, h, model, engine="pallas", **options)
        fit, hat = hat_diagonal(x, y, h, model, block_size=64, **options)
        np.testing.assert_allclose(got_fit, fit, rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(got_hat, hat, rtol=1e-11, atol=1e-14)
        got = loo_residuals(x, y, h, model, engine="pallas", **options)
        np.testing.assert_allclose(got, loo_residuals(x, y, h, model, block_size=64, **options),
                                   rtol=1e-10, atol=1e-11)  # fmt: skip


def test_the_cv_gradient_equals_the_streamed_engines(x64):
    from attnpool.bandwidth.criteria import Criterion, objective_and_gradient

    x, y = smooth(5, 200, 2)
    model = model_for(x, kernel="gaussian", degree=1)
    theta = np.log(np.array([0.6, 0.9]))
    spec = Criterion(model, "cv")
    value, gradient = objective_and_gradient(theta, x, y, spec=spec._replace(engine="pallas"))
    want_value, want_gradient = objective_and_gradient(theta, x, y, spec=spec)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(gradient, want_gradient, rtol=1e-8)


def test_bandwidth_search_and_estimators_run_on_pallas():
    x, y = smooth(6, 400, 2)
    y = y[:, 0]
    found = attnpool.select_bandwidth(x, y, pooling="pallas")
    reference = attnpool.select_bandwidth(x, y, pooling="stream")
    np.testing.assert_allclose(found.bandwidth, reference.bandwidth, rtol=1e-5)
    model = attnpool.LocalLinear(bandwidth="cv", method="pallas").fit(x, y)
    streamed = attnpool.LocalLinear(bandwidth="cv", method="stream").fit(x, y)
    np.testing.assert_allclose(model.bandwidth_, streamed.bandwidth_, rtol=1e-5)
    np.testing.assert_allclose(model.predict(x[:50]), streamed.predict(x[:50]), rtol=1e-5)
    assert "pallas" in str(model.summary())
    fit = attnpool.local_regression(x, y, x[:30], bandwidth=0.5, degree=1, method="pallas")
    np.testing.assert_allclose(fit, attnpool.local_regression(x, y, x[:30], bandwidth=0.5,
                                                              degree=1), rtol=1e-5)  # fmt: skip


def test_categorical_columns_are_refused_naming_the_argument():
    x = np.c_[np.linspace(0, 1, 60), np.arange(60) % 3]
    y = np.sin(x[:, 0])
    with pytest.raises(ValueError, match="method: 'pallas' fits continuous columns"):
        attnpool.LocalLinear(method="pallas", var_type="cu", bandwidth=[0.3, 0.2]).fit(x, y)
    with pytest.raises(ValueError, match="pooling: 'pallas' searches continuous columns"):
        attnpool.select_bandwidth(x, y, var_type="cu", pooling="pallas")
    with pytest.raises(ValueError, match="method: expected one of"):
        attnpool.local_regression(x[:, :1], y, [0.5], method="fast")


def test_gradients_in_the_observation_weights_and_the_bandwidth(x64):
    import jax.numpy as jnp

    x, y = smooth(7, 150, 2)
    model = model_for(x, kernel="epanechnikov", degree=1)
    weights = np.random.default_rng(7).uniform(0.5, 2.0, 150)

    def loss(weights, h, **engine):
        residuals = loo_residuals(x, y, h, model, weights=weights, count=np.int32(150), **engine)
        return jnp.sum(jnp.where(jnp.isfinite(residuals), residuals, 0.0) ** 2)

    h = jnp.full(2, 1.3)
    got = jax.grad(loss, argnums=(0, 1))(jnp.asarray(weights), h, engine="pallas")
    want = jax.grad(loss, argnums=(0, 1))(jnp.asarray(weights), h, block_size=64)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
