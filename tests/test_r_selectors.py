"""R's bw.SJ, bw.ucv and bw.bcv held to R's own numbers and to the textbook functionals.

R's values are those of R's regression test ``src/library/stats/tests/bandwidth.R``,
as its saved output ``bandwidth.Rout.save`` prints them (R-devel 2019-03-21, with
``options(digits = 5)``), on R's ``datasets::precip`` (average yearly precipitation of
70 US cities, ``src/library/datasets/data/precip.R``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnpool
from attnpool.bandwidth import r_selectors

PRECIP = np.array([
    67, 54.7, 7, 48.5, 14, 17.2, 20.7, 13, 43.4, 40.2, 38.9, 54.5, 59.8, 48.3, 22.9, 11.5,
    34.4, 35.1, 38.7, 30.8, 30.6, 43.1, 56.8, 40.8, 41.8, 42.5, 31, 31.7, 30.2, 25.9, 49.2,
    37, 35.9, 15, 30.2, 7.2, 36.2, 45.5, 7.8, 33.4, 36.1, 40.2, 42.7, 42.5, 16.2, 39, 35, 37,
    31.4, 37.6, 39.9, 36.2, 42.8, 46.4, 24.7, 49.1, 46, 35.9, 7.8, 48.2, 15.2, 32.5, 44.7,
    42.6, 38.8, 17.4, 40.8, 29.1, 14.6, 59.2,
])  # fmt: skip
#: bandwidth.Rout.save: ``c(nrd0 = …, nrd = …, ucv = …, bcv = …, "SJ-dpi" = …, "SJ-ste" = …)``
R_PRECIP = {"bw.nrd0": 3.8479, "bw.nrd": 4.5320, "bw.ucv": 4.8619, "bw.bcv": 6.6808,
            "bw.SJ-dpi": 4.0220, "bw.SJ-ste": 3.9318}  # fmt: skip


@pytest.mark.parametrize("name", sorted(R_PRECIP))
def test_r_numbers_on_precip(name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = float(attnpool.rule_of_thumb(PRECIP, method=name)[0])
    assert ours == pytest.approx(R_PRECIP[name], abs=5e-5)  # R printed five digits
    # R warns for bcv alone: "minimum occurred at one end of the range"
    at_an_end = [w for w in caught if "one end of" in str(w.message)]
    assert len(at_an_end) == (name == "bw.bcv")


def test_functions_and_the_density_estimator_agree():
    assert attnpool.sheather_jones_bandwidth(PRECIP) == pytest.approx(3.9318, abs=5e-5)
    assert attnpool.sheather_jones_bandwidth(PRECIP, "dpi") == pytest.approx(4.0220, abs=5e-5)
    assert attnpool.unbiased_cv_bandwidth(PRECIP) == pytest.approx(4.8619, abs=5e-5)
    model = attnpool.KernelDensity(bandwidth="bw.SJ").fit(PRECIP[:, None])
    assert model.bandwidth_[0] == pytest.approx(3.9318, abs=5e-5)
    # a standard deviation: the Epanechnikov's half-width is √5 times it
    wide = attnpool.rule_of_thumb(PRECIP, method="bw.SJ", kernel="epanechnikov")[0]
    assert wide == pytest.approx(math.sqrt(5) * 3.93177, rel=1e-5)


@pytest.mark.parametrize("data, nb", [("crossing zero", 1000), ("ties", 1000), ("two points", 1000),
                                      ("spread out", 1000), ("many points", 100)])  # fmt: skip
def test_pair_counts_equal_rs_pairwise_loop(data, nb):
    # pair by pair below nb² pairs, from the histogram's autocorrelation above
    rng = np.random.default_rng(1)
    x = {"crossing zero": rng.normal(size=300),  # C's cast truncates towards zero
         "ties": np.round(rng.uniform(0, 3, 400), 1),
         "two points": np.array([1.0, 2.0]),
         "spread out": np.concatenate([rng.normal(size=50), [1e4]]),
         "many points": rng.normal(size=3000)}[data]  # fmt: skip
    width, counts = r_selectors.pair_counts(x, nb)
    bins = np.trunc(x / width).astype(np.int64)
    i, j = np.triu_indices(x.size, k=1)
    expected = np.bincount(np.abs(bins[i] - bins[j]), minlength=nb)
    assert width == float(np.ptp(x)) * 1.01 / nb
    np.testing.assert_array_equal(counts, expected)


def test_functionals_tend_to_the_exact_pair_sums():
    # with a million bins the binned φ₄, φ₆ and criteria are the exact double sums over
    # pairs of Gaussian derivatives, written out here (the textbook's estimators)
    rng = np.random.default_rng(2)
    x = rng.normal(size=200)
    n, h = x.size, 0.4
    width, counts = r_selectors.pair_counts(x, 10**6)
    u = (x[:, None] - x[None, :]) / h
    gauss = np.exp(-(u**2) / 2) / math.sqrt(2 * math.pi)
    phi4 = np.sum(gauss * (u**4 - 6 * u**2 + 3)) / (n * (n - 1) * h**5)
    phi6 = np.sum(gauss * (u**6 - 15 * u**4 + 45 * u**2 - 15)) / (n * (n - 1) * h**7)
    pi_ratio = math.pi / r_selectors.PI  # R's π is 3.14159265
    assert r_selectors._phi4(h, n, width, counts) == pytest.approx(
        phi4 * math.sqrt(pi_ratio), rel=1e-4
    )
    assert r_selectors._phi6(h, n, width, counts) == pytest.approx(
        phi6 * math.sqrt(pi_ratio), rel=1e-4
    )
    off = ~np.eye(n, dtype=bool)
    ucv = 1 / (2 * n * h * math.sqrt(math.pi)) + np.sum(
        np.exp(-(u[off] ** 2) / 4) - math.sqrt(8) * np.exp(-(u[off] ** 2) / 2)
    ) / (2 * n * n * h * math.sqrt(math.pi))
    assert r_selectors._ucv(h, n, width, counts) == pytest.approx(ucv, rel=1e-4)


def test_the_root_solves_the_equation_and_scaling_is_exact():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(0, 1, 300), rng.normal(4, 0.5, 200)])
    h = attnpool.sheather_jones_bandwidth(x, tol=1e-10)
    n, (width, counts) = x.size, r_selectors.pair_counts(x, 1000)
    scale = min(np.std(x, ddof=1), np.subtract(*np.percentile(x, [75, 25])) / 1.349)
    td = -r_selectors._phi6(1.23 * scale * n ** (-1 / 9), n, width, counts)
    alpha = 1.357 * (r_selectors._phi4(1.24 * scale * n ** (-1 / 7), n, width, counts) / td) ** (
        1 / 7
    )
    c1 = 1 / (2 * math.sqrt(r_selectors.PI) * n)
    fixed = (c1 / r_selectors._phi4(alpha * h ** (5 / 7), n, width, counts)) ** 0.2
    assert fixed == pytest.approx(h, rel=1e-9)
    for select in (attnpool.sheather_jones_bandwidth, attnpool.biased_cv_bandwidth,
                   attnpool.unbiased_cv_bandwidth):  # fmt: skip
        assert select(x * 2.0**-7) == pytest.approx(select(x) * 2.0**-7, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.floats(-10, 10), st.floats(0.5, 20))
def test_find_root_takes_brents_steps_to_the_tolerance(shift, tol_power):
    tol = 10.0**-tol_power

    def function(t):
        return math.tanh(t - shift) + 0.1 * (t - shift)

    root = r_selectors.find_root(function, -50.0, 50.0, function(-50.0), function(50.0), tol)
    assert abs(root - shift) <= tol + 4 * np.finfo(float).eps * abs(shift) + 1e-15


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="x: the data are constant"):
        attnpool.sheather_jones_bandwidth(np.ones(10))
    with pytest.raises(ValueError, match="x: a bandwidth needs at least 2 points"):
        attnpool.biased_cv_bandwidth([1.0])
    with pytest.raises(ValueError, match="x: expected finite numbers"):
        attnpool.unbiased_cv_bandwidth([1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="method"):
        attnpool.sheather_jones_bandwidth(PRECIP, method="plug-in")
    with pytest.raises(ValueError, match="nb: expected a whole number"):
        attnpool.sheather_jones_bandwidth(PRECIP, nb=0)
    with pytest.raises(ValueError, match="lower, upper: no solution"):
        attnpool.sheather_jones_bandwidth(PRECIP, lower=20.0, upper=30.0)
    with pytest.raises(ValueError, match="interquartile range is 0"):
        attnpool.sheather_jones_bandwidth(np.r_[np.zeros(50), 1.0, 2.0])
