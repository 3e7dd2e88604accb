"""The methods' C sources compiled into a private, checked cache.

A source is compiled once per set of ``-D`` definitions with the machine's C compiler
(``$CC`` if set and not empty, else ``cc``), ``-O3`` and ``-march=native`` (plain
``-O3`` where the compiler does not know it), into ``$ATTNPOOL_CACHE/native``
(default ``~/.cache/attnpool/native``), each library named by a digest of its source,
the compiler, the flags and this processor.

Only code this user built is loaded: the cache folder must belong to the user and be
writable by nobody else (otherwise a private temporary folder is used), and a cached
library loads only if the user owns it, nobody else can write it, and its SHA-256
matches the digest written beside it when it was built; anything else (a truncated
file, a file planted by someone else) is built again.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import warnings
from pathlib import Path

from .._cache import is_private, private_directory, processor_fingerprint

FLAGS = ("-O3", "-ffp-contract=fast", "-fno-math-errno", "-shared", "-fPIC")


def compiler() -> str:
    """The C compiler used: ``$CC`` if set and not empty, else ``cc``."""
    return os.environ.get("CC", "").strip() or "cc"


def compiler_found(compiler_name: str) -> bool:
    """Whether the compiler's program is on the PATH."""
    return shutil.which((shlex.split(compiler_name) or [""])[0]) is not None


#: Missing compilers this process has warned about (once each).
_told_missing: set[str] = set()


def tell_missing_compiler(compiler_name: str, reason: str) -> None:
    """Warn, once per process and compiler, that no compiler builds the loops, and what
    falling back to their XLA forms costs."""
    if compiler_name in _told_missing:
        return
    _told_missing.add(compiler_name)
    warnings.warn(
        f"attnpool's compiled loops are unavailable: {reason}. The XLA forms are used "
        "instead, at a cost: a first fit compiles JAX programs (seconds, not ~0.1 s), and "
        "large sums run several times slower. attnpool.show_config() tells what runs here.",
        RuntimeWarning,
        stacklevel=4,
    )


def build(compiler_name: str, source: Path, defines: list[str]) -> Path:
    """Path of the shared library of ``source`` for ``defines``; compiled unless already in
    the cache. Raises ``RuntimeError`` (no compiler, or it fails) or ``OSError``."""
    program = shlex.split(compiler_name) or [""]
    if shutil.which(program[0]) is None:
        raise RuntimeError(f"no C compiler {compiler_name!r} on the PATH (set $CC)")
    path = cached(compiler_name, source, defines)
    if path is not None:
        return path
    import subprocess  # only to compile: a first call that loads from the cache spares them
    import tempfile

    path = library_path(compiler_name, source, defines)
    digest = path.with_suffix(".sha256")
    handle, partial = tempfile.mkstemp(suffix=".so", dir=path.parent)
    os.close(handle)
    try:
        errors = ""
        # -march=native where the compiler knows it; plain -O3 code otherwise
        for arch in (["-march=native"], []):
            command = [*program, *FLAGS, *arch, *defines, str(source), "-o", partial, "-lm"]
            run = subprocess.run(command, capture_output=True, text=True)
            if run.returncode == 0:
                os.chmod(partial, 0o700)  # whatever the umask: nobody else writes it
                _write_private(digest, _sha256(Path(partial)))
                os.replace(partial, path)
                return path
            errors = run.stderr.strip() or f"exit status {run.returncode}"
        raise RuntimeError(f"{compiler_name} could not compile {source.name}: {errors}")
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def library_path(compiler_name: str, source: Path, defines: list[str]) -> Path:
    """Where the library of ``source`` for ``defines`` is cached (``native.c``'s are
    ``gaussian-<digest>.so``, others ``<stem>-<digest>.so``), the digest over the source
    and the headers beside it."""
    headers = [header.read_bytes() for header in sorted(source.parent.glob("*.h"))]
    parts: list[bytes | str] = [source.read_bytes(), *headers, compiler_name, *FLAGS,
                                *defines, processor_fingerprint()]  # fmt: skip
    key = hashlib.sha256(
        b"\0".join(p if isinstance(p, bytes) else p.encode() for p in parts)
    ).hexdigest()[:20]
    stem = "gaussian" if source.stem == "native" else source.stem
    return cache_directory() / f"{stem}-{key}.so"


def cached(compiler_name: str, source: Path, defines: list[str]) -> Path | None:
    """The cached library for ``defines`` if it is there and safe to load: owned by this
    user, writable by nobody else, and matching the digest written beside it."""
    path = library_path(compiler_name, source, defines)
    digest = path.with_suffix(".sha256")
    if is_private(path) and is_private(digest) and digest.read_text() == _sha256(path):
        return path
    return None


@functools.cache
def cache_directory() -> Path:
    return private_directory("native")[0]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_private(path: Path, text: str) -> None:
    import tempfile

    handle, partial = tempfile.mkstemp(dir=path.parent)
    with os.fdopen(handle, "w") as stream:
        stream.write(text)
    os.replace(partial, path)
