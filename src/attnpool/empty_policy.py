"""What a query whose neighbourhood is empty gets (``empty=``), the same in every path.

A compact kernel can leave a query with no key inside its support: ``"nan"`` gives
NaN and one :class:`EmptyNeighbourhoodWarning`, ``"nearest"`` the nearest key's value,
``"raise"`` a ``ValueError``.
"""

from __future__ import annotations

import warnings
from typing import Protocol

import numpy as np

__all__ = [
    "EMPTY_POLICIES",
    "EmptyNeighbourhoodWarning",
    "check_empty",
    "report_empty",
    "report_keyless",
]

EMPTY_POLICIES = ("nan", "nearest", "raise")


class EmptyNeighbourhoodWarning(RuntimeWarning):
    """Some queries had no key inside a compact kernel's support, or a mask left them
    none (their result is NaN)."""


class _Support(Protocol):
    """What the policy reads of a kernel record."""

    @property
    def name(self) -> str: ...

    @property
    def compact(self) -> bool: ...


def report_empty(
    kernel: _Support, empty: str, empty_rows: np.ndarray, *, stacklevel: int = 3
) -> None:
    """The ``empty`` policy for the rows of a compact kernel that no key reached: one
    :class:`EmptyNeighbourhoodWarning` (``"nan"``) or a ``ValueError`` (``"raise"``)."""
    n_empty = int(np.sum(empty_rows))
    if not (kernel.compact and empty != "nearest" and n_empty):
        return
    n = len(empty_rows)
    if empty == "raise":
        raise ValueError(
            f"empty: {n_empty} of {n} queries have no key within the {kernel.name!r} "
            "kernel's support; widen the bandwidth or pass empty='nan' or 'nearest'"
        )
    warnings.warn(
        f"{n_empty} of {n} queries have no key within the {kernel.name!r} kernel's "
        "support; their result is NaN (pass empty='nearest' to use the nearest key)",
        EmptyNeighbourhoodWarning,
        stacklevel=stacklevel,
    )


def report_keyless(empty: str, keyless: int, n: int, *, stacklevel: int = 3) -> None:
    """The ``empty`` policy for ``keyless`` queries of ``n`` whose every key a mask
    hides: there is no key to pool, nor a nearest one, so their result is NaN with one
    :class:`EmptyNeighbourhoodWarning` (``"nan"``, ``"nearest"``), or a ``ValueError``
    (``"raise"``)."""
    if not keyless:
        return
    if empty == "raise":
        raise ValueError(
            f"mask: {keyless} of {n} queries have every key masked; allow each query a key "
            "or pass empty='nan'"
        )
    warnings.warn(
        f"{keyless} of {n} queries have every key masked; their result is NaN",
        EmptyNeighbourhoodWarning,
        stacklevel=stacklevel,
    )


def check_empty(empty: str, empty_rows: np.ndarray) -> None:
    """``empty="raise"``: a ``ValueError`` if some query's neighbourhood is empty."""
    if empty == "raise" and empty_rows.any():
        raise ValueError(
            f"empty: {int(empty_rows.sum())} of {len(empty_rows)} queries have no training point "
            "within the kernel's support; widen the bandwidth or pass empty='nan' or 'nearest'"
        )
