"""The built wheel in a fresh environment with no C compiler, against the developer's
editable install of the same sources: its size, first calls and steady-state speed.

The wheel is built from this checkout (its compiled libraries reused from the editable
install's ``build/dev``) and installed into a new virtual environment whose other
requirements come from this one; ``PATH`` there holds no compiler and ``CC`` names a
missing one. Timed in each environment, each case in a new process with an empty
``ATTNPOOL_CACHE`` (the median of ``--repeat`` runs):

- first fits as ``bench_first_call.py`` times them (a CV bandwidth, then 50
  predictions; the import included): ``NadarayaWatson``/``LocalLinear``, n = 500,
  d = 1, 2;
- ``import attnpool``;
- ``bench_pooling.py``'s exact d = 8 row, n = m = 3·10⁴ (``auto``: the ``native``
  loop), the best of three calls after a first one.

Usage: ``python benchmarks/bench_wheel.py [--repeat 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from bench_first_call import FIT

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from wheel_tools import build_wheel, fresh_environment

POOL = """
import time, json
import numpy as np
import attnpool
from attnpool.methods import compiled
rng = np.random.default_rng(0)
q, k, v = rng.normal(size=(30000, 8)), rng.normal(size=(30000, 8)), rng.normal(size=(30000, 1))
attnpool.attention_pool(q, k, v, bandwidth=0.3)
best = 9e9
for _ in range(3):
    start = time.perf_counter()
    attnpool.attention_pool(q, k, v, bandwidth=0.3)
    best = min(best, time.perf_counter() - start)
print(json.dumps({"seconds": best, "loops": compiled.loops().instruction_set}))
"""


def timed(python: Path, code: str, args: list[str], env: dict[str, str]) -> tuple[float, str]:
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        done = subprocess.run([str(python), "-c", code, *args], capture_output=True, text=True,
                              env={**env, "ATTNPOOL_CACHE": cache}, timeout=3600)  # fmt: skip
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return seconds, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="attnpool-wheel-"))
    wheel = build_wheel(work / "dist")
    libraries = {
        name.rsplit("/", 1)[-1].split(".")[0]: size
        for name, size in ((i.filename, i.file_size) for i in zipfile.ZipFile(wheel).infolist())
        if "/_loops_" in name
    }
    print(f"wheel: {wheel.name}, {wheel.stat().st_size / 2**20:.1f} MB; libraries unpacked: "
          + ", ".join(f"{n} {s / 2**20:.1f} MB" for n, s in sorted(libraries.items())))  # fmt: skip
    fresh = fresh_environment(work / "fresh", wheel) / "bin" / "python"
    bare = {"PATH": str(fresh.parent), "HOME": str(work), "CC": "/nonexistent/cc"}
    environments = {
        "fresh wheel, no compiler": (fresh, bare),
        "developer (editable)": (Path(sys.executable), dict(os.environ)),
    }
    cases = {
        f"`{name}()` d = {d}, n = 500, first fit": (
            FIT,
            ["attnpool", str(degree), "500", str(d), "0"],
        )
        for degree, name in ((0, "NadarayaWatson"), (1, "LocalLinear"))
        for d in (1, 2)
    }
    cases["`import attnpool`"] = ("import attnpool", [])
    print("\n| case | " + " | ".join(environments) + " | ratio |")
    print("|---|" + "---|" * (len(environments) + 1))
    for label, (code, args) in cases.items():
        medians = []
        for python, env in environments.values():
            runs = [timed(python, code, args, env)[0] for _ in range(options.repeat)]
            medians.append(statistics.median(runs))
        row = " | ".join(f"{m:.2f}" for m in medians)
        print(f"| {label} | {row} | {medians[0] / medians[1]:.2f} |", flush=True)
    steady = []
    for python, env in environments.values():
        found = json.loads(timed(python, POOL, [], env)[1].splitlines()[-1])
        steady.append(found)
    row = " | ".join(f"{s['seconds']:.3f} ({s['loops']})" for s in steady)
    ratio = steady[0]["seconds"] / steady[1]["seconds"]
    print(f"| exact pool, d = 8, n = m = 3·10⁴ (steady) | {row} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
