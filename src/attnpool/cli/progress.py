"""The command line's progress on stderr, drawn by rich: a bar with an ETA at a
terminal, only a final line when stderr is not one (a log, a pipe), nothing with
``--quiet``. Quick work (under a second) stays silent; Ctrl-C sticks as with
:class:`attnpool._support.progress.Interruptible`, and an error starts on its own line."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from .._support.progress import Interruptible

__all__ = ["CommandProgress"]


class CommandProgress(Interruptible):
    """Callable ``(done, total, note="")`` and context manager, as ``Interruptible``."""

    def __init__(self, label: str, *, quiet: bool = False, console: Console | None = None):
        super().__init__(label)
        self.quiet = quiet
        self.console = console if console is not None else Console(stderr=True)
        self._bar: Progress | None = None
        self._task = None
        self._done, self._total, self._finished = 0, 0, False

    def __call__(self, done: int, total: int, note: str = "") -> None:
        if self.interrupted:
            raise KeyboardInterrupt
        self._done, self._total = done, total
        if self.quiet or self._finished or not self.console.is_terminal:
            return
        if self._bar is None:
            if time.monotonic() - self.start < 1.0:
                return
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[note]}"),
                console=self.console,
            )
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=total, note=note)
        self._bar.update(self._task, completed=done, total=total, note=note)
        if done == total:
            self.close()

    def close(self) -> None:
        """End the bar (a terminal) or write the final line (elsewhere), once."""
        if self._finished:
            return
        self._finished = True
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
            return
        elapsed = time.monotonic() - self.start
        if not self.quiet and self._total and elapsed >= 1.0:
            self.console.print(
                f"{self.label}: {self._done}/{self._total} in {elapsed:.1f} s",
                highlight=False,
                soft_wrap=True,
            )
