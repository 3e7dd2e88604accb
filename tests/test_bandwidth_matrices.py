"""Full bandwidth matrices for densities: R ``ks``'s numbers (its normal reference, its
LSCV criterion, its density with a matrix), the textbook formula with ``φ_H`` in NumPy,
and the estimator's use of them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import multivariate_normal

import attnpool
from attnpool import KernelDensity, lscv_matrix, lscv_matrix_criterion, normal_scale_matrix
from ks_reference import HLSCV, HNS, KDE_AT_HLSCV, LSCV_AT_HLSCV, LSCV_AT_HNS


def sample(name: str) -> np.ndarray:
    if name == "w2":
        return attnpool.datasets.wave_data(300, d=2, seed=5)[0]
    return attnpool.datasets.wave_data(250, d=3, seed=6)[0]


def as_matrix(values, d):
    return np.array(values).reshape(d, d, order="F")


@pytest.mark.parametrize("name, d", [("w2", 2), ("w3", 3)])
def test_normal_reference_and_the_criterion_equal_ks(name, d):
    x = sample(name)
    np.testing.assert_allclose(normal_scale_matrix(x), as_matrix(HNS[name], d), rtol=1e-14)
    at_ns = lscv_matrix_criterion(x, as_matrix(HNS[name], d))
    assert at_ns == pytest.approx(LSCV_AT_HNS[name], rel=1e-13)
    at_lscv = lscv_matrix_criterion(x, as_matrix(HLSCV[name], d))
    assert at_lscv == pytest.approx(LSCV_AT_HLSCV[name], rel=1e-13)


@pytest.mark.parametrize("name, d", [("w2", 2), ("w3", 3)])
def test_lscv_matrix_reaches_at_least_ks_minimum(name, d):
    # ks stops its Nelder-Mead search where R's tolerance says; the search here goes on
    # to the minimum: its criterion is at most ks's, and in two columns the same matrix
    x = sample(name)
    found = lscv_matrix(x)
    assert lscv_matrix_criterion(x, found) <= LSCV_AT_HLSCV[name] + 1e-12
    if d == 2:
        np.testing.assert_allclose(found, as_matrix(HLSCV[name], d), rtol=2e-3, atol=2e-6)
    assert np.all(np.linalg.eigvalsh(found) > 0)


@pytest.mark.parametrize("name, d", [("w2", 2), ("w3", 3)])
def test_the_density_with_a_matrix_equals_ks_kde(name, d):
    x = sample(name)
    h = as_matrix(HLSCV[name], d)
    got = attnpool.kernel_density(x, x[:6], bandwidth=h)
    np.testing.assert_allclose(got, KDE_AT_HLSCV[name], rtol=1e-13)
    # the textbook formula: the mean of normal densities of covariance H
    want = np.mean([multivariate_normal(row, h).pdf(x[:6]) for row in x], axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_diagonal_matrix_is_the_diagonal_bandwidth_for_every_radial_kernel():
    x = sample("w3")
    h = np.array([0.1, 0.2, 0.15])
    for kernel in ("gaussian", "epanechnikov", "tricube"):
        by_matrix = attnpool.log_density(x, x[:20], kernel=kernel, bandwidth=np.diag(h**2))
        by_columns = attnpool.log_density(x, x[:20], kernel=kernel, bandwidth=h)
        np.testing.assert_allclose(by_matrix, by_columns, rtol=1e-12)


def test_rotating_the_data_and_the_matrix_together_changes_nothing():
    x = sample("w2")
    h = np.array([[0.01, 0.004], [0.004, 0.02]])
    angle = 0.7
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    base = attnpool.log_density(x, x[:10], bandwidth=h)
    turned = attnpool.log_density(x @ rotation.T, x[:10] @ rotation.T,
                                  bandwidth=rotation @ h @ rotation.T)  # fmt: skip
    np.testing.assert_allclose(turned, base, rtol=1e-12)


def test_the_estimator_takes_matrices_by_value_and_by_ks_names():
    x = sample("w2")
    for bandwidth in ("Hns", "Hlscv", as_matrix(HLSCV["w2"], 2)):
        model = KernelDensity(bandwidth=bandwidth).fit(x)
        assert model.bandwidth_.shape == (2, 2)
        want = attnpool.log_density(x, x[:5], bandwidth=model.bandwidth_)
        np.testing.assert_allclose(model.score_samples(x[:5]), want, rtol=1e-14)
    model = KernelDensity(bandwidth=as_matrix(HLSCV["w2"], 2)).fit(x)
    draws = model.sample(20000, random_state=0) - x[np.random.default_rng(0).integers(0, 1, 1)]
    assert draws.shape == (20000, 2)
    one = KernelDensity(bandwidth=np.array([[0.04]])).fit(x[:, :1])
    np.testing.assert_allclose(one.bandwidth_, [0.2])
    sd = KernelDensity(kernel="epanechnikov", bandwidth=np.eye(2) * 0.01, bandwidth_kind="sd")
    np.testing.assert_allclose(sd.fit(x).bandwidth_, np.eye(2) * 0.05, rtol=1e-14)


def test_the_estimators_draws_follow_the_matrix():
    x = np.zeros((1, 2))  # one point: the draws are the kernel itself
    h = np.array([[0.5, 0.3], [0.3, 0.4]])
    draws = KernelDensity(bandwidth=h).fit(x).sample(40000, random_state=1)
    np.testing.assert_allclose(np.cov(draws, rowvar=False), h, atol=0.02)


@pytest.mark.parametrize(
    "bandwidth, kernel, message",
    [
        (np.array([[0.2, 0.3], [0.1, 0.3]]), "gaussian", "symmetric"),
        (np.array([[1.0, 2.0], [2.0, 1.0]]), "gaussian", "positive definite"),
        (np.eye(3), "gaussian", r"\(2, 2\) matrix"),
        (np.eye(2), "epanechnikov-product", "radial kernel"),
        ("Hlscv", "epanechnikov", "unweighted Gaussian"),
    ],
)
def test_bad_matrices_name_the_argument(bandwidth, kernel, message):
    x = sample("w2")
    with pytest.raises(ValueError, match=f"bandwidth: .*{message}"):
        KernelDensity(kernel=kernel, bandwidth=bandwidth).fit(x)


def test_functions_of_one_column_and_ties_say_what_they_need():
    x = sample("w2")
    model = KernelDensity(bandwidth=np.eye(2) * 0.01).fit(x)
    with pytest.raises(ValueError, match="bandwidth: the distribution function"):
        model.cdf(x[:2])
    with pytest.warns(attnpool.TiedDataWarning, match="tied rows"):
        lscv_matrix(np.concatenate([x[:60], x[:5]]))


def test_lscv_matrix_of_rounded_data_warns_of_the_ties_alone():
    # a singular H on the way: SciPy's differences of ∞ warned "invalid value" too
    x = np.random.default_rng(11).uniform(0, 4, (200, 2))
    x = np.c_[np.round(x[:, 0], 1), np.round(x[:, 1])]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = lscv_matrix(x)
    assert [type(w.message) for w in caught] == [attnpool.TiedDataWarning]
    assert np.all(np.isfinite(found))


@pytest.mark.parametrize("scale, shift", [(1e-150, 0.0), (1e100, 0.0), (1.0, 1e8)])
def test_lscv_matrix_follows_the_data_at_any_scale_and_shift(scale, shift):
    # searched on the sphered sample: the matrix scales as the data's square, ignores shifts
    x = sample("w2")
    found = lscv_matrix(x * scale + shift)
    np.testing.assert_allclose(found / scale**2, lscv_matrix(x), rtol=1e-4, atol=1e-8)


def test_lscv_matrix_is_the_criterions_minimum_where_a_first_step_overshoots():
    """On this sample the unbounded search's first step (``e^±1000``) left the criterion
    infinite, and the search stopped at −0.07921. Nelder–Mead from four starts (xatol
    1e-10 on the Cholesky factor, 19 512 evaluations, four minutes) reaches
    −0.08165990017647837 at a correlation of 0.998: the matrix found is there, and no
    step along the factor's entries goes lower."""
    x = np.random.default_rng(0).normal(size=(400, 2)) @ [[1.0, 0.5], [0.0, 1.0]]
    found = lscv_matrix(x)
    value = lscv_matrix_criterion(x, found)
    assert value <= -0.08165990017647837 + 1e-12
    factor = np.linalg.cholesky(found)
    for i, j in ((0, 0), (1, 0), (1, 1)):
        for step in (-1e-4, 1e-4):
            moved = factor.copy()
            moved[i, j] *= 1 + step
            assert lscv_matrix_criterion(x, moved @ moved.T) >= value - 1e-14


@pytest.mark.parametrize(
    "function", [normal_scale_matrix, lscv_matrix, attnpool.plug_in_matrix]
)  # fmt: skip
def test_matrices_of_collinear_or_unrepresentable_samples_are_refused(function):
    """A column twice another (lscv_matrix raised numpy's LinAlgError), and samples whose
    matrices lie beyond the float range (they underflowed to 0 or overflowed with
    warnings)."""
    x = sample("w2")
    with pytest.raises(ValueError, match=r"x: .*positive definite .*combination of the others"):
        function(np.c_[x[:, 0], 2 * x[:, 0]])
    for scale in (1e-200, 1e160):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match=r"x: a bandwidth matrix .* beyond the float"):
                function(x * scale)
