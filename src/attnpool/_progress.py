"""A text progress bar on stderr, shown only once the work has taken more than a second."""

from __future__ import annotations

import signal
import sys
import threading
import time


class ProgressBar:
    """Callable ``(done, total, note="")``: redraws ``label [####----] done/total note``.

    Nothing is drawn during the first second, so quick work stays silent; the line ends
    when ``done == total`` (or on :meth:`close`, for work that stops early).

    As a context manager it also makes Ctrl-C stick: Python raises ``KeyboardInterrupt``
    in whatever code runs when the signal arrives, and when that is a garbage-collection
    callback (JAX installs one) the exception is printed as "ignored" and the work goes
    on. Inside the ``with`` block an interrupt is remembered, and the next call of the
    bar raises it again; one that arrives during an ``import`` is only remembered.
    """

    def __init__(self, label: str, stream=None):
        self.label, self.start, self.shown = label, time.monotonic(), False
        self.stream = stream if stream is not None else sys.stderr
        self.interrupted = False
        self._previous_handler = None

    def __call__(self, done: int, total: int, note: str = "") -> None:
        if self.interrupted:
            raise KeyboardInterrupt
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
        default = signal.getsignal(signal.SIGINT) is signal.default_int_handler
        if default and threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGINT, self._interrupt)
        return self

    def __exit__(self, *exc_info) -> None:
        if self._previous_handler is not None:
            signal.signal(signal.SIGINT, self._previous_handler)
            self._previous_handler = None
        self.close()  # an error message then starts on its own line

    def _interrupt(self, signum, frame) -> None:
        self.interrupted = True
        if _importing(frame):
            # raised inside a module's import, the interrupt can leave a compiled extension
            # (jaxlib) half-initialised, and the process crashes at exit; the import
            # finishes and the next call of the bar raises it
            return
        raise KeyboardInterrupt

    def close(self) -> None:
        """End the bar's line (if one was drawn)."""
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
            self.shown = False
            self.start = float("inf")  # nothing more after the line has ended


def _importing(frame) -> bool:
    """Whether ``frame`` runs inside an ``import`` (Python's import machinery is on its
    stack)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False
