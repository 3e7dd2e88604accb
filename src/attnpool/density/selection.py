"""Bandwidths of kernel densities: statsmodels' ``normal_reference`` rule, the improved
Sheather–Jones plug-in, or cross-validation — likelihood (``cv_ml``), maximising
``Σ_i log f̂₋ᵢ(xᵢ)`` (:func:`loo_log_density`), or least squares (``cv_ls``) — by the
regressions' global grid-then-refine search."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._support.hints import ArrayLike, KernelSpec
from .._support.units import DensityUnits, power_of_two_above
from .._support.validation import check_choice, check_points
from ..bandwidth.grid import GRID, SearchLine, multipliers, search_line
from ..bandwidth.resolution import bandwidth_floor
from ..bandwidth.rules import (
    CATEGORICAL_START,
    observation_count,
    rule_from_spread,
    search_start,
)
from ..bandwidth.search import (
    BandwidthSelection,
    Counted,
    SearchObjective,
    bandwidth_of,
    host_search,
    to_theta,
)
from ..bandwidth.subsample import Subsampled, subsampled_bandwidth
from ..kernels.mixed import MixedColumns
from ..sums.local_model import model_for
from ..sums.observation_weights import (
    in_weight_unit,
    positive_rows,
    sorted_rows,
)
from .criteria import ExpandedLikelihood, by_expansions, least_squares_criterion, loo_log_density
from .criterion_checks import (
    BlockWarnings,
    warn_at_floor,
    warn_where_copies_decide,
    warn_where_near_ties_decide,
    warn_where_tails_decide,
)

__all__ = [
    "DENSITY_SELECTORS",
    "least_squares_criterion",
    "loo_log_density",
    "select_density_bandwidth",
]

#: How :func:`select_density_bandwidth` chooses (``KernelDensity(bandwidth=…)`` too).
DENSITY_SELECTORS = ("cv_ml", "cv_ls", "normal_reference", "isj")


def select_density_bandwidth(
    X: ArrayLike,
    *,
    method: str = "cv_ml",
    kernel: KernelSpec = "gaussian",
    var_type: str | None = None,
    weights: ArrayLike | None = None,
    progress: Callable[[int, int], None] | None = None,
    subsample: Subsampled | None = None,
) -> BandwidthSelection:
    """The bandwidth ``(d,)`` of a kernel density estimate of ``X (n,) | (n, d)``:
    ``"normal_reference"`` (statsmodels': ``1.06 σ n^(−1/(4+d))``, ``σ`` with ``ddof=0``,
    converted to other kernels by their canonical bandwidths; categorical columns
    ``λ = 0.1``), ``"cv_ml"``, likelihood cross-validation — the bandwidth that maximises
    ``Σ_i log f̂₋ᵢ(xᵢ)`` (:func:`loo_log_density`) —, or ``"cv_ls"``, least squares
    (:func:`least_squares_criterion`), by the regression searches' global
    grid-then-refine search on log-bandwidths (logits of ``λ`` for the categorical columns
    of ``var_type``). Returns a :class:`~attnpool.bandwidth.BandwidthSelection`
    (``objective``: the mean negative leave-one-out log density, or the least-squares
    criterion). ``"isj"``: the improved Sheather–Jones plug-in of one continuous column
    (:func:`attnpool.bandwidth.plug_in.isj_bandwidth`; ``weights`` taken), converted to
    other kernels by their canonical bandwidths. ``progress``: called ``(done, total)`` as
    the search's grid and its refinement finish.

    Parameters
    ----------
    X : array of shape (n,) or (n, d)
    method : {"cv_ml", "cv_ls", "normal_reference", "isj"}
    kernel : str or Kernel
    var_type : str, optional
    weights : array of shape (n,), optional
        Observation weights: the rule of thumb is that of the sample repeating row ``i``
        ``w_i`` times; cross-validation leaves each row out whole and weighs its terms
        by ``w_i``. Identical rows stay separate rows, as in an unweighted sample (tied
        values keep the search above half their resolution), so equal weights select
        what no weights select; where rows repeat exactly off any recording resolution
        (copies: a bootstrap resample) and set the bandwidth, a
        :class:`~attnpool.TiedDataWarning` names the one with their copies left out
        together — the distinct rows' with their counts as weights.
    progress : callable ``(done, total)``, optional
    subsample : Subsampled, optional
        Select on blocks of rows and scale up, as statsmodels' ``efficient=True``
        (:mod:`attnpool.bandwidth.subsample`; unweighted samples).

    Returns
    -------
    BandwidthSelection

    References
    ----------
    Hall, P. (1987). On Kullback–Leibler loss and density estimation. *Annals of
    Statistics* 15(4), 1491–1519. Rudemo, M. (1982). Empirical choice of histograms and
    kernel density estimators. *Scandinavian Journal of Statistics* 9(2), 65–78. Botev,
    Z. I., Grotowski, J. F. & Kroese, D. P. (2010). Kernel density estimation via
    diffusion. *Annals of Statistics* 38(5), 2916–2957.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.select_density_bandwidth(data.x_train, method="cv_ml").bandwidth.round(3)
    array([0.201])
    """
    check_choice(method, "method", DENSITY_SELECTORS)
    x = np.asarray(check_points(X, "X"), np.float64)
    x, _, weights = positive_rows(x, x[:, :1], weights)  # rows of weight 0 are not in it
    if x.shape[0] < 3:
        raise ValueError(
            f"X: bandwidth selection needs at least 3 rows; received n_samples={x.shape[0]}"
        )
    model = model_for(x, kernel=kernel, var_type=var_type)
    cont = list(model.continuous)
    if subsample is not None:
        if weights is not None:
            raise ValueError("subsample: selects on unweighted samples; received weights")

        blocks = BlockWarnings()  # (said once; heavy tails of the whole sample, below)

        def on_rows(rows: np.ndarray) -> np.ndarray:
            with blocks.kept():
                found = select_density_bandwidth(x[rows], method=method, kernel=kernel,
                                                 var_type=model.var_type)  # fmt: skip
            return np.asarray(found.bandwidth)

        h = subsampled_bandwidth(on_rows, x, model.var_type, subsample)
        blocks.say()
        found = BandwidthSelection(h, math.nan, method, NO_GRID)
        if method == "cv_ml":
            warn_where_tails_decide(found, (x, None), model, kernel)
        return found
    if method == "isj":
        from ..bandwidth.plug_in import isj_bandwidth

        if x.shape[1] != 1 or cont != [0]:
            raise ValueError(
                f"method: 'isj' takes one continuous column; received {x.shape[1]} column(s) "
                f"of var_type {model.var_type!r}"
            )
        ratio = rule_from_spread(np.ones(1), 1, kernel) / rule_from_spread(
            np.ones(1), 1, "gaussian"
        )
        h = isj_bandwidth(x[:, 0], weights) * ratio
        return BandwidthSelection(h, math.nan, method, NO_GRID)
    if method == "normal_reference":
        return BandwidthSelection(normal_reference(x, model, weights), math.nan, method, NO_GRID)
    given = (x, weights)
    units = DensityUnits.of(x, cont)
    x, _, weights = sorted_rows(
        units.apply(x), x[:, :0], weights
    )  # (the result is the rows', not their order's)
    columns = MixedColumns(x, model.var_type, model.kernel)
    # (validated once: the search keeps h positive and finite)
    by_fgt = method == "cv_ml" and weights is None and by_expansions(x, columns)
    expanded = ExpandedLikelihood(x) if by_fgt else None
    weights = in_weight_unit(weights)  # (the criteria are Σ w K / Σ w's: w in a unit)
    share = None if weights is None else weights / np.sum(weights)

    def objective(h: Any) -> float:
        if method == "cv_ls":
            return least_squares_criterion(x, h, kernel, var_type, weights)
        if expanded is not None:
            return expanded(h)
        values = loo_log_density(x, h, kernel, var_type, weights)
        if not np.all(np.isfinite(values)):
            return np.inf
        return float(-np.mean(values) if share is None else -(share @ values))

    estimate = None if expanded is None else expanded.estimate
    found = search(objective, x, model, method, progress, grid_objective=estimate, units=units,
                   weights=weights)  # fmt: skip
    warn_at_floor(found, given[0], model)
    warn_where_copies_decide(found, given, model, kernel, select_density_bandwidth)
    warn_where_near_ties_decide(found, given[0], model)
    if method == "cv_ml":
        warn_where_tails_decide(found, given, model, kernel)
    return found


#: The ``grid`` of a selection without a search.
NO_GRID = (np.array([]), np.array([]))


def normal_reference(x: np.ndarray, model: Any, weights: Any = None) -> np.ndarray:
    """statsmodels' ``normal_reference``: ``1.06 σ n^(−1/(4+q))`` for each continuous column
    of ``x (n, q)`` (``σ`` with ``ddof=0``; ``q`` counts every column), converted to the
    model's kernel by the canonical bandwidths; ``λ = 0.1`` for categorical columns. With
    observation ``weights``, the sample that repeats row ``i`` ``w_i`` times: ``n = Σ w``,
    the weighted ``σ``."""
    cont = list(model.continuous)
    n = observation_count(x.shape[0], weights)
    scale = rule_from_spread(np.ones(x.shape[1]), n, model.kernel) / 1.059
    unit = power_of_two_above(np.max(np.abs(x), axis=0))  # (exact: x ~ 1e±200's squares)
    mean = np.average(x / unit, axis=0, weights=weights)
    spread = unit * np.sqrt(np.average((x / unit - mean) ** 2, axis=0, weights=weights))
    start = np.full(x.shape[1], CATEGORICAL_START)
    start[cont] = (1.06 * spread * scale)[cont]
    return start


def search(
    objective: Callable[[np.ndarray], float],
    x: np.ndarray,
    model: Any,
    method: str,
    progress: Callable[[int, int], None] | None = None,
    grid_objective: Callable[[np.ndarray], float] | None = None,
    units: DensityUnits | None = None,
    weights: np.ndarray | None = None,
) -> BandwidthSelection:
    """The bandwidths of ``x (n, q)``'s columns minimising ``objective(h)``: the
    regressions' grid of multiples of Scott's rule (log-bandwidths; categorical columns
    along the same line as logits, in the grid's steps about ``λ = 0.1``), refined by
    the host search. ``grid_objective``: an estimate of ``objective`` that ranks the grid
    (:func:`attnpool.bandwidth.search.host_search`). ``units``: the units ``x`` is in
    (:class:`~attnpool._support.units.DensityUnits`); the selection is in the data's.
    ``weights``: the rows' observation weights, which place the grid as they do the
    regressions' (:func:`~attnpool.bandwidth.rules.search_start`). A
    :class:`~attnpool.bandwidth.BandwidthSelection`."""

    start = search_start(x, kernel=model.kernel, var_type=model.var_type, weights=weights)
    floor = np.zeros(x.shape[1])
    floor[list(model.continuous)] = bandwidth_floor(x[:, list(model.continuous)])
    # three quarters of the grid at least above the floor
    start = np.maximum(start, floor / GRID[len(GRID) // 4])
    thetas, profiles = search_line(to_theta(start, model), x, model.continuous, weights)
    below = len(thetas) - len(GRID)
    step = math.log(GRID[1] / GRID[0])
    line = step * (np.arange(-below, len(GRID)) - (len(GRID) - 1) / 2)
    thetas[:, list(model.categorical)] += line[:, None]

    def above_floor(criterion: Callable[[np.ndarray], float]) -> Callable[[np.ndarray], float]:
        # below half the resolution of tied values, a criterion only sees the ties
        def bounded(theta: np.ndarray) -> float:
            h = bandwidth_of(theta, model)
            return math.inf if np.any(h < floor) else criterion(h)

        return bounded

    counted = Counted(above_floor(objective))
    estimated = None if grid_objective is None else Counted(above_floor(grid_objective))
    search = SearchObjective(counted, None, estimated, not model.kernel.compact, method)
    theta, value, objectives = host_search(search, SearchLine(thetas, profiles), progress)
    theta, value = _categorical_edges(counted, theta, value, model)
    calls = counted.calls + (0 if estimated is None else estimated.calls)
    bandwidth = bandwidth_of(theta, model)
    if units is not None:
        bandwidth, value = units.bandwidth(bandwidth), float(units.objective(value, method))
        objectives = units.objective(objectives, method)
    grid = (multipliers(len(thetas)), objectives)
    return BandwidthSelection(bandwidth, value, method, grid, True, calls)


#: The logit beyond which a categorical column's ``λ`` is tried at its edge, and that
#: edge's: ``λ`` within ``2e-16`` of 0 or of its largest value (bandwidths stay positive).
EDGE_LOGIT, EDGE = 15.0, 36.0


def _categorical_edges(
    objective: Callable[[np.ndarray], float], theta: np.ndarray, value: float, model: Any
) -> tuple[np.ndarray, float]:
    """``(θ, objective)`` with each categorical column the search drove beyond
    :data:`EDGE_LOGIT` tried at that edge (:data:`EDGE`) — ``λ → 0`` (the column splits
    the data) or its largest value (the column is ignored), which logits approach only
    slowly, the criterion flat to ~1e-9 there — and kept there where the criterion is no
    larger."""
    for column in model.categorical:
        if abs(theta[column]) > EDGE_LOGIT:
            trial = theta.copy()
            trial[column] = math.copysign(EDGE, theta[column])
            at_edge = objective(trial)
            if at_edge <= value:
                theta, value = trial, at_edge
    return theta, value
