"""A text progress bar on stderr, shown only once the work has taken more than a second."""

from __future__ import annotations

import sys
import time


class ProgressBar:
    """Callable ``(done, total, note="")``: redraws ``label [####----] done/total note``.

    Nothing is drawn during the first second, so quick work stays silent; the line ends
    when ``done == total`` (or on :meth:`close`, for work that stops early).
    """

    def __init__(self, label: str, stream=None):
        self.label, self.start, self.shown = label, time.monotonic(), False
        self.stream = stream if stream is not None else sys.stderr

    def __call__(self, done: int, total: int, note: str = "") -> None:
        if time.monotonic() - self.start < 1.0 and not self.shown:
            return
        self.shown = True
        filled = int(30 * done / total)
        bar = "#" * filled + "-" * (30 - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total} {note}".rstrip())
        if done == total:
            self.close()
        self.stream.flush()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()  # an error message then starts on its own line

    def close(self) -> None:
        """End the bar's line (if one was drawn)."""
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
            self.shown = False
            self.start = float("inf")  # nothing more after the line has ended
