"""The density's pointwise band (its spread against a simulation) and the pictures of
densities and conditional densities."""

from __future__ import annotations

import numpy as np
import pytest

from attnpool.density import density_band, kernel_density
from attnpool.plotting import plot_conditional_density, plot_density


def test_the_band_has_the_estimate_s_spread_and_coverage():
    """Over 400 samples of 1000 normal points, the band's half-width over z is the spread
    of f̂(0) to 10%, and the band covers the estimate's mean (the variance, not the bias, is
    what it bounds) about 95% of the time."""
    rng = np.random.default_rng(0)
    estimates, halves, lowers, uppers = [], [], [], []
    for _ in range(400):
        x = rng.normal(size=1000)
        lower, upper = density_band(x, np.zeros(1), bandwidth=0.3, level=0.95)
        estimates.append(kernel_density(x, np.zeros(1), bandwidth=0.3)[0])
        lowers.append(lower[0])
        uppers.append(upper[0])
        halves.append((upper[0] - lower[0]) / 2 / 1.959964)
    estimates = np.array(estimates)
    assert np.mean(halves) == pytest.approx(np.std(estimates), rel=0.1)
    covered = (np.array(lowers) <= estimates.mean()) & (estimates.mean() <= np.array(uppers))
    assert np.mean(covered) == pytest.approx(0.95, abs=0.03)
    w = rng.integers(1, 3, 1000)
    lower, upper = density_band(x, np.zeros(1), bandwidth=0.3, weights=w)
    assert lower[0] < kernel_density(x, np.zeros(1), bandwidth=0.3, weights=w)[0] < upper[0]
    with pytest.raises(ValueError, match="level: expected a number strictly between 0 and 1"):
        density_band(x, np.zeros(1), level=1.5)


@pytest.mark.parametrize(("var_type", "kernel"), [("c", "gaussian"), ("cu", "epanechnikov"),
                                                  ("co", "gaussian")])  # fmt: skip
def test_the_band_is_the_textbook_mean_and_spread_of_the_terms(var_type, kernel):
    """``f̂ ± z s`` with ``f̂`` the weighted mean of the terms ``K_h(q − X_i)`` written out
    (continuous columns' kernel over ``∫K h``, Aitchison–Aitken or Wang–van Ryzin in the
    categorical one) and ``s² = (mean(K_h²) − f̂²) / n_e``; also beyond NumPy's sizes."""
    from scipy import stats

    from attnpool import kernels

    rng = np.random.default_rng(len(var_type) + len(kernel))
    n = 60
    x = np.column_stack([rng.normal(size=n), rng.integers(0, 3, n)])[:, : len(var_type)]
    q = x[:7] + np.array([0.2, 0.0])[: len(var_type)]
    h = np.array([0.8, 0.3])[: len(var_type)]
    w = rng.uniform(0.2, 2.0, n)
    record = kernels.get(kernel)
    u = (q[:, None, 0] - x[None, :, 0]) / h[0]
    terms = np.asarray(record(u.ravel())).reshape(u.shape) / h[0]
    if var_type == "cu":
        terms = terms * np.where(q[:, None, 1] == x[None, :, 1], 1 - h[1], h[1] / 2)
    if var_type == "co":
        same = q[:, None, 1] == x[None, :, 1]
        gap = np.abs(q[:, None, 1] - x[None, :, 1])
        terms = terms * np.where(same, 1 - h[1], (1 - h[1]) / 2 * h[1] ** gap)
    share = w / w.sum()
    mean, second = terms @ share, terms**2 @ share
    spread = np.sqrt((second - mean**2) * np.sum(share**2)) * stats.norm.ppf(0.975)
    lower, upper = density_band(x, q, kernel=kernel, bandwidth=h, weights=w, var_type=var_type)
    np.testing.assert_allclose(lower, np.maximum(mean - spread, 0.0), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(upper, mean + spread, rtol=1e-12)
    if var_type == "c":  # 8000 × 800 pairs: past the NumPy pairs' sizes
        big = rng.normal(size=(8000, 1))
        spot = np.zeros((800, 1))
        many = density_band(big, spot, kernel=kernel, bandwidth=0.3)
        few = density_band(big, spot[:1], kernel=kernel, bandwidth=0.3)
        np.testing.assert_allclose([m[0] for m in many], [f[0] for f in few], rtol=1e-10)


def test_pictures():
    grid = np.linspace(-3, 3, 50)
    density = np.exp(-(grid**2) / 2) / np.sqrt(2 * np.pi)
    figure = plot_density(grid, density, sample=np.zeros(5), band=(density * 0.9, density * 1.1),
                          truth=density, title="t")  # fmt: skip
    lines = figure.axes[0].get_lines()
    assert len(lines) == 3 and figure.axes[0].get_title() == "t"
    with pytest.raises(ValueError, match="band: expected arrays of x_grid's shape"):
        plot_density(grid, density, band=(density[:3], density))
    ys = np.linspace(-2, 2, 30)
    table = np.outer(np.exp(-(ys**2)), np.ones(50))
    figure = plot_conditional_density(grid, ys, table, mean=np.zeros(50), sample=(grid, grid))
    assert len(figure.axes) == 2  # the heatmap and its colour bar
    with pytest.raises(
        ValueError, match=r"density: expected shape \(len\(y_grid\), len\(x_grid\)\)"
    ):
        plot_conditional_density(grid, ys, table.T)
