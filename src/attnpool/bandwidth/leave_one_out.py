"""Exact leave-one-out CV objectives from a built-in host backend's leave-one-out sums.

For searches too large for all pairs, the backend named by ``pooling=``
(:mod:`attnpool.methods.backends`: ``sparse``, compact kernels, neighbourhoods only;
``fgt``, the Gaussian in one column, truncated expansions; ``native``, the Gaussian, the
compiled loop with the own pair masked) sums each point over the others — a
:meth:`~attnpool.sums.problem.SumProblem.leave_one_out` problem, as a registered
backend's search asks for it — the layer sums the rows it leaves exactly, and the
objective is the mean squared residual of those sums' ratios.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..kernels import Kernel
from ..methods.backends import host_backend
from ..sums import layer
from ..sums.problem import SumProblem

__all__ = ["REDO_MAX_PAIRS", "cv_objective"]

#: Most pairs summed exactly for the points a backend leaves; beyond, the objective gives
#: the bandwidth up (the caller computes it another way).
REDO_MAX_PAIRS = 2**27


def cv_objective(method: str, x, y, kernel: Kernel) -> Callable[[np.ndarray], float | None]:
    """``θ (d,) → float``: the local-constant LOO CV objective at bandwidths ``exp(θ)`` by
    ``method``'s sums; ``inf`` where some point has no neighbour, None where the method
    cannot settle that bandwidth (the caller then computes it another way).
    ``x (n, d)``, ``y (n, p)``."""
    backend = host_backend(method)
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)

    def objective(theta) -> float | None:
        h = np.exp(np.asarray(theta, np.float64))
        problem = SumProblem.leave_one_out(x, y, h, kernel)
        found = backend.log_sums(problem)
        if np.count_nonzero(~found.settled) * x.shape[0] > REDO_MAX_PAIRS:
            return None
        rest = layer.finish(backend.name, problem, found).sums
        if not np.all(rest[:, 0] > 0):  # some point has no neighbour: undefined
            return np.inf
        return float(np.mean((y - rest[:, 1:] / rest[:, :1]) ** 2))

    return objective
