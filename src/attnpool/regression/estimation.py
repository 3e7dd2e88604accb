"""What the regressors compute, path included: their bandwidth and their predictions.

:class:`attnpool.NadarayaWatson` and :class:`attnpool.LocalLinear` validate their input
and call :func:`fitted_bandwidth` and :func:`predict`; the choice of path lives here.
Predictions run where the planner's fit table (:mod:`attnpool.sums.plan`) sends
``method="auto"``, or where the method named runs:

- the local fits (:func:`attnpool.engines.planned_fit.planned_local_fit`: the NumPy
  engine, local linear's moments on the compiled loop, or the compiled fits) for local
  linear fits, categorical columns, the exact methods (``"dense"``, ``"stream"``,
  ``"pallas"``) and the small fits the planner gives NumPy;
- :func:`attnpool.attention_pool` otherwise — local constant fits of continuous columns,
  where its faster methods (``fgt``, ``native``, ``binned``, ``sparse``, ``topk``)
  serve;
- the pair fits (:mod:`attnpool.regression.pairs`: NumPy pairs) for higher-order
  kernels and bandwidths by nearest neighbours.

Each applies the empty policy of the function a user would call for the same fit.
"""

from __future__ import annotations

import numpy as np

from .._support.validation import check_choice
from ..bandwidth import select_bandwidth
from ..bandwidth.selection import canonical_selector
from ..engines.planned_fit import HOST_FITS, planned_local_fit
from ..methods.options import LOCAL_FIT_METHODS
from ..sums.empty_policy import EMPTY_POLICIES, fills_empty, report_empty
from ..sums.facts import fit_facts, pool_facts
from ..sums.local_model import checked_bandwidth, model_for
from ..sums.plan import plan
from . import pairs as pair_regression
from .options import FitOptions

__all__ = ["EXACT_ENGINES", "FitOptions", "fitted_bandwidth", "method_name", "planned_backend",
           "predict"]  # fmt: skip

#: Methods every local fit runs on (``pallas``: continuous columns); the others pool
#: (local constant, continuous columns).
EXACT_ENGINES = LOCAL_FIT_METHODS


def method_name(x, options: FitOptions) -> str:
    """The pooling method's name, checked against the fit it has to serve
    (:func:`attnpool.methods.options.fit_refusal`)."""
    if isinstance(options.method, str) and options.method == "auto":
        return "auto"
    from ..methods.options import fit_refusal, resolve

    name, _ = resolve(options.method)
    model = model_for(x, kernel=options.kernel, var_type=options.var_type, degree=options.degree)
    reason = fit_refusal(name, model)
    if reason:
        raise ValueError(f"method: {reason}")
    return name


def _search_pooling(name: str, model, weights=None) -> str:
    """The CV search's pooling: the method's own leave-one-out sums where it declares
    them (:class:`attnpool.methods.options.Traits`) and they serve the fit
    (:func:`~attnpool.methods.options.search_refusal`: the binned search takes one
    column), else ``"auto"`` — which weighted searches take (no method has weighted
    leave-one-out sums of its own)."""
    from ..methods.options import TRAITS, search_refusal

    own = "auto" if name == "auto" or weights is not None else TRAITS[name].search
    if own == "auto" or search_refusal(own, model, "cv"):
        return "auto"
    return own


def fitted_bandwidth(
    x, y, bandwidth, options: FitOptions, *, progress=None, weights=None
) -> tuple[np.ndarray, dict[str, float]]:
    """``(bandwidth (d,), scores)``: fixed bandwidths checked, or those a selector
    (:data:`attnpool.bandwidth.SELECTORS`) chooses, with the criterion's value as
    ``{"cv_score_": …}`` or ``{"aicc_": …}`` (the estimator's attribute names);
    ``progress`` and ``weights`` (positive observation weights) as
    :func:`attnpool.select_bandwidth` takes them. Pair fits (higher-order
    kernels, ``bandwidth_type`` by neighbours) get theirs from
    :func:`attnpool.regression.pairs.fitted_setting` (numbers of neighbours, for those)."""
    kernel, degree, var_type = options.kernel, options.degree, options.var_type
    check_choice(options.empty, "empty", EMPTY_POLICIES)
    if isinstance(bandwidth, str):
        bandwidth = canonical_selector(bandwidth)
    if pair_regression.is_pair_fit(kernel, options.bandwidth_type):
        return pair_regression.fitted_setting(x, y, bandwidth, options, weights=weights)
    name = method_name(x, options)
    if not isinstance(bandwidth, str):
        return checked_bandwidth(bandwidth, _model(x, options)), {}
    selection = select_bandwidth(
        x,
        y,
        method=bandwidth,
        kernel=kernel,
        degree=degree,
        var_type=var_type,
        block_size=options.block_size,
        pooling=_search_pooling(name, _model(x, options), weights) if bandwidth == "cv" else "auto",
        progress=progress,
        weights=weights,
    )
    scores = {"cv": {"cv_score_": selection.objective}, "aicc": {"aicc_": selection.objective}}
    return selection.bandwidth, scores.get(bandwidth, {})


def _route(x_train, y_train, queries: int, options: FitOptions, weights=None, model=None):
    """``(path, model)`` of a fit at ``queries`` points: ``"pairs"`` (the pair fits) or
    the method named (model None), or the backend of the planner's fit table
    (:mod:`attnpool.sums.plan`: ``"numpy"``, ``"native"``, ``"pool"``, or a compiled
    fit's engine) with the fit's model (``model``, where the caller has it:
    :func:`fit_model`)."""
    if pair_regression.is_pair_fit(options.kernel, options.bandwidth_type):
        return "pairs", None
    name = method_name(x_train, options)
    if name != "auto":
        return name, None
    model = model or _model(x_train, options)
    outputs = 1 if y_train.ndim == 1 else y_train.shape[1]
    facts = fit_facts(model, queries, x_train.shape[0], outputs, weighted=weights is not None,
                      block_size=options.block_size is not None)  # fmt: skip
    return plan(facts).backend, model


def fit_model(x_train, options: FitOptions):
    """The :class:`~attnpool.sums.local_model.LocalModel` of a fit's planned route, or
    None for the pair fits (nearest-neighbour bandwidths, signed kernels): what an
    estimator keeps from ``fit`` for each ``predict``."""
    if pair_regression.is_pair_fit(options.kernel, options.bandwidth_type):
        return None
    return _model(x_train, options)


def _model(x_train, options: FitOptions):
    """The fit's :class:`~attnpool.sums.local_model.LocalModel`: its levels counted in the
    training inputs (never in the queries: one query has one level)."""
    return model_for(x_train, kernel=options.kernel, var_type=options.var_type,
                     degree=options.degree)  # fmt: skip


def planned_backend(x_train, y_train, bandwidth, options: FitOptions, *, weights=None) -> str:
    """The backend that computes the fit at the training rows — resolved in ``fit``, as
    scikit-learn resolves ``algorithm="auto"``: ``"pairs"`` (the pair fits), the method
    named, or the planner's (:mod:`attnpool.sums.plan`): ``"numpy"``, ``"native"`` (local
    linear's moments on the compiled loop), the pooling table's method for a
    local-constant fit, the compiled fits' engine else.
    ``predict`` asks the same tables for its own number of queries (a few of them may
    go to NumPy where thousands went to a method)."""
    n = x_train.shape[0]
    planned, model = _route(x_train, y_train, n, options, weights)
    if planned == "pool":
        pool = pool_facts(model.kernel, x_train, x_train,
                          np.asarray(bandwidth, np.float64), values=y_train.reshape(n, -1),
                          numpy=True, block_size=options.block_size is not None)  # fmt: skip
        return plan(pool).backend
    return planned


def predict(x_train, y_train, x, bandwidth, options: FitOptions, *, weights=None, model=None):
    """The fitted regression function at ``x (m, d)``: ``(m,)`` or ``(m, p)`` like
    ``y_train``, by the path that serves the fit (module docstring); ``weights``: the
    training rows' positive observation weights; ``bandwidth`` the numbers of neighbours
    of a ``bandwidth_type`` by neighbours; ``model`` the fit's :func:`fit_model` where
    the caller kept it (its unordered columns' levels are not counted again)."""
    route, model = _route(x_train, y_train, x.shape[0], options, weights, model)
    if route == "pairs":
        return pair_regression.estimator_prediction(x_train, y_train, x, bandwidth, options,
                                                    weights=weights)  # fmt: skip
    if route in EXACT_ENGINES or (options.method == "auto" and route in HOST_FITS):
        return _local_fit(x_train, y_train, x, bandwidth, model or _model(x_train, options),
                          options, route, weights)  # fmt: skip
    from ..pooling import attention_pool

    return attention_pool(x, x_train, y_train, kernel=options.kernel, bandwidth=bandwidth,
                          empty=options.empty, weights=weights, method=options.method,
                          block_size=options.block_size)  # fmt: skip


def _local_fit(x_train, y_train, x, bandwidth, model, options: FitOptions, route: str, weights):
    """The local fit at ``x`` on the engine of ``route`` (a method named, or the backend
    the planner's fit table chose), with the empty policy the functions apply
    (:func:`attnpool.attention_pool`'s words for a local constant fit,
    :func:`attnpool.local_regression`'s else)."""
    y = y_train.reshape(y_train.shape[0], -1)
    fit, _, empty_rows = planned_local_fit(
        x_train, y, x, np.asarray(bandwidth, np.float64), model, method=route,
        nearest=fills_empty(model.kernel, options.empty), block_size=options.block_size,
        weights=weights,
    )  # fmt: skip
    noun = "key" if model.degree == 0 else "training point"
    report_empty(model.kernel, options.empty, empty_rows, noun=noun)
    return fit[:, 0] if y_train.ndim == 1 else fit
