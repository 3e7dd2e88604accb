"""Local polynomials of any degree and their derivatives (exact), KernSmooth's binned
``locpoly`` and its plug-in bandwidth ``dpill``: against KernSmooth's own numbers, brute
force and the polynomials they must reproduce."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnpool
from attnpool import binned_local_polynomial, local_linear_plug_in_bandwidth, local_polynomial
from kernsmooth_reference import DPILL, DPILL_101, LOCPOLY


def data(name: str):
    if name == "sine":
        sine = attnpool.datasets.sine_data(n=300, seed=3)
        return sine.x_train, sine.y_train
    x, y = attnpool.datasets.wave_data(500, seed=4)
    return x[:, 0], y


@pytest.mark.parametrize("name", ["sine", "wave"])
def test_the_plug_in_bandwidth_equals_kernsmooths_dpill(name):
    x, y = data(name)
    assert local_linear_plug_in_bandwidth(x, y) == pytest.approx(DPILL[name], rel=1e-12)
    settings_101 = dict(gridsize=101, blockmax=3, trim=0.05, proptrun=0.1)
    assert local_linear_plug_in_bandwidth(x, y, **settings_101) == pytest.approx(
        DPILL_101[name], rel=1e-12
    )


@pytest.mark.parametrize("name", ["sine", "wave"])
@pytest.mark.parametrize("derivative, degree", [(0, 1), (1, 2), (2, 3), (0, 2)])
def test_the_binned_fit_equals_kernsmooths_locpoly(name, derivative, degree):
    x, y = data(name)
    h = np.ptp(x) / 20
    grid, estimate = binned_local_polynomial(
        x, y, bandwidth=h, derivative=derivative, degree=degree, gridsize=21
    )
    np.testing.assert_allclose(grid, np.linspace(x.min(), x.max(), 21), rtol=1e-15)
    want = np.array(LOCPOLY[name, derivative, degree])
    np.testing.assert_allclose(estimate, want, rtol=1e-9, atol=1e-11 * np.abs(want).max())


def brute_force(x, y, queries, h, degree, derivative, kernel="gaussian"):
    """Weighted least squares in long double at each query, the textbook way."""
    x, y = np.asarray(x, np.longdouble), np.asarray(y, np.longdouble)
    out = []
    for q in queries:
        u = x - np.longdouble(q)
        log_w = attnpool.kernels.get(kernel).log_profile(np.asarray((u / h) ** 2, float))
        w = np.exp(np.asarray(log_w, np.longdouble) - np.max(log_w))
        design = np.stack([u**k for k in range(degree + 1)], axis=1)
        gram = design.T @ (w[:, None] * design)
        beta = np.linalg.solve(gram.astype(float), (design.T @ (w * y)).astype(float))
        out.append(beta[derivative] * math.factorial(derivative))
    return np.array(out)


@pytest.mark.parametrize(
    "degree, derivative, kernel",
    [(2, 0, "gaussian"), (2, 1, "gaussian"), (3, 2, "gaussian"), (4, 1, "epanechnikov"),
     (3, 0, "tricube"), (5, 3, "gaussian")],
)  # fmt: skip
def test_exact_fits_equal_weighted_least_squares_at_each_query(degree, derivative, kernel):
    x, y = data("wave")
    queries = np.linspace(0.05, 0.95, 9)
    got = local_polynomial(x, y, queries, bandwidth=0.12, degree=degree,
                           derivative=derivative, kernel=kernel)  # fmt: skip
    want = brute_force(x, y, queries, 0.12, degree, derivative, kernel)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9 * np.abs(want).max())


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    degree=st.integers(1, 5),
    coefficients=st.lists(st.floats(-3, 3), min_size=6, max_size=6),
    shift=st.sampled_from([0.0, 1e3, -1e6]),
    scale=st.sampled_from([1e-3, 1.0, 1e4]),
)
def test_polynomials_of_the_degree_and_their_derivatives_are_reproduced(
    degree, coefficients, shift, scale
):
    # a polynomial of the fit's degree is its own fit, whatever the bandwidth, shift or scale
    poly = np.polynomial.Polynomial(coefficients[: degree + 1])
    x = np.linspace(-1, 1, 60)
    queries = np.array([-0.7, 0.1, 0.9])
    for derivative in range(degree + 1):
        got = local_polynomial(
            shift + scale * x, poly(x), shift + scale * queries,
            bandwidth=0.4 * scale, degree=degree, derivative=derivative,
        )  # fmt: skip
        want = poly.deriv(derivative)(queries) / scale**derivative
        # rounding in the fit's own units (offsets in bandwidths), carried to the derivative,
        # and that of the shifted inputs themselves (eps · |shift| / scale of each offset)
        size = np.abs(poly.coef).sum() + 1e-300
        relative = 1e-9 + 64 * np.finfo(float).eps * abs(shift) / scale
        tolerance = relative * size * math.factorial(derivative) / (0.4 * scale) ** derivative
        np.testing.assert_allclose(got, want, atol=tolerance)


def test_shift_and_scale_of_x_and_y_act_as_they_must():
    x, y = data("sine")
    q = np.linspace(0.5, 4.5, 7)
    base = local_polynomial(x, y, q, bandwidth=0.4, degree=3, derivative=1)
    moved = local_polynomial(x + 1e6, 5 * y - 2, q + 1e6, bandwidth=0.4, degree=3, derivative=1)
    np.testing.assert_allclose(moved, 5 * base, rtol=1e-7)
    stretched = local_polynomial(3 * x, y, 3 * q, bandwidth=1.2, degree=3, derivative=1)
    np.testing.assert_allclose(stretched, base / 3, rtol=1e-9)
    assert local_linear_plug_in_bandwidth(3 * x + 7, 2 * y) == pytest.approx(
        3 * local_linear_plug_in_bandwidth(x, y), rel=1e-9
    )


@pytest.mark.parametrize("derivative, bound", [(0, 1e-3), (1, 5e-3)])
def test_the_binned_fit_is_near_the_exact_fit(derivative, bound):
    # binning, and the kernel cut at four bandwidths (which the fits near the ends feel
    # most: compared four bandwidths inside)
    x, y = data("wave")
    for gridsize in (101, 401, 1601):
        grid, binned = binned_local_polynomial(
            x, y, bandwidth=0.05, derivative=derivative, degree=derivative + 1,
            gridsize=gridsize,
        )  # fmt: skip
        exact = local_polynomial(x, y, grid, bandwidth=0.05, degree=derivative + 1,
                                 derivative=derivative)  # fmt: skip
        inside = (grid > x.min() + 0.2) & (grid < x.max() - 0.2)
        error = np.abs(binned - exact)[inside]
        assert error.max() <= bound * np.ptp(exact)


@pytest.mark.parametrize("degree", [1, 2])
def test_binned_nodes_whose_counts_cannot_carry_the_polynomial_are_nan(degree):
    """An outlier 50 units out binned onto one node alone: there S is singular (numpy
    raised ``LinAlgError``); the nodes near it are NaN, the others equal the fit of the
    sample without it (whose counts it does not reach)."""
    x, y = data("wave")
    grid, with_outlier = binned_local_polynomial(
        np.r_[x, 50.0], np.r_[y, 0.0], bandwidth=0.05, degree=degree, gridsize=801,
        range_x=(x.min(), 50.0),
    )  # fmt: skip
    _, without = binned_local_polynomial(x, y, bandwidth=0.05, degree=degree, gridsize=801,
                                         range_x=(x.min(), 50.0))  # fmt: skip
    reached = np.abs(grid - 50.0) <= 4 * 0.05
    assert np.isnan(with_outlier[reached]).all()
    np.testing.assert_array_equal(with_outlier[~reached], without[~reached])
    assert np.isfinite(with_outlier[grid <= x.max()]).sum() > 0


def test_columns_of_responses_are_fitted_alike():
    x, y = data("sine")
    q = np.linspace(1, 4, 5)
    both = local_polynomial(x, np.c_[y, -y], q, bandwidth=0.5, degree=2)
    np.testing.assert_allclose(both[:, 0], local_polynomial(x, y, q, bandwidth=0.5), rtol=1e-14)
    np.testing.assert_allclose(both[:, 1], -both[:, 0], rtol=1e-14)


def test_undetermined_neighbourhoods_follow_the_empty_policy():
    x, y = np.array([0.0, 0.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0, 4.0])
    kw = dict(bandwidth=0.1, degree=2, kernel="epanechnikov")
    with pytest.warns(attnpool.EmptyNeighbourhoodWarning, match="2 of 2 queries"):
        assert np.isnan(local_polynomial(x, y, [0.0, 5.0], **kw)).all()  # (silent before)
    with pytest.warns(attnpool.EmptyNeighbourhoodWarning, match="2 of 2 queries"):
        local_polynomial(x, y, [0.0, 5.0], empty="warn", **kw)
    with pytest.raises(
        ValueError, match="empty: 2 of 2 queries have too few distinct training points"
    ):
        local_polynomial(x, y, [0.0, 5.0], empty="raise", **kw)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: local_polynomial(
                [0, 1, 2], [0, 1, 2], [1], bandwidth=1, derivative=3, degree=2
            ),
            "derivative: expected at most degree",
        ),
        (lambda: local_polynomial([0, 1, 2], [0, 1, 2], [1], bandwidth=0), "bandwidth"),
        (
            lambda: local_polynomial(np.zeros((3, 2)), [0, 1, 2], [[1, 1]], bandwidth=1, degree=3),
            "degree: expected at most 2 in 2 columns",
        ),
        (lambda: local_polynomial([0, 1, 2], [0, 1, 2], [1], bandwidth=1, kernel="dot"), "kernel"),
        (
            lambda: binned_local_polynomial([0, 1, 2], [0, 1, 2], bandwidth=0.001, gridsize=11),
            "gridsize: 11 nodes are too coarse",
        ),
        (lambda: local_linear_plug_in_bandwidth([0, 1, 2], [0, 1]), "x, y"),
        (
            lambda: local_linear_plug_in_bandwidth(np.arange(50.0), np.arange(50.0), trim=0.5),
            "trim",
        ),
    ],
)
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_dpill_by_name_in_the_search_and_the_local_linear_estimator():
    x, y = data("sine")
    found = attnpool.select_bandwidth(x, y, method="dpill", degree=1)
    assert found.method == "dpill" and found.bandwidth[0] == pytest.approx(DPILL["sine"], 1e-12)
    model = attnpool.LocalLinear(bandwidth="dpill").fit(x[:, None], y)
    assert model.bandwidth_[0] == pytest.approx(DPILL["sine"], rel=1e-12)
    assert "plug-in (Ruppert, Sheather & Wand)" in str(model.summary())
    with pytest.raises(ValueError, match="method: 'dpill' is the plug-in bandwidth of a local"):
        attnpool.NadarayaWatson(bandwidth="dpill").fit(x[:, None], y)
    with pytest.raises(ValueError, match="kernel='epanechnikov'"):
        attnpool.select_bandwidth(x, y, method="dpill", degree=1, kernel="epanechnikov")


def brute_force_surface(x, y, queries, h, kernel="gaussian"):
    """Weighted least squares on [1, u, v, u², uv, v²] at each query: the fit, the
    gradient and the Hessian, in long double where NumPy allows."""
    out = []
    record = attnpool.kernels.get(kernel)
    for q in queries:
        u = x - q
        w = np.exp(np.asarray(record.log_profile(np.sum((u / h) ** 2, axis=1)), float))
        a, b = u[:, 0], u[:, 1]
        design = np.stack([np.ones_like(a), a, b, a * a, a * b, b * b], axis=1)
        beta = np.linalg.solve(design.T @ (w[:, None] * design), design.T @ (w * y))
        out.append((beta[0], beta[1:3], np.array([[2 * beta[3], beta[4]], [beta[4], 2 * beta[5]]])))
    return out


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_several_columns_fit_gradient_and_hessian_equal_least_squares(kernel):
    rng = np.random.default_rng(9)
    x = rng.uniform(0, 2, (400, 2))
    y = np.sin(2 * x[:, 0]) * np.cos(x[:, 1]) + rng.normal(0, 0.05, 400)
    queries = rng.uniform(0.4, 1.6, (6, 2))
    h = np.array([0.5, 0.6])
    fit = local_polynomial(x, y, queries, bandwidth=h, degree=2, kernel=kernel)
    gradient = local_polynomial(x, y, queries, bandwidth=h, degree=2, derivative=1, kernel=kernel)
    hessian = local_polynomial(x, y, queries, bandwidth=h, degree=2, derivative=2, kernel=kernel)
    assert gradient.shape == (6, 2) and hessian.shape == (6, 2, 2)
    for row, (value, slope, curvature) in enumerate(brute_force_surface(x, y, queries, h, kernel)):
        assert fit[row] == pytest.approx(value, rel=1e-9, abs=1e-11)
        np.testing.assert_allclose(gradient[row], slope, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(hessian[row], curvature, rtol=1e-7, atol=1e-9)


def test_a_quadratic_surface_is_reproduced_with_its_derivatives():
    grid = np.linspace(-1, 1, 21)
    x = np.stack(np.meshgrid(grid, grid), -1).reshape(-1, 2) * [3.0, 0.5] + [1e4, -7.0]
    u, v = (x[:, 0] - 1e4) / 3, (x[:, 1] + 7) / 0.5
    y = np.c_[1 + 2 * u - v + 0.5 * u * u + 3 * u * v - v * v, u]
    q = np.array([[1e4, -7.0], [1e4 + 1.5, -6.9]])
    qu, qv = (q[:, 0] - 1e4) / 3, (q[:, 1] + 7) / 0.5
    h = [1.2, 0.2]
    fit = local_polynomial(x, y, q, bandwidth=h)
    gradient = local_polynomial(x, y, q, bandwidth=h, derivative=1)
    hessian = local_polynomial(x, y, q, bandwidth=h, derivative=2)
    want_fit = 1 + 2 * qu - qv + 0.5 * qu * qu + 3 * qu * qv - qv * qv
    np.testing.assert_allclose(fit[:, 0], want_fit, rtol=1e-8)
    np.testing.assert_allclose(fit[:, 1], qu, atol=1e-8)
    want_gradient = np.stack([(2 + qu + 3 * qv) / 3, (-1 + 3 * qu - 2 * qv) / 0.5], axis=1)
    np.testing.assert_allclose(gradient[:, :, 0], want_gradient, rtol=1e-7)
    want_hessian = np.array([[1 / 9, 3 / 1.5], [3 / 1.5, -2 / 0.25]])
    np.testing.assert_allclose(hessian[:, :, :, 0], np.broadcast_to(want_hessian, (2, 2, 2)),
                               rtol=1e-6)  # fmt: skip


def test_vanishing_and_huge_bandwidths_neither_break_nor_lose_the_fit():
    # a huge bandwidth weighs every point alike: the global least-squares polynomial (the
    # offsets standardised at each query keep the Gram matrix well scaled); a vanishing
    # one leaves no key of positive weight: undetermined rows, not an error
    rng = np.random.default_rng(11)
    x = rng.uniform(0, 1, 200)
    y = np.sin(3 * x) + rng.normal(0, 0.1, 200)
    q = np.array([0.3, 0.7])
    for h in (1e6, 1e150):  # (at 1e6 the weights differ by 1e-13)
        got = local_polynomial(x, y, q, bandwidth=h, degree=2)
        np.testing.assert_allclose(got, np.polyval(np.polyfit(x, y, 2), q), rtol=1e-10)
        slope = local_polynomial(x, y, q, bandwidth=h, degree=2, derivative=1)
        np.testing.assert_allclose(slope, np.polyval(np.polyder(np.polyfit(x, y, 2)), q),
                                   rtol=1e-9)  # fmt: skip
    X = rng.uniform(0, 1, (200, 2))
    gradient = local_polynomial(X, X[:, 0] ** 2 + X[:, 1], [[0.5, 0.5]], bandwidth=[1e200, 1e200],
                                derivative=1)  # fmt: skip
    np.testing.assert_allclose(gradient, [[1.0, 1.0]], rtol=1e-9)
    with pytest.warns(attnpool.EmptyNeighbourhoodWarning):
        assert np.isnan(local_polynomial(x, y, q, bandwidth=1e-300, degree=2)).all()
    with pytest.raises(ValueError, match="empty: 2 of 2 queries"):
        local_polynomial(x, y, q, bandwidth=1e-300, degree=0, empty="raise")


@pytest.mark.parametrize(
    "x_scale, x_shift, y_scale", [(1e-150, 0, 1), (1e150, 0, 1), (1, 1e4, 1), (1, 1e9, 1),
                                  (1, 0, 1e200), (1, 0, 1e-200)],
)  # fmt: skip
def test_dpill_follows_the_data_at_any_scale_and_shift(x_scale, x_shift, y_scale):
    # computed on x mapped to [0, 1] and y standardised: raw quartics of x shifted by 1e4
    # were 9% off, and shifts of 1e9 asked for 175 GB
    x, y = data("wave")
    got = local_linear_plug_in_bandwidth(x * x_scale + x_shift, y * y_scale + 3 * y_scale)
    assert got / x_scale == pytest.approx(DPILL["wave"], rel=1e-6)


@pytest.mark.parametrize("scale", [1e-100, 1e100])
def test_the_binned_fit_follows_the_data_at_any_scale(scale):
    # moments in grid steps: the sixth powers of offsets of 1e-100 no longer underflow
    x, y = data("wave")
    _, base = binned_local_polynomial(x, y, bandwidth=0.05, derivative=2, degree=3)
    _, scaled = binned_local_polynomial(x * scale, y, bandwidth=0.05 * scale, derivative=2,
                                        degree=3)  # fmt: skip
    np.testing.assert_allclose(scaled * scale**2, base, rtol=1e-9)


def test_dpill_names_what_it_cannot_estimate():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 200)
    # a constant response has neither noise nor curvature (Python's "float division by
    # zero" before)
    with pytest.raises(ValueError, match=r"y: the response is constant \(2.5\)"):
        local_linear_plug_in_bandwidth(x, np.full(200, 2.5))
    # noise-free data: the plug-in tends to 0, below the grid (the grid's own error before)
    with pytest.raises(ValueError, match=r"y: the plug-in's .* bandwidth .* almost no noise"):
        local_linear_plug_in_bandwidth(x, x**2)
    # a gap wider than the fits reach: their estimate is undefined there, and so was the
    # bandwidth ("bandwidth: expected a positive number; received nan" before)
    gapped = np.r_[x[:150], 3 + x[150:]]
    with pytest.raises(ValueError, match=r"x: the plug-in's binned fits .* undefined at 1\."):
        local_linear_plug_in_bandwidth(gapped, np.sin(6 * gapped) + rng.normal(0, 0.2, 200))
    # the estimator takes a constant response as its searches do: the rule of thumb
    with pytest.warns(attnpool.bandwidth.ConstantResponseWarning, match="dpill"):
        fitted = attnpool.LocalLinear(bandwidth="dpill").fit(x[:, None], np.full(200, 2.5))
    np.testing.assert_allclose(fitted.bandwidth_, attnpool.rule_of_thumb(x[:, None]), rtol=1e-12)


def test_dpill_sums_over_the_data_on_a_grid_wider_than_them():
    # nodes beyond the data (range_x wider) hold no count: their undefined fits weigh 0
    # in θ₂₂ and σ², which were NaN; the answer is that of the sums over the data alone
    x, y = data("wave")
    wide = local_linear_plug_in_bandwidth(x, y, range_x=(x.min() - 0.5, x.max() + 0.5))
    assert np.isfinite(wide) and 0.5 < wide / DPILL["wave"] < 2


@pytest.mark.parametrize(
    "seed, n, expected",
    [(6, 100, 0.19874488054211728), (22, 1000, 0.06065319770802885)],
)
def test_dpill_answers_where_only_the_outer_nodes_curvature_is_undefined(seed, n, expected):
    # θ₂₂ sums the inner nodes (proptrun): a skewed sample's sparse tail may leave the
    # outer nodes' pilot curvature undefined, which KernSmooth's sum never reads. The
    # expected values are this function's before it checked its fits (its numbers equal
    # KernSmooth's on the reference data, to 1e-12, above).
    rng = np.random.default_rng(seed)
    x = rng.exponential(size=n)
    y = np.sin(x) + 0.2 * rng.normal(size=n)
    assert local_linear_plug_in_bandwidth(x, y) == pytest.approx(expected, rel=1e-12)
