"""attnpool — attention as differentiable lookup.

Attention pooling over key–value databases and Nadaraya–Watson kernel
regression on JAX: ``Σ_i α(q, k_i) v_i`` with weights from a kernel of the
scaled query–key distance (or a dot-product score), computed in the log domain,
streamed in bounded memory, differentiable end to end.

>>> import numpy as np, attnpool
>>> x = np.linspace(0.0, 5.0, 50); y = np.sin(x)
>>> attnpool.nadaraya_watson(x, y, np.array([2.5]), bandwidth=0.1).round(3)
array([0.595])

Plots live in :mod:`attnpool.plotting` (matplotlib is imported on first use).
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version

from . import datasets, kernels
from .bandwidth import cv_curve, rule_of_thumb, select_bandwidth
from .kernels import Kernel
from .methods.choice import Binned, TopK
from .pooling import (
    EmptyNeighbourhoodWarning,
    attention_pool,
    attention_weights,
    nadaraya_watson,
)
from .regression import local_regression
from .state import PoolingState

try:
    __version__ = version("attnpool")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = [
    "Binned",
    "EmptyNeighbourhoodWarning",
    "Kernel",
    "LearnedAttentionRegressor",
    "LocalLinear",
    "NadarayaWatson",
    "NadarayaWatsonClassifier",
    "PoolingState",
    "TopK",
    "__version__",
    "attention_pool",
    "attention_weights",
    "confidence_band",
    "cv_curve",
    "datasets",
    "fit_attention",
    "kernels",
    "local_regression",
    "nadaraya_watson",
    "rule_of_thumb",
    "select_bandwidth",
]

# Upper layers load on first access (PEP 562), so `import attnpool` stays light.
_LAZY_MODULES = {"plotting", "demo", "cli", "estimator", "learn", "inference"}
_LAZY_NAMES = {
    "NadarayaWatson": "estimator",
    "LocalLinear": "estimator",
    "NadarayaWatsonClassifier": "estimator",
    "LearnedAttentionRegressor": "estimator",
    "fit_attention": "learn",
    "confidence_band": "inference",
}


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(f".{_LAZY_NAMES[name]}", __name__), name)
    raise AttributeError(f"module 'attnpool' has no attribute {name!r}")
