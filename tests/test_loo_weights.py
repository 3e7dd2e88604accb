"""A sorted sample's leave-one-out log weights by the expansions (the criterion of
likelihood cross-validation) against the textbook, pair by pair in float64; the
expansions' plan for counts against its bound in 50-digit decimals; and the density
search that ranks its grid by estimates against the exact criterion."""

from __future__ import annotations

import decimal
import math

import numpy as np
import pytest
from scipy.special import logsumexp

from attnpool._support.units import centred_on_keys
from attnpool.bandwidth import rule_of_thumb
from attnpool.bandwidth.search import _bracket
from attnpool.density.criteria import ESTIMATE_TOLERANCE, loo_log_density
from attnpool.density.selection import select_density_bandwidth
from attnpool.methods import fgt
from attnpool.methods.loo_weights import leave_one_out_log_weights


def textbook(x: np.ndarray, scale: float) -> np.ndarray:
    """``log Σ_{j≠i} exp(−((x_i − x_j) · scale)²/2)``, every pair."""
    log_k = -0.5 * ((x[:, None] - x[None, :]) * scale) ** 2
    np.fill_diagonal(log_k, -np.inf)
    return logsumexp(log_k, axis=1)


def sample(layout: str, n: int = 1500) -> np.ndarray:
    rng = np.random.default_rng(7)
    x = {
        "normal": lambda: rng.normal(size=n),
        "outliers": lambda: np.r_[rng.normal(size=n - 6), 40.0, 41.0, -60.0, 300.0, 301, 302],
        "ties": lambda: np.round(rng.normal(size=n), 1),  # many points on the same values
        "clusters": lambda: np.r_[rng.normal(0, 1e-3, n // 2), rng.normal(5, 1.0, n - n // 2)],
        "times": lambda: 1.7e9 + rng.uniform(0, 3600, n),  # far from the origin
    }[layout]()
    return np.sort(x)


@pytest.mark.parametrize("layout", ["normal", "outliers", "ties", "clusters", "times"])
@pytest.mark.parametrize("relative", [1e-3, 0.05, 1.0, 30.0])
@pytest.mark.parametrize("path", ["compiled", "pieces"])
def test_log_weights_equal_the_textbook(layout, relative, path, monkeypatch):
    # the compiled loop does it in one call; from THREAD_MIN_TERMS terms the expansions'
    # pieces (threaded) and NumPy's pairs do it: forced here by a threshold of 0
    if path == "pieces":
        monkeypatch.setattr(fgt, "THREAD_MIN_TERMS", 0)
    x = sample(layout)
    centred = centred_on_keys(x[:, None], x[:, None])[0][:, 0]
    scale = 1.0 / (relative * np.std(x))
    got = leave_one_out_log_weights(centred, scale)
    want = textbook(centred, scale)
    # within 2e-14 of each weight with its own term, or summed pair by pair
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-11)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_the_smallest_samples(n):
    x = np.array([0.0, 0.3, 5.0])[:n]
    got = leave_one_out_log_weights(x, 2.0)
    if n == 1:
        assert got.tolist() == [-np.inf]  # no other point
    else:
        np.testing.assert_allclose(got, textbook(x, 2.0), rtol=1e-14)


def test_an_estimates_error_is_within_its_tolerance():
    x = sample("outliers")
    got = leave_one_out_log_weights(x, 4.0, ESTIMATE_TOLERANCE)
    want = textbook(x, 4.0)
    # each rest within 2 tolerances of the weight with its own term (the unit), or exact
    bound = 2 * ESTIMATE_TOLERANCE * (1 + np.exp(-np.maximum(want, -700))) + 1e-13
    assert np.all(np.abs(np.expm1(got - want)) <= bound)


@pytest.mark.parametrize("reach", [4.0, 8.93, 12.0])
@pytest.mark.parametrize("tolerance", [fgt.TOLERANCE, 1e-8])
def test_a_plan_for_counts_takes_the_lower_of_its_two_bounds(reach, tolerance):
    # the row's bound: each key's error, e^{−(σ − τ)²/2} (στ)^p / p! over the window's
    # offsets σ and the box's τ ≤ width/2, at most e^{−R²/2} (a fine grid of σ); each
    # term's own: S^p / p! · e^S ≤ tolerance at S = max στ. Both in 50 digits.
    width, half, order = fgt.plan(reach, counts=True, tolerance=tolerance)
    assert half * width >= reach
    with decimal.localcontext(decimal.Context(prec=50)):
        tau, farthest = decimal.Decimal(width) / 2, decimal.Decimal((half + 0.5) * width)
        sigmas = [decimal.Decimal(s) for s in np.linspace(0.0, float(farthest), 4001)]
        limit = (-(decimal.Decimal(math.ceil(reach * 64) / 64) ** 2) / 2).exp()

        def row_bound(p: int) -> bool:
            return all(
                (-((s - tau) ** 2) / 2).exp() * (s * tau) ** p / math.factorial(p) <= limit
                for s in sigmas
            )

        def term_bound(p: int) -> bool:
            largest = farthest * tau
            return largest**p / math.factorial(p) * largest.exp() <= decimal.Decimal(tolerance)

        least = [next(p for p in range(1, 200) if bound(p)) for bound in (row_bound, term_bound)]
    assert order == min(least)


def test_densities_of_counts_by_the_expansions_equal_the_textbook():
    # kernel densities take the counts' plan (no value column): relative to each weight
    rng = np.random.default_rng(9)
    keys, queries = rng.normal(size=3000), np.linspace(-3, 3, 500)
    sums, settled = fgt.expansion_sums(queries[:, None], keys[:, None], np.zeros((3000, 0)), 5.0)
    d2 = ((queries[:, None] - keys[None, :]) * 5.0) ** 2
    want = np.exp(-0.5 * (d2 - d2.min(axis=1, keepdims=True))).sum(axis=1)
    assert settled.all()
    np.testing.assert_allclose(sums[:, 0], want, rtol=3e-14)


@pytest.mark.parametrize("layout", ["normal", "clusters", "times"])
def test_a_search_ranking_its_grid_by_estimates_reaches_the_exact_optimum(layout):
    # the grid's estimates choose where Brent's method starts; every point it keeps, and
    # the reported objective, are exact: no bandwidth of a fine grid does better (the
    # clusters' optimum lies below the grid, 0.05 of Scott's rule: the search goes on
    # down while the criterion falls)
    x = sample(layout, 1200)[:, None]
    found = select_density_bandwidth(x, method="cv_ml")

    def criterion(h: float) -> float:
        return -float(np.mean(textbook(x[:, 0], 1.0 / h))) + math.log(
            (len(x) - 1) * h * math.sqrt(2 * math.pi)
        )

    np.testing.assert_allclose(found.objective, criterion(found.bandwidth[0]), rtol=1e-12)
    np.testing.assert_allclose(
        -np.mean(loo_log_density(x, found.bandwidth, "gaussian")), found.objective, rtol=1e-13
    )
    fine = found.bandwidth[0] * np.geomspace(0.8, 1.25, 61)
    assert found.objective <= min(criterion(h) for h in fine) + 1e-12
    grid, estimates = found.grid  # multiples of Scott's rule, and their estimates
    start = rule_of_thumb(x, method="scott")[0]
    exact = np.array([criterion(h) for h in grid * start])
    np.testing.assert_allclose(estimates, exact, rtol=0, atol=1e-9)
    assert found.evaluations > len(grid)


def test_estimates_below_the_exact_best_point_do_not_bracket_it():
    thetas = np.log([0.5, 1.0, 2.0])
    step = math.log(2.0)
    # exact values on the grid: the best point's neighbours bracket it
    assert _bracket(thetas, np.array([3.0, 1.0, 2.0]), thetas[1], step, None) is not None
    # estimates: the best point's exact value replaces its estimate; an end estimated
    # below it cannot serve as a bracket's end
    assert _bracket(thetas, np.array([3.0, 1.0, 2.0]), thetas[1], step, 1.5)[1] == (3.0, 1.5, 2.0)
    assert _bracket(thetas, np.array([3.0, 1.0, 1.2]), thetas[1], step, 1.5) is None


@pytest.mark.parametrize("below", [0.5, 5.0, 40.0])
def test_a_one_column_search_follows_a_falling_criterion_below_its_grid(below):
    # a smooth criterion whose minimum lies `below` log-units under the grid's smallest
    # point: followed down a grid step at a time, at most MOST_BELOW steps
    from attnpool.bandwidth.search import GRID, MOST_BELOW, SearchLine, SearchObjective, host_search

    thetas = np.log(GRID)[:, None]
    step = math.log(GRID[1] / GRID[0])
    optimum = thetas[0, 0] - below
    calls = []

    def criterion(theta) -> float:
        calls.append(1)
        return float((np.asarray(theta).reshape(-1)[0] - optimum) ** 2)

    theta, value, on_grid = host_search(SearchObjective(criterion), SearchLine(thetas), None,
                                        xatol=1e-9)  # fmt: skip
    assert on_grid.shape == GRID.shape  # the grid's own objectives are reported
    lowest = thetas[0, 0] - MOST_BELOW * step
    if optimum >= lowest - step:  # within reach: found
        np.testing.assert_allclose(theta[0], optimum, atol=1e-6)
    else:  # beyond: the search stops at its last step's bracket, still falling there
        assert theta[0] <= lowest + step and value < criterion(thetas[0])
    assert len(calls) <= len(GRID) + MOST_BELOW + 1 + 60


def test_a_one_column_search_follows_a_falling_criterion_above_its_grid():
    """A response without signal: the criterion falls to the global mean's as h → ∞. The
    host search stopped one grid step above the grid's top (h = 0.69, CV 0.94795) where
    the compiled search went on (0.94716); it now follows the criterion up as it follows
    it down below the grid."""
    from attnpool import cv_curve, select_bandwidth
    from attnpool.bandwidth.search import GRID, MOST_ABOVE, SearchLine, SearchObjective, host_search

    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 1, 300), rng.normal(0, 1, 300)
    found = select_bandwidth(x, y)
    assert found.objective <= cv_curve(x, y, [1e6])[0] * (1 + 1e-9)
    assert found.objective == pytest.approx(select_bandwidth(x, y, pooling="dense").objective,
                                            rel=1e-9)  # fmt: skip
    # a smooth criterion whose minimum lies 3 log-units above the grid: found
    thetas = np.log(GRID)[:, None]
    optimum = thetas[-1, 0] + 3.0

    def criterion(theta) -> float:
        return float((np.asarray(theta).reshape(-1)[0] - optimum) ** 2)

    theta, _, on_grid = host_search(SearchObjective(criterion), SearchLine(thetas), None,
                                    xatol=1e-9)  # fmt: skip
    assert on_grid.shape == GRID.shape
    np.testing.assert_allclose(theta[0], optimum, atol=1e-6)
    assert 3.0 < MOST_ABOVE * math.log(GRID[1] / GRID[0])
