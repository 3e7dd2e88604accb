"""The compiled Gaussian loop (``method="native"``) against independent references."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnpool import attention_pool
from attnpool.methods import build, native
from method_data import data, value_range
from reference import reference_pool, stable_gaussian_pool


def pooled(queries, keys, values, bandwidth):
    scale = np.full(keys.shape[1], 1.0 / bandwidth)
    sums = native.native_sums(queries, keys, values, scale)
    return sums[:, 1:] / sums[:, :1]


# float32: the inputs' own rounding (and, for d >= 3, the matrix-product form's
# cancellation, as in the streamed path); float64: rounding
TOLERANCE = {np.float32: 2e-5, np.float64: 1e-12}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [2, 3, 8])
@pytest.mark.parametrize("n, m", [(1, 1), (7, 5), (13, 257), (301, 1000)])
@pytest.mark.parametrize("p", [1, 3, native.MAX_VALUES + 2])
def test_native_equals_the_textbook_formula(dtype, d, n, m, p):
    rng = np.random.default_rng(d * 1000 + n + m + p)
    queries = rng.uniform(0, 5, (n, d)).astype(dtype)
    keys = rng.uniform(0, 5, (m, d)).astype(dtype)
    values = rng.standard_normal((m, p)).astype(dtype)
    got = pooled(queries, keys, values, 0.6)
    want = reference_pool(queries, keys, values, "gaussian", 0.6)
    assert got.shape == (n, p)
    assert np.max(np.abs(got - want)) <= TOLERANCE[dtype] * max(np.ptp(values), 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [2, 5])
def test_the_running_shift_follows_ever_closer_keys(dtype, d):
    """Keys sorted from the farthest to the nearest (for one query at the origin): every
    chunk's largest log weight is far above the shift so far, which must move to it."""
    rng = np.random.default_rng(d)
    keys = rng.uniform(-1, 1, (3000, d)) * np.linspace(40, 0.5, 3000)[:, None]
    queries = np.zeros((6, d)) + rng.normal(0, 0.01, (6, d))
    values = rng.standard_normal((3000, 2))
    args = [a.astype(dtype) for a in (queries, keys, values)]
    got = pooled(*args, 0.2)
    want = stable_gaussian_pool(*args, 0.2)
    assert np.all(np.isfinite(got))
    assert np.max(np.abs(got - want)) <= TOLERANCE[dtype] * np.ptp(values)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_far_from_every_key_keep_their_relative_weights(dtype):
    """Every weight of these rows is below the smallest normal number (e^(-5000)); the
    row's own shift keeps the ratios exact."""
    rng = np.random.default_rng(3)
    keys = rng.uniform(0, 1, (700, 3))
    queries = keys[:9] + np.array([100.0, 0.0, 0.0])
    values = rng.standard_normal((700, 1))
    args = [a.astype(dtype) for a in (queries, keys, values)]
    got = pooled(*args, 1.0)
    want = stable_gaussian_pool(*args, 1.0)
    assert np.max(np.abs(got - want)) <= 10 * TOLERANCE[dtype] * np.ptp(values)


def test_overflowed_coordinates_go_to_the_nearest_key_like_stream():
    queries, keys, values = data(5, n=40, m=3000, d=2)
    got = attention_pool(queries, keys, values, bandwidth=1e-300, method="native")
    want = attention_pool(queries, keys, values, bandwidth=1e-300, method="stream")
    np.testing.assert_array_equal(got, want)
    assert np.all(np.isfinite(got))


def hostile_rows(dtype, d):
    """Queries, keys, values and scale where the loop's exponential meets its edges: a
    row re-shifted by ever closer keys, rows whose weights all fall below the floor but
    the nearest, and a row whose scaled coordinates overflow (empty or not finite)."""
    rng = np.random.default_rng(d)
    keys = rng.uniform(-1, 1, (2000, d)) * np.linspace(40, 0.5, 2000)[:, None]
    queries = np.r_[np.zeros((1, d)), keys[:4] + 3.0, keys[5:9] + 1e-3, np.full((1, d), 1e30)]
    values = rng.standard_normal((2000, 2))
    queries, keys, values = (a.astype(dtype) for a in (queries, keys, values))
    return queries, keys, values, np.full(d, 1e7 if dtype == np.float64 else 1e5) ** 0.25


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [2, 8])
def test_the_portable_exponential_agrees_with_avx512s(dtype, d, native_cache, monkeypatch):
    """Built without AVX-512 (2^n added to the exponent's bits, x clamped both ways) and
    with it where the compiler can (vrndscale and vscalef), the loop gives the same rows
    not finite and the same sums to rounding (lanes of 8 and 16 sum in other orders)."""
    queries, keys, values, scale = hostile_rows(dtype, d)
    runs = []
    x86 = platform.machine().lower() in ("x86_64", "amd64")  # elsewhere: portable only
    for compiler in (build.compiler(), build.compiler() + " -mno-avx512f" * x86):
        monkeypatch.setenv("CC", compiler)
        sums, shift = native.native_sums(queries, keys, values, scale, return_shift=True)
        runs.append((sums, shift))
    (sums, shift), (portable, portable_shift) = runs
    finite = np.isfinite(sums[:, 0])
    np.testing.assert_array_equal(np.isfinite(portable[:, 0]), finite)
    np.testing.assert_array_equal(portable[:, 0] == 0, sums[:, 0] == 0)  # empty rows
    assert np.all(finite[:-1]) and not (finite[-1] and sums[-1, 0] > 0)  # the last, either
    np.testing.assert_array_equal(portable_shift[finite], shift[finite])
    tolerance = 64 * np.finfo(dtype).eps
    np.testing.assert_allclose(portable[finite], sums[finite], rtol=tolerance, atol=0)


def test_loading_a_loop_starts_a_thread_per_core_before_any_threaded_sum():
    """A small sum (one thread) loads the loop; the pool's threads start then, in the
    background, so that the first threaded sum does not pay for starting them."""
    code = (
        "import threading, time, numpy as np\n"
        "from attnpool.methods import native\n"
        "x = np.ones((5, 2))\n"
        "native.native_sums(x, x, x[:, :1], np.ones(2))\n"
        "time.sleep(0.5)\n"
        "names = [t.name for t in threading.enumerate()]\n"
        "print(native.cores(), sum(n.startswith('attnpool-native') for n in names))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    cores, started = map(int, done.stdout.split())
    assert started == (cores if cores > 1 else 0)


def test_threads_split_rows_without_changing_a_bit(monkeypatch):
    queries, keys, values = data(6, n=1000, m=1500, d=3)
    whole = pooled(queries, keys, values, 0.5)
    monkeypatch.setattr(native, "TASK_ROWS", 12)  # 84 tasks over every core
    np.testing.assert_array_equal(pooled(queries, keys, values, 0.5), whole)
    monkeypatch.setattr(native, "THREAD_MIN_PAIRS", 2**62)  # all rows on this thread
    np.testing.assert_array_equal(pooled(queries, keys, values, 0.5), whole)


def test_a_variant_is_ready_only_once_it_is_in_the_cache(native_cache, monkeypatch):
    assert not native.ready(True, 2, 1)
    x, y = np.ones((5, 2)), np.ones((5, 1))
    native.native_sums(x, x, y, np.ones(2))
    assert native.ready(True, 2, 1)
    assert not native.ready(True, 3, 1) and not native.ready(False, 2, 1)
    monkeypatch.setenv("CC", "no-such-compiler")  # the cached loop is that compiler's
    assert not native.ready(True, 2, 1)


def test_a_forked_child_sums_on_threads_of_its_own():
    # the parent's pool of threads is kept between calls; a forked child (a Dask or
    # multiprocessing worker) has none of its threads and must start its own
    code = """
import os, sys, numpy as np
from attnpool.methods import native
rng = np.random.default_rng(0)
x, y = rng.normal(size=(1500, 2)), rng.normal(size=(1500, 1))
parent = native.native_sums(x, x, y, np.ones(2))
child = os.fork()
if child == 0:
    same = np.array_equal(native.native_sums(x, x, y, np.ones(2)), parent)
    os._exit(0 if same else 1)
_, status = os.waitpid(child, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    d=st.integers(2, 4),
    bandwidth=st.floats(0.05, 5.0),
    m=st.integers(1, 600),
    spread=st.floats(0.1, 50.0),
)
def test_native_matches_the_reference_on_random_data(seed, d, bandwidth, m, spread):
    rng = np.random.default_rng(seed)
    keys = rng.normal(0, spread, (m, d))
    queries = rng.normal(0, spread, (17, d))
    values = rng.standard_normal((m, 2))
    got = attention_pool(queries, keys, values, bandwidth=bandwidth, method="native")
    want = stable_gaussian_pool(queries, keys, values, bandwidth)
    assert np.max(np.abs(got - want)) <= 1e-11 * np.max(value_range(values))


def test_the_library_is_compiled_once_into_the_cache(native_cache):
    queries, keys, values = data(7, n=10, m=100, d=4)
    first = pooled(queries, keys, values, 1.0)
    built = sorted((native_cache / "native").glob("gaussian-*.so"))
    assert len(built) == 1  # only the library of this variant; no partial file left
    stamp = built[0].stat().st_mtime_ns
    native._library.cache_clear()  # as a new process would
    np.testing.assert_array_equal(pooled(queries, keys, values, 1.0), first)
    assert built[0].stat().st_mtime_ns == stamp


@pytest.mark.parametrize(
    "compiler, reason",
    [("no-such-cc", "no C compiler 'no-such-cc' on the PATH"), ("false", "could not compile")],
)
def test_without_a_compiler_auto_streams_and_native_is_a_clear_error(
    compiler, reason, native_cache, monkeypatch
):
    monkeypatch.setenv("CC", compiler)
    assert not native.available()
    assert reason in native.unavailable_reason()
    queries, keys, values = data(8, n=3000, m=3000, d=2)
    streamed = attention_pool(queries, keys, values, bandwidth=0.3)
    np.testing.assert_array_equal(
        streamed, attention_pool(queries, keys, values, bandwidth=0.3, method="stream")
    )
    with pytest.raises(ValueError, match=f"'native' needs a C compiler .*{reason}"):
        attention_pool(queries, keys, values, bandwidth=0.3, method="native")
    assert not any(name.endswith(".so") for _, _, files in os.walk(native_cache) for name in files)


def replace(path, content):
    """A new file at ``path`` (this process keeps the old one mapped)."""
    path.with_name("new").write_bytes(content)
    os.replace(path.with_name("new"), path)


def only_library(cache):
    (library,) = (cache / "native").glob("gaussian-*.so")
    return library


@pytest.mark.parametrize("damage", ["truncated", "replaced", "writable by others", "no digest"])
def test_a_damaged_or_foreign_library_in_the_cache_is_built_again(native_cache, damage):
    queries, keys, values = data(9, n=10, m=100, d=3)
    first = pooled(queries, keys, values, 1.0)
    library = only_library(native_cache)
    if damage == "truncated":  # loading it would end the process with SIGBUS
        replace(library, library.read_bytes()[: library.stat().st_size // 2])
    elif damage == "replaced":
        replace(library, b"\x7fELF planted by someone else")
    elif damage == "writable by others":
        library.chmod(0o777)
    else:
        library.with_suffix(".sha256").unlink()
    native._library.cache_clear()  # as a new process would
    np.testing.assert_array_equal(pooled(queries, keys, values, 1.0), first)
    rebuilt = only_library(native_cache)
    assert rebuilt.stat().st_mode & 0o777 == 0o700
    assert hashlib.sha256(rebuilt.read_bytes()).hexdigest() == (
        rebuilt.with_suffix(".sha256").read_text()
    )


def test_a_cache_folder_others_can_write_is_not_used(native_cache):
    shared = native_cache / "native"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    with pytest.warns(RuntimeWarning, match="others can write to it"):
        assert build.cache_directory() != shared
    queries, keys, values = data(10, n=10, m=100, d=3)
    pooled(queries, keys, values, 1.0)
    assert list(shared.iterdir()) == []  # nothing built there, nothing loaded from there


def test_an_empty_cc_means_the_default_compiler(monkeypatch):
    monkeypatch.setenv("CC", "")
    assert native.compiler() == "cc"
    monkeypatch.setenv("CC", "  ")
    assert native.compiler() == "cc"


def test_a_compiler_that_fails_once_is_tried_again(native_cache, monkeypatch, tmp_path):
    # fails while the disk is "full", then compiles: a transient failure
    full = tmp_path / "disk-full"
    full.touch()
    flaky = tmp_path / "flaky-cc"
    flaky.write_text(f'#!/bin/sh\n[ -e "{full}" ] && exit 1\nexec cc "$@"\n')
    flaky.chmod(0o755)
    monkeypatch.setenv("CC", str(flaky))
    with pytest.warns(RuntimeWarning, match="'native' is unavailable: .*tried again"):
        assert not native.available()
    full.unlink()
    assert not native.available()  # remembered for RETRY_SECONDS, not rebuilt each call
    monkeypatch.setattr(native, "RETRY_SECONDS", 0.0)
    assert native.available()


def test_a_truncated_library_does_not_bring_a_new_process_down(native_cache):
    queries, keys, values = data(11, n=10, m=100, d=3)
    first = pooled(queries, keys, values, 1.0)
    library = only_library(native_cache)
    replace(library, library.read_bytes()[: library.stat().st_size // 2])
    script = (
        "import sys, numpy as np; sys.path.insert(0, 'tests');"
        "from method_data import data; from test_native import pooled;"
        "import json; print(json.dumps(pooled(*data(11, n=10, m=100, d=3), 1.0).tolist()))"
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "ATTNPOOL_CACHE": str(native_cache)},
    )
    assert run.returncode == 0, run.stderr
    np.testing.assert_array_equal(np.array(json.loads(run.stdout)), first)
