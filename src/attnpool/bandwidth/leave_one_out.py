"""Exact leave-one-out CV objectives from a host method's leave-one-out sums.

For searches too large for all pairs, the method named by ``pooling=`` (its traits say
``leave_one_out="host"``) sums each point over the others —
``leave_one_out_sums(points, values, scale, kernel)`` in its module: ``sparse``
(compact kernels, neighbourhoods only), ``fgt`` (the Gaussian in one column, truncated
expansions), ``native`` (the Gaussian, the compiled loop with the own pair masked) —
and the objective is the mean squared residual of those sums' ratios.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..kernels import Kernel
from ..methods.options import host_leave_one_out


def cv_objective(method: str, x, y, kernel: Kernel) -> Callable[[np.ndarray], float | None]:
    """``θ (d,) → float``: the local-constant LOO CV objective at bandwidths ``exp(θ)`` by
    ``method``'s sums; ``inf`` where some point has no neighbour, None where the method
    cannot settle that bandwidth (the caller then computes it another way).
    ``x (n, d)``, ``y (n, p)``."""
    leave_one_out_sums = host_leave_one_out(method)
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)

    def objective(theta) -> float | None:
        rest = leave_one_out_sums(x, y, np.exp(-np.asarray(theta, np.float64)), kernel)
        if rest is None:
            return None
        if not np.all(rest[:, 0] > 0):  # some point has no neighbour: undefined
            return np.inf
        return float(np.mean((y - rest[:, 1:] / rest[:, :1]) ** 2))

    return objective
