"""Leave-one-out CV of a Nadaraya–Watson fit on a registered backend
(:mod:`attnpool.sums.backends`): the objective of :func:`attnpool.select_bandwidth`'s
host search when ``pooling=`` names one, from the backend's leave-one-out sums — and of
a weighted search on the built-in backend the planner takes (``fgt``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..sums import layer
from ..sums.backends import Backend
from ..sums.local_model import LocalModel, bandwidth_of
from ..sums.problem import SumProblem

__all__ = ["check_served", "loo_objective"]


def check_served(name: str, model: LocalModel, method: str) -> None:
    """A ``ValueError`` naming the argument where a registered backend's search cannot
    apply: leave-one-out CV of a local-constant fit of continuous columns."""
    if method != "cv":
        raise ValueError(f"method: backend {name!r} searches by leave-one-out 'cv'; "
                         f"received {method!r}")  # fmt: skip
    if model.degree != 0:
        raise ValueError(
            f"degree: backend {name!r} sums a local-constant fit's leave-one-out terms "
            f"(degree=0); received {model.degree}"
        )
    if model.categorical:
        raise ValueError(
            f"var_type: backend {name!r} sums continuous columns; received {model.var_type!r}"
        )


def loo_objective(
    name: str | Backend, x: np.ndarray, y: np.ndarray, model: LocalModel,
    weights: np.ndarray | None,
) -> Callable[[np.ndarray], float]:  # fmt: skip
    """``θ (d,) → float``: the (weighted) mean squared leave-one-out residual at the
    bandwidths ``exp(θ)``, ``inf`` where some row has no other key of weight; ``name``
    a registered backend's, or a built-in backend itself."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    w = None if weights is None else np.asarray(weights, np.float64)

    def objective(theta: np.ndarray) -> float:
        h = np.asarray(bandwidth_of(theta, model), np.float64)
        problem = SumProblem.leave_one_out(x, y, h, model.kernel, w)
        residuals = y - layer.loo_fit(name, problem, "pooling")
        if not np.all(np.isfinite(residuals)):
            return np.inf
        squares = np.mean(residuals**2, axis=1)
        return float(squares.mean() if w is None else w @ squares / w.sum())

    return objective
