"""The host-side bandwidth search: Brent's method without SciPy, and L-BFGS on forward
differences in several dimensions."""

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar, rosen, rosen_der

from attnpool.bandwidth.minimizers import (
    LONGEST_STEP,
    finite_or_largest,
    minimize_bounded,
    minimize_smooth,
)

FUNCTIONS = {
    "parabola": lambda t: (t - 0.3) ** 2,
    "minimum on the bound": lambda t: np.cos(3 * t) + 0.1 * t,
    "kink": lambda t: abs(t - 0.1234567),
    "asymmetric": lambda t: np.exp(t) - 2 * t,
    "undefined on one side": lambda t: finite_or_largest(np.inf if t < 0 else t * t),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_brent_matches_scipys_bounded_minimiser(name):
    function, calls = FUNCTIONS[name], []

    def counted(t):
        calls.append(t)
        return function(t)

    x, value = minimize_bounded(counted, -1.0, 1.0, xatol=1e-8)
    reference = minimize_scalar(function, bounds=(-1, 1), method="bounded",
                                options={"xatol": 1e-8})  # fmt: skip
    assert x == pytest.approx(reference.x, abs=3e-8)
    assert value == pytest.approx(reference.fun, abs=1e-8)  # within xatol of the same point
    assert len(calls) <= reference.nfev + 1


def _bowl(theta):
    # an ill-conditioned smooth bowl, like a CV objective in log-bandwidths
    centre = np.linspace(-1.5, 0.5, theta.shape[0])
    scales = np.geomspace(1.0, 30.0, theta.shape[0])
    return 0.09 + np.sum(scales * (np.exp(theta - centre) - (theta - centre) - 1.0))


@pytest.mark.parametrize("d", [2, 3, 5])
@pytest.mark.parametrize("name", ["bowl", "rosenbrock"])
def test_forward_differences_reach_the_exact_gradients_minimum(name, d):
    function, gradient = {"bowl": (_bowl, None), "rosenbrock": (rosen, rosen_der)}[name]
    calls = []

    def counted(theta):
        calls.append(theta.copy())
        return function(theta)

    start = np.full(d, -0.3)
    theta, value = minimize_smooth(counted, start, maxiter=500)
    if gradient is None:  # the bowl's minimum is known
        want = np.linspace(-1.5, 0.5, d)
    else:
        want = minimize(function, start, jac=gradient, method="BFGS", tol=1e-12).x
    np.testing.assert_allclose(theta, want, atol=2e-4)
    assert value == pytest.approx(function(want), abs=1e-8)
    assert value == function(theta)
    # fewer evaluations than Nelder–Mead to the same tolerance in θ
    simplex = minimize(function, start, method="Nelder-Mead",
                       options={"xatol": 1e-5, "fatol": 0.0, "maxfev": 10**5})  # fmt: skip
    assert len(calls) < simplex.nfev


def test_forward_differences_step_back_from_where_the_objective_is_undefined():
    # undefined for θ₀ < −1 (no neighbour left), the minimum just inside
    def function(theta):
        return np.inf if theta[0] < -1 else (theta[0] + 0.9) ** 2 + 4 * (theta[1] - 0.2) ** 2

    theta, value = minimize_smooth(function, np.array([2.0, 2.0]))
    np.testing.assert_allclose(theta, [-0.9, 0.2], atol=1e-5)
    assert np.isfinite(value)


WIDE, FLAT = np.log(2.0), np.log(2.0**20)
LIMITS = (np.full(2, WIDE), np.full(2, FLAT))


def _counted(function):
    calls = []

    def counted(theta):
        calls.append(theta.copy())
        return function(theta)

    return counted, calls


def test_a_coordinate_whose_best_value_is_infinite_goes_to_its_limit_in_few_steps():
    # e^{−2θ₁}: a column a local linear fit smooths out (Newton's steps: half a unit)
    def function(theta):
        return (theta[0] - 0.5) ** 2 + 0.01 * np.exp(-2 * min(theta[1], FLAT))

    counted, calls = _counted(function)
    theta, value = minimize_smooth(counted, np.zeros(2), limits=LIMITS)
    assert theta[1] == FLAT
    assert theta[0] == pytest.approx(0.5, abs=1e-6)
    assert value == function(theta)
    crawling, crawled = _counted(function)
    minimize_smooth(crawling, np.zeros(2))
    assert len(calls) < 60 and len(calls) < len(crawled) / 2


@pytest.mark.parametrize("limit", ["above every point", "below the start, above the dip"])
def test_a_finite_minimum_beyond_wide_is_not_taken_for_the_limit(limit):
    # a dip at θ₁ ≈ 3 (a bandwidth e³ times the start, past WIDE); the objective at
    # the limit (0) is either above the whole path or between the start and the dip
    rise = 0.3 if limit.startswith("below") else 0.0

    def function(theta):
        t = min(theta[1], FLAT)
        return (theta[0] - 0.5) ** 2 - np.exp(-(((t - 3.0) / 2) ** 2)) + rise * np.exp(-2 * t)

    theta, value = minimize_smooth(function, np.zeros(2), limits=LIMITS)
    dip = 3.0 + 4 * rise * np.exp(-6.0)  # where the slopes cancel, to first order
    np.testing.assert_allclose(theta, [0.5, dip], atol=2e-5)
    assert value == pytest.approx(function(np.array([0.5, dip])), abs=1e-9)


def test_no_step_is_longer_than_the_longest_step():
    # nearly flat along θ₀: the quasi-Newton step from a small curvature is ~100 long
    def function(theta):
        return 1e-4 * (theta[0] - 100.0) ** 2 + (theta[1] - 0.2) ** 2

    counted, calls = _counted(function)
    theta, _ = minimize_smooth(counted, np.zeros(2))
    seen = np.array(calls)
    farthest = [np.min(np.max(np.abs(seen[:i] - seen[i]), axis=1)) for i in range(1, len(seen))]
    assert max(farthest) <= LONGEST_STEP + 1e-9
    np.testing.assert_allclose(theta, [100.0, 0.2], atol=1e-4)  # and still got there


@pytest.mark.parametrize("name", ["quadratic", "quartic", "cosine"])
def test_brent_from_a_grids_bracket_starts_with_its_parabola(name):
    # a grid's best point and its two neighbours: the same minimum as SciPy's, in fewer
    # evaluations than from a golden section (the three values are known already)
    function = {
        "quadratic": lambda t: (t - 0.13) ** 2,
        "quartic": lambda t: (t - 0.31) ** 4 + 0.1 * (t - 0.31) ** 2,
        "cosine": lambda t: -np.cos(2.0 * (t + 0.2)),
    }[name]
    fresh, seeded = [], []
    plain = minimize_bounded(lambda t: fresh.append(t) or function(t), -0.5, 0.5, xatol=1e-8)
    known = (0.0, (function(-0.5), function(0.0), function(0.5)))
    started = minimize_bounded(lambda t: seeded.append(t) or function(t), -0.5, 0.5,
                               xatol=1e-8, known=known)  # fmt: skip
    reference = minimize_scalar(function, bounds=(-0.5, 0.5), method="bounded",
                                options={"xatol": 1e-8})  # fmt: skip
    assert started[0] == pytest.approx(reference.x, abs=3e-8)
    assert started[1] == pytest.approx(plain[1], abs=1e-12)
    assert len(seeded) < len(fresh)


@pytest.mark.parametrize("scale", [0.5, 1.0, 4.0])
def test_a_known_curvature_makes_the_first_step_newtons(scale):
    # f = c/2 |θ − θ*|²: with the curvature c known, the first step lands on the minimum
    # (then one evaluation confirms it); without it the first step is `first_step` long
    target, c = np.array([0.3, -0.2, 0.5]), 2.0 * scale

    def value_and_gradient(theta):
        calls.append(theta)
        return float(c / 2 * np.sum((theta - target) ** 2)), c * (theta - target)

    for curvature, evaluations in ((c, 2), (None, 3)):
        calls = []
        theta, _ = minimize_smooth(lambda t: value_and_gradient(t)[0], np.zeros(3),
                                       value_and_gradient=value_and_gradient, ftol=1e-10,
                                       first_step=1.0, curvature=curvature)  # fmt: skip
        np.testing.assert_allclose(theta, target, atol=1e-6)
        assert len(calls) == evaluations  # the start, the minimum (and a first step)
    # a search over a grid's line gives that curvature from the grid's second difference
    from attnpool.bandwidth.search import GRID, _line_curvature

    thetas = np.log(GRID)[:, None] * np.ones(3)
    objectives = np.array([c / 2 * np.sum((t - target) ** 2) for t in thetas])
    best = thetas[np.argmin(objectives)]
    assert _line_curvature(thetas, objectives, best) == pytest.approx(c, rel=1e-9)
    assert _line_curvature(thetas, objectives, thetas[0]) is None  # an end of the grid
