"""The bandwidth search on the host: its variables, its grid, the grid-then-refine search
(the minimisers in :mod:`attnpool.bandwidth.minimizers`; no JAX, and no SciPy but for
compact kernels in several columns: a small fit should not pay for their imports).

The search variables ``θ`` are log-bandwidths for continuous columns and logits of
``λ / λ_max`` for categorical ones; the coarse search tries multiples of the rule of
thumb (:mod:`attnpool.bandwidth.grid`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..sums.empty_policy import user_stacklevel
from ..sums.facts import search_facts
from ..sums.local_model import LocalModel, bandwidth_of, categorical_upper
from ..sums.observation_weights import too_wide_to_truncate
from ..sums.plan import plan
from .grid import (
    GRID,
    MOST_ABOVE,
    MOST_BELOW,
    SearchLine,
    above_the_grid,
    below_the_grid,
    multipliers,
)
from .minimizers import (
    finite_or_largest,
    initial_simplex,
    minimize_bounded,
    minimize_lbfgs,
    minimize_smooth,
)
from .starts import best_of, profile_start, rule_point

__all__ = [
    "GRID",
    "MOST_ABOVE",
    "MOST_BELOW",
    "SMOOTHED_OUT",
    "WIDE",
    "BandwidthSelection",
    "ConstantResponseWarning",
    "SearchLine",
    "SearchObjective",
    "bandwidth_of",
    "best_candidate",
    "best_of",
    "categorical_upper",
    "constant_response",
    "finite_or_largest",
    "host_search",
    "initial_simplex",
    "minimize_bounded",
    "minimize_lbfgs",
    "minimize_smooth",
    "profile_start",
    "rule_point",
    "select_on_host",
    "smoothed_out",
    "to_theta",
]

#: The relative decrease at which a descent on the exact gradient stops: 1e-10 of an
#: objective computed to ~1e-14 (bandwidths then within ~1e-6 of the optimum).
EXACT_GRADIENT_FTOL = 1e-10
#: The bandwidth, in half-widths of its column, at which a column counts as smoothed
#: out: a Gaussian there weighs every key of the column equally to ``2e-12``, so the
#: criterion has reached its limit as ``h → ∞`` to rounding. Local linear fits of a
#: column on which ``y`` is linear, and columns that do not matter, have their best
#: bandwidth there. (In half-widths, not search units, so that the reported bandwidth
#: scales with the column by any factor, not only by powers of two.)
SMOOTHED_OUT = 2.0**20
#: The bandwidth, in half-widths, from which the criterion is near its limit — the
#: column's whole width — and a bandwidth still growing is tried smoothed out.
WIDE = 2.0


class ConstantResponseWarning(UserWarning):
    """A bandwidth or span search on a constant response: every setting fits it exactly,
    so no criterion can choose one (the rule of thumb, the most neighbours or the largest
    span is returned).

    Computed, the criteria would only follow rounding errors — to a bandwidth near 0, or
    the smallest span.

    Examples
    --------
    >>> import warnings, numpy as np, attnpool
    >>> x = np.linspace(0.0, 1.0, 30)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     found = attnpool.select_bandwidth(x, np.full(30, 2.5), method="cv")
    >>> caught[0].category.__name__, found.objective
    ('ConstantResponseWarning', 0.0)

    References
    ----------
    Hurvich, C. M., Simonoff, J. S. & Tsai, C.-L. (1998). Smoothing parameter selection
    in nonparametric regression using an improved Akaike information criterion. *JRSS B*
    60(2), 271–293 (the criteria: a mean squared error, or its logarithm, which a
    constant response leaves 0 or −∞ at every bandwidth).
    """


def constant_response(
    y: np.ndarray, method: str, returned: str, setting: str = "bandwidth"
) -> bool:
    """Whether every column of ``y (n, p)`` is constant — then with a
    :class:`ConstantResponseWarning` (:func:`warn_constant_response`)."""
    if not np.all(y == y[:1]):
        return False
    warn_constant_response(method, returned, setting)
    return True


def warn_constant_response(method: str, returned: str, setting: str = "bandwidth") -> None:
    """A :class:`ConstantResponseWarning` saying what is ``returned`` instead of the
    ``method``'s optimum ``setting``."""
    warnings.warn(
        f"y: the response is constant: every {setting} fits it exactly and the {method} "
        f"criterion cannot choose one; {returned} is returned",
        ConstantResponseWarning,
        stacklevel=user_stacklevel(),
    )


class BandwidthSelection(NamedTuple):
    """Result of :func:`attnpool.select_bandwidth` and
    :func:`attnpool.select_density_bandwidth`.

    Attributes
    ----------
    bandwidth : ndarray of shape (d,)
        The bandwidth of each column (``λ`` for categorical ones).
    objective : float
        The criterion there, in the data's units (NaN for rules of thumb).
    method : str
        The criterion or rule.
    grid : (ndarray, ndarray)
        The coarse search's multipliers of the rule of thumb and their objectives (empty
        for rules of thumb).
    exact : bool
        False when ``objective`` is the binned approximation (a binned search of a
        smooth kernel above :data:`attnpool.bandwidth.compiled.EXACT_OBJECTIVE_MAX_PAIRS`).
    evaluations : int
        How many times the search evaluated its objective (a grid point counts one, an
        objective with its gradient one; 0 for rules of thumb).

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=60, seed=2)
    >>> found = attnpool.select_bandwidth(data.x_train, data.y_train, method="cv")
    >>> found.method, found.bandwidth.shape, found.exact
    ('cv', (1,), True)

    References
    ----------
    Racine, J. & Li, Q. (2004). Nonparametric estimation of regression functions with
    both categorical and continuous data. *Journal of Econometrics* 119(1), 99–130.
    """

    bandwidth: np.ndarray
    objective: float
    method: str
    grid: tuple[np.ndarray, np.ndarray]
    exact: bool = True
    evaluations: int = 0


class Counted:
    """``function``, counting its calls in ``calls``."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function, self.calls = function, 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.function(*args)


def smoothed_out(x, model: LocalModel) -> tuple[np.ndarray, np.ndarray]:
    """``(wide, flat)``, ``θ (d,)`` at :data:`WIDE` and :data:`SMOOTHED_OUT` half-widths
    of each continuous column of ``x (n, d)`` (about its midrange; ``inf`` for
    categorical columns, whose ``θ`` has no such points): :func:`minimize_smooth`'s
    ``limits``."""
    d = len(model.var_type)
    wide, flat = np.full(d, np.inf), np.full(d, np.inf)
    cont = list(model.continuous)
    part = np.asarray(x, np.float64)[:, cont]
    half = np.max(part, axis=0) / 2 - np.min(part, axis=0) / 2
    half = np.where(half > 0, half, 1.0)  # a constant column: any bandwidth is the same
    wide[cont] = np.log(WIDE * half)
    flat[cont] = np.log(SMOOTHED_OUT * half)
    return wide, flat


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
        grid = multipliers(len(thetas))
        raise ValueError(
            f"bandwidth: the {method} criterion is undefined at every candidate from "
            f"{grid[0]:.3g}× to {grid[-1]:g}× the rule of thumb: at each, some row has no "
            "other within the kernel's support (too few rows, or an isolated one: a far "
            "outlier, a heavy tail); a kernel without an edge ('gaussian') reaches every row"
        )
    return thetas[int(np.argmin(np.where(np.isfinite(objectives), objectives, np.inf)))]


def planned_search(
    model: LocalModel, y: Any, method: str, block_size: Any, weights: Any, spread_out: bool
) -> str:
    """The planner's search for ``pooling="auto"`` (its search table): ``"numpy"`` (on
    the host), ``"fgt"`` or ``"sparse"`` (their leave-one-out sums, on the host) or
    ``"compiled"``. ``spread_out``: the grid reaches below its rule of thumb for a heavy
    tail or a far outlier (:func:`attnpool.bandwidth.grid.steps_below`)."""
    facts = search_facts(model, *y.shape, weighted=weights is not None, criterion=method,
                         block_size=block_size is not None, spread_out=spread_out,
                         truncating=not too_wide_to_truncate(weights))  # fmt: skip
    return plan(facts).backend


class SearchObjective(NamedTuple):
    """What a host search minimises over ``θ`` (log-bandwidths; categorical columns'
    logits): ``value`` ``θ → float``; ``gradient`` ``θ → (value, gradient)``, exact
    (None: the descent takes forward differences); ``estimate``, what ranks the grid
    instead of ``value`` (an approximation; None: ``value``); ``smooth``: whether
    differences guide a descent (False: a compact kernel's objective jumps as keys enter
    a support); ``name``: the criterion's, in messages."""

    value: Callable[[np.ndarray], float]
    gradient: Callable[[np.ndarray], Any] | None = None
    estimate: Callable[[np.ndarray], float] | None = None
    smooth: bool = True
    name: str = "cv"


def host_search(
    search: SearchObjective, line: SearchLine, progress, *, xatol: float = 1e-5, limits=None
):
    """``(θ, objective, grid objectives)``: the best of ``line``'s ``thetas`` (the coarse
    grid: :func:`~attnpool.bandwidth.grid.multipliers` of the rule of thumb; in several
    columns its ``profiles`` swept from there, :func:`profile_start`) by the ``search``'s
    objective, refined to ``xatol`` in ``θ`` — bounded Brent in one dimension
    (:func:`minimize_bounded`); in several L-BFGS where the objective is smooth
    (:func:`minimize_smooth`, on its exact gradient or forward differences), else SciPy's
    Nelder–Mead (where differences mislead); never worse than the best grid point.
    ``limits``: as :func:`minimize_smooth`'s. Where an estimate ranks the grid, the
    refinement's result is compared with the best point's exact value — in one column
    that value starts Brent's method, the estimates beside it its first parabola.
    """
    objective, value_and_gradient, grid_objective, smooth, criterion = search
    thetas = line.thetas
    objectives = np.array([(grid_objective or objective)(theta) for theta in thetas])
    on_grid = objectives
    if progress:
        progress(1, 2)
    step = float(np.log(GRID[1] / GRID[0]))
    if thetas.shape[1] == 1:
        ranking = grid_objective or objective
        thetas, objectives = below_the_grid(ranking, thetas, objectives, step)
        thetas, objectives = above_the_grid(ranking, thetas, objectives, step)
    best = best_candidate(thetas, objectives, criterion)
    starts = profile_start(grid_objective or objective, thetas, line.profiles, best, objectives)
    best_value = None
    if thetas.shape[1] == 1:
        if grid_objective is not None and smooth:
            best_value = objective(best)  # the refinement's first point, exact
        found, value = minimize_bounded(
            lambda t: finite_or_largest(objective(np.array([t]))),
            best[0] - step,
            best[0] + step,
            xatol=xatol,
            # (a compact kernel's objective jumps: its parabola may leap to another basin)
            known=_bracket(thetas[:, 0], objectives, best[0], step, best_value) if smooth else None,
        )
        theta = np.array([found])
    elif smooth:
        # with the exact gradient, the first step is one grid step long: the grid's
        # best point is within one of the optimum along its line
        exact = value_and_gradient is not None

        def descend(start):
            return minimize_smooth(
                objective, start, limits=limits, value_and_gradient=value_and_gradient,
                ftol=EXACT_GRADIENT_FTOL if exact else 1e-12, first_step=step if exact else 0.5,
                curvature=_line_curvature(thetas, objectives, start) if exact else None,
            )  # fmt: skip

        theta, value = best_of(descend, thetas, objectives, starts)
    else:
        from scipy import optimize  # 0.5 s to import: only for compact kernels

        def simplex(start):
            found = optimize.minimize(
                lambda t: finite_or_largest(objective(t)),
                start,
                method="Nelder-Mead",
                options={
                    "xatol": xatol, "fatol": 0.0, "initial_simplex": initial_simplex(start, step)
                },
            )  # fmt: skip
            return found.x, float(found.fun)

        theta, value = best_of(simplex, thetas, objectives, starts)
    if grid_objective is None:
        best_value = float(np.nanmin(objectives))
    elif thetas.shape[1] > 1 and smooth:
        best_value = value  # the descent started at the best point and only went down
    elif best_value is None:
        best_value = objective(best)
    if not value <= best_value:
        theta, value = best, best_value
    if progress:
        progress(2, 2)
    return theta, value, on_grid


def _line_curvature(thetas, objectives, best) -> float | None:
    """The objective's second derivative along the grid's line at its ``best`` point, per
    unit of ``θ`` in every coordinate at once, shared among the ``d`` coordinates
    (``f'' / d``: the curvature along any one direction if it were the same in all),
    from the grid's second difference; None at an end, more than a step off the line (a
    further start) or where it is not positive."""
    distances = np.sum(np.abs(thetas - best), axis=1)
    at = int(np.argmin(distances))
    if distances[at] > np.sum(np.abs(thetas[1] - thetas[0])):  # more than a step off
        return None
    if not 0 < at < len(thetas) - 1 or not np.all(np.isfinite(objectives[at - 1 : at + 2])):
        return None
    step = float(np.mean(thetas[at + 1] - thetas[at]))
    second = (objectives[at - 1] - 2 * objectives[at] + objectives[at + 1]) / step**2
    return float(second / thetas.shape[1]) if second > 0 else None


def _bracket(thetas, objectives, best: float, step: float, at_best) -> tuple | None:
    """``(best, (f(best − step), f(best), f(best + step)))`` from the grid where those
    three points are on it with finite objectives below ``f(best)`` at neither end, for
    :func:`minimize_bounded`'s first parabola; else None. ``at_best``: ``f(best)`` where
    the grid's objectives are estimates (None where they are exact): the ends' estimates
    then steer the first parabola only, every point the search keeps being exact."""
    at = int(np.argmin(np.abs(thetas - best)))
    if not (0 < at < thetas.size - 1) or not np.all(np.isfinite(objectives[at - 1 : at + 2])):
        return None
    gaps = (thetas[at] - thetas[at - 1], thetas[at + 1] - thetas[at])
    if any(abs(gap - step) > 1e-9 * abs(step) for gap in gaps):  # (np.allclose: 30 µs)
        return None
    low, middle, high = (float(f) for f in objectives[at - 1 : at + 2])
    middle = middle if at_best is None else float(at_best)
    return (best, (low, middle, high)) if low >= middle and high >= middle else None


def select_on_host(
    objective,
    line: SearchLine,
    progress,
    model=None,
    criterion: str = "cv",
    *,
    smooth: bool = True,
    xatol: float = 1e-5,
    limits=None,
) -> BandwidthSelection:
    """The bandwidth by the ``criterion`` (its name: ``"cv"``, ``"aicc"``), an objective
    ``θ → float`` computed on the host, whose attributes ``value_and_gradient`` (an
    exact gradient) and ``estimate`` (what ranks the grid), where it has them, serve the
    search (:class:`SearchObjective`; ``smooth``, ``xatol``, ``limits`` as
    :func:`host_search` takes them); ``model``: the bandwidths' model, whose categorical
    columns' ``θ`` are logits (None: log-bandwidths only)."""
    counted = Counted(objective)
    exact_gradient = getattr(objective, "value_and_gradient", None)
    estimate = getattr(objective, "estimate", None)
    exact_gradient = None if exact_gradient is None else Counted(exact_gradient)
    estimate = None if estimate is None else Counted(estimate)
    search = SearchObjective(counted, exact_gradient, estimate, smooth, criterion)
    theta, value, objectives = host_search(search, line, progress, xatol=xatol, limits=limits)
    calls = counted.calls + sum(f.calls for f in (exact_gradient, estimate) if f is not None)
    bandwidth = np.exp(theta) if model is None else bandwidth_of(theta, model)
    grid = (multipliers(len(line.thetas)), objectives)
    return BandwidthSelection(bandwidth, value, criterion, grid, True, calls)
