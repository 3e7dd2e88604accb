"""Bandwidth selection for the regressions: :func:`select_bandwidth` and the criteria's
curves (:func:`cv_curve`, :func:`aicc_curve`); the package's docstring describes them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._support.hints import ArrayLike, KernelSpec
from .._support.units import SearchUnits, objective_in_data_units, response_unit
from .._support.validation import check_choice, check_points, check_values
from ..engines import numpy_search
from ..kernels.edges import has_edge
from ..methods.options import LEAVE_ONE_OUT_METHODS
from ..sums.backends import get_backend
from ..sums.local_model import LocalModel, model_for
from ..sums.observation_weights import (
    in_weight_unit,
    merged_rows,
    positive_rows,
    sorted_rows,
)
from . import by_backend, leave_one_out
from .grid import search_line
from .resolution import response_variance, warn_if_interpolating
from .rules import rule_of_thumb, search_start
from .search import (
    BandwidthSelection,
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
    "aicc_curve",
    "canonical_selector",
    "cv_curve",
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


#: How the search pools (``pooling=``): ``auto`` — the host (NumPy or the C loop) for
#: small searches and Gaussian ones in several columns, binned for one continuous
#: column and n ≥ BINNED_MIN_ROWS, exact otherwise — or a method with leave-one-out
#: sums of its own (:data:`attnpool.methods.options.LEAVE_ONE_OUT_METHODS`).
POOLINGS = ("auto", *LEAVE_ONE_OUT_METHODS)
#: Log-bandwidth tolerance of the NumPy engine's search (smooth objectives: Brent's
#: parabolas reach it in a few more evaluations).
NUMPY_SEARCH_XATOL = 1e-8


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
    """:func:`select_bandwidth` on data in search units: rules of thumb, the NumPy
    engine's search of one column (no program, no JAX), or the compiled searches."""
    if method in ("scott", "silverman"):
        rule = rule_of_thumb(x, method=method, kernel=model.kernel, var_type=model.var_type,
                             weights=weights)  # fmt: skip
        return BandwidthSelection(rule, float("nan"), method, (np.array([]), np.array([])))
    weights = in_weight_unit(weights)  # (in a power-of-two unit, as x and y are)
    start = search_start(x, kernel=model.kernel, var_type=model.var_type, weights=weights)
    if constant_response(y, method, "the rule of thumb"):
        exact = 0.0 if method == "cv" else -math.inf  # (AICc: log σ̂² of σ̂² = 0)
        return BandwidthSelection(start, exact, method, (np.array([]), np.array([])))
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
    if objective is not None:
        return select_on_host(objective, line, progress, model, method, xatol=NUMPY_SEARCH_XATOL,
                              smooth=not has_edge(model.kernel),
                              limits=smoothed_out(x, model))  # fmt: skip
    if route in leave_one_out.HOST_POOLINGS:  # a host backend's leave-one-out sums
        leave_one_out.refuse_weights(route, weights)

        def exact(theta: np.ndarray) -> float:
            from . import compiled

            return compiled.exact_cv(theta, x, y, model, method)

        return leave_one_out.select_by_host_sums(x, y, model, line, method, route,
                                                 progress, exact)  # fmt: skip
    from . import compiled

    spec = compiled.Criterion(model, method, block_size)
    return compiled.search(x, y, weights, line, spec, route, progress)


def _checked_training_data(
    x: Any, y: Any, kernel: Any, var_type: Any, degree: Any, weights: Any = None
) -> Any:
    """``(x (n, d), y (n, p), model, weights)`` checked for a search: at least 3 distinct
    rows (of positive weight: rows of weight 0 are dropped; identical rows merged into
    one of their total weight; ``weights`` None or positive), in their sorted order
    (:func:`~attnpool.sums.observation_weights.sorted_rows`)."""
    x = check_points(x, "X")
    y, _ = check_values(y, x.shape[0])
    x, y, weights = positive_rows(x, y, weights)
    # identical rows are one observation of their total weight: leave-one-out leaves
    # them out together (with them, CV chose bandwidths near 0 — each row its own twin)
    x, y, weights = sorted_rows(*merged_rows(x, y, weights))
    if x.shape[0] < 3:
        of = "" if weights is None else " of positive weight"
        raise ValueError(
            f"X: bandwidth selection needs at least 3 rows; received n_samples={x.shape[0]}{of}"
        )
    model = model_for(x, kernel=kernel, var_type=var_type, degree=degree)
    return x, y, model, weights


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
        Whose leave-one-out sums the objectives are computed with. ``"binned"`` (one
        continuous column, CV): grid search and L-BFGS on the binned leave-one-out
        objective, then the exact objective at the result — what ``"auto"`` does from
        1000 rows. ``"sparse"`` (compact kernels), ``"fgt"`` (the Gaussian in one
        column), ``"native"`` (the Gaussian, the compiled loops): exact leave-one-out sums of
        a local-constant fit of continuous columns by that host method
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
    x, y, model, weights = _checked_training_data(X, y, kernel, var_type, degree, weights)
    if method == "dpill":
        from .local_linear_plug_in import plug_in_selection

        return plug_in_selection(x, y, model, weights)
    units = SearchUnits.of(np.asarray(x), np.asarray(y), model.continuous)
    x_units, y_units = units.apply(np.asarray(x), np.asarray(y))
    found = _search(x_units, y_units, model, method, pooling, block_size, progress, weights)
    grid, objectives = found.grid
    if method in ("cv", "aicc"):
        variance = response_variance(y_units, weights)
        warn_if_interpolating(method, found.objective, objectives, variance)
    selection: BandwidthSelection = found._replace(
        bandwidth=units.bandwidth(found.bandwidth),
        objective=float(units.objective(found.objective, method)),
        grid=(grid, units.objective(objectives, method)),
    )
    return selection


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


def cv_curve(
    X: ArrayLike,
    y: ArrayLike,
    bandwidths: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    degree: int = 0,
    var_type: str | None = None,
    block_size: int | None = None,
    weights: ArrayLike | None = None,
) -> np.ndarray:
    """Leave-one-out error for each candidate bandwidth (what one plots to see the trade-off).

    ``bandwidths``: a sequence of scalars (the same for every column) or an array
    ``(k, d)``. Returns ``(k,)`` objectives; ``inf`` where some point has no neighbour.
    ``weights``: observation weights, as :func:`select_bandwidth` takes them.

    Parameters
    ----------
    X : array of shape (n,) or (n, d)
    y : array of shape (n,) or (n, p)
    bandwidths : array of shape (k,) or (k, d)
        Candidates: one bandwidth for every column, or one row per candidate.
    kernel : str or Kernel
    degree : {0, 1}
    var_type : str, optional
    block_size : int, optional
    weights : array of shape (n,), optional

    Returns
    -------
    ndarray of shape (k,)

    References
    ----------
    Härdle, W., Hall, P. & Marron, J. S. (1988). How far are automatically chosen
    regression smoothing parameters from their optimum? *JASA* 83(401), 86–95.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.cv_curve(data.x_train, data.y_train, [0.1, 0.3, 1.0]).round(3)
    array([0.283, 0.272, 0.569])
    """
    training = _checked_training_data(X, y, kernel, var_type, degree, weights)
    return np.asarray(_curve(training, bandwidths, "cv", block_size))


def aicc_curve(
    X: ArrayLike,
    y: ArrayLike,
    bandwidths: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    degree: int = 0,
    var_type: str | None = None,
    block_size: int | None = None,
    weights: ArrayLike | None = None,
) -> np.ndarray:
    """AICc (Hurvich, Simonoff & Tsai, 1998) for each candidate bandwidth — the criterion
    ``select_bandwidth(method="aicc")`` minimises, as :func:`cv_curve` gives CV's:

    .. math:: \\log \\hat\\sigma^2 + \\frac{1 + \\operatorname{tr} H / n}
              {1 - (\\operatorname{tr} H + 2) / n}

    with ``H`` the smoother matrix; ``inf`` where the fit is not defined (``tr H ≥ n − 2``,
    or a point without a neighbour).

    Parameters
    ----------
    X, y, bandwidths, kernel, degree, var_type, block_size, weights
        As :func:`cv_curve` takes them.

    Returns
    -------
    ndarray of shape (k,)

    References
    ----------
    Hurvich, C. M., Simonoff, J. S. & Tsai, C.-L. (1998). *JRSS B* 60(2), 271–293.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.aicc_curve(data.x_train, data.y_train, [0.1, 0.3, 1.0]).round(3)
    array([-0.163, -0.279,  0.45 ])
    """
    training = _checked_training_data(X, y, kernel, var_type, degree, weights)
    return np.asarray(_curve(training, bandwidths, "aicc", block_size))


def _curve(training: tuple, bandwidths, method: str, block_size: int | None) -> Any:
    """The criterion ``method`` at each candidate of ``bandwidths``, in the data's units;
    ``training``: :func:`_checked_training_data`'s ``(x, y, model, weights)``."""
    x, y, model, weights = training
    weights = in_weight_unit(weights)
    candidates = np.asarray(bandwidths, dtype=float)
    if candidates.ndim == 1:
        candidates = np.repeat(candidates[:, None], x.shape[1], axis=1)
    cont, cat = list(model.continuous), list(model.categorical)
    shaped = candidates.ndim == 2 and candidates.shape[1] == x.shape[1]
    if not (
        shaped
        and np.all(candidates[:, cont] > 0)
        and np.all((0 <= candidates[:, cat]) & (candidates[:, cat] < 1))
    ):
        raise ValueError(
            f"bandwidths: expected shape (k,) or (k, {x.shape[1]}), positive for continuous "
            f"columns and λ in (0, 1) for categorical ones; received shape "
            f"{np.asarray(bandwidths).shape} with values from {np.min(candidates):.3g} to "
            f"{np.max(candidates):.3g}"
        )
    unit = response_unit(y)  # (y ~ 1e±200: squared residuals neither overflow nor vanish)
    found = None
    if block_size is None:  # on the host where NumPy pairs serve the search (no JAX)
        found = numpy_search.criterion_curve(x, y / unit, candidates, model, method, weights)
    if found is None:
        from .compiled import criterion_curve

        found = criterion_curve(x, y / unit, candidates, model, block_size, method, weights)
    return objective_in_data_units(found, method, unit)
