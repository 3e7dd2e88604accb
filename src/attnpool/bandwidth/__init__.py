"""Bandwidth selection: rules of thumb, leave-one-out cross-validation and AICc.

- ``"scott"``, ``"silverman"``: rules of thumb (:mod:`attnpool.bandwidth.rules`);
- ``"cv"``: least-squares leave-one-out cross-validation,
  ``CV(h) = (1/n) Σ_i (y_i − ĝ₋ᵢ(x_i))²``, each point's own pair masked inside the
  streamed blocks (no refits, never an ``n × n`` matrix for large ``n``);
- ``"aicc"``: Hurvich, Simonoff & Tsai (1998),
  ``log σ̂² + (1 + tr H / n) / (1 − (tr H + 2) / n)``, ``H`` the smoother matrix.

The search finds the global minimum of the criterion over a wide range, not the
nearest local one: a coarse grid of multiples of the rule of thumb, then a local
refinement from the best grid point. Small searches, and Gaussian ones in several
columns at any size, run on the host (:mod:`attnpool.engines.numpy_engine`, NumPy or the
``native`` C loop; Brent's method in one column, L-BFGS on differences in several; no
program to build); the others are compiled (:mod:`attnpool.bandwidth.compiled`: L-BFGS-B
with gradients from JAX autodiff). Data are first put in search units
(:mod:`attnpool._support.units`), so the search sees the same numbers whatever the data's scale
and offset. A bandwidth at which some
point has no neighbour (compact kernels) scores ``inf``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "BandwidthSelection",
    "ConstantResponseWarning",
    "FlatCriterionWarning",
    "aicc_curve",
    "cv_curve",
    "rule_of_thumb",
    "select_bandwidth",
]

#: Where each name lives, imported on first use: a density's search needs the search
#: and its minimisers only, not the regressions' engines (~2 ms of a first call).
_NAMES = {
    "BandwidthSelection": "search",
    "ConstantResponseWarning": "search",
    "FlatCriterionWarning": "flat_criteria",
    "GRID": "grid",
    "rule_of_thumb": "rules",
    "NUMPY_SEARCH_XATOL": "selection",
    "POOLINGS": "selection",
    "SELECTORS": "selection",
    "aicc_curve": "curves",
    "cv_curve": "curves",
    "select_bandwidth": "selection",
}

if TYPE_CHECKING:
    from .curves import aicc_curve, cv_curve
    from .flat_criteria import FlatCriterionWarning
    from .grid import GRID as GRID
    from .rules import rule_of_thumb
    from .search import BandwidthSelection, ConstantResponseWarning
    from .selection import NUMPY_SEARCH_XATOL as NUMPY_SEARCH_XATOL
    from .selection import POOLINGS as POOLINGS
    from .selection import SELECTORS as SELECTORS
    from .selection import select_bandwidth


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        value = getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
