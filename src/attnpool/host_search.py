"""The bandwidth search on the host: its variables, its grid, and minimisers that need no
gradient of the objective (no JAX, no SciPy in one column: a small fit should not pay
for their imports).

The search variables ``θ`` are log-bandwidths for continuous columns and logits of
``λ / λ_max`` for categorical ones; the coarse search tries :data:`GRID` multiples of
the rule of thumb.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .local_model import LocalModel

__all__ = [
    "GRID",
    "BandwidthSelection",
    "bandwidth_of",
    "best_candidate",
    "categorical_upper",
    "finite_or_largest",
    "host_search",
    "initial_simplex",
    "minimize_bounded",
    "minimize_lbfgs",
    "minimize_smooth",
    "select_on_host",
    "to_theta",
]

#: The coarse search's multiples of the rule of thumb.
GRID = np.geomspace(0.05, 5.0, 16)


class BandwidthSelection(NamedTuple):
    """Result of :func:`attnpool.select_bandwidth`.

    Attributes: ``bandwidth (d,)``; ``objective`` (the criterion there; NaN for rules
    of thumb); ``method``; ``grid`` — the coarse search's multipliers of the
    rule of thumb and their objectives (empty for rules of thumb); ``exact`` — False
    when ``objective`` is the binned approximation (a binned search of a smooth
    kernel above :data:`attnpool.compiled_search.EXACT_OBJECTIVE_MAX_PAIRS`).
    """

    bandwidth: np.ndarray
    objective: float
    method: str
    grid: tuple[np.ndarray, np.ndarray]
    exact: bool = True


def categorical_upper(model: LocalModel) -> np.ndarray:
    """Largest meaningful λ per categorical column (Aitchison–Aitken: (c − 1)/c)."""
    return np.array(
        [
            1.0 if model.var_type[j] == "o" else (model.levels[j] - 1) / max(model.levels[j], 1)
            for j in model.categorical
        ]
    )


def bandwidth_of(theta, model: LocalModel, dtype=np.float64) -> np.ndarray:
    """``θ → h`` on the host (:func:`attnpool.criteria.to_bandwidth` traces it), computed
    in ``dtype`` and returned in float64: no eager JAX operation, each of which would
    build a program."""
    theta = np.asarray(theta, dtype)
    h = np.zeros(theta.shape, dtype)
    cont, cat = list(model.continuous), list(model.categorical)
    h[cont] = np.exp(theta[cont])
    if cat:
        with np.errstate(over="ignore"):  # a very negative logit: λ = 0
            h[cat] = categorical_upper(model).astype(dtype) / (1 + np.exp(-theta[cat]))
    return h.astype(float)


def to_theta(bandwidth, model: LocalModel):
    theta = np.array(bandwidth, dtype=float)
    cont, cat = list(model.continuous), list(model.categorical)
    theta[cont] = np.log(theta[cont])
    if cat:
        fraction = np.clip(theta[cat] / categorical_upper(model), 1e-6, 1 - 1e-6)
        theta[cat] = np.log(fraction / (1 - fraction))
    return theta


def best_candidate(thetas, objectives, method: str):
    """The grid point with the lowest finite objective, or a clear error if there is none."""
    if not np.isfinite(objectives).any():
        raise ValueError(
            f"bandwidth: the {method} criterion is undefined at every candidate from "
            f"{GRID[0]:g}× to {GRID[-1]:g}× the rule of thumb (too few neighbours?)"
        )
    return thetas[int(np.argmin(np.where(np.isfinite(objectives), objectives, np.inf)))]


def host_search(objective, thetas, grid, progress, *, xatol: float = 1e-5, smooth: bool = True):
    """``(θ, objective, grid objectives)``: the best of ``thetas`` (the coarse grid, ``grid``
    its multipliers), refined without an analytic gradient to ``xatol`` in ``θ``
    (log-bandwidths) — bounded Brent in one dimension (:func:`minimize_bounded`); in
    several L-BFGS-B on forward differences where the objective is ``smooth``
    (:func:`minimize_smooth`), else SciPy's Nelder–Mead (a compact kernel's objective
    jumps as keys enter a support, where differences mislead); never worse than the
    best grid point."""
    objectives = np.array([objective(theta) for theta in thetas])
    if progress:
        progress(1, 2)
    best = best_candidate(thetas, objectives, "cv")
    step = float(np.log(grid[1] / grid[0]))
    if thetas.shape[1] == 1:
        found, value = minimize_bounded(
            lambda t: finite_or_largest(objective(np.array([t]))),
            best[0] - step,
            best[0] + step,
            xatol=xatol,
        )
        theta = np.array([found])
    elif smooth:
        theta, value = minimize_smooth(objective, best)
    else:
        from scipy import optimize  # 0.5 s to import: only for several columns

        found = optimize.minimize(
            lambda t: finite_or_largest(objective(t)),
            best,
            method="Nelder-Mead",
            options={"xatol": xatol, "fatol": 0.0, "initial_simplex": initial_simplex(best, step)},
        )
        theta, value = found.x, float(found.fun)
    best_value = float(np.nanmin(objectives))
    if not value <= best_value:
        theta, value = best, best_value
    if progress:
        progress(2, 2)
    return theta, value, objectives


def select_on_host(objective, thetas, progress, **options) -> BandwidthSelection:
    """CV by an objective ``θ → float`` computed on the host (no gradient; ``options`` as
    :func:`attnpool.host_search.host_search`)."""
    theta, value, objectives = host_search(objective, thetas, GRID, progress, **options)
    return BandwidthSelection(np.exp(theta), value, "cv", (GRID, objectives))


def minimize_bounded(function, low: float, high: float, *, xatol: float, maxiter: int = 500):
    """``(x, f(x))``: a local minimum of ``function`` on ``[low, high]`` by Brent's method —
    golden-section steps, parabolic ones where they stay inside the bracket and shrink
    — to ``xatol`` (plus ``√eps`` relative), as SciPy's ``fminbound``."""
    golden = 0.5 * (3.0 - math.sqrt(5.0))
    relative = math.sqrt(np.finfo(float).eps)
    a, b = low, high
    x = w = v = a + golden * (b - a)
    fx = fw = fv = function(x)
    step = previous = 0.0
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


def minimize_smooth(objective, start, *, maxiter: int = 100):
    """``(θ, f(θ))``: a local minimum of a smooth ``objective`` from ``start`` by SciPy's
    L-BFGS-B on forward differences (``d + 1`` evaluations a step, ``d`` = ``θ``'s size).

    In two to five columns it stops after 25–450 evaluations at the optimum to ~1e-10
    relative, where Nelder–Mead needed 130–1000 and often stopped at its iteration
    limit. Where the objective is undefined the minimiser sees a large value and no
    slope there (nor along an axis whose step lands where it is undefined), and steps
    back."""

    def value_and_gradient(theta):
        value = objective(theta)
        if not np.isfinite(value):
            return 1e300, np.zeros_like(theta)
        gradient = np.empty_like(theta)
        for j in range(theta.shape[0]):
            moved = theta.copy()
            moved[j] += DIFFERENCE_STEP * max(1.0, abs(theta[j]))
            nearby = objective(moved)
            step = moved[j] - theta[j]  # the step exactly as taken
            gradient[j] = (nearby - value) / step if np.isfinite(nearby) else 0.0
        return value, gradient

    return minimize_lbfgs(value_and_gradient, start, ftol=1e-13, maxiter=maxiter)


def minimize_lbfgs(value_and_gradient, start, *, ftol: float, maxiter: int, bounds=None):
    """``(θ, f(θ))``: SciPy's L-BFGS-B from ``start``, driven by ``θ → (value, gradient)``
    (``ftol``: the relative decrease at which it stops; ``bounds``: per coordinate)."""
    from scipy import optimize  # 0.5 s to import: only for several columns or a gradient

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
