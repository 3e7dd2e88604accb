"""How :func:`attnpool.density.log_density` sums on the host, method by method: NumPy
pairs for small problems, and in one column the ``fgt`` expansions (the Gaussian) and
the ``sparse`` support windows (compact kernels), all exact; ``native`` (the Gaussian,
any dimension, exact) and ``binned`` (``d ≤ 2``, each density within a relative
tolerance, the rows its bound cannot settle summed exactly over the keys within their
reach). Each returns ``log Σ_i w_i K_h(q − x_i)`` normalised by ``Π h`` and ``∫K``, not
by the weights' total."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..kernels.calculus import kernel_integrals
from ..methods.backends import BUILT_IN, host_backend
from ..sums import plan
from ..sums.layer import log_kernel_sums
from ..sums.problem import SumProblem

#: Pairs up to which a density is summed in NumPy (the planner's).
HOST_PAIRS = plan.HOST_PAIRS


def expansions_pay(pairs: int) -> bool:
    """Whether the ``fgt`` expansions sum ``pairs`` Gaussian pairs of one column faster
    than NumPy: from :data:`HOST_PAIRS`, or from the planner's ``EXPANSION_MIN_PAIRS``
    where their compiled loop is already built (a first small call compiles nothing)."""
    from ..methods import native

    return pairs > HOST_PAIRS or (pairs >= plan.EXPANSION_MIN_PAIRS and native.expansions_ready())


def host_log_sums(x: Any, q: Any, record: Any, h: Any, w: Any) -> Any:
    """``log Σ_i w_i K_h(q − x_i)`` (normalised) on the host, by the backend the planner's
    density table (:mod:`attnpool.sums.plan`) gives NumPy arrays — NumPy pairs, the
    ``fgt`` expansions of a Gaussian column (rows they leave unsettled by pairs), a
    compact kernel's support windows (``sparse``), the compiled Gaussian loop
    (``native``, passing over far keys) — or None where it gives the compiled engines."""
    from ..kernels.mixed import MixedColumns, log_sums
    from ..sums.facts import density_facts
    from ..sums.observation_weights import too_wide_to_truncate

    truncating = not too_wide_to_truncate(w)  # (fgt and native)
    backend = plan.plan(density_facts(record, x, q, h, numpy=True, truncating=truncating)).backend
    if backend == "numpy":
        columns = MixedColumns(x, "c" * x.shape[1], record)
        return log_sums([(q, x, h, columns, "density")], weights=w)
    if backend in BUILT_IN:
        return _backend_log_sums(backend, x, q, record, h, w)
    return None


def _backend_log_sums(name: str, x: Any, q: Any, record: Any, h: Any, w: Any) -> Any:
    """Normalised log sums by the built-in host backend ``name`` (:mod:`attnpool.methods.backends`:
    ``fgt``, ``sparse``, ``native``), finished as every backend's answer is: ``−inf``
    where no key weighs."""
    problem = SumProblem(q, x, np.zeros((x.shape[0], 0)), h, record, w)
    backend = host_backend(name)
    reason = backend.refusal(problem)
    if reason:
        raise ValueError(f"method: {reason}")
    integral = kernel_integrals(record, x.shape[1])[0]
    found = log_kernel_sums(backend, problem)
    return found - math.log(integral) - float(np.sum(np.log(h)))


def method_log_sums(
    x: Any, q: Any, record: Any, h: Any, w: Any, name: str, options: Any, exact: Any
) -> Any:
    """``method="fgt"``, ``"sparse"``, ``"native"``, ``"tree"`` or ``"binned"``: refused where the
    method cannot serve, else its sums, the rows it leaves unsettled summed exactly
    (``exact(keys, queries)``: their normalised log densities, as ``"auto"`` sums them)."""
    from .._support.units import HOST_MAX_EXTENT, extent_in_bandwidths
    from ..methods.binned import refusal
    from ..sums.observation_weights import refuse_wide_span

    d = x.shape[1]
    refuse_wide_span(name, w)
    if extent_in_bandwidths(q, x, h) > HOST_MAX_EXTENT:
        raise ValueError(
            f"method: {name!r} takes data within 2^40 bandwidths of its centre; use 'auto'"
        )
    if name in BUILT_IN:
        return _backend_log_sums(name, x, q, record, h, w)
    if name == "tree":
        return _tree_log_sums(x, q, record, h, w, options)
    reason = refusal(record, d)
    if reason:
        raise ValueError(f"method: {reason}")
    if w is None:
        return _binned_log_sums(x, q, record, h, options, exact, None)
    kept = w > 0
    x, w = x[kept], w[kept]
    # in units of the smallest weight, whose key weighs at least K(r) in a row's sum (the
    # reach of the rows binning leaves assumes it)
    smallest = float(np.min(w))
    return _binned_log_sums(x, q, record, h, options, exact, w / smallest) + math.log(smallest)


def _tree_log_sums(x: Any, q: Any, record: Any, h: Any, w: Any, options: Any) -> Any:
    """Normalised log sums by the k-d tree (:mod:`attnpool.methods.tree`), each density
    within ``options.atol + options.rtol · f``; rows whose weights all underflowed under
    the tree's shift (a smooth kernel far from every key), and those the walk leaves,
    summed exactly by the sums layer's finishing step."""
    from ..methods.backends.kd_tree import KdTree

    problem = SumProblem(q, x, np.zeros((x.shape[0], 0)), h, record)
    reason = KdTree().refusal(problem)
    if reason:
        raise ValueError(f"method: {reason}")
    if w is not None:
        raise ValueError(
            "weights: method 'tree' bounds its error for unweighted densities only; use an "
            "exact method ('auto', 'dense', 'stream', 'sparse', 'fgt', 'native')"
        )
    integral = kernel_integrals(record, x.shape[1])[0]
    log_norm = math.log(integral) + float(np.sum(np.log(h)))
    absolute = 0.0  # atol in the sums' own units (inf where they overflow: any error)
    if options.atol > 0:
        with np.errstate(over="ignore"):
            absolute = float(options.atol * x.shape[0] * np.exp(log_norm))
    tree = KdTree(options.rtol, absolute, options.leaf_size)
    return log_kernel_sums(tree, problem) - log_norm


def _binned_log_sums(x: Any, q: Any, record: Any, h: Any, options: Any, exact: Any, w: Any) -> Any:
    """Normalised log sums by binning (:mod:`attnpool.methods.binned_host`): each density
    within ``options.tolerance`` of itself, or summed exactly over the keys within its
    reach (:mod:`attnpool.methods.binned_near`). ``w``: the keys' weights, at least 1, or
    None."""
    from ..methods.binned_host import binned_sums, plan_grid
    from ..methods.binned_near import keys_near, near_log_sums

    d, scale = x.shape[1], 1.0 / h
    total = x.shape[0] if w is None else float(np.sum(w))
    plan = plan_grid(q, x, scale, record, options.grid_size, options.tolerance)
    grid, reach, hopeless = plan.grid, plan.reach, plan.hopeless
    top = float(np.asarray(record.log_profile(np.zeros(()))))
    constant = top - math.log(kernel_integrals(record, d)[0]) - float(np.sum(np.log(h)))
    if hopeless:
        return exact(x, q, w) + math.log(total)
    # one column finds the keys near a row without each key's cell (8 bytes a key)
    sums, error, binning = binned_sums(q, x, scale, record, grid, reach, cells=d == 2,
                                       correct_queries=plan.correct_queries,
                                       order=plan.order, weights=w)  # fmt: skip
    weight = sums[:, 0]
    settled = (weight > 0) & (error <= options.tolerance * weight)
    with np.errstate(divide="ignore", invalid="ignore"):  # unsettled rows: redone below
        out = np.log(weight) + constant
    again = np.flatnonzero(~settled)
    if again.size:  # exactly, over the keys that can matter to them
        least = weight[again] - error[again]  # the exact sum is at least this
        rows = q[again] * scale
        if w is None:  # the compiled pass sums unweighted keys
            summed = near_log_sums(rows, record, binning, total, least, x, scale)
            if summed is not None:
                out[again] = summed + constant
                return out
        near = keys_near(rows, record, binning, total, least, x, scale)
        out[again] = -np.inf
        if near.size:
            near_w = None if w is None else w[near]
            found = exact(x[near], q[again], near_w)
            count = near.size if near_w is None else float(np.sum(near_w))
            out[again] = found + math.log(count)
    return out
