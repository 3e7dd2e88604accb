"""The command line's files and processes: never over an input, whole or absent, Ctrl-C."""

import io
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from attnpool import local_regression
from attnpool._support.progress import ProgressBar
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
    assert code == 2 and err.startswith("attnpool: error: long.csv: line 2: field larger")
    (data / "latin.csv").write_bytes("x,y\n1,2\n3,\xe9\n".encode("latin-1"))
    code, err = run_cli(capsys, "fit", "latin.csv", "--x", "x", "--y", "y")
    assert code == 2
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
    assert "1/3" in stream.getvalue() and stream.getvalue().endswith("\n")


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


def test_output_into_a_character_device_or_a_fifo_writes_into_it(data, capsys):
    fifo = data / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    code, err = run_cli(capsys, *FIT, "--out", str(fifo))
    if reader.is_alive() and code != 0:  # nothing opened the FIFO: release the reader
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    reader.join(timeout=60)
    assert code == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still a FIFO, not a regular file
    assert received[0].startswith(b"x,y_predicted")
    null = "/dev/null"
    code, err = run_cli(capsys, *FIT, "--out", null)
    assert code == 0, err
    assert stat.S_ISCHR(os.stat(null).st_mode)


def test_an_output_keeps_the_mode_of_the_file_it_replaces_and_a_link_stays(data, capsys):
    (data / "private.csv").write_text("old\n")
    os.chmod(data / "private.csv", 0o600)
    os.symlink("private.csv", data / "link.csv")
    assert run_cli(capsys, *FIT, "--out", "private.csv", "--force")[0] == 0
    assert stat.S_IMODE(os.stat(data / "private.csv").st_mode) == 0o600
    assert run_cli(capsys, *FIT, "--out", "link.csv", "--force")[0] == 0
    assert (data / "link.csv").is_symlink()
    assert (data / "private.csv").read_text().startswith("x,y_predicted")


def test_a_socket_is_refused_and_stays(data, capsys):
    import socket

    path = data / "sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        code, err = run_cli(capsys, *FIT, "--out", str(path))
        assert code == 2
        assert "special file" in err
        assert stat.S_ISSOCK(os.stat(path).st_mode)


def test_a_plot_to_standard_output_is_refused(data, capsys):
    before = contents(data)
    code, err = run_cli(capsys, *FIT, "--plot", "-")
    assert code == 2
    assert "--plot" in err and "'-'" in err
    assert contents(data) == before


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("income,age\n1,2\n40,100,20\n3,4\n5,6\n", "row 2 has 3 fields; the header has 2"),
        ("age,age,income\n1,2,3\n2,3,4\n3,4,5\n", "names 'age' more than once"),
    ],
)
def test_malformed_rows_and_duplicated_names_are_data_errors(data, capsys, table, message):
    (data / "bad.csv").write_text(table)
    code, err = run_cli(capsys, "fit", "bad.csv", "--x", "age", "--y", "income")
    assert code == 2
    assert message in err


def test_a_constant_input_column_is_a_data_error(data, capsys):
    (data / "flat.csv").write_text("x,y\n" + "".join(f"1,{i}\n" for i in range(6)))
    code, err = run_cli(capsys, "fit", "flat.csv", "--x", "x", "--y", "y")
    assert code == 2
    assert "'x' hold one value" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fit", "data.csv", "--x", "y", "--y", "y"], "--y: column 'y' is named as --x too"),
        (["fit", "data.csv", "--x", "x", "--x", "x", "--y", "y"], "column 'x' is named twice"),
        (["density", "data.csv", "--x", "x", "--given", "x"], "--given: column 'x' is named"),
    ],
)
def test_a_column_in_two_roles_is_a_usage_error(data, capsys, args, message):
    code, err = run_cli(capsys, *args)
    assert code == 2
    assert message in err


def test_ctrl_c_while_the_command_line_is_imported_exits_130_without_a_traceback():
    # the interrupt arrives while attnpool.__main__ imports the command line
    script = (
        "import attnpool._support.optional as optional\n"
        "def interrupted(*args, **kwargs):\n"
        "    raise KeyboardInterrupt\n"
        "optional.require = interrupted\n"
        "from attnpool.__main__ import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 130
    assert done.stderr == "attnpool: interrupted\n"


def test_an_existing_output_is_never_replaced_without_force(data, capsys):
    (data / "predictions.csv").write_text("mine\n")
    before = contents(data)
    for extra in ([], ["--plot", "predictions.csv", "--out", "p.csv"]):
        code, err = run_cli(capsys, "fit", "data.csv", "--x", "x", "--y", "y", *extra)
        assert code == 2
        assert "predictions.csv exists; pass --force to replace it" in err
        assert contents(data) == before  # nothing written, not even the other output
    code, err = run_cli(capsys, *FIT, "--out", "predictions.csv", "--force")
    assert code == 0, err
    assert (data / "predictions.csv").read_text().startswith("x,y_predicted,row\n")
    (data / "densities.csv").write_text("mine\n")
    code, err = run_cli(capsys, "density", "data.csv", "--x", "x")
    assert code == 2 and "densities.csv exists" in err
    assert (data / "densities.csv").read_text() == "mine\n"


def test_predictions_carry_each_data_rows_number_across_dropna(data, capsys):
    (data / "gaps.csv").write_text("x,y\n1,2\n2,3\n\n3,5\n4,\n5,7\n6,8\n")
    code, err = run_cli(capsys, "fit", "gaps.csv", "--x", "x", "--y", "y", "--bandwidth", "0.5",
                        "--dropna", "--out", "gaps-out.csv")  # fmt: skip
    assert code == 0, err
    lines = (data / "gaps-out.csv").read_text().splitlines()
    assert lines[0] == "x,y_predicted,row"
    # data rows counted from 1 as pandas reads them (a blank line is no row); 4 is dropped
    assert [line.split(",")[-1] for line in lines[1:]] == ["1", "2", "3", "5", "6"]
    assert [float(line.split(",")[0]) for line in lines[1:]] == [1, 2, 3, 5, 6]


def test_a_band_beyond_the_data_warns_in_the_command_lines_words(data, capsys):
    (data / "queries.csv").write_text("x\n2\n9\n")
    args = ["fit", "data.csv", "--x", "x", "--y", "y", "--bandwidth", "0.1", "--interval",
            "0.9", "--predict", "queries.csv", "--out", "-"]  # fmt: skip
    code, err = run_cli(capsys, *args)
    assert code == 0, err
    warning = [line for line in err.splitlines() if "warning" in line]
    assert len(warning) == 1 and warning[0].startswith(
        "attnpool: warning: x_query: 1 of 2 queries have less than one training point's "
        "kernel weight under them"
    )
    assert warning[0].endswith("is no standard error of the fit; a wider --bandwidth reaches them")


def test_the_librarys_warnings_are_one_line_naming_the_option(data, capsys):
    (data / "queries.csv").write_text("x\n1\n9\n")
    args = ["fit", "data.csv", "--x", "x", "--y", "y", "--kernel", "epanechnikov",
            "--bandwidth", "0.3", "--predict", "queries.csv", "--out", "-"]  # fmt: skip
    code, err = run_cli(capsys, *args)
    assert code == 0, err
    warning = [line for line in err.splitlines() if "warning" in line]
    assert warning == [
        "attnpool: warning: 1 of 2 queries have no key within the 'epanechnikov' kernel's "
        "support; their result is NaN (pass --empty nearest to use the nearest key)"
    ]
    code = main([*args, "--empty", "nearest"])
    captured = capsys.readouterr()
    assert code == 0 and "warning" not in captured.err
    assert captured.out.splitlines()[2].startswith("9.0,")  # the nearest key's value
    assert "nan" not in captured.out


def test_help_short_option_main_commands_first_and_the_kernels_each_takes(capsys):
    from attnpool.cli import DENSITY_KERNEL_NAMES, KERNEL_NAMES
    from attnpool.density import log_density
    from attnpool.kernels import names

    assert main(["-h"]) == 0
    listing = capsys.readouterr().out
    order = [listing.index(f" {name} ") for name in ("fit", "density", "demo", "study")]
    assert order == sorted(order)
    assert main(["fit", "-h"]) == 0 and "--force" in capsys.readouterr().out
    assert "dot" not in KERNEL_NAMES
    for name in names():  # the density command lists exactly the kernels it takes
        try:
            log_density(np.arange(5.0), [1.0], kernel=name, bandwidth=1.0)
        except ValueError:
            assert name not in DENSITY_KERNEL_NAMES
        else:
            assert name in DENSITY_KERNEL_NAMES
    assert main(["density", "-h"]) == 0
    help_words = [w.strip(".,") for w in capsys.readouterr().out.replace("│", " ").split()]
    assert all(name in help_words for name in DENSITY_KERNEL_NAMES)
    assert "gaussian-order4" not in help_words and "constant" not in help_words


def test_a_column_that_does_not_matter_shows_as_smoothed_out(data, capsys):
    rng = np.random.default_rng(0)
    x, z = np.linspace(0, 5, 60).tolist(), rng.uniform(0, 1, 60).tolist()
    rows = "".join(f"{a!r},{b!r},{float(np.sin(a))!r}\n" for a, b in zip(x, z, strict=True))
    (data / "extra.csv").write_text("x,z,y\n" + rows)
    code = main(["fit", "extra.csv", "--x", "x", "--x", "z", "--y", "y", "--out", "-"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = captured.err.splitlines()[1]
    assert "z = smoothed out (" in summary and "the fit ignores it" in summary
    assert "x = smoothed out" not in summary


def test_var_type_u_and_o_take_text_levels(data, capsys):
    (data / "cars.csv").write_text(
        "hp,trans,mpg\n110,manual,21\n93,auto,22.8\n175,manual,18.7\n105,auto,18.1\n"
        "245,manual,14.3\n62,auto,24.4\n95,auto,22.8\n123,manual,19.2\n"
    )
    (data / "new.csv").write_text("hp,trans\n100,auto\n150,manual\n")
    args = ["fit", "cars.csv", "--x", "hp", "--x", "trans", "--var-type", "cu", "--y", "mpg",
            "--bandwidth", "40,0.1", "--out", "-"]  # fmt: skip
    assert main([*args, "--predict", "new.csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    x = np.array([[110, 1], [93, 0], [175, 1], [105, 0], [245, 1], [62, 0], [95, 0], [123, 1.0]])
    y = np.array([21, 22.8, 18.7, 18.1, 14.3, 24.4, 22.8, 19.2])
    want = local_regression(x, y, [[100, 0], [150, 1]], bandwidth=[40, 0.1], var_type="cu")
    got = [float(line.split(",")[2]) for line in lines[1:]]
    np.testing.assert_allclose(got, want, rtol=1e-12)  # levels sorted: auto 0, manual 1
    (data / "odd.csv").write_text("hp,trans\n100,cvt\n")
    code, err = run_cli(capsys, *args, "--predict", "odd.csv")
    assert code == 2 and "the level 'cvt', which the fit's data do not" in err
    code, err = run_cli(capsys, "fit", "cars.csv", "--x", "trans", "--y", "mpg")
    assert code == 2 and "column 'trans': expected a number; received 'manual'" in err


def test_the_demo_writes_at_a_chosen_resolution_and_format(data, capsys):
    assert main(["demo", "--out", "svg", "--format", "svg"]) == 0
    assert sorted(p.name for p in (data / "svg").iterdir()) == [
        "fit.svg", "heatmaps.svg", "kernels.svg", "lookup.svg"
    ]  # fmt: skip
    assert (data / "svg" / "fit.svg").read_text().lstrip().startswith("<?xml")
    assert main(["demo", "--out", "png", "--dpi", "60"]) == 0
    small = (data / "png" / "fit.png").read_bytes()
    width = int.from_bytes(small[16:20], "big")  # the PNG header's width
    assert width == 6 * 60  # 6 inches at 60 dots per inch
