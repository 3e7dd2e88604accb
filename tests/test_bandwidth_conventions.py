"""Bandwidths given as the kernel's standard deviation (R's ``density`` and KDEpy's
convention) and as a callable: KDEpy's ``NaiveKDE`` densities, computed in the tests,
for every kernel both libraries have."""

import numpy as np
import pytest
from KDEpy import NaiveKDE

from attnpool import KernelDensity, kernels, rule_of_thumb

PAIRS = [
    ("gaussian", "gaussian"),
    ("epanechnikov", "epa"),
    ("biweight", "biweight"),
    ("triweight", "triweight"),
    ("triangular", "tri"),
    ("boxcar", "box"),
    ("tricube", "tricube"),
    ("cosine", "cosine"),
    ("laplacian", "exponential"),
]


@pytest.mark.parametrize("ours, theirs", PAIRS)
def test_a_standard_deviation_bandwidth_gives_kdepys_density(ours, theirs):
    x = np.random.default_rng(0).normal(size=300)
    grid = np.linspace(-3, 3, 41)
    model = KernelDensity(kernel=ours, bandwidth=0.4, bandwidth_kind="sd").fit(x[:, None])
    want = NaiveKDE(kernel=theirs, bw=0.4).fit(x).evaluate(grid)
    np.testing.assert_allclose(np.exp(model.score_samples(grid[:, None])), want, rtol=1e-12)
    assert model.bandwidth_[0] == pytest.approx(0.4 / kernels.standard_deviation(ours))


def test_a_callable_bandwidth_and_the_conventions_together():
    x = np.random.default_rng(1).normal(size=(200, 2))
    model = KernelDensity(bandwidth=lambda X: rule_of_thumb(X) / 2).fit(x)
    np.testing.assert_allclose(model.bandwidth_, rule_of_thumb(x) / 2)
    in_sd = KernelDensity(kernel="epanechnikov-product", bandwidth=lambda X: 0.3,
                          bandwidth_kind="sd").fit(x)  # fmt: skip
    np.testing.assert_allclose(in_sd.bandwidth_, [0.3 * np.sqrt(5)] * 2)
    # a categorical column's λ is no standard deviation: it is kept as given
    mixed = np.c_[x[:, 0], np.arange(200) % 3]
    kept = KernelDensity(bandwidth=[0.5, 0.2], var_type="cu", bandwidth_kind="sd").fit(mixed)
    np.testing.assert_allclose(kept.bandwidth_, [0.5, 0.2])
    with pytest.raises(ValueError, match=r"bandwidth_kind: expected one of 'kernel', 'sd'"):
        KernelDensity(bandwidth=0.5, bandwidth_kind="width").fit(x)
    with pytest.raises(ValueError, match=r"kernel: a standard deviation needs a kernel of finite"):
        kernels.standard_deviation("constant")
