"""The host methods behind the backend protocol: the exact ``fgt``, ``sparse`` and
``native``, and ``tree``, ``topk`` and ``binned`` (within their tolerances), each a
module that declares what it serves and implements ``log_sums(problem) -> LogSums``
(:class:`attnpool.sums.backends.Backend`), the same small interface as a backend of
your own. Pooling (:mod:`attnpool.engines.host_methods`) and densities
(:mod:`attnpool.density.methods`) call the same one per method, and finish its answer
as every backend's is finished (:mod:`attnpool.sums.layer`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ...sums.backends import Backend
from ...sums.problem import SumProblem
from ..options import Binned, TopK, Tree
from .exact import EXACT_HOST
from .kd_tree import KdTree

__all__ = ["BUILT_IN", "CONFIGURED", "BuiltInBackend", "host_backend"]


class BuiltInBackend(Backend, Protocol):
    """A built-in backend: the protocol, and the reason it refuses a problem (its
    method's own words, which its front ends raise naming the argument)."""

    def refusal(self, problem: SumProblem) -> str | None:
        """Why it cannot sum ``problem``, or None."""
        ...


#: The built-in exact host backends by name.
BUILT_IN: dict[str, BuiltInBackend] = dict(EXACT_HOST)


def _kd_tree(options: Tree) -> BuiltInBackend:
    return KdTree(options.rtol, options.atol, options.leaf_size)


def _nearest_keys(options: TopK) -> BuiltInBackend:
    from .nearest_keys import NearestKeys  # (SciPy's k-d tree: only when asked)

    return NearestKeys(options.k, options.tolerance)


def _grid(options: Binned) -> BuiltInBackend:
    from .grid import BinnedGrid

    return BinnedGrid(options.grid_size, options.tolerance)


#: The host backends made with their method's record, by name: the record's type and
#: how a backend is made of one.
CONFIGURED: dict[str, tuple[type, Callable[[Any], BuiltInBackend]]] = {
    "tree": (Tree, _kd_tree),
    "topk": (TopK, _nearest_keys),
    "binned": (Binned, _grid),
}


def host_backend(name: str, options: Binned | TopK | Tree | None = None) -> BuiltInBackend:
    """The built-in host backend ``name``: ``"fgt"``, ``"sparse"``, ``"native"``, or
    ``"tree"``, ``"topk"``, ``"binned"`` with the settings of ``options`` (the method's
    record; its defaults where None)."""
    if name in BUILT_IN:
        return BUILT_IN[name]
    if name not in CONFIGURED:
        raise ValueError(
            f"method: {name!r} is not a host method; those are "
            f"{', '.join(map(repr, [*BUILT_IN, *CONFIGURED]))}"
        )
    record, make = CONFIGURED[name]
    return make(options if isinstance(options, record) else record())
