"""Time to first result: what a user meets in a fresh process, against statsmodels.

Data: y = 2 sin x₁ + Σ x + N(0, 0.3²), x uniform on [0, 5]^d; a CV bandwidth
(``NadarayaWatson()``/``LocalLinear()`` against ``KernelReg(reg_type="lc"|"ll",
bw="cv_ls")``), then 50 predictions. Every case runs in a new process, in three states:

- ``empty``: an empty compile cache (``ATTNPOOL_CACHE`` a new folder), first fit;
- ``cached``: a second process on the cache the first one filled, first fit;
- ``new shape``: in a warm process, a fit on data of a size not seen before
  (n + 7 rows after a fit on n rows).

Each time includes the estimator's import (scikit-learn, JAX; statsmodels for
statsmodels). Also timed: ``nadaraya_watson`` on the textbook's 40 points, ``attnpool
demo`` and ``attnpool fit`` on a 500-row CSV (empty and warm cache), ``import attnpool``
and ``attnpool --version``. statsmodels cases above ``--budget`` seconds are stopped
and reported as ``> budget``.

Usage: ``python benchmarks/bench_first_call.py [--sizes 200,500,1000,5000] [--dims 1,2,5]
[--budget 300] [--estimators NadarayaWatson,LocalLinear] [--no-commands]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIT = """
import sys, time, json
start = time.perf_counter()
import numpy as np
def data(n, d):
    rng = np.random.default_rng(n + d)
    x = rng.uniform(0, 5, (n, d))
    return x, 2 * np.sin(x[:, 0]) + x.sum(1) + rng.normal(0, 0.3, n)
library, (degree, n, d, again) = sys.argv[1], map(int, sys.argv[2:6])
def fit(n):
    x, y = data(n, d)
    if library == "attnpool":
        from attnpool import LocalLinear, NadarayaWatson
        model = (LocalLinear if degree else NadarayaWatson)().fit(x, y)
        return model.predict(x[:50])
    from statsmodels.nonparametric.kernel_regression import KernelReg
    model = KernelReg(y, x, var_type="c" * d, reg_type="ll" if degree else "lc", bw="cv_ls")
    return model.fit(x[:50])[0]
fit(n)
first = time.perf_counter() - start
second = None
if again == 1:
    start = time.perf_counter()
    fit(n + 7)
    second = time.perf_counter() - start
print(json.dumps({"first": first, "new_shape": second}))
"""

TEXTBOOK = """
import time
start = time.perf_counter()
import attnpool
from attnpool.datasets import sine_data
data = sine_data(n=40)
attnpool.nadaraya_watson(data.x_train, data.y_train, data.x_val, bandwidth=0.5)
print(time.perf_counter() - start)
"""


def _run(arguments: list[str], cache: Path, timeout: float) -> tuple[float | None, str]:
    environment = {**os.environ, "ATTNPOOL_CACHE": str(cache)}
    start = time.perf_counter()
    try:
        done = subprocess.run(
            arguments, capture_output=True, text=True, env=environment, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return None, ""
    if done.returncode != 0:
        raise RuntimeError(f"{arguments}: {done.stderr[-2000:]}")
    return time.perf_counter() - start, done.stdout


def _fit(library: str, degree: int, n: int, d: int, cache: Path, again: bool, budget: float):
    arguments = [sys.executable, "-c", FIT, library, str(degree), str(n), str(d), str(int(again))]
    _, out = _run(arguments, cache, budget)
    return json.loads(out) if out else None


def _seconds(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def _ratio(statsmodels, ours) -> str:
    if ours is None:
        return "—"
    if statsmodels is None:
        return "> budget"
    return f"{statsmodels / ours:.1f}×"


def fits(sizes, dims, budget: float, estimators) -> None:
    print(
        "| estimator | d | n | empty cache | cached | new shape | statsmodels |"
        " ratio empty | ratio cached |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for degree, name in ((0, "NadarayaWatson"), (1, "LocalLinear")):
        if name not in estimators:
            continue
        for d in dims:
            for n in sizes:
                with tempfile.TemporaryDirectory() as folder:
                    cache = Path(folder)
                    empty = _fit("attnpool", degree, n, d, cache, False, 3600)
                    cached = _fit("attnpool", degree, n, d, cache, True, 3600)
                    theirs = _fit("statsmodels", degree, n, d, cache, False, budget)
                reference = theirs and theirs["first"]
                print(
                    f"| `{name}()` | {d} | {n} | {_seconds(empty['first'])} | "
                    f"{_seconds(cached['first'])} | {_seconds(cached['new_shape'])} | "
                    f"{_seconds(reference) if theirs else f'> {budget:g}'} | "
                    f"{_ratio(reference, empty['first'])} | {_ratio(reference, cached['first'])} |",
                    flush=True,
                )


def commands() -> None:
    print("\n| command | empty cache | cached |\n|---|---|---|")
    import numpy as np

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        rng = np.random.default_rng(0)
        x = rng.uniform(0, 5, 500)
        rows = "\n".join(f"{a:.6f},{2 * np.sin(a) + a:.6f}" for a in x)
        (work / "data.csv").write_text("x,y\n" + rows + "\n")
        attnpool = str(Path(sys.executable).with_name("attnpool"))
        cases = {
            "`import attnpool`": [sys.executable, "-c", "import attnpool"],
            "`attnpool --version`": [attnpool, "--version"],
            "`nadaraya_watson`, textbook's 40 points": [sys.executable, "-c", TEXTBOOK],
            "`attnpool demo`": [attnpool, "demo", "--out", str(work / "demo")],
            "`attnpool fit` on a 500-row CSV": [
                attnpool,
                "fit",
                str(work / "data.csv"),
                "--x",
                "x",
                "--y",
                "y",
                "--out",
                str(work / "fit.csv"),
                "--force",  # the second (cached) run writes over the first's predictions
            ],
        }
        for label, arguments in cases.items():
            cache = work / ("cache-" + str(abs(hash(label))))
            empty, _ = _run(arguments, cache, 3600)
            cached, _ = _run(arguments, cache, 3600)
            print(f"| {label} | {_seconds(empty)} | {_seconds(cached)} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,500,1000,5000")
    parser.add_argument("--dims", default="1,2,5")
    parser.add_argument("--budget", type=float, default=300.0, help="statsmodels' limit (s)")
    parser.add_argument("--estimators", default="NadarayaWatson,LocalLinear")
    parser.add_argument("--no-commands", action="store_true", help="the fits only")
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",")]
    dims = [int(s) for s in options.dims.split(",")]
    fits(sizes, dims, options.budget, options.estimators.split(","))
    if not options.no_commands:
        commands()


if __name__ == "__main__":
    main()
