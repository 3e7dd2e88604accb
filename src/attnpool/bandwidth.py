"""Bandwidth selection: rules of thumb, leave-one-out cross-validation and AICc.

- ``"scott"``, ``"silverman"``: rules of thumb (:mod:`attnpool.rules`);
- ``"cv"``: least-squares leave-one-out cross-validation,
  ``CV(h) = (1/n) Σ_i (y_i − ĝ₋ᵢ(x_i))²``, each point's own pair masked inside the
  streamed blocks (no refits, never an ``n × n`` matrix for large ``n``);
- ``"aicc"``: Hurvich, Simonoff & Tsai (1998),
  ``log σ̂² + (1 + tr H / n) / (1 − (tr H + 2) / n)``, ``H`` the smoother matrix.

The search finds the global minimum of the criterion over a wide range, not the
nearest local one: a coarse grid of multiples of the rule of thumb, then L-BFGS-B on
the log-bandwidths (logits for categorical ``λ``) with gradients from JAX autodiff,
started from the best grid point (:mod:`attnpool.criteria`). Up to
:data:`ONE_PROGRAM_ROWS` rows one program — objective and gradient in the data's
precision — serves the grid and the descent; above, the grid is evaluated in vectorised
chunks and the descent starts in float32, then is polished in the data's precision,
which also gives the reported objective. A bandwidth at which some point has no
neighbour (compact kernels) scores ``inf``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from . import host_cv, kernels, numpy_engine
from ._interop import compute_dtype, precision_scope
from ._shapes import MAX_ROWS, bucket, padded
from ._units import SearchUnits
from ._validation import check_choice, check_points, check_values
from .criteria import grid_objectives, objective, objective_and_gradient, refine
from .host_search import GRID, bandwidth_of, best_candidate, host_search, to_theta
from .methods import binned, expansion, sparse
from .methods.stream import KEY_BLOCK
from .regression import LocalModel, model_for
from .rules import rule_of_thumb

__all__ = ["BandwidthSelection", "cv_curve", "rule_of_thumb", "select_bandwidth"]

METHODS = ("cv", "aicc", "scott", "silverman")
#: How the search pools (``pooling=``): ``auto`` binned for one continuous column and
#: n ≥ BINNED_MIN_ROWS, exact otherwise; ``dense``/``stream`` exact (``stream`` forces
#: streamed key blocks); ``binned`` one continuous column; ``sparse`` compact kernels.
POOLINGS = ("auto", "dense", "stream", "binned", "sparse")
_CHUNK = 4
#: One continuous column and at least this many rows: CV is searched on a binned grid.
BINNED_MIN_ROWS = 1000
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
#: Log-bandwidth tolerance of the NumPy engine's search (smooth objectives: Brent's
#: parabolas reach it in a few more evaluations).
NUMPY_SEARCH_XATOL = 1e-8


class BandwidthSelection(NamedTuple):
    """Result of :func:`select_bandwidth`.

    Attributes: ``bandwidth (d,)``; ``objective`` (the criterion there; NaN for rules
    of thumb); ``method``; ``grid`` — the coarse search's multipliers of the
    rule of thumb and their objectives (empty for rules of thumb); ``exact`` — False
    when ``objective`` is the binned approximation (a binned search of a smooth
    kernel above :data:`EXACT_OBJECTIVE_MAX_PAIRS`).
    """

    bandwidth: np.ndarray
    objective: float
    method: str
    grid: tuple[np.ndarray, np.ndarray]
    exact: bool = True


def _select_binned(x, y, model, thetas, dtype, options, progress) -> BandwidthSelection:
    """CV for one continuous column: grid and L-BFGS on the binned objective.

    With 16 grid nodes per bandwidth the binned objective's optimum lies within about
    1e-5 (relative) of the exact one; the reported objective is exact (``fgt`` for the
    Gaussian from ``n² ≥`` :data:`EXPANSION_OBJECTIVE_MIN_PAIRS`, all pairs up to
    :data:`EXACT_OBJECTIVE_MAX_PAIRS`, sparse for compact kernels above), else binned.
    """
    candidates = np.exp(thetas[:, 0])
    grid = binned.grid_for(x[:, :1], float(candidates.min()))
    reach = binned.reach_for(model.kernel, float(candidates.max()), grid)
    plan, count, xb, yb = binned.BinnedPlan(grid, reach), None, x, y
    if x.shape[0] <= MAX_ROWS:  # rows and grid padded to buckets (padding bins nothing)
        plan, count = binned.BinnedPlan.bucketed(grid, reach), np.int32(x.shape[0])
        xb, yb = padded(x, y, size=bucket(x.shape[0]))
    approximate = {**options, "binned": plan}
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
        theta, _ = refine(
            lambda t: objective_and_gradient(t, xb, yb, count, **approximate),
            best,
            jnp.float64,
            tolerance=1e-13,
            maxiter=50,
            bounds=bounds,
        )
    if progress:
        progress(2, 3)
    bandwidth = bandwidth_of(theta, model, dtype)
    value, exact = _reported_objective(x, y, theta, bandwidth, model, dtype, options)
    if value is None:
        with precision_scope(np.float64):
            value = float(objective(np.asarray(theta, np.float64), xb, yb, count, **approximate))
        exact = False
    if progress:
        progress(3, 3)
    return BandwidthSelection(bandwidth, value, "cv", (GRID, objectives), exact)


def _reported_objective(x, y, theta, bandwidth, model: LocalModel, dtype, options):
    """``(objective, True)`` computed exactly where a way applies, else ``(None, False)``."""
    pairs, local_constant = x.shape[0] ** 2, model.degree == 0
    if (
        local_constant
        and expansion.supports(model.kernel)
        and pairs >= EXPANSION_OBJECTIVE_MIN_PAIRS
    ):
        value = host_cv.expansion_cv(x, y, float(bandwidth[0]))
        if value is not None:
            return value, True
    if local_constant and sparse.supports(model.kernel) and pairs > EXACT_OBJECTIVE_MAX_PAIRS:
        return host_cv.sparse_cv(x, y, model.kernel)(np.asarray(theta)), True
    if pairs <= EXACT_OBJECTIVE_MAX_PAIRS:
        count = None
        if x.shape[0] <= MAX_ROWS:
            count = np.int32(x.shape[0])
            x, y = padded(x, y, size=bucket(x.shape[0]))
        with precision_scope(dtype):
            t, xd, yd = (np.asarray(a, dtype) for a in (theta, x, y))
            return float(objective(t, xd, yd, count, **options)), True
    return None, False


def _select_sparse(x, y, model: LocalModel, thetas, method: str, progress):
    """Exact LOO CV of a local-constant fit with a compact kernel, neighbourhoods only."""
    if not (
        method == "cv"
        and model.degree == 0
        and set(model.var_type) == {"c"}
        and sparse.supports(model.kernel)
    ):
        raise ValueError(
            "pooling: 'sparse' searches CV bandwidths of a local-constant fit (degree=0) of "
            "continuous columns with a compact kernel; received "
            f"method={method!r}, degree={model.degree}, var_type={model.var_type!r}, "
            f"kernel={model.kernel.name!r}"
        )
    return _select_on_host(host_cv.sparse_cv(x, y, model.kernel), thetas, progress)


def _select_on_host(objective, thetas, progress, **options) -> BandwidthSelection:
    """CV by an objective ``θ → float`` computed on the host (no gradient)."""
    theta, value, objectives = host_search(objective, thetas, GRID, progress, **options)
    return BandwidthSelection(np.exp(theta), value, "cv", (GRID, objectives))


def _prepare(x, y, kernel, var_type, degree):
    x = check_points(x, "X")
    y, _ = check_values(y, x.shape[0])
    if x.shape[0] < 3:
        raise ValueError(
            f"X: bandwidth selection needs at least 3 rows; received n_samples={x.shape[0]}"
        )
    model = model_for(x, kernel=kernel, var_type=var_type, degree=degree)
    return x, y, model


def select_bandwidth(
    X,
    y,
    *,
    method: str = "cv",
    kernel="gaussian",
    degree: int = 0,
    var_type: str | None = None,
    block_size: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    pooling: str = "auto",
) -> BandwidthSelection:
    """Choose the bandwidth of a local constant (``degree=0``) or local linear fit.

    Parameters
    ----------
    X : array of shape (n,) or (n, d)
    y : array of shape (n,) or (n, p)
    method : {"cv", "aicc", "scott", "silverman"}
    kernel, degree, var_type : as in :func:`attnpool.regression.local_regression`
    progress : callable ``(done, total)``, optional — called as the search advances
    pooling : {"auto", "dense", "stream", "binned", "sparse"}
        How the objectives are computed. ``"binned"`` (one continuous column, CV):
        grid search and L-BFGS on the binned leave-one-out objective, then the exact
        objective at the result — what ``"auto"`` does from 1000 rows. ``"sparse"``
        (compact kernels, continuous columns, local constant, CV): exact leave-one-out
        sums over each point's neighbourhood only (:mod:`attnpool.methods.sparse`),
        a grid search and a derivative-free refinement (the objective jumps as keys
        enter a support). ``"dense"``/``"stream"``: the exact search, ``"stream"``
        with streamed key blocks.

    Returns
    -------
    BandwidthSelection
        ``bandwidth`` of shape (d,) and the criterion value ``objective``.
    """
    check_choice(method, "method", METHODS)
    check_choice(pooling, "pooling", POOLINGS)
    x, y, model = _prepare(X, y, kernel, var_type, degree)
    units = SearchUnits.of(np.asarray(x), np.asarray(y), model.continuous)
    found = _search(
        *units.apply(np.asarray(x), np.asarray(y)), model, method, pooling, block_size, progress
    )
    grid, objectives = found.grid
    return found._replace(
        bandwidth=units.bandwidth(found.bandwidth),
        objective=float(units.objective(found.objective, method)),
        grid=(grid, units.objective(objectives, method)),
    )


def _search(x, y, model: LocalModel, method: str, pooling: str, block_size, progress):
    """:func:`select_bandwidth` on data in search units."""
    start = rule_of_thumb(
        x,
        method="silverman" if method == "silverman" else "scott",
        kernel=model.kernel,
        var_type=model.var_type,
    )
    if method in ("scott", "silverman"):
        return BandwidthSelection(start, float("nan"), method, (np.array([]), np.array([])))
    dtype = np.dtype(compute_dtype(x, y, numpy=True))
    options = {"model": model, "method": method, "block_size": block_size}
    cont = list(model.continuous)
    thetas = np.tile(to_theta(start, model), (len(GRID), 1))
    thetas[:, cont] += np.log(GRID)[:, None]
    binnable = (
        method == "cv"
        and model.var_type == "c"
        and model.kernel.name in BINNED_KERNELS
        and model.kernel is kernels.get(model.kernel.name)
    )
    if pooling == "binned" and not binnable:
        raise ValueError(
            "pooling: 'binned' searches CV bandwidths for one continuous column with the "
            f"kernels {sorted(BINNED_KERNELS)}; received method={method!r}, "
            f"var_type={model.var_type!r}, kernel={model.kernel.name!r}"
        )
    if pooling == "auto" and method == "cv" and numpy_engine.searches(model, *y.shape):
        objective = numpy_engine.loo_objective(x, y, model)
        return _select_on_host(objective, thetas, progress, xatol=NUMPY_SEARCH_XATOL)
    if pooling == "binned" or (pooling == "auto" and binnable and x.shape[0] >= BINNED_MIN_ROWS):
        return _select_binned(x, y, model, thetas, dtype, options, progress)
    if pooling == "sparse":
        return _select_sparse(x, y, model, thetas, method, progress)
    if pooling == "stream" and block_size is None:
        options["block_size"] = KEY_BLOCK
    count = None
    if x.shape[0] <= MAX_ROWS:  # rows padded to their bucket: the programs are reused
        count = np.int32(x.shape[0])
        x, y = padded(x, y, size=bucket(x.shape[0]))
    if x.shape[0] <= ONE_PROGRAM_ROWS:
        return _search_one_program(x, y, count, thetas, dtype, options, progress)
    total = len(GRID) // _CHUNK + 2
    # The coarse search and BFGS run in float32 (twice the exp throughput); the
    # final Newton steps and the reported objective use the data's own precision.
    x32, y32 = np.asarray(x, np.float32), np.asarray(y, np.float32)
    objectives = []
    for done, chunk in enumerate(range(0, len(GRID), _CHUNK), start=1):
        rows = np.asarray(thetas[chunk : chunk + _CHUNK], np.float32)
        objectives.extend(np.asarray(grid_objectives(rows, x32, y32, count, **options)).tolist())
        if progress:
            progress(done, total)
    objectives = np.array(objectives)
    best = best_candidate(thetas, objectives, method)
    theta, _ = refine(
        lambda t: objective_and_gradient(t, x32, y32, count, **options),
        best,
        jnp.float32,
        tolerance=1e-6,
        maxiter=8,
    )
    if progress:
        progress(total - 1, total)
    with precision_scope(dtype):
        xd, yd = np.asarray(x, dtype), np.asarray(y, dtype)
        precise = np.finfo(dtype).eps * 10
        theta, value = refine(
            lambda t: objective_and_gradient(t, xd, yd, count, **options),
            theta,
            dtype,
            tolerance=precise,
            maxiter=6,
        )
        start_value = float(
            objective_and_gradient(np.asarray(best, dtype), xd, yd, count, **options)[0]
        )
        if not value <= start_value:  # never worse than the best grid point
            theta, value = best, start_value
    bandwidth = bandwidth_of(theta, model, dtype)
    if progress:
        progress(total, total)
    return BandwidthSelection(bandwidth, float(value), options["method"], (GRID, objectives))


#: Padded rows up to which a search compiles one program (objective and gradient, in
#: the data's precision) and evaluates the grid with it point by point: below this the
#: arithmetic costs less than compiling the float32 and grid programs.
ONE_PROGRAM_ROWS = 2**10


def _search_one_program(x, y, count, thetas, dtype, options, progress) -> BandwidthSelection:
    """The exact search of a small problem with one program: the grid, then L-BFGS."""
    with precision_scope(dtype):
        xd, yd = np.asarray(x, dtype), np.asarray(y, dtype)

        def evaluate(theta):
            return objective_and_gradient(jnp.asarray(theta, dtype), xd, yd, count, **options)

        objectives = np.empty(len(thetas))
        for i, theta in enumerate(thetas):
            objectives[i] = float(evaluate(theta)[0])
            if progress and (i + 1) % _CHUNK == 0:
                progress((i + 1) // _CHUNK, len(GRID) // _CHUNK + 1)
        best = best_candidate(thetas, objectives, options["method"])
        theta, value = refine(evaluate, best, dtype, tolerance=np.finfo(dtype).eps * 10, maxiter=14)
        start_value = float(np.nanmin(np.where(np.isfinite(objectives), objectives, np.nan)))
        if not value <= start_value:  # never worse than the best grid point
            theta, value = best, start_value
    bandwidth = bandwidth_of(theta, options["model"], dtype)
    if progress:
        progress(len(GRID) // _CHUNK + 1, len(GRID) // _CHUNK + 1)
    return BandwidthSelection(bandwidth, float(value), options["method"], (GRID, objectives))


def cv_curve(
    X,
    y,
    bandwidths,
    *,
    kernel="gaussian",
    degree: int = 0,
    var_type: str | None = None,
    block_size: int | None = None,
) -> np.ndarray:
    """Leave-one-out error for each candidate bandwidth (what one plots to see the trade-off).

    ``bandwidths``: a sequence of scalars (the same for every column) or an array
    ``(k, d)``. Returns ``(k,)`` objectives; ``inf`` where some point has no neighbour.
    """
    x, y, model = _prepare(X, y, kernel, var_type, degree)
    candidates = np.asarray(bandwidths, dtype=float)
    if candidates.ndim == 1:
        candidates = np.repeat(candidates[:, None], x.shape[1], axis=1)
    if candidates.ndim != 2 or candidates.shape[1] != x.shape[1] or not np.all(candidates > 0):
        raise ValueError(
            f"bandwidths: expected positive numbers, shape (k,) or (k, {x.shape[1]}); "
            f"received {np.asarray(bandwidths).shape}"
        )
    dtype = compute_dtype(x, y, numpy=True)
    options = {"model": model, "method": "cv", "block_size": block_size}
    with precision_scope(dtype):
        thetas = np.stack([to_theta(c, model) for c in candidates])
        values = grid_objectives(
            jnp.asarray(thetas, dtype), jnp.asarray(x, dtype), jnp.asarray(y, dtype), **options
        )
        return np.asarray(values, dtype=float)
