"""Headless Chromium (Debian's package) for the tests and the docs' page check, installed
when the machine lacks it; its flags keep it off the network (the machine's is closed)."""

from __future__ import annotations

import os
import shutil
import subprocess

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _install_chromium() -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # another process installing (a second test worker, say) holds dpkg's lock: wait for it
    apt = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "-q"]
    install = [*apt, "install", "-y", "chromium"]
    if subprocess.run(install, env=env, capture_output=True).returncode != 0:
        subprocess.run([*apt, "update"], env=env, capture_output=True)
        subprocess.run(install, env=env, capture_output=True)


def chromium_executable() -> str | None:
    """The path of Chromium, installed with apt-get first if it is missing (None if that
    failed)."""
    if shutil.which("chromium") is None:
        _install_chromium()
    return shutil.which("chromium")
