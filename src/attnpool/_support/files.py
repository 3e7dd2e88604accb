"""File output: whole files or nothing, never over an input.

Everything a command writes is rendered to bytes first; each file is then written to a
temporary file in the target folder and renamed, with the permissions of the file it
replaces (the user's umask for a new one). Character devices and FIFOs are written
into, never replaced.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO


def atomic_write(path: str | os.PathLike, content: bytes | Callable[[BinaryIO], None]) -> Path:
    """Write ``content`` (bytes, or ``write(stream)``) to a temporary file and move it to ``path``.

    Either the file at ``path`` is complete or it is untouched: nothing
    half-written is ever left, also when ``write`` raises or the process is interrupted.
    An existing file keeps its permissions (and, where this process may set them, its
    owner); a link is followed, and the file it names replaced. A character device or a
    FIFO (``/dev/null``, ``/dev/stdout``, a named pipe) is written into, never replaced;
    other special files (sockets, block devices) are refused.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: expected a file name; received an existing directory")
    target = Path(os.path.realpath(path))
    try:
        status = target.stat()
    except FileNotFoundError:
        status = None
    if status is not None and not stat.S_ISREG(status.st_mode):
        if stat.S_ISCHR(status.st_mode) or stat.S_ISFIFO(status.st_mode):
            with open(target, "wb") as stream:  # (opening a device does not replace it)
                _write(stream, content)
            return path
        raise ValueError(
            f"{path}: expected a regular file, a character device or a FIFO; received "
            "another kind of special file (nothing was written)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(handle, "wb") as stream:
            _write(stream, content)
        if status is None:
            os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it 0600
        else:
            os.chmod(temporary, stat.S_IMODE(status.st_mode))
            if hasattr(os, "chown") and (status.st_uid, status.st_gid) != (
                os.getuid(),
                os.getgid(),
            ):
                with contextlib.suppress(OSError):  # (only where this process may)
                    os.chown(temporary, status.st_uid, status.st_gid)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def _write(stream: BinaryIO, content: bytes | Callable[[BinaryIO], None]) -> None:
    if callable(content):
        content(stream)
    else:
        stream.write(content)


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
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)  # rendered: pyplot lets go of it (a command makes many)
    return buffer.getvalue()


def check_outputs(
    inputs: Mapping[str, object],
    outputs: Mapping[str, object],
    *,
    force: bool,
    skip: str | None = None,
) -> None:
    """Before any work: a picture's path is a file (``--plot``), no output is an input or
    another output (:func:`check_distinct`), and none replaces an existing regular file
    unless ``force`` (devices and FIFOs are written into, never replaced)."""
    check_picture_path("--plot", outputs.get("--plot"))
    check_distinct(inputs, outputs, skip=skip)
    if force:
        return
    for option, path in outputs.items():
        if path is None or (skip is not None and str(path) == skip):
            continue
        if os.path.isfile(path):  # (a link to a file too)
            raise ValueError(
                f"{option}: {path} exists; pass --force to replace it, or name another "
                "file (nothing was written)"
            )


def check_picture_path(option: str, path: object) -> None:
    """Refuse ``-`` as a picture's path: standard output holds the command's table."""
    if path is not None and str(path) == "-":
        raise ValueError(
            f"{option}: expected a picture file name (.png, .svg, .pdf, …); received '-' "
            "(standard output is for the table)"
        )


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
