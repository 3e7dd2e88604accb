"""The host methods behind the backend protocol: the exact ``fgt``, ``sparse`` and
``native``, and ``tree`` (within its tolerances), each a module that declares what it
serves and implements ``log_sums(problem) -> LogSums``
(:class:`attnpool.sums.backends.Backend`), the same small interface as a backend of
your own. Pooling (:mod:`attnpool.engines.host_methods`) and densities
(:mod:`attnpool.density.methods`) call the same one per method, and finish its answer
as every backend's is finished (:mod:`attnpool.sums.layer`)."""

from __future__ import annotations

from typing import Protocol

from ...sums.backends import Backend
from ...sums.problem import SumProblem
from ..options import Tree
from . import compiled_loop, expansions, support
from .kd_tree import KdTree

__all__ = ["BUILT_IN", "BuiltInBackend", "host_backend"]


class BuiltInBackend(Backend, Protocol):
    """A built-in backend: the protocol, and the reason it refuses a problem (its
    method's own words, which its front ends raise naming the argument)."""

    def refusal(self, problem: SumProblem) -> str | None:
        """Why it cannot sum ``problem``, or None."""
        ...


#: The built-in exact host backends by name.
BUILT_IN: dict[str, BuiltInBackend] = {
    backend.name: backend
    for backend in (expansions.BACKEND, support.BACKEND, compiled_loop.BACKEND)
}


def host_backend(name: str, options: Tree | None = None) -> BuiltInBackend:
    """The built-in host backend ``name``: ``"fgt"``, ``"sparse"``, ``"native"``, or
    ``"tree"`` with the tolerances of ``options`` (its defaults: ``Tree()``)."""
    if name in BUILT_IN:
        return BUILT_IN[name]
    chosen = options if isinstance(options, Tree) else Tree()
    return KdTree(chosen.rtol, chosen.atol, chosen.leaf_size)
