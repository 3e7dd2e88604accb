"""The front ends' one call to a backend, and the one finishing step after it.

:func:`solve` checks a :class:`~attnpool.sums.problem.SumProblem` against what the
backend declares, runs it, checks the answer's shapes, and sums again exactly
(:func:`exact_sums`: NumPy pairs, or an exact host backend or compiled engine for many)
every row the backend did not settle or whose sums are not finite. Each front end then
reads what it needs from the same sums:

- **pooling**: ``S[v] / S[1]``; a row of no weight takes the nearest-key limit
  (:mod:`attnpool.sums.nearest`) or NaN, as the empty policy says (:func:`pool`);
- **density**: ``log S[1] + m − log(W ∏h ∫K)`` (:func:`log_density`);
- **leave-one-out fit**: pooling with each row's own key left out (:func:`loo_fit`);
- **local fit**: the local polynomial at each query, local linear's solved from its
  moments about each row's reference key (:func:`local_fit`);
- **kernel sums**: ``log Σ w K^r`` (:func:`log_kernel_sums`), a band's counts.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._support.units import value_unit
from .._support.validation import is_traced
from ..methods.backends.exact import exact_sums, settled_sums
from .backends import NUMPY_PAIRS, Backend, exact_log_sums, get_backend, refusal
from .exact_pairs import diagonal_log_weights
from .local_model import solve_moments
from .nearest import nearest_mean
from .problem import LogSums, SumProblem

__all__ = [
    "exact_sums",
    "finish",
    "fit_and_hat",
    "local_fit",
    "log_density",
    "log_kernel_sums",
    "loo_fit",
    "nearest_limit",
    "pool",
    "solve",
]


def host_arrays(name: str, *arrays: Any) -> tuple[Any, ...]:
    """``arrays`` as NumPy float64 (``None`` kept) for the backend ``name``: concrete
    arrays only — a registered backend runs on the host, not inside ``jit``."""
    if any(is_traced(a) for a in arrays):
        raise ValueError(
            f"method: backend {name!r} needs concrete arrays; inside jit, grad or vmap use "
            "'dense', 'stream' or 'pallas'"
        )
    return tuple(None if a is None else np.asarray(a, np.float64) for a in arrays)


def backend_for(name: str, problem: SumProblem, argument: str = "method") -> Backend:
    """The registered backend ``name``, or a ``ValueError`` naming ``argument`` where it
    is not registered or does not serve ``problem``."""
    backend = get_backend(name)
    if backend is None:
        raise ValueError(f"{argument}: no backend is registered as {name!r}")
    kernel = problem.kernel
    if kernel.similarity != "distance":
        raise ValueError(
            f"kernel: backend {name!r} takes non-negative distance kernels; received "
            f"{kernel.name!r}"
        )
    reason = refusal(backend, problem, kernel)
    if reason:
        raise ValueError(f"{argument}: {reason}")
    return backend


def solve(name: str | Backend, problem: SumProblem, argument: str = "method") -> LogSums:
    """``problem``'s sums by the backend registered as ``name`` (or the backend itself,
    checked by its caller: a built-in one), finished: every row it leaves unsettled, or
    whose sums are not finite, summed again exactly."""
    backend = backend_for(name, problem, argument) if isinstance(name, str) else name
    if backend is NUMPY_PAIRS:  # the finishing step's own exact sums: nothing to finish
        return exact_log_sums(problem)
    return finish(backend.name, problem, backend.log_sums(problem))


def finish(name: str, problem: SumProblem, found: LogSums) -> LogSums:
    """The backend ``name``'s answer ``found`` to ``problem``, its shapes checked and
    every row it leaves unsettled, or whose sums are not finite, summed again exactly
    (:func:`exact_sums`)."""
    return settled_sums(name, problem, found, exact_sums)


def pool(
    name: str | Backend, problem: SumProblem, *, nearest: bool
) -> tuple[np.ndarray, np.ndarray]:
    """``(pooled (n, p), empty (n,))``: ``S[v] / S[1]`` by the backend ``name``; a row of
    no weight is ``empty`` and takes the nearest keys' mean where ``nearest``, else NaN
    (the caller's empty policy reports it)."""
    unit = value_unit(problem.values) if problem.values.size else np.ones(problem.sizes[3])
    scaled = problem.replace(values=problem.values / unit)
    found = solve(name, scaled)
    total = found.sums[:, :1]
    empty = _without_weight(total[:, 0])
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = found.sums[:, 1:] / total
    if np.any(empty):
        pooled[empty] = nearest_limit(scaled, empty) if nearest else np.nan
    return pooled * unit, empty


def _without_weight(total: np.ndarray) -> np.ndarray:
    """The rows whose weights sum to 0 (none weighs, or signed weights cancel exactly)."""
    return np.asarray(~(np.abs(total) > 0))


def nearest_limit(problem: SumProblem, rows: np.ndarray) -> np.ndarray:
    """``(rows, p)``: the nearest-key limit of the queries ``rows`` (a mask or indices)
    — the mean of the values of their closest keys with weight (ties in proportion to
    the observation weights), in units of each pair's bandwidth, a row's left-out key
    not counted (NaN where a row has no other)."""
    part = problem.rows(rows)
    n, m, _, _ = part.sizes
    allowed = None
    if part.weights is not None or part.left_out is not None:
        allowed = np.ones((n, m), bool)
        if part.weights is not None:
            allowed &= part.weights[None, :] > 0
        if part.left_out is not None:
            at = np.flatnonzero(part.left_out >= 0)
            allowed[at, part.left_out[at]] = False
    h = part.pair_bandwidths(slice(None)) if part.varying else part.bandwidth
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(nearest_mean(part.queries, part.keys, part.values, h, part.model,
                                       part.weights, allowed))  # fmt: skip


def log_kernel_sums(
    name: str | Backend, problem: SumProblem, argument: str = "method"
) -> np.ndarray:
    """``(n,)``: ``log Σ_i w_i K((q − k_i)/h)^r`` (``−inf`` where no key weighs)."""
    found = solve(name, problem, argument)
    with np.errstate(divide="ignore"):
        return np.asarray(found.shift + np.log(found.sums[:, 0]), np.float64)


def log_density(name: str | Backend, problem: SumProblem, integral: float) -> np.ndarray:
    """``(n,)``: ``log f̂(q) = log Σ w_i K_h(q − k_i) − log(W ∏h ∫K)``, ``W`` the total
    weight (``m`` unweighted), ``integral`` the kernel's ``∫K``."""
    total = problem.keys.shape[0] if problem.weights is None else float(np.sum(problem.weights))
    constant = math.log(total) + float(np.sum(np.log(problem.bandwidth))) + math.log(integral)
    return np.asarray(log_kernel_sums(name, problem) - constant, np.float64)


def loo_fit(name: str | Backend, problem: SumProblem, argument: str = "pooling") -> np.ndarray:
    """``(m, p)``: each row's pool over the other keys, NaN where none weighs."""
    found = solve(name, problem, argument)
    with np.errstate(invalid="ignore", divide="ignore"):
        fit = np.asarray(found.sums[:, 1:] / found.sums[:, :1], np.float64)
    fit[found.sums[:, 0] <= 0] = np.nan
    return fit


def local_fit(
    name: str | Backend, problem: SumProblem, argument: str = "method"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(fit (n, p), slopes (n, d, p), empty (n,))``: the local polynomial of
    ``problem.degree`` at each query, from its sums by the backend ``name`` — the pooled
    values (slopes 0), or local linear's fit and slopes solved from the moments about
    each row's reference (:func:`~attnpool.sums.local_model.solve_moments`), the slopes
    per unit of each column. A row of no weight is ``empty``, its fit NaN (the caller's
    nearest-key limit or empty policy decides)."""
    fit, slopes, _, empty = _solved(problem, solve(name, problem, argument))
    return fit, slopes, empty


def fit_and_hat(name: str | Backend, problem: SumProblem) -> tuple[np.ndarray, np.ndarray]:
    """``(fit (n, p), hat (n,))`` at the keys themselves (``problem``'s queries are its
    keys, none left out): the in-sample fit and the diagonal of the smoother matrix,
    ``α_ii`` (local constant) or ``α_ii (1 + μ₁ᵀ C⁻¹ μ₁)`` (local linear), ``α_ii`` the
    weight of one copy of row ``i`` (its observation weight not counted) over the row's
    whole weight; AICc's penalty is their trace."""
    found = solve(name, problem)
    fit, _, inverse_11, empty = _solved(problem, found)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        own = np.exp(diagonal_log_weights(problem) - found.shift)
        hat = own / np.where(empty, 1.0, found.sums[:, 0]) * inverse_11
    hat[empty] = np.nan
    return fit, hat


def _solved(problem: SumProblem, found: LogSums) -> tuple[np.ndarray, ...]:
    """``(fit, slopes, (M⁻¹)₁₁, empty)`` of ``problem``'s sums ``found``."""
    n, _, d, p = problem.sizes
    total = found.sums[:, 0]
    empty = _without_weight(total)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        means = found.sums[:, 1:] / np.where(empty, 1.0, total)[:, None]
        if problem.degree == 0:
            fit, slopes, inverse_11 = means, np.zeros((n, d, p)), np.ones(n)
        else:
            units = problem.units
            about_keys, about_values = problem.reference()
            offset = (about_keys - problem.queries) / units
            fit, slopes, inverse_11 = solve_moments(means, d, p, 1, offset, problem.signed)
            fit, slopes = fit + about_values, slopes / units[..., None]
    fit[empty] = np.nan
    return fit, slopes, inverse_11, empty
