"""What a host method sums beside its weights, and its answer as a backend's.

The methods sum ``[Σ K, Σ K c_j]`` over the columns ``c`` they are given: the problem's
value columns each in units of its largest (a power of two, exact), and with
observation weights :func:`attnpool.sums.observation_weights.augmented`'s ``[w', w' v']``
(the weights over their largest too). The answer is taken per row relative to its
weights' sum, ``[1, S_j / S_0 · scale_j]`` about ``shift + log S_0`` (and the largest
weight's log): a pooled value of ``2^−1000`` under weights far below the largest is a
ratio of two sums whose product with its unit would underflow first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ...sums.observation_weights import augmented, column_scale
from ...sums.problem import LogSums, SumProblem

__all__ = ["Columns", "leaves_own_rows", "log_sums_of", "others_left_out", "summed_columns",
           "without_own_terms"]  # fmt: skip


class Columns(NamedTuple):
    """The columns ``(m, c)`` a method sums, and how its sums become the problem's."""

    values: np.ndarray
    largest_weight: float | None  #: None: unweighted
    scale: np.ndarray  #: ``(p,)``: each value column's power-of-two unit


def summed_columns(problem: SumProblem) -> Columns:
    """The columns a method sums for ``problem`` (module docstring)."""
    v, w = problem.values, problem.weights
    if w is None:
        scale = column_scale(v).astype(v.dtype)
        return Columns(v / scale, None, scale)
    return Columns(np.asarray(augmented(v, w)), float(np.max(w)), column_scale(v))


def log_sums_of(raw: np.ndarray, shift: np.ndarray, settled: np.ndarray,
                columns: Columns) -> LogSums:  # fmt: skip
    """The problem's :class:`LogSums` from a method's sums ``raw (n, 1 + c)`` of
    ``columns``, each row relative to ``exp(shift)``."""
    largest = columns.largest_weight
    total = raw[:, 0] if largest is None else raw[:, 1]
    rest = raw[:, 1:] if largest is None else raw[:, 2:]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        unit = np.where(total > 0, total, 1.0)
        moved = np.log(unit) + (math.log(largest) if largest else 0.0)  # (0: no weight)
        folded = shift + moved
        # what the shift's rounding left out of it stays in the sums: at a shift of −1e20
        # log 2 is lost, and two key chunks' states, merged, would weigh their ties alike
        kept = np.exp(moved - (folded - shift))
        kept = np.where(np.isfinite(kept), kept, 1.0)
        sums = np.concatenate([(total / unit * kept)[:, None],
                               rest / unit[:, None] * kept[:, None] * columns.scale],
                              axis=1)  # fmt: skip
    return LogSums(folded, sums, settled)


def leaves_own_rows(problem: SumProblem) -> bool:
    """Whether ``problem`` is a leave-one-out one (:meth:`SumProblem.leave_one_out`): its
    queries are its keys and row ``i`` leaves out key ``i`` — what the methods' own
    leave-one-out sums compute."""
    left_out, q, k = problem.left_out, problem.queries, problem.keys
    return (left_out is not None and q.shape == k.shape
            and np.array_equal(left_out, np.arange(q.shape[0]))
            and (q is k or np.array_equal(q, k)))  # fmt: skip


def others_left_out(problem: SumProblem, log_sums: Callable[[SumProblem], LogSums]) -> LogSums:
    """A problem whose rows leave out other keys than their own: every key summed by
    ``log_sums``, the rows that leave one out unsettled (the layer sums them exactly)."""
    left_out = np.asarray(problem.left_out)
    found = log_sums(problem.replace(left_out=None))
    return found._replace(settled=found.settled & (left_out < 0))


def without_own_terms(raw: np.ndarray, columns: Columns, floor: float) -> np.ndarray:
    """Each point's own term ``K(0) · [1, c_i]`` taken away from its sums ``raw (n, 1 + c)``
    over every point (in units of ``K(0)``, in place); returns the rows whose rest is at
    least ``floor`` of that term — in the kernel's sum and, with observation weights, in
    the weights' (a heavy point's own weight cancels against its neighbours' light ones)
    — which the subtraction's rounding cannot swamp."""
    raw[:, 0] -= 1.0
    raw[:, 1:] -= columns.values
    settled = raw[:, 0] >= floor
    if columns.largest_weight is not None:
        settled &= raw[:, 1] >= floor * columns.values[:, 0]
    return settled
