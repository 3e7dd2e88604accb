"""The command line, run as a real subprocess."""

import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import attnpool


def attnpool_cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "attnpool", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def test_demo_writes_four_valid_images_and_the_table(tmp_path):
    result = attnpool_cli("demo", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    for name in ["fit.png", "heatmaps.png", "kernels.png", "lookup.png"]:
        with Image.open(tmp_path / "out" / name) as image:
            image.verify()
            assert image.format == "PNG" and image.size[0] > 200
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "fit.png",
        "heatmaps.png",
        "kernels.png",
        "lookup.png",
    ]
    lines = result.stdout.splitlines()
    rows = {
        line.split()[0]: line.split()[1:]
        for line in lines
        if line.split() and line.split()[0] in {"gaussian", "boxcar", "constant", "triangular"}
    }
    assert set(rows) == {"gaussian", "boxcar", "constant", "triangular"}
    header = next(line for line in lines if line.startswith("kernel"))
    assert header.split()[1:] == ["h", "=", "0.1", "h", "=", "0.5", "h", "=", "2"]
    gaussian = [float(cell.rstrip("*")) for cell in rows["gaussian"] if cell != "*"]
    assert len(gaussian) == 3 and np.argmin(gaussian) == 1  # the middle bandwidth fits best
    assert "EmptyNeighbourhoodWarning" not in result.stderr


def test_demo_options(tmp_path):
    result = attnpool_cli(
        "demo",
        "--out",
        str(tmp_path),
        "--seed",
        "3",
        "--bandwidths",
        "0.3,1",
        "--kernels",
        "epanechnikov,gaussian",
    )
    assert result.returncode == 0, result.stderr
    assert "epanechnikov" in result.stdout and "h = 0.3" in result.stdout


def test_version_and_help():
    assert attnpool_cli("--version").stdout.strip() == f"attnpool {attnpool.__version__}"
    help_text = attnpool_cli("--help").stdout
    assert "demo" in help_text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["demo", "--bandwidths", "a,b"],
            "--bandwidths: expected a comma-separated list of numbers",
        ),
        (["demo", "--bandwidths", "0.5,-1"], "bandwidth: expected positive finite"),
        (["demo", "--kernels", "gauss"], "kernel: unknown kernel 'gauss'"),
        (["demo", "--seed", "x"], "--seed"),
        (["demo", "--nope"], "No such option: --nope"),
        (["fly"], "No such command"),
    ],
)
def test_user_mistakes_give_one_line_and_status_2(tmp_path, args, message):
    out = tmp_path / "out"
    result = attnpool_cli(*args, "--out", str(out)) if args[0] == "demo" else attnpool_cli(*args)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("attnpool: error: ") and message in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_out_that_is_a_file_is_refused_and_left_alone(tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("keep me")
    result = attnpool_cli("demo", "--out", str(target))
    assert result.returncode == 2 and "out: expected a directory" in result.stderr
    assert target.read_text() == "keep me"


def test_no_partial_file_when_writing_fails(tmp_path):
    # A directory squatting on one output name makes its rename fail half-way:
    # the files before it are complete, and no temporary file is left behind.
    out = tmp_path / "out"
    (out / "kernels.png").mkdir(parents=True)
    result = attnpool_cli("demo", "--out", str(out))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
