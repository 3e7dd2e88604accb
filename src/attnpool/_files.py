"""Atomic file output: a temporary file in the target folder, then a rename."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> Path:
    """Call ``write(stream)`` on a temporary file and move it to ``path``.

    Either the file at ``path`` is complete or it is untouched: nothing
    half-written is ever left, also when ``write`` raises.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: expected a file name; received an existing directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            write(stream)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
