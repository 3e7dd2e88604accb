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
from typing import TYPE_CHECKING, Any

__all__ = [
    "Binned",
    "ConditionalDensity",
    "EmptyNeighbourhoodWarning",
    "Kernel",
    "KernelDensity",
    "LearnedAttentionRegressor",
    "LocalLinear",
    "NadarayaWatson",
    "NadarayaWatsonClassifier",
    "PoolingState",
    "SignificanceTest",
    "TiedDataWarning",
    "TopK",
    "__version__",
    "aicc_curve",
    "attention_pool",
    "attention_weights",
    "censoring_weights",
    "conditional_cdf",
    "conditional_density",
    "confidence_band",
    "count_programs",
    "cv_curve",
    "datasets",
    "fit_attention",
    "kernel_cdf",
    "kernel_density",
    "kernels",
    "local_regression",
    "log_density",
    "nadaraya_watson",
    "rule_of_thumb",
    "select_bandwidth",
    "select_conditional_bandwidth",
    "select_density_bandwidth",
    "significance_test",
]

# Every module loads on first access (PEP 562): `import attnpool` imports neither
# JAX nor SciPy, so the command line answers --help at once.
_MODULES = {"cli", "datasets", "demo", "estimator", "inference", "kernels", "learn", "plotting"}
_NAMES = {
    "Binned": "methods.options",
    "TopK": "methods.options",
    "EmptyNeighbourhoodWarning": "empty_policy",
    "attention_pool": "pooling",
    "attention_weights": "pooling",
    "nadaraya_watson": "regression",
    "Kernel": "kernels",
    "PoolingState": "state",
    "local_regression": "regression",
    "aicc_curve": "bandwidth",
    "cv_curve": "bandwidth",
    "rule_of_thumb": "bandwidth",
    "select_bandwidth": "bandwidth",
    "NadarayaWatson": "estimator",
    "LocalLinear": "estimator",
    "NadarayaWatsonClassifier": "classifier",
    "LearnedAttentionRegressor": "learned",
    "fit_attention": "learn",
    "confidence_band": "inference",
    "count_programs": "_cache",
    "significance_test": "significance",
    "censoring_weights": "censoring",
    "KernelDensity": "density_estimator",
    "TiedDataWarning": "density_estimator",
    "select_density_bandwidth": "density_estimator",
    "kernel_density": "density",
    "kernel_cdf": "distribution",
    "conditional_density": "conditional",
    "conditional_cdf": "conditional",
    "ConditionalDensity": "conditional_estimator",
    "select_conditional_bandwidth": "conditional",
    "log_density": "density",
    "SignificanceTest": "significance",
}

if TYPE_CHECKING:
    from . import datasets, kernels
    from ._cache import count_programs
    from .bandwidth import aicc_curve, cv_curve, rule_of_thumb, select_bandwidth
    from .censoring import censoring_weights
    from .classifier import NadarayaWatsonClassifier
    from .conditional import conditional_cdf, conditional_density, select_conditional_bandwidth
    from .conditional_estimator import ConditionalDensity
    from .density import kernel_density, log_density
    from .density_estimator import KernelDensity, TiedDataWarning, select_density_bandwidth
    from .distribution import kernel_cdf
    from .empty_policy import EmptyNeighbourhoodWarning
    from .estimator import LocalLinear, NadarayaWatson
    from .inference import confidence_band
    from .kernels import Kernel
    from .learn import fit_attention
    from .learned import LearnedAttentionRegressor
    from .methods.options import Binned, TopK
    from .pooling import attention_pool, attention_weights
    from .regression import local_regression, nadaraya_watson
    from .significance import SignificanceTest, significance_test
    from .state import PoolingState


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _NAMES:
        value = getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
        globals()[name] = value  # later lookups skip this function
        return value
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("attnpool")
        except PackageNotFoundError:  # running from a source tree without installing
            return "0.0.0"
    raise AttributeError(f"module 'attnpool' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | _MODULES)
