"""``attnpool.show_config()``: what runs on this machine, as NumPy's ``show_config`` tells
it: the versions, the processor's instruction sets, the compiled loops (the library
loaded and its instruction set, those built into the package, those this processor
runs, the threads they use) and JAX's backend and devices."""

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
    from ..methods import compiled
    from ..methods.threads import cores

    loops = compiled.loops()
    if loops is None:
        loaded = f"none: {compiled.unavailable_reason()}; the XLA forms are used"
    else:
        loaded = f"{loops.instruction_set} ({compiled.INSTRUCTION_SETS[loops.instruction_set]})"
    return {
        "loaded": loaded,
        "library": loops.path if loops is not None else "none",
        "built for": [name for name in compiled.INSTRUCTION_SETS if compiled.library_path(name)],
        "this processor runs": list(compiled.instruction_sets_run()),
        "chosen by": f"{compiled.VARIABLE}={compiled.choice()}",
        "threads": cores(),
    }


def _jax() -> dict[str, Any]:
    import jax

    return {
        "backend": jax.default_backend(),
        "devices": [str(device) for device in jax.devices()],
        "float64 enabled globally": bool(getattr(jax.config, "jax_enable_x64", False)),
    }
