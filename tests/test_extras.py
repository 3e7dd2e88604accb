"""The package's extras: the core serves pooling, regression and bandwidth selection
without any of them, and each feature that needs one says which in one line.

Each case runs in a fresh interpreter in which the optional packages cannot be imported
(``sys.modules[name] = None``, Python's own way to make an import fail)."""

from __future__ import annotations

import subprocess
import sys

import pytest

OPTIONAL = ("matplotlib", "typer", "optax", "dask", "distributed", "zarr", "sklearn")
WITHOUT_EXTRAS = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in OPTIONAL)


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS + code],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_core_works_without_any_extra():
    result = run(
        "import numpy as np, attnpool\n"
        "rng = np.random.default_rng(0)\n"
        "x = rng.uniform(0, 5, 3000); y = np.sin(x) + rng.normal(0, 0.3, 3000)\n"
        "pooled = attnpool.attention_pool(x[:5], x, y, bandwidth=0.2, method='stream')\n"
        "found = attnpool.select_bandwidth(x, y)\n"
        "model = attnpool.LocalLinear().fit(x[:300, None], y[:300])\n"
        "print(pooled.shape, found.bandwidth.shape, model.predict(x[:3, None]).shape,\n"
        "      round(model.score(x[:300, None], y[:300]), 1) > 0)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["(5,)", "(1,)", "(3,)", "True"]


@pytest.mark.parametrize(
    ("code", "extra"),
    [
        ("import attnpool.plotting", "plot"),
        ("import attnpool; attnpool.plotting.show_heatmaps", "plot"),
        ("import attnpool; attnpool.fit_attention", "learn"),
        (
            "import numpy as np; from attnpool import LearnedAttentionRegressor\n"
            "LearnedAttentionRegressor().fit(np.ones((5, 1)), np.ones(5))",
            "learn",
        ),
        ("import attnpool.distributed", "dask"),
    ],
)
def test_a_feature_without_its_extra_names_it(code, extra):
    result = run(code)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("attnpool._support.optional.MissingDependencyError: ")
    assert f"pip install 'attnpool[{extra}]'" in last


def test_the_command_without_its_extra_is_one_line():
    result = run("from attnpool.__main__ import main\nsys.argv = ['attnpool', '--help']\nmain()")
    assert result.returncode == 2
    assert result.stderr == (
        "attnpool: error: the attnpool command needs typer, which is not installed: "
        "pip install 'attnpool[cli]'\n"
    )


def test_a_command_whose_extra_is_missing_is_one_line(tmp_path):
    # the command line is there, the pictures are not
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from attnpool.cli import main\n"
        f"sys.exit(main(['demo', '--out', {str(tmp_path / 'out')!r}]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "needs matplotlib, which is not installed: pip install 'attnpool[plot]'" in result.stderr
    assert not (tmp_path / "out").exists()
