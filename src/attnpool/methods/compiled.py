"""The compiled loops, built with the package: one library per instruction set.

``meson.build`` compiles the methods' C sources when the package is built — never at
run time — into one library per instruction set, each holding every loop:
``_loops_baseline`` (x86-64: SSE2; aarch64: NEON; any other processor: its own
baseline) and, on x86-64, ``_loops_avx2`` (x86-64-v3: AVX2 and FMA) and
``_loops_avx512`` (x86-64-v4: AVX-512 F, CD, BW, DQ and VL). As NumPy's CPU dispatch
does, the first call asks the processor which of them it and its operating system run
(the baseline library's ``attnpool_instruction_sets``, from ``cpuid`` and ``xgetbv``)
and loads the widest one.

``ATTNPOOL_INSTRUCTION_SET`` chooses instead: ``baseline``, ``avx2`` or ``avx512`` (one
this processor runs), or ``none`` for no compiled loops (every caller then takes the
XLA form, as where no library loads). Where the libraries cannot load — a source tree
that was never built, a damaged installation — one ``RuntimeWarning`` per process names
the cause and what falling back costs; where only a wider one does not, the next one
loads, with a warning that says so.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import warnings
from dataclasses import dataclass
from typing import Any

#: The instruction sets, widest first, and what each is compiled for.
INSTRUCTION_SETS = {
    "avx512": "x86-64-v4: AVX-512 F, CD, BW, DQ, VL",
    "avx2": "x86-64-v3: AVX2, FMA, BMI1/2, F16C",
    "baseline": "the processor's baseline (x86-64: SSE2; aarch64: NEON)",
}
#: The environment variable that chooses an instruction set, or ``none``.
VARIABLE = "ATTNPOOL_INSTRUCTION_SET"
#: Its values: auto (the default), one of :data:`INSTRUCTION_SETS`, or none.
CHOICES = ("auto", *INSTRUCTION_SETS, "none")
#: What the process pays where no library loads (the warning's second half).
FALLBACK_COST = (
    "the XLA forms are used instead: a first fit compiles JAX programs (seconds, not "
    "~0.1 s), and large sums run several times slower. attnpool.show_config() tells "
    "what runs here"
)
#: The bits of ``attnpool_instruction_sets``' answer.
_BITS = {"avx2": 1, "avx512": 2}


@dataclass(frozen=True)
class Loops:
    """The library loaded: its instruction set, file and ``ctypes`` handle, and every
    instruction set this processor runs (``runs``, widest first)."""

    instruction_set: str
    path: str
    library: ctypes.CDLL
    runs: tuple[str, ...]


def choice() -> str:
    """The instruction set ``ATTNPOOL_INSTRUCTION_SET`` asks for (``auto`` when unset)."""
    return os.environ.get(VARIABLE, "").strip().lower() or "auto"


def loops() -> Loops | None:
    """The loaded library (loaded on first use), or None where none loads or ``none``
    was chosen."""
    found = _load(choice())
    return found if isinstance(found, Loops) else None


def unavailable_reason() -> str | None:
    """Why no compiled loops run in this process, in one line; None when they do."""
    found = _load(choice())
    return None if isinstance(found, Loops) else found


def function(name: str, argtypes: list[Any], restype: Any = None) -> Any:
    """The C function ``name`` of the loaded library, typed for ``ctypes``; None where
    no library loads or it holds no such function (a variant not built)."""
    return _function(choice(), name, tuple(argtypes), restype)


def library_path(instruction_set: str) -> str | None:
    """The file of the library for ``instruction_set``, or None where it was not built
    (aarch64 has only the baseline)."""
    try:
        spec = importlib.util.find_spec(f"{__package__}._loops_{instruction_set}")
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.origin else None


def instruction_sets_run() -> tuple[str, ...]:
    """The instruction sets this processor and its operating system run, widest first
    (empty where the baseline library does not load)."""
    baseline = _open("baseline")
    if isinstance(baseline, str):
        return ()
    answer = baseline.attnpool_instruction_sets
    answer.restype, answer.argtypes = ctypes.c_int, []
    bits = int(answer())
    wide = [name for name, bit in _BITS.items() if bits & bit and library_path(name)]
    return (*sorted(wide, key=list(INSTRUCTION_SETS).index), "baseline")


@functools.cache
def _load(chosen: str) -> Loops | str:
    """The library for the choice, or why there is none (warned about once)."""
    if chosen == "none":
        return f"{VARIABLE}=none"
    runs = instruction_sets_run()
    if not runs:
        reason = _open("baseline")
        assert isinstance(reason, str)
        warnings.warn(
            f"attnpool's compiled loops are unavailable: {reason}; {FALLBACK_COST}.",
            RuntimeWarning,
            stacklevel=4,
        )
        return reason
    if chosen not in runs:
        if chosen != "auto":
            accepted = ", ".join(CHOICES)
            why = "is not one of " + accepted if chosen not in CHOICES else "does not run here"
            warnings.warn(
                f"{VARIABLE}={chosen!r} {why} (this processor runs {', '.join(runs)}); "
                f"using {runs[0]!r}",
                RuntimeWarning,
                stacklevel=4,
            )
        chosen = runs[0]
    # a wider library that does not load (a damaged installation) leaves the next one
    failures = []
    for candidate in runs[runs.index(chosen) :]:
        library = _open(candidate)
        if not isinstance(library, str):
            break
        failures.append(f"{candidate}: {library}")
    assert not isinstance(library, str)  # the baseline opened for instruction_sets_run
    if failures:
        warnings.warn(
            f"attnpool's compiled loops for {'; '.join(failures)}; {candidate}'s are used "
            "instead (slower)",
            RuntimeWarning,
            stacklevel=4,
        )
    from .threads import start_threads

    start_threads()
    return Loops(candidate, str(library._name), library, runs)


@functools.cache
def _open(instruction_set: str) -> ctypes.CDLL | str:
    """The library for ``instruction_set`` opened, or why it cannot be."""
    path = library_path(instruction_set)
    if path is None:
        return (
            f"the library {__package__}._loops_{instruction_set} is not installed (the "
            "package was not built: pip install . builds it)"
        )
    try:
        return ctypes.CDLL(path)
    except OSError as error:
        return f"{path} does not load: {str(error).splitlines()[0] if str(error) else error!r}"


@functools.cache
def _function(chosen: str, name: str, argtypes: tuple[Any, ...], restype: Any) -> Any:
    found = _load(chosen)
    if not isinstance(found, Loops):
        return None
    try:
        loop = getattr(found.library, name)
    except AttributeError:
        return None
    loop.argtypes, loop.restype = list(argtypes), restype
    return loop
