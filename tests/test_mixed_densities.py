"""Densities of mixed continuous and categorical data, and least-squares CV: against
statsmodels' ``KDEMultivariate`` at the same bandwidths, R np's published bandwidths and
values (quoted in statsmodels' own ``test_kernel_density.py``, at its tolerances), and
brute-force searches of the criteria."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from statsmodels.nonparametric.kernel_density import KDEMultivariate

from attnpool import kernel_density, log_density
from attnpool.density.distribution import kernel_cdf
from attnpool.density.selection import (
    least_squares_criterion,
    loo_log_density,
    select_density_bandwidth,
)


@pytest.fixture(scope="module")
def np_data():
    """statsmodels' test data: R np's oecdpanel growth and oecd, Italy's gdp, and its own
    seeded draws (``c1``, ``o``, ``o2``, ``c2``)."""
    with warnings.catch_warnings():  # its marks are registered in statsmodels' own conftest
        warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
        from statsmodels.nonparametric.tests.test_kernel_density import KDETestBase
    base = KDETestBase()
    base.setup_method()
    return {name: np.asarray(getattr(base, name), float).reshape(-1)
            for name in ("growth", "Italy_gdp", "oecd", "c1", "c2", "o", "o2")}  # fmt: skip


def _statsmodels(columns, var_type, bw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return KDEMultivariate(data=columns, var_type=var_type, bw=bw)


@pytest.mark.parametrize("var_type", ["cou", "uo", "oc", "ucc"])
def test_pdf_and_cdf_equal_statsmodels(var_type):
    rng = np.random.default_rng(len(var_type))
    columns = [rng.normal(size=70) if t == "c" else rng.integers(0, 4, 70).astype(float)
               for t in var_type]  # fmt: skip
    x = np.column_stack(columns)
    bw = np.array([0.6 if t == "c" else 0.25 for t in var_type])
    reference = _statsmodels(columns, var_type, bw)
    queries = x[:15]
    assert kernel_density(x, queries, bandwidth=bw, var_type=var_type) == pytest.approx(
        reference.pdf(queries), rel=1e-12
    )
    assert kernel_cdf(x, queries, bandwidth=bw, var_type=var_type) == pytest.approx(
        reference.cdf(queries), rel=1e-10
    )
    loo = loo_log_density(x, bw, "gaussian", var_type)
    # statsmodels' criterion: −Σ_i log Σ_{j≠i} K_h (no 1/(n − 1))
    sums = -reference.loo_likelihood(bw, func=np.log)
    assert np.sum(loo) + len(x) * np.log(len(x) - 1) == pytest.approx(sums, rel=1e-12)
    if var_type != "uo":  # statsmodels' cv_ls criterion
        criterion = least_squares_criterion(x, bw, var_type=var_type)
        assert criterion == pytest.approx(reference.imse(bw), rel=1e-10)


def test_a_categorical_density_sums_to_one_over_the_levels():
    rng = np.random.default_rng(3)
    x = np.c_[rng.normal(size=40), rng.integers(0, 3, 40), rng.integers(2, 5, 40)]
    bw = [0.4, 0.3, 0.5]
    grid = np.linspace(-8, 8, 3201)
    # Aitchison–Aitken sums to 1 over the observed levels, Wang–van Ryzin over the integers
    cells = [(c, u, o) for u in np.unique(x[:, 1]) for o in range(-40, 45) for c in grid]
    density = kernel_density(x, np.array(cells), bandwidth=bw, var_type="cuo")
    assert np.sum(density) * (grid[1] - grid[0]) == pytest.approx(1.0, abs=1e-9)


# (var_type, columns, selector, R np's bandwidths or None, tolerance as statsmodels' tests)
PUBLISHED = [
    ("cu", ("growth", "oecd"), "cv_ls", [0.0052051, 0.05835941], 1e-2),
    ("coc", ("c1", "o", "c2"), "cv_ml", [1.021563, 2.806409e-14, 0.5142077], 0.1),
]


@pytest.mark.parametrize(("var_type", "names", "method", "expected", "tolerance"), PUBLISHED)
def test_bandwidths_are_r_np_s(np_data, var_type, names, method, expected, tolerance):
    x = np.column_stack([np_data[name] for name in names])
    found = select_density_bandwidth(x, method=method, var_type=var_type)
    assert found.bandwidth == pytest.approx(expected, abs=tolerance, rel=tolerance)


def test_densities_and_distributions_are_r_np_s(np_data):
    growth, gdp, oecd = np_data["growth"], np_data["Italy_gdp"], np_data["oecd"]
    x = np.c_[growth, gdp]  # npudensbw(~growth + gdp, bwmethod="cv.ls"); fitted(npudens)
    h = select_density_bandwidth(x, method="cv_ls").bandwidth
    expected = [1.6202284, 0.7914245, 1.6084174, 2.4987204, 1.3705258]
    assert kernel_density(x, x[:5], bandwidth=h) == pytest.approx(expected, abs=1e-3)
    x = np.c_[gdp, growth]  # npudistbw-free: the cv.ml bandwidths' distribution function
    h = select_density_bandwidth(x, method="cv_ml").bandwidth
    expected = [0.192180770, 0.299505196, 0.557303666, 0.513387712, 0.210985350]
    assert kernel_cdf(x, x[:5], bandwidth=h) == pytest.approx(expected, abs=1e-3)
    x = np.c_[gdp, oecd]
    h = select_density_bandwidth(x, method="cv_ml", var_type="cu").bandwidth
    expected = [0.54700010, 0.65907039, 0.89676865, 0.74132941, 0.25291361]
    assert kernel_cdf(x, x[:5], bandwidth=h, var_type="cu") == pytest.approx(expected, abs=1e-3)
    x = oecd[:, None]
    h = select_density_bandwidth(x, method="cv_ls", var_type="o").bandwidth
    expected = [0.7236395, 0.7236395, 0.2763605, 0.2763605, 0.7236395]
    assert kernel_density(x, x[:5], bandwidth=h, var_type="o") == pytest.approx(expected, abs=1e-1)


@pytest.mark.parametrize(("var_type", "names", "method"), [
    ("coo", ("c1", "o", "o2"), "cv_ls"), ("o", ("oecd",), "cv_ls"),
    ("cu", ("Italy_gdp", "oecd"), "cv_ml"),
])  # fmt: skip
def test_selection_reaches_the_criterion_s_minimum(np_data, var_type, names, method):
    x = np.column_stack([np_data[name] for name in names])
    found = select_density_bandwidth(x, method=method, var_type=var_type)

    def criterion(h):
        if method == "cv_ls":
            return least_squares_criterion(x, h, var_type=var_type)
        return -np.mean(loo_log_density(x, h, "gaussian", var_type))

    assert found.objective == pytest.approx(criterion(found.bandwidth), rel=1e-12)
    # no better point on a brute-force grid about it, nor at statsmodels' own optimum
    factors = np.geomspace(0.5, 2.0, 9)
    for column in range(x.shape[1]):
        for factor in factors:
            h = found.bandwidth.copy()
            h[column] = min(h[column] * factor, 0.999)
            assert found.objective <= criterion(h) + 1e-12
    reference = _statsmodels([x[:, j] for j in range(x.shape[1])], var_type, method)
    assert found.objective <= criterion(reference.bw) + 1e-12


def test_weights_are_repeated_rows_and_errors_name_the_argument():
    rng = np.random.default_rng(2)
    x = np.c_[rng.normal(size=30), rng.integers(0, 3, 30)]
    w = rng.integers(0, 3, 30)
    rows = np.repeat(np.arange(30), w)
    bw = [0.5, 0.2]
    assert log_density(x, x, bandwidth=bw, var_type="cu", weights=w) == pytest.approx(
        log_density(x[rows], x, bandwidth=bw, var_type="cu"), rel=1e-12
    )
    with pytest.raises(ValueError, match=r"bandwidth: column 1 is categorical .* \(0, 1\)"):
        kernel_density(x, x, bandwidth=[0.5, 1.5], var_type="cu")
    with pytest.raises(ValueError, match="var_type: expected a string of 2 letters"):
        kernel_density(x, x, bandwidth=0.5, var_type="cz")
    with pytest.raises(ValueError, match="cv_ls integrates"):
        least_squares_criterion(x, bw, "epanechnikov", "cu")


def test_the_estimator_takes_var_type(np_data):
    from attnpool import KernelDensity

    x = np.c_[np_data["growth"], np_data["oecd"]]
    model = KernelDensity(bandwidth="cv_ls", var_type="cu").fit(x)
    assert model.bandwidth_ == pytest.approx([0.0052051, 0.05835941], abs=1e-2)
    assert model.score_samples(x[:4]) == pytest.approx(
        log_density(x, x[:4], bandwidth=model.bandwidth_, var_type="cu"), rel=1e-12
    )
    with pytest.raises(ValueError, match="var_type: sample draws"):
        model.sample(3)


@pytest.mark.parametrize("h", [1e-7, 1.0, 1e6])
def test_hostile_mixed_data_meet_the_long_double_formula(h):
    """Far from the origin (1.7e9), at tiny and huge bandwidths: log densities against the
    textbook product kernel in long double (finite far from every point, never log 0)."""
    rng = np.random.default_rng(12)
    x = np.c_[1.7e9 + rng.normal(size=60), rng.integers(0, 4, 60)]
    q = np.c_[1.7e9 + rng.normal(size=9) * 3, rng.integers(0, 4, 9)]
    q[0] = x[0]  # on a point
    lam = 0.3
    ld = np.longdouble
    u = (q[:, None, 0].astype(ld) - x[None, :, 0].astype(ld)) / ld(h)
    same = q[:, None, 1] == x[None, :, 1]
    log_l = np.where(same, np.log1p(ld(-lam)), np.log(ld(lam) / 3))
    terms = -u * u / 2 + log_l
    top = terms.max(axis=1, keepdims=True)
    exact = top[:, 0] + np.log(np.exp(terms - top).sum(axis=1)) - np.log(ld(60))
    exact -= np.log(np.sqrt(2 * ld(np.pi)) * ld(h))
    got = log_density(x, q, bandwidth=[h, lam], var_type="cu")
    assert np.all(np.isfinite(got))
    assert got == pytest.approx(exact.astype(float), rel=1e-12, abs=1e-9)
