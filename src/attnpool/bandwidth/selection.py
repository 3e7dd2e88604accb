"""Bandwidth selection for the regressions: :func:`select_bandwidth` (the package's
docstring describes it; the criteria's curves are in :mod:`attnpool.bandwidth.curves`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._support.hints import ArrayLike, KernelSpec
from .._support.units import SearchUnits
from .._support.validation import check_choice, check_points, check_values
from ..engines import numpy_search
from ..kernels.edges import has_edge
from ..methods.backends import host_backend
from ..methods.options import LEAVE_ONE_OUT_METHODS
from ..sums.backends import get_backend
from ..sums.local_model import LocalModel, model_for
from ..sums.observation_weights import (
    in_weight_unit,
)
from . import by_backend, leave_one_out
from .curves import checked_training_data, criterion_at
from .flat_criteria import FlatSettings, response_variance, smoothest_flat, warn_flat
from .grid import search_line
from .rules import rule_of_thumb, search_start
from .search import (
    BandwidthSelection,
    categorical_upper,
    constant_response,
    planned_search,
    select_on_host,
    smoothed_out,
    to_theta,
)
from .subsample import Subsampled, subsampled_bandwidth

__all__ = [
    "NUMPY_SEARCH_XATOL",
    "POOLINGS",
    "SELECTORS",
    "SELECTOR_ALIASES",
    "canonical_selector",
    "select_bandwidth",
]

#: How a bandwidth is chosen (``method=``): two criteria, then two rules of thumb.
SELECTORS = ("cv", "aicc", "scott", "silverman", "dpill")
#: statsmodels' names for the same criteria (``KernelReg(bw="cv_ls" | "aic")``: least-
#: squares leave-one-out CV, and Hurvich, Simonoff & Tsai's AICc).
SELECTOR_ALIASES = {"cv_ls": "cv", "aic": "aicc"}


def canonical_selector(name: str, argument: str = "bandwidth") -> str:
    """``name`` among :data:`SELECTORS`, statsmodels' aliases taken; else a ``ValueError``
    naming ``argument``."""
    check_choice(name, argument, (*SELECTORS, *SELECTOR_ALIASES))
    return SELECTOR_ALIASES.get(name, name)


#: How the search pools (``pooling=``): ``auto`` — the planner's search table (the
#: host's exact sums where they serve: NumPy, the C loop, ``fgt``, ``sparse``; else the
#: compiled exact search) — or a method with leave-one-out
#: sums of its own (:data:`attnpool.methods.options.LEAVE_ONE_OUT_METHODS`).
POOLINGS = ("auto", *LEAVE_ONE_OUT_METHODS)
#: Log-bandwidth tolerance of the NumPy engine's search (smooth objectives: Brent's
#: parabolas reach it in a few more evaluations).
NUMPY_SEARCH_XATOL = 1e-8


_NO_GRID = (np.array([]), np.array([]))


def _search(
    x: Any,
    y: Any,
    model: LocalModel,
    method: str,
    pooling: str,
    block_size: Any,
    progress: Any,
    weights: Any,
) -> Any:
    """``(selection, objective)``: :func:`select_bandwidth` on data in search units —
    rules of thumb, the searches on the host's sums (no program, no JAX), or the compiled
    searches — and the host searches' objective ``θ (d,) → float`` (None for the
    others)."""
    if method in ("scott", "silverman"):
        rule = rule_of_thumb(x, method=method, kernel=model.kernel, var_type=model.var_type,
                             weights=weights)  # fmt: skip
        return BandwidthSelection(rule, float("nan"), method, _NO_GRID), None
    weights = in_weight_unit(weights)  # (in a power-of-two unit, as x and y are)
    start = search_start(x, kernel=model.kernel, var_type=model.var_type, weights=weights)
    if constant_response(y, method, "the rule of thumb"):
        exact = 0.0 if method == "cv" else -math.inf  # (AICc: log σ̂² of σ̂² = 0)
        return BandwidthSelection(start, exact, method, _NO_GRID), None
    cont = list(model.continuous)
    line = search_line(to_theta(start, model), x, cont, weights)
    route = pooling
    if pooling == "auto":
        route = planned_search(model, y, method, block_size, weights, line.spread_out)
    objective = None
    if get_backend(pooling) is not None:  # a registered backend's leave-one-out sums
        by_backend.check_served(pooling, model, method)
        objective = by_backend.loo_objective(pooling, x, y, model, weights)
    elif route == "numpy":  # NumPy pairs (CV, AICc), or CV on the compiled loop
        of = numpy_search.loo_objective if method == "cv" else numpy_search.aicc_objective
        objective = of(x, y, model, weights)
    elif weights is not None and pooling == "auto" and route in leave_one_out.HOST_POOLINGS:
        # the planner's host backend for weights: its sums of each row's leave-one-out
        # problem through the sums layer, finished there (fgt, 20 000 rows: 0.01 s each)
        objective = by_backend.loo_objective(host_backend(route), x, y, model, weights)
    if objective is not None:
        return select_on_host(objective, line, progress, model, method, xatol=NUMPY_SEARCH_XATOL,
                              smooth=not has_edge(model.kernel),
                              limits=smoothed_out(x, model)), objective  # fmt: skip
    if route in leave_one_out.HOST_POOLINGS:  # a host backend's leave-one-out sums
        leave_one_out.refuse_weights(route, weights)

        def exact(theta: np.ndarray) -> float:
            from . import compiled

            return compiled.exact_cv(theta, x, y, model, method)

        cv = leave_one_out.host_cv_objective(x, y, model, method, route, exact)
        return leave_one_out.select_by_host_sums(cv, x, model, line, progress), cv
    from . import compiled

    spec = compiled.Criterion(model, method, block_size)
    return compiled.search(x, y, weights, line, spec, route, progress), None


def select_bandwidth(
    X: ArrayLike,
    y: ArrayLike,
    *,
    method: str = "cv",
    kernel: KernelSpec = "gaussian",
    degree: int = 0,
    var_type: str | None = None,
    block_size: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    pooling: str = "auto",
    weights: ArrayLike | None = None,
    subsample: Subsampled | None = None,
) -> BandwidthSelection:
    """Choose the bandwidth of a local constant (``degree=0``) or local linear fit.

    Parameters
    ----------
    X : array of shape (n,) or (n, d)
    y : array of shape (n,) or (n, p)
    method : {"cv", "aicc", "scott", "silverman", "dpill"}
        ``"dpill"``: Ruppert, Sheather and Wand's direct plug-in bandwidth of a local
        linear fit (``degree=1``) of one continuous column with the Gaussian kernel,
        KernSmooth's (:func:`attnpool.local_linear_plug_in_bandwidth`).
    kernel, degree, var_type : as in :func:`attnpool.regression.local_regression`
    block_size : int, optional
        Training rows per block of the compiled (streamed) searches.
    progress : callable ``(done, total)``, optional
        Called as the search advances
    pooling : {"auto", "dense", "stream", "sparse", "fgt", "native", "binned"}
        Whose leave-one-out sums the objectives are computed with. ``"auto"``: the
        exact sums of the fastest method that serves (in one column: ``fgt``'s for the
        Gaussian's local constant fit, the compiled loop's for its local linear one,
        ``sparse``'s for a kernel that splits). ``"binned"`` (one continuous column,
        CV): grid search and L-BFGS on the binned leave-one-out objective, then the
        exact objective at the result — approximate: rows a tail leaves nearly alone
        can move its optimum or make it call the criterion undefined. ``"sparse"``
        (compact kernels), ``"fgt"`` (the Gaussian in one column), ``"native"`` (the
        Gaussian, the compiled loops): exact leave-one-out sums of a local-constant fit
        of continuous columns by that host method
        (:mod:`attnpool.bandwidth.leave_one_out`), a grid search and a refinement on
        the host (derivative-free for compact kernels, whose objective jumps as keys
        enter a support). ``"dense"``/``"stream"``: the exact compiled search,
        ``"stream"`` with streamed key blocks.
    weights : array of shape (n,), optional
        Observation weights ``w_i ≥ 0``: each row counts as ``w_i`` copies — in the fits,
        in the criterion (CV leaves a row out whole, with every row identical to it;
        AICc's penalty counts rows) and in the rules of thumb — so integer weights select
        what the repeated rows select (:mod:`attnpool.sums.observation_weights`). CV and
        AICc, and so their searches, do not change when every weight is multiplied by
        one number (relative weights, summing to 1, are searched as well); the rules
        (``"scott"``, ``"silverman"``) count ``n = Σ w``. Rows of weight 0 are left
        out. Weighted searches, and searches of data with repeated rows (merged into
        weights), run on the exact engines or, for one continuous column, binned
        (``pooling`` ``"auto"``, ``"dense"``, ``"stream"`` or ``"binned"``).
    subsample : Subsampled, optional
        Select on blocks of rows and scale up, as statsmodels' ``efficient=True``
        (:mod:`attnpool.bandwidth.subsample`; unweighted samples; no ``objective``).

    Returns
    -------
    BandwidthSelection
        ``bandwidth`` of shape (d,) and the criterion value ``objective``. A continuous
        column whose best bandwidth is infinite — a local linear fit of a ``y`` linear
        in it, or a column that does not matter — is *smoothed out*: its bandwidth is
        :data:`attnpool.bandwidth.search.SMOOTHED_OUT` (2²⁰) times the column's
        half-width, where its kernel weighs all its rows equally to 2e-12 (Gaussian
        searches in several columns; the others report where their search stopped).

    References
    ----------
    Härdle, W., Hall, P. & Marron, J. S. (1988). How far are automatically chosen
    regression smoothing parameters from their optimum? *JASA* 83(401), 86–95.
    Hurvich, C. M., Simonoff, J. S. & Tsai, C.-L. (1998). Smoothing parameter selection
    in nonparametric regression using an improved Akaike information criterion. *JRSS B*
    60(2), 271–293.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> found = attnpool.select_bandwidth(data.x_train, data.y_train)   # leave-one-out CV
    >>> found.bandwidth.round(3), found.method
    (array([0.255]), 'cv')
    """
    method = canonical_selector(method, "method")
    if get_backend(pooling) is None:
        check_choice(pooling, "pooling", POOLINGS)
    if subsample is not None:
        if weights is not None:
            raise ValueError("subsample: selects on unweighted samples; received weights")
        return _subsampled(X, y, subsample, method, kernel, degree, var_type, pooling)
    x, y, model, weights = checked_training_data(X, y, kernel, var_type, degree, weights)
    if method == "dpill":
        from .local_linear_plug_in import plug_in_selection

        return plug_in_selection(x, y, model, weights)
    units = SearchUnits.of(np.asarray(x), np.asarray(y), model.continuous)
    x_units, y_units = units.apply(np.asarray(x), np.asarray(y))
    found, objective = _search(
        x_units, y_units, model, method, pooling, block_size, progress, weights
    )
    moved = None
    if method in ("cv", "aicc"):
        training = (x_units, y_units, model, weights)
        found, moved = _smoothest_flat(found, training, method, block_size, objective)
    grid, objectives = found.grid
    selection: BandwidthSelection = found._replace(
        bandwidth=units.bandwidth(found.bandwidth),
        objective=float(units.objective(found.objective, method)),
        grid=(grid, units.objective(objectives, method)),
    )
    if moved:
        warn_flat(method, selection.bandwidth, moved)
    return selection


def _smoothest_flat(
    found: BandwidthSelection,
    training: tuple,
    method: str,
    block_size: int | None,
    objective: Callable[[np.ndarray], float] | None,
) -> tuple[BandwidthSelection, str | None]:
    """``(found, kind)``: where the criterion is flat at its best, ``found`` moved to the
    smoothest bandwidths — every continuous column scaled by one factor, columns the fit
    does not need smoothed out — at which it still is, and how it is flat
    (:func:`~attnpool.bandwidth.flat_criteria.smoothest_flat`; None, ``found`` as it is,
    where it is not); ``training``:
    :func:`~attnpool.bandwidth.curves.checked_training_data`'s ``(x, y, model, weights)``
    in search units; ``objective``: the search's own ``θ → value`` where it ran on the
    host (else the criterion is computed as :func:`~attnpool.bandwidth.cv_curve` does)."""
    x, y, model, weights = training
    scaled = np.isin(np.arange(len(found.bandwidth)), model.continuous)
    evaluations = [0]
    flat = np.exp(smoothed_out(x, model)[1])  # (a column smoothed out: ∞ if categorical)
    smoothed = flat.copy()
    smoothed[~scaled] = categorical_upper(model)

    def criterion(candidates: np.ndarray) -> np.ndarray:
        evaluations[0] += len(candidates)
        if objective is not None:  # (θ of λ as found: to_theta clips it, for starts)
            fraction = candidates[:, ~scaled] / categorical_upper(model)
            thetas = np.log(candidates)
            with np.errstate(divide="ignore"):
                thetas[:, ~scaled] = np.log(fraction) - np.log1p(-fraction)
            return np.array([objective(theta) for theta in thetas])
        return np.asarray(criterion_at(training, candidates, method, block_size))

    start = search_start(x, kernel=model.kernel, var_type=model.var_type,
                         weights=in_weight_unit(weights))  # fmt: skip
    lowest = np.min(found.grid[0], initial=np.inf) * start
    below_grid = bool(np.all(found.bandwidth[scaled] < lowest[scaled]))
    settings = FlatSettings(np.asarray(found.bandwidth, np.float64), criterion,
                            np.where(scaled, flat, np.inf), smoothed, scaled)  # fmt: skip
    moved = smoothest_flat(method, found.objective, found.grid[1], response_variance(y, weights),
                           settings, below_grid)  # fmt: skip
    if moved is None:
        return found, None
    point, value, kind = moved
    return found._replace(
        bandwidth=point, objective=value, evaluations=found.evaluations + evaluations[0]
    ), kind


def _subsampled(X, y, settings, method, kernel, degree, var_type, pooling):
    """:func:`select_bandwidth` on blocks of the rows as given, scaled up
    (:func:`attnpool.bandwidth.subsample.subsampled_bandwidth`)."""
    x = np.asarray(check_points(X, "X"), np.float64)
    values, _ = check_values(y, x.shape[0])
    model = model_for(x, kernel=kernel, var_type=var_type, degree=degree)

    def on_rows(rows: np.ndarray) -> np.ndarray:
        found = select_bandwidth(
            x[rows], values[rows], method=method, kernel=kernel, degree=degree,
            var_type=model.var_type, pooling=pooling,
        )  # fmt: skip
        return np.asarray(found.bandwidth)

    h = subsampled_bandwidth(on_rows, x, model.var_type, settings)
    return BandwidthSelection(h, float("nan"), method, (np.array([]), np.array([])))
