"""How :func:`attnpool.density.log_density` sums on the host, method by method, each
through the backend protocol (:mod:`attnpool.methods.backends`) and finished by the sums
layer: NumPy pairs for small problems, and in one column the ``fgt`` expansions (the
Gaussian) and the ``sparse`` support windows (compact kernels), all exact; ``native``
(the Gaussian, any dimension, exact), ``binned`` (``d ≤ 2``, each density within a
relative tolerance, the rows its bound cannot settle summed exactly over the keys within
their reach) and ``tree``. Each returns ``log Σ_i w_i K_h(q − x_i)`` normalised by
``Π h`` and ``∫K``, not by the weights' total."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..kernels.calculus import kernel_integrals
from ..kernels.mixed import MixedColumns
from ..methods.backends import host_backend
from ..methods.backends.exact import EXACT_ON_HOST
from ..sums import plan, thresholds
from ..sums.backends import Backend
from ..sums.layer import log_kernel_sums
from ..sums.problem import SumProblem

#: Pairs up to which a density is summed in NumPy (the planner's).
HOST_PAIRS = thresholds.HOST_PAIRS


def expansions_pay(pairs: int) -> bool:
    """Whether the ``fgt`` expansions sum ``pairs`` Gaussian pairs of one column faster
    than NumPy: from :data:`HOST_PAIRS`, or from the planner's ``EXPANSION_MIN_PAIRS``
    where their compiled loop is already built (a first small call compiles nothing)."""
    from ..methods import native

    return pairs > HOST_PAIRS or (
        pairs >= thresholds.EXPANSION_MIN_PAIRS and native.expansions_ready()
    )


def host_log_sums(x: Any, q: Any, record: Any, h: Any, w: Any) -> Any:
    """``log Σ_i w_i K_h(q − x_i)`` (normalised) on the host, by the backend the planner's
    density table (:mod:`attnpool.sums.plan`) gives NumPy arrays — NumPy pairs, the
    ``fgt`` expansions of a Gaussian column (rows they leave unsettled by pairs), a
    compact kernel's support windows (``sparse``), the compiled Gaussian loop
    (``native``, passing over far keys) — or None where it gives the compiled engines."""
    from ..sums.facts import density_facts
    from ..sums.observation_weights import too_wide_to_truncate

    truncating = not too_wide_to_truncate(w)  # (fgt and native)
    backend = plan.plan(density_facts(record, x, q, h, numpy=True, truncating=truncating)).backend
    if backend not in EXACT_ON_HOST:
        return None
    problem = SumProblem(q, x, _no_values(x), h, record, w)
    return normalised_log_sums(EXACT_ON_HOST[backend], problem)


def _no_values(x: Any) -> np.ndarray:  # a density sums no values
    return np.zeros((x.shape[0], 0))


def normalised_log_sums(backend: Backend, problem: SumProblem) -> np.ndarray:
    """``(n,)``: ``log Σ_i w_i K_h(q − x_i)^r`` by ``backend`` through the sums layer, the
    kernel of the continuous columns normalised (``∫K ∏h``; a categorical column's kernel
    is a probability over its levels already); ``−inf`` where no key weighs."""
    return np.asarray(log_kernel_sums(backend, problem) - _log_norm(problem))


def exact_normalised_log_sums(problem: SumProblem) -> np.ndarray:
    """:func:`normalised_log_sums` by the exact backend the planner's finishing table
    gives ``problem`` (:func:`attnpool.methods.backends.exact.exact_sums`: NumPy pairs,
    beyond them an exact host backend or the compiled exact engine)."""
    from ..methods.backends.exact import exact_sums

    found = exact_sums(problem)
    with np.errstate(divide="ignore"):
        return np.asarray(found.shift + np.log(found.sums[:, 0]) - _log_norm(problem))


def _log_norm(problem: SumProblem) -> float:
    """``r log(∫K ∏h)`` over the continuous columns (0 where there are none)."""
    continuous = problem.column_kinds()[0]
    if not continuous:
        return 0.0
    integral = kernel_integrals(problem.kernel, len(continuous))[0]
    log_norm = math.log(integral) + float(np.log(problem.bandwidth[continuous]).sum())
    return problem.power * log_norm


def mixed_problem(
    queries: np.ndarray, x: np.ndarray, h: np.ndarray, columns: MixedColumns,
    weights: np.ndarray | None = None, left_out: np.ndarray | None = None,
) -> SumProblem:  # fmt: skip
    """The density sums of a mixed sample ``x`` (its :class:`MixedColumns`: var types,
    levels, the continuous columns' kernel) at ``queries``."""
    levels = tuple(columns.levels[c].size if t == "u" else 0
                   for c, t in enumerate(columns.var_type))  # fmt: skip
    return SumProblem(queries, x, _no_values(x), h, columns.kernel, weights, left_out,
                      var_type=columns.var_type, levels=levels)  # fmt: skip


def method_log_sums(x: Any, q: Any, record: Any, h: Any, w: Any, name: str, options: Any) -> Any:
    """``method="fgt"``, ``"sparse"``, ``"native"``, ``"tree"`` or ``"binned"`` (``options``:
    its record, :func:`attnpool.methods.options.resolve`'s): refused where the method
    cannot serve, else its sums, the rows it leaves unsettled summed exactly (by the
    backend over the keys within their reach — ``binned`` — or by the sums layer)."""
    from .._support.units import HOST_MAX_EXTENT, extent_in_bandwidths
    from ..sums.observation_weights import refuse_wide_span

    refuse_wide_span(name, w)
    if extent_in_bandwidths(q, x, h) > HOST_MAX_EXTENT:
        raise ValueError(
            f"method: {name!r} takes data within 2^40 bandwidths of its centre; use 'auto'"
        )
    problem = SumProblem(q, x, _no_values(x), h, record, w)
    backend = host_backend(name, in_sum_units(options, problem))
    reason = backend.refusal(problem)
    if reason:
        raise ValueError(f"method: {reason}")
    return normalised_log_sums(backend, problem)


def in_sum_units(options: Any, problem: SumProblem) -> Any:
    """A method's record with its absolute tolerance — a :class:`~attnpool.Tree`'s
    ``atol``, in density units — in the units of ``problem``'s sums, ``Σ K``: times
    ``n ∫K ∏h`` (inf where that overflows: any error). The other records' tolerances
    are relative, the same in both."""
    from dataclasses import replace

    from ..methods.options import Tree

    if not isinstance(options, Tree) or options.atol == 0:
        return options
    with np.errstate(over="ignore"):
        unit = problem.keys.shape[0] * float(np.exp(_log_norm(problem)))
    return replace(options, atol=options.atol * unit)
