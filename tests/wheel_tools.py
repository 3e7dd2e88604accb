"""Build this checkout's wheel and install it into a fresh virtual environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The build folder of the developer's editable install (``make``), whose objects the
#: wheel reuses instead of compiling them again.
BUILD_DIR = ROOT / "build" / "dev"


def build_wheel(destination: Path) -> Path:
    """The wheel of this checkout, built with its own build backend into ``destination``.

    It is built in a copy of :data:`BUILD_DIR` beside it (the same relative paths to the
    sources, so nothing is compiled again): the backend reconfigures the folder it
    builds in, which must not happen under the editable install, whose import in other
    processes checks that folder for work."""
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    copy = BUILD_DIR.with_name(f"wheel-{os.getpid()}")
    shutil.rmtree(copy, ignore_errors=True)
    if BUILD_DIR.is_dir():
        shutil.copytree(BUILD_DIR, copy, symlinks=True)
    try:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q",
             f"-Cbuild-dir={copy}", "-w", str(destination), str(ROOT)],
            check=True, env=env, capture_output=True, timeout=1800,
        )  # fmt: skip
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    (wheel,) = destination.glob("attnpool-*.whl")
    return wheel


def fresh_environment(destination: Path, wheel: Path) -> Path:
    """A new virtual environment with ``wheel`` installed and nothing else of attnpool:
    its other requirements (NumPy, SciPy, JAX, …) are read from this environment's
    site-packages, listed after its own (a ``.pth`` line, whose own ``.pth`` files, such
    as the editable install's finder, are not run)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(destination)],
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    bin_dir = destination / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-index", str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    Path(site, "developer_requirements.pth").write_text("\n".join(sorted(ours)) + "\n")
    return destination
