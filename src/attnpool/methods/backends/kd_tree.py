"""``tree`` as a backend: kernel sums by a k-d tree of the keys (:mod:`attnpool.methods.tree`),
each row's weight sum within ``rtol · s + atol`` of the exact one (``atol`` in the sums'
own units, ``Σ K``); a pooled value then within ``rtol / (1 − rtol) · range(values)``
(``atol = 0``). Rows it leaves unsettled — those whose walk would visit a good share of
the leaves, and those whose weights all underflowed under the tree's shift (a smooth
kernel far from every key) — are for the caller to sum exactly."""

from __future__ import annotations

import numpy as np

from ..._support.units import midrange
from ...sums.backends import Serves
from ...sums.problem import LogSums, SumProblem
from .. import tree

__all__ = ["KdTree"]


class KdTree:
    """The ``tree`` backend (kernels that never grow with the distance, any d;
    unweighted), with its tolerances and the keys per leaf."""

    name = "tree"
    serves = Serves(weights=False, leave_one_out=False, powers=(1,))

    def __init__(self, rtol: float = 1e-3, atol: float = 0.0, leaf_size: int = 32) -> None:
        self.rtol, self.atol, self.leaf_size = rtol, atol, leaf_size

    def refusal(self, problem: SumProblem) -> str | None:
        """Why it cannot sum ``problem`` (:func:`attnpool.methods.tree.refusal`; observation
        weights, for which it bounds no error), or None."""
        if problem.weights is not None:
            return (
                "'tree' bounds its error for unweighted sums only; received observation "
                "weights; use an exact method ('auto', 'dense', 'stream', 'sparse', 'fgt', "
                "'native')"
            )
        return tree.refusal(problem.kernel, problem.keys.shape[1])

    def log_sums(self, problem: SumProblem) -> LogSums:
        """``problem``'s sums about the tree's shift of each row."""
        q, k, h, kernel = problem.queries, problem.keys, problem.bandwidth, problem.kernel
        centre = midrange(k)
        scale = 1.0 / np.asarray(h, np.float64)
        sums, shift, unsettled = tree.tree_sums(
            np.asarray(q - centre, np.float64) * scale, np.asarray(k - centre, np.float64) * scale,
            np.asarray(problem.values, np.float64), kernel, rtol=self.rtol, atol=self.atol,
            leaf_size=self.leaf_size, edges=(q, k, h) if kernel.compact else None,
        )  # fmt: skip
        underflowed = (sums[:, 0] == 0) & (not kernel.compact)
        settled = ~unsettled & ~underflowed & np.all(np.isfinite(sums), axis=1)
        return LogSums(shift, sums, settled)
