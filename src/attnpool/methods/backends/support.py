"""``sparse`` as a backend: a compact radial kernel summed over the keys inside each
query's support only (:mod:`attnpool.methods.sparse`: prefix sums in one column, a k-d
tree above), exact; the support's edge decided on the unscaled inputs, as on every
path."""

from __future__ import annotations

import numpy as np

from ..._support.units import midrange
from ...sums.backends import Serves
from ...sums.problem import LogSums, SumProblem
from .. import sparse
from .columns import log_sums_of, summed_columns

__all__ = ["BACKEND", "Support"]


class Support:
    """The ``sparse`` backend (compact radial kernels, any d; observation weights)."""

    name = "sparse"
    serves = Serves(leave_one_out=False, powers=(1,))

    def refusal(self, problem: SumProblem) -> str | None:
        """Why it cannot sum ``problem`` (:func:`attnpool.methods.sparse.refusal`), or None."""
        return sparse.refusal(problem.kernel, problem.keys.shape[1])

    def log_sums(self, problem: SumProblem) -> LogSums:
        """``problem``'s sums in units of ``K(0)`` (``shift = log K(0)``); a row with no
        key inside its support has sums 0."""
        q, k, h = problem.queries, problem.keys, problem.bandwidth
        centre = midrange(k)
        columns = summed_columns(problem)
        raw = sparse.sparse_sums(
            q - centre, k - centre, columns.values, 1.0 / h, problem.kernel, edges=(q, k, h)
        )
        top = float(np.asarray(problem.kernel.log_profile(np.zeros(()))))
        n = q.shape[0]
        return log_sums_of(raw, np.full(n, top), np.ones(n, bool), columns)


BACKEND = Support()
