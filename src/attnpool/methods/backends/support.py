"""``sparse`` as a backend: a compact radial kernel summed over the keys inside each
query's support only (:mod:`attnpool.methods.sparse`: prefix sums in one column, a k-d
tree above), exact; the support's edge decided on the unscaled inputs, as on every
path. Its leave-one-out sums take each point's own term away."""

from __future__ import annotations

import numpy as np

from ..._support.units import midrange
from ...sums.backends import Serves, exact_log_sums
from ...sums.problem import LogSums, SumProblem
from .. import fgt, sparse
from .columns import (
    leaves_own_rows,
    log_sums_of,
    others_left_out,
    summed_columns,
    without_own_terms,
)

__all__ = ["BACKEND", "Support"]


class Support:
    """The ``sparse`` backend (compact radial kernels, any d; observation weights)."""

    name = "sparse"
    serves = Serves(powers=(1,))

    def refusal(self, problem: SumProblem) -> str | None:
        """Why it cannot sum ``problem`` (:func:`attnpool.methods.sparse.refusal`), or None."""
        return sparse.refusal(problem.kernel, problem.keys.shape[1])

    def log_sums(self, problem: SumProblem) -> LogSums:
        """``problem``'s sums in units of ``K(0)`` (``shift = log K(0)``); a row with no
        key inside its support has sums 0. Leaving each row's own key out, its term —
        exactly ``K(0) · [1, c]`` — is taken away: a rest of the kernel's sum below
        :data:`attnpool.methods.sparse.LOO_MIN_WEIGHT` (that term's rounding) is none,
        and a rest below :data:`attnpool.methods.sparse.LOO_SETTLED` of the term, in
        the kernel's sum or the weights', is summed again exactly over the keys within
        its support."""
        if problem.left_out is not None and not leaves_own_rows(problem):
            return others_left_out(problem, self.log_sums)
        q, k, h = problem.queries, problem.keys, problem.bandwidth
        centre = midrange(k)
        columns = summed_columns(problem)
        raw = sparse.sparse_sums(
            q - centre, k - centre, columns.values, 1.0 / h, problem.kernel, edges=(q, k, h)
        )
        n = q.shape[0]
        settled = np.ones(n, bool)
        if problem.left_out is not None:
            settled = without_own_terms(raw, columns, sparse.LOO_SETTLED)
            none = raw[:, 0] <= sparse.LOO_MIN_WEIGHT
            raw[none], settled[none] = 0.0, True
        top = float(np.asarray(problem.kernel.log_profile(np.zeros(()))))
        found = log_sums_of(raw, np.full(n, top), settled, columns)
        again = np.flatnonzero(~settled)
        if again.size:  # exactly, over the keys within their supports (not every key)
            near = _keys_within_support(problem, again)
            w = problem.weights
            part = exact_log_sums(SumProblem(
                q[again], k[near], problem.values[near], h, problem.kernel,
                None if w is None else w[near], np.searchsorted(near, again),
            ))  # fmt: skip
            found.shift[again], found.sums[again] = part.shift, part.sums
        return LogSums(found.shift, found.sums, np.ones(n, bool))


def _keys_within_support(problem: SumProblem, rows: np.ndarray) -> np.ndarray:
    """Sorted indices of the keys within (a hair beyond) the support of any of ``rows``
    (a leave-one-out problem's rows: each row's own key among them)."""
    q, k, h = problem.queries[rows], problem.keys, problem.bandwidth
    # the coordinates' rounding (they are not centred) beside a hair of the support
    extent = np.max(np.abs(k), axis=0) / h
    reach = float(problem.kernel.support) * (1 + 1e-6) + 16 * np.finfo(float).eps * extent.max()
    if k.shape[1] == 1:
        near = fgt.keys_within(k[:, 0], q[:, 0], np.full(rows.size, reach * h[0]))
    else:
        from scipy.spatial import cKDTree

        lists = cKDTree(k / h).query_ball_point(q / h, reach)
        near = np.concatenate([np.asarray(found, np.intp) for found in lists])
    return np.unique(near)


BACKEND = Support()
