"""The compiled bandwidth searches (and those by the host methods) behind
:func:`attnpool.select_bandwidth`.

The grid of multiples of the rule of thumb, then a descent on the log-bandwidths
(logits for categorical ``λ``) with gradients from JAX autodiff
(:mod:`attnpool.bandwidth.criteria`). Up to :data:`ONE_PROGRAM_ROWS` rows one program —
objective and gradient in the data's precision — serves the grid and the descent:
L-BFGS-B from the best grid point in one column, the host search's descent in several
(:func:`attnpool.bandwidth.search.host_search`, with its starts and its columns' limits
where they are smoothed out — L-BFGS-B's first steps leapt to bandwidths that overflow
and stopped it short of the optimum). Above, the grid is evaluated in vectorised chunks
and the descent starts in float32, then is polished in the data's precision, which also
gives the reported objective. One continuous column searches on a binned grid where
asked (``pooling="binned"``, approximate); ``pooling=`` a host method (``sparse``,
``fgt``, ``native``) searches on the host with that method's leave-one-out sums
(:mod:`attnpool.bandwidth.leave_one_out`).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from .._support.interop import compute_dtype, precision_scope
from .._support.shapes import MAX_ROWS, bucket, pad_rows, padded
from ..engines.local_fits import compiled_settings
from ..methods import binned, binned_traced, fgt, sparse
from ..methods.options import search_refusal
from ..methods.stream import KEY_BLOCK
from ..sums.local_model import LocalModel
from . import leave_one_out
from .criteria import (
    Criterion,
    curve_objectives,
    grid_objectives,
    objective,
    objective_and_gradient,
    refine,
)
from .grid import GRID, SearchLine, multipliers
from .search import (
    BandwidthSelection,
    Counted,
    SearchObjective,
    bandwidth_of,
    best_candidate,
    host_search,
    smoothed_out,
)
from .starts import best_of, profile_start

_CHUNK = 4
#: Candidate bandwidths × rows the binned grid search evaluates in one batch (memory).
BINNED_GRID_BATCH = 2**23
#: Kernels continuous enough for the binned search (its error falls as (Δ/h)²).
BINNED_KERNELS = binned.SMOOTH_KERNELS
#: Largest n² for which a binned search reports the exact (all-pairs) objective; above
#: it, compact kernels report the exact sparse objective and the others the binned one.
#: The Gaussian of a local-constant fit reports it through ``fgt`` from
#: :data:`EXPANSION_OBJECTIVE_MIN_PAIRS` on, at any size.
EXACT_OBJECTIVE_MAX_PAIRS = 2**34
EXPANSION_OBJECTIVE_MIN_PAIRS = 2**22


def search(
    x, y, weights, line: SearchLine, spec: Criterion, pooling: str, progress
) -> BandwidthSelection:
    """The compiled searches of ``spec`` from the grid of ``line``: ``pooling``
    ``"binned"`` on a binned grid, ``"dense"``, ``"stream"`` or ``"pallas"`` by that
    engine, the planner's ``"compiled"`` by the engine the planner's fit table takes.
    ``weights``: observation weights or None."""
    thetas = line.thetas
    dtype = np.dtype(compute_dtype(x, y, numpy=True))
    model, method = spec.model, spec.method
    reason = search_refusal(pooling, model, method)
    if reason:
        raise ValueError(f"pooling: {reason}")
    if pooling == "binned":
        return _select_binned(x, y, weights, thetas, dtype, spec, progress)
    engine, block_size = compiled_settings(pooling, spec.block_size)
    spec = spec._replace(engine=engine, block_size=block_size)
    limits = smoothed_out(x, model)  # (of the data, before any padding)
    count = None
    if x.shape[0] <= MAX_ROWS:  # rows padded to their bucket: the programs are reused
        count = np.int32(x.shape[0])
        x, y = padded(x, y, size=bucket(x.shape[0]))
        if weights is not None:
            weights = pad_rows(weights, x.shape[0])
    if x.shape[0] <= ONE_PROGRAM_ROWS or not _float32_resolves(thetas, model):
        return _search_one_program(x, y, count, weights, line, spec, progress, limits)
    total = len(thetas) // _CHUNK + 2
    # The coarse search and BFGS run in float32 (twice the exp throughput); the
    # final Newton steps and the reported objective use the data's own precision.
    x32, y32 = np.asarray(x, np.float32), np.asarray(y, np.float32)
    coarse_options = {"spec": spec, "weights": _cast(weights, np.float32)}
    options = {"spec": spec, "weights": _cast(weights, dtype)}
    objectives = []
    for done, chunk in enumerate(range(0, len(thetas), _CHUNK), start=1):
        rows = np.asarray(thetas[chunk : chunk + _CHUNK], np.float32)
        found = grid_objectives(rows, x32, y32, count, **coarse_options)
        objectives.extend(np.asarray(found).tolist())
        if progress:
            progress(done, total)
    objectives = np.array(objectives)
    best = best_candidate(thetas, objectives, method)
    coarse = Counted(lambda t: objective_and_gradient(t, x32, y32, count, **coarse_options))
    starts = profile_start(lambda t: _finite(coarse(t))[0], thetas, line.profiles, best,
                           objectives)  # fmt: skip
    theta, _ = _from_both(
        lambda start: refine(coarse, start, jnp.float32, tolerance=1e-6, maxiter=8),
        best, thetas, objectives, starts,
    )  # fmt: skip
    if progress:
        progress(total - 1, total)
    with precision_scope(dtype):
        xd, yd = np.asarray(x, dtype), np.asarray(y, dtype)
        precise = np.finfo(dtype).eps * 10
        fine = Counted(lambda t: objective_and_gradient(t, xd, yd, count, **options))
        theta, value = refine(fine, theta, dtype, tolerance=precise, maxiter=6)
        theta, value = _smoothed_out_where_wide(
            lambda t: float(fine(np.asarray(t, dtype))[0]), theta, value, limits
        )
        start_value = float(
            objective_and_gradient(np.asarray(best, dtype), xd, yd, count, **options)[0]
        )
        if not value <= start_value:  # never worse than the best grid point
            theta, value = best, start_value
    bandwidth = bandwidth_of(theta, model, dtype)
    if progress:
        progress(total, total)
    evaluations = len(thetas) + coarse.calls + fine.calls + 1
    return BandwidthSelection(
        bandwidth, float(value), method, (multipliers(len(thetas)), objectives), True, evaluations
    )


#: The smallest bandwidth, in search units (data within ``[−1, 1]``), that a float32
#: search resolves: its coordinates carry ``2⁻²⁴``, a ``2⁻¹²``-th of such a bandwidth.
FLOAT32_SMALLEST_BANDWIDTH = 2.0**-12


def _float32_resolves(thetas, model: LocalModel) -> bool:
    """Whether a float32 coarse search resolves every bandwidth of the grid ``thetas``
    (a far outlier's grid reaches below, where float32 holds a cluster as one point)."""
    continuous = list(model.continuous)
    return not continuous or float(np.min(thetas[:, continuous])) >= math.log(
        FLOAT32_SMALLEST_BANDWIDTH
    )


#: Padded rows up to which a search compiles one program (objective and gradient, in
#: the data's precision) and evaluates the grid with it point by point: below this the
#: arithmetic costs less than compiling the float32 and grid programs.
ONE_PROGRAM_ROWS = 2**10


def _search_one_program(
    x, y, count, weights, line: SearchLine, spec: Criterion, progress, limits
) -> BandwidthSelection:
    """The exact search of a small problem with one program (objective and gradient), in
    the data's precision: the grid, then in one column L-BFGS-B from its best point, in
    several the host's descent on the exact gradient
    (:func:`~attnpool.bandwidth.search.host_search`: from the grid's best point, the rule
    and ``line``'s profiles, toward each column's limit where it is smoothed out)."""
    thetas = line.thetas
    dtype = np.dtype(compute_dtype(x, y, numpy=True))
    options = {"spec": spec, "weights": _cast(weights, dtype)}
    with precision_scope(dtype):
        xd, yd = np.asarray(x, dtype), np.asarray(y, dtype)

        evaluate = Counted(
            lambda theta: objective_and_gradient(
                jnp.asarray(theta, dtype), xd, yd, count, **options
            )
        )
        if thetas.shape[1] > 1:
            search = SearchObjective(
                lambda t: _finite(evaluate(t))[0], lambda t: _finite(evaluate(t)), name=spec.method
            )
            theta, value, objectives = host_search(search, line, progress, limits=limits)
        else:
            theta, value, objectives = _descent_in_one_column(evaluate, thetas, dtype, spec,
                                                              progress, limits)  # fmt: skip
    bandwidth = bandwidth_of(theta, spec.model, dtype)
    if progress:
        progress(len(thetas) // _CHUNK + 1, len(thetas) // _CHUNK + 1)
    return BandwidthSelection(
        bandwidth,
        float(value),
        spec.method,
        (multipliers(len(thetas)), objectives),
        True,
        evaluate.calls,
    )


def _finite(found) -> tuple[float, np.ndarray | None]:
    """A program's ``(objective, gradient)`` for the host's descent: the objective ``inf``
    where it is undefined, the gradient None where it is not finite."""
    value, gradient = float(found[0]), np.asarray(found[1], np.float64)
    if not np.isfinite(value):
        return math.inf, None
    return value, gradient if np.all(np.isfinite(gradient)) else None


def _descent_in_one_column(evaluate, thetas, dtype, spec: Criterion, progress, limits):
    """``(θ, objective, grid objectives)``: :func:`_search_one_program`'s grid and
    L-BFGS-B from its best point in one column."""
    objectives = np.empty(len(thetas))
    for i, theta in enumerate(thetas):
        objectives[i] = float(evaluate(theta)[0])
        if progress and (i + 1) % _CHUNK == 0:
            progress((i + 1) // _CHUNK, len(thetas) // _CHUNK + 1)
    best = best_candidate(thetas, objectives, spec.method)
    theta, value = refine(evaluate, best, dtype, tolerance=np.finfo(dtype).eps * 10, maxiter=14)
    if limits is not None:
        theta, value = _smoothed_out_where_wide(
            lambda t: float(evaluate(t)[0]), theta, value, limits
        )
    start_value = float(np.nanmin(np.where(np.isfinite(objectives), objectives, np.nan)))
    if not value <= start_value:  # never worse than the best grid point
        theta, value = best, start_value
    return theta, value, objectives


def _select_binned(x, y, weights, thetas, dtype, spec: Criterion, progress) -> BandwidthSelection:
    """CV for one continuous column: grid and L-BFGS on the binned objective
    (``pooling="binned"``; ``auto`` never takes it).

    An approximation: with 16 grid nodes per bandwidth each row's binned sums are close
    to the exact ones, but the leave-one-out fit of a row a tail leaves nearly alone
    (its other keys far in bandwidths) comes out of a few far keys' binned moments, and
    such rows can move the optimum (local linear: 1.4× at 5000 normal rows) or make the
    criterion infinite where it is finite. The reported objective is exact (``fgt`` for the
    Gaussian from ``n² ≥`` :data:`EXPANSION_OBJECTIVE_MIN_PAIRS`, all pairs up to
    :data:`EXACT_OBJECTIVE_MAX_PAIRS`, sparse for compact kernels above), else binned.
    ``weights``: observation weights (or merged repeated rows), multiplying each row's
    binned features; the reported objective is then the exact weighted one. The grid's
    steps below the rule of thumb (a far outlier's, :mod:`attnpool.bandwidth.grid`) are
    searched where a grid of :data:`attnpool.methods.binned.MAX_NODES` nodes over the
    data's range resolves them (``auto`` searches exactly where it does not).
    """
    candidates = np.exp(thetas[:, 0])
    if len(thetas) > len(GRID) and not binned.resolves(x[:, :1], float(candidates.min())):
        thetas = thetas[-len(GRID) :]  # (a far outlier's steps below: beyond a binned grid)
        candidates = np.exp(thetas[:, 0])
    grid = binned.grid_for(x[:, :1], float(candidates.min()))
    reach = binned.reach_for(spec.model.kernel, float(candidates.max()), grid)
    plan, count, xb, yb = binned_traced.BinnedPlan(grid, reach), None, x, y
    if x.shape[0] <= MAX_ROWS:  # rows and grid padded to buckets (padding bins nothing)
        plan, count = binned_traced.BinnedPlan.bucketed(grid, reach), np.int32(x.shape[0])
        xb, yb = padded(x, y, size=bucket(x.shape[0]))
    if spec.model.degree == 0 and not spec.model.kernel.compact:
        # (local linear's limit is a line through far keys; a compact kernel's, none)
        nearest = nearest_other_responses(x[:, 0], np.reshape(y, (len(x), -1)), weights)
        plan.nearest = np.asarray(pad_rows(nearest, xb.shape[0]), np.float64)
    wb = None if weights is None else np.asarray(pad_rows(weights, xb.shape[0]), np.float64)
    approximate = {"spec": spec, "binned": plan, "weights": wb}
    with precision_scope(np.float64):
        xb, yb = np.asarray(xb, np.float64), np.asarray(yb, np.float64)
        # candidates at once, as many as keep the batched (candidates, n) arrays small
        chunk = int(np.clip(BINNED_GRID_BATCH // x.shape[0], 1, len(thetas)))
        objectives = np.concatenate(
            [
                np.asarray(
                    grid_objectives(
                        np.asarray(thetas[i : i + chunk], np.float64), xb, yb, count, **approximate
                    )
                )
                for i in range(0, len(thetas), chunk)
            ]
        )
        best = best_candidate(thetas, objectives, "cv")
        bounds = [(float(thetas[0, 0]), float(thetas[-1, 0]))]
        refined = Counted(lambda t: objective_and_gradient(t, xb, yb, count, **approximate))
        theta, _ = refine(
            refined,
            best,
            jnp.float64,
            tolerance=1e-13,
            maxiter=50,
            bounds=bounds,
        )
    if progress:
        progress(2, 3)
    bandwidth = bandwidth_of(theta, spec.model, dtype)
    value, exact = _reported_objective(x, y, weights, theta, dtype, spec)
    if value is None:
        with precision_scope(np.float64):
            value = float(objective(np.asarray(theta, np.float64), xb, yb, count, **approximate))
        exact = False
    if not np.isfinite(value):  # (as the exact searches say it: some row has no neighbour)
        raise ValueError(
            f"bandwidth: the cv criterion is undefined at the binned search's bandwidth "
            f"{float(bandwidth[0]):.4g}: some point has no other within the "
            f"{spec.model.kernel.name!r} kernel's support there (an isolated point?); use "
            "an unbounded kernel such as 'gaussian', or give the bandwidth"
        )
    if progress:
        progress(3, 3)
    evaluations = len(thetas) + refined.calls + 1  # the grid, the refinement, the report
    grid = (multipliers(len(thetas)), objectives)
    return BandwidthSelection(bandwidth, value, "cv", grid, exact, evaluations)


def nearest_other_responses(x: np.ndarray, y: np.ndarray, weights=None) -> np.ndarray:
    """``(n, p)``: each row's nearest-key limit left out — the response of the nearest
    other row of the one column ``x (n,)``, two at the same distance averaged (by their
    ``weights``): the binned search's fit of a row with no key within the kernel's
    reach, as the exact sums' limit where every weight underflows."""
    order = np.argsort(x, kind="stable")
    ordered, responses = x[order], y[order]
    share = np.ones(x.shape[0]) if weights is None else np.asarray(weights, np.float64)[order]
    gaps = np.diff(ordered)
    left, right = np.r_[np.inf, gaps], np.r_[gaps, np.inf]
    rows = np.arange(x.size)
    from_left = np.where(left <= right, share[np.maximum(rows - 1, 0)], 0.0)[:, None]
    from_right = np.where(right <= left, share[np.minimum(rows + 1, x.size - 1)], 0.0)[:, None]
    below = np.r_[responses[:1], responses[:-1]]
    above = np.r_[responses[1:], responses[-1:]]
    out = np.empty_like(responses)
    out[order] = (from_left * below + from_right * above) / (from_left + from_right)
    return out


def _reported_objective(x, y, weights, theta, dtype, spec: Criterion):
    """``(objective, True)`` computed exactly where a way applies, else ``(None, False)``
    (with ``weights``, by all pairs only: the host methods' sums take none)."""
    model = spec.model
    pairs, local_constant = x.shape[0] ** 2, model.degree == 0 and weights is None
    if local_constant and fgt.supports(model.kernel) and pairs >= EXPANSION_OBJECTIVE_MIN_PAIRS:
        value = leave_one_out.cv_objective("fgt", x, y, model.kernel)(np.asarray(theta))
        if value is not None:
            return value, True
    if local_constant and sparse.supports(model.kernel) and pairs > EXACT_OBJECTIVE_MAX_PAIRS:
        return leave_one_out.cv_objective("sparse", x, y, model.kernel)(np.asarray(theta)), True
    if pairs <= EXACT_OBJECTIVE_MAX_PAIRS:
        count = None
        if x.shape[0] <= MAX_ROWS:
            count = np.int32(x.shape[0])
            x, y = padded(x, y, size=bucket(x.shape[0]))
            weights = None if weights is None else pad_rows(weights, x.shape[0])
        with precision_scope(dtype):
            t, xd, yd = (np.asarray(a, dtype) for a in (theta, x, y))
            return float(
                objective(t, xd, yd, count, spec=spec, weights=_cast(weights, dtype))
            ), True
    return None, False


def exact_cv(theta, x, y, model: LocalModel, method: str) -> float:
    """The criterion at ``θ`` on the exact streamed program in float64: a bandwidth a host
    backend's leave-one-out sums leave (:mod:`attnpool.bandwidth.leave_one_out`)."""
    with precision_scope(np.float64):
        t, xd, yd = (np.asarray(a, np.float64) for a in (theta, x, y))
        return float(objective(t, xd, yd, spec=Criterion(model, method, KEY_BLOCK)))


def criterion_curve(
    x, y, candidates, model: LocalModel, block_size, method: str, weights=None
) -> np.ndarray:
    """The criterion ``method`` (``"cv"`` or ``"aicc"``) at bandwidths ``candidates (k, d)``:
    :func:`attnpool.cv_curve` and :func:`attnpool.aicc_curve`."""
    dtype = compute_dtype(x, y, numpy=True)
    with precision_scope(dtype):
        values = curve_objectives(
            *(jnp.asarray(a, dtype) for a in (candidates, x, y)),
            _cast(weights, dtype),
            spec=Criterion(model, method, block_size),
        )
        return np.asarray(values, dtype=float)


def _from_both(local_search, best, thetas, objectives, starts):
    """:func:`attnpool.bandwidth.starts.best_of` in several columns (one column's grid
    already covers its line)."""
    if thetas.shape[1] == 1:
        return local_search(best)
    return best_of(local_search, thetas, objectives, starts)


def _smoothed_out_where_wide(objective, theta, value, limits):
    """``(θ, objective)`` with the columns the descent left wide (beyond their ``wide``
    limit, where the gradient has all but vanished) tried at their ``flat`` limit —
    smoothed out (:func:`attnpool.bandwidth.search.smoothed_out`) — kept where lower."""
    wide, flat = limits
    theta = np.asarray(theta, np.float64)
    rising = np.isfinite(flat) & (theta >= wide)
    if not rising.any():
        return theta, value
    trial = np.where(rising, flat, theta)
    trial_value = objective(trial)
    return (trial, trial_value) if trial_value <= value else (theta, value)


def _cast(weights, dtype):
    """Observation weights in the search's precision (None stays None)."""
    return None if weights is None else np.asarray(weights, dtype)
