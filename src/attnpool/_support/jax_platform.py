"""Whether JAX computes on the CPU, known without importing it where that can be told:
importing JAX costs a first call ~1 s, which the host methods do not need.

JAX computes elsewhere only through a plugin (CUDA, ROCm), the TPU library or a
platform named in ``JAX_PLATFORMS``; without any of them its backend is the CPU. Once
JAX is imported, its configuration is read, and once its backends are up, it is asked.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys

#: Modules through which JAX finds an accelerator: its plugins' namespace, the plugins
#: it ships as packages, and the TPU library.
ACCELERATOR_MODULES = (
    "jax_plugins",
    "jax_cuda12_plugin",
    "jax_cuda13_plugin",
    "jax_rocm60_plugin",
    "jax_rocm7_plugin",
    "jax_metal",
    "libtpu",
)


def computes_on_cpu() -> bool:
    """Whether JAX's default backend is the CPU: asked of JAX once it is imported; before,
    True only where ``JAX_PLATFORMS`` names the CPU first, or is unset and no module of
    :data:`ACCELERATOR_MODULES` is installed (False where that cannot be told)."""
    jax = sys.modules.get("jax")
    if jax is None:
        return _no_accelerator(os.environ.get("JAX_PLATFORMS", "").strip().lower())
    platforms = _configured_platforms(jax)
    if platforms is None:  # its backends are up (or JAX changed): asked
        return bool(jax.default_backend() == "cpu")
    return _no_accelerator(platforms)


def _configured_platforms(jax) -> str | None:
    """``JAX_PLATFORMS`` as JAX's configuration holds it (set in the environment or by
    ``jax.config.update``) while its backends are not started — starting them costs a
    first call ~20 ms — else None."""
    try:
        from jax._src import xla_bridge

        if xla_bridge.backends_are_initialized():
            return None
        return str(jax.config.jax_platforms or "").strip().lower()
    except (ImportError, AttributeError):
        return None


@functools.cache
def _no_accelerator(platforms: str) -> bool:
    if platforms:
        return platforms.split(",")[0].strip() == "cpu"
    return all(importlib.util.find_spec(name) is None for name in ACCELERATOR_MODULES)
