"""``attnpool density``: the estimators' values at the table's rows, pictures, errors."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from attnpool import ConditionalDensity, KernelDensity
from test_cli import attnpool_cli, read_csv


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(0)
    age, region = rng.uniform(20, 60, 150), rng.integers(0, 3, 150)
    income = 20 + 0.5 * age + 5 * region + rng.normal(0, 4, 150)
    path = tmp_path_factory.mktemp("density") / "people.csv"
    rows = zip(age.tolist(), region.tolist(), income.tolist(), strict=True)
    path.write_text("age,region,income\n" + "".join(f"{a!r},{r},{i!r}\n" for a, r, i in rows))
    return path, age, region.astype(float), income


def test_density_and_plot(table, tmp_path):
    path, _, region, income = table
    out, picture = tmp_path / "d.csv", tmp_path / "d.png"
    result = attnpool_cli(
        "density", str(path), "--x", "income", "--out", str(out), "--plot", str(picture)
    )
    assert result.returncode == 0, result.stderr
    model = KernelDensity(bandwidth="cv_ml").fit(income[:, None])
    assert f"income = {model.bandwidth_[0]:.6g}" in result.stdout
    header, values = read_csv(out)
    assert header == ["income", "density", "row"]
    np.testing.assert_allclose(
        values[:, 1], np.exp(model.score_samples(income[:, None])), rtol=1e-10
    )
    with Image.open(picture) as image:
        image.verify()
    result = attnpool_cli(
        "density",
        str(path),
        "--x",
        "income",
        "--x",
        "region",
        "--var-type",
        "cu",
        "--bandwidth",
        "3,0.1",
        "--out",
        str(out),
        "--force",
    )
    assert result.returncode == 0, result.stderr
    model = KernelDensity(bandwidth=[3, 0.1], var_type="cu").fit(np.c_[income, region])
    np.testing.assert_allclose(
        read_csv(out)[1][:, 2], np.exp(model.score_samples(np.c_[income, region])), rtol=1e-10
    )


def test_conditional_density_and_plot(table, tmp_path):
    path, age, _, income = table
    out, picture = tmp_path / "c.csv", tmp_path / "c.png"
    result = attnpool_cli(
        "density",
        str(path),
        "--x",
        "income",
        "--given",
        "age",
        "--bandwidth",
        "2.5,4",
        "--out",
        str(out),
        "--plot",
        str(picture),
    )
    assert result.returncode == 0, result.stderr
    model = ConditionalDensity(bandwidth=[4, 2.5]).fit(age[:, None], income)
    header, values = read_csv(out)
    assert header == ["income", "age", "conditional_density", "row"]
    np.testing.assert_allclose(values[:, 2], model.pdf(age[:, None], income), rtol=1e-10)
    with Image.open(picture) as image:
        image.verify()
    result = attnpool_cli(
        "density",
        str(path),
        "--x",
        "income",
        "--given",
        "region",
        "--given-var-type",
        "u",
        "--out",
        "-",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("income,region,conditional_density,row\n")


def test_errors_are_one_line_and_write_nothing(table, tmp_path):
    path = table[0]
    out, picture = tmp_path / "e.csv", tmp_path / "e.png"
    cases = [
        (["--x", "income", "--bandwidth", "wide"], "--bandwidth: expected one of"),
        (["--x", "income", "--x", "age", "--plot", str(picture)], "--plot: a density plot takes"),
        (["--x", "salary"], "salary"),
        (["--x", "income", "--var-type", "z"], "var_type: expected a string of 1 letters"),
    ]
    for args, message in cases:
        result = attnpool_cli("density", str(path), *args, "--out", str(out))
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert not out.exists() and not picture.exists()


def test_the_search_reports_progress_and_quiet_silences_it(table, tmp_path):
    from attnpool import select_conditional_bandwidth, select_density_bandwidth

    path, age, _, income = table
    for select, args in (
        (select_density_bandwidth, (income[:, None],)),
        (select_conditional_bandwidth, (age[:, None], income)),
    ):
        calls: list[tuple[int, int]] = []
        select(*args, method="cv_ls", progress=lambda *call, seen=calls: seen.append(call))
        assert calls == [(1, 2), (2, 2)]
    # from a pipe: at most the final line (work under a second prints nothing); --quiet: none
    loud = attnpool_cli("density", str(path), "--x", "income", "--given", "age",
                        "--out", str(tmp_path / "a.csv"))  # fmt: skip
    quiet = attnpool_cli("density", str(path), "--x", "income", "--given", "age",
                         "--out", str(tmp_path / "b.csv"), "--quiet")  # fmt: skip
    assert loud.returncode == quiet.returncode == 0
    progress_lines = [line for line in loud.stderr.splitlines() if line]
    assert len(progress_lines) <= 1 and "\r" not in loud.stderr
    assert all(line.startswith("choosing the bandwidth: 2/2 in ") for line in progress_lines)
    assert quiet.stderr == ""
    assert read_csv(tmp_path / "a.csv")[1].tolist() == read_csv(tmp_path / "b.csv")[1].tolist()
