"""The C sources compile warning-free (``-Wall -Wextra -Werror``, the flags
``meson.build`` passes) under GCC and under Clang (``zig cc``, installed from PyPI), for
every instruction set the package builds and for every platform its wheels are built
for; and the wheel build configuration names those platforms."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SOURCES = Path(__file__).resolve().parents[1] / "src" / "attnpool" / "methods"
#: meson.build's flags: warning_level=2, c_std=c11, the release build's -O3, and the
#: loops' own (-Wno-psabi: static functions pass wide vectors by value).
FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O3", "-ffp-contract=fast",
         "-fno-math-errno", "-Wno-psabi", "-fPIC", "-c"]  # fmt: skip
INSTRUCTION_SETS = {"baseline": [], "avx2": ["-march=x86-64-v3"], "avx512": ["-march=x86-64-v4"]}
#: native.c variants that between them reach every branch of its preprocessor: float32
#: and float64, difference and product forms, one and several value columns, the moments.
VARIANTS = [
    {"DOUBLE": 1, "DIMS": 1, "VALUES": 1, "MATMUL": 0, "WITH_MOMENTS": 1},
    {"DOUBLE": 1, "DIMS": 3, "VALUES": 4, "MATMUL": 1, "WITH_MOMENTS": 1},
    {"DOUBLE": 0, "DIMS": 16, "VALUES": 16, "MATMUL": 1, "WITH_MOMENTS": 0},
]
#: The platforms of the wheels (cibuildwheel's configuration), as Clang targets, and the
#: instruction sets built there.
TARGETS = {
    "x86_64-linux-gnu": list(INSTRUCTION_SETS),
    "aarch64-linux-gnu": ["baseline"],
    "x86_64-macos": list(INSTRUCTION_SETS),
    "aarch64-macos": ["baseline"],
    "x86_64-windows-gnu": list(INSTRUCTION_SETS),
}


def compile_all(compiler: list[str], flags: list[str], tmp_path: Path) -> None:
    """Every source and variant compiled with ``flags``; a warning fails."""
    jobs = [([f"-D{k}={v}" for k, v in variant.items()], "native.c") for variant in VARIANTS]
    jobs += [([], "expansions.c"), ([], "cpu_features.c")]
    for index, (defines, source) in enumerate(jobs):
        out = tmp_path / f"{index}.o"
        command = [*compiler, *FLAGS, *flags, *defines, str(SOURCES / source), "-o", str(out)]
        run = subprocess.run(command, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0 and not run.stderr.strip(), f"{command}\n{run.stderr}"


def zig_cc() -> list[str]:
    return [sys.executable, "-m", "ziglang", "cc"]


@pytest.mark.parametrize("instruction_set", ["baseline", "avx2", "avx512"])
def test_gcc_compiles_every_source_without_a_warning(instruction_set, tmp_path):
    gcc = shutil.which("gcc")
    assert gcc is not None, "GCC is the build's compiler here"
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    flags = INSTRUCTION_SETS[instruction_set] if x86 else []
    compile_all([gcc], flags, tmp_path)


@pytest.mark.parametrize(
    ("target", "instruction_set"),
    [(target, name) for target, names in TARGETS.items() for name in names],
)
def test_clang_compiles_every_source_for_every_wheel_platform(target, instruction_set, tmp_path,
                                                              monkeypatch):  # fmt: skip
    monkeypatch.setenv("ZIG_GLOBAL_CACHE_DIR", str(tmp_path / "zig-cache"))
    monkeypatch.setenv("ZIG_LOCAL_CACHE_DIR", str(tmp_path / "zig-cache"))
    # zig spells Clang's -march=x86-64-vN as -mcpu=x86_64_vN
    flags = [
        flag.replace("-march=x86-64-", "-mcpu=x86_64_")
        for flag in INSTRUCTION_SETS[instruction_set]
    ]
    compile_all([*zig_cc(), "-target", target], flags, tmp_path)


def test_plain_msvc_is_refused_with_advice():
    header = (SOURCES / "portable.h").read_text()
    assert "#if !defined(__GNUC__) && !defined(__clang__)" in header
    assert "clang-cl" in header.split("#error", 1)[1].splitlines()[0]
    meson = (SOURCES.parents[2] / "meson.build").read_text()
    assert "cc.get_id() == 'msvc'" in meson and "clang-cl" in meson


def test_the_wheels_are_configured_for_every_platform():
    identifiers = {}
    for name in ("linux", "macos", "windows"):
        run = subprocess.run(
            [sys.executable, "-m", "cibuildwheel", "--print-build-identifiers", "--platform", name],
            capture_output=True, text=True, cwd=SOURCES.parents[2], timeout=300,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        identifiers[name] = set(run.stdout.split())
    assert identifiers == {
        "linux": {"cp311-manylinux_x86_64", "cp311-manylinux_aarch64"},
        "macos": {"cp311-macosx_x86_64", "cp311-macosx_arm64"},
        "windows": {"cp311-win_amd64"},
    }
