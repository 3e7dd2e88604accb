"""Optional dependencies: which extra brings each, and a clear error without it.

``pip install attnpool`` brings what ``import attnpool`` and pooling, regression and
bandwidth selection need (JAX, NumPy, SciPy). Pictures, the command line, learned
attention, Dask and scikit-learn's model selection come with extras.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRAS", "MissingDependencyError", "require"]

#: The extra (``pip install 'attnpool[extra]'``) that brings each optional package.
EXTRAS = {
    "matplotlib": "plot",
    "typer": "cli",
    "optax": "learn",
    "tqdm": "learn",
    "dask": "dask",
    "zarr": "dask",
    "sklearn": "sklearn",
}


class MissingDependencyError(ImportError):
    """A feature's optional dependency is not installed; the message names the extra."""


def require(module: str, feature: str) -> ModuleType:
    """``module`` imported, or a :class:`MissingDependencyError` saying that ``feature``
    needs it and which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        package = module.split(".")[0]
        raise MissingDependencyError(
            f"{feature} needs {package}, which is not installed: "
            f"pip install 'attnpool[{EXTRAS[package]}]'"
        ) from None
