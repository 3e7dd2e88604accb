"""``binned`` as a backend: the keys spread onto a grid and convolved with the kernel's
samples (:mod:`attnpool.methods.binned_host`, ``d ≤ 2``). A pool's row is settled where
the binning error's bound proves it within ``tolerance · range(values)`` of the exact
one, the other rows left to the layer; a density's (no values) where the bound proves
it within ``tolerance`` of itself, the other rows summed here exactly over the keys
within their reach (:mod:`attnpool.methods.binned_near`)."""

from __future__ import annotations

import math

import numpy as np

from ..._support.units import centred_on_keys, midrange
from ...kernels import Kernel
from ...sums.backends import Serves
from ...sums.problem import LogSums, SumProblem
from .. import binned, binned_host, binned_near
from ..binning import Binning
from .exact import exact_sums

__all__ = ["BinnedGrid"]


class BinnedGrid:
    """The ``binned`` backend (radial kernels, ``d ≤ 2``; observation weights in a
    density's sums), with its nodes per dimension (None: enough per bandwidth for the
    tolerance) and tolerance."""

    name = "binned"
    serves = Serves(max_columns=2, leave_one_out=False, powers=(1,))

    def __init__(self, grid_size: int | tuple[int, ...] | None = None,
                 tolerance: float = 1e-3) -> None:  # fmt: skip
        self.grid_size, self.tolerance = grid_size, tolerance

    def refusal(self, problem: SumProblem) -> str | None:
        """Why it cannot sum ``problem`` (:func:`attnpool.methods.binned.refusal`), or None."""
        if problem.weights is not None and problem.values.shape[1]:
            return "'binned' pools unweighted keys (observation weights: a density's sums)"
        return binned.refusal(problem.kernel, problem.keys.shape[1])

    def log_sums(self, problem: SumProblem) -> LogSums:
        """``problem``'s sums about each row's binned weight (``[1, pooled]``; rows of no
        binned weight ``[0, 0]``); a density's each within ``tolerance`` of itself."""
        if not problem.values.shape[1]:
            return self._density(problem)
        q, k, h, kernel = problem.queries, problem.keys, problem.bandwidth, problem.kernel
        centre = midrange(k)
        pooled, weight, settled, _ = binned_host.binned_pool(
            q - centre, k - centre, problem.values, np.asarray(1.0 / h, np.float64), kernel,
            grid_size=self.grid_size, tolerance=self.tolerance,
        )  # fmt: skip
        weighs = weight > 0
        top = float(np.asarray(kernel.log_profile(np.zeros(()))))  # the weights are K / K(0)
        with np.errstate(divide="ignore"):
            shift = np.where(weighs, np.log(np.where(weighs, weight, 1.0)), 0.0) + top
        sums = np.concatenate([weighs[:, None], np.where(weighs[:, None], pooled, 0.0)], axis=1)
        return LogSums(shift, sums.astype(np.float64), settled)

    def _density(self, problem: SumProblem) -> LogSums:
        """``log Σ w K`` of each row, within ``tolerance`` of itself by binning, or summed
        exactly over the keys within its reach (a row that is every key's: by every key,
        left to the layer)."""
        q, k, h, kernel, w = (problem.queries, problem.keys, problem.bandwidth,
                              problem.kernel, problem.weights)  # fmt: skip
        n, unit = q.shape[0], 0.0
        if w is not None:
            # in units of the smallest weight, whose key weighs at least K(r) in a row's
            # sum (the reach of the rows binning leaves assumes it)
            k, w = k[w > 0], w[w > 0]
            if not w.size:  # no key weighs: every row is empty
                return LogSums(np.zeros(n), np.zeros((n, 1)), np.ones(n, bool))
            unit = math.log(float(np.min(w)))
            w = w / float(np.min(w))
        k, q = centred_on_keys(k, q)
        scale = np.asarray(1.0 / h, np.float64)
        plan = binned_host.plan_grid(q, k, scale, kernel, self.grid_size, self.tolerance)
        if plan.hopeless:
            return LogSums(np.zeros(n), np.zeros((n, 1)), np.zeros(n, bool))
        # one column finds the keys near a row without each key's cell (8 bytes a key)
        sums, error, binning = binned_host.binned_sums(
            q, k, scale, kernel, plan, cells=k.shape[1] == 2, weights=w
        )
        weight = sums[:, 0]
        settled = (weight > 0) & (error <= self.tolerance * weight)
        with np.errstate(divide="ignore", invalid="ignore"):  # unsettled rows: below
            log_sums = np.log(weight) + float(np.asarray(kernel.log_profile(np.zeros(()))))
        again = np.flatnonzero(~settled)
        if again.size:
            log_sums[again] = _near_log_sums(q[again], k, w, h, kernel, binning,
                                             least=weight[again] - error[again])  # fmt: skip
        finite = np.isfinite(log_sums)
        shift = np.where(finite, log_sums, 0.0) + unit
        return LogSums(shift, finite[:, None].astype(np.float64), np.ones(n, bool))


def _near_log_sums(
    rows: np.ndarray, keys: np.ndarray, w: np.ndarray | None, h: np.ndarray, kernel: Kernel,
    binning: Binning, least: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """``log Σ w K`` of ``rows`` over the keys within their reach (binned_near: the keys
    that can weigh more than ``fgt.TOLERANCE`` of a row's sum at least ``least``),
    exactly: the compiled pass where it serves, else the layer's exact sums."""
    scale = np.asarray(1.0 / h, np.float64)
    total = keys.shape[0] if w is None else float(np.sum(w))
    top = float(np.asarray(kernel.log_profile(np.zeros(()))))
    if w is None:  # the compiled pass sums unweighted keys
        summed = binned_near.near_log_sums(rows * scale, kernel, binning, total, least, keys, scale)
        if summed is not None:
            return np.asarray(summed + top)
    near = binned_near.keys_near(rows * scale, kernel, binning, total, least, keys, scale)
    if not near.size:
        return np.full(rows.shape[0], -np.inf)
    weights = None if w is None else w[near]
    found = exact_sums(SumProblem(rows, keys[near], np.zeros((near.size, 0)), h, kernel, weights))
    with np.errstate(divide="ignore"):
        return np.asarray(found.shift + np.log(found.sums[:, 0]))
