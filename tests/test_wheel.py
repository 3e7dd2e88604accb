"""The built wheel, installed into a fresh environment with no C compiler, runs the
compiled loops: the same numbers bit for bit, nothing written at run time, an empty or
read-only home changes nothing, and a damaged installation falls back with one
warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from attnpool.methods import compiled
from wheel_tools import build_wheel, fresh_environment

pytestmark = pytest.mark.xdist_group("wheel")
SOURCE = Path(__file__).resolve().parents[1] / "src" / "attnpool"

#: What the fresh environment computes: the loops loaded, sums of the native loop and
#: the fgt expansions, a local linear fit with its CV bandwidth (the first fit a user
#: makes) and one at a given bandwidth, and whether any of it imported JAX.
SCRIPT = """
import json, sys, warnings
import numpy as np
import attnpool
from attnpool.methods import compiled, fgt, native

rng = np.random.default_rng(0)
x = rng.uniform(0, 5, (500, 2))
y = np.sin(x[:, 0]) + x[:, 1] ** 2 / 5 + rng.normal(0, 0.1, 500)
keys, queries = rng.normal(size=(3000, 8)), rng.normal(size=(200, 8))
values = rng.normal(size=(3000, 3))
model = attnpool.LocalLinear(bandwidth="cv_ls").fit(x, y)
loops = compiled.loops()
out = {
    "file": attnpool.__file__,
    "loaded": None if loops is None else [loops.instruction_set, loops.path],
    "native": native.native_sums(queries, keys, values, np.full(8, 1 / 0.9)).tolist()
    if native.available(True, 8, 3) else None,
    "fgt": fgt.expansion_sums(queries[:, :1], keys[:, :1], values, 1 / 0.2)[0].tolist(),
    "bandwidth": model.bandwidth_.tolist(),
    "cv_fit": model.predict(x[:50]).tolist(),
    "fit": attnpool.LocalLinear(bandwidth=[0.4, 0.6]).fit(x, y).predict(x[:50]).tolist(),
    "jax": "jax" in sys.modules,
}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def environment(wheel, tmp_path_factory) -> Path:
    return fresh_environment(tmp_path_factory.mktemp("fresh"), wheel)


def run_fresh(environment: Path, home: Path, extra: dict[str, str] | None = None) -> dict:
    """``SCRIPT`` in the fresh environment: no compiler on the PATH, ``home`` as HOME, no
    cache folder chosen; RuntimeWarnings are errors unless ``extra`` says otherwise."""
    bin_dir = environment / ("Scripts" if os.name == "nt" else "bin")
    env = {
        "PATH": str(bin_dir),
        "HOME": str(home),
        "CC": "/nonexistent/cc",
        "PYTHONWARNINGS": "error::RuntimeWarning",
        **(extra or {}),
    }
    run = subprocess.run(
        [str(bin_dir / "python"), "-c", SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    result["stderr"] = run.stderr
    return result


def here() -> dict:
    """``SCRIPT`` in this process's environment (the developer's build of the same
    sources), in a subprocess so that nothing it imported leaks in."""
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def test_the_wheel_is_a_platform_wheel_with_every_library_and_no_c_source(wheel):
    assert wheel.name.startswith("attnpool-0.1.0-cp311-abi3-")
    assert not wheel.name.endswith("-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    built = sorted(name.split("/")[-1].split(".")[0] for name in names if "/_loops_" in name)
    here = [name for name in compiled.INSTRUCTION_SETS if compiled.library_path(name)]
    assert built == sorted(f"_loops_{name}" for name in here)
    assert set(compiled.instruction_sets_run()) <= set(here)
    for name in names:  # the very libraries the developer's install loads
        if "/_loops_" in name:
            instruction_set = name.split("/_loops_")[1].split(".")[0]
            packed = zipfile.ZipFile(wheel).read(name)
            assert packed == Path(compiled.library_path(instruction_set)).read_bytes(), name
    assert not [name for name in names if name.endswith((".c", ".h")) or "__pycache__" in name]
    packages = {p.relative_to(SOURCE).as_posix() for p in SOURCE.rglob("__init__.py")}
    assert packages <= {name.removeprefix("attnpool/") for name in names}
    assert "attnpool/py.typed" in names and "attnpool/methods/native.py" in names


def test_the_fresh_environment_runs_the_loops_without_a_compiler(environment, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    fresh = run_fresh(environment, home)
    assert Path(fresh["file"]).is_relative_to(environment)
    best = compiled.instruction_sets_run()[0]
    assert fresh["loaded"][0] == best and Path(fresh["loaded"][1]).is_relative_to(environment)
    assert not fresh["jax"]  # the CV search and the fit ran on the compiled loops
    developer = here()
    for key in ("native", "fgt", "bandwidth", "cv_fit", "fit"):
        assert fresh[key] == developer[key], key  # bit for bit: the same library built
    assert fresh["native"] is not None
    # nothing compiled or written at run time: the home folder is as it was
    assert list(home.rglob("*")) == []


def test_a_read_only_home_changes_nothing(environment, tmp_path):
    home = tmp_path / "read-only-home"
    home.mkdir()
    home.chmod(0o500)
    try:
        fresh = run_fresh(environment, home)
    finally:
        home.chmod(0o700)
    open_home = tmp_path / "home"
    open_home.mkdir()
    assert {k: v for k, v in fresh.items() if k != "stderr"} == {
        k: v for k, v in run_fresh(environment, open_home).items() if k != "stderr"
    }


def test_each_instruction_set_the_processor_runs_gives_the_same_fit(environment, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    runs = {
        name: run_fresh(environment, home, {compiled.VARIABLE: name})
        for name in compiled.instruction_sets_run()
    }
    assert {name: run["loaded"][0] for name, run in runs.items()} == {n: n for n in runs}
    baseline = runs.pop("baseline")
    for run in runs.values():
        for key in ("native", "fgt", "fit"):
            np.testing.assert_allclose(run[key], baseline[key], rtol=1e-12, atol=1e-14)
        # the CV search may stop a rounding apart: its bandwidth, and the fit at it
        np.testing.assert_allclose(run["bandwidth"], baseline["bandwidth"], rtol=1e-6)
        np.testing.assert_allclose(run["cv_fit"], baseline["cv_fit"], rtol=1e-7)


def test_a_damaged_library_falls_back_and_a_missing_one_says_so_once(wheel, tmp_path):
    environment = fresh_environment(tmp_path / "damaged", wheel)
    package = Path(
        sysconfig.get_path("platlib", vars={"base": str(environment), "platbase": str(environment)})
    ) / "attnpool" / "methods"  # fmt: skip
    libraries = {path.name.split(".")[0][len("_loops_") :]: path
                 for path in package.glob("_loops_*")}  # fmt: skip
    home = tmp_path / "home"
    home.mkdir()
    intact = run_fresh(environment, home)
    wide = [name for name in compiled.instruction_sets_run() if name != "baseline"]
    for name in wide:  # not a library (say, an error page saved in its place): the
        # baseline loads, the same answers
        libraries[name].write_bytes(b"<html>503 Service Unavailable</html>\n")
    fallen = run_fresh(environment, home, {"PYTHONWARNINGS": "default"})
    assert fallen["loaded"][0] == "baseline"
    if wide:
        (warned,) = [line for line in fallen["stderr"].splitlines() if "RuntimeWarning" in line]
        assert f"compiled loops for {wide[0]}: " in warned and "baseline's are used" in warned
    np.testing.assert_allclose(fallen["fit"], intact["fit"], rtol=1e-12, atol=1e-14)
    for path in libraries.values():
        path.unlink()
    bare = run_fresh(environment, home, {"PYTHONWARNINGS": "default"})
    assert bare["loaded"] is None and bare["native"] is None
    warned = [line for line in bare["stderr"].splitlines() if "RuntimeWarning" in line]
    assert len(warned) == 1, bare["stderr"]
    assert "_loops_baseline is not installed" in warned[0]
    assert "a first fit compiles JAX programs" in warned[0]
    np.testing.assert_allclose(bare["fit"], intact["fit"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(bare["bandwidth"], intact["bandwidth"], rtol=1e-5)


def test_the_sdist_holds_what_the_build_needs(tmp_path):
    # the source distribution (meson dist: the tracked files) builds the same wheel; its
    # build from source takes minutes and is measured in the benchmarks
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    run = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp_path),
         str(SOURCE.parents[1])],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    (sdist,) = tmp_path.glob("attnpool-0.1.0.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    needed = {"meson.build", "pyproject.toml", "README.md", "LICENSE"}
    c_sources = ("native.c", "expansions.c", "cpu_features.c", "portable.h", "vector_width.h")
    needed |= {f"src/attnpool/methods/{name}" for name in c_sources}
    assert needed <= names
    assert {p.relative_to(SOURCE.parents[1]).as_posix() for p in SOURCE.rglob("*.py")} <= names
