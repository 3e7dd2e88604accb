"""A fresh interpreter for the tests that watch what a first call imports and builds."""

from __future__ import annotations

import os
import subprocess
import sys


def python(code: str, cache=None, **env) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with ``ATTNPOOL_CACHE=cache``; check it succeeded."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION")}
    environ.update(env)
    if cache is not None:
        environ["ATTNPOOL_CACHE"] = str(cache)
    run = subprocess.run(
        [sys.executable, *code], capture_output=True, text=True, timeout=300, env=environ
    )
    assert run.returncode == 0, run.stderr
    return run
