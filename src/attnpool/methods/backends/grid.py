"""``binned`` as a backend: the keys' values spread onto a grid and convolved with the
kernel's samples (:mod:`attnpool.methods.binned_host`, ``d ≤ 2``), each pooled value
settled where the binning error's bound proves it within ``tolerance · range(values)``
of the exact one; the other rows are for the caller to sum exactly."""

from __future__ import annotations

import numpy as np

from ..._support.units import midrange
from ...sums.backends import Serves
from ...sums.problem import LogSums, SumProblem
from .. import binned, binned_host

__all__ = ["BinnedGrid"]


class BinnedGrid:
    """The ``binned`` backend of pooling (radial kernels, ``d ≤ 2``; unweighted), with its
    nodes per dimension (None: enough per bandwidth for the tolerance) and tolerance."""

    name = "binned"
    serves = Serves(max_columns=2, weights=False, leave_one_out=False, powers=(1,))

    def __init__(self, grid_size: int | tuple[int, ...] | None = None,
                 tolerance: float = 1e-3) -> None:  # fmt: skip
        self.grid_size, self.tolerance = grid_size, tolerance

    def refusal(self, problem: SumProblem) -> str | None:
        """Why it cannot sum ``problem`` (:func:`attnpool.methods.binned.refusal`), or None."""
        return binned.refusal(problem.kernel, problem.keys.shape[1])

    def log_sums(self, problem: SumProblem) -> LogSums:
        """``problem``'s sums about each row's binned weight (``[1, pooled]``; rows of no
        binned weight ``[0, 0]``)."""
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
