"""Exact gaussian pooling: attnpool against the textbook formula and the machine's floor.

Every case runs in its own process (so peak RSS is that case's own), after one
warm-up call, and reports the median of the timed repeats. Competitors, measured
in the same run on the same float32 data:

- ``attnpool``: ``attention_pool`` (streamed above ``DENSE_MAX_PAIRS``);
- ``textbook-jax``: the four-line formula in whole-array ``jax.numpy``, jitted;
- ``textbook-numpy``: the same in NumPy;
- ``fused-exp``: one jitted ``sum(exp(x_i − y_j))`` over the ``n·m`` pairs — the
  floor that any exact method must pay for its exponentials.

Usage: ``python benchmarks/bench_pooling.py [--sizes 1000,10000,30000,100000] [--dims 1,8]``
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

BANDWIDTH = 0.3
TIME_CAP = 60.0  # a competitor slower than this at one size is not run at larger sizes
MEMORY_CAP = 16e9  # bytes a whole-array method may need before it is skipped (24 GB machine)


def _data(n: int, d: int):
    import numpy as np

    rng = np.random.default_rng(0)
    queries = rng.uniform(0, 5, (n, d)).astype(np.float32)
    keys = rng.uniform(0, 5, (n, d)).astype(np.float32)
    values = rng.standard_normal(n).astype(np.float32)
    return queries, keys, values


def _case_function(method: str, n: int, d: int):
    queries, keys, values = _data(n, d)
    if method == "attnpool":
        import attnpool

        return lambda: attnpool.attention_pool(queries, keys, values, bandwidth=BANDWIDTH)
    if method == "textbook-numpy":
        import numpy as np

        def textbook_numpy():
            distances = ((queries[:, None, :] - keys[None, :, :]) ** 2).sum(-1)
            weights = np.exp(-distances / (2 * BANDWIDTH**2))
            return (weights / weights.sum(1, keepdims=True)) @ values

        return textbook_numpy
    import jax
    import jax.numpy as jnp

    q, k, v = jnp.asarray(queries), jnp.asarray(keys), jnp.asarray(values)
    if method == "textbook-jax":

        @jax.jit
        def textbook_jax(q, k, v):
            distances = ((q[:, None, :] - k[None, :, :]) ** 2).sum(-1)
            weights = jnp.exp(-distances / (2 * BANDWIDTH**2))
            return (weights / weights.sum(1, keepdims=True)) @ v

        return lambda: textbook_jax(q, k, v).block_until_ready()
    if method == "fused-exp":
        # 1024 × 2048 tiles (rows by lax.map, columns by lax.scan), so that no large
        # array is written out: the exponentials alone, as fast as this machine does them
        x = jnp.pad(q[:, 0], (0, -n % 1024)).reshape(-1, 1024)
        y = jnp.pad(k[:, 0], (0, -n % 2048), constant_values=-jnp.inf).reshape(-1, 2048)

        @jax.jit
        def fused_exp(x, y):
            def rows(xb):
                def step(total, yb):
                    return total + jnp.sum(jnp.exp(xb[:, None] + yb[None, :]), axis=1), None

                return jax.lax.scan(step, jnp.zeros_like(xb), y)[0]

            return jax.lax.map(rows, x)

        return lambda: fused_exp(x, y).block_until_ready()
    raise ValueError(f"method: unknown {method!r}")


def run_case(method: str, n: int, d: int, repeats: int) -> dict:
    function = _case_function(method, n, d)
    start = time.perf_counter()
    function()
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats if first < 10 else 1):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"median_s": statistics.median(times), "peak_rss_bytes": peak, "first_call_s": first}


def _spawn(method: str, n: int, d: int, repeats: int) -> dict | None:
    command = [
        sys.executable,
        __file__,
        "--case",
        method,
        str(n),
        str(d),
        "--repeats",
        str(repeats),
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["killed"])[-1][:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,30000,100000")
    parser.add_argument("--dims", default="1,8")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--case", nargs=3, metavar=("METHOD", "N", "D"))
    args = parser.parse_args()
    if args.case:
        method, n, d = args.case
        print(json.dumps(run_case(method, int(n), int(d), args.repeats)))
        return

    methods = ["attnpool", "textbook-jax", "textbook-numpy", "fused-exp"]
    table: dict[tuple[int, int, str], dict | None] = {}
    print("| d | n = m | method | median time (s) | peak RSS (MB) | time / attnpool |")
    print("|---|---|---|---|---|---|")
    for d in [int(x) for x in args.dims.split(",")]:
        too_slow: set[str] = set()
        for n in [int(x) for x in args.sizes.split(",")]:
            results = {}
            for method in methods:
                whole_array = method.startswith("textbook")
                if method in too_slow or (whole_array and n * n * 4 * 2 > MEMORY_CAP):
                    results[method] = None
                    continue
                results[method] = _spawn(method, n, d, args.repeats)
                if "median_s" in results[method] and results[method]["median_s"] > TIME_CAP:
                    too_slow.add(method)
            table.update({(d, n, method): result for method, result in results.items()})
            base = (results.get("attnpool") or {}).get("median_s")
            for method, result in results.items():
                if result is None:
                    print(f"| {d} | {n} | {method} | skipped (over the time or memory cap) | | |")
                elif "error" in result:
                    print(f"| {d} | {n} | {method} | failed: {result['error']} | | |")
                else:
                    ratio = f"{result['median_s'] / base:.2f}" if base else ""
                    print(
                        f"| {d} | {n} | {method} | {result['median_s']:.4f} | "
                        f"{result['peak_rss_bytes'] / 1e6:.0f} | {ratio} |"
                    )
            sys.stdout.flush()
    _print_targets(table)


def _print_targets(table) -> None:
    def seconds(d, n, method):
        return (table.get((d, n, method)) or {}).get("median_s")

    print("\nTargets (float32, gaussian, this machine):")
    ours, jitted, floor = (seconds(1, 30000, m) for m in ("attnpool", "textbook-jax", "fused-exp"))
    if ours and jitted:
        verdict = "met" if jitted / ours >= 10 else "NOT met"
        print(
            f"- n = m = 3e4, d = 1: {jitted / ours:.1f}x faster than jitted textbook "
            f"(target >= 10x): {verdict}"
        )
    if ours and floor:
        verdict = "met" if ours / floor <= 2 else "NOT met"
        print(
            f"- n = m = 3e4, d = 1: {ours / floor:.2f}x the fused-exp floor "
            f"(target <= 2x): {verdict}"
        )
    for d in (1, 8):
        big = table.get((d, 100000, "attnpool"))
        if big and "peak_rss_bytes" in big:
            verdict = "met" if big["peak_rss_bytes"] < 1e9 else "NOT met"
            print(
                f"- n = m = 1e5, d = {d}: {big['median_s']:.1f} s, peak RSS "
                f"{big['peak_rss_bytes'] / 1e6:.0f} MB (target < 1 GB): {verdict}"
            )


if __name__ == "__main__":
    main()
