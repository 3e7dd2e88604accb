"""The command line's tables as the shell has them: standard input and output, other
separators, gzip and Parquet — each read to the same numbers as the plain CSV, and
anything else a one-line error naming the format."""

from __future__ import annotations

import csv
import gzip
import io
import subprocess
import sys

import numpy as np
import pytest

from attnpool.cli import main

X = np.linspace(0, 5, 40)
ROWS = [(float(a), float(np.sin(a) + 0.1 * a)) for a in X]


def table(separator=","):
    return "x" + separator + "y\n" + "".join(f"{a!r}{separator}{b!r}\n" for a, b in ROWS)


def predictions(text):
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["x", "y_predicted", "row"]
    table = np.array(rows[1:], dtype=float)
    np.testing.assert_array_equal(table[:, 2], np.arange(1, len(rows)))  # each data row's
    return table[:, :2]


def fit(capsys, path, *extra):
    code = main(["fit", str(path), "--x", "x", "--y", "y", "--bandwidth", "0.4", *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def reference(tmp_path, capsys):
    (tmp_path / "plain.csv").write_text(table())
    code, _, err = fit(capsys, tmp_path / "plain.csv", "--out", str(tmp_path / "plain-out.csv"))
    assert code == 0, err
    return predictions((tmp_path / "plain-out.csv").read_text())


def test_standard_input_to_standard_output():
    run = subprocess.run(
        [sys.executable, "-m", "attnpool", "fit", "-", "--x", "x", "--y", "y", "--out", "-"],
        input=table().encode(),
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr.decode()
    fitted = predictions(run.stdout.decode())  # standard output holds the CSV only
    np.testing.assert_allclose(fitted[:, 0], X, rtol=0)
    assert "regression of 'y' on 40 rows" in run.stderr.decode()
    assert "wrote standard output" in run.stderr.decode()


@pytest.mark.parametrize(
    ("name", "separator", "option"),
    [
        ("data.tsv", "\t", []),
        ("data.txt", "\t", []),
        ("data.txt", ";", []),
        ("data.txt", "|", []),
        ("data.txt", "\t", ["--sep", "tab"]),
        ("data.txt", " ", ["--sep", "space"]),
        ("data.txt", ":", ["--sep", ":"]),
    ],
)
def test_other_separators_read_the_same_numbers(
    tmp_path, capsys, reference, name, separator, option
):
    (tmp_path / name).write_text(table(separator))
    code, out, err = fit(capsys, tmp_path / name, "--out", "-", *option)
    assert code == 0, err
    np.testing.assert_array_equal(predictions(out), reference)


def test_gzip_reads_the_same_numbers(tmp_path, capsys, reference):
    (tmp_path / "data.csv.gz").write_bytes(gzip.compress(table().encode()))
    code, out, err = fit(capsys, tmp_path / "data.csv.gz", "--out", "-")
    assert code == 0, err
    np.testing.assert_array_equal(predictions(out), reference)


def test_parquet_reads_the_same_numbers(tmp_path, capsys, reference):
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {"x": [a for a, _ in ROWS], "y": [b for _, b in ROWS], "label": ["a"] * 40}
    pq.write_table(pa.table(columns), tmp_path / "data.parquet")
    code, out, err = fit(capsys, tmp_path / "data.parquet", "--out", "-")
    assert code == 0, err
    np.testing.assert_array_equal(predictions(out), reference)


def test_parquet_without_pyarrow_names_the_format(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0]}), tmp_path / "d.pq")
    # a Python in which pyarrow cannot be imported
    script = (
        "import sys; sys.modules['pyarrow'] = None\n"
        "from attnpool.cli import main\n"
        f"sys.exit(main(['fit', {str(tmp_path / 'd.pq')!r}, '--x', 'x', '--y', 'y']))"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=120, check=False
    )
    assert run.returncode == 2  # a data error: the table cannot be read as it is
    message = run.stderr.decode()
    assert message.count("\n") == 1
    assert "d.pq: a Parquet file; reading it needs pyarrow (pip install pyarrow)" in message


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        (b"PK\x03\x04rest of a workbook", [], "a ZIP archive (an Excel workbook?)"),
        (b"\x1f\x8bnot really gzip", [], "a gzip file that does not decompress"),
        (b"x,y\n1,2\n\xff\xfe,3\n", [], "expected UTF-8 text; byte 0xff"),
        (table().encode(), ["--sep", "ab"], "--sep: expected one character"),
    ],
)
def test_other_content_is_a_one_line_error(tmp_path, capsys, content, extra, message):
    (tmp_path / "data.bin").write_bytes(content)
    code, out, err = fit(capsys, tmp_path / "data.bin", *extra)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "predictions.csv").exists()


def test_standard_input_is_read_once(capsys):
    code = main(["fit", "-", "--x", "x", "--y", "y", "--predict", "-"])
    assert code == 2
    assert "--predict: standard input holds DATA already" in capsys.readouterr().err
