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
from ..kernels.edges import has_edge
from ..methods.backends import host_backend
from ..methods.options import TRAITS, refusal
from ..sums import layer
from ..sums.local_model import LocalModel
from ..sums.problem import SumProblem
from .grid import SearchLine
from .search import BandwidthSelection, select_on_host, smoothed_out

__all__ = [
    "HOST_POOLINGS",
    "REDO_MAX_PAIRS",
    "cv_objective",
    "host_cv_objective",
    "refuse_weights",
    "select_by_host_sums",
]

#: The ``pooling=`` of a CV search whose sums a host backend gives.
HOST_POOLINGS = tuple(name for name, traits in TRAITS.items() if traits.leave_one_out == "host")

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


def host_cv_objective(
    x, y, model: LocalModel, method: str, pooling: str, exact: Callable[[np.ndarray], float]
) -> Callable[[np.ndarray], float]:
    """``θ (d,) → float``: exact LOO CV of a local-constant fit (unweighted) on the host
    backend ``pooling``'s sums; a bandwidth those cannot settle is evaluated by
    ``exact(θ)`` (the compiled program: JAX is imported only then)."""
    reason = refusal(pooling, model.kernel, x.shape[1])
    if reason or not (method == "cv" and model.degree == 0 and set(model.var_type) == {"c"}):
        raise ValueError(
            f"pooling: {pooling!r} searches CV bandwidths of a local-constant fit (degree=0) "
            f"of continuous columns{' (' + reason + ')' if reason else ''}; received "
            f"method={method!r}, degree={model.degree}, var_type={model.var_type!r}, "
            f"kernel={model.kernel.name!r}"
        )
    by_sums = cv_objective(pooling, x, y, model.kernel)

    def cv(theta) -> float:
        value = by_sums(theta)
        return exact(theta) if value is None else value

    return cv


def select_by_host_sums(
    cv: Callable[[np.ndarray], float], x, model: LocalModel, line: SearchLine, progress
) -> BandwidthSelection:
    """The search of the grid and profiles of ``line`` on :func:`host_cv_objective`'s
    ``cv``."""
    if has_edge(model.kernel):  # the objective jumps as keys enter a support
        return select_on_host(cv, line, progress, model, smooth=False)
    return select_on_host(cv, line, progress, model, limits=smoothed_out(x, model))


def refuse_weights(pooling: str, weights) -> None:
    """A ``ValueError`` naming ``pooling`` where a search on its sums is given weights."""
    if weights is not None:
        raise ValueError(
            f"pooling: {pooling!r} has no weighted leave-one-out sums; with weights (or "
            "repeated rows, which a search merges into weights) the search runs on the "
            "exact engines or binned: pooling='auto', 'dense', 'stream', 'pallas' or 'binned'"
        )
