"""Minimisers of the bandwidth searches: Brent's method in one dimension and L-BFGS on
forward differences or an exact gradient in several, both without SciPy (whose import
costs more than a small search); SciPy's L-BFGS-B for the compiled searches' refinement.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "DIFFERENCE_STEP",
    "LONGEST_STEP",
    "finite_or_largest",
    "initial_simplex",
    "minimize_bounded",
    "minimize_lbfgs",
    "minimize_smooth",
]


def minimize_bounded(
    function, low: float, high: float, *, xatol: float, maxiter: int = 500, known=None
):
    """``(x, f(x))``: a local minimum of ``function`` on ``[low, high]`` by Brent's method —
    golden-section steps, parabolic ones where they stay inside the bracket and shrink
    — to ``xatol`` (plus ``√eps`` relative), as SciPy's ``fminbound``. ``known``: the
    values ``(f(low), f(x₀), f(high))`` and ``x₀`` inside, below both ends (a grid's best
    point and its neighbours) as ``(x₀, (f_low, f_x₀, f_high))``: the search starts from
    ``x₀`` with the ends as its other two points, so its first step is the parabola
    through the three, not a golden section."""
    golden = 0.5 * (3.0 - math.sqrt(5.0))
    relative = math.sqrt(np.finfo(float).eps)
    a, b = low, high
    if known is None:
        x = w = v = a + golden * (b - a)
        fx = fw = fv = function(x)
        step = previous = 0.0
    else:
        x, (f_low, fx, f_high) = known
        (w, fw), (v, fv) = sorted([(a, f_low), (b, f_high)], key=lambda point: point[1])
        step = previous = b - a  # long enough to allow the parabola at once
    for _ in range(maxiter):
        middle = 0.5 * (a + b)
        tol1 = relative * abs(x) + xatol / 3.0
        tol2 = 2.0 * tol1
        if abs(x - middle) <= tol2 - 0.5 * (b - a):
            break
        golden_step = True
        if abs(previous) > tol1:  # a parabola through x, w, v
            r = (x - w) * (fx - fv)
            q = (x - v) * (fx - fw)
            p = (x - v) * q - (x - w) * r
            q = 2.0 * (q - r)
            p, q = (-p, q) if q > 0 else (p, -q)
            if abs(p) < abs(0.5 * q * previous) and q * (a - x) < p < q * (b - x):
                previous, step = step, p / q
                golden_step = False
                if (x + step) - a < tol2 or b - (x + step) < tol2:
                    step = tol1 if x < middle else -tol1
        if golden_step:
            previous = (b - x) if x < middle else (a - x)
            step = golden * previous
        u = x + (step if abs(step) >= tol1 else math.copysign(tol1, step))
        fu = function(u)
        if fu <= fx:
            a, b = (a, x) if u < x else (x, b)
            v, fv, w, fw, x, fx = w, fw, x, fx, u, fu
        else:
            a, b = (u, b) if u < x else (a, u)
            if fu <= fw or w == x:
                v, fv, w, fw = w, fw, u, fu
            elif fu <= fv or v in (x, w):
                v, fv = u, fu
    return x, fx


#: Forward-difference step, relative to ``max(1, |θ_j|)``: about the square root of the
#: objective's rounding (a mean of n squared residuals, ~1e-14 relative).
DIFFERENCE_STEP = 1e-7
#: The most a step of :func:`minimize_smooth` moves any coordinate (a factor ``e²`` in a
#: bandwidth): where the objective is nearly flat, the quasi-Newton step can be
#: thousands of units long, to bandwidths that overflow.
LONGEST_STEP = 2.0


def minimize_smooth(
    objective,
    start,
    *,
    limits=None,
    maxiter: int = 100,
    ftol: float = 1e-12,
    memory: int = 10,
    value_and_gradient=None,
    first_step: float = 0.5,
    curvature: float | None = None,
):
    """``(θ, f(θ))``: a local minimum of a smooth ``objective`` from ``start`` by L-BFGS on
    forward differences (``d + 1`` evaluations a step, ``d`` = ``θ``'s size), without
    SciPy (whose import costs more than a small search).

    Each step goes along the quasi-Newton direction of the last ``memory`` steps (the
    first along the gradient, ``first_step`` units of ``θ`` long; none longer than
    :data:`LONGEST_STEP`) and backtracks, by quadratic
    interpolation, until the objective is defined and falls by at least 1e-4 of the
    slope's promise (Armijo). It stops when a step lowers the objective by less than
    ``ftol`` of its size, the gradient vanishes, or after ``maxiter`` steps. In two to
    five columns it stops after 25–450 evaluations at the optimum to ~1e-10 relative,
    where Nelder–Mead needed 130–1000 and often stopped at its iteration limit. An
    axis whose difference step lands where the objective is undefined gets no slope.

    ``limits = (wide, flat)``, two ``(d,)`` arrays (default none), for an objective that
    reaches its limit as ``θ_j → ∞`` at ``θ_j = flat_j`` (a column smoothed out),
    approaching it like ``f_∞ + α e^{−2θ_j} + …`` once ``θ_j ≥ wide_j``. There Newton's
    steps toward an infinite optimum are half a unit long, forever; so a coordinate past
    ``wide`` that still falls is tried at its limit (:func:`_toward_limit`), and stays
    there if that is best.

    ``value_and_gradient``: ``θ → (f(θ), ∇f(θ))`` in one evaluation (the gradient None
    where it cannot give one): the exact gradient instead of forward differences, and
    every evaluation of the descent through it, so an accepted step has its gradient;
    and the descent also stops before a quasi-Newton step whose model promises less than
    ``ftol`` of the objective (``−½ ∇f·p`` for the step ``p``): with exact gradients the
    model is good near the optimum, and that step would cost an evaluation for nothing.

    ``curvature``: a guess of the objective's second derivative along any direction (a
    grid's second difference along its line): the first step is then Newton's for that
    curvature, ``−∇f / curvature``, no longer than ``first_step``.
    """
    gradient_at = _forward_gradient
    if value_and_gradient is not None:
        objective, gradient_at = _with_gradients(objective, value_and_gradient)
    theta = np.array(start, dtype=float)
    value = objective(theta)
    if not np.isfinite(value):
        return theta, value
    wide, flat = (np.full(theta.shape, np.inf),) * 2 if limits is None else limits
    wide = np.array(wide, dtype=float)
    free = theta < flat
    gradient = gradient_at(objective, theta, value, free)
    steps: list[tuple[np.ndarray, np.ndarray]] = []
    for _ in range(maxiter):
        direction = -_inverse_hessian_times(gradient, steps)
        slope = float(gradient @ direction)
        if not slope < 0:  # no descent along it: start again from the gradient
            steps.clear()
            direction, slope = -gradient, -float(gradient @ gradient)
        if slope == 0.0:
            break
        promised = -0.5 * slope / max(abs(value), 1e-300)
        if value_and_gradient is not None and steps and promised <= ftol:
            break
        longest = float(np.max(np.abs(direction)))
        length = min(1.0, LONGEST_STEP / longest) if steps else first_step / longest
        if not steps and curvature is not None and curvature > 0:
            length = min(length, 1.0 / curvature)  # direction = −∇f here
        trial, trial_value = _backtrack(objective, theta, value, direction, slope, length)
        if trial is None:
            break
        decrease = (value - trial_value) / max(abs(value), abs(trial_value), 1e-300)
        trial_gradient = gradient_at(objective, trial, trial_value, free)
        rising = free & (trial >= wide) & (trial_gradient < 0)
        if rising.any():
            moved = _toward_limit(objective, trial, trial_value, trial_gradient, rising, flat)
            wide[rising] = trial[rising] + 1.0  # not tried again before a unit further
            if moved is not None:
                theta, value, at_limit = moved
                free &= ~at_limit
                gradient = gradient_at(objective, theta, value, free)
                steps.clear()
                continue
        step, change = trial - theta, trial_gradient - gradient
        if step @ change > 1e-12 * np.sqrt((step @ step) * (change @ change)):
            steps = [*steps[-(memory - 1) :], (step, change)]
        theta, value, gradient = trial, trial_value, trial_gradient
        if decrease <= ftol:
            break
    return theta, value


def _toward_limit(objective, theta, value, gradient, rising, flat):
    """``(θ', f(θ'), at the limit)``: the ``rising`` coordinates moved together to their
    ``flat`` limit, or to the minimum between — where a quadratic in ``v = e^{−2Δθ}``
    (``v = 1`` at ``θ``, ``0`` at the limit; the objective's expansion near its limit)
    through ``f(θ)``, its slope and the limit's value has one — whichever is lower than
    ``f(θ)``; None if neither is."""
    limit = np.where(rising, flat, theta)
    limit_value = objective(limit)
    slope = -0.5 * float(gradient[rising].sum())  # df/dv at v = 1
    curvature = slope - (value - limit_value)
    best = (value, theta, None)
    if np.isfinite(limit_value):
        best = min(best, (limit_value, limit, rising), key=lambda c: c[0])
        vertex = 1.0 - slope / (2.0 * curvature) if curvature > 0 else 0.0
        if 0.0 < vertex < 1.0:
            inside = np.where(rising, theta - 0.5 * np.log(vertex), theta)
            best = min(best, (objective(inside), inside, np.zeros_like(rising)), key=lambda c: c[0])
    if best[2] is None:
        return None
    return best[1], best[0], best[2]


def _with_gradients(objective, value_and_gradient):
    """``(objective', gradient_at)``: an objective evaluated by ``value_and_gradient``,
    keeping each point's gradient for ``gradient_at`` (forward differences where the
    gradient is missing or not finite)."""
    gradients: dict[bytes, np.ndarray] = {}

    def evaluated(theta):
        value, gradient = value_and_gradient(theta)
        if gradient is not None and np.all(np.isfinite(gradient)):
            gradients[np.asarray(theta, float).tobytes()] = np.asarray(gradient, float)
        return value

    def gradient_at(_, theta, value, free) -> np.ndarray:
        gradient = gradients.get(np.asarray(theta, float).tobytes())
        if gradient is None:
            return _forward_gradient(evaluated, theta, value, free)
        return np.where(free, gradient, 0.0)

    return evaluated, gradient_at


def _forward_gradient(objective, theta, value, free) -> np.ndarray:
    """The objective's gradient at ``θ`` by forward differences along the ``free`` axes
    (0 along the others, and along an axis whose step lands where the objective is
    undefined)."""
    gradient = np.zeros_like(theta)
    for j in np.flatnonzero(free):
        moved = theta.copy()
        moved[j] += DIFFERENCE_STEP * max(1.0, abs(theta[j]))
        nearby = objective(moved)
        if np.isfinite(nearby):
            gradient[j] = (nearby - value) / (moved[j] - theta[j])  # the step as taken
    return gradient


def _inverse_hessian_times(gradient, steps) -> np.ndarray:
    """L-BFGS's two-loop recursion: the inverse Hessian estimate from ``steps`` — pairs
    ``(θ change, gradient change)``, oldest first — times ``gradient``."""
    q = gradient.copy()
    coefficients = []
    for step, change in reversed(steps):
        rho = 1.0 / (change @ step)
        alpha = rho * (step @ q)
        q -= alpha * change
        coefficients.append((rho, alpha))
    if steps:
        step, change = steps[-1]
        q *= (step @ change) / (change @ change)
    for (step, change), (rho, alpha) in zip(steps, reversed(coefficients), strict=True):
        q += step * (alpha - rho * (change @ q))
    return q


def _backtrack(objective, theta, value, direction, slope, length, *, tries: int = 40):
    """``(θ + t·direction, its value)`` for the first ``t`` from ``length`` down (each
    try the minimum of the quadratic through the value, the slope and the last try,
    kept within [0.1, 0.5] of it) where the objective is defined and satisfies Armijo's
    condition; ``(None, None)`` if none does."""
    for _ in range(tries):
        trial = theta + length * direction
        trial_value = objective(trial)
        if np.isfinite(trial_value) and trial_value <= value + 1e-4 * length * slope:
            return trial, trial_value
        if np.isfinite(trial_value):
            curvature = trial_value - value - slope * length
            shrink = -slope * length / (2.0 * curvature) if curvature > 0 else 0.5
        else:
            shrink = 0.5
        length *= min(max(shrink, 0.1), 0.5)
    return None, None


def minimize_lbfgs(value_and_gradient, start, *, ftol: float, maxiter: int, bounds=None):
    """``(θ, f(θ))``: SciPy's L-BFGS-B from ``start``, driven by ``θ → (value, gradient)``
    (``ftol``: the relative decrease at which it stops; ``bounds``: per coordinate)."""
    from scipy import optimize  # 0.5 s to import: the compiled searches have JAX's already

    found = optimize.minimize(
        value_and_gradient,
        np.asarray(start, float),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": maxiter, "ftol": ftol, "gtol": 1e-12},
    )
    return found.x, float(found.fun)


def finite_or_largest(value: float) -> float:
    """Undefined objectives as the largest float: Brent's parabolas turn ``inf`` into NaN."""
    return value if np.isfinite(value) else float(np.finfo(np.float64).max)


def initial_simplex(centre, step: float) -> np.ndarray:
    """Nelder–Mead's first simplex: ``centre`` and half a ``step`` along each axis."""
    return np.vstack([centre, centre + step * 0.5 * np.eye(centre.shape[0])])
