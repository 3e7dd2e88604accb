"""Density bandwidths of weighted samples: likelihood and least-squares cross-validation
with observation weights, each row left out whole, held to brute force on the sample
that repeats each row ``w_i`` times (its copies left out together), and statsmodels'
``normal_reference`` of that repeated sample. Identical rows stay separate rows, as
without weights."""

import warnings

import numpy as np
import pytest
from scipy import stats

import attnpool
from attnpool.density.criteria import least_squares_criterion, loo_log_density


def _sample(seed=0, n=120):
    rng = np.random.default_rng(seed)
    x = np.r_[rng.normal(0, 1, n // 2), rng.normal(3, 0.6, n - n // 2)][:, None]
    w = rng.integers(1, 5, n).astype(float)
    return x, w


def _brute_loo(x, w, h):
    """log f̂₋ᵢ(xᵢ) of the repeated sample, row i's copies all left out (float64 loops)."""
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        others = np.arange(x.shape[0]) != i
        k = stats.norm.pdf((x[i, 0] - x[others, 0]) / h) / h
        out[i] = np.log(np.sum(w[others] * k) / np.sum(w[others]))
    return out


def _brute_ls(x, w, h):
    """∫ f̂² − 2 Σ (w_i/W) f̂₋ᵢ(xᵢ) of the repeated sample, the Gaussian's convolution."""
    total = w.sum()
    diff = x[:, 0][:, None] - x[:, 0][None, :]
    square = w @ (stats.norm.pdf(diff / (np.sqrt(2) * h)) / (np.sqrt(2) * h)) @ w / total**2
    loo = np.exp(_brute_loo(x, w, h))
    return square - 2 * (w @ loo) / total


def test_weighted_criteria_equal_brute_force():
    x, w = _sample()
    for h in (0.15, 0.4, 1.1):
        np.testing.assert_allclose(loo_log_density(x, h, "gaussian", weights=w),
                                   _brute_loo(x, w, h), rtol=1e-12)  # fmt: skip
        assert least_squares_criterion(x, h, "gaussian", weights=w) == pytest.approx(
            _brute_ls(x, w, h), rel=1e-11
        )


def test_large_samples_are_summed_by_expansions_to_brute_force():
    # from 1000 rows, the fgt backend's leave-one-out sums (NumPy pairs before: a search
    # of 20 000 weighted rows took 128 s, now 0.1 s); weights over twelve decades, a
    # far cluster, bandwidths from a thousandth of the spacing up
    from attnpool.density import criteria

    rng = np.random.default_rng(4)
    x = np.r_[rng.normal(0, 1, 1400), rng.normal(60, 0.01, 100)][:, None]
    w = 10.0 ** rng.uniform(-6, 6, 1500)
    assert criteria.by_expansions(x, attnpool.density.mixed_columns(x, "gaussian", 1.0, "c")[0])
    for h in (2e-6, 0.003, 0.15, 2.0):
        np.testing.assert_allclose(loo_log_density(x, h, "gaussian", weights=w),
                                   _brute_loo_log(x, w, h), rtol=1e-10, atol=1e-10)  # fmt: skip
    # least squares alike (NumPy pairs: 10.6 s a search of 5000 rows; now 0.3 s), its
    # ∫ f̂² the Gaussian at √2 h by the same backend
    x = x[:1200]
    for weights in (w[:1200], np.ones(1200)):
        for h in (0.05, 0.15, 2.0):
            found = least_squares_criterion(x, h, "gaussian", weights=weights)
            assert found == pytest.approx(_brute_ls(x, weights, h), rel=1e-11)


def _brute_loo_log(x, w, h):
    """:func:`_brute_loo` in the log domain (a bandwidth far below the spacing underflows
    every pair's kernel): ``log Σ_{j≠i} w_j φ((xᵢ − x_j)/h)/h − log Σ_{j≠i} w_j``."""
    from scipy.special import logsumexp

    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        others = np.arange(x.shape[0]) != i
        log_k = stats.norm.logpdf((x[i, 0] - x[others, 0]) / h) - np.log(h)
        out[i] = logsumexp(log_k, b=w[others]) - np.log(np.sum(w[others]))
    return out


@pytest.mark.parametrize("method", ["cv_ml", "cv_ls"])
def test_weighted_searches_find_the_brute_force_optimum(method):
    x, w = _sample(seed=1)
    found = attnpool.select_density_bandwidth(x, method=method, weights=w)
    grid = found.bandwidth[0] * np.geomspace(0.8, 1.25, 61)
    if method == "cv_ml":
        values = [-(w @ _brute_loo(x, w, h)) / w.sum() for h in grid]
    else:
        values = [_brute_ls(x, w, h) for h in grid]
    assert found.objective <= min(values) + 1e-12  # nothing on the grid is lower
    assert abs(np.log(grid[int(np.argmin(values))] / found.bandwidth[0])) <= np.log(1.25) / 30


@pytest.mark.parametrize("method", ["cv_ml", "cv_ls"])
def test_weights_are_relative(method):
    # a common factor changes nothing, and equal weights select what no weights select
    x, w = _sample(seed=2)
    one = attnpool.select_density_bandwidth(x, method=method, weights=w)
    scaled = attnpool.select_density_bandwidth(x, method=method, weights=3.5 * w)
    np.testing.assert_allclose(scaled.bandwidth, one.bandwidth, rtol=1e-9)
    plain = attnpool.select_density_bandwidth(x, method=method)
    constant = attnpool.select_density_bandwidth(x, method=method, weights=np.full(len(x), 2.0))
    np.testing.assert_allclose(constant.bandwidth, plain.bandwidth, rtol=1e-6)


@pytest.mark.parametrize("method", ["cv_ml", "cv_ls"])
def test_tied_rows_stay_rows_with_weights(method):
    """Values recorded to 0.1: equal weights merged the ties into one row each, left out
    together, and chose 0.59 (cv_ml) or 0.73 (cv_ls) where no weights choose 0.24 or
    0.21 (statsmodels' numbers, Scott's rule 0.33). Each row is its own observation."""
    x = np.round(np.random.default_rng(5).normal(size=(300, 1)), 1)
    plain = attnpool.select_density_bandwidth(x, method=method)
    for weights in (np.ones(300), np.full(300, 1e-3)):
        found = attnpool.select_density_bandwidth(x, method=method, weights=weights)
        np.testing.assert_allclose(found.bandwidth, plain.bandwidth, rtol=1e-6)
    assert 0.2 < plain.bandwidth[0] < 0.25


def test_normal_reference_is_statsmodels_of_the_repeated_sample():
    from statsmodels.nonparametric.kernel_density import KDEMultivariate

    x, w = _sample(seed=3)
    repeated = np.repeat(x[:, 0], w.astype(int))
    found = attnpool.select_density_bandwidth(x, method="normal_reference", weights=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # (pandas, inside statsmodels)
        theirs = KDEMultivariate(repeated, var_type="c", bw="normal_reference").bw
    np.testing.assert_allclose(found.bandwidth, theirs, rtol=1e-12)


def test_kernel_density_with_sample_weight_selects_by_cross_validation():
    x, w = _sample(seed=4)
    model = attnpool.KernelDensity(bandwidth="cv_ml").fit(x, sample_weight=w)
    found = attnpool.select_density_bandwidth(x, method="cv_ml", weights=w)
    np.testing.assert_allclose(model.bandwidth_, found.bandwidth)
    # zero weights leave rows out
    with_zeros = attnpool.KernelDensity(bandwidth="cv_ml").fit(
        np.r_[x, [[50.0]]], sample_weight=np.r_[w, 0.0]
    )
    np.testing.assert_allclose(with_zeros.bandwidth_, found.bandwidth, rtol=1e-12)


def test_weights_place_the_search_grid_as_the_regressions_do():
    """The grid is multiples of the weighted sample's rule of thumb (its rows' weights
    taken as relative), as a regression's search takes them: 300 rows at weight 10⁻⁶
    spread over ±5·10⁴ beside 300 normal ones set an unweighted rule 10⁴ times wider."""
    from attnpool.bandwidth.rules import search_start

    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(0, 1, 300), rng.uniform(-5e4, 5e4, 300)][:, None]
    w = np.r_[np.ones(300), np.full(300, 1e-6)]
    found = attnpool.select_density_bandwidth(x, method="cv_ml", weights=w)
    multipliers, objectives = found.grid
    share = w / w.sum()
    for k in (0, len(multipliers) // 2, len(multipliers) - 1):
        h = search_start(x, weights=w) * multipliers[k]
        expected = -(share @ loo_log_density(x, h, "gaussian", "c", w))
        assert objectives[k] == pytest.approx(expected, rel=1e-10)


def _resample(seed: int = 5):
    """A bootstrap resample of a normal sample of 200: a third of its rows are copies."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=200)
    return np.random.default_rng(seed).choice(x, 200)


COPIES = "rows repeat another exactly, and they set the cv_ml bandwidth"


def test_copies_that_set_the_likelihood_bandwidth_say_so():
    """Each copy of a resample predicts its twins: the sample's 0.36 became 0.095 — a
    third of its rows predicted at h → 0 by their own copies —, silently (statsmodels
    alike). The bandwidth is the criterion's; the warning names the one with each row's
    copies left out together, which its distinct rows weighted by their counts select."""
    x = _resample()
    with pytest.warns(attnpool.TiedDataWarning, match=COPIES) as caught:
        found = attnpool.select_density_bandwidth(x, method="cv_ml")
    assert caught[0].filename == __file__
    values, counts = np.unique(x, return_counts=True)
    apart = attnpool.select_density_bandwidth(values, method="cv_ml", weights=counts)
    assert f"left out together it is {apart.bandwidth[0]:.4g}" in str(caught[0].message)
    assert found.bandwidth[0] < apart.bandwidth[0] / 4
    assert 0.3 < apart.bandwidth[0] < 0.6  # (the sample's own: 0.36)
    plain = np.arange(-3.0, 3.0, 0.05)
    for h in np.geomspace(found.bandwidth[0] / 1.5, found.bandwidth[0] * 1.5, 3):
        # the bandwidth is the copies' criterion's optimum, held to brute force
        assert _copies_loo(x, h) <= _copies_loo(x, found.bandwidth[0]) + 1e-9
    with pytest.warns(attnpool.TiedDataWarning, match=COPIES):
        attnpool.KernelDensity(bandwidth="cv_ml").fit(x[:, None], sample_weight=np.ones(200))
    for power in (1022, -1070):  # (the copies' merged weights overflowed at 2¹⁰²²)
        with pytest.warns(attnpool.TiedDataWarning, match=COPIES):
            again = attnpool.select_density_bandwidth(
                x, method="cv_ml", weights=np.ldexp(np.ones(200), power)
            )
        np.testing.assert_allclose(again.bandwidth, found.bandwidth, rtol=1e-9)
    _no_warning(lambda: attnpool.select_density_bandwidth(plain + 1e-3 * np.sin(plain)))


def _copies_loo(x, h):
    """Σ log f̂₋ᵢ(xᵢ) of the sample as given, each row alone left out (its copies stay)."""
    k = stats.norm.pdf((x[:, None] - x[None, :]) / h) / h
    np.fill_diagonal(k, 0.0)
    return float(np.sum(np.log(k.sum(axis=1) / (x.size - 1))))


def _no_warning(select):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return select()


def test_values_recorded_to_a_resolution_are_not_copies():
    """Rounded to 0.1 their ties are distinct observations: no warning (leaving each
    value's ties out together would choose 0.59 where 0.24 is the sample's)."""
    x = np.round(np.random.default_rng(5).normal(size=(300, 1)), 1)
    _no_warning(lambda: attnpool.select_density_bandwidth(x, method="cv_ml"))
    _no_warning(lambda: attnpool.select_density_bandwidth(x * 7.0 + 1e6, method="cv_ml"))


def test_copies_at_the_least_squares_floor_are_told_to_be_weights():
    with pytest.warns(attnpool.TiedDataWarning, match="count as its weight"):
        attnpool.select_density_bandwidth(_resample(), method="cv_ls")
    recorded = np.r_[np.zeros(40), np.random.default_rng(3).integers(-30, 30, 60) * 1.2]
    with pytest.warns(attnpool.TiedDataWarning, match="prefer 'normal_reference' or 'cv_ml'"):
        attnpool.select_density_bandwidth(recorded, method="cv_ls")
