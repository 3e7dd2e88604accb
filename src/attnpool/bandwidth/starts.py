"""Where a search in several columns starts its descents: the grid's best point, the
rule of thumb, and the point a sweep of its spread-out columns reaches
(:func:`profile_start`); :func:`best_of` keeps the lowest descent."""

from __future__ import annotations

import numpy as np

from .grid import multipliers

__all__ = ["best_of", "profile_start", "rule_point"]


def best_of(local_search, thetas, objectives, starts=()) -> tuple[np.ndarray, float]:
    """``(θ, objective)``: the lowest of ``local_search(start) → (θ, objective)`` from the
    grid's best point, from the rule of thumb and from each of ``starts (s, d)``
    (several columns; ``thetas (k, d)`` the grid, ``objectives (k,)`` its values;
    :func:`profile_start`). The grid varies
    every bandwidth by one factor: a descent from its best point can settle in a basin of
    small bandwidths (each column narrow) that a descent from the rule of thumb — a local
    search as statsmodels runs it — passes by; a global search keeps whichever is lower.
    Where the grid's objective rises steadily from its best point to the rule, both
    descents start in one basin along the line, and one is run."""
    finite = np.where(np.isfinite(objectives), objectives, np.inf)
    at_best = int(np.argmin(finite))
    found = [local_search(thetas[at_best])]
    at_rule = _rule_index(len(thetas))
    ahead = np.arange(at_best, min(int(np.ceil(at_rule)), len(finite) - 1) + 1)
    if at_rule < at_best:
        ahead = np.arange(at_best, max(int(np.floor(at_rule)), 0) - 1, -1)
    if not np.all(np.diff(finite[ahead]) >= 0):  # not one basin along the line
        found.append(local_search(rule_point(thetas)))
    found.extend(local_search(start) for start in starts)
    return min(found, key=lambda pair: pair[1])


def profile_start(objective, thetas, profiles, best, objectives) -> tuple[np.ndarray, ...]:
    """``()`` or ``(θ,)``: from the grid's ``best`` point (``thetas (k, d)``, its
    ``objectives (k,)``), each column of ``profiles`` (:func:`~attnpool.bandwidth.grid.
    column_profiles`) in turn moved to the lowest of its own grid, other columns held;
    the point reached where it is below the best one (a start for :func:`best_of`)."""
    point = np.array(best, dtype=np.float64)
    value = float(np.min(np.where(np.isfinite(objectives), objectives, np.inf)))
    moved = False
    for column, first in profiles:
        held = point[column]
        for candidate in thetas[first:, column]:
            if candidate == held:
                continue  # (the point the sweep started from: its value is known)
            trial = point.copy()
            trial[column] = candidate
            found = objective(trial)
            if found < value:
                point, value, moved = trial, found, True
    return (point,) if moved else ()


def rule_point(thetas) -> np.ndarray:
    """``θ`` at the rule of thumb itself — multiplier 1 on the grid's line (``thetas``
    move linearly with the grid's index)."""
    at = _rule_index(len(thetas))
    return np.asarray(thetas[0] + (thetas[1] - thetas[0]) * at, np.float64)


def _rule_index(count: int) -> float:
    """Where multiplier 1 sits on a grid of ``count`` points, in grid steps."""
    grid = multipliers(count)
    return float(np.log(1.0 / grid[0]) / np.log(grid[1] / grid[0]))
