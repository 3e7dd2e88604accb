"""Local polynomials on the compiled loop (``method="native"``: the Gaussian on a CPU):
equal to the NumPy engine on every degree, derivative and column count it serves, with
far keys passed over and not, with each row's own pair left out (leave-one-out CV); the
loop's monomial tables; the refusals."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

import attnpool
from attnpool import local_polynomial
from attnpool.methods import native_layout
from attnpool.methods.native_polynomial import monomial_tables, native_polynomial, serves
from attnpool.regression.monomials import monomials
from attnpool.regression.polynomial import loo_residuals
from attnpool.regression.polynomial_blocks import fit_block


def data(n: int, d: int, queries: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (n, d))
    y = np.stack([np.sin(4 * x).sum(axis=1), x.prod(axis=1) + rng.normal(0, 0.1, n)], axis=1)
    return x, y, rng.uniform(0.1, 0.9, (queries, d))


@pytest.mark.parametrize(
    "d, degree, derivative, h",
    [(1, 2, 0, 0.1), (1, 3, 2, 0.2), (1, 4, 1, 0.3), (1, 6, 3, 0.5), (2, 2, 0, 0.2),
     (2, 2, 1, 0.15), (2, 2, 2, 0.3), (3, 2, 1, 0.4), (4, 2, 0, 0.6), (5, 2, 2, 0.8),
     (2, 1, 1, 0.1)],
)  # fmt: skip
def test_the_loop_equals_the_numpy_engine(d, degree, derivative, h):
    x, y, q = data(700, d, 40)
    options = dict(bandwidth=h, degree=degree, derivative=derivative)
    want = local_polynomial(x, y, q, method="numpy", **options)
    got = local_polynomial(x, y, q, method="native", **options)
    assert got.dtype == np.float64 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.nanmax(np.abs(want)))


@pytest.mark.parametrize("d, h", [(1, 0.01), (2, 0.04), (3, 0.03)])
def test_far_keys_passed_over_leave_the_fit_exact(d, h, monkeypatch):
    # clustered keys at a small bandwidth, over 2^22 pairs: keys and queries in locality
    # order, boxes passed over where their weights times the monomials' growth are
    # negligible; the same fit as with every key summed, and as the NumPy engine's
    rng = np.random.default_rng(d)
    centres = rng.uniform(0, 1, (30, d))
    x = centres[rng.integers(0, 30, 2100)] + rng.normal(0, 0.03, (2100, d))
    y = np.cos(3 * x).sum(axis=1) + x[:, 0] ** 2
    q = centres[rng.integers(0, 30, 2100)] + rng.normal(0, 0.02, (2100, d))
    assert native_layout.passes_over(x / h, 2100)
    got = local_polynomial(x, y, q, bandwidth=h, degree=2, method="native")
    want = local_polynomial(x, y, q, bandwidth=h, degree=2, method="numpy")
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-8)
    monkeypatch.setattr(native_layout, "LOCAL_MIN_PAIRS", 2**62)  # every key summed
    every = local_polynomial(x, y, q, bandwidth=h, degree=2, method="native")
    np.testing.assert_allclose(got, every, rtol=1e-9, atol=1e-10)


def test_leave_one_out_residuals_on_the_loop_are_the_numpy_engines():
    x, y, _ = data(1200, 2, 0, seed=3)  # 1.4e6 pairs × 36: the planner's loop
    got = loo_residuals(x, y, [0.12, 0.1], "gaussian", 2)
    fit, _ = fit_block(x, y, x, np.array([0.12, 0.1]), attnpool.kernels.get("gaussian"),
                       monomials(2, 2), [(0, 0)], left_out=0)  # fmt: skip
    np.testing.assert_allclose(got, y - fit[:, 0], rtol=1e-9, atol=1e-12)


def test_the_estimators_cv_search_on_the_loop_equals_the_numpy_engines():
    x, y, _ = data(400, 1, 20, seed=4)
    model = attnpool.LocalPolynomial(degree=3).fit(x, y[:, 1])
    rows = np.arange(400)
    want = np.mean([(y[i, 1] - local_polynomial(
        x[rows != i], y[rows != i, 1], x[i], bandwidth=model.bandwidth_, degree=3,
        method="numpy")[0]) ** 2 for i in range(0, 400, 7)])  # fmt: skip
    got = np.mean(loo_residuals(x, y[:, 1], model.bandwidth_, "gaussian", 3)[::7] ** 2)
    assert got == pytest.approx(want, rel=1e-10)


def test_undetermined_rows_and_out_of_range_data_alike():
    x, y, q = data(300, 2, 20, seed=5)
    x[:40] = x[0]  # ties: too few distinct keys near some queries at a tiny bandwidth
    q[:5] = x[:5]
    for h in (1e-300, 1e-4, 1e150):  # 1e-300: beyond the loop's range, summed by stream
        want = local_polynomial(x, y, q, bandwidth=h, degree=2, method="numpy")
        got = local_polynomial(x, y, q, bandwidth=h, degree=2, method="native")
        assert np.array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


def test_the_monomial_table_builds_each_from_one_before_it():
    exponents = tuple(monomials(3, 4))
    table, gram_index = monomial_tables(exponents, 10)
    parent, axis = table[: len(exponents)], table[len(exponents) :]
    for g, alpha in enumerate(exponents[1:], start=1):
        assert parent[g] < g
        assert np.array_equal(np.add(exponents[parent[g]], np.eye(3, dtype=int)[axis[g]]), alpha)
    for a in range(10):
        for b in range(10):
            assert exponents[gram_index[a, b]] == tuple(np.add(exponents[a], exponents[b]))


@pytest.mark.parametrize("d, degree", [(1, 7), (3, 4), (8, 4), (17, 2), (40, 2)])
def test_the_monomials_are_every_exponent_once_by_total_degree(d, degree):
    # enumerated within the degree (product(range(degree + 1), repeat=d) took 30 s at
    # d = 17 for the loop's refusal of a fit it does not serve)
    found = monomials(d, degree)
    assert len(found) == len(set(found)) == math.comb(d + degree, degree)
    assert [sum(a) for a in found] == sorted(sum(a) for a in found) and found[0] == (0,) * d
    assert all(len(a) == d and min(a) >= 0 and sum(a) <= degree for a in found)


def test_what_the_loop_serves():
    assert serves(2, 4, 15, 6) and serves(5, 1, 126, 21) and serves(1, 2, 41, 21)
    assert not serves(6, 1, 210, 28)  # more monomials than its arrays hold
    assert not serves(9, 1, 55, 10) and not serves(2, 5, 15, 6)
    x, y, q = data(50, 6, 5)
    assert native_polynomial(q, x, y, np.ones(6), monomials(6, 4), 28) is None


@pytest.mark.parametrize(
    "x_shape, y_columns, options, match",
    [((50, 2), 1, {"kernel": "epanechnikov"}, "method: 'native' pools the built-in 'gaussian'"),
     ((50, 6), 1, {}, "received 6 columns, 1 responses, 210 monomials"),
     ((50, 2), 5, {}, "up to 8 columns and 4 responses"),
     ((50, 17), 1, {"degree": 1}, "built for up to 16 columns")],
)  # fmt: skip
def test_native_refuses_what_it_does_not_serve_by_name(x_shape, y_columns, options, match):
    rng = np.random.default_rng(6)
    x, y = rng.uniform(size=x_shape), rng.uniform(size=(x_shape[0], y_columns))
    with pytest.raises(ValueError, match=match):
        local_polynomial(x, y, x[:3], bandwidth=0.5, method="native", **options)
    with pytest.raises(ValueError, match="method: 'native' sums concrete NumPy arrays"):
        local_polynomial(jnp.asarray(x), y, x[:3], bandwidth=0.5, method="native")
