"""``topk`` as a backend: each query's sums over its ``k`` nearest keys alone
(:mod:`attnpool.methods.topk`, neighbours by a k-d tree). For a kernel that never grows
with the distance, the keys left out weigh at most ``β = (m − k) K(r_k) / Σ_{i≤k} K(r_i)``
of a row's weight, so a pooled value is within ``β · range(values)`` of the exact one;
a row whose ``β`` exceeds the tolerance is refused, naming the record, not returned."""

from __future__ import annotations

import numpy as np

from ..._support.units import midrange
from ...sums.backends import Serves
from ...sums.problem import LogSums, SumProblem
from .. import topk
from .columns import log_sums_of, summed_columns

__all__ = ["NearestKeys"]


class NearestKeys:
    """The ``topk`` backend (kernels that never grow with the distance, any d;
    unweighted), with its number of keys and the tolerance on what it leaves out."""

    name = "topk"
    serves = Serves(weights=False, leave_one_out=False, powers=(1,))

    def __init__(self, k: int = 64, tolerance: float | None = 1e-3) -> None:
        self.k, self.tolerance = k, tolerance

    def refusal(self, problem: SumProblem) -> str | None:
        """Why it cannot sum ``problem`` (:func:`attnpool.methods.topk.refusal`), or None."""
        return topk.refusal(problem.kernel, problem.keys.shape[1])

    def log_sums(self, problem: SumProblem) -> LogSums:
        """``problem``'s sums over each query's nearest keys, about the heaviest one's log
        weight; a ``ValueError`` where the keys left out weigh more than the tolerance."""
        q, k, h, kernel = problem.queries, problem.keys, problem.bandwidth, problem.kernel
        centre = midrange(k)
        scale = 1.0 / np.asarray(h, np.float64)
        columns = summed_columns(problem)
        state, left_out = topk.topk_state(
            np.asarray(q - centre, np.float64) * scale,
            np.asarray(k - centre, np.float64) * scale,
            np.asarray(columns.values, np.float64),
            kernel,
            self.k,
            edges=(q, k, h) if kernel.compact else None,
        )
        self._check(left_out)
        raw = np.concatenate([state.weight_sum[:, None], state.weighted_values], axis=1)
        shift = np.where(np.isfinite(state.max_log), state.max_log, 0.0)
        return log_sums_of(raw, shift, np.ones(q.shape[0], bool), columns)

    def _check(self, left_out: np.ndarray) -> None:
        if self.tolerance is None:
            return
        over = left_out > self.tolerance
        if np.any(over):
            raise ValueError(
                f"method: TopK(k={self.k}) leaves out up to {np.max(left_out):.3g} of the "
                f"weight of {int(over.sum())} of {len(left_out)} queries, above the tolerance "
                f"{self.tolerance:g}; raise k, lower the bandwidth, or pass tolerance=None"
            )
