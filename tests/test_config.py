"""``attnpool.show_config()`` and the one warning where no C compiler builds the loops."""

import os
import subprocess
import sys

import pytest

import attnpool


def test_show_config_sections(capsys):
    config = attnpool.show_config(mode="dicts")
    assert sorted(config) == ["JAX", "compiled loops", "processor", "versions"]
    assert config["versions"]["numpy"] and config["JAX"]["backend"] == "cpu"
    loops = config["compiled loops"]
    assert loops["threads"] >= 1 and "-march=native" in loops["flags"]
    assert attnpool.show_config() is None
    printed = capsys.readouterr().out
    assert "compiled loops:\n  compiler: " in printed and "JAX:\n  backend: cpu" in printed
    with pytest.raises(ValueError, match="mode must be 'stdout' or 'dicts'; got 'json'"):
        attnpool.show_config(mode="json")


def test_no_compiler_is_said_once_with_its_cost(tmp_path):
    code = (
        "import numpy as np, attnpool\n"
        "from attnpool.methods import native\n"
        "assert not native.available() and not native.available()\n"
        "x = np.random.default_rng(0).uniform(0, 5, (300, 2))\n"
        "attnpool.LocalLinear(bandwidth=[0.5, 0.5]).fit(x, x.sum(axis=1)).predict(x[:5])\n"
        "print(attnpool.show_config(mode='dicts')['compiled loops']['native loop'])\n"
    )
    environment = {**os.environ, "CC": str(tmp_path / "no-such-cc"), "ATTNPOOL_CACHE": "off"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=environment, timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("attnpool's compiled loops are unavailable") == 1
    assert "no C compiler" in run.stderr and "a first fit compiles JAX programs" in run.stderr
    assert run.stdout.strip() == "unavailable: no C compiler (set $CC); the XLA forms are used"
