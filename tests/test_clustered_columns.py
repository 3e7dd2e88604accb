"""Searches in several columns where one is in clusters far apart (100 points on
``[0, 30]`` and 40 near ``10⁵``) and another evenly spread (uniform on ``[0, 10⁴]``).

The grid moves every bandwidth by one factor: where the first column is narrow enough
for its clusters the second is narrower than its spacing, so the grid's best point
smoothed across the clusters, where every criterion is flat, and the descent did not
move (NW chose ``(6·10⁴, 6·10³)`` at CV 0.470 where ``(0.26, ∞)`` gives 0.020). The
clustered column is now also swept alone from that point, and a descent goes on from
the best point of the sweep.

References: the textbook formulas in NumPy float64 — leave-one-out CV of the Gaussian
Nadaraya–Watson and local linear fits (weighted least squares), their hat matrices'
AICc, the leave-one-out log conditional density — on grids of bandwidths.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnpool import NadarayaWatson, select_bandwidth, select_conditional_bandwidth
from attnpool.bandwidth.grid import OUTLIER_RATIO, column_profiles, search_line, spread_ratios
from reference import leave_one_out_pool
from test_clustered_searches import searched_on_dask

SMOOTHED_OUT = 5e9  # (the second column's best bandwidth is ∞: y does not depend on it)
FIRST = np.geomspace(0.1, 5.0, 40)
SECOND = (1e3, 1e4, 1e5, SMOOTHED_OUT)


def clustered_beside_even(seed=1):
    rng = np.random.default_rng(seed)
    clustered = np.r_[rng.uniform(0, 30, 100), 1e5 + rng.uniform(0, 10, 40)]
    even = rng.uniform(0, 1e4, clustered.size)
    y = np.sin(clustered) + 0.1 * rng.normal(size=clustered.size)
    return np.c_[clustered, even], y


def hat_matrix(x, h, degree, leave_one_out):
    """``(n, n)``: the Gaussian fit's weights on each response (rows: the fits)."""
    n = x.shape[0]
    hat = np.empty((n, n))
    for i in range(n):
        offsets = x - x[i]
        log_w = -0.5 * np.sum((offsets / h) ** 2, axis=1)
        if leave_one_out:
            log_w[i] = -np.inf
        w = np.exp(log_w - log_w.max())
        if degree == 0:
            hat[i] = w / w.sum()
            continue
        design = np.sqrt(w)[:, None] * np.c_[np.ones(n), offsets]
        norms = np.linalg.norm(design, axis=0)  # (columns to unit length: Jacobi scaling)
        # the fit at x_i is the intercept: the first row of the pseudo-inverse, unscaled
        hat[i] = np.linalg.pinv(design / norms)[0] / norms[0] * np.sqrt(w)
    return hat


def textbook_cv(x, y, h, degree):
    return float(np.mean((y - hat_matrix(x, h, degree, True) @ y) ** 2))


def textbook_aicc(x, y, h, degree):
    """Hurvich, Simonoff & Tsai's AICc: ``log σ̂² + (1 + tr H / n) / (1 − (tr H + 2) / n)``,
    undefined (``inf``) where ``tr H + 2 ≥ n``."""
    hat = hat_matrix(x, h, degree, False)
    n, trace = y.size, np.trace(hat)
    if trace + 2 >= n:
        return np.inf
    return float(np.log(np.mean((y - hat @ y) ** 2)) + (1 + trace / n) / (1 - (trace + 2) / n))


def lowest_on_grid(criterion, x, y, degree):
    return min(criterion(x, y, np.array([a, b]), degree) for a in FIRST for b in SECOND)


@pytest.mark.parametrize("pooling", ["auto", "dense"])
@pytest.mark.parametrize("degree", [0, 1])
@pytest.mark.parametrize("method", ["cv", "aicc"])
def test_a_clustered_column_beside_an_even_one(method, degree, pooling):
    x, y = clustered_beside_even()
    criterion = textbook_cv if method == "cv" else textbook_aicc
    found = select_bandwidth(x, y, method=method, degree=degree, pooling=pooling)
    assert found.bandwidth[0] < 1.0  # (the clusters' own scale)
    assert criterion(x, y, found.bandwidth, degree) == pytest.approx(found.objective, rel=1e-8)
    lowest = lowest_on_grid(criterion, x, y, degree)
    assert found.objective <= lowest + 1e-9 * abs(lowest)


def test_the_estimator_with_a_compact_kernel():
    x, y = clustered_beside_even()
    fitted = NadarayaWatson(kernel="epanechnikov").fit(x, y)
    residuals = y - leave_one_out_pool(x, y, fitted.bandwidth_, "epanechnikov")
    assert fitted.cv_score_ == pytest.approx(np.mean(residuals**2), rel=1e-9)
    with np.errstate(invalid="ignore"):  # (a row without a neighbour: NaN, undefined)
        on_grid = [
            np.mean((y - leave_one_out_pool(x, y, [a, b], "epanechnikov")) ** 2)
            for a in FIRST
            for b in SECOND
        ]
    assert fitted.bandwidth_[0] < 2.0
    assert fitted.cv_score_ <= np.nanmin(on_grid) * (1 + 1e-9)


def test_the_dask_search_sweeps_the_clustered_column():
    x, y = clustered_beside_even()
    found = searched_on_dask(x, y)
    assert textbook_cv(x, y, found.bandwidth, 0) == pytest.approx(found.objective, rel=1e-9)
    assert found.bandwidth[0] < 1.0
    # (the second column smoothed out, as in memory: without the rounds of moves it stayed
    # at the grid's best point, 5·10³, 7% above; the line alone stopped at 0.471)
    assert found.bandwidth[1] > 1e4 * np.ptp(x[:, 1])
    assert found.objective <= lowest_on_grid(textbook_cv, x, y, 0)


def textbook_log_conditional(x, y, h, h_y):
    """Mean negative leave-one-out log density of ``y`` given ``x`` (Gaussian kernels;
    log-sum-exp over the other rows)."""
    log_x = -0.5 * np.sum(((x[:, None, :] - x[None, :, :]) / h) ** 2, axis=2)
    np.fill_diagonal(log_x, -np.inf)
    log_y = -0.5 * ((y[:, None] - y[None, :]) / h_y) ** 2 - np.log(h_y * np.sqrt(2 * np.pi))

    def log_sum(a):
        top = a.max(axis=1, keepdims=True)
        return top[:, 0] + np.log(np.exp(a - top).sum(axis=1))

    return float(-np.mean(log_sum(log_x + log_y) - log_sum(log_x)))


def test_the_conditional_density_search():
    x, y = clustered_beside_even()
    found = select_conditional_bandwidth(x, y)
    h, h_y = found.bandwidth[:2], found.bandwidth[2]
    assert textbook_log_conditional(x, y, h, h_y) == pytest.approx(found.objective, rel=1e-8)
    assert found.bandwidth[0] < 1.0
    # (the search stopped at (3·10⁸, 4·10⁹, 0.086), smoothing x's clusters away: 0.862)
    reference = min(
        textbook_log_conditional(x, y, np.array([a, SMOOTHED_OUT]), b)
        for a in FIRST[::2]
        for b in np.geomspace(0.03, 0.3, 12)
    )
    assert found.objective <= reference


def test_only_a_spread_out_column_is_swept_and_only_beside_others():
    x, _ = clustered_beside_even()
    ratios = spread_ratios(x, [0, 1])
    assert ratios[0] > OUTLIER_RATIO > ratios[1]
    line = search_line(np.zeros(2), x, [0, 1])
    ((column, first),) = line.profiles
    # the column's own grid: from GRID[0] times its robust spread's rule up
    assert column == 0 and first == 0
    assert search_line(np.zeros(1), x[:, :1], [0]).profiles == ()
    even = np.c_[x[:, 1], np.random.default_rng(3).normal(size=x.shape[0])]
    assert search_line(np.zeros(2), even, [0, 1]).profiles == ()
    # a column less spread out starts further up the line than the most spread out one
    assert column_profiles([0, 1], np.array([2e4, 50.0]), 40, 2) == ((0, 7), (1, 27))
