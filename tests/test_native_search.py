"""The Gaussian's leave-one-out CV objective on the native loop: its exact gradient, its
row-subset estimate, and the search that uses both (against finite differences, the
textbook leave-one-out formula and the objective's own grid)."""

import numpy as np
import pytest

from attnpool import select_bandwidth
from attnpool.bandwidth.search import GRID
from attnpool.engines.native_search import (
    ESTIMATE_MIN_ROWS,
    NativeObjective,
    estimate_rows,
    gradient_loop_built,
)
from attnpool.engines.numpy_search import loo_objective
from attnpool.sums.local_model import model_for


def data(n, d, p=1, offset=0.0, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 5, (n, d)) + offset
    y = np.sin(x - offset).sum(axis=1, keepdims=True) + rng.normal(0, 0.3, (n, p))
    return x, y


def textbook_loo_residuals(x, y, h, rows, chunk=512):
    """``y − ĝ₋ᵢ(x_i)`` for ``rows``: distances → kernel → normalise over the others (in
    chunks of rows, one column at a time: no (rows, n, d) array)."""
    residuals = []
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        u2 = sum(((x[part, None, c] - x[None, :, c]) / h[c]) ** 2 for c in range(x.shape[1]))
        w = np.exp(-u2 / 2)
        w[np.arange(len(part)), part] = 0.0
        residuals.append(y[part] - (w @ y) / w.sum(axis=1, keepdims=True))
    return np.concatenate(residuals)


@pytest.mark.parametrize(("d", "p", "offset"), [(2, 1, 0.0), (3, 2, 1e3), (5, 1, -7.5)])
def test_the_gradient_is_the_objectives(d, p, offset):
    x, y = data(300, d, p, offset)
    model = model_for(x, kernel="gaussian", var_type="c" * d)
    objective = loo_objective(x, y, model)
    assert not hasattr(objective, "value_and_gradient")  # small: not worth its own loop
    theta = np.log(0.35 + 0.07 * np.arange(d))
    value, gradient = NativeObjective(x, y, model).value_and_gradient(np.exp(theta))
    assert value == pytest.approx(objective(theta), rel=1e-13)
    step = 1e-5
    central = [
        (objective(theta + step * e) - objective(theta - step * e)) / (2 * step) for e in np.eye(d)
    ]
    np.testing.assert_allclose(gradient, central, rtol=1e-6)


def test_the_estimate_is_the_mean_error_of_a_subset_of_rows():
    n = ESTIMATE_MIN_ROWS
    x, y = data(n, 2)
    h = np.array([0.3, 0.2])
    native = NativeObjective(x, y, model_for(x, kernel="gaussian", var_type="cc"))
    assert native.estimates and native.gradients and native.rows == estimate_rows(n) == 4096
    order = np.random.default_rng(0).permutation(n)
    residuals = textbook_loo_residuals(x[order], y[order], h, np.arange(native.rows))
    assert native.value(h, estimate=True) == pytest.approx(np.mean(residuals**2), rel=1e-12)
    full = textbook_loo_residuals(x, y, h, np.arange(n))
    assert native.value(h) == pytest.approx(np.mean(full**2), rel=1e-12)
    # one column, or fewer points: no estimate (the grid is ranked exactly) — from 4096
    # points there is one once the gradient's loop is built
    assert not NativeObjective(x[:, :1], y, model_for(x[:, :1], kernel="gaussian")).estimates
    model = model_for(x, kernel="gaussian")
    assert not NativeObjective(x[:4095], y[:4095], model).estimates
    native.value_and_gradient(h)  # builds it, if no search has
    assert gradient_loop_built(2, 1)
    small = NativeObjective(x[:4096], y[:4096], model)
    assert small.estimates and small.gradients and small.rows == 1024


@pytest.mark.parametrize(("n", "d"), [(ESTIMATE_MIN_ROWS, 2), (5000, 3)])
def test_the_search_finds_the_full_objectives_minimum(n, d):
    x, y = data(n, d, seed=3)
    model = model_for(x, kernel="gaussian", var_type="c" * d)
    NativeObjective(x[:300], y[:300], model).value_and_gradient(np.full(d, 0.4))  # built
    assert NativeObjective(x, y, model).estimates  # from 4096 points once built
    found = select_bandwidth(x, y)
    objective = loo_objective(x, y, model)
    theta = np.log(found.bandwidth)
    assert found.objective == pytest.approx(objective(theta), rel=1e-12)
    assert found.evaluations < 30  # forward differences took 40–45 at these sizes
    for e in np.eye(d):  # a local minimum of the exact objective
        for sign in (1, -1):
            assert found.objective <= objective(theta + sign * 1e-3 * e)
    start = np.log(np.prod(found.bandwidth) ** (1 / d))  # and below the grid along its line
    assert all(found.objective <= objective(start + np.log(g) * np.ones(d)) for g in GRID[::3])


def test_the_search_is_shift_and_scale_invariant():
    # the estimate's rows and the gradient's moments, on data moved and rescaled
    x, y = data(ESTIMATE_MIN_ROWS, 2, seed=4)
    base = select_bandwidth(x, y[:, 0])
    moved = select_bandwidth(x * 2.0**-10 - 3e4, y[:, 0] * 2.0**20)
    np.testing.assert_allclose(moved.bandwidth, base.bandwidth * 2.0**-10, rtol=1e-6)
    assert moved.objective == pytest.approx(base.objective * 2.0**40, rel=1e-9)


@pytest.mark.parametrize("h", [0.02, 0.1])
def test_local_linear_on_the_loop_is_numpys_in_a_heavy_tail(h):
    """A lognormal tail's isolated rows have one key of any weight; the loop's other keys
    sit at its weights' floor (2⁻¹⁰²⁰), and their offsets gave local linear a slope
    through them, where the exact sums have none (the fit is the key's response): CV
    4e-4 off on 20 000 rows, 2e-7 here. A weight at the floor now counts as 0, as in the
    loop's polynomial moments."""
    from attnpool.engines.numpy_engine import local_fit

    rng = np.random.default_rng(7)
    x = rng.lognormal(0, 1.5, (3000, 1))
    y = np.sin(3 * np.log(x)) + rng.normal(0, 0.3, x.shape)
    model = model_for(x, var_type="c", degree=1)
    residuals = y - local_fit(x, y, x, np.array([h]), model, exclude_self=True)[0]
    loop = NativeObjective(x, y, model).value(np.array([h]))
    assert loop == pytest.approx(float(np.mean(residuals**2)), rel=1e-11)
