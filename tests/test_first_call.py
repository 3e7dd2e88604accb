"""First contact: a light import, and compiled programs that outlive the process."""

import os
import stat

import numpy as np
import pytest

import attnpool
from attnpool._support.shapes import FLOOR, MAX_ROWS, bucket, query_bucket
from fresh_process import python

POOL = (
    "import attnpool, numpy as np\n"
    "with attnpool.count_programs() as count:\n"
    "    x = np.arange(9.0)  # a compiled engine (auto pools this on NumPy)\n"
    "    attnpool.nadaraya_watson(x, x, np.linspace(0, 8, 7), method='dense')\n"
    "import jax\n"
    "print(jax.config.jax_compilation_cache_dir, count.compiled, count.loaded)\n"
)


def imported(stderr: str) -> set[str]:
    """Top-level packages named in ``python -X importtime`` output."""
    return {line.split("|")[-1].strip().split(".")[0] for line in stderr.splitlines()}


def test_import_attnpool_loads_neither_jax_nor_scipy():
    run = python(["-X", "importtime", "-c", "import attnpool"])
    assert not imported(run.stderr) & {"jax", "jaxlib", "scipy", "numpy"}


@pytest.mark.parametrize("option", ["--version", "--help"])
def test_the_command_line_answers_without_jax(option):
    run = python(["-X", "importtime", "-m", "attnpool", option])
    assert "attnpool" in run.stdout
    assert not imported(run.stderr) & {"jax", "jaxlib", "scipy", "sklearn", "matplotlib"}


def test_a_second_process_loads_its_programs_from_the_cache(tmp_path):
    folder, first_compiled, first_loaded = python(["-c", POOL], tmp_path).stdout.split()
    assert folder.startswith(str(tmp_path / "xla-"))
    assert int(first_compiled) >= 1 and int(first_loaded) == 0
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert any(os.scandir(folder))
    _, compiled, loaded = python(["-c", POOL], tmp_path).stdout.split()
    assert int(loaded) >= 1
    assert int(compiled) < int(first_compiled)


def test_the_cache_can_be_turned_off(tmp_path):
    home = tmp_path / "home"
    folder, _, loaded = python(["-c", POOL], "off", HOME=str(home)).stdout.split()
    assert folder == "None" and loaded == "0"
    assert not home.exists()


def test_a_users_own_jax_cache_is_left_alone(tmp_path):
    theirs = tmp_path / "theirs"
    run = python(["-c", POOL], tmp_path / "ours", JAX_COMPILATION_CACHE_DIR=str(theirs))
    assert run.stdout.split()[0] == str(theirs)
    assert not (tmp_path / "ours").exists()


def test_a_cache_folder_others_can_write_is_not_used(tmp_path):
    tmp_path.chmod(0o777)
    run = python(["-c", POOL], tmp_path)
    assert "others can write to it" in run.stderr
    assert run.stdout.split()[0] == "None"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("xla-")] == []


def test_count_programs_sees_a_new_shape_and_no_program_for_a_repeated_one():
    rng = np.random.default_rng(0)
    keys, values = rng.uniform(size=37), rng.uniform(size=37)
    queries = rng.uniform(size=11)
    with attnpool.count_programs() as first:
        attnpool.nadaraya_watson(keys, values, queries, bandwidth=0.3, method="dense")
    with attnpool.count_programs() as again:
        attnpool.nadaraya_watson(keys, values, queries, bandwidth=0.2, method="dense")
    assert first.built >= 1 and first.traced >= 1
    assert again.built == 0 and again.traced == 0
    assert "compiled=" in repr(first)


def test_buckets_are_few_and_tight():
    sizes = range(1, MAX_ROWS + 1)
    buckets = [bucket(n) for n in sizes]
    assert all(b >= n for n, b in zip(sizes, buckets, strict=True))
    assert all(b <= max(FLOOR, n * 9 / 8) for n, b in zip(sizes, buckets, strict=True))
    assert all(bucket(b) == b for b in buckets)  # padded arrays are not padded again
    assert len(set(buckets)) <= 8 * 9 + 1  # eight per doubling from 32 to 2^14
    queries = [query_bucket(n) for n in sizes]
    assert {q for q in queries if q <= 1024} == {2**k for k in range(5, 11)}
    assert {q for q in queries if q > 1024} == {b for b in buckets if b > 1024}
    limits = [max(FLOOR, 2 * n if n <= 1024 else n * 9 / 8) for n in sizes]
    assert all(q <= limit for q, limit in zip(queries, limits, strict=True))
    assert bucket(MAX_ROWS + 1) == MAX_ROWS + 1  # large problems keep their shape


def test_padding_leaves_every_method_and_the_nearest_limit_exact():
    # 37 keys (padded to 40) with the nearest key of some queries the first row, which
    # is the one repeated as padding: ties with its copies would change the average
    rng = np.random.default_rng(3)
    keys = np.round(rng.uniform(0, 4, (37, 2)), 1)
    keys[5] = keys[0]  # a real tie, shared with the first row
    values = rng.normal(size=(37, 2))
    queries = np.vstack([keys[:1] + 1e-3, rng.uniform(0, 4, (6, 2))])
    for kernel, bandwidth in (("gaussian", 1e-9), ("epanechnikov", 0.3), ("laplacian", 0.5)):
        for method in ("dense", "stream"):
            got = attnpool.attention_pool(
                queries,
                keys,
                values,
                kernel=kernel,
                bandwidth=bandwidth,
                method=method,
                empty="nearest",
            )
            want = textbook_or_nearest(queries, keys, values, kernel, bandwidth)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=kernel)


def textbook_or_nearest(queries, keys, values, kernel, bandwidth):
    """The four-line formula in float64; rows without weight take their nearest keys' mean."""
    u = np.linalg.norm(queries[:, None] - keys[None], axis=-1) / bandwidth
    profile = {
        "gaussian": np.exp(-0.5 * u**2),
        "epanechnikov": np.maximum(1 - u**2, 0),
        "laplacian": np.exp(-u),
    }[kernel]
    out = np.empty((len(queries), values.shape[1]))
    for i, row in enumerate(profile):
        if row.sum() > 0:
            out[i] = row @ values / row.sum()
        else:
            nearest = u[i] == u[i].min()
            out[i] = values[nearest].mean(axis=0)
    return out


@pytest.mark.parametrize("estimator", ["NadarayaWatson", "LocalLinear"])
def test_a_new_size_in_the_same_bucket_compiles_nothing(estimator):
    def fit(n):
        rng = np.random.default_rng(n)
        x = rng.uniform(0, 5, (n, 1))
        y = np.sin(x[:, 0]) + rng.normal(0, 0.2, n)
        return getattr(attnpool, estimator)().fit(x, y).predict(x[: n // 5])

    fit(90)
    with attnpool.count_programs() as count:
        fit(93)  # rows 90 → 96 and queries 18 → 32, as before
    assert (count.traced, count.built) == (0, 0)


FITS = (
    "import attnpool, numpy as np\n"
    "rng = np.random.default_rng(0)\n"
    "traced = []\n"
    "for n, d, model in ((45, 1, attnpool.NadarayaWatson()), (45, 1, attnpool.LocalLinear()),\n"
    "                    (45, 1, attnpool.NadarayaWatson(bandwidth='aicc')),\n"
    "                    (45, 2, attnpool.NadarayaWatson()),\n"
    "                    (1500, 2, attnpool.NadarayaWatson()),\n"
    "                    (3000, 2, attnpool.NadarayaWatson(kernel='epanechnikov'))):\n"
    "    x = rng.uniform(0, 5, (n, d)); y = np.sin(x[:, 0]) + x[:, -1]\n"
    "    with attnpool.count_programs() as count:\n"
    "        model.fit(x, y).predict(x[:7])\n"
    "    traced.append(count.traced)\n"
    "print(traced)\n"
)


def test_a_first_fit_builds_a_program_only_where_it_pays(tmp_path):
    # small fits run on the NumPy engine (no program; in two columns its search is
    # L-BFGS's on differences), a small AICc search too (its in-sample fits and smoother
    # diagonals by NumPy pairs; it built one program before); a Gaussian search of 1500
    # rows on the C loop (no program); one of 3000 rows with another kernel three
    # programs for its search (float32 grid and descent, the float64 polish) and one to
    # predict. The search's result is mapped to bandwidths on the host: as eager JAX
    # operations it built eleven programs more (one per operation).
    run = python(["-c", FITS], cache=tmp_path)
    assert run.stdout.strip() == "[0, 0, 0, 0, 0, 4]"


HOST_POOL = (
    "import sys, numpy as np, attnpool\n"
    "d, kernel, h = int(sys.argv[3]), sys.argv[4], float(sys.argv[5])\n"
    "rng = np.random.default_rng(3)\n"
    "q, k = (rng.uniform(0, 5, (3000, d)).astype(np.float32) for _ in range(2))\n"
    "v = rng.standard_normal((3000, 2)).astype(np.float32)\n"
    "out = attnpool.attention_pool(q, k, v, bandwidth=h, kernel=kernel, method=sys.argv[1],\n"
    "                              empty='nearest')\n"
    "np.save(sys.argv[2], out)\n"
    "print('jax' in sys.modules)\n"
)


@pytest.mark.parametrize(
    "method, d, kernel, bandwidth",
    [("native", 3, "gaussian", 0.4), ("fgt", 1, "gaussian", 0.05),
     ("sparse", 1, "epanechnikov", 0.05), ("sparse", 3, "epanechnikov", 0.5)],
)  # fmt: skip
def test_a_large_numpy_pool_on_a_host_method_needs_no_jax(tmp_path, method, d, kernel, bandwidth):
    """``auto`` sends a large pool of NumPy arrays to the host method the planner names
    (``native`` for the Gaussian in several columns on a CPU, ``fgt`` in one, ``sparse``
    for compact kernels of small neighbourhoods), and the method asked for by name goes
    there too: a fresh process pools without importing JAX (~1 s of a first call), and
    both give the same numbers, bit for bit."""
    from attnpool.methods import native

    assert native.available(False, 3, 2), native.unavailable_reason()
    cache = os.environ.get("ATTNPOOL_CACHE")
    arguments = [str(d), kernel, str(bandwidth)]
    run = python(["-c", HOST_POOL, method, str(tmp_path / "named.npy"), *arguments], cache)
    assert run.stdout.split() == ["False"]
    run = python(["-c", HOST_POOL, "auto", str(tmp_path / "auto.npy"), *arguments], cache)
    assert run.stdout.split() == ["False"]
    np.testing.assert_array_equal(np.load(tmp_path / "auto.npy"), np.load(tmp_path / "named.npy"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [2, 8])
def test_the_route_without_jax_pools_what_the_compiled_path_pools(dtype, d):
    """Bit for bit, huge value columns (pooled in power-of-two units) included; rows the
    loop cannot settle (overflowing coordinates) go to the compiled path."""
    rng = np.random.default_rng(d)
    q = rng.uniform(0, 5, (1800, d)).astype(dtype)
    k = rng.uniform(0, 5, (1500, d)).astype(dtype)
    v = rng.standard_normal((1500, 2)).astype(dtype)
    v[:, 1] *= np.finfo(dtype).max / 4
    for h in (0.4, np.linspace(0.3, 0.6, d)):
        got = attnpool.attention_pool(q, k, v, bandwidth=h)
        want = attnpool.attention_pool(q, k, v, bandwidth=h, method="native")
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)
    q[0] = np.finfo(dtype).max / 2  # its scaled coordinates overflow: the exact engines
    got = attnpool.attention_pool(q, k, v, bandwidth=0.4)
    np.testing.assert_array_equal(got, attnpool.attention_pool(q, k, v, bandwidth=0.4,
                                                               method="stream"))  # fmt: skip


@pytest.mark.parametrize(
    "platforms, cpu", [("cpu", True), ("cpu,cuda", True), ("cuda", False), ("tpu,cpu", False)]
)
def test_jax_platforms_tells_whether_jax_computes_on_the_cpu(platforms, cpu):
    from attnpool._support.jax_platform import _no_accelerator

    assert _no_accelerator(platforms) is cpu


def test_jax_imported_and_idle_is_read_from_its_configuration_not_started():
    # JAX imported but no backend up: its configuration tells (starting one costs ~20 ms)
    code = (
        "import jax\n"
        "from jax._src import xla_bridge\n"
        "from attnpool._support.jax_platform import computes_on_cpu\n"
        "first = computes_on_cpu()\n"
        "assert not xla_bridge.backends_are_initialized()\n"
        "jax.config.update('jax_platforms', 'tpu')\n"
        "assert computes_on_cpu() is False\n"
        "jax.config.update('jax_platforms', 'cpu')\n"
        "jax.numpy.ones(2).block_until_ready()\n"  # up now: JAX is asked
        "print(first, computes_on_cpu(), xla_bridge.backends_are_initialized())\n"
    )
    run = python(["-c", code], JAX_PLATFORMS="")
    assert run.stdout.split() == ["True", "True", "True"]
