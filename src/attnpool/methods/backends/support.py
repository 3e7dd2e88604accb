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
        its support — a rest below ``LOO_MIN_WEIGHT`` too, unless no other key lies
        within (a hair beyond) the row's support: a key near its edge weighs less than
        the own term's rounding, and is summed exactly."""
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
            none = np.flatnonzero(raw[:, 0] <= sparse.LOO_MIN_WEIGHT)
            alone = none[_alone(problem, none)]  # (the others near the edge: again, exactly)
            raw[alone], settled[alone] = 0.0, True
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


def _reach(problem: SumProblem) -> float:
    """The support's radius, in bandwidths, and a hair beyond: the coordinates' rounding
    (they are not centred) beside a millionth of the support."""
    extent = float(np.max(np.abs(problem.keys) / problem.bandwidth))
    return float(problem.kernel.support) * (1 + 1e-6) + 16 * float(np.finfo(float).eps) * extent


def _alone(problem: SumProblem, rows: np.ndarray) -> np.ndarray:
    """``(rows.size,)``: whether no key but a leave-one-out row's own lies within (a hair
    beyond) its support — its sums are 0."""
    q, k, h = problem.queries[rows], problem.keys, problem.bandwidth
    reach = _reach(problem)
    if k.shape[1] == 1:
        keys, radius = np.sort(k[:, 0]), reach * h[0]
        counts = np.searchsorted(keys, q[:, 0] + radius, "right") - np.searchsorted(
            keys, q[:, 0] - radius, "left"
        )
    else:
        from scipy.spatial import cKDTree

        counts = cKDTree(k / h).query_ball_point(q / h, reach, return_length=True)
    return np.asarray(counts) <= 1


def _keys_within_support(problem: SumProblem, rows: np.ndarray) -> np.ndarray:
    """Sorted indices of the keys within (a hair beyond) the support of any of ``rows``
    (a leave-one-out problem's rows: each row's own key among them)."""
    q, k, h = problem.queries[rows], problem.keys, problem.bandwidth
    reach = _reach(problem)
    if k.shape[1] == 1:
        near = fgt.keys_within(k[:, 0], q[:, 0], np.full(rows.size, reach * h[0]))
    else:
        from scipy.spatial import cKDTree

        lists = cKDTree(k / h).query_ball_point(q / h, reach)
        near = np.concatenate([np.asarray(found, np.intp) for found in lists])
    return np.unique(near)


BACKEND = Support()
