"""The peers' rules of thumb by name, each held to that peer's own number: SciPy's
``gaussian_kde``, scikit-learn's ``KernelDensity`` and statsmodels' bandwidth functions
computed here; R's ``bw.nrd0`` written down from R's own output."""

import numpy as np
import pytest
from scipy import stats
from sklearn.neighbors import KernelDensity as SklearnKernelDensity
from statsmodels.nonparametric import bandwidths
from statsmodels.sandbox.nonparametric import kernels as statsmodels_kernels

import attnpool
from attnpool.bandwidth.peer_rules import PEER_RULES
from test_search_optima import FAITHFUL_WAITING


def _sample(d=1, seed=0):
    return np.random.default_rng(seed).gamma(2.0, size=(250, d))


@pytest.mark.parametrize("rule", ["scott", "silverman"])
def test_scipy_rules_give_gaussian_kde(rule):
    x = _sample()
    grid = np.linspace(-1, 10, 57)
    h = attnpool.rule_of_thumb(x, method=f"scipy.{rule}")
    np.testing.assert_allclose(attnpool.kernel_density(x, grid, bandwidth=h),
                               stats.gaussian_kde(x[:, 0], rule)(grid), rtol=1e-12)  # fmt: skip


@pytest.mark.parametrize("rule", ["scott", "silverman"])
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
@pytest.mark.parametrize("d", [1, 3])
def test_sklearn_rules_give_its_kernel_density(rule, kernel, d):
    x = _sample(d)
    theirs = SklearnKernelDensity(kernel=kernel, bandwidth=rule).fit(x)
    h = attnpool.rule_of_thumb(x, method=f"sklearn.{rule}", kernel=kernel)
    np.testing.assert_allclose(h, theirs.bandwidth_, rtol=1e-14)
    if kernel == "gaussian" or d == 1:  # (a radial compact kernel's constant differs in d)
        queries = x[:20] + 0.05
        np.testing.assert_allclose(
            attnpool.log_density(x, queries, kernel=kernel, bandwidth=h),
            theirs.score_samples(queries), rtol=1e-10,
        )  # fmt: skip


@pytest.mark.parametrize(
    "kernel, theirs",
    [("gaussian", "Gaussian"), ("epanechnikov", "Epanechnikov"), ("biweight", "Biweight")],
)
def test_statsmodels_rules_give_its_bandwidths(kernel, theirs):
    x = _sample(seed=1)[:, 0]
    record = getattr(statsmodels_kernels, theirs)()
    want = {
        "statsmodels.scott": bandwidths.bw_scott(x),
        "statsmodels.silverman": bandwidths.bw_silverman(x),
        "statsmodels.normal_reference": bandwidths.bw_normal_reference(x, kernel=record),
    }
    for name, value in want.items():
        assert attnpool.rule_of_thumb(x, method=name, kernel=kernel)[0] == pytest.approx(
            value, rel=1e-9
        ), name


def test_r_bw_nrd0_of_faithful_waiting():
    # R: density(faithful$waiting) prints "Bandwidth 'bw' = 3.988" (bw.nrd0); bw.nrd is
    # 1.06/0.9 of it where the standard deviation is the smaller spread, as here
    waiting = np.array(FAITHFUL_WAITING, float)
    nrd0 = attnpool.rule_of_thumb(waiting, method="bw.nrd0")[0]
    assert round(nrd0, 3) == 3.988
    assert attnpool.rule_of_thumb(waiting, method="bw.nrd")[0] == pytest.approx(
        nrd0 * 1.06 / 0.9, rel=1e-14
    )
    # R's bw is the kernel's standard deviation: the Epanechnikov's half-width is √5 times it
    epanechnikov = attnpool.rule_of_thumb(waiting, method="bw.nrd0", kernel="epanechnikov")
    assert epanechnikov[0] == pytest.approx(nrd0 * np.sqrt(5), rel=1e-14)
    # R's fallbacks: a column with no spread takes |x₁|, then 1
    assert attnpool.rule_of_thumb([3.0, 3.0, 3.0], method="bw.nrd0")[0] == pytest.approx(
        0.9 * 3.0 * 3 ** (-0.2)
    )


def test_kernel_density_takes_the_rules_by_name_and_refuses_what_they_cannot_do():
    x = _sample()
    model = attnpool.KernelDensity(bandwidth="bw.nrd0").fit(x)
    np.testing.assert_allclose(model.bandwidth_, attnpool.rule_of_thumb(x, method="bw.nrd0"))
    with pytest.raises(ValueError, match=r"method: 'bw.nrd0' is a peer's rule for unweighted"):
        attnpool.rule_of_thumb(x, method="bw.nrd0", weights=np.ones(len(x)))
    with pytest.raises(ValueError, match=r"SciPy's scott rule scales the data's whole covariance"):
        attnpool.rule_of_thumb(_sample(2), method="scipy.scott")
    with pytest.raises(ValueError, match=r"method: expected one of .*'bw.nrd0'"):
        attnpool.rule_of_thumb(x, method="nrd00")
    assert len(PEER_RULES) == 15  # nine rules of thumb, R's five selectors, KernSmooth's dpik
