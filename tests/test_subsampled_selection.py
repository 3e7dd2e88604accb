"""Bandwidths selected on subsamples and scaled up, as statsmodels' ``EstimatorSettings(
efficient=True)``: its bandwidths, computed here (continuous columns; its blocks' searches
stop at ``fmin``'s 1e-4)."""

import warnings

import numpy as np
import pytest
from statsmodels.nonparametric.kernel_density import EstimatorSettings, KDEMultivariate

from attnpool import select_bandwidth, select_density_bandwidth
from attnpool.bandwidth.subsample import Subsampled


def _statsmodels(x, var_type, method, **settings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (pandas and log-of-zero warnings inside statsmodels)
        options = EstimatorSettings(efficient=True, **settings)
        return KDEMultivariate(x, var_type, bw=method, defaults=options).bw


@pytest.mark.parametrize("method, rtol", [("normal_reference", 1e-12), ("cv_ml", 2e-3)])
@pytest.mark.parametrize("only", [False, True])
@pytest.mark.parametrize("d, n", [(1, 500), (2, 520)])  # 520: a last, shorter block
def test_subsampled_selection_is_statsmodels_efficient(method, rtol, only, d, n):
    x = np.random.default_rng(d).normal(size=(n, d))
    settings = {"n_sub": 50, "return_only_bw": only}
    found = select_density_bandwidth(x, method=method, subsample=Subsampled(**settings))
    np.testing.assert_allclose(found.bandwidth, _statsmodels(x, "c" * d, method, **settings),
                               rtol=rtol)  # fmt: skip


def test_random_blocks_the_mean_and_the_errors():
    x = np.random.default_rng(3).normal(size=(400, 1))
    one = select_density_bandwidth(x, subsample=Subsampled(n_sub=80, randomize=True, seed=1))
    again = select_density_bandwidth(x, subsample=Subsampled(n_sub=80, randomize=True, seed=1))
    np.testing.assert_array_equal(one.bandwidth, again.bandwidth)  # reproducible by seed
    exact = select_density_bandwidth(x).bandwidth
    assert one.bandwidth[0] == pytest.approx(exact[0], rel=0.3)  # near the whole sample's
    mean = select_density_bandwidth(x, subsample=Subsampled(n_sub=80, return_median=False))
    assert np.isfinite(mean.bandwidth).all() and mean.bandwidth[0] > 0
    with pytest.raises(ValueError, match=r"n_sub: expected from 3 to the 400 rows; received 2"):
        select_density_bandwidth(x, subsample=Subsampled(n_sub=2))
    with pytest.raises(ValueError, match=r"subsample: selects on unweighted samples"):
        select_density_bandwidth(x, weights=np.ones(400), subsample=Subsampled())


@pytest.mark.parametrize("degree, reg_type", [(0, "lc"), (1, "ll")])
def test_subsampled_regression_bandwidths_are_statsmodels_efficient(degree, reg_type):
    from statsmodels.nonparametric.kernel_regression import KernelReg

    rng = np.random.default_rng(4)
    x = rng.uniform(0, 5, (520, 1))
    y = np.sin(x[:, 0]) + 0.2 * x[:, 0] + rng.normal(0, 0.3, 520)
    found = select_bandwidth(x, y, degree=degree, subsample=Subsampled(n_sub=50))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = KernelReg(y, x, "c", reg_type=reg_type, bw="cv_ls",
                           defaults=EstimatorSettings(efficient=True, n_sub=50))  # fmt: skip
    np.testing.assert_allclose(found.bandwidth, theirs.bw, rtol=2e-3)


def test_subsampled_scaling_in_several_columns():
    # statsmodels' scaling written out: each block's bandwidths over its dispersion
    # (min(sd, IQR/1.349) with mquantiles' quartiles) times n_sub^(−1/(q+4)), the median
    # factor times the whole sample's (the blocks' searches in two columns reach flat
    # optima that statsmodels' fmin finds elsewhere: the blocks are searched here alike)
    from scipy.stats import mstats

    rng = np.random.default_rng(5)
    x = rng.uniform(0, 5, (430, 2))
    y = np.sin(x[:, 0]) + 0.5 * np.cos(x[:, 1]) + rng.normal(0, 0.3, 430)

    def dispersion(part):
        q1, q3 = mstats.mquantiles(part, [0.25, 0.75], axis=0)
        return np.minimum(part.std(axis=0), (q3 - q1) / 1.349)

    blocks = [np.arange(s, min(s + 100, 430)) for s in range(0, 430, 100)]
    factors = [
        select_bandwidth(x[rows], y[rows]).bandwidth / (dispersion(x[rows]) * 100 ** (-1 / 6))
        for rows in blocks
    ]
    want = np.median(factors, axis=0) * dispersion(x) * 430 ** (-1 / 6)
    found = select_bandwidth(x, y, subsample=Subsampled(n_sub=100))
    np.testing.assert_allclose(found.bandwidth, want, rtol=1e-12)


@pytest.mark.parametrize("method, rtol", [("normal_reference", 1e-12), ("cv_ml", 3e-3)])
@pytest.mark.parametrize("only", [False, True])
def test_subsampled_conditional_bandwidths_are_statsmodels_efficient(method, rtol, only):
    from statsmodels.nonparametric.kernel_density import KDEMultivariateConditional

    from attnpool import select_conditional_bandwidth

    rng = np.random.default_rng(6)
    x = rng.uniform(0, 5, 520)  # 520: a last, shorter block
    y = np.sin(x) + rng.normal(0, 0.4, 520)
    settings = {"n_sub": 60, "return_only_bw": only}
    found = select_conditional_bandwidth(x, y, method=method, subsample=Subsampled(**settings))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = KDEMultivariateConditional(
            endog=[y], exog=[x], dep_type="c", indep_type="c", bw=method,
            defaults=EstimatorSettings(efficient=True, **settings),
        ).bw  # fmt: skip
    np.testing.assert_allclose(found.bandwidth, theirs[::-1], rtol=rtol)  # x's, then y's
