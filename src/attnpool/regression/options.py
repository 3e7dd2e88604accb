"""How a regression is fitted, besides its data and bandwidth: one frozen record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["FitOptions"]


@dataclass(frozen=True)
class FitOptions:
    """How a regression is fitted, besides its data and bandwidth: one record from the
    estimator's parameters (or the command line's), read by
    :func:`attnpool.regression.estimation.fitted_bandwidth` and
    :func:`~attnpool.regression.estimation.predict` and by the pair fits
    (:mod:`attnpool.regression.pairs`: ``bandwidth_type`` by neighbours, higher-order
    kernels). ``estimator`` names the estimator in messages."""

    kernel: Any = "gaussian"
    degree: int = 0
    var_type: str | None = None
    empty: str = "warn"
    block_size: int | None = None
    method: Any = "auto"
    estimator: str = "NadarayaWatson"
    bandwidth_type: str = "fixed"
