"""JAX's on-disk cache of compiled programs, kept in one private folder per user.

XLA executables outlive a process in JAX's persistent compilation cache, so a second
process loads its programs instead of compiling them. They are code this process will
run, so they live only in a folder that belongs to the user and that nobody else may
write to; otherwise a private temporary folder serves this process alone. (The
methods' C loops are compiled with the package, not here.)

``ATTNPOOL_CACHE`` names the folder (default ``$XDG_CACHE_HOME/attnpool``, else
``~/.cache/attnpool``); ``ATTNPOOL_CACHE=off`` keeps nothing between processes.
A JAX compilation cache the user configured (``JAX_COMPILATION_CACHE_DIR`` or
``jax.config``) is left as it is.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import warnings
from pathlib import Path
from typing import Any

#: ``ATTNPOOL_CACHE`` values that turn the on-disk caches off.
OFF = frozenset({"off", "0", "none", "false", "no"})
#: Programs that compile faster than this are not written (eager one-operation programs).
MIN_COMPILE_SECONDS = 0.02
#: The XLA cache's size cap; JAX evicts the least recently used programs beyond it.
MAX_XLA_CACHE_BYTES = 2**30


def cache_root() -> Path | None:
    """The cache folder ``ATTNPOOL_CACHE`` asks for, or None when it is ``off``."""
    chosen = os.environ.get("ATTNPOOL_CACHE", "").strip()
    if chosen.lower() in OFF:
        return None
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "attnpool"


def private_directory(name: str) -> tuple[Path, bool]:
    """``(folder, lasting)``: the cache's sub-folder ``name``, created private if needed.

    ``lasting`` is False when the folder is a temporary one for this process: the cache
    is off, or its folder belongs to someone else or others may write to it (with a
    ``RuntimeWarning`` saying so).
    """
    root = cache_root()
    if root is not None:
        directory = root / name
        try:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            if is_private(root):
                directory.mkdir(mode=0o700, exist_ok=True)
                if is_private(directory) and os.access(directory, os.W_OK):
                    return directory, True
            warnings.warn(
                f"the cache folder {directory} belongs to another user or others can write "
                "to it; compiled code is kept in a private temporary folder instead",
                RuntimeWarning,
                stacklevel=3,
            )
        except OSError:
            pass
    import tempfile

    return Path(tempfile.mkdtemp(prefix=f"attnpool-{name}-")), False


def is_private(path: Path) -> bool:
    """Whether ``path`` exists, belongs to this user and nobody else can write to it."""
    try:
        status = path.stat()
    except OSError:
        return False
    owner = status.st_uid == os.getuid() if hasattr(os, "getuid") else True
    return owner and not status.st_mode & 0o022


@functools.cache
def enable_compilation_cache() -> Path | None:
    """Point JAX's persistent compilation cache at ``<cache>/xla-<jax>-<cpu>``; the folder.

    Nothing happens (None) when the cache is off, its folder is not private, or the
    user set up JAX's cache already. The folder's name carries the JAX version and a
    fingerprint of the processor, so an executable built for one CPU's instruction
    set is never loaded on another that shares the home folder.
    """
    import jax

    config: Any = jax.config  # its options are attributes made at run time
    if config.jax_compilation_cache_dir or not config.jax_enable_compilation_cache:
        return None
    if cache_root() is None:
        return None
    directory, lasting = private_directory(f"xla-{jax.__version__}-{processor_fingerprint()}")
    if not lasting:
        return None
    config.update("jax_compilation_cache_dir", str(directory))
    config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    config.update("jax_compilation_cache_max_size", MAX_XLA_CACHE_BYTES)
    return directory


@functools.cache
def processor_fingerprint() -> str:
    """Twelve hex digits that name this machine's processor model and instruction set:
    from ``/proc/cpuinfo`` where there is one (``platform.processor()`` runs ``uname -p``
    in a subprocess on Linux, ~10 ms of a first call), else from ``platform``."""
    try:
        with open("/proc/cpuinfo") as info:
            lines = [line for line in info if line.startswith(("model name", "flags", "Features"))]
        description = platform.machine() + "".join(sorted(set(lines)))
    except OSError:
        description = f"{platform.machine()} {platform.processor()}"
    return hashlib.sha256(description.encode()).hexdigest()[:12]


class ProgramCount:
    """Context manager counting the XLA programs built inside it: ``traced``, ``built``
    (compiled or loaded), ``loaded`` (from the on-disk cache), ``compiled`` (the rest),
    and ``seconds`` spent building them.

    >>> import attnpool, numpy as np
    >>> x = np.arange(5.0)
    >>> with attnpool.count_programs() as count:  # small NumPy data pool without one
    ...     _ = attnpool.nadaraya_watson(x, x, np.array([7.0]))
    >>> count.built
    0
    >>> with attnpool.count_programs() as count:
    ...     _ = attnpool.nadaraya_watson(x, x, np.array([7.0]), method="stream")
    >>> count.built >= 1
    True
    """

    def __init__(self) -> None:
        self.traced = self.built = self.loaded = 0
        self.seconds = 0.0

    @property
    def compiled(self) -> int:
        return self.built - self.loaded

    def _duration(self, event: str, duration_secs: float, **_: str | int) -> None:
        if event == "/jax/core/compile/jaxpr_trace_duration":
            self.traced += 1
        elif event == "/jax/core/compile/backend_compile_duration":
            self.built += 1
            self.seconds += duration_secs

    def _event(self, event: str, **_: str | int) -> None:
        if event == "/jax/compilation_cache/cache_hits":
            self.loaded += 1

    def __enter__(self) -> ProgramCount:
        from jax import monitoring

        monitoring.register_event_duration_secs_listener(self._duration)
        monitoring.register_event_listener(self._event)
        return self

    def __exit__(self, *exc: object) -> None:
        from jax import monitoring

        monitoring.unregister_event_duration_listener(self._duration)
        monitoring.unregister_event_listener(self._event)

    def __repr__(self) -> str:
        return (
            f"ProgramCount(traced={self.traced}, compiled={self.compiled}, "
            f"loaded={self.loaded}, seconds={self.seconds:.2f})"
        )


def count_programs() -> ProgramCount:
    """Count the JAX programs traced, compiled and loaded from the cache in a ``with`` block.

    Returns
    -------
    ProgramCount
        A context manager; after the block, its ``traced``, ``compiled`` and ``loaded``
        counts and the ``seconds`` spent building.

    Examples
    --------
    >>> import attnpool
    >>> with attnpool.count_programs() as count:        # a block size no call used before
    ...     _ = attnpool.attention_pool([0.5], [0.0, 1.0], [1.0, 2.0], block_size=13)
    >>> count.traced > 0
    True

    References
    ----------
    JAX documentation, "Persistent compilation cache" and ``jax.monitoring`` (the events
    counted).
    """
    return ProgramCount()
