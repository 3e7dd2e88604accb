"""The pooling benchmark suite: every attnpool method against the incumbents and the floor.

One run, the same float32 data for every competitor: queries and keys uniform on
[0, 5]^d, values standard normal, n = m. Every case runs in its own process (so peak
RSS is that case's own), after one warm-up call (KeOps compiles then), and reports
the median of the timed repeats. A competitor is not run at a size where its time,
extrapolated from the last size (quadratic for pairwise methods, linear for binned,
sparse and ``auto`` in one dimension), would pass the time cap.

- ``attnpool``: ``attention_pool`` with ``method="auto"`` (gaussian, exact; ``fgt`` in
  one dimension; above, ``native`` on a CPU, ``fused`` on a GPU);
- ``attnpool-stream``: ``method="stream"``, the exact sum of every exponential;
- ``attnpool-fused``: ``method="fused"`` (``jax.nn.dot_product_attention``);
- ``attnpool-pallas``: ``method="pallas"``, the tiled Pallas kernel (GPU only: on a CPU it
  runs in Pallas' interpreter);
- ``attnpool-binned``: ``method="binned"``, ``d ≤ 2`` (default tolerance 1e-3 × range);
- ``attnpool-sparse``: ``method="sparse"``, epanechnikov, bandwidth 1% of the range;
- ``textbook-jax`` / ``textbook-numpy``: the four-line formula, whole arrays;
- ``keops``: a ``pykeops`` LazyTensor ``sumsoftmaxweight`` reduction (the same
  log-domain Gaussian pooling, compiled by KeOps with the machine's g++);
- ``statsmodels``: ``KernelReg(bw=[h] * d).fit`` (float64, its own loops);
- ``fused-exp``: one jitted ``sum(exp(x_i − y_j))`` over the ``n·m`` pairs in tiles —
  the floor that any exact method pays for its exponentials;
- ``torch-sdpa-float32`` / ``torch-sdpa-bfloat16`` (GPU, where torch is installed):
  PyTorch's attention on the Gaussian's augmented vectors (:mod:`torch_anchor`).

``error`` is the largest difference from the exact streamed result on 1000 queries
(float32 for attnpool's methods, float64 for torch's), relative to the values' range.

Usage: ``python benchmarks/bench_pooling.py [--sizes 1000,...] [--dims 1,2,8]
[--device cpu|gpu] [--only NAME,...]``
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import time

BANDWIDTH = 0.3
SPARSE_BANDWIDTH = 0.05  # 1% of the range [0, 5]
EXTENT = 5.0
TIME_CAP = 60.0
MEMORY_CAP = 16e9  # bytes a whole-array method may need before it is skipped (24 GB machine)
SIZES = "1000,10000,30000,100000,1000000,10000000"
COMPETITORS = [
    "attnpool",
    "attnpool-stream",
    "attnpool-fused",
    "attnpool-pallas",
    "attnpool-binned",
    "attnpool-sparse",
    "textbook-jax",
    "textbook-numpy",
    "keops",
    "statsmodels",
    "fused-exp",
    "torch-sdpa-float32",
    "torch-sdpa-bfloat16",
]
#: Competitors that run on a GPU only.
GPU_ONLY = {"attnpool-pallas", "torch-sdpa-float32", "torch-sdpa-bfloat16"}
LINEAR = {"attnpool-binned", "attnpool-sparse"}
WHOLE_ARRAY = {"textbook-jax", "textbook-numpy"}


def applies(name: str, d: int) -> bool:
    return not ((name == "attnpool-binned" and d > 2) or (name == "attnpool-sparse" and d > 2))


def _data(n: int, d: int):
    import numpy as np

    rng = np.random.default_rng(0)
    queries = rng.uniform(0, EXTENT, (n, d)).astype(np.float32)
    keys = rng.uniform(0, EXTENT, (n, d)).astype(np.float32)
    values = rng.standard_normal(n).astype(np.float32)
    return queries, keys, values


def _attnpool(queries, keys, values, method, kernel="gaussian", bandwidth=BANDWIDTH):
    import attnpool

    options = {"kernel": kernel, "bandwidth": bandwidth, "empty": "nearest"}

    def pool(q=queries):
        return attnpool.attention_pool(q, keys, values, method=method, **options)

    def error():
        exact = attnpool.attention_pool(queries[:1000], keys, values, method="stream", **options)
        got = pool(queries[:1000])
        return float(abs(got - exact).max() / (values.max() - values.min()))

    return pool, error


def _case(name: str, n: int, d: int):
    """``(function to time, function returning its error or None)``."""
    queries, keys, values = _data(n, d)
    if name == "attnpool":
        return _attnpool(queries, keys, values, "auto")
    if name == "attnpool-stream":
        return _attnpool(queries, keys, values, "stream")
    if name == "attnpool-fused":
        return _attnpool(queries, keys, values, "fused")[0], None
    if name == "attnpool-pallas":
        return _attnpool(queries, keys, values, "pallas")
    if name.startswith("torch-sdpa"):
        return _torch_sdpa(queries, keys, values, name.rsplit("-", 1)[1])
    if name == "attnpool-binned":
        return _attnpool(queries, keys, values, "binned")
    if name == "attnpool-sparse":
        return _attnpool(queries, keys, values, "sparse", "epanechnikov", SPARSE_BANDWIDTH)
    if name == "textbook-numpy":
        import numpy as np

        def textbook_numpy():
            distances = ((queries[:, None, :] - keys[None, :, :]) ** 2).sum(-1)
            weights = np.exp(-distances / (2 * BANDWIDTH**2))
            return (weights / weights.sum(1, keepdims=True)) @ values

        return textbook_numpy, None
    if name == "keops":
        from pykeops.numpy import LazyTensor

        x = LazyTensor(queries[:, None, :])
        y = LazyTensor(keys[None, :, :])
        v = LazyTensor(values[None, :, None])
        scores = -((x - y) ** 2).sum(-1) / (2 * BANDWIDTH**2)
        return lambda: scores.sumsoftmaxweight(v, axis=1), None
    if name == "statsmodels":
        from statsmodels.nonparametric.kernel_regression import KernelReg

        model = KernelReg(values, keys, "c" * d, reg_type="lc", bw=[BANDWIDTH] * d)
        return lambda: model.fit(queries)[0], None
    import jax
    import jax.numpy as jnp

    q, k, v = jnp.asarray(queries), jnp.asarray(keys), jnp.asarray(values)
    if name == "textbook-jax":

        @jax.jit
        def textbook_jax(q, k, v):
            distances = ((q[:, None, :] - k[None, :, :]) ** 2).sum(-1)
            weights = jnp.exp(-distances / (2 * BANDWIDTH**2))
            return (weights / weights.sum(1, keepdims=True)) @ v

        return lambda: textbook_jax(q, k, v).block_until_ready(), None
    if name == "fused-exp":
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

        return lambda: fused_exp(x, y).block_until_ready(), None
    raise ValueError(f"competitor: unknown {name!r}")


def _torch_sdpa(queries, keys, values, dtype_name: str):
    import numpy as np

    import attnpool
    from torch_anchor import sdpa_pool

    pool = sdpa_pool(queries, keys, values, BANDWIDTH, dtype_name)

    def error():
        exact = attnpool.attention_pool(
            queries[:1000].astype(np.float64), keys.astype(np.float64),
            values.astype(np.float64), bandwidth=BANDWIDTH, method="stream",
        )  # fmt: skip
        return float(np.abs(pool(1000) - np.asarray(exact)).max() / np.ptp(values))

    return pool, error


def run_case(name: str, n: int, d: int, repeats: int) -> dict:
    function, error = _case(name, n, d)
    start = time.perf_counter()
    result = function()
    getattr(result, "block_until_ready", lambda: None)()
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats if first < 10 else 1):
        start = time.perf_counter()
        result = function()
        getattr(result, "block_until_ready", lambda: None)()
        times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out = {"median_s": statistics.median(times), "peak_rss_bytes": peak, "first_call_s": first}
    if error is not None:
        out["error"] = error()
    return out


def _device_name(device: str) -> str:
    import jax

    return f"{jax.devices()[0].device_kind} ({jax.default_backend()})"


def _spawn(name: str, n: int, d: int, repeats: int, device: str) -> dict:
    command = [sys.executable, __file__, "--case", name, str(n), str(d)]
    command += ["--repeats", str(repeats), "--device", device]
    environment = {**os.environ, "JAX_PLATFORMS": "cuda" if device == "gpu" else "cpu"}
    if name.startswith("torch"):  # JAX and torch share the GPU: JAX takes what it needs
        environment.update(XLA_PYTHON_CLIENT_PREALLOCATE="false", JAX_ENABLE_X64="1")
    done = subprocess.run(command, capture_output=True, text=True, env=environment)
    if done.returncode != 0:
        return {"failed": (done.stderr.strip().splitlines() or ["killed"])[-1][:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _predicted(previous: tuple[int, float] | None, name: str, n: int, d: int) -> float:
    if previous is None:
        return 0.0
    size, seconds = previous
    linear = name in LINEAR or (name == "attnpool" and d == 1)  # auto: fgt
    return seconds * (n / size) ** (1 if linear else 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=SIZES)
    parser.add_argument("--dims", default="1,2,8")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--only", default=",".join(COMPETITORS))
    parser.add_argument("--case", nargs=3, metavar=("NAME", "N", "D"))
    args = parser.parse_args()
    if args.case:
        name, n, d = args.case
        print(json.dumps(run_case(name, int(n), int(d), args.repeats)))
        return

    names = [name for name in args.only.split(",") if name in COMPETITORS]
    if args.device == "gpu":  # the incumbents here are CPU programs
        keep = ("attnpool", "fused-exp", "torch")
        names = [name for name in names if name.startswith(keep)]
        if importlib.util.find_spec("torch") is None:
            names = [name for name in names if not name.startswith("torch")]
    else:
        names = [name for name in names if name not in GPU_ONLY]
    os.environ["JAX_PLATFORMS"] = "cuda" if args.device == "gpu" else "cpu"
    print(f"Device: {_device_name(args.device)}\n")
    table: dict[tuple[int, int, str], dict] = {}
    print(
        "| d | n = m | method | median (s) | first call (s) | peak RSS (MB) | "
        "time / attnpool | error |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for d in [int(x) for x in args.dims.split(",")]:
        last: dict[str, tuple[int, float]] = {}
        for n in [int(float(x)) for x in args.sizes.split(",")]:
            results = {}
            for name in names:
                if not applies(name, d):
                    continue
                if _predicted(last.get(name), name, n, d) > TIME_CAP or (
                    name in WHOLE_ARRAY and n * n * 4 * 2 > MEMORY_CAP
                ):
                    results[name] = None
                    continue
                results[name] = _spawn(name, n, d, args.repeats, args.device)
                if "median_s" in results[name]:
                    last[name] = (n, results[name]["median_s"])
                else:
                    last[name] = (n, float("inf"))
            table.update({(d, n, name): result for name, result in results.items()})
            _print_rows(d, n, results)
    if args.device == "gpu":
        _print_gpu_targets(table)
    else:
        _print_targets(table)


def _print_gpu_targets(table) -> None:
    """The tiled kernel's targets on a GPU (float32, error ≤ 1e-6 of the values' range)."""
    print("\nTargets (GPU, float32):")
    for d, cap in ((3, 0.5), (8, 1.0)):
        result = table.get((d, 1_000_000, "attnpool-pallas")) or {}
        if "median_s" in result:
            ok = result["median_s"] <= cap and result.get("error", 1.0) <= 1e-6
            print(f"- pallas, d = {d}, n = m = 1e6: {result['median_s']:.3f} s (target <= "
                  f"{cap} s), error {result.get('error', float('nan')):.1e}: "
                  f"{'met' if ok else 'NOT met'}")  # fmt: skip
    for n in (100_000, 1_000_000):
        ours = (table.get((3, n, "attnpool-pallas")) or {}).get("median_s")
        flash = (table.get((3, n, "torch-sdpa-bfloat16")) or {}).get("median_s")
        if ours and flash:
            print(f"- pallas against torch's bfloat16 FlashAttention, d = 3, n = m = {n:.0e}: "
                  f"{flash / ours:.2f}x its speed (target >= 1): "
                  f"{'met' if ours <= flash else 'NOT met'}")  # fmt: skip


def _print_rows(d: int, n: int, results: dict) -> None:
    base = (results.get("attnpool") or {}).get("median_s")
    for name, result in results.items():
        if result is None:
            print(f"| {d} | {n:.0e} | {name} | over the time cap | | | | |")
        elif "failed" in result:
            print(f"| {d} | {n:.0e} | {name} | failed: {result['failed']} | | | | |")
        else:
            ratio = f"{result['median_s'] / base:.2f}" if base else ""
            error = f"{result['error']:.1e}" if "error" in result else ""
            print(
                f"| {d} | {n:.0e} | {name} | {result['median_s']:.4f} | "
                f"{result['first_call_s']:.2f} | {result['peak_rss_bytes'] / 1e6:.0f} | "
                f"{ratio} | {error} |"
            )
    sys.stdout.flush()


def _print_targets(table) -> None:
    def seconds(d, n, name):
        return (table.get((d, n, name)) or {}).get("median_s")

    def verdict(ok):
        return "met" if ok else "NOT met"

    print("\nTargets (float32, this machine):")
    for d in (1, 8):
        ours, floor, keops = (seconds(d, 30000, x) for x in ("attnpool", "fused-exp", "keops"))
        if ours and floor:
            print(
                f"- exact, n = m = 3e4, d = {d}: {ours / floor:.2f}x the fused-exp floor "
                f"(target <= 1.3x): {verdict(ours / floor <= 1.3)}"
            )
        streamed = seconds(d, 30000, "attnpool-stream")
        if streamed and floor:
            print(f"  (method='stream', every exponential: {streamed / floor:.2f}x the floor)")
        if ours and keops:
            print(
                f"- exact, n = m = 3e4, d = {d}: {keops / ours:.1f}x faster than KeOps "
                f"(target >= 5x): {verdict(keops / ours >= 5)}"
            )
    for d, n, name, cap in [
        (1, 1_000_000, "attnpool-binned", 1.0),
        (1, 10_000_000, "attnpool-binned", 10.0),
        (2, 1_000_000, "attnpool-binned", 5.0),
        (1, 1_000_000, "attnpool-sparse", 2.0),
    ]:
        result = table.get((d, n, name)) or {}
        if "median_s" in result:
            error = result.get("error", 0.0)
            ok = result["median_s"] < cap and error <= 1e-3
            print(
                f"- {name}, d = {d}, n = m = {n:.0e}: {result['median_s']:.2f} s "
                f"(target < {cap:g} s), error {error:.1e}: {verdict(ok)}"
            )
    peaks = [
        (key, result["peak_rss_bytes"])
        for key, result in table.items()
        if key[2].startswith("attnpool") and result and "peak_rss_bytes" in result
    ]
    if peaks:
        (d, n, name), peak = max(peaks, key=lambda item: item[1])
        print(
            f"- peak RSS of attnpool, largest over every size: {peak / 1e6:.0f} MB "
            f"({name}, d = {d}, n = {n:.0e}; target < 2 GB): {verdict(peak < 2e9)}"
        )


if __name__ == "__main__":
    main()
