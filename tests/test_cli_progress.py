"""The command line's progress: a bar with an ETA at a terminal, one final line
elsewhere, nothing with --quiet or for quick work, and errors on their own line."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import time

import pytest
from rich.console import Console

from attnpool.cli.progress import CommandProgress


def console(terminal: bool) -> tuple[Console, io.StringIO]:
    stream = io.StringIO()
    return Console(file=stream, force_terminal=terminal, width=120), stream


def slow_work(progress, steps=3):
    time.sleep(1.05)
    for step in range(1, steps + 1):
        progress(step, steps)


def test_at_a_terminal_the_bar_shows_an_eta():
    screen, stream = console(terminal=True)
    with CommandProgress("choosing the bandwidth", console=screen) as progress:
        slow_work(progress)
    text = stream.getvalue()
    assert "choosing the bandwidth" in text and "3/3" in text
    assert "ETA" in text and "0:00:0" in text  # elapsed and remaining, h:mm:ss


def test_elsewhere_only_the_final_line():
    screen, stream = console(terminal=False)
    with CommandProgress("training", console=screen) as progress:
        slow_work(progress, steps=5)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and "\r" not in stream.getvalue()
    assert lines[0].startswith("training: 5/5 in 1.")


@pytest.mark.parametrize("terminal", [True, False])
def test_quiet_and_quick_work_print_nothing(terminal):
    screen, stream = console(terminal)
    with CommandProgress("training", quiet=True, console=screen) as progress:
        slow_work(progress)
    with CommandProgress("training", console=screen) as progress:
        progress(1, 1)  # done within a second
    assert stream.getvalue() == ""


def test_an_error_during_the_bar_starts_on_its_own_line():
    screen, stream = console(terminal=True)
    with pytest.raises(ValueError), CommandProgress("searching", console=screen) as progress:
        time.sleep(1.05)
        progress(1, 3)
        raise ValueError("bad")
    visible = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue())  # less cursor codes
    assert visible.endswith("\n")  # the bar's line is ended before the error is printed


def test_the_study_from_a_pipe_prints_its_final_line_or_nothing(tmp_path):
    def study(*extra):
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "attnpool",
                "study",
                "kernels",
                "--quick",
                "--out",
                str(tmp_path),
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )

    loud, quiet = study(), study("--quiet")
    assert "\r" not in loud.stderr and len(loud.stderr.splitlines()) <= 1
    assert all(line.startswith("kernels: ") for line in loud.stderr.splitlines())
    assert quiet.stderr == ""
