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


@pytest.fixture
def sine_csv(tmp_path):
    data = attnpool.datasets.sine_data(n=120, seed=1)
    path = tmp_path / "sine.csv"
    lines = ["x,z,y"] + [
        f"{a},{2 * a},{b}" for a, b in zip(data.x_train, data.y_train, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path, data


def read_csv(path):
    rows = path.read_text().splitlines()
    return rows[0].split(","), np.array([[float(v) for v in row.split(",")] for row in rows[1:]])


def test_fit_selects_by_cv_writes_predictions_and_a_plot(tmp_path, sine_csv):
    path, data = sine_csv
    result = attnpool_cli(
        "fit",
        str(path),
        "--x",
        "x",
        "--y",
        "y",
        "--out",
        str(tmp_path / "p.csv"),
        "--plot",
        str(tmp_path / "fit.png"),
    )
    assert result.returncode == 0, result.stderr
    selection = attnpool.select_bandwidth(data.x_train, data.y_train)
    assert f"x = {selection.bandwidth[0]:.6g}" in result.stdout
    assert f"leave-one-out CV error (mean squared): {selection.objective:.6g}" in result.stdout
    header, table = read_csv(tmp_path / "p.csv")
    assert header == ["x", "y_predicted", "row"]
    np.testing.assert_allclose(table[:, 0], data.x_train)  # same row order
    np.testing.assert_allclose(
        table[:, 1],
        attnpool.nadaraya_watson(
            data.x_train, data.y_train, data.x_train, bandwidth=selection.bandwidth
        ),
    )
    with Image.open(tmp_path / "fit.png") as image:
        image.verify()


def test_fit_with_an_interval_adds_band_columns_and_draws_the_band(tmp_path, sine_csv):
    path, data = sine_csv
    out, plot = tmp_path / "p.csv", tmp_path / "fit.png"
    args = ["fit", str(path), "--x", "x", "--y", "y", "--bandwidth", "0.3", "--interval", "0.9"]
    result = attnpool_cli(*args, "--out", str(out), "--plot", str(plot))
    assert result.returncode == 0, result.stderr
    header, table = read_csv(out)
    assert header == ["x", "y_predicted", "y_lower", "y_upper", "row"]
    band = attnpool.confidence_band(
        data.x_train, data.y_train, data.x_train, bandwidth=0.3, level=0.9
    )
    np.testing.assert_allclose(table[:, 2], band.lower)
    np.testing.assert_allclose(table[:, 3], band.upper)
    with Image.open(plot) as image:
        image.verify()


def test_fit_with_queries_fixed_bandwidth_and_local_linear(tmp_path, sine_csv):
    path, data = sine_csv
    queries, out = tmp_path / "q.csv", tmp_path / "p.csv"
    args = ["fit", str(path), "--x", "x", "--x", "z", "--y", "y", "--bandwidth", "0.3,0.6"]
    args += ["--degree", "1", "--predict", str(queries), "--out", str(out)]
    queries.write_text("x\n0.5\n2.5\n4.5\n")
    result = attnpool_cli(*args)
    assert result.returncode == 2 and "no column named 'z'" in result.stderr  # the queries lack z
    assert not out.exists()
    queries.write_text("x,z\n0.5,1.0\n2.5,5.0\n")
    result = attnpool_cli(*args)
    assert result.returncode == 0, result.stderr
    header, table = read_csv(tmp_path / "p.csv")
    assert header == ["x", "z", "y_predicted", "row"]
    x2 = np.column_stack([data.x_train, 2 * data.x_train])
    expected = attnpool.local_regression(
        x2, data.y_train, [[0.5, 1.0], [2.5, 5.0]], bandwidth=[0.3, 0.6], degree=1
    )
    np.testing.assert_allclose(table[:, 2], expected)


# exit status 2 for bad input: usage errors and data errors (the table's content) alike
@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        (None, [], "no such file"),
        ("x,y\n1,2\n2,3\n3,4\n", ["--y", "w"], "no column named 'w'; the columns are 'x', 'y'"),
        ("x,y\n1,2\n2,abc\n3,4\n", [], "row 2, column 'y': expected a number; received 'abc'"),
        (
            "x,y\n1,2\n2,\n3,4\nNA,5\n",
            [],
            "2 row(s) have missing or infinite values in the used columns (rows 2, 4)",
        ),
        ("x,y\n1,2\n2,3\n", [], "expected at least 3 complete rows; received 2"),
        ("x,y\n1,2\n2,3\n3,4\n", ["--bandwidth", "wide"], "--bandwidth: expected one of cv, aicc"),
        ("x,y\n1,2\n2,3\n3,4\n", ["--bandwidth", "-2"], "bandwidth: expected positive finite"),
        ("x,y\n1,2\n2,3\n3,4\n", ["--kernel", "gauss"], "kernel: unknown kernel 'gauss'"),
        ("x,y\n1,2\n2,3\n3,4\n", ["--degree", "3"], "degree: expected 0"),
        ("x,y\n1,2\n2,3\n3,4\n", ["--interval", "95"], "--interval: expected a level"),
        (
            "x,y,z\n1,2,0\n2,3,1\n3,4,0\n",
            ["--x", "z", "--plot", "PLOT"],
            "--plot: a fit plot needs exactly one --x column",
        ),
    ],
)
def test_fit_data_problems_give_one_line_and_no_output(tmp_path, content, args, message):
    data = tmp_path / "data.csv"
    if content is not None:
        data.write_text(content)
    out = tmp_path / "out" / "p.csv"
    args = [str(tmp_path / "plot.png") if a == "PLOT" else a for a in args]
    y_given = "--y" in args
    result = attnpool_cli(
        "fit", str(data), "--x", "x", *([] if y_given else ["--y", "y"]), *args, "--out", str(out)
    )
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("attnpool: error: ") and message in last, result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists() and not (tmp_path / "plot.png").exists()


def test_fit_dropna(tmp_path):
    data = tmp_path / "data.csv"
    data.write_text("x,y\n1,2\n2,\n3,4\nNA,5\n6,7\n7,8\n")
    result = attnpool_cli(
        "fit",
        str(data),
        "--x",
        "x",
        "--y",
        "y",
        "--dropna",
        "--bandwidth",
        "scott",
        "--out",
        str(tmp_path / "p.csv"),
    )
    assert result.returncode == 0, result.stderr
    assert "on 4 rows" in result.stdout
    _, table = read_csv(tmp_path / "p.csv")
    np.testing.assert_allclose(table[:, 0], [1, 3, 6, 7])


def test_progress_bar_appears_only_after_a_second(capsys):
    import time

    from attnpool._support.progress import ProgressBar

    progress = ProgressBar("choosing the bandwidth")
    progress(1, 3)
    assert capsys.readouterr().err == ""  # quick searches print nothing
    time.sleep(1.05)
    progress(2, 3)
    progress(3, 3)
    err = capsys.readouterr().err
    assert "choosing the bandwidth:  67%" in err and "2/3" in err  # tqdm's bar
    assert "3/3" in err.splitlines()[-1].split("\r")[-1] and err.endswith("\n")


def test_learn_demo_writes_its_pictures_and_the_learned_bandwidth(tmp_path):
    result = attnpool_cli("learn-demo", "--out", str(tmp_path / "out"), "--steps", "150")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "learned_fit.png",
        "learned_heatmaps.png",
        "loss.png",
    ]
    for path in (tmp_path / "out").iterdir():
        with Image.open(path) as image:
            image.verify()
    learned = float(result.stdout.split("learned bandwidth")[1].split("h =")[1].split()[0][:-1])
    cross_validated = float(result.stdout.split("cross-validated")[1].split("h =")[1].split(",")[0])
    assert learned == pytest.approx(cross_validated, rel=0.01)
    assert "it attends to each point itself" in result.stdout


def test_learn_demo_rejects_bad_options_without_writing(tmp_path):
    result = attnpool_cli("learn-demo", "--out", str(tmp_path / "out"), "--steps", "0")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "steps: expected a positive integer" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("name", "figure", "lines"),
    [
        ("kernels", "kernels_mse.png", ["spread across kernels at s =", "× larger)"]),
        ("consistency", "consistency.png", [" d  n^(-4/(4+d))  rate h slope  CV h slope"]),
    ],
)
def test_study_quick_prints_its_table_and_writes_the_figure(tmp_path, name, figure, lines):
    result = attnpool_cli("study", name, "--quick", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    for line in lines:
        assert line in result.stdout
    with Image.open(tmp_path / figure) as image:
        image.verify()


def test_unknown_study_is_one_line_and_exit_2(tmp_path):
    result = attnpool_cli("study", "bootstrap", "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "study: expected one of 'consistency', 'kernels'; received 'bootstrap'" in result.stderr
    assert not (tmp_path / "out").exists()


def test_fit_takes_var_type_and_method_as_the_estimators_do(tmp_path):
    rng = np.random.default_rng(0)
    x, group = rng.uniform(0, 5, 120), rng.integers(0, 3, 120)
    y = np.sin(x) + group + rng.normal(0, 0.2, 120)
    data = tmp_path / "d.csv"
    rows = zip(x.tolist(), group.tolist(), y.tolist(), strict=True)
    data.write_text("x,g,y\n" + "".join(f"{a!r},{b},{c!r}\n" for a, b, c in rows))
    out = tmp_path / "p.csv"
    args = ["fit", str(data), "--x", "x", "--x", "g", "--var-type", "cu", "--y", "y"]
    result = attnpool_cli(*args, "--degree", "1", "--out", str(out))
    assert result.returncode == 0, result.stderr
    model = attnpool.LocalLinear(var_type="cu").fit(np.c_[x, group], y)
    _, table = read_csv(out)
    np.testing.assert_allclose(table[:, 2], model.predict(np.c_[x, group]), rtol=1e-10)
    result = attnpool_cli(
        "fit", str(data), "--x", "x", "--y", "y", "--kernel", "epanechnikov",
        "--method", "sparse", "--out", str(out), "--force",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    model = attnpool.NadarayaWatson("epanechnikov", method="sparse").fit(x[:, None], y)
    np.testing.assert_allclose(read_csv(out)[1][:, 1], model.predict(x[:, None]), rtol=1e-10)
    result = attnpool_cli(*args, "--method", "sparse", "--out", str(out), "--force")
    assert result.returncode == 2 and "method: 'sparse' pools local-constant fits" in result.stderr


def test_fit_takes_neighbour_bandwidths_and_higher_order_kernels(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 5, 90)
    y = np.sin(x) + rng.normal(0, 0.2, 90)
    data, out = tmp_path / "d.csv", tmp_path / "p.csv"
    data.write_text(
        "x,y\n" + "".join(f"{a!r},{b!r}\n" for a, b in zip(x.tolist(), y.tolist(), strict=True))
    )
    base = ["fit", str(data), "--x", "x", "--y", "y", "--out", str(out)]
    result = attnpool_cli(
        *base, "--bandwidth-type", "adaptive_nn", "--plot", str(tmp_path / "f.png")
    )
    assert result.returncode == 0, result.stderr
    model = attnpool.NadarayaWatson(bandwidth_type="adaptive_nn").fit(x[:, None], y)
    assert f"adaptive_nn (cv): x = {model.bandwidth_[0]}" in result.stdout
    np.testing.assert_allclose(read_csv(out)[1][:, 1], model.predict(x[:, None]), rtol=1e-12)
    result = attnpool_cli(*base, "--kernel", "gaussian-order4", "--degree", "1", "--force")
    assert result.returncode == 0, result.stderr
    model = attnpool.LocalLinear("gaussian-order4").fit(x[:, None], y)
    np.testing.assert_allclose(read_csv(out)[1][:, 1], model.predict(x[:, None]), rtol=1e-10)
    out.unlink()
    result = attnpool_cli(*base, "--bandwidth-type", "generalized_nn", "--interval", "0.9")
    assert result.returncode == 2 and "--interval: confidence bands are for" in result.stderr
    assert not out.exists()


def test_help_lists_the_kernels_and_gives_examples():
    from attnpool import kernels
    from attnpool.cli import KERNEL_NAMES

    assert "gaussian" in KERNEL_NAMES and "dot" not in KERNEL_NAMES
    assert set(KERNEL_NAMES) == set(kernels.names()) - {"dot"}
    text = " ".join(attnpool_cli("fit", "--help").stdout.split())
    assert all(name in text for name in KERNEL_NAMES)
    assert "Examples:" in text and "--var-type cu" in text and "attnpool fit -" in text
    assert "Example: attnpool study consistency" in " ".join(
        attnpool_cli("study", "--help").stdout.split()
    )


def test_study_lists_its_choices():
    from attnpool.cli.demos import STUDY_NAMES
    from attnpool.studies import STUDIES

    assert STUDY_NAMES == tuple(STUDIES)
    usage = attnpool_cli("study", "--help").stdout
    assert "{consistency|kernels}" in usage  # in the usage line, whatever the width
