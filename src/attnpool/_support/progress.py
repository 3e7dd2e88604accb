"""Progress: tqdm's bar for the library, drawn once the work has taken more than a second,
and the Ctrl-C handling that the command line's bar shares."""

from __future__ import annotations

import signal
import sys
import threading
import time


class Interruptible:
    """Callable ``(done, total, note="")`` and context manager that makes Ctrl-C stick.

    Python raises ``KeyboardInterrupt`` in whatever code runs when the signal arrives,
    and when that is a garbage-collection callback (JAX installs one) the exception is
    printed as "ignored" and the work goes on. Inside the ``with`` block an interrupt is
    remembered, and the next call raises it again; one that arrives during an ``import``
    is only remembered. Drawing is the subclasses' (:class:`ProgressBar`, the command
    line's rich bar).
    """

    def __init__(self, label: str):
        self.label, self.start = label, time.monotonic()
        self.interrupted = False
        self._previous_handler = None

    def __call__(self, done: int, total: int, note: str = "") -> None:
        if self.interrupted:
            raise KeyboardInterrupt

    def __enter__(self) -> Interruptible:
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
            # finishes and the next call raises it
            return
        raise KeyboardInterrupt

    def close(self) -> None:
        """End what was drawn (nothing here)."""


class ProgressBar(Interruptible):
    """:class:`Interruptible` drawing tqdm's bar (``tqdm.auto``: a widget in a notebook,
    text elsewhere) on ``stream`` (stderr by default) once the work has taken more than
    :data:`DELAY` seconds, so that quick work stays silent; ``note`` follows the counts."""

    def __init__(self, label: str, stream=None):
        super().__init__(label)
        self.stream = stream if stream is not None else sys.stderr
        self._bar = None

    def __call__(self, done: int, total: int, note: str = "") -> None:
        super().__call__(done, total, note)
        if self._bar is None:
            from .optional import require

            auto = require("tqdm.auto", "a progress bar (progress=True)")
            waited = time.monotonic() - self.start  # the delay counts from the work's start
            self._bar = auto.tqdm(
                total=total, desc=self.label, file=self.stream, delay=max(DELAY - waited, 0.0),
                leave=True, unit="step",
            )  # fmt: skip
        self._bar.total = total
        if note:
            self._bar.set_postfix_str(note, refresh=False)
        self._bar.update(done - self._bar.n)
        if done == total:
            self.close()

    def close(self) -> None:
        """End the bar's line (if one was drawn)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


#: Seconds of work before a bar is drawn.
DELAY = 1.0


def _importing(frame) -> bool:
    """Whether ``frame`` runs inside an ``import`` (Python's import machinery is on its
    stack)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False
