"""Local polynomials on every engine: the compiled engines (dense and streamed, JAX)
equal the NumPy engine, which equals weighted least squares at each query; gradients by
finite differences; the planner's choice; the estimator (``LocalPolynomial``): its
leave-one-out CV bandwidth against a brute-force refit without each row, derivatives,
and scikit-learn's own checks."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnpool
from attnpool import LocalPolynomial, local_polynomial
from attnpool.regression.polynomial import loo_residuals
from attnpool.sums.facts import device, polynomial_facts
from attnpool.sums.plan import plan
from sklearn_checks import scikit_learn_checks


def data(n: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (n, d))
    y = np.stack([np.sin(4 * x).sum(axis=1), x.prod(axis=1)], axis=1)
    return x, y, rng.uniform(0, 1, (15, d))


@pytest.mark.parametrize("method", ["dense", "stream"])
@pytest.mark.parametrize(
    "d, degree, derivative, kernel, h",
    [(1, 2, 0, "gaussian", 0.1), (1, 3, 2, "epanechnikov", 0.2), (1, 4, 1, "tricube", 0.3),
     (2, 2, 0, "gaussian", 0.2), (2, 2, 1, "epanechnikov", 0.35), (2, 2, 2, "gaussian", 0.3),
     (3, 2, 1, "gaussian", 0.4), (2, 1, 0, "biweight", 0.3)],
)  # fmt: skip
def test_the_compiled_engines_equal_the_numpy_engine(method, d, degree, derivative, kernel, h):
    x, y, q = data(400, d)
    options = dict(bandwidth=h, degree=degree, derivative=derivative, kernel=kernel)
    want = local_polynomial(x, y, q, method="numpy", **options)
    got = local_polynomial(x, y, q, method=method, **options)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.nanmax(np.abs(want)))


@pytest.mark.parametrize("h", [1e-300, 1e-3, 1e150])
def test_vanishing_and_huge_bandwidths_alike_on_every_engine(h):
    # undetermined rows (NaN) where the NumPy engine has them; the global polynomial at
    # a huge bandwidth
    x, y, q = data(300, 2, seed=1)
    q[:3] = x[:3]
    want = local_polynomial(x, y, q, bandwidth=h, degree=2, kernel="gaussian", method="numpy")
    for method in ("dense", "stream", "native"):
        got = local_polynomial(x, y, q, bandwidth=h, degree=2, kernel="gaussian", method=method)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


def test_engines_agree_where_one_key_outweighs_the_rest_by_many_orders():
    # keys ~10 bandwidths apart: a query's heaviest key outweighs the next by 1e20 and
    # more. About the query, the fit came from the light keys' terms beside the heavy
    # one's rounding: the engines' summation orders gave fits apart by 190 %; about the
    # heaviest key they agree to the fit's own conditioning
    worst = 0.0
    for seed in range(3):
        rng = np.random.default_rng(seed)
        x = rng.uniform(0, 1, (227, 2))
        x[:50] = x[0]  # ties
        y = np.sin(5 * x).sum(axis=1)
        q = rng.uniform(0, 1, (60, 2))
        for h, degree in ((0.006, 1), (0.01, 2), (0.02, 2)):
            want = local_polynomial(x, y, q, bandwidth=h, degree=degree, method="numpy")
            for method in ("dense", "stream", "native"):
                got = local_polynomial(x, y, q, bandwidth=h, degree=degree, method=method)
                assert np.array_equal(np.isnan(got), np.isnan(want))
                both = np.isfinite(want)
                gap = np.abs(got - want)[both] / np.maximum(1.0, np.abs(want[both]))
                worst = max(worst, float(gap.max(initial=0.0)))
    assert worst < 1e-2


@pytest.mark.parametrize("method", ["numpy", "native", "dense", "stream"])
def test_far_queries_reproduce_the_polynomial_whatever_the_weights_span(method):
    rng = np.random.default_rng(9)
    x = rng.uniform(0, 1, (200, 2))
    surface = lambda p: 3 + 2 * p[:, 0] - p[:, 1] ** 2 + 0.5 * p[:, 0] * p[:, 1]  # noqa: E731
    q = np.array([[1.3, 0.5], [1.6, 0.5], [-0.5, 0.5], [0.5, -0.4]])  # 6 to 30 bandwidths
    got = local_polynomial(x, surface(x) * 1e140, q, bandwidth=0.05, degree=2, method=method)
    np.testing.assert_allclose(got / 1e140, surface(q), rtol=1e-7)


def test_gradients_of_the_compiled_fit_match_finite_differences():
    x, y, q = data(120, 2, seed=2)
    with jax.enable_x64(True):

        def loss(x, y, q, h):
            fit = local_polynomial(x, y[:, 0], q, bandwidth=h, degree=2, method="stream")
            return jnp.sum(fit**2)

        args = tuple(jnp.asarray(a) for a in (x, y, q, np.array([0.3, 0.4])))
        grads = jax.grad(loss, argnums=(0, 1, 2, 3))(*args)
        for index, point in enumerate(args):
            flat = np.asarray(point, np.float64).reshape(-1)
            for i in range(0, flat.size, max(1, flat.size // 6)):
                step = np.zeros_like(flat)
                step[i] = 1e-6
                moved = [np.asarray(a) for a in args]
                up, down = list(moved), list(moved)
                up[index] = (flat + step).reshape(point.shape)
                down[index] = (flat - step).reshape(point.shape)
                numeric = (
                    float(loss(*map(jnp.asarray, up))) - float(loss(*map(jnp.asarray, down)))
                ) / 2e-6
                got = float(np.asarray(grads[index]).reshape(-1)[i])
                assert got == pytest.approx(numeric, rel=1e-5, abs=1e-7)


def test_jit_and_traced_inputs():
    x, y, q = data(100, 1, seed=3)
    fitted = jax.jit(lambda y: local_polynomial(x, y, q, bandwidth=0.2, degree=2))(y[:, 0])
    want = local_polynomial(x, y[:, 0], q, bandwidth=0.2, degree=2, method="numpy")
    np.testing.assert_allclose(np.asarray(fitted), want, rtol=1e-5, atol=1e-6)  # float32
    with pytest.raises(ValueError, match="empty: 'warn' needs concrete inputs"):
        jax.jit(lambda y: local_polynomial(x, y, q, bandwidth=0.2, empty="warn"))(y[:, 0])
    with pytest.raises(ValueError, match="method: 'numpy' sums concrete NumPy arrays"):
        local_polynomial(x, jnp.asarray(y), q, bandwidth=0.2, method="numpy")


def test_auto_takes_numpy_for_small_work_the_loop_for_the_gaussian_and_compiled_above():
    gaussian, biweight = (attnpool.kernels.get(name) for name in ("gaussian", "biweight"))
    assert plan(polynomial_facts(gaussian, 100, 1000, 2, 1, 2)) == ("numpy", 1)
    assert plan(polynomial_facts(gaussian, 10**4, 10**5, 2, 1, 2)) == ("native", 2)  # the loop
    streamed = ("pallas", 6) if device() == "gpu" else ("stream", 7)  # beyond one block
    assert plan(polynomial_facts(gaussian, 10**4, 10**5, 6, 1, 2)) == streamed  # 210 terms
    assert plan(polynomial_facts(biweight, 10**4, 10**5, 2, 1, 2)) == streamed
    x, y, q = data(2000, 2, seed=4)
    q = np.random.default_rng(5).uniform(0, 1, (3000, 2))
    got = local_polynomial(x, y, q, bandwidth=0.2, degree=2)  # 6e6 pairs × 36: compiled
    want = local_polynomial(x, y, q, bandwidth=0.2, degree=2, method="numpy")
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)


def test_leave_one_out_residuals_are_those_of_refits_without_each_row():
    x, y, _ = data(60, 2, seed=6)
    got = loo_residuals(x, y, [0.3, 0.25], "epanechnikov", 2)
    for i in (0, 17, 59):
        rest = np.delete(np.arange(60), i)
        fit = local_polynomial(x[rest], y[rest], x[i : i + 1], bandwidth=[0.3, 0.25],
                               degree=2, kernel="epanechnikov")  # fmt: skip
        np.testing.assert_allclose(got[i], y[i] - fit[0], rtol=1e-10, atol=1e-12)


def test_the_estimators_cv_bandwidth_minimises_the_criterion():
    x, y, q = data(150, 1, seed=7)
    model = LocalPolynomial().fit(x, y[:, 0])
    factor = model.bandwidth_[0] / np.std(x)
    score = np.mean(loo_residuals(x, y[:, 0], model.bandwidth_, "gaussian", 2) ** 2)
    assert model.cv_score_ == pytest.approx(score, rel=1e-12)
    for nearby in (0.8, 0.9, 1.1, 1.25):
        other = np.mean(loo_residuals(x, y[:, 0], nearby * factor * np.std(x), "gaussian", 2) ** 2)
        assert score <= other
    np.testing.assert_allclose(model.predict(q), local_polynomial(
        x, y[:, 0], q, bandwidth=model.bandwidth_, degree=2), rtol=1e-12)  # fmt: skip


def test_the_estimators_derivatives_of_a_quadratic_surface():
    rng = np.random.default_rng(8)
    X = rng.uniform(-1, 1, (400, 2))
    y = 1 + 2 * X[:, 0] - X[:, 1] + 3 * X[:, 0] * X[:, 1] + X[:, 1] ** 2
    model = LocalPolynomial(bandwidth=0.5, kernel="epanechnikov").fit(X, y)
    point = np.array([[0.2, -0.3]])
    np.testing.assert_allclose(model.predict(point), [1 + 0.4 + 0.3 - 0.18 + 0.09], rtol=1e-10)
    np.testing.assert_allclose(model.derivative(point), [[2 - 0.9, -1 + 0.6 - 0.6]], atol=1e-10)
    np.testing.assert_allclose(model.derivative(point, order=2), [[[0, 3], [3, 2]]], atol=1e-9)


@pytest.mark.parametrize(
    "options, match",
    [({"bandwidth": "silverman"}, "bandwidth: expected"), ({"method": "fgt"}, "method: expected"),
     ({"degree": 3}, "degree: expected at most 2"), ({"empty": "drop"}, "empty: expected")],
)  # fmt: skip
def test_the_estimator_refuses_by_name(options, match):
    x, y, _ = data(40, 2)
    with pytest.raises(ValueError, match=match):
        LocalPolynomial(**options).fit(x, y[:, 0])


@scikit_learn_checks([LocalPolynomial(bandwidth=2.0, degree=1, empty="nan")])
def test_scikit_learn_protocol(estimator, check):
    check(estimator)


def test_a_bandwidth_too_small_for_the_data_is_said_not_nan():
    x = np.arange(10.0)[:, None]
    undefined = (
        r"no bandwidth from 0.05× to .*× the rule of thumb gives every row a fit of degree 2"
    )
    with pytest.raises(ValueError, match=undefined):
        LocalPolynomial(degree=2, kernel="boxcar").fit(np.repeat(x, 1, axis=0)[:3], [1.0, 2.0, 4.0])
    assert math.isfinite(LocalPolynomial(degree=1).fit(x, np.sin(x[:, 0])).cv_score_)


@pytest.mark.parametrize(
    "d, degree, derivative, kernel",
    [(1, 3, 1, "gaussian"), (2, 2, 0, "epanechnikov"), (2, 2, 2, "gaussian")],
)  # fmt: skip
def test_the_tiled_kernel_equals_the_numpy_engine(d, degree, derivative, kernel):
    # Pallas' interpreter here (the same program a GPU compiles); a compact kernel's
    # queries walk only the key tiles within reach (150 keys: three tiles)
    x, y, q = data(150, d, seed=10)
    options = dict(bandwidth=0.3, degree=degree, derivative=derivative, kernel=kernel)
    want = local_polynomial(x, y, q, method="numpy", **options)
    got = local_polynomial(x, y, q, method="pallas", **options)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-11 * np.nanmax(np.abs(want)))


def test_the_tiled_kernels_gradient_matches_the_streamed_engines():
    x, y, q = data(70, 2, seed=11)
    with jax.enable_x64(True):

        def loss(y, q, h, method):
            fit = local_polynomial(x, y, q, bandwidth=h, degree=2, method=method)
            return jnp.sum(fit**2)

        args = (jnp.asarray(y[:, 0]), jnp.asarray(q[:4]), jnp.asarray([0.3, 0.4]))
        tiled = jax.grad(loss, argnums=(0, 1, 2))(*args, "pallas")
        streamed = jax.grad(loss, argnums=(0, 1, 2))(*args, "stream")
    for a, b in zip(tiled, streamed, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-8, atol=1e-10)


def test_the_tiled_fit_and_its_gradient_lower_to_triton_for_a_gpu():
    x, y, q = data(200, 2, seed=12)

    def loss(x, y, q, h):
        fit = local_polynomial(x, y[:, 0], q, bandwidth=h, degree=2, method="pallas")
        return jnp.sum(jnp.where(jnp.isnan(fit), 0.0, fit))

    arguments = (jnp.asarray(a, np.float32) for a in (x, y, q, [0.3, 0.3]))
    traced = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3))).trace(*arguments)
    text = traced.lower(lowering_platforms=("cuda",)).as_text()
    assert "__gpu$xla.gpu.triton" in text
    for kernel_name in ("tile_sums", "tile_query_cotangents", "tile_key_cotangents"):
        assert f"attnpool_{kernel_name}" in text
