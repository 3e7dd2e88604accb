"""``native`` as a backend: the Gaussian by the compiled loop (:mod:`attnpool.methods.native`:
distances, exponentials and sums in one pass, far keys passed over), exact, in the
problem's precision (float32 arrays: float32 sums). A row whose scaled coordinates
overflowed is left unsettled, and so is every row of data beyond ``LOOP_MAX_EXTENT``
bandwidths of the keys' midrange (the loop's scaled differences would lose digits)."""

from __future__ import annotations

import math

import numpy as np

from ..._support.units import LOOP_MAX_EXTENT, extent_in_bandwidths, midrange
from ...sums.backends import Serves
from ...sums.problem import LogSums, SumProblem
from .. import native
from .columns import leaves_own_rows, log_sums_of, others_left_out, summed_columns

__all__ = ["BACKEND", "CompiledLoop"]


class CompiledLoop:
    """The ``native`` backend (the Gaussian, d ≤ 16, a CPU; observation weights)."""

    name = "native"
    serves = Serves(kernels=("gaussian",), max_columns=native.DIMS_BUILT[-1], powers=(1,))

    def refusal(self, problem: SumProblem) -> str | None:
        """Why it cannot sum ``problem`` (:func:`attnpool.methods.native.refusal`), or None."""
        return native.refusal(problem.kernel, problem.keys.shape[1])

    def log_sums(self, problem: SumProblem) -> LogSums:
        """``problem``'s sums about the loop's running shift (``ln 2 · shift₂``); leaving
        each row's own key out, the loop masks its own pair."""
        own = problem.left_out is not None
        if own and not leaves_own_rows(problem):
            return others_left_out(problem, self.log_sums)
        q, k, h = problem.queries, problem.keys, problem.bandwidth
        if extent_in_bandwidths(q, k, h) > LOOP_MAX_EXTENT:  # (its differences lose digits)
            n = q.shape[0]
            return LogSums(np.zeros(n), np.zeros((n, problem.width)), np.zeros(n, bool))
        centre = midrange(k)
        columns = summed_columns(problem)
        values = columns.values
        if values.shape[1] == 0:  # the loop sums at least one value column
            values = np.ones((k.shape[0], 1), values.dtype)
        raw, shift = native.native_sums(q - centre, k - centre, values, 1.0 / np.asarray(h),
                                        exclude_self=own, return_shift=True)  # fmt: skip
        raw = raw[:, : 1 + columns.values.shape[1]]
        settled = np.all(np.isfinite(raw), axis=1) & np.isfinite(shift)
        return log_sums_of(raw, math.log(2.0) * shift, settled, columns)


BACKEND = CompiledLoop()
