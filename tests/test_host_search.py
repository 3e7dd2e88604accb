"""The host-side bandwidth search: Brent's method without SciPy, and L-BFGS on forward
differences in several dimensions."""

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar, rosen, rosen_der

from attnpool.host_search import finite_or_largest, minimize_bounded, minimize_smooth

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
