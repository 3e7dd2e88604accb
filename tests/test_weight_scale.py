"""Weights that count only relative to each other, multiplied by one number — to the
float range's ends, subnormal, or summing to 1 — and the counts a rule of thumb takes
from them (``n = Σ w``).

References: the same call with the weights near 1 (exact powers of two back, where
subnormal weights keep only a few digits), and the rules' refusals."""

from __future__ import annotations

import numpy as np
import pytest

from attnpool import NadarayaWatson, aicc_curve, cv_curve, select_bandwidth
from attnpool.bandwidth import rule_of_thumb
from test_observation_weights import smooth_data


@pytest.mark.parametrize("scale", [1e-300, "sum to one", 1e6, 1e20, 1e300])
def test_searches_do_not_change_when_every_weight_is_multiplied(scale):
    # CV and AICc are ratios of weighted sums: their searches and curves are those of
    # the weights near 1 (the grid once followed a rule of thumb counting Σw rows, and
    # found the nearest neighbours' limit at 1e20; weights summing to 1 were refused)
    x, y = smooth_data(5, 90, 1)
    w = np.random.default_rng(6).uniform(0.5, 2.0, 90)
    c = 1 / w.sum() if scale == "sum to one" else scale
    for options in (dict(), dict(method="aicc", degree=1), dict(var_type="c", degree=1)):
        got = select_bandwidth(x, y, weights=w * c, **options)
        want = select_bandwidth(x, y, weights=w, **options)
        np.testing.assert_allclose(got.bandwidth, want.bandwidth, rtol=1e-6)
        np.testing.assert_allclose(got.objective, want.objective, rtol=1e-12)
    for curve in (cv_curve, aicc_curve):
        got, want = (curve(x, y, [0.1, 0.3], weights=u, degree=1) for u in (w * c, w))
        np.testing.assert_allclose(got, want, rtol=1e-13)
    for kernel in ("gaussian", "gaussian-order4"):  # (the pair fits' search too)
        fitted = NadarayaWatson(kernel).fit(x, y, sample_weight=w * c)
        np.testing.assert_allclose(fitted.bandwidth_, NadarayaWatson(kernel).fit(
            x, y, sample_weight=w).bandwidth_, rtol=1e-6)  # fmt: skip


@pytest.mark.parametrize("power", [-1070, 1022])
def test_densities_of_weights_at_the_floats_ends_are_those_of_weights_near_one(power):
    # Σ w overflowed at 2¹⁰²² (densities 0, criteria undefined everywhere), and subnormal
    # weights lost their digits in Σ w K; a rule of thumb's n = Σ w beyond the float
    # range was NaN, and is refused as n < 2 is
    from attnpool import kernel_cdf, kernel_density, select_density_bandwidth

    x, _ = smooth_data(21, 90, 2)
    near_one = np.random.default_rng(22).uniform(0.5, 2.0, 90)
    extreme = np.ldexp(near_one, power)
    exact = np.ldexp(extreme, -power)  # (subnormal weights keep a few digits: these)
    for function in (kernel_density, kernel_cdf):
        got, want = (function(x, x[:7], bandwidth=0.4, weights=w) for w in (extreme, exact))
        np.testing.assert_allclose(got, want, rtol=1e-13)
    for method in ("cv_ml", "cv_ls"):
        got = select_density_bandwidth(x, method=method, weights=extreme)
        want = select_density_bandwidth(x, method=method, weights=exact)
        np.testing.assert_allclose(got.bandwidth, want.bandwidth, rtol=1e-9)
    if power > 0:
        with pytest.raises(ValueError, match=r"weights: .* beyond the float range"):
            rule_of_thumb(x, weights=extreme)


def test_learned_attention_refuses_weights_counting_fewer_than_two_observations():
    # its rules of thumb count n = Σ w, as rule_of_thumb does: weights summing to 1e-300
    # started at a bandwidth of 1e59 and learned nothing from there (a 1.1 error)
    from attnpool.learn import fit_attention

    x, y = smooth_data(14, 40, 1)
    w = np.random.default_rng(17).uniform(0.5, 2.0, 40)
    with pytest.raises(ValueError, match=r"weights: .* summing to 0\.001, which is less than two"):
        fit_attention("bandwidth", x, y, weights=w / w.sum() / 1000)
    fit_attention("bandwidth", x, y, weights=2 * w / w.sum(), steps=2)  # (two observations)
