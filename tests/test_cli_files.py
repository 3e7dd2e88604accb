"""The command line's files and processes: never over an input, whole or absent, Ctrl-C."""

import io
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from attnpool._progress import ProgressBar
from attnpool.cli import main


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    x = np.linspace(0, 5, 40)
    text = "x,y\n" + "".join(f"{a},{np.sin(a)}\n" for a in x)
    (tmp_path / "data.csv").write_text(text)
    (tmp_path / "queries.csv").write_text("x\n1\n2\n")
    return tmp_path


def run_cli(capsys, *args):
    code = main(list(args))
    err = capsys.readouterr().err
    return code, err


def contents(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


FIT = ["fit", "data.csv", "--x", "x", "--y", "y", "--bandwidth", "0.3"]


@pytest.mark.parametrize(
    ("extra", "option"),
    [
        (["--out", "data.csv"], "--out"),
        (["--out", "./sub/../data.csv"], "--out"),
        (["--predict", "queries.csv", "--out", "queries.csv"], "--out"),
        (["--plot", "fit.png", "--out", "fit.png"], "--plot"),
        (["--plot", "data.csv"], "--plot"),
    ],
)
def test_an_output_over_an_input_or_another_output_is_refused(data, capsys, extra, option):
    (data / "sub").mkdir()
    before = contents(data)
    code, err = run_cli(capsys, *FIT, *extra)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(f"attnpool: error: {option}: ")
    assert "is also the" in err
    assert contents(data) == before


@pytest.mark.parametrize(
    ("column", "plot", "message"),
    [
        ("x", "fit.txt", "--plot: fit.txt: expected a picture file name ending in one of"),
        ("$\\notacommand$", "fit.png", "--plot: fit.png: the figure cannot be drawn"),
    ],
)
def test_a_plot_that_cannot_be_drawn_leaves_no_file(data, capsys, column, plot, message):
    (data / "data.csv").write_text(f"{column},y\n" + "".join(f"{a},{a * a}\n" for a in range(9)))
    before = contents(data)
    code, err = run_cli(capsys, "fit", "data.csv", "--x", column, "--y", "y", "--plot", plot)
    assert code == 2 and message in err, err
    assert contents(data) == before  # no predictions.csv either


def test_a_huge_field_and_a_file_not_in_utf8_are_named(data, capsys):
    (data / "long.csv").write_text("x,y,note\n1,2," + "a" * 200_000 + "\n")
    code, err = run_cli(capsys, "fit", "long.csv", "--x", "x", "--y", "y")
    assert code == 65 and err.startswith("attnpool: error: long.csv: line 2: field larger")
    (data / "latin.csv").write_bytes("x,y\n1,2\n3,\xe9\n".encode("latin-1"))
    code, err = run_cli(capsys, "fit", "latin.csv", "--x", "x", "--y", "y")
    assert code == 65
    assert err.startswith("attnpool: error: latin.csv: expected UTF-8 text; byte 0xe9")


def test_output_files_follow_the_umask(data, capsys):
    old = os.umask(0o027)
    try:
        code, _ = run_cli(capsys, *FIT, "--out", "p.csv", "--plot", "p.png")
    finally:
        os.umask(old)
    assert code == 0
    for name in ("p.csv", "p.png"):
        assert (data / name).stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize("command", ["demo", "study consistency", "report", "learn-demo"])
def test_a_negative_seed_names_the_option(tmp_path, capsys, command):
    code, err = run_cli(capsys, *command.split(), "--seed", "-1", "--out", str(tmp_path / "o"))
    assert code == 2 and "'--seed'" in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_an_error_after_the_progress_bar_starts_on_its_own_line():
    stream = io.StringIO()
    with pytest.raises(ValueError), ProgressBar("searching", stream) as progress:
        time.sleep(1.05)
        progress(1, 3)
        raise ValueError("bad")
    assert stream.getvalue().endswith("1/3\n")


@pytest.fixture
def ctrl_c_as_at_a_terminal():
    """SIGINT raising KeyboardInterrupt, as in a process started from a terminal (and in
    the processes this one starts): a shell without job control starts background jobs
    with SIGINT ignored, which Python and its children then keep ignoring."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("ctrl_c_as_at_a_terminal")
def test_a_ctrl_c_swallowed_by_a_callback_stops_the_work_at_the_next_step():
    # Python raises KeyboardInterrupt in whatever runs when SIGINT arrives; in a
    # garbage-collection callback it is printed as "ignored" and lost
    steps = []
    with pytest.raises(KeyboardInterrupt), ProgressBar("working", io.StringIO()) as progress:
        for step in range(5):
            progress(step, 5)
            steps.append(step)
            if step == 1:
                try:  # as the callback that swallows it
                    signal.raise_signal(signal.SIGINT)
                except KeyboardInterrupt:
                    pass
    assert steps == [0, 1]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.usefixtures("ctrl_c_as_at_a_terminal")
def test_a_ctrl_c_during_an_import_lets_the_import_finish(tmp_path, monkeypatch):
    # interrupting the import of a compiled extension (jaxlib) crashed the process at
    # exit; the interrupt is held until the import is done, then raised by the bar
    (tmp_path / "slow_module.py").write_text(
        "import signal\nsignal.raise_signal(signal.SIGINT)\nFINISHED = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(KeyboardInterrupt), ProgressBar("working", io.StringIO()) as progress:
        import slow_module

        assert slow_module.FINISHED
        progress(1, 2)
    assert sys.modules["slow_module"].FINISHED


@pytest.mark.usefixtures("ctrl_c_as_at_a_terminal")
def test_ctrl_c_exits_130_and_leaves_nothing_half_written(tmp_path):
    out = tmp_path / "study"
    process = subprocess.Popen(
        # the full study: the quick one now ends within moments of drawing its progress bar
        [sys.executable, "-m", "attnpool", "study", "consistency", "--out", str(out)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "TTY_COMPATIBLE": "1"},  # stderr drawn as at a terminal
    )
    seen = []

    def read():
        while character := process.stderr.read(1):
            seen.append(character)

    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + 240
    while "consistency" not in "".join(seen) and time.monotonic() < deadline:
        time.sleep(0.05)  # the study is running: its progress bar is drawn
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=120) == 130
    reader.join()
    visible = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", "".join(seen))  # less terminal codes
    assert visible.endswith("\nattnpool: interrupted\n")
    assert not out.exists() or all(not p.name.startswith(".") for p in out.iterdir())
