"""The NumPy engine: exact local regression and pooling for problems too small to pay
for a program.

Building a program costs more than a small problem (one leave-one-out evaluation at
n = 500 is milliseconds in NumPy): up to :data:`NUMPY_MAX_WORK` pair-features the
estimators' predictions, small CV searches and pooling of NumPy float64 arrays run here,
in float64: offsets ``(k − q) / h`` from the unscaled rows (the
difference first, so keys equally far from a query stay tied at any bandwidth, and a
compact kernel's edge is decided by :func:`attnpool.edges.inside_exactly`, as on every
path); log weights ``log K(r²)`` shifted by each row's largest; the local moments; the
local linear solve with unit diagonal and a relative ridge. A row with no weight
(``−inf`` log weights everywhere) is empty, and under ``nearest`` takes the mean
response of its nearest training points (ties averaged), from differences weighted by
``min h / h_j`` and each row's largest, so that distances cannot overflow. Response
columns near the float limit are divided by a power of two before they are summed
(:func:`attnpool._units.value_unit`, as pooling does), so huge ones do not overflow.

It serves continuous columns with a built-in kernel (profiles in NumPy), the rest going
to the compiled engines. Gaussian leave-one-out sums run on the ``native`` C loop where
a compiler is there (:func:`loo_objective`): such searches stay here in several columns.
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from .._units import midrange, value_unit
from .._validation import check_bandwidth_representable, numpy_dtype
from ..edges import edge_log_profile, has_edge
from ..local_model import LocalModel, model_for, solve_moments
from ..observation_weights import augmented

__all__ = [
    "NATIVE_MIN_WORK",
    "NATIVE_MIN_WORK_SEVERAL",
    "NATIVE_POOL_MIN_PAIRS",
    "NATIVE_SEARCH_MAX_WORK",
    "NUMPY_MAX_WORK",
    "NUMPY_SEARCH_MAX_WORK",
    "NUMPY_SEARCH_MAX_WORK_SEVERAL",
    "gaussian_slopes",
    "local_fit",
    "loo_objective",
    "pool_if_served",
    "searches",
    "serves",
]

#: Largest pairs × features (one per response, local moments for degree 1) the NumPy
#: engine takes: its time per evaluation there is ~10 ms on two cores, so a search of a
#: few dozen evaluations costs less than building and loading its programs.
NUMPY_MAX_WORK = 2**22
#: Largest rows² × features the NumPy engine's CV search takes (one column): ~45
#: evaluations at up to ~50 ms, still cheaper than importing JAX and building programs.
NUMPY_SEARCH_MAX_WORK = 2**21
#: The same in several columns: L-BFGS's 25–450 evaluations of ~1–10 ms at most,
#: still less than JAX and a program.
NUMPY_SEARCH_MAX_WORK_SEVERAL = 2**19
#: Pairs evaluated at once (memory: a few arrays of this many float64 numbers).
NUMPY_CHUNK_PAIRS = 2**18


def serves(model: LocalModel, queries: int, rows: int, outputs: int) -> bool:
    """Whether this engine takes a fit of ``queries`` × ``rows`` pairs for ``model``."""
    continuous = set(model.var_type) == {"c"}
    small = queries * rows * _width(model, outputs) <= NUMPY_MAX_WORK
    takes_numpy = kernels.is_builtin(model.kernel) or model.kernel.host
    return takes_numpy and continuous and small


def searches(model: LocalModel, rows: int, outputs: int, *, weighted: bool = False) -> bool:
    """Whether the host runs the CV search of ``rows`` training points: with the Gaussian
    on the compiled C loop (:func:`loo_objective`) at any size in several columns (the
    compiled search sums every pair there too, ~2× slower a pair, and needs JAX and its
    programs) and up to :data:`NATIVE_SEARCH_MAX_WORK` in one (beyond, the compiled
    search bins); else NumPy up to :data:`NUMPY_SEARCH_MAX_WORK` rows² × features in
    one column, where bounded Brent needs ~30 evaluations, and
    :data:`NUMPY_SEARCH_MAX_WORK_SEVERAL` in several, where L-BFGS on forward
    differences needs 25–450. Weighted searches (observation weights) run in NumPy only."""
    if not weighted and _native_serves(model, rows, outputs):
        several = len(model.var_type) > 1
        return several or rows * rows * _evaluations(model) <= NATIVE_SEARCH_MAX_WORK
    limit = NUMPY_SEARCH_MAX_WORK if len(model.var_type) == 1 else NUMPY_SEARCH_MAX_WORK_SEVERAL
    return serves(model, rows, rows, outputs) and rows * rows * _width(model, outputs) <= limit


def _width(model: LocalModel, outputs: int) -> int:
    d = len(model.var_type)
    return outputs if model.degree == 0 else (1 + d) ** 2 * outputs


def pool_if_served(q, k, v, h, kernel: kernels.Kernel, *, nearest: bool):
    """``(pooled (n, p), empty (n,))`` of a small pool on NumPy float64 (or integer)
    arrays, no program and no JAX (the textbook's 40 points pool in milliseconds); None
    where this engine does not serve it: JAX arrays, float32 or narrower data (which
    compute in their own precision, compiled), the ``dot`` kernel, a kernel record of
    the user's whose profile takes only JAX arrays (a callable's takes NumPy too), more
    than :data:`NUMPY_MAX_WORK` pairs × columns."""
    if not all(isinstance(a, np.ndarray) for a in (q, k, v, h)) or q.shape[0] == 0:
        return None
    if numpy_dtype(q, k, v) != np.float64 or kernel.similarity != "distance":
        return None
    model = model_for(k, kernel=kernel)
    if not serves(model, q.shape[0], k.shape[0], v.shape[1]):
        return None
    check_bandwidth_representable(h, np.float64)  # as the compiled path does
    pooled, _, empty_rows = local_fit(k, v, q, h, model, nearest=nearest)
    return pooled, empty_rows


def local_fit(x_train, y_train, x_query, bandwidth, model: LocalModel, *, exclude_self=False,
              nearest=False, weights=None):  # fmt: skip
    """``fit (k, p)``, ``slopes (k, d, p)`` in the inputs' units and the empty-row mask
    ``(k,)``, as :func:`attnpool.engines.local_fits.local_fit` (``exclude_self``: leave-one-out,
    ``x_query`` is ``x_train``; an empty row is NaN there; ``weights``: positive observation
    weights, :mod:`attnpool.observation_weights`)."""
    x, y, q = (np.asarray(a, np.float64) for a in (x_train, y_train, x_query))
    h = np.asarray(bandwidth, np.float64)
    w = None if weights is None else np.asarray(weights, np.float64)
    # distances beyond the float range are inf (log weight −inf): no warning for them
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _fit(x, y, q, h, model, exclude_self, nearest, w)


def _fit(x, y, q, h, model, exclude_self, nearest, w):
    """:func:`local_fit` in float64."""
    scale = value_unit(y)  # columns near the float limit in power-of-two units
    y = y / scale
    d, p = x.shape[1], y.shape[1]
    pooled = None if exclude_self else _native_pool(x, y, q, h, model, w)
    if pooled is not None:
        return pooled * scale, np.zeros((q.shape[0], d, p)), np.zeros(q.shape[0], bool)
    fit, slopes = np.empty((q.shape[0], p)), np.empty((q.shape[0], d, p))
    empty = np.empty(q.shape[0], bool)
    rows_per_chunk = max(1, NUMPY_CHUNK_PAIRS // max(1, x.shape[0]))
    for start in range(0, q.shape[0], rows_per_chunk):
        rows = slice(start, start + rows_per_chunk)
        means, empty[rows], mean_offset = _moments(
            q[rows], x, h, y, model, start if exclude_self else None, w
        )
        fit[rows], slopes[rows], _ = solve_moments(means, d, p, model.degree, mean_offset)
    slopes = slopes / h[None, :, None]
    if exclude_self:
        fit[empty] = np.nan
    else:
        fallback = ~np.all(np.isfinite(fit), axis=1) & ~empty
        fallback |= empty & nearest
        if np.any(fallback):
            fit[fallback] = _nearest_mean(q[fallback], x, y, h, w)
        if not nearest:
            fit[empty] = np.nan
    return fit * scale, slopes * scale, empty


#: Fewest pairs from which a Nadaraya–Watson fit with the Gaussian runs on the
#: ``native`` loop once it is built (~2 ns a pair on two cores, NumPy ~40): a fixed-
#: bandwidth fit of 1000 rows at 1000 queries took 40 ms in NumPy, 4 ms compiled.
NATIVE_POOL_MIN_PAIRS = 2**18


def _native_pool(x, y, q, h, model: LocalModel, w=None):
    """Nadaraya–Watson fits ``(k, p)`` on the ``native`` loop, or None where it does not
    serve: not the Gaussian on continuous columns, fewer than
    :data:`NATIVE_POOL_MIN_PAIRS`, the loop not built (no build here), coordinates
    beyond ``native.MAX_SCALED`` bandwidths of the keys' midrange, or a sum not
    finite (NumPy then takes the call, nearest-key limit included)."""
    gaussian = kernels.is_gaussian(model.kernel) and set(model.var_type) == {"c"}
    if model.degree != 0 or not gaussian or q.shape[0] * x.shape[0] < NATIVE_POOL_MIN_PAIRS:
        return None
    from ..methods import native

    if y.shape[1] > native.MAX_VALUES or not native.ready(True, x.shape[1], y.shape[1]):
        return None
    centre = midrange(x)
    keys, queries = x - centre, q - centre
    reach = np.maximum(np.max(np.abs(keys), axis=0), np.max(np.abs(queries), axis=0))
    if np.any(reach / h > native.MAX_SCALED):
        return None
    if w is None:
        sums = native.native_sums(queries, keys, y, 1.0 / h)
    else:  # the sums of [w, w·y] (:mod:`attnpool.observation_weights`)
        sums = native.native_sums(queries, keys, augmented(y, w), 1.0 / h)[:, 1:]
    pooled = sums[:, 1:] / sums[:, :1]
    return pooled if np.all(np.isfinite(pooled)) else None


def _moments(queries, keys, h, y, model: LocalModel, self_offset, key_weights=None):
    """Weighted means of the responses per query, the empty-row mask and, for degree 1,
    the weighted mean offset ``μ`` (``(n, d)``, in bandwidths; else None). Degree 1
    returns the local moments about the weighted mean point: ``[ȳ, 0, Cov(δ), Cov(δ, y)]``.
    ``self_offset``: query ``i`` is key ``self_offset + i`` and is left out (all of its
    weight, with observation weights ``key_weights``: :mod:`attnpool.observation_weights`).

    Offsets are ``(k − q) / h`` of the rows as given, the difference first: scaled first,
    two keys equally far from a query at a tiny bandwidth were no longer tied (scaled
    coordinates round at ``eps·|x / h|``), and a compact kernel's edge could be decided
    otherwise than on the other paths."""
    offsets = [(keys[None, :, a] - queries[:, a, None]) / h[a] for a in range(h.shape[0])]
    if has_edge(model.kernel):  # the support's edge decided exactly, as on every path
        log_w = edge_log_profile(offsets, model.kernel)
    else:
        r2 = offsets[0] * offsets[0]
        for offset in offsets[1:]:
            r2 += offset * offset
        log_w = model.kernel.log_profile(r2)
    factors = None  # observation weights multiply after the shift (see local_fits)
    if key_weights is not None:
        factors = np.broadcast_to(key_weights[None, :], log_w.shape).copy()
    if self_offset is not None:
        own = np.arange(queries.shape[0])  # the whole row, all of its weight
        log_w[own, self_offset + own] = -np.inf
    top = np.max(log_w, axis=1)
    empty = ~(top > -np.inf)
    w = np.exp(np.subtract(log_w, np.where(empty, 0.0, top)[:, None], out=log_w), out=log_w)
    if factors is not None:
        w *= factors
    total = w.sum(axis=1)
    safe = np.where(empty, 1.0, total)[:, None]
    if model.degree == 0:
        return (w @ y) / safe, empty, None
    # Two passes: the weighted mean offset first, then the covariances about it. In one
    # pass, E[δδᵀ] − E[δ]E[δ]ᵀ cancels to rounding once one key carries nearly all the
    # weight (a small bandwidth): the local slope came out of that rounding.
    n, d, p = queries.shape[0], queries.shape[1], y.shape[1]
    y_bar = (w @ y) / safe
    mu1 = np.stack([np.einsum("nk,nk->n", w, o) for o in offsets], axis=1) / safe
    centred = [o - mu1[:, a, None] for a, o in enumerate(offsets)]
    covariance = np.empty((n, d, d))
    cross = np.empty((n, d, p))
    for a in range(d):
        weighted = w * centred[a]
        # Σ w (δ − μ)(y − ȳ) = Σ w (δ − μ) y − ȳ Σ w (δ − μ), the second ~ rounding
        cross[:, a] = (weighted @ y - y_bar * weighted.sum(axis=1)[:, None]) / safe
        for b in range(a, d):
            value = np.einsum("nk,nk->n", weighted, centred[b]) / safe[:, 0]
            covariance[:, a, b] = covariance[:, b, a] = value
    # moments about the weighted mean point (its mean offset is 0), which lies μ from the query
    means = np.concatenate(
        [y_bar, np.zeros((n, d)), covariance.reshape(n, d * d), cross.reshape(n, d * p)], axis=1
    )
    return means, empty, mu1


def gaussian_slopes(x_train, y_train, x_query, bandwidth, weights=None):
    """The gradient ``(k, d, p)`` of the Gaussian Nadaraya–Watson fit at ``x_query``,
    ``∂_j ĝ = Σ_i α_i u_ij (y_i − ĝ) / h_j`` with ``u = (x_i − x) / h``, in float64 — the
    local-constant marginal effects without a program — or None where a row's weights
    are not finite (scaled distances beyond the float range: the caller's exact path
    takes that limit). ``weights``: positive observation weights."""
    x, y, q = (np.asarray(a, np.float64) for a in (x_train, y_train, x_query))
    h = np.asarray(bandwidth, np.float64)
    y = y - y.mean(axis=0)  # the slopes do not see the mean; the sums then cancel less
    slopes = np.empty((q.shape[0], x.shape[1], y.shape[1]))
    rows_per_chunk = max(1, NUMPY_CHUNK_PAIRS // max(1, x.shape[0]))
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, q.shape[0], rows_per_chunk):
            rows = slice(start, start + rows_per_chunk)
            offsets = [(x[None, :, a] - q[rows, a, None]) / h[a] for a in range(h.shape[0])]
            log_w = -0.5 * sum(u * u for u in offsets)
            if weights is not None:
                log_w += np.log(weights)[None, :]
            alpha = np.exp(log_w - np.max(log_w, axis=1, keepdims=True))
            alpha /= alpha.sum(axis=1, keepdims=True)
            if not np.all(np.isfinite(alpha)):
                return None
            fit = alpha @ y
            for a, u in enumerate(offsets):
                moved = alpha * u
                slopes[rows, a] = (moved @ y - fit * moved.sum(axis=1)[:, None]) / h[a]
    return slopes


def _nearest_mean(queries, keys, y, h, w=None):
    """Mean response of each query's nearest keys (ties averaged, in proportion to the
    observation weights ``w`` if given), from differences weighted by ``min h / h_j ≤ 1``."""
    factor = np.min(h) / h
    differences = [(queries[:, j, None] - keys[None, :, j]) * factor[j] for j in range(len(h))]
    # each row in units of its largest difference: squares of 1e200 would overflow
    largest = np.max([np.max(np.abs(u), axis=1) for u in differences], axis=0)
    largest = np.where((largest > 0) & np.isfinite(largest), largest, 1.0)[:, None]
    r2 = sum((u / largest) ** 2 for u in differences)
    closest = (r2 == r2.min(axis=1, keepdims=True)).astype(float)
    if w is not None:
        closest *= w[None, :]
    return closest @ y / closest.sum(axis=1, keepdims=True)


def loo_objective(x, y, model: LocalModel, weights=None):
    """``θ (d,) → float``: the leave-one-out CV objective at bandwidths ``exp(θ)``,
    ``inf`` where some point has no neighbour left. With positive observation ``weights``
    (NumPy only) each point is left out whole and its squared residual counts ``w_i``
    times (:mod:`attnpool.observation_weights`).

    With the Gaussian and at least :data:`NATIVE_MIN_WORK` (one column) or
    :data:`NATIVE_MIN_WORK_SEVERAL`, or once the loop is built, the sums run on the
    compiled loop of the ``native`` method where a C compiler is there (each row's own
    pair masked inside the loop; ~10–20× NumPy's speed), on rows centred on their
    midrange: Nadaraya–Watson's weighted responses, local linear's moments about each
    row's heaviest key (as the compiled engines take them). An evaluation it cannot
    settle (scaled coordinates beyond ``native.MAX_SCALED``, where their differences
    would lose digits, or a sum not finite) runs in NumPy.
    """
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    native = None
    if weights is None and _native_serves(model, *y.shape):
        from .native_search import NativeObjective

        native = NativeObjective(x, y, model)

    def objective(theta) -> float:
        value = None if native is None else native.value(np.exp(theta))
        if value is None:
            fit, _, _ = local_fit(x, y, x, np.exp(theta), model, exclude_self=True, weights=weights)
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


#: Fewest pairs × expected evaluations for which a leave-one-out search of one column
#: builds the compiled loop (below, NumPy's ~0.1 s beats building it, ~1 s; once built,
#: any size runs there): Nadaraya–Watson from n = 324, local linear from 187.
NATIVE_MIN_WORK = 2**22
#: The same in several columns, where NumPy's evaluations cost more and a search takes
#: more of them (Nadaraya–Watson from n = 133 in two columns and 94 in five; local
#: linear from 77 and 54): a new data size then costs ~0.01 s, not 0.1–0.2 s.
NATIVE_MIN_WORK_SEVERAL = 2**20
#: Most pairs × expected evaluations (:func:`_evaluations`) a host search of one column
#: takes on the compiled loop: ~0.2 s at ~1.5 ns a pair on two cores (n ≤ 1832 for
#: Nadaraya–Watson, 1057 for local linear). Beyond, the compiled search on a binned
#: grid wins once its programs are in the cache: at n = 5000 it took 0.07 s a search in
#: a warm process where the host's took 1.4 s (2^30 here made that the steady state,
#: 44× statsmodels instead of 563×), and a first fit with a warm cache costs JAX's
#: import, ~1 s, more.
NATIVE_SEARCH_MAX_WORK = 2**27


def _native_serves(model: LocalModel, rows: int, outputs: int) -> bool:
    """Whether leave-one-out sums of ``rows`` points run on the ``native`` loop: the
    Gaussian, continuous columns, a C compiler (and for local linear, whose moments it
    sums for up to ``MAX_VALUES`` responses at once, no more responses); from
    :data:`NATIVE_MIN_WORK` (:data:`NATIVE_MIN_WORK_SEVERAL` in several columns), or at
    any size once the loop is in the cache."""
    if not kernels.is_gaussian(model.kernel) or set(model.var_type) != {"c"}:
        return False
    from ..methods import native

    if model.degree == 1 and outputs > native.MAX_VALUES:
        return False
    variant = (True, len(model.var_type), min(outputs, native.MAX_VALUES))
    if native.ready(*variant):
        return True
    least = NATIVE_MIN_WORK if len(model.var_type) == 1 else NATIVE_MIN_WORK_SEVERAL
    return rows**2 * _evaluations(model) >= least and native.available(*variant)


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
