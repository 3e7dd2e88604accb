"""Uncertainty of a fit: pointwise confidence bands (:mod:`.bands`, asymptotic or
bootstrap) and the significance test of its columns (:mod:`.significance`).

Each name loads its module on first use (the bands' programs import JAX; the test's
replicates may run on the NumPy engine without it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["BAND_METHODS", "BeyondTheDataWarning", "ConfidenceBand", "SignificanceTest",
           "confidence_band", "significance_test"]  # fmt: skip

_HOMES = {
    "BAND_METHODS": "bands",
    "BeyondTheDataWarning": "band_sums",
    "ConfidenceBand": "bands",
    "confidence_band": "bands",
    "SignificanceTest": "significance",
    "significance_test": "significance",
}

if TYPE_CHECKING:
    from .band_sums import BeyondTheDataWarning
    from .bands import BAND_METHODS, ConfidenceBand, confidence_band
    from .significance import SignificanceTest, significance_test


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
