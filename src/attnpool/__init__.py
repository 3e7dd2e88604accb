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

# The one table of the public surface: each name and the module it lives in, loaded on
# first access (PEP 562): `import attnpool` imports neither JAX nor SciPy, so the command
# line answers --help at once. The imports for type checkers below bind the same names
# (a test holds them to this table).
_MODULES = {"cli", "datasets", "demo", "inference", "kernels", "learn", "plotting"}
_NAMES = {
    "Binned": "methods.options",
    "TopK": "methods.options",
    "Tree": "methods.options",
    "EmptyNeighbourhoodWarning": "sums.empty_policy",
    "attention_pool": "pooling",
    "attention_weights": "pooling",
    "nadaraya_watson": "regression",
    "Kernel": "kernels",
    "PoolingState": "sums.state",
    "local_regression": "regression",
    "aicc_curve": "bandwidth",
    "cv_curve": "bandwidth",
    "rule_of_thumb": "bandwidth",
    "select_bandwidth": "bandwidth",
    "NadarayaWatson": "regression.estimator",
    "LocalLinear": "regression.estimator",
    "NadarayaWatsonClassifier": "regression.classifier",
    "LearnedAttentionRegressor": "regression.learned",
    "fit_attention": "learn",
    "confidence_band": "inference",
    "count_programs": "_support.program_cache",
    "significance_test": "inference.significance",
    "censoring_weights": "regression.censoring",
    "KernelDensity": "density.estimator",
    "TiedDataWarning": "bandwidth.resolution",
    "HeavyTailWarning": "density.criterion_checks",
    "select_density_bandwidth": "density.selection",
    "kernel_density": "density",
    "kernel_cdf": "density.distribution",
    "conditional_density": "density.conditional",
    "conditional_cdf": "density.conditional",
    "ConditionalDensity": "density.conditional_estimator",
    "select_conditional_bandwidth": "density.conditional_selection",
    "log_density": "density",
    "SignificanceTest": "inference.significance",
    "lowess": "smoothers",
    "r_lowess": "smoothers",
    "LowessCurve": "smoothers",
    "Loess": "smoothers.loess",
    "show_config": "_support.config",
    "sheather_jones_bandwidth": "bandwidth.r_selectors",
    "biased_cv_bandwidth": "bandwidth.r_selectors",
    "unbiased_cv_bandwidth": "bandwidth.r_selectors",
    "local_polynomial": "regression.polynomial",
    "LocalPolynomial": "regression.polynomial_estimator",
    "binned_local_polynomial": "smoothers.binned_polynomial",
    "local_linear_plug_in_bandwidth": "bandwidth.local_linear_plug_in",
    "normal_scale_matrix": "bandwidth.matrices",
    "density_plug_in_bandwidth": "bandwidth.density_plug_in",
    "plug_in_matrix": "bandwidth.matrix_plug_in",
    "lscv_matrix": "bandwidth.matrices",
    "lscv_matrix_criterion": "bandwidth.matrices",
    "SumProblem": "sums.problem",
    "LogSums": "sums.problem",
    "Backend": "sums.backends",
    "Serves": "sums.backends",
    "register_backend": "sums.backends",
    "unregister_backend": "sums.backends",
    "backend_names": "sums.backends",
}
#: The public surface: the table's names, the modules above and the version.
__all__ = sorted({*_NAMES, "datasets", "kernels", "__version__"})

if TYPE_CHECKING:
    from . import datasets as datasets
    from . import kernels as kernels
    from ._support.config import show_config as show_config
    from ._support.program_cache import count_programs as count_programs
    from .bandwidth import aicc_curve as aicc_curve
    from .bandwidth import cv_curve as cv_curve
    from .bandwidth import rule_of_thumb as rule_of_thumb
    from .bandwidth import select_bandwidth as select_bandwidth
    from .bandwidth.density_plug_in import (
        density_plug_in_bandwidth as density_plug_in_bandwidth,
    )
    from .bandwidth.local_linear_plug_in import (
        local_linear_plug_in_bandwidth as local_linear_plug_in_bandwidth,
    )
    from .bandwidth.matrices import lscv_matrix as lscv_matrix
    from .bandwidth.matrices import lscv_matrix_criterion as lscv_matrix_criterion
    from .bandwidth.matrices import normal_scale_matrix as normal_scale_matrix
    from .bandwidth.matrix_plug_in import plug_in_matrix as plug_in_matrix
    from .bandwidth.r_selectors import biased_cv_bandwidth as biased_cv_bandwidth
    from .bandwidth.r_selectors import sheather_jones_bandwidth as sheather_jones_bandwidth
    from .bandwidth.r_selectors import unbiased_cv_bandwidth as unbiased_cv_bandwidth
    from .bandwidth.resolution import TiedDataWarning as TiedDataWarning
    from .density import kernel_density as kernel_density
    from .density import log_density as log_density
    from .density.conditional import conditional_cdf as conditional_cdf
    from .density.conditional import conditional_density as conditional_density
    from .density.conditional_estimator import ConditionalDensity as ConditionalDensity
    from .density.conditional_selection import (
        select_conditional_bandwidth as select_conditional_bandwidth,
    )
    from .density.criterion_checks import HeavyTailWarning as HeavyTailWarning
    from .density.distribution import kernel_cdf as kernel_cdf
    from .density.estimator import KernelDensity as KernelDensity
    from .density.selection import select_density_bandwidth as select_density_bandwidth
    from .inference.bands import confidence_band as confidence_band
    from .inference.significance import SignificanceTest as SignificanceTest
    from .inference.significance import significance_test as significance_test
    from .kernels import Kernel as Kernel
    from .learn import fit_attention as fit_attention
    from .methods.options import Binned as Binned
    from .methods.options import TopK as TopK
    from .methods.options import Tree as Tree
    from .pooling import attention_pool as attention_pool
    from .pooling import attention_weights as attention_weights
    from .regression import local_regression as local_regression
    from .regression import nadaraya_watson as nadaraya_watson
    from .regression.censoring import censoring_weights as censoring_weights
    from .regression.classifier import NadarayaWatsonClassifier as NadarayaWatsonClassifier
    from .regression.estimator import LocalLinear as LocalLinear
    from .regression.estimator import NadarayaWatson as NadarayaWatson
    from .regression.learned import LearnedAttentionRegressor as LearnedAttentionRegressor
    from .regression.polynomial import local_polynomial as local_polynomial
    from .regression.polynomial_estimator import LocalPolynomial as LocalPolynomial
    from .smoothers import LowessCurve as LowessCurve
    from .smoothers import lowess as lowess
    from .smoothers import r_lowess as r_lowess
    from .smoothers.binned_polynomial import binned_local_polynomial as binned_local_polynomial
    from .smoothers.loess import Loess as Loess
    from .sums.backends import Backend as Backend
    from .sums.backends import Serves as Serves
    from .sums.backends import backend_names as backend_names
    from .sums.backends import register_backend as register_backend
    from .sums.backends import unregister_backend as unregister_backend
    from .sums.empty_policy import EmptyNeighbourhoodWarning as EmptyNeighbourhoodWarning
    from .sums.problem import LogSums as LogSums
    from .sums.problem import SumProblem as SumProblem
    from .sums.state import PoolingState as PoolingState


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
