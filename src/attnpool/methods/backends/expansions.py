"""``fgt`` as a backend: the Gaussian of one column by truncated Taylor expansions over
boxes of keys (:mod:`attnpool.methods.fgt`), each row within ``1e-14`` of its weight.
Rows the expansions leave (far from every key) are summed pair by pair over the keys
within their reach (:func:`attnpool.methods.fgt.reach`: the others weigh less than
``1e-14`` of the row), so every row it answers is settled."""

from __future__ import annotations

import numpy as np

from ..._support.units import midrange
from ...kernels import is_gaussian
from ...sums.backends import Serves, exact_log_sums
from ...sums.problem import LogSums, SumProblem
from .. import fgt
from .columns import (
    leaves_own_rows,
    log_sums_of,
    others_left_out,
    summed_columns,
    without_own_terms,
)

__all__ = ["BACKEND", "Expansions"]


class Expansions:
    """The ``fgt`` backend (the Gaussian, one column; observation weights; exact)."""

    name = "fgt"
    serves = Serves(kernels=("gaussian",), max_columns=1, powers=(1,))

    def refusal(self, problem: SumProblem) -> str | None:
        """Why it cannot sum ``problem``, or None."""
        d = problem.keys.shape[1]
        if not (is_gaussian(problem.kernel) and d == 1):
            return f"'fgt' sums the Gaussian in one column; received {problem.kernel.name!r} in {d}"
        return None

    def log_sums(self, problem: SumProblem) -> LogSums:
        """``problem``'s sums about each row's nearest key, ``shift = −r²/2``."""
        if problem.left_out is not None:
            if not leaves_own_rows(problem):
                return others_left_out(problem, self.log_sums)
            return self._leave_one_out(problem)
        q, k, h, w = problem.queries, problem.keys, problem.bandwidth, problem.weights
        centre = midrange(k)
        columns = summed_columns(problem)
        raw, settled, nearest2 = fgt.expansion_sums(
            q, k, columns.values, 1.0 / h[0], centre=float(centre[0]), return_nearest=True
        )
        found = log_sums_of(raw, -0.5 * nearest2, settled, columns)
        again = np.flatnonzero(~settled)
        if again.size:
            count = k.shape[0] if w is None else float(np.sum(w) / np.min(w[w > 0]))
            near = fgt.keys_within(k[:, 0], q[again, 0], h[0] * fgt.reach(nearest2[again], count))
            part = exact_log_sums(SumProblem(
                q[again], k[near], problem.values[near], h, problem.kernel,
                None if w is None else w[near],
            ))  # fmt: skip
            found.shift[again], found.sums[again] = part.shift, part.sums
        return LogSums(found.shift, found.sums, np.ones(q.shape[0], bool))

    def _leave_one_out(self, problem: SumProblem) -> LogSums:
        """Each point's sums over the others: each is its own nearest key (shift 0), its
        own term ``[1, c]`` taken away; a point left with less than
        :data:`attnpool.methods.fgt.LOO_MIN_WEIGHT` of it (where the expansions' error,
        relative to the sum with that term, would show) is unsettled."""
        x, h = problem.keys, problem.bandwidth
        columns = summed_columns(problem)
        centre = float(midrange(x)[0])
        raw, expanded = fgt.expansion_sums(x, x, columns.values, 1.0 / h[0], centre=centre)
        settled = without_own_terms(raw, columns, fgt.LOO_MIN_WEIGHT) & expanded
        return log_sums_of(raw, np.zeros(x.shape[0]), settled, columns)


BACKEND = Expansions()
