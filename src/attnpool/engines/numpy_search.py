"""The NumPy engine's bandwidth searches: the leave-one-out CV objective of small fits in
NumPy float64, and of Gaussian fits on the ``native`` C loop where the compiled loops run
(each row's own pair masked inside the loop), so that such searches need no JAX.
"""

from __future__ import annotations

import numpy as np

from ..sums import plan, thresholds
from ..sums.facts import search_facts
from ..sums.local_model import LocalModel, bandwidth_of
from .numpy_engine import fit_and_hat, local_fit

__all__ = [
    "NATIVE_SEARCH_MAX_WORK",
    "NUMPY_SEARCH_MAX_WORK",
    "NUMPY_SEARCH_MAX_WORK_SEVERAL",
    "aicc_at",
    "aicc_objective",
    "criterion_curve",
    "loo_at",
    "loo_objective",
    "native_serves",
    "searches",
]

#: The planner's limits of the host searches (:mod:`attnpool.sums.plan`).
NUMPY_SEARCH_MAX_WORK = thresholds.NUMPY_SEARCH_MAX_WORK
NUMPY_SEARCH_MAX_WORK_SEVERAL = thresholds.NUMPY_SEARCH_MAX_WORK_SEVERAL
NATIVE_SEARCH_MAX_WORK = thresholds.NATIVE_SEARCH_MAX_WORK


def searches(model: LocalModel, rows: int, outputs: int, *, weighted: bool = False) -> bool:
    """Whether the host runs the CV search of ``rows`` training points (the planner's
    search table, rule 1): with the Gaussian on the compiled C loop (:func:`loo_objective`)
    at any size in several columns (the compiled search sums every pair there too, ~2×
    slower a pair, and needs JAX and its programs), for local linear in one, and for
    local constant up to ``NATIVE_SEARCH_MAX_WORK`` in one (beyond, ``fgt``'s sums); else
    NumPy up to
    ``NUMPY_SEARCH_MAX_WORK`` rows² × features in one column, where bounded Brent needs
    ~30 evaluations, and ``NUMPY_SEARCH_MAX_WORK_SEVERAL`` in several, where L-BFGS on
    forward differences needs 25–450. Weighted searches run in NumPy only."""
    facts = search_facts(model, rows, outputs, weighted=weighted)
    return plan.plan(facts).by_numpy


def loo_objective(x, y, model: LocalModel, weights=None):
    """``θ (d,) → float``: the leave-one-out CV objective at bandwidths ``exp(θ)``,
    ``inf`` where some point has no neighbour left. With positive observation ``weights``
    (NumPy only) each point is left out whole and its squared residual counts ``w_i``
    times (:mod:`attnpool.sums.observation_weights`).

    With the Gaussian, the sums run on the compiled loop of the ``native`` method where
    the compiled loops run (each row's own
    pair masked inside the loop; ~10–20× NumPy's speed), on rows centred on their
    midrange: Nadaraya–Watson's weighted responses, local linear's moments about each
    row's heaviest key (as the compiled engines take them). An evaluation it cannot
    settle (scaled coordinates beyond ``native.MAX_SCALED``, where their differences
    would lose digits, or a sum not finite) runs in NumPy.
    """
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    native = None
    if weights is None and native_serves(model, *y.shape):
        from .native_search import NativeObjective

        native = NativeObjective(x, y, model)

    at = loo_at(x, y, model, weights)

    def objective(theta) -> float:
        value = None if native is None else native.value(np.exp(theta))
        if value is None:
            value = at(bandwidth_of(theta, model))  # categorical columns: logits of λ
        return value

    if native is not None and native.gradients:

        def value_and_gradient(theta):
            found = native.value_and_gradient(np.exp(theta))
            return found if found is not None else (objective(theta), None)

        objective.value_and_gradient = value_and_gradient
    if native is not None and native.estimates:

        def estimate(theta) -> float:
            found = native.value(np.exp(theta), estimate=True)
            return objective(theta) if found is None else found

        objective.estimate = estimate
    return objective


def loo_at(x, y, model: LocalModel, weights=None):
    """``h (d,) → float``: the leave-one-out CV error at bandwidths ``h`` by NumPy pairs
    (each point left out whole, its squared residual counted ``w_i`` times), ``inf``
    where some point has no neighbour left."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)

    def at(h) -> float:
        fit, _, _ = local_fit(x, y, x, h, model, exclude_self=True, weights=weights)
        return _mean_square(y - fit, weights)

    return at


def criterion_curve(x, y, candidates, model: LocalModel, method: str, weights=None):
    """The criterion ``method`` (``"cv"``, ``"aicc"``) at each row of ``candidates (k, d)``
    by NumPy pairs, or None where the planner's search table gives such a search to the
    compiled engines (beyond its NumPy pairs' sizes)."""
    facts = search_facts(model, *np.shape(y), weighted=weights is not None, criterion=method)
    if not plan.plan(facts._replace(loo_loops=False)).by_numpy:
        return None
    at = (loo_at if method == "cv" else aicc_at)(x, y, model, weights)
    return np.array([at(np.asarray(h, np.float64)) for h in candidates])


def aicc_objective(x, y, model: LocalModel, weights=None):
    """``θ (d,) → float``: :func:`aicc_at` at bandwidths ``exp(θ)`` (categorical columns:
    logits of ``λ``)."""
    at = aicc_at(x, y, model, weights)
    return lambda theta: at(bandwidth_of(theta, model))


def aicc_at(x, y, model: LocalModel, weights=None):
    """``h (d,) → float``: AICc (Hurvich, Simonoff & Tsai, 1998) at bandwidths ``h``
    in NumPy float64, ``log σ̂² + (1 + tr H / n) / (1 − (tr H + 2) / n)`` — ``inf`` where
    the denominator is not positive — from the in-sample fit and the smoother matrix's
    diagonal by the sums layer (:func:`.numpy_engine.fit_and_hat`), as the compiled
    criterion computes it (:func:`attnpool.bandwidth.criteria.criterion`): with positive
    observation ``weights``, ``σ̂²`` weighs each row's squared residuals by ``w_i`` and the
    trace counts each row's whole self-influence, ``Σ w_i H_ii``."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    counts = np.ones(x.shape[0]) if weights is None else np.asarray(weights, np.float64)
    rows = x.shape[0]

    def at(h) -> float:
        fit, hat = fit_and_hat(x, y, h, model, weights=weights)
        sigma2 = _mean_square(y - fit, weights)
        trace = float(counts @ hat)
        denominator = 1.0 - (trace + 2.0) / rows
        if not (denominator > 0 and np.isfinite(trace) and sigma2 < np.inf):
            return np.inf
        with np.errstate(divide="ignore"):
            value = float(np.log(sigma2) + (1.0 + trace / rows) / denominator)
        return value if np.isfinite(value) else np.inf

    return at


def native_serves(model: LocalModel, rows: int, outputs: int) -> bool:
    """Whether leave-one-out sums run on the ``native`` loop: the Gaussian, continuous
    columns, and the compiled loops for this many columns and responses (local linear's
    moments for up to ``MOMENTS_MAX_VALUES`` responses)."""
    return search_facts(model, rows, outputs).loo_loops


def _mean_square(residuals, weights=None) -> float:
    """The mean of ``residuals (n, p)`` squared, rows weighted by ``weights (n,)``."""
    if not np.all(np.isfinite(residuals)):
        return np.inf
    if weights is None:
        return float(np.mean(residuals**2))
    return float(weights @ np.mean(residuals**2, axis=1) / np.sum(weights))
