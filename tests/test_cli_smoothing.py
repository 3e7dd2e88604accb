"""``attnpool fit --span`` (LOESS) and ``--lowess``, run as a real subprocess."""

import numpy as np
import pytest
from PIL import Image

import attnpool
from test_cli import attnpool_cli, read_csv


@pytest.fixture
def table(tmp_path):
    data = attnpool.datasets.sine_data(n=120, seed=1)
    path = tmp_path / "sine.csv"
    rows = [f"{a},{b}" for a, b in zip(data.x_train, data.y_train, strict=True)]
    path.write_text("x,y\n" + "\n".join(rows) + "\n")
    return path, data.x_train, data.y_train


def test_span_fits_loess_with_its_band_and_plot(tmp_path, table):
    path, x, y = table
    out, plot = tmp_path / "fit.csv", tmp_path / "fit.png"
    result = attnpool_cli("fit", str(path), "--x", "x", "--y", "y", "--span", "gcv",
                          "--interval", "0.9", "--family", "symmetric", "--out", str(out),
                          "--plot", str(plot), "-q")  # fmt: skip
    assert result.returncode == 0, result.stderr
    model = attnpool.Loess(span="gcv", family="symmetric").fit(x[:, None], y)
    assert f"span = {model.span_:.4g} (by gcv)" in result.stdout
    header, values = read_csv(out)
    assert header == ["x", "y_predicted", "y_lower", "y_upper", "row"]
    np.testing.assert_allclose(values[:, 1], model.predict(x[:, None]), rtol=1e-12)
    lower, upper = model.predict_interval(x[:, None], level=0.9)
    np.testing.assert_allclose(values[:, 2], lower, rtol=1e-12)
    np.testing.assert_allclose(values[:, 3], upper, rtol=1e-12)
    with Image.open(plot) as image:
        assert image.format == "PNG" and image.size[0] > 200


def test_approximate_statistics_for_the_band(tmp_path, table):
    path, x, y = table
    result = attnpool_cli("fit", str(path), "--x", "x", "--y", "y", "--span", "0.4",
                          "--interval", "0.95", "--statistics", "approximate", "--out", "-",
                          "-q")  # fmt: skip
    assert result.returncode == 0, result.stderr
    model = attnpool.Loess(span=0.4, statistics="approximate").fit(x[:, None], y)
    assert f"on {model.df_:.1f} df (R's predict.loess, approximate statistics)" in result.stderr
    values = np.array(
        [[float(v) for v in row.split(",")] for row in result.stdout.splitlines()[1:]]
    )
    lower, upper = model.predict_interval(x[:, None], level=0.95)
    np.testing.assert_allclose(values[:, 2:4], np.column_stack([lower, upper]), rtol=1e-12)


def test_lowess_gives_statsmodels_numbers(tmp_path, table):
    path, x, y = table
    result = attnpool_cli("fit", str(path), "--x", "x", "--y", "y", "--lowess", "--span", "0.3",
                          "--out", "-", "-q")  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = result.stdout.splitlines()
    values = np.array([[float(v) for v in row.split(",")] for row in rows[1:]])
    np.testing.assert_allclose(values[:, 1], attnpool.lowess(y, x, frac=0.3, xvals=x), rtol=1e-12)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lowess", "--interval", "0.9"], "--interval: LOWESS has no standard errors"),
        (["--span", "0.5", "--bandwidth", "0.3"], "--bandwidth: not used by --span"),
        (["--span", "abc"], "--span: expected a number > 0, gcv, aicc or cv; received 'abc'"),
        (["--lowess", "--span", "2"], "--span: expected a number in (0, 1]; received '2'"),
        (["--span", "0.5", "--family", "huber"], "--family"),
        (
            ["--span", "0.5", "--statistics", "fast"],
            "--statistics: expected one of 'exact', 'approximate'; received 'fast'",
        ),
        (["--lowess", "--statistics", "exact"], "--statistics: LOWESS has none"),
        (["--statistics", "exact"], "--statistics: LOESS's, with --span"),
    ],
)
def test_mistakes_give_one_line_and_no_file(tmp_path, table, args, message):
    out = tmp_path / "fit.csv"
    result = attnpool_cli("fit", str(table[0]), "--x", "x", "--y", "y", *args, "--out", str(out))
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()
