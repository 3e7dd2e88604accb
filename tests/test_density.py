"""Kernel densities (attnpool.density): against scikit-learn's KernelDensity and
statsmodels' KDEMultivariate at the same bandwidths, by quadrature (they integrate to
1), with observation weights as repeated rows, and scikit-learn's estimator checks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KernelDensity as ScikitKernelDensity
from statsmodels.nonparametric.kernel_density import KDEMultivariate

from attnpool import KernelDensity, kernel_density, log_density
from sklearn_checks import scikit_learn_checks

# our name -> scikit-learn's, radial kernels with the same bandwidth meaning
SCIKIT = {
    "gaussian": "gaussian",
    "boxcar": "tophat",
    "epanechnikov": "epanechnikov",
    "laplacian": "exponential",
    "triangular": "linear",
    "cosine": "cosine",
}


def sample(seed, n=300, d=1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(40, d)) * 1.3


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("name", list(SCIKIT))
def test_equal_to_scikit_learn(name, d):
    x, queries = sample(d, d=d)
    want = ScikitKernelDensity(kernel=SCIKIT[name], bandwidth=0.8).fit(x).score_samples(queries)
    got = log_density(x, queries, kernel=name, bandwidth=0.8)
    # scikit-learn's tree sums leave ~e^-40 of rounding where a compact kernel reaches no
    # point; ours is exactly -inf there (the nearest point is beyond the support)
    reached = np.min(np.linalg.norm(queries[:, None] - x[None], axis=2), axis=1) < 0.8
    if name in ("gaussian", "laplacian"):
        reached[:] = True
    assert np.all(np.isneginf(got[~reached]))
    if name == "cosine" and d == 2:
        return  # scikit-learn's two-dimensional cosine constant differs: see the next test
    np.testing.assert_allclose(got[reached], want[reached], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "name", ["cosine", "epanechnikov", "triangular", "gaussian", "tricube-product", "boxcar"]
)
def test_densities_integrate_to_one(name):
    # in two dimensions by the trapezoid rule (scikit-learn's 2-D cosine estimate, its
    # log densities 1.0123 below ours, integrates to 0.36 on this grid; ours to 1)
    x = np.random.default_rng(1).normal(size=(50, 2)) * 0.5
    grid = np.linspace(-6, 6, 601)
    u, v = np.meshgrid(grid, grid)
    f = kernel_density(x, np.c_[u.ravel(), v.ravel()], kernel=name, bandwidth=[0.7, 0.9])
    total = np.trapezoid(np.trapezoid(f.reshape(u.shape), grid), grid)
    np.testing.assert_allclose(total, 1.0, rtol=2e-4)
    one = np.linspace(-8, 8, 4001)
    f1 = kernel_density(x[:, 0], one, kernel=name, bandwidth=0.4)
    np.testing.assert_allclose(np.trapezoid(f1, one), 1.0, rtol=1e-5)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_equal_to_statsmodels_kdemultivariate(d):
    x, queries = sample(10 + d, n=200, d=d)
    bandwidth = [0.4 + 0.15 * j for j in range(d)]
    want = KDEMultivariate(x, var_type="c" * d, bw=bandwidth).pdf(queries)
    np.testing.assert_allclose(kernel_density(x, queries, bandwidth=bandwidth), want, rtol=1e-10)


def test_far_from_the_data_the_log_density_is_finite():
    # e^-5000 underflows a density, not its logarithm
    x = np.zeros(3)
    got = log_density(x, np.array([100.0]), bandwidth=1.0)
    np.testing.assert_allclose(got, -0.5 * 100.0**2 - 0.5 * np.log(2 * np.pi), rtol=1e-14)


def test_weights_are_repeated_rows():
    x, queries = sample(20, n=80, d=2)
    w = np.random.default_rng(21).integers(0, 4, 80).astype(float)
    repeated = np.repeat(np.arange(80), w.astype(int))
    for kernel in ("gaussian", "epanechnikov"):
        np.testing.assert_allclose(
            log_density(x, queries, kernel=kernel, bandwidth=0.7, weights=w),
            log_density(x[repeated], queries, kernel=kernel, bandwidth=0.7),
            rtol=1e-12,
        )


def test_estimator_scores_select_and_sample():
    x, queries = sample(30, n=400)
    model = KernelDensity(bandwidth="scott").fit(x)
    scikit = ScikitKernelDensity(bandwidth=float(model.bandwidth_[0])).fit(x)
    np.testing.assert_allclose(model.score_samples(queries), scikit.score_samples(queries),
                               rtol=1e-12)  # fmt: skip
    np.testing.assert_allclose(model.score(queries), scikit.score(queries), rtol=1e-12)
    search = GridSearchCV(KernelDensity(), {"bandwidth": [0.05, 0.3, 3.0]}, cv=3).fit(x)
    assert search.best_params_["bandwidth"] == 0.3
    # draws have the estimated density: a two-sample test against a large draw of it
    draws = model.sample(2000, random_state=1)[:, 0]
    reference = x[np.random.default_rng(2).integers(0, 400, 20000), 0]
    reference = reference + np.random.default_rng(3).normal(size=20000) * model.bandwidth_[0]
    assert stats.ks_2samp(draws, reference).pvalue > 0.01
    with pytest.raises(ValueError, match="sample draws from the 'gaussian' and 'boxcar'"):
        KernelDensity(kernel="epanechnikov").fit(x).sample()


def test_bad_kernels_are_named():
    with pytest.raises(ValueError, match="kernel: a density needs a distance kernel"):
        log_density(np.zeros(3), np.zeros(1), kernel="constant")
    with pytest.raises(ValueError, match="kernel: a density needs a distance kernel"):
        log_density(np.zeros(3), np.zeros(1), kernel="dot")


@scikit_learn_checks([KernelDensity(bandwidth=0.5), KernelDensity("epanechnikov", "silverman")])
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("d, n", [(1, 200), (2, 150)])
def test_likelihood_cross_validation_reaches_statsmodels_optimum(d, n):
    from attnpool.density.selection import loo_log_density, select_density_bandwidth

    x = np.random.default_rng(40 + d).normal(size=(n, d)) * np.array([1.0, 2.0])[:d]
    ours = select_density_bandwidth(x, method="cv_ml")
    theirs = KDEMultivariate(x, var_type="c" * d, bw="cv_ml").bw

    def criterion(h):
        return -np.mean(loo_log_density(x, h, "gaussian"))

    assert ours.objective <= criterion(theirs) + 1e-9
    np.testing.assert_allclose(ours.objective, criterion(ours.bandwidth), rtol=1e-14)
    np.testing.assert_allclose(ours.bandwidth, theirs, rtol=5e-3)
    # the leave-one-out density by the textbook, at one point
    h = ours.bandwidth
    others = np.delete(x, 0, axis=0)
    kernel = np.exp(-0.5 * (((x[0] - others) / h) ** 2).sum(axis=1)) / np.prod(h)
    textbook = np.log(kernel.sum() / (n - 1) / (2 * np.pi) ** (d / 2))
    np.testing.assert_allclose(loo_log_density(x, h, "gaussian")[0], textbook, rtol=1e-12)
    if d == 1:  # no bandwidth of a fine grid does better
        grid = np.geomspace(0.02, 2.0, 400)
        assert ours.objective <= min(criterion([g]) for g in grid) + 1e-12


def test_normal_reference_is_statsmodels():
    from attnpool.density.selection import select_density_bandwidth

    x = np.random.default_rng(50).normal(size=(120, 2))
    np.testing.assert_allclose(
        select_density_bandwidth(x, method="normal_reference").bandwidth,
        KDEMultivariate(x, var_type="cc", bw="normal_reference").bw,
        rtol=1e-12,
    )
    model = KernelDensity(bandwidth="cv_ml").fit(x)
    assert np.all(model.bandwidth_ > 0) and np.isfinite(model.score(x))


@pytest.mark.parametrize("d", [1, 2])
def test_distribution_function_equals_statsmodels(d):
    from attnpool import kernel_cdf

    x, queries = sample(60 + d, n=150, d=d)
    bandwidth = [0.4 + 0.2 * j for j in range(d)]
    want = KDEMultivariate(x, var_type="c" * d, bw=bandwidth).cdf(queries)
    np.testing.assert_allclose(kernel_cdf(x, queries, bandwidth=bandwidth), want, rtol=1e-10)


@pytest.mark.parametrize(
    "name", ["gaussian", "boxcar", "triangular", "epanechnikov", "tricube", "cosine", "laplacian"]
)
def test_distribution_function_is_the_integrated_density(name):
    from attnpool import kernel_cdf

    x = np.random.default_rng(70).normal(size=60)
    grid = np.linspace(-9, 9, 36001)
    f = kernel_density(x, grid, kernel=name, bandwidth=0.5)
    cdf = kernel_cdf(x, grid, kernel=name, bandwidth=0.5)
    integral = cdf[0] + np.concatenate([[0], np.cumsum((f[1:] + f[:-1]) / 2 * np.diff(grid))])
    np.testing.assert_allclose(cdf, integral, atol=2e-5 if name == "boxcar" else 1e-7)
    assert np.all(np.diff(cdf) >= 0) and cdf.min() >= 0 and cdf.max() <= 1
    assert cdf[0] < 1e-7 and cdf[-1] > 1 - 1e-7  # the laplacian's tails: e^-13 of h


def test_distribution_functions_of_product_kernels_and_weights():
    from attnpool import kernel_cdf

    x = np.random.default_rng(71).normal(size=(40, 2))
    # F(a, b) by the 2-D trapezoid rule over (−6, a] × (−6, b]
    u = np.linspace(-6, 0.3, 1261)
    v = np.linspace(-6, -0.2, 1161)
    grid_u, grid_v = np.meshgrid(u, v)
    f = kernel_density(x, np.c_[grid_u.ravel(), grid_v.ravel()], kernel="epanechnikov-product",
                       bandwidth=[0.6, 0.8]).reshape(grid_u.shape)  # fmt: skip
    want = np.trapezoid(np.trapezoid(f, u, axis=1), v)
    got = kernel_cdf(x, [[0.3, -0.2]], kernel="epanechnikov-product", bandwidth=[0.6, 0.8])
    np.testing.assert_allclose(got, [want], rtol=1e-5)
    with pytest.raises(ValueError, match="kernel: distribution functions are products"):
        kernel_cdf(x, x, kernel="epanechnikov")  # radial in two dimensions
    w = np.random.default_rng(72).integers(0, 3, 40).astype(float)
    repeated = np.repeat(np.arange(40), w.astype(int))
    np.testing.assert_allclose(
        kernel_cdf(x, x[:5], weights=w, bandwidth=0.5),
        kernel_cdf(x[repeated], x[:5], bandwidth=0.5),
        rtol=1e-12,
    )


@pytest.mark.parametrize("bandwidth", [0.01, 0.2, 3.0])
def test_leave_one_out_densities_by_expansions_equal_the_pairs(bandwidth):
    # from EXPANSION_MIN_ROWS points a Gaussian column sums by the fgt expansions; far
    # points (whose sum over the others is tiny) are summed pair by pair
    from scipy.special import logsumexp

    from attnpool.density.criteria import EXPANSION_MIN_ROWS, loo_log_density

    n = EXPANSION_MIN_ROWS + 500
    x = np.random.default_rng(90).normal(size=(n, 1))
    x[:5] += 30
    log_k = -0.5 * ((x - x.T) / bandwidth) ** 2  # the textbook, pair by pair
    np.fill_diagonal(log_k, -np.inf)
    by_pairs = logsumexp(log_k, axis=1)
    constant = np.log(n - 1) + np.log(bandwidth) + 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(loo_log_density(x, [bandwidth], "gaussian"), by_pairs - constant,
                               rtol=1e-12, atol=1e-11)  # fmt: skip


@pytest.mark.parametrize(
    ("n", "kernel"), [(300, "gaussian"), (300, "epanechnikov"), (30_000, "gaussian")]
)
def test_host_sums_equal_the_compiled_engines(n, kernel):
    """Small problems sum in NumPy and a Gaussian column of many points by the fgt
    expansions (no program to build); JAX inputs take the compiled engines: the same
    log densities, far points included."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(n)
    x = rng.normal(size=(n, 1))
    x[:3] += 40.0
    q = np.r_[rng.normal(size=(200, 1)), [[25.0], [-60.0]]]  # 30 000 × 202: expansions
    host = log_density(x, q, kernel=kernel, bandwidth=0.3)
    with jax.enable_x64(True):
        engines = log_density(jnp.asarray(x), jnp.asarray(q), kernel=kernel, bandwidth=0.3)
    finite = np.isfinite(engines)
    assert np.array_equal(finite, np.isfinite(host))
    np.testing.assert_allclose(host[finite], engines[finite], rtol=1e-12, atol=1e-12)


def test_density_methods_meet_their_guarantees():
    """fgt is exact to rounding; binned within its relative tolerance of the exact
    density (rows its bound cannot settle summed exactly); each refuses what it cannot
    serve, naming the argument."""
    from attnpool import Binned

    rng = np.random.default_rng(7)
    x = np.r_[rng.normal(size=(20_000, 1)), [[30.0]]]
    q = np.r_[np.linspace(-4, 4, 300)[:, None], [[29.9], [60.0]]]
    exact = log_density(x, q, bandwidth=0.05, method="dense")
    np.testing.assert_allclose(log_density(x, q, bandwidth=0.05, method="fgt"), exact,
                               rtol=1e-12, atol=1e-12)  # fmt: skip
    for tolerance in (1e-3, 1e-5):
        got = log_density(x, q, bandwidth=0.05, method=Binned(tolerance=tolerance))
        assert np.all(np.abs(np.exp(got - exact) - 1) <= tolerance)
    two = rng.normal(size=(5000, 2))
    got = log_density(two, two[:50], kernel="epanechnikov", bandwidth=0.4, method="binned")
    exact = log_density(two, two[:50], kernel="epanechnikov", bandwidth=0.4, method="stream")
    assert np.all(np.abs(np.exp(got - exact) - 1) <= 1e-3)
    with pytest.raises(ValueError, match="method: 'fgt' sums the Gaussian in one column"):
        log_density(two, two, method="fgt")
    with pytest.raises(ValueError, match="method: 'binned' works for d <= 2"):
        log_density(rng.normal(size=(10, 3)), np.zeros((1, 3)), method="binned")
    # weights are binned as counts (tests/test_binned_host.py holds them on hostile data):
    # equal weights leave every density as it was
    weighted = log_density(x, q, bandwidth=0.05, method="binned", weights=np.full(len(x), 3.0))
    np.testing.assert_allclose(weighted, log_density(x, q, bandwidth=0.05, method="binned"),
                               rtol=1e-14, atol=1e-12)  # fmt: skip
    with pytest.raises(ValueError, match="method: expected one of 'auto'"):
        log_density(x, q, method="fused")


@pytest.mark.parametrize(("kernel", "d"), [("epanechnikov", 1), ("tricube", 1), ("boxcar", 2)])
def test_sparse_densities_are_the_exact_ones(kernel, d):
    """Compact kernels over the keys inside their support only — by ``method="sparse"``,
    and by ``"auto"`` in one column past the NumPy pairs — equal the compiled engines',
    ``−inf`` where no key is inside."""
    rng = np.random.default_rng(d)
    x = rng.normal(size=(30_000, d))
    q = np.r_[rng.normal(size=(400, d)), np.full((1, d), 40.0)]
    exact = log_density(x, q, kernel=kernel, bandwidth=0.2, method="stream")
    assert np.isneginf(exact[-1])
    for method in ("sparse", "auto"):
        got = log_density(x, q, kernel=kernel, bandwidth=0.2, method=method)
        np.testing.assert_allclose(got, exact, rtol=1e-12)
    w = rng.integers(0, 3, 30_000)
    np.testing.assert_allclose(
        log_density(x, q, kernel=kernel, bandwidth=0.2, weights=w, method="sparse"),
        log_density(x, q, kernel=kernel, bandwidth=0.2, weights=w, method="dense"),
        rtol=1e-12,
    )
    with pytest.raises(ValueError, match="method: 'sparse' needs a compact-support radial"):
        log_density(x, q, bandwidth=0.2, method="sparse")
    with pytest.raises(ValueError, match="method: mixed data"):
        log_density(np.c_[x[:, :1], x[:, :1] > 0], q[:3, :1].repeat(2, 1), var_type="cu",
                    bandwidth=[0.2, 0.1], method="sparse")  # fmt: skip


@pytest.mark.parametrize("bandwidth", [1e-3, 0.05])
def test_host_methods_far_from_the_origin(bandwidth):
    """Data at 1.7e9 (Unix times): the host methods scale coordinates by 1/h, so they
    centre first — their log densities equal the compiled engines' (which centre too),
    and the leave-one-out sums equal the textbook's from differences. Before the fix the
    expansions were 5e-4 off at h = 1e-3."""
    from scipy.special import logsumexp

    from attnpool import Binned
    from attnpool.density.selection import loo_log_density

    rng = np.random.default_rng(3)
    x = 1.7e9 + rng.normal(size=(3000, 1))
    q = 1.7e9 + rng.normal(size=(2000, 1))
    exact = log_density(x, q, bandwidth=bandwidth, method="dense")
    for method in ("fgt", "native", "auto", "sparse"):
        kernel = "epanechnikov" if method == "sparse" else "gaussian"
        reference = exact if kernel == "gaussian" else log_density(
            x, q, kernel=kernel, bandwidth=bandwidth, method="dense")  # fmt: skip
        got = log_density(x, q, kernel=kernel, bandwidth=bandwidth, method=method)
        finite = np.isfinite(reference)
        assert np.array_equal(finite, np.isfinite(got))
        np.testing.assert_allclose(got[finite], reference[finite], rtol=1e-13, atol=1e-9)
    got = log_density(x, q, bandwidth=bandwidth, method=Binned(tolerance=1e-6))
    assert np.all(np.abs(np.exp(got - exact) - 1) <= 1e-6)
    log_k = -0.5 * ((x - x.T) / bandwidth) ** 2
    np.fill_diagonal(log_k, -np.inf)
    textbook = logsumexp(log_k, axis=1) - np.log(2999 * np.sqrt(2 * np.pi) * bandwidth)
    np.testing.assert_allclose(loo_log_density(x, [bandwidth], "gaussian"), textbook,
                               rtol=1e-13, atol=1e-9)  # fmt: skip


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_native_densities_are_the_exact_ones(d):
    """The Gaussian by the compiled C loop: its shift taken back (and from d = 3 the
    query's own term its matrix-product form leaves out), weights too."""
    rng = np.random.default_rng(d)
    x = rng.normal(size=(3000, d))
    q = np.r_[rng.normal(size=(50, d)), np.full((1, d), 12.0)]
    w = rng.integers(0, 3, 3000)
    for weights in (None, w):
        got = log_density(x, q, bandwidth=0.4, method="native", weights=weights)
        exact = log_density(x, q, bandwidth=0.4, method="dense", weights=weights)
        np.testing.assert_allclose(got, exact, rtol=1e-13)
    with pytest.raises(ValueError, match="method: 'native'"):
        log_density(x, q, kernel="epanechnikov", method="native")


@pytest.mark.parametrize(
    ("theirs", "ours", "half_width"),
    [("gaussian", "gaussian", 1.0), ("epa", "epanechnikov", 5**0.5)],
)
def test_equal_to_kdepy_fftkde_on_its_grid(theirs, ours, half_width):
    """KDEpy's FFTKDE bins the sample on its grid (linear binning, an error of (Δ/h)²);
    our exact density on the same grid is within that of it. KDEpy scales every kernel to
    unit variance: its Epanechnikov of bw = 0.3 is ours of half-width 0.3 · √5."""
    from KDEpy import FFTKDE

    x = np.random.default_rng(0).normal(size=5000)
    grid, theirs_values = FFTKDE(kernel=theirs, bw=0.3).fit(x).evaluate(2**12)
    got = kernel_density(x[:, None], grid[:, None], kernel=ours, bandwidth=0.3 * half_width)
    assert np.max(np.abs(got - theirs_values)) <= 2e-5 * theirs_values.max()
    assert np.trapezoid(got, grid) == pytest.approx(1.0, abs=1e-8)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("offset", [0.0, 1.7e9])
def test_large_gaussian_densities_in_several_columns_are_exact(d, offset):
    # beyond HOST_PAIRS pairs "auto" sums a Gaussian density of several columns by the
    # compiled loop on a CPU: the textbook's log density in float64, weights, a far query
    from scipy.special import logsumexp

    from attnpool.density.methods import HOST_PAIRS

    rng = np.random.default_rng(d)
    x = rng.normal(size=(2500, d)) + offset
    q = np.r_[rng.normal(size=(1700, d)) * 2, np.full((1, d), 9.0)] + offset
    assert x.shape[0] * q.shape[0] > HOST_PAIRS
    h = np.linspace(0.2, 0.4, d)
    w = rng.uniform(0.5, 2.0, 2500)
    got = log_density(x, q, bandwidth=h, weights=w)
    u = ((q - offset)[:, None, :] - (x - offset)[None, :, :]) / h
    want = (logsumexp(-0.5 * np.sum(u * u, axis=2) + np.log(w / w.sum()), axis=1)
            - 0.5 * d * np.log(2 * np.pi) - np.sum(np.log(h)))  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
