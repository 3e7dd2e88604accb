"""Higher-order kernels (R np's ``ckerorder``): moments by quadrature, the bias rate by
simulation, the signed textbook formula in long double, the estimators' CV."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from attnpool import LocalLinear, NadarayaWatson, attention_pool, kernels, nadaraya_watson

HIGHER = [f"{base}-order{order}" for base in ("gaussian", "epanechnikov") for order in (4, 6, 8)]
LD = np.longdouble


def _moment(kernel, j: int) -> float:
    limit = kernel.support if kernel.compact else 40.0
    return integrate.quad(lambda u: u**j * float(kernel(np.array(u))), -limit, limit,
                          limit=200, epsabs=1e-12)[0]  # fmt: skip


@pytest.mark.parametrize("name", HIGHER)
def test_moments_vanish_below_the_order(name):
    kernel = kernels.get(name)
    assert kernel.order == int(name[-1])
    assert _moment(kernel, 0) == pytest.approx(1.0, abs=1e-10)
    for j in range(1, kernel.order):
        assert _moment(kernel, j) == pytest.approx(0.0, abs=1e-10), j
    assert abs(_moment(kernel, kernel.order)) > 1e-4
    assert kernel(np.array([0.0, 0.5, 2.0])).min() < 0 or kernel.order > 2  # signed


def test_gaussian_polynomials_are_np_s():
    # R np's higher-order Gaussian kernels (Li & Racine, "Nonparametric Econometrics",
    # 2007, and np's kernel.c): (3 − z²)/2, (15 − 10z² + z⁴)/8, (105 − 105z² + 21z⁴ − z⁶)/48.
    expected = {4: (3 / 2, -1 / 2), 6: (15 / 8, -10 / 8, 1 / 8),
                8: (105 / 48, -105 / 48, 21 / 48, -1 / 48)}  # fmt: skip
    for order, polynomial in expected.items():
        assert kernels.higher_order("gaussian", order).polynomial == pytest.approx(polynomial)
    # Epanechnikov order 4: 15/8 (1 − 7/3 u²) times 3/4 (1 − u²) (Hansen's notes)
    assert kernels.get("epanechnikov-order4").polynomial == pytest.approx((15 / 8, -35 / 8))
    assert kernels.higher_order("gaussian", 2) is kernels.get("gaussian")


#: (kernel, ω·h pair): the bias of the fit of sin(ωx + 0.3) on a fine grid, where the
#: discretisation is negligible, grows as (ωh)^order.
RATES = [("gaussian", (0.25, 0.5)), ("epanechnikov", (0.5, 1.0))] + [
    (name, (0.25, 0.5) if name.startswith("gaussian") else (1.0, 1.5)) for name in HIGHER
]


@pytest.mark.parametrize(("name", "steps"), RATES)
def test_bias_falls_at_the_kernel_s_order(name, steps):
    kernel = kernels.get(name)
    omega = 0.5
    x = np.linspace(-20, 20, 400_001)
    queries = np.linspace(-1, 1, 5)
    errors = []
    for step in steps:
        fit = nadaraya_watson(x, np.sin(omega * x + 0.3), queries, kernel=name,
                              bandwidth=step / omega)  # fmt: skip
        errors.append(np.max(np.abs(fit - np.sin(omega * queries + 0.3))))
    rate = math.log(errors[1] / errors[0]) / math.log(steps[1] / steps[0])
    assert rate == pytest.approx(kernel.order, abs=0.35)


def _signed_oracle(queries, keys, values, kernel, h, weights=None):
    """The textbook formula with signed weights, in long double, max-shifted (the
    nearest-key limit where every weight underflows)."""
    q, k = (np.asarray(a, np.float64).astype(LD) for a in (queries, keys))
    v = np.asarray(values, np.float64).astype(LD)
    u = (q[:, None] - k[None, :]) / LD(h)
    s = u * u
    base = kernel.base.name
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_k = -s / 2 if base == "gaussian" else np.where(s < 1, np.log1p(-s), -np.inf)
        top = np.max(log_k, axis=1, keepdims=True)
        poly = sum(LD(c) * s**j for j, c in enumerate(kernel.polynomial))
        w = np.where(np.isfinite(log_k), poly * np.exp(log_k - top), 0)
    if weights is not None:
        w = w * np.asarray(weights, np.float64).astype(LD)
    return (w @ v) / w.sum(axis=1), w


@pytest.mark.parametrize("name", HIGHER)
@pytest.mark.parametrize("offset", [0.0, 1.7e9])
@pytest.mark.parametrize("bandwidth", [1e-300, 1e-9, 0.3, 2.0, 1e6])
def test_pooling_meets_the_signed_oracle(name, offset, bandwidth):
    rng = np.random.default_rng(7)
    keys = offset + np.sort(rng.uniform(0, 5, 40))
    queries = offset + np.concatenate([rng.uniform(-0.5, 5.5, 12), keys[:3]])
    values = rng.normal(size=40) * 1e3
    weights = rng.integers(1, 4, 40).astype(float)
    kernel = kernels.get(name)
    got = attention_pool(queries, keys, values, kernel=name, bandwidth=bandwidth,
                         weights=weights, empty="nearest")  # fmt: skip
    with np.errstate(all="ignore"):  # rows where every weight underflowed: NaN, then
        exact, w = _signed_oracle(queries, keys, values, kernel, bandwidth, weights)
        hollow = ~np.isfinite(exact)  # the nearest keys' (weighted) mean
        scale = np.where(
            hollow, np.abs(values).max(), (np.abs(w) @ np.abs(values)) / np.abs(w.sum(1))
        )
        # a scaled difference carries eps × the data's extent in bandwidths
        extent = min(max(np.abs(np.r_[queries, keys] - offset).max() / bandwidth, 1.0), 40.0)
    if hollow.any():
        near = np.abs(queries[hollow, None] - keys[None, :])
        ties = near == near.min(axis=1, keepdims=True)
        exact[hollow] = (ties * weights) @ values / (ties @ weights)
    tolerance = 1e-14 * extent**2 * 50 * np.asarray(scale, np.float64)
    assert np.all(np.abs(got - np.asarray(exact, np.float64)) <= tolerance)


def test_local_linear_is_weighted_least_squares_with_signed_weights():
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 4, (150, 1))
    y = np.cos(x[:, 0]) + 0.1 * rng.normal(size=150)
    queries = np.linspace(0.2, 3.8, 9)[:, None]
    for name in ("gaussian-order4", "epanechnikov-order6"):
        kernel = kernels.get(name)
        model = LocalLinear(kernel=name, bandwidth=0.9).fit(x, y)
        fit, slopes = model.predict(queries), model.marginal_effects(queries)
        for i, q in enumerate(queries[:, 0]):
            w = kernel((q - x[:, 0]) / 0.9)
            design = np.c_[np.ones(150), x[:, 0] - q]
            beta = np.linalg.solve(design.T @ (w[:, None] * design), design.T @ (w * y))
            assert fit[i] == pytest.approx(beta[0], rel=1e-9, abs=1e-9)
            assert slopes[i, 0] == pytest.approx(beta[1], rel=1e-8, abs=1e-8)


def _textbook_loo(x, y, kernel, h):
    w = kernel((x[:, None] - x[None, :]) / h)
    np.fill_diagonal(w, 0.0)
    return float(np.mean((y - w @ y / w.sum(axis=1)) ** 2))


@pytest.mark.parametrize("name", ["gaussian-order4", "epanechnikov-order4"])
def test_cv_reaches_the_criterion_s_minimum(name):
    rng = np.random.default_rng(11)
    x = rng.uniform(0, 5, 200)
    y = np.sin(2 * x) + 0.3 * rng.normal(size=200)
    kernel = kernels.get(name)
    model = NadarayaWatson(kernel=name).fit(x[:, None], y)
    h = model.bandwidth_[0]
    assert model.cv_score_ == pytest.approx(_textbook_loo(x, y, kernel, h), rel=1e-10)
    grid = np.geomspace(h / 3, 3 * h, 121)
    brute = [_textbook_loo(x, y, kernel, g) for g in grid]
    assert model.cv_score_ <= min(np.nanmin(brute), np.inf) + 1e-12
    assert np.nanargmin(brute) not in (0, len(grid) - 1)  # an interior optimum


def test_integer_weights_are_repeated_rows():
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 5, (60, 1))
    y = np.sin(x[:, 0]) + 0.2 * rng.normal(size=60)
    weights = rng.integers(0, 4, 60)
    repeated = np.repeat(np.arange(60), weights)
    queries = np.linspace(0, 5, 11)[:, None]
    for estimator in (NadarayaWatson, LocalLinear):
        weighted = estimator(kernel="gaussian-order6").fit(x, y, sample_weight=weights)
        plain = estimator(kernel="gaussian-order6").fit(x[repeated], y[repeated])
        assert weighted.bandwidth_ == pytest.approx(plain.bandwidth_, rel=1e-6)
        assert weighted.cv_score_ == pytest.approx(plain.cv_score_, rel=1e-9)
        assert weighted.predict(queries) == pytest.approx(plain.predict(queries), rel=1e-6)


@pytest.mark.parametrize("estimator", [NadarayaWatson, LocalLinear])
def test_shift_and_scale_invariance(estimator):
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 5, (80, 1))
    y = np.sin(x[:, 0]) + 0.1 * rng.normal(size=80)
    queries = np.linspace(0.5, 4.5, 7)[:, None]
    base = estimator(kernel="epanechnikov-order4", bandwidth=1.1).fit(x, y).predict(queries)
    moved = estimator(kernel="epanechnikov-order4", bandwidth=1.1).fit(x + 1.7e9, y)
    assert moved.predict(queries + 1.7e9) == pytest.approx(base, rel=1e-6, abs=1e-6)
    scaled = estimator(kernel="epanechnikov-order4", bandwidth=1.1e-7).fit(x * 1e-7, y)
    assert scaled.predict(queries * 1e-7) == pytest.approx(base, rel=1e-9, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(-1e3, 1e3), min_size=3, max_size=25, unique=True),
    st.floats(1.05, 30.0),
    st.sampled_from(HIGHER),
    st.floats(-1e6, 1e6),
)
def test_fits_move_with_the_response_and_local_linear_reproduces_lines(xs, width, name, shift):
    """(Bandwidths above the data's range: every key in every support; far smaller ones
    leave a query one key of weight in float64, where no local design has a slope.)"""
    x = np.array(xs)
    h = width * (x.max() - x.min())
    y = np.cos(x)
    queries = np.linspace(x.min(), x.max(), 5)
    plain = nadaraya_watson(x, y, queries, kernel=name, bandwidth=h, empty="nearest")
    moved = nadaraya_watson(x, y + shift, queries, kernel=name, bandwidth=h, empty="nearest")
    assert np.all(np.isfinite(plain))
    assert moved - shift == pytest.approx(plain, abs=1e-7 * (abs(shift) + 1) * 1e3)
    line = LocalLinear(kernel=name, bandwidth=h, empty="nearest").fit(x[:, None], 2 * x - 3)
    assert line.predict(queries[:, None]) == pytest.approx(2 * queries - 3, abs=1e-6 * 2e3)


def test_what_takes_them_and_what_refuses():
    x = np.linspace(0, 5, 40)
    y = np.sin(x)
    import jax

    with pytest.raises(ValueError, match="concrete arrays"):
        jax.jit(lambda v: attention_pool(x, x, v, kernel="gaussian-order4"))(y)
    with pytest.raises(ValueError, match=r"method: .*'fgt'"):
        attention_pool(x, x, y, kernel="gaussian-order4", method="fgt")
    with pytest.raises(ValueError, match="return_weights"):
        attention_pool(x, x, y, kernel="gaussian-order4", return_weights=True)
    with pytest.raises(ValueError, match="higher-order kernel, negative in places"):
        from attnpool import local_regression

        local_regression(x, y, x, kernel="gaussian-order4")
    with pytest.raises(ValueError, match="order: higher-order kernels are built on"):
        kernels.higher_order("boxcar", 4)
    fitted = NadarayaWatson(kernel="gaussian-order4", bandwidth=0.4).fit(x[:, None], y)
    for call in (
        lambda: fitted.predict(x[:, None], return_std=True),
        lambda: fitted.marginal_effects(x[:, None]),
        lambda: fitted.predict_interval(x[:, None]),
        lambda: NadarayaWatson(kernel="gaussian-order4", bandwidth="scott").fit(x[:, None], y),
    ):
        with pytest.raises(ValueError, match=r"higher-order|return_std|marginal|predict_interval"):
            call()
    with pytest.raises(ValueError, match="class probabilities"):
        from attnpool import NadarayaWatsonClassifier

        NadarayaWatsonClassifier(kernel="gaussian-order4").fit(x[:, None], x > 2)
