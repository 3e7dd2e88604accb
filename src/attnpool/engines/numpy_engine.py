"""The NumPy engine: exact local regression and pooling for problems too small to pay
for a program.

Building a program costs more than a small problem (one leave-one-out evaluation at
n = 500 is milliseconds in NumPy): up to :data:`NUMPY_MAX_WORK` pair-features the
estimators' predictions, small CV searches and pooling of NumPy float64 arrays run here,
in float64: offsets ``(k − q) / h`` from the unscaled rows (the
difference first, so keys equally far from a query stay tied at any bandwidth, and a
compact kernel's edge is decided by :func:`attnpool.kernels.edges.inside_exactly`, as on every
path); log weights ``log K(r²)`` shifted by each row's largest; the local moments; the
local linear solve with unit diagonal and a relative ridge. A row with no weight
(``−inf`` log weights everywhere) is empty, and under ``nearest`` takes the mean
response of its nearest training points (ties averaged), from differences weighted by
``min h / h_j`` and each row's largest, so that distances cannot overflow. Response
columns near the float limit are divided by a power of two before they are summed
(:func:`attnpool._support.units.value_unit`, as pooling does), so huge ones do not overflow.

It serves built-in kernels (profiles in NumPy) and a callable's, on continuous and
categorical columns (ordered and unordered, as :mod:`attnpool.sums.local_model` weighs them),
the rest going to the compiled engines. Its leave-one-out
searches are in :mod:`.numpy_search`.
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from .._support.units import midrange, value_unit
from .._support.validation import check_bandwidth_representable
from ..methods.backends.exact import exact_host_backend
from ..sums import layer, plan, thresholds
from ..sums.backends import NUMPY_PAIRS
from ..sums.costs import pair_width
from ..sums.exact_pairs import heaviest_keys
from ..sums.facts import fit_facts
from ..sums.local_model import LocalModel, model_for
from ..sums.observation_weights import augmented, column_scale
from ..sums.problem import SumProblem

__all__ = [
    "NATIVE_POOL_MIN_PAIRS",
    "NUMPY_MAX_WORK",
    "fit_and_hat",
    "gaussian_slopes",
    "local_fit",
    "pool",
    "serves",
    "work_width",
]

#: Largest pairs × features (one per response, local moments for degree 1) the NumPy
#: engine takes: its time per evaluation there is ~10 ms on two cores, so a search of a
#: few dozen evaluations costs less than building and loading its programs.
NUMPY_MAX_WORK = thresholds.NUMPY_MAX_WORK


def serves(
    model: LocalModel, queries: int, rows: int, outputs: int, *, weighted: bool = False
) -> bool:
    """Whether this engine takes a fit of ``queries`` × ``rows`` pairs for ``model``: in
    NumPy up to :data:`NUMPY_MAX_WORK`, and a Gaussian local linear fit (unweighted) at
    any size where the ``native`` loop that sums its moments runs."""
    facts = fit_facts(model, queries, rows, outputs, weighted=weighted)
    return plan.plan(facts).on_host


def work_width(model: LocalModel, outputs: int) -> int:
    """Features summed per pair: one per response, local linear's moments for degree 1."""
    return pair_width(model.degree, len(model.var_type), outputs)


def pool(q, k, v, h, kernel: kernels.Kernel, *, nearest: bool):
    """``(pooled (n, p), empty (n,))`` of a pool of NumPy arrays in float64, no program and
    no JAX (the textbook's 40 points pool in milliseconds), where the planner's pooling
    table gives it this engine (rule 3: float64 data, a kernel NumPy evaluates, at most
    ``NUMPY_MAX_WORK`` pairs × columns)."""
    check_bandwidth_representable(h, np.float64)  # as the compiled path does
    pooled, _, empty_rows = local_fit(k, v, q, h, model_for(k, kernel=kernel), nearest=nearest)
    return pooled, empty_rows


def local_fit(x_train, y_train, x_query, bandwidth, model: LocalModel, *, exclude_self=False,
              nearest=False, weights=None):  # fmt: skip
    """``fit (k, p)``, ``slopes (k, d, p)`` in the inputs' units and the empty-row mask
    ``(k,)``, as :func:`attnpool.engines.local_fits.local_fit` (``exclude_self``: leave-one-out,
    ``x_query`` is ``x_train``; an empty row is NaN there; ``weights``: positive observation
    weights, :mod:`attnpool.sums.observation_weights`)."""
    x, y, q = (np.asarray(a, np.float64) for a in (x_train, y_train, x_query))
    h = np.asarray(bandwidth, np.float64)
    w = None if weights is None else np.asarray(weights, np.float64)
    # distances beyond the float range are inf (log weight −inf): no warning for them
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _fit(x, y, q, h, model, exclude_self, nearest, w)


def fit_and_hat(x_train, y_train, bandwidth, model: LocalModel, *, weights=None):
    """``(fit (n, p), hat (n,))``: the in-sample fit and the smoother matrix's diagonal
    in float64 (:func:`attnpool.sums.layer.fit_and_hat`; with observation ``weights``,
    one copy of each row's), what AICc reads: by the exact host backend the planner's
    finishing table gives (:func:`~attnpool.methods.backends.exact.exact_host_backend`:
    NumPy pairs, or for a larger Gaussian column ``fgt``, ``O(n)``)."""
    x, y = np.asarray(x_train, np.float64), np.asarray(y_train, np.float64)
    w = None if weights is None else np.asarray(weights, np.float64)
    scale = value_unit(y) if w is None else column_scale(y)
    problem = _problem(x, y / scale, x, np.asarray(bandwidth, np.float64), model, w, None)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        fit, hat = layer.fit_and_hat(exact_host_backend(problem), problem)
    return fit * scale, hat


def _problem(x, y, q, h, model: LocalModel, w, left_out) -> SumProblem:
    """The sums of a fit of ``model`` at ``q``, its moments about each row's heaviest key."""
    var_type = model.var_type if model.categorical else None
    problem = SumProblem(q, x, y, h, model.kernel, w, left_out, var_type=var_type,
                         levels=model.levels, degree=model.degree)  # fmt: skip
    if model.degree:
        problem = problem.replace(origin=heaviest_keys(problem))
    return problem


def _fit(x, y, q, h, model, exclude_self, nearest, w):
    """:func:`local_fit` in float64."""
    # columns near the float limit in power-of-two units; with observation weights every
    # column in units of its largest (the weights' span times 2⁻¹⁰⁰⁰ underflowed)
    scale = value_unit(y) if w is None else column_scale(y)
    y = y / scale
    found = None if exclude_self else _native_fit(x, y, q, h, model, w)
    if found is not None:
        return found[0] * scale, found[1] * scale, np.zeros(q.shape[0], bool)
    left_out = np.arange(q.shape[0]) if exclude_self else None
    problem = _problem(x, y, q, h, model, w, left_out)
    fit, slopes, empty = layer.local_fit(NUMPY_PAIRS, problem)
    if not exclude_self and not np.isfinite(fit).all():  # (an empty row's fit is NaN)
        finite = np.isfinite(fit).all(axis=1)
        fallback = ~finite if nearest else ~finite & ~empty
        if fallback.any():
            fit[fallback] = layer.nearest_limit(problem, fallback)
    return fit * scale, slopes * scale, empty


#: Fewest pairs from which a Nadaraya–Watson fit with the Gaussian runs on the
#: ``native`` loop (~2 ns a pair on two cores, NumPy ~40): a fixed-
#: bandwidth fit of 1000 rows at 1000 queries took 40 ms in NumPy, 4 ms compiled.
NATIVE_POOL_MIN_PAIRS = 2**18


def _native_fit(x, y, q, h, model: LocalModel, w=None):
    """``(fit (k, p), slopes (k, d, p))`` on the ``native`` loop — Nadaraya–Watson's pooled
    responses (slopes 0, as the NumPy path gives them), or local linear's fit from the
    loop's moments (unweighted) — or None where it does not serve: not the Gaussian on
    continuous columns, fewer than :data:`NATIVE_POOL_MIN_PAIRS`, the loop not built (no
    build here), coordinates beyond ``native.MAX_SCALED`` bandwidths of the keys'
    midrange, or a sum not finite (NumPy then takes the call, nearest-key limit
    included)."""
    gaussian = kernels.is_gaussian(model.kernel) and set(model.var_type) == {"c"}
    if not gaussian or q.shape[0] * x.shape[0] < NATIVE_POOL_MIN_PAIRS:
        return None
    if model.degree == 1 and w is not None:
        return None
    from ..methods import native

    served = (
        native.moments_available(x.shape[1], y.shape[1])
        if model.degree == 1
        else native.available(True, x.shape[1], y.shape[1] + (w is not None))
    )
    if y.shape[1] > native.MAX_VALUES or not served:
        return None
    centre = midrange(x)
    keys, queries = x - centre, q - centre
    reach = np.maximum(np.max(np.abs(keys), axis=0), np.max(np.abs(queries), axis=0))
    if np.any(reach / h > native.MAX_SCALED):
        return None
    if model.degree == 1:
        from .native_search import local_linear_of_moments

        moments, ref = native.native_moments(queries, keys, y, 1.0 / h)
        found = local_linear_of_moments(moments, ref, queries, keys, y, h)
        return found if found is not None and np.all(np.isfinite(found[0])) else None
    if w is None:
        sums = native.native_sums(queries, keys, y, 1.0 / h)
        pooled = sums[:, 1:] / sums[:, :1]
    else:  # the sums of [w, w·y] in augmented's units (:mod:`attnpool.sums.observation_weights`)
        sums = native.native_sums(queries, keys, augmented(y, w), 1.0 / h)[:, 1:]
        pooled = sums[:, 1:] / sums[:, :1] * column_scale(y)
    return (pooled, np.zeros((*pooled.shape[:1], x.shape[1], y.shape[1]))) if np.all(
        np.isfinite(pooled)) else None  # fmt: skip


def gaussian_slopes(x_train, y_train, x_query, bandwidth, weights=None):
    """The gradient ``(k, d, p)`` of the Gaussian Nadaraya–Watson fit at ``x_query`` in
    float64 — the local-constant marginal effects without a program — or None where a
    row has no weight or a sum is not finite (scaled distances beyond the float range:
    the caller's exact path takes that limit). ``weights``: positive observation weights.

    For the Gaussian ``∂_j log K = (x_ij − x_j) / h_j²``, so the slope is the weighted
    covariance of the column and the responses, ``∂_j ĝ = Cov_α(x_j, y) / h_j²``: local
    linear's moments about each row's heaviest key (:func:`attnpool.sums.layer.solve`)."""
    x, y, q = (np.asarray(a, np.float64) for a in (x_train, y_train, x_query))
    h = np.asarray(bandwidth, np.float64)
    w = None if weights is None else np.asarray(weights, np.float64)
    scale = value_unit(y) if w is None else column_scale(y)
    model = model_for(x, kernel="gaussian", degree=1)
    problem = _problem(x, y / scale, q, h, model, w, None)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        found = layer.solve(NUMPY_PAIRS, problem)
        total = found.sums[:, 0]
        if not (np.all(total > 0) and np.all(np.isfinite(found.sums))):
            return None
        n, d, p = q.shape[0], x.shape[1], y.shape[1]
        means = found.sums[:, 1:] / total[:, None]
        y_bar, mu1 = means[:, :p], means[:, p : p + d]
        mu_dy = means[:, p + d + d * d :].reshape(n, d, p)
        covariance = mu_dy - mu1[:, :, None] * y_bar[:, None, :]  # in the moments' units
        return covariance * (problem.units / h / h)[..., None] * scale  # (h² of 1e±200: 0, ∞)
