"""The host-side bandwidth search: Brent's method without SciPy."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from attnpool.host_search import finite_or_largest, minimize_bounded

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
