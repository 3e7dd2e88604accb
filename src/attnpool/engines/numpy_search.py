"""The NumPy engine's bandwidth searches: the leave-one-out CV objective of small fits in
NumPy float64, and of Gaussian fits on the ``native`` C loop where the compiled loops run
(each row's own pair masked inside the loop), so that such searches need no JAX.
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from ..sums.local_model import LocalModel, bandwidth_of
from .numpy_engine import local_fit, serves, work_width

__all__ = [
    "NATIVE_SEARCH_MAX_WORK",
    "NUMPY_SEARCH_MAX_WORK",
    "NUMPY_SEARCH_MAX_WORK_SEVERAL",
    "loo_objective",
    "native_serves",
    "searches",
]

#: Largest rows² × features the NumPy engine's CV search takes (one column): ~45
#: evaluations at up to ~50 ms, still cheaper than importing JAX and building programs.
NUMPY_SEARCH_MAX_WORK = 2**21
#: The same in several columns: L-BFGS's 25–450 evaluations of ~1–10 ms at most,
#: still less than JAX and a program.
NUMPY_SEARCH_MAX_WORK_SEVERAL = 2**19


def searches(model: LocalModel, rows: int, outputs: int, *, weighted: bool = False) -> bool:
    """Whether the host runs the CV search of ``rows`` training points: with the Gaussian
    on the compiled C loop (:func:`loo_objective`) at any size in several columns (the
    compiled search sums every pair there too, ~2× slower a pair, and needs JAX and its
    programs) and up to :data:`NATIVE_SEARCH_MAX_WORK` in one (beyond, the compiled
    search bins); else NumPy up to :data:`NUMPY_SEARCH_MAX_WORK` rows² × features in
    one column, where bounded Brent needs ~30 evaluations, and
    :data:`NUMPY_SEARCH_MAX_WORK_SEVERAL` in several, where L-BFGS on forward
    differences needs 25–450. Weighted searches (observation weights) run in NumPy only."""
    if not weighted and native_serves(model, rows, outputs):
        several = len(model.var_type) > 1
        return several or rows * rows * _evaluations(model) <= NATIVE_SEARCH_MAX_WORK
    limit = NUMPY_SEARCH_MAX_WORK if len(model.var_type) == 1 else NUMPY_SEARCH_MAX_WORK_SEVERAL
    return serves(model, rows, rows, outputs) and rows * rows * work_width(model, outputs) <= limit


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

    def objective(theta) -> float:
        value = None if native is None else native.value(np.exp(theta))
        if value is None:
            h = bandwidth_of(theta, model)  # categorical columns: logits of λ
            fit, _, _ = local_fit(x, y, x, h, model, exclude_self=True, weights=weights)
            value = _mean_square(y - fit, weights)
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


#: Most pairs × expected evaluations (:func:`_evaluations`) a host search of one column
#: takes on the compiled loop: ~0.2 s at ~1.5 ns a pair on two cores (n ≤ 1832 for
#: Nadaraya–Watson, 1057 for local linear). Beyond, the compiled search on a binned
#: grid wins once its programs are in the cache: at n = 5000 it took 0.07 s a search in
#: a warm process where the host's took 1.4 s (2^30 here made that the steady state,
#: 44× statsmodels instead of 563×), and a first fit with a warm cache costs JAX's
#: import, ~1 s, more.
NATIVE_SEARCH_MAX_WORK = 2**27


def native_serves(model: LocalModel, rows: int, outputs: int) -> bool:
    """Whether leave-one-out sums run on the ``native`` loop: the Gaussian, continuous
    columns, and the compiled loops for this many columns and responses (local linear's
    moments for up to ``MOMENTS_MAX_VALUES`` responses)."""
    if not kernels.is_gaussian(model.kernel) or set(model.var_type) != {"c"}:
        return False
    from ..methods import native

    d = len(model.var_type)
    if model.degree == 1:
        return native.moments_available(d, outputs)
    return native.available(True, d, min(outputs, native.MAX_VALUES))


def _evaluations(model: LocalModel) -> int:
    """Objective evaluations a host search is expected to take, the grid's included
    (Brent's ~40 in one column; L-BFGS's on forward differences in several, measured:
    Nadaraya–Watson 25–110 in two to five columns, local linear 25–450), tripled for
    local linear, whose evaluations also cost more: a unit of its cost."""
    d = len(model.var_type)
    return (40 if d == 1 else 20 * (d + 1)) * (1 + 2 * model.degree)


def _mean_square(residuals, weights=None) -> float:
    """The mean of ``residuals (n, p)`` squared, rows weighted by ``weights (n,)``."""
    if not np.all(np.isfinite(residuals)):
        return np.inf
    if weights is None:
        return float(np.mean(residuals**2))
    return float(weights @ np.mean(residuals**2, axis=1) / np.sum(weights))
