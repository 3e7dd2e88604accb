"""Functions of a kernel density estimate — distribution, survival, cumulative hazard,
quantiles, entropy — against statsmodels' ``KDEUnivariate`` (its ``cdf``, ``sf``,
``cumhazard`` and ``entropy`` on its support grid), closed forms, and quadrature."""

import itertools
import warnings

import numpy as np
import pytest
from scipy import integrate, special
from statsmodels.nonparametric.kde import KDEUnivariate

from attnpool import KernelDensity, kernel_density


def _sample(seed=0):
    rng = np.random.default_rng(seed)
    return np.r_[rng.normal(0, 1, 300), rng.normal(4, 0.5, 200)]


def test_distribution_survival_hazard_and_entropy_equal_statsmodels():
    x = _sample()
    ours = KernelDensity(bandwidth=0.5).fit(x[:, None])
    theirs = KDEUnivariate(x)
    theirs.fit(bw=0.5, fft=False, gridsize=64)
    grid = theirs.support[:, None]
    np.testing.assert_allclose(ours.cdf(grid), theirs.cdf, atol=1e-12)
    np.testing.assert_allclose(ours.sf(grid), theirs.sf, atol=1e-12)
    np.testing.assert_allclose(ours.cumhazard(grid), theirs.cumhazard, rtol=1e-10, atol=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (statsmodels' quad over the whole line)
        assert ours.entropy() == pytest.approx(theirs.entropy, rel=1e-9)


def test_the_hazard_keeps_its_digits_far_in_the_right_tail():
    # one point at 0, h = 1: Ŝ(t) = Φ(−t), below the float range at t = 40
    model = KernelDensity(bandwidth=1.0).fit([[0.0]])
    t = np.array([[3.0], [40.0], [200.0]])
    np.testing.assert_allclose(model.cumhazard(t), -special.log_ndtr(-t[:, 0]), rtol=1e-13)
    assert model.sf(t)[2] == 0.0 and np.isfinite(model.cumhazard(t)).all()


def test_the_hazard_keeps_its_digits_in_the_left_tail():
    """Where ``Ŝ`` is near 1 the hazard ``−log Ŝ = −log1p(−F̂)`` is tiny: from ``Ŝ``'s own
    logarithm it kept only the digits of ``1 − F̂`` (at −7, ``−0.0`` for ``7.3e−19``)."""
    x = np.random.default_rng(3).normal(size=50)
    model = KernelDensity(bandwidth=0.5).fit(x[:, None])
    t = np.array([-7.0, -6.0, -5.0, -4.0, -3.0, 0.0, 2.0])
    cdf = np.mean(special.ndtr((t[:, None] - x[None, :]) / 0.5), axis=1)
    np.testing.assert_allclose(model.cumhazard(t[:, None]), -np.log1p(-cdf), rtol=1e-13)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "triweight", "cosine"])
def test_quantiles_invert_the_distribution_function(kernel):
    x = _sample(1)
    model = KernelDensity(kernel=kernel, bandwidth=0.6).fit(x[:, None])
    p = np.array([1e-9, 0.01, 0.25, 0.5, 0.9, 1 - 1e-9])
    q = model.quantile(p)
    assert np.all(np.diff(q) > 0)
    np.testing.assert_allclose(model.cdf(q[:, None]), p, rtol=1e-9, atol=1e-15)
    ends = model.quantile([0.0, 1.0])
    if kernel == "gaussian":
        assert ends.tolist() == [-np.inf, np.inf]
    else:  # the support's ends
        np.testing.assert_allclose(ends, [x.min() - 0.6, x.max() + 0.6], rtol=1e-14)


def test_weighted_functions_are_those_of_the_repeated_sample():
    rng = np.random.default_rng(2)
    x = rng.normal(size=40)
    w = rng.integers(1, 4, 40)
    weighted = KernelDensity(kernel="biweight", bandwidth=0.7).fit(x[:, None], sample_weight=w)
    repeated = KernelDensity(kernel="biweight", bandwidth=0.7).fit(np.repeat(x, w)[:, None])
    p = np.linspace(0.05, 0.95, 7)
    np.testing.assert_allclose(weighted.quantile(p), repeated.quantile(p), rtol=1e-10)
    grid = np.linspace(-3, 3, 9)[:, None]
    np.testing.assert_allclose(weighted.cumhazard(grid), repeated.cumhazard(grid), rtol=1e-12)
    assert weighted.entropy() == pytest.approx(repeated.entropy(), rel=1e-12)


@pytest.mark.parametrize("kernel", ["boxcar", "triangular", "epanechnikov", "tricube"])
def test_entropy_of_compact_kernels_by_quadrature(kernel):
    x = np.array([0.0, 0.3, 1.9, 2.05, 4.0])
    h = 0.8
    model = KernelDensity(kernel=kernel, bandwidth=h).fit(x[:, None])
    kinks = np.unique(np.r_[x - h, x, x + h])

    def integrand(t):
        f = kernel_density(x, [t], kernel=kernel, bandwidth=h)[0]
        return -f * np.log(f) if f > 0 else 0.0

    want = sum(integrate.quad(integrand, a, b, epsabs=1e-14, epsrel=1e-13, limit=500)[0]
               for a, b in itertools.pairwise(kinks))  # fmt: skip
    assert model.entropy() == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian"])
def test_entropy_of_unbounded_kernels_by_quadrature(kernel):
    """The Laplacian's estimate has a kink at every key: adaptive quadrature across
    them stopped 1.8e-10 short (with its warnings silenced); between the keys, and on
    pieces of one bandwidth, the reference's digits hold."""
    rng = np.random.default_rng(4)
    x = np.r_[rng.normal(0, 1, 40), rng.normal(30, 0.01, 12), [500.0]]
    w = rng.uniform(0.2, 5.0, x.size)
    h = 0.3
    model = KernelDensity(kernel=kernel, bandwidth=h).fit(x[:, None], sample_weight=w)

    def integrand(t):
        f = kernel_density(x, [t], kernel=kernel, bandwidth=h, weights=w)[0]
        return -f * np.log(f) if f > 0 else 0.0

    keys = np.unique(x)
    pieces = np.unique(np.r_[keys, *(np.arange(a, b, h) for a, b in itertools.pairwise(keys))])
    want = sum(integrate.quad(integrand, a, b, epsabs=1e-15, epsrel=1e-13, limit=200)[0]
               for a, b in itertools.pairwise(pieces))  # fmt: skip
    want += integrate.quad(integrand, -np.inf, keys[0], epsabs=1e-15, limit=500)[0]
    want += integrate.quad(integrand, keys[-1], np.inf, epsabs=1e-15, limit=500)[0]
    assert model.entropy() == pytest.approx(want, rel=1e-13)


@pytest.mark.parametrize(
    ("kernel", "closed_form"),
    [("gaussian", lambda h: 0.5 * np.log(2 * np.pi * np.e * h**2)),
     ("laplacian", lambda h: 1 + np.log(2 * h))],
)  # fmt: skip
def test_entropy_of_far_apart_keys(kernel, closed_form):
    """Keys ten thousand bandwidths apart: one kernel's entropy, plus ``log n`` for
    ``n`` equally weighted keys whose kernels do not meet; far from the origin too."""
    h = 1e-3
    for shift in (0.0, 7.0, 2.0**20):
        one = KernelDensity(kernel=kernel, bandwidth=h).fit([[shift]])
        keys = shift + np.array([[-10.0], [0.0], [10.0]])
        three = KernelDensity(kernel=kernel, bandwidth=h).fit(keys)
        assert one.entropy() == pytest.approx(closed_form(h), rel=1e-14)
        assert three.entropy() == pytest.approx(closed_form(h) + np.log(3), rel=1e-13)


def test_one_column_functions_refuse_several_columns_and_bad_probabilities():
    model = KernelDensity(bandwidth=0.5).fit(np.random.default_rng(3).normal(size=(30, 2)))
    assert model.cdf([[0.0, 0.0]]).shape == (1,)  # (a product of the columns' G)
    for call in (lambda: model.sf([[0.0, 0.0]]), lambda: model.quantile([0.5]), model.entropy):
        with pytest.raises(ValueError, match=r"X: .* one continuous column; this one has 2"):
            call()
    one = KernelDensity(bandwidth=0.5).fit([[0.0], [1.0]])
    with pytest.raises(ValueError, match=r"p: expected probabilities in \[0, 1\]"):
        one.quantile([0.5, 1.5])
