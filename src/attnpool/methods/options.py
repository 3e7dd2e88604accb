"""The ``method=`` argument's names and records, and the exact engines' size rule:
what the public functions check before anything is traced (no JAX here)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "DENSE_MAX_PAIRS",
    "HOST_METHODS",
    "METHODS",
    "TRAITS",
    "Binned",
    "TopK",
    "Traits",
    "exact_engine",
    "resolve",
]


@dataclass(frozen=True)
class Traits:
    """What a pooling method declares about itself.

    ``exact``: within the rounding of the sum over every pair (``fgt``'s truncation,
    1e-14 of each query's weight, counts); ``traceable``: runs inside
    ``jit``/``grad``/``vmap`` (else on concrete arrays, on the host); ``weights``: forms
    the weight matrix; ``accuracy``: its guarantee, in words; ``search``: the
    ``pooling=`` of a CV search with this method — its own leave-one-out sums, or
    ``"auto"`` where it has none (the search then chooses). Which kernels and
    dimensions it serves, each method's module says (``refusal(kernel, d)``).
    """

    exact: bool
    traceable: bool
    weights: bool
    accuracy: str
    search: str = "auto"


#: Every method but ``auto``, and what it declares.
TRAITS = {
    "dense": Traits(True, True, True, "exact", search="dense"),
    "stream": Traits(True, True, True, "exact", search="stream"),
    "fused": Traits(True, True, False, "exact; logits in the inputs' precision"),
    "sparse": Traits(True, False, False, "exact", search="sparse"),
    "fgt": Traits(True, False, False, "truncation within 1e-14 of each query's weight"),
    "native": Traits(True, False, False, "exact"),
    "binned": Traits(False, False, False, "within tolerance × range(values)", search="binned"),
    "topk": Traits(False, False, False, "left-out weight within tolerance"),
}
#: Every method name ``method=`` accepts.
METHODS = ("auto", *TRAITS)
#: Methods that run on concrete arrays (NumPy, SciPy), not inside ``jit``/``grad``/``vmap``.
HOST_METHODS = frozenset(name for name, traits in TRAITS.items() if not traits.traceable)
#: Query–key pairs up to which ``auto`` pools densely.
DENSE_MAX_PAIRS = 2**21


def exact_engine(pairs: int) -> str:
    """The exact engine for ``pairs`` query–key pairs (times the numbers each pair holds):
    ``"dense"`` — one block, the matrix formed — up to :data:`DENSE_MAX_PAIRS`, else
    ``"stream"``. Every path that pools exactly asks here."""
    return "dense" if pairs <= DENSE_MAX_PAIRS else "stream"


@dataclass(frozen=True)
class Binned:
    """Binned pooling (``d ≤ 2``): linear binning, FFT convolution, interpolation.

    Every row is within ``tolerance × range(values)`` of the exact result: a bound on
    binning's error is computed for each row, and rows it cannot settle are pooled
    exactly. ``grid_size``: nodes per dimension (int or one per dimension); by default
    chosen so that the bound settles rows on evenly spread keys.
    """

    grid_size: int | tuple[int, ...] | None = None
    tolerance: float = 1e-3
    name = "binned"


@dataclass(frozen=True)
class TopK:
    """Each query pools its ``k`` nearest keys; a query whose left-out weight
    could exceed ``tolerance`` of its total (see :mod:`attnpool.methods.topk`)
    is an error. ``tolerance=None`` skips the check."""

    k: int = 64
    tolerance: float | None = 1e-3
    name = "topk"


def resolve(method) -> tuple[str, Binned | TopK | None]:
    """``(name, options)`` of a ``method`` argument, or a ``ValueError`` naming what is accepted."""
    if isinstance(method, Binned | TopK):
        _check_options(method)
        return method.name, method
    if isinstance(method, str) and method in METHODS:
        return method, {"binned": Binned(), "topk": TopK()}.get(method)
    raise ValueError(
        f"method: expected one of {', '.join(map(repr, METHODS))} or a Binned/TopK record; "
        f"received {method!r}"
    )


def _check_options(options) -> None:
    if isinstance(options, TopK) and not (
        isinstance(options.k, int | np.integer) and options.k > 0
    ):
        raise ValueError(f"TopK.k: expected a positive integer; received {options.k!r}")
    optional = isinstance(options, TopK)  # TopK(tolerance=None) skips its check
    if not (optional and options.tolerance is None) and not (
        isinstance(options.tolerance, float | int) and 0 < options.tolerance < 1
    ):
        raise ValueError(
            f"{type(options).__name__}.tolerance: expected a number in (0, 1); "
            f"received {options.tolerance!r}"
        )
    grid = getattr(options, "grid_size", None)
    if grid is not None and not np.all(np.asarray(grid) >= 4):
        raise ValueError(f"Binned.grid_size: expected at least 4 nodes; received {grid!r}")
