"""Bandwidths selected on subsamples and scaled up, as statsmodels' ``EstimatorSettings(
efficient=True)``: its bandwidths, computed here (continuous columns; its blocks' searches
stop at ``fmin``'s 1e-4)."""

import warnings

import numpy as np
import pytest
from statsmodels.nonparametric.kernel_density import EstimatorSettings, KDEMultivariate

from attnpool import select_density_bandwidth
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
