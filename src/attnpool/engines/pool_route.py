"""How a pool is computed once its method is chosen: one record through the engines.

Pooling's calls below the front end (:mod:`.dispatch`, :mod:`.host_methods`,
:mod:`.programs`) take the kernel, the method and what it needs as one :class:`PoolRoute`
instead of loose keywords; it is hashable, so the programs take it as a static argument.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..kernels import Kernel

__all__ = ["PoolRoute"]


class PoolRoute(NamedTuple):
    """A pool's kernel and method, and the settings of its engine.

    Attributes
    ----------
    kernel : Kernel
    method : str
        A method chosen already (:mod:`attnpool.methods.choice`), never ``"auto"``.
    nearest : bool
        Rows of no weight take the nearest-key limit (else NaN and empty).
    key_block : int, optional
        Keys per block of the streamed engines (None: their default).
    options : Binned, TopK or Tree, optional
        A configured host method's record (None: its defaults).
    """

    kernel: Kernel
    method: str
    nearest: bool
    key_block: int | None = None
    options: Any = None
