"""What a query whose neighbourhood is empty gets (``empty=``), the same in every path.

A compact kernel can leave a query with no key inside its support: ``"nan"`` gives
NaN and one :class:`EmptyNeighbourhoodWarning`, ``"nearest"`` the nearest key's value,
``"warn"`` the nearest key's value and one warning counting those queries (the
estimators' default: their predictions stay finite, as scikit-learn's scorers need),
``"raise"`` a ``ValueError``.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Protocol

import numpy as np

__all__ = [
    "EMPTY_POLICIES",
    "EmptyNeighbourhoodWarning",
    "fills_empty",
    "report_empty",
    "report_keyless",
    "takes_nearest",
]

EMPTY_POLICIES = ("nan", "nearest", "warn", "raise")


#: Where a warning is not the user's line: this package, and the libraries that call an
#: estimator on the user's behalf (scikit-learn's searches and scorers, joblib).
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # attnpool/
_NOT_USERS = (_PACKAGE + os.sep, f"{os.sep}sklearn{os.sep}", f"{os.sep}joblib{os.sep}")


def user_stacklevel() -> int:
    """The ``stacklevel`` at which a warning issued by the caller of this function points
    at the user's line: the first frame outside this package (and outside scikit-learn
    and joblib, which call estimators for the user), however deep the call."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and (
        frame.f_code.co_filename.startswith(_NOT_USERS[0])
        or any(part in frame.f_code.co_filename for part in _NOT_USERS[1:])
    ):
        frame, level = frame.f_back, level + 1
    return level


def takes_nearest(empty: str) -> bool:
    """Whether the policy ``empty`` gives an empty row its nearest key's value."""
    return empty in ("nearest", "warn")


def fills_empty(kernel: _Support, empty: str) -> bool:
    """Whether an empty row takes the nearest-key limit: where the policy ``empty`` says
    so, and always for an unbounded kernel (its rows are empty only when the distances
    pass the float range, and the limit is what its formula tends to there)."""
    return takes_nearest(empty) or not kernel.compact


class EmptyNeighbourhoodWarning(RuntimeWarning):
    """Some queries had no key inside a compact kernel's support, or a mask left them
    none (their result is NaN).

    Examples
    --------
    >>> import warnings, attnpool
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = attnpool.attention_pool([9.0], [0.0, 1.0], [1.0, 2.0], kernel="boxcar")
    >>> caught[0].category.__name__
    'EmptyNeighbourhoodWarning'

    References
    ----------
    Wand, M. P. & Jones, M. C. (1995). *Kernel Smoothing*, section 5.2 (the local
    constant fit is undefined where the kernel weights sum to zero).
    """


class _Support(Protocol):
    """What the policy reads of a kernel record."""

    @property
    def name(self) -> str: ...

    @property
    def compact(self) -> bool: ...


def report_empty(
    kernel: _Support,
    empty: str,
    empty_rows: np.ndarray,
    *,
    stacklevel: int = 3,
    noun: str = "key",
) -> None:
    """The ``empty`` policy for the rows of a compact kernel that no key reached: one
    :class:`EmptyNeighbourhoodWarning` (``"nan"``: their result is NaN; ``"warn"``: they
    took their nearest keys' value) or a ``ValueError`` (``"raise"``). An unbounded
    kernel's empty rows (distances beyond the float range) took the nearest-key limit,
    the formula's own limit, whatever the policy; ``noun`` names the keys in the
    messages (``"training point"`` for the regressions)."""
    if not kernel.compact or empty == "nearest" or not empty_rows.any():
        return
    n_empty = int(np.sum(empty_rows))
    n = len(empty_rows)
    if empty == "warn":
        _warn_nearest(n_empty, n, kernel.name, noun)
        return
    if empty == "raise":
        raise ValueError(
            f"empty: {n_empty} of {n} queries have no {noun} within the {kernel.name!r} "
            "kernel's support; widen the bandwidth or pass empty='nan' or 'nearest'"
        )
    warnings.warn(
        f"{n_empty} of {n} queries have no {noun} within the {kernel.name!r} kernel's "
        f"support; their result is NaN (pass empty='nearest' to use the nearest {noun})",
        EmptyNeighbourhoodWarning,
        stacklevel=user_stacklevel(),
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


def _warn_nearest(n_empty: int, n: int, name: str, noun: str = "key") -> None:
    warnings.warn(
        f"{n_empty} of {n} queries have no {noun} within the {name!r} kernel's support; they "
        f"take their nearest {noun}'s value (pass empty='nearest' to accept that silently, "
        "or empty='nan')",
        EmptyNeighbourhoodWarning,
        stacklevel=user_stacklevel(),
    )
