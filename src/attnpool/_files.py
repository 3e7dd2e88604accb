"""File output: whole files or nothing, never over an input.

Everything a command writes is rendered to bytes first; each file is then written to a
temporary file in the target folder and renamed, with the permissions the user's umask
gives a new file.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO


def atomic_write(path: str | os.PathLike, content: bytes | Callable[[BinaryIO], None]) -> Path:
    """Write ``content`` (bytes, or ``write(stream)``) to a temporary file and move it to ``path``.

    Either the file at ``path`` is complete or it is untouched: nothing
    half-written is ever left, also when ``write`` raises or the process is interrupted.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: expected a file name; received an existing directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            if callable(content):
                content(stream)
            else:
                stream.write(content)
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it 0600
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def figure_bytes(figure, path: str | os.PathLike, *, dpi: int = 100) -> bytes:
    """``figure`` rendered in the format ``path``'s suffix names (PNG without one)."""
    suffix = Path(path).suffix.lstrip(".").lower() or "png"
    supported = figure.canvas.get_supported_filetypes()
    if suffix not in supported:
        raise ValueError(
            f"{path}: expected a picture file name ending in one of "
            f"{', '.join('.' + s for s in sorted(supported))}; received .{suffix}"
        )
    buffer = io.BytesIO()
    try:
        figure.savefig(buffer, format=suffix, dpi=dpi)
    except ValueError as error:  # a label that is not valid mathtext
        raise ValueError(
            f"{path}: the figure cannot be drawn: {' '.join(str(error).split())}"
        ) from None
    return buffer.getvalue()


def check_distinct(
    inputs: Mapping[str, object], outputs: Mapping[str, object], *, skip: str | None = None
) -> None:
    """Refuse an output path (``{option: path or None}``) equal to an input or another
    output; ``skip``: a name that is no file (``"-"``, the standard streams)."""
    seen: dict[str, str] = {}
    for option, path in [*inputs.items(), *outputs.items()]:
        if path is None or (skip is not None and str(path) == skip):
            continue
        key = os.path.normcase(os.path.realpath(path))
        if key in seen:
            kind = "input" if seen[key] in inputs else "output"
            raise ValueError(
                f"{option}: {path} is also the {kind} {seen[key]}; choose another file "
                "(nothing was written)"
            )
        seen[key] = option
