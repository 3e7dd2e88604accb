"""The improved Sheather–Jones bandwidth: the AMISE optimum of a normal sample, the exact
MISE optimum of a normal mixture (Marron & Wand's formula), KDEpy's ISJ up to its
scaling, weights and invariances."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from attnpool import KernelDensity, select_density_bandwidth
from attnpool.bandwidth.plug_in import GRID_POINTS, PADDING, isj_bandwidth


@pytest.mark.parametrize("n", [10_000, 100_000])
def test_a_normal_sample_gets_the_amise_optimum(n):
    x = np.random.default_rng(n).normal(size=n)
    optimum = (4 / 3) ** 0.2 * n**-0.2  # (8√π R(φ) / (3 n))^(1/5) σ for N(0, 1)
    assert isj_bandwidth(x) == pytest.approx(optimum, rel=0.05)


def _mise(h, n, means, sds, weights):
    """Exact MISE of the Gaussian kernel estimate of a normal mixture (Marron & Wand, 1992,
    eq. 2.3): (2√π n h)⁻¹ + wᵀ[(1 − 1/n) Ω₂ − 2 Ω₁ + Ω₀] w."""
    mu, s, w = (np.asarray(a, float) for a in (means, sds, weights))

    def omega(a):
        scale = np.sqrt(a * h**2 + s[:, None] ** 2 + s[None, :] ** 2)
        return stats.norm.pdf(mu[:, None] - mu[None, :], scale=scale)

    return (
        1 / (2 * np.sqrt(np.pi) * n * h)
        + w @ ((1 - 1 / n) * omega(2) - 2 * omega(1) + omega(0)) @ w
    )


def test_a_bimodal_sample_gets_near_the_exact_mise_optimum():
    """Where a normal reference oversmooths (two separated modes), ISJ tracks the true
    optimum."""
    rng = np.random.default_rng(1)
    n, means, sds, weights = 20_000, [-3.0, 3.0], [1.0, 0.5], [0.5, 0.5]
    parts = rng.random(n) < 0.5
    x = np.where(parts, rng.normal(-3, 1, n), rng.normal(3, 0.5, n))
    best = optimize.minimize_scalar(lambda h: _mise(h, n, means, sds, weights),
                                    bounds=(1e-3, 2), method="bounded").x  # fmt: skip
    isj = isj_bandwidth(x)
    reference = select_density_bandwidth(x[:, None], method="normal_reference").bandwidth[0]
    assert isj == pytest.approx(best, rel=0.15)
    assert abs(reference / best - 1) > 4 * abs(isj / best - 1)


def test_kdepy_s_isj_is_ours_but_for_its_scaling():
    """KDEpy's ``improved_sheather_jones`` diffuses on its padded grid but multiplies the
    time's square root by the *data's* range, not the grid's: scaled by their ratio it
    is ours (the rest of the difference: its grid of 1024 points and linear binning)."""
    from KDEpy.bw_selection import improved_sheather_jones
    from KDEpy.utils import autogrid

    x = np.random.default_rng(2).standard_t(5, size=20_000)
    mesh = autogrid(x[:, None], boundary_abs=6, num_points=1024, boundary_rel=0.5).ravel()
    ratio = (mesh.max() - mesh.min()) / (x.max() - x.min())
    assert improved_sheather_jones(x[:, None]) * ratio == pytest.approx(isj_bandwidth(x), rel=0.02)
    assert improved_sheather_jones(x[:, None]) < 0.6 * isj_bandwidth(x)  # the fault


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_kdepy_convention_reproduces_kdepy(seed):
    from KDEpy.bw_selection import improved_sheather_jones

    rng = np.random.default_rng(seed)
    x = np.r_[rng.normal(0, 1, 400), rng.normal(5, 0.3, 150)] * 10.0**seed  # its units matter
    w = rng.uniform(0.5, 2.0, x.size)
    assert isj_bandwidth(x, convention="kdepy") == pytest.approx(
        improved_sheather_jones(x[:, None]), rel=1e-11
    )
    assert isj_bandwidth(x, w, convention="kdepy") == pytest.approx(
        improved_sheather_jones(x[:, None], weights=w), rel=1e-11
    )
    with pytest.raises(ValueError, match=r"convention: expected one of 'botev', 'kdepy'"):
        isj_bandwidth(x, convention="matlab")


def test_the_fixed_point_is_botevs():
    # Botev's MATLAB code's values of the fixed-point function (as KDEpy's tests quote
    # them): t − ξγ^[7](t) at t = 0.01, N = 50 and at t = 0.07, N = 25, with k² = a² = 1…
    from attnpool.bandwidth.plug_in import _fixed_point

    ints = np.arange(1, 51, dtype=float)
    assert _fixed_point(0.01, 50, ints, ints) == pytest.approx(0.0099076220293967618515, rel=1e-14)
    ints = np.arange(1, 11, dtype=float)
    assert _fixed_point(0.07, 25, ints, ints) == pytest.approx(0.068342291525717486795, rel=1e-14)


def test_weights_invariances_estimator_and_errors():
    rng = np.random.default_rng(3)
    x = rng.gamma(2.0, size=3000)
    w = rng.integers(0, 4, 3000)
    assert isj_bandwidth(x, w) == pytest.approx(isj_bandwidth(np.repeat(x, w)), rel=1e-9)
    assert isj_bandwidth(5e8 + 3 * x) == pytest.approx(3 * isj_bandwidth(x), rel=1e-6)
    model = KernelDensity(bandwidth="isj").fit(x[:, None], sample_weight=w)
    assert model.bandwidth_[0] == pytest.approx(isj_bandwidth(x[w > 0], w[w > 0]), rel=1e-12)
    epanechnikov = select_density_bandwidth(x[:, None], method="isj", kernel="epanechnikov")
    canonical = (15.0 / (1 / (2 * np.sqrt(np.pi)))) ** 0.2  # (R(K) / μ₂(K)²)^(1/5) over φ's
    assert epanechnikov.bandwidth[0] == pytest.approx(isj_bandwidth(x) * canonical, rel=1e-12)
    with pytest.raises(ValueError, match="at least 2 distinct values"):
        isj_bandwidth(np.ones(10))
    with pytest.raises(ValueError, match="'isj' takes one continuous column"):
        select_density_bandwidth(np.c_[x, x], method="isj")
    assert GRID_POINTS == 2**14 and PADDING == 0.1  # Botev's defaults
