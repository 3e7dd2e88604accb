"""``attnpool.show_config()``, and choosing the compiled loops' instruction set."""

import os
import subprocess
import sys

import pytest

import attnpool
from attnpool.methods import compiled


def test_show_config_sections(capsys):
    config = attnpool.show_config(mode="dicts")
    assert sorted(config) == ["JAX", "compiled loops", "processor", "versions"]
    assert config["versions"]["numpy"] and config["JAX"]["backend"] == "cpu"
    loops = config["compiled loops"]
    runs = compiled.instruction_sets_run()
    assert loops["threads"] >= 1 and loops["this processor runs"] == list(runs)
    assert loops["loaded"].startswith(runs[0] + " (") and loops["library"].endswith(
        compiled.library_path(runs[0]).rsplit(os.sep, 1)[-1]
    )
    assert set(runs) <= set(loops["built for"]) and loops["chosen by"].startswith(compiled.VARIABLE)
    assert attnpool.show_config() is None
    printed = capsys.readouterr().out
    assert "compiled loops:\n  loaded: " in printed and "JAX:\n  backend: cpu" in printed
    with pytest.raises(ValueError, match="mode must be 'stdout' or 'dicts'; got 'json'"):
        attnpool.show_config(mode="json")


def test_the_processor_runs_at_least_the_baseline_and_says_what_else():
    runs = compiled.instruction_sets_run()
    assert runs[-1] == "baseline" and list(runs) == sorted(
        runs, key=list(compiled.INSTRUCTION_SETS).index
    )
    flags = open("/proc/cpuinfo").read().split() if os.path.exists("/proc/cpuinfo") else []
    if "avx512f" in flags and "avx512bw" in flags and "avx512vl" in flags:
        assert runs[0] == "avx512"
    elif "avx2" in flags and "fma" in flags:
        assert runs[0] == "avx2"


@pytest.mark.parametrize(
    ("chosen", "loaded", "warning"),
    [
        ("none", None, None),
        ("baseline", "baseline", None),
        ("sse9", "best", "ATTNPOOL_INSTRUCTION_SET='sse9' is not one of auto, avx512"),
    ],
)
def test_the_instruction_set_is_chosen_by_the_environment(chosen, loaded, warning):
    code = (
        "import warnings, attnpool\n"
        "from attnpool.methods import compiled\n"
        "loops = compiled.loops()\n"
        "compiled.loops()\n"
        "print(loops and loops.instruction_set)\n"
        "print(attnpool.show_config(mode='dicts')['compiled loops']['loaded'])\n"
    )
    environment = {**os.environ, compiled.VARIABLE: chosen}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=environment, timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stderr
    name, shown = run.stdout.splitlines()
    best = compiled.instruction_sets_run()[0]
    assert name == str({"best": best}.get(loaded, loaded))
    if loaded is None:
        assert shown == "none: ATTNPOOL_INSTRUCTION_SET=none; the XLA forms are used"
    if warning is None:
        assert "RuntimeWarning" not in run.stderr
    else:
        assert run.stderr.count("RuntimeWarning") == 1 and warning in run.stderr
        assert f"using {best!r}" in run.stderr
