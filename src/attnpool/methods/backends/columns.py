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
from typing import NamedTuple

import numpy as np

from ...sums.observation_weights import augmented, column_scale
from ...sums.problem import LogSums, SumProblem

__all__ = ["Columns", "log_sums_of", "summed_columns"]


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
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = np.where(total > 0, total, 1.0)
        sums = np.concatenate([(total / unit)[:, None], rest / unit[:, None] * columns.scale],
                              axis=1)  # fmt: skip
        shift = shift + np.log(unit) + (0.0 if largest is None else math.log(largest))
    return LogSums(shift, sums, settled)
