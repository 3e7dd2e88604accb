"""``attnpool.show_config()``: what runs on this machine, as NumPy's ``show_config`` tells
it: the versions, the processor's instruction sets, the compiled loops (the compiler,
whether they are built, where they are cached, the threads they use) and JAX's backend
and devices. Nothing is compiled to answer: a loop not built yet is reported so."""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from typing import Any

__all__ = ["show_config"]

#: ``/proc/cpuinfo`` flags and the instruction sets they name, widest first.
INSTRUCTION_SETS = (("avx512f", "AVX-512F"), ("avx2", "AVX2"), ("fma", "FMA"), ("sse2", "SSE2"),
                    ("asimd", "NEON (ASIMD)"), ("neon", "NEON"))  # fmt: skip


def show_config(mode: str = "stdout") -> dict[str, dict[str, Any]] | None:
    """Print (``mode="stdout"``) or return (``mode="dicts"``) how attnpool runs here.

    Parameters
    ----------
    mode : {"stdout", "dicts"}
        Print the sections, or return them as nested dictionaries.

    Returns
    -------
    dict or None
        With ``mode="dicts"``: sections ``"versions"``, ``"processor"``,
        ``"compiled loops"`` and ``"JAX"``, each a dictionary.

    Examples
    --------
    >>> import attnpool
    >>> config = attnpool.show_config(mode="dicts")
    >>> sorted(config)
    ['JAX', 'compiled loops', 'processor', 'versions']
    >>> config["compiled loops"]["threads"] >= 1
    True

    References
    ----------
    NumPy's ``numpy.show_config(mode="stdout" | "dicts")``.
    """
    if mode not in ("stdout", "dicts"):
        raise ValueError(f"mode must be 'stdout' or 'dicts'; got {mode!r}")
    sections = {
        "versions": _versions(),
        "processor": _processor(),
        "compiled loops": _compiled_loops(),
        "JAX": _jax(),
    }
    if mode == "dicts":
        return sections
    for title, entries in sections.items():
        print(f"{title}:")
        for key, value in entries.items():
            shown = ", ".join(map(str, value)) if isinstance(value, list) else value
            print(f"  {key}: {shown}")
    return None


def _versions() -> dict[str, Any]:
    out: dict[str, Any] = {"python": sys.version.split()[0], "platform": platform.platform()}
    for package in ("attnpool", "numpy", "scipy", "jax", "jaxlib"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out


def _processor() -> dict[str, Any]:
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith(("flags", "Features")):
                    flags.update(line.split(":", 1)[1].split())
    except OSError:
        pass
    found = [name for flag, name in INSTRUCTION_SETS if flag in flags]
    return {"machine": platform.machine(), "instruction sets": found or ["not reported"]}


def _compiled_loops() -> dict[str, Any]:
    from ._cache import cache_root
    from .methods import native
    from .methods.build import FLAGS, compiler, compiler_found
    from .methods.threads import cores

    name = compiler()
    found = compiler_found(name)
    built = native.ready(True, 1, 1)
    if built:
        state = "built (in the cache)"
    elif found:
        state = "not built yet: compiled on first use"
    else:
        state = "unavailable: no C compiler (set $CC); the XLA forms are used"
    root = cache_root()
    return {
        "compiler": f"{name} ({'found' if found else 'not found'})",
        "flags": " ".join([*FLAGS, "-march=native"]),
        "native loop": state,
        "host expansions": "built (in the cache)" if native.expansions_ready() else "not built",
        "cache": str(root / "native") if root is not None else "off",
        "threads": cores(),
    }


def _jax() -> dict[str, Any]:
    import jax

    return {
        "backend": jax.default_backend(),
        "devices": [str(device) for device in jax.devices()],
        "float64 enabled globally": bool(getattr(jax.config, "jax_enable_x64", False)),
    }
