"""The sums layer's exact re-sums: the backend the planner's finishing table gives a
problem (:mod:`attnpool.sums.plan`) — NumPy pairs, the exact host backends ``fgt``,
``sparse``, ``native`` (no JAX), or a compiled exact engine — and an answer's rows it
does not vouch for replaced by another's (:func:`settled_sums`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...sums.backends import NUMPY_PAIRS, Backend, exact_log_sums
from ...sums.facts import finish_facts
from ...sums.plan import Plan, plan
from ...sums.problem import LogSums, SumProblem
from . import compiled_loop, expansions, support

__all__ = [
    "EXACT_HOST", "EXACT_ON_HOST", "exact_host_backend", "exact_plan", "exact_sums", "settled_sums",
]  # fmt: skip

#: The exact host backends a re-sum may take, by name.
EXACT_HOST = {b.name: b for b in (expansions.BACKEND, support.BACKEND, compiled_loop.BACKEND)}
#: The backends of the exact tables' host rules: NumPy pairs and the exact host backends.
EXACT_ON_HOST: dict[str, Backend] = {NUMPY_PAIRS.name: NUMPY_PAIRS, **EXACT_HOST}


def exact_plan(problem: SumProblem, table: str = "finish") -> Plan:
    """The planner's choice for summing every pair of ``problem`` exactly, by its
    ``table`` (``"finish"`` or ``"chunk"``)."""
    return plan(finish_facts(problem)._replace(task=table))


def exact_sums(problem: SumProblem, table: str = "finish") -> LogSums:
    """Every pair of ``problem`` summed exactly, by the backend the planner's ``table``
    gives it (:mod:`attnpool.sums.plan`): ``"finish"``, the finishing step's — NumPy
    pairs (:func:`exact_log_sums`), or beyond them an exact host backend (``fgt``,
    ``sparse``, ``native``: no JAX) or the compiled exact engine
    (:mod:`attnpool.engines.compiled_backends`) —, or ``"chunk"``, a Dask chunk's (the
    same without NumPy pairs); the rows it does not vouch for by NumPy pairs."""
    name = exact_plan(problem, table).backend
    backend = _exact_backend(name)
    return settled_sums(name, problem, backend.log_sums(problem), exact_log_sums)


def exact_host_backend(problem: SumProblem) -> Backend:
    """The backend the planner's finishing table gives ``problem`` where it runs on the
    host — NumPy pairs, or beyond them ``fgt``, ``sparse`` or ``native`` — else NumPy
    pairs: the sums of a search that runs on the host, which imports no JAX."""
    return EXACT_ON_HOST.get(plan(finish_facts(problem)).backend, NUMPY_PAIRS)


def _exact_backend(name: str) -> Backend:
    if name in EXACT_ON_HOST:
        return EXACT_ON_HOST[name]
    from ...engines.compiled_backends import ENGINES  # (JAX: only for the compiled engines)

    return ENGINES[name]


def settled_sums(
    name: str, problem: SumProblem, found: LogSums, again: Callable[[SumProblem], LogSums]
) -> LogSums:
    """``found`` checked, its unsettled and non-finite rows replaced by ``again``'s."""
    n, width = problem.sizes[0], problem.width
    shift, sums, settled = found
    shift, sums = np.asarray(shift, np.float64), np.asarray(sums, np.float64)
    settled = np.asarray(settled, bool)
    if shift.shape != (n,) or sums.shape != (n, width) or settled.shape != (n,):
        raise ValueError(
            f"backend {name!r}: log_sums must return shift ({n},), sums ({n}, {width}) and "
            f"settled ({n},); received {shift.shape}, {sums.shape}, {settled.shape}"
        )
    with np.errstate(invalid="ignore"):
        settled = settled & np.isfinite(shift) & np.all(np.isfinite(sums), axis=1)
        settled &= sums[:, 0] >= 0
    if not settled.all():
        shift, sums = shift.copy(), sums.copy()
        redone = again(problem.rows(~settled))
        shift[~settled], sums[~settled] = redone.shift, redone.sums
    return LogSums(shift, sums, np.ones(n, bool))
