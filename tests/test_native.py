"""The compiled Gaussian loop (``method="native"``) against independent references."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnpool import attention_pool
from attnpool.methods import compiled, native
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
def test_every_instruction_set_gives_the_same_rows(dtype, d, monkeypatch):
    """Each library this processor runs — the baseline (2^n added to the exponent's
    bits, x clamped both ways, no FMA), AVX2, AVX-512 (vrndscale and vscalef) — gives
    the same rows not finite and empty, and the same weight totals and pooled values to
    rounding: the FMA builds between them by the sums' order (lanes of 4, 8 and 16; the
    same shifts), the baseline by each log weight's own rounding too, (d + 3)·eps of
    its size, which the row's shift bounds."""
    queries, keys, values, scale = hostile_rows(dtype, d)
    runs = {}
    for instruction_set in compiled.instruction_sets_run():
        monkeypatch.setenv(compiled.VARIABLE, instruction_set)
        assert compiled.loops().instruction_set == instruction_set
        runs[instruction_set] = native.native_sums(queries, keys, values, scale, return_shift=True)
    sums, shift = runs["baseline"]
    finite = np.isfinite(sums[:, 0])
    assert np.all(finite[:-1]) and not (finite[-1] and sums[-1, 0] > 0)  # the last, either
    eps = np.finfo(dtype).eps
    if {"avx2", "avx512"} <= set(runs):
        (avx2, avx2_shift), (avx512, avx512_shift) = runs["avx2"], runs["avx512"]
        np.testing.assert_array_equal(avx512_shift[finite], avx2_shift[finite])
        np.testing.assert_allclose(avx512[finite], avx2[finite], rtol=64 * eps, atol=0)
    live = finite & (sums[:, 0] > 0)
    bound = 64 * eps + 4 * (d + 3) * eps * np.abs(shift[live])
    for name, (wide, wide_shift) in runs.items():
        np.testing.assert_array_equal(np.isfinite(wide[:, 0]), finite, err_msg=name)
        np.testing.assert_array_equal(wide[:, 0] == 0, sums[:, 0] == 0, err_msg=name)
        log_totals = [np.log2(a[live, 0]) + b[live] for a, b in ((wide, wide_shift), (sums, shift))]
        assert np.all(np.abs(log_totals[0] - log_totals[1]) <= bound), name
        pooled = [a[live, 1:] / a[live, :1] for a in (wide, sums)]
        assert np.all(np.abs(pooled[0] - pooled[1]) <= bound[:, None] * np.ptp(values)), name


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


@pytest.mark.parametrize("instruction_set", compiled.instruction_sets_run())
def test_the_variants_built_serve_up_to_16_columns_and_any_value_count(
    instruction_set, monkeypatch
):
    monkeypatch.setenv(compiled.VARIABLE, instruction_set)
    for double in (True, False):
        assert all(native.available(double, d, p) for d in range(1, 17) for p in (1, 3, 16, 40))
        assert not native.available(double, 17, 1)
    assert all(native.moments_available(d, p) for d in range(1, 9) for p in range(1, 5))
    assert not native.moments_available(9, 1) and not native.moments_available(2, 5)


@pytest.mark.parametrize("instruction_set", compiled.instruction_sets_run())
@pytest.mark.parametrize("d, p", [(9, 3), (12, 5), (15, 1), (16, 9), (3, 7), (2, 17)])
def test_padded_columns_and_values_sum_as_the_reference(instruction_set, d, p, monkeypatch):
    # d = 9-15 run on the 16-column variant and value counts between those built on
    # the next one, with zero columns that add exactly nothing
    monkeypatch.setenv(compiled.VARIABLE, instruction_set)
    rng = np.random.default_rng(d * p)
    keys = rng.normal(size=(700, d))
    queries = rng.normal(size=(40, d))
    values = rng.normal(size=(700, p))
    bandwidth = 0.4 * np.sqrt(d)
    want = stable_gaussian_pool(queries, keys, values, bandwidth)
    np.testing.assert_allclose(pooled(queries, keys, values, bandwidth), want, rtol=0, atol=1e-12)
    if d <= native.MOMENTS_MAX_DIMS and p <= native.MOMENTS_MAX_VALUES:
        moments, _ = native.native_moments(queries, keys, values, np.full(d, 1 / bandwidth))
        assert moments.shape == (40, 1 + d + d * d + p * (1 + d))


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


def test_without_the_compiled_loops_auto_streams_and_native_is_a_clear_error(
    without_compiled_loops,
):
    assert not native.available()
    assert native.unavailable_reason() == "ATTNPOOL_INSTRUCTION_SET=none"
    queries, keys, values = data(8, n=3000, m=3000, d=2)
    streamed = attention_pool(queries, keys, values, bandwidth=0.3)
    np.testing.assert_array_equal(
        streamed, attention_pool(queries, keys, values, bandwidth=0.3, method="stream")
    )
    with pytest.raises(ValueError, match="'native' needs the compiled loops, which do not run"):
        attention_pool(queries, keys, values, bandwidth=0.3, method="native")


def test_more_columns_than_built_are_a_clear_error_for_native():
    queries, keys, values = data(8, n=30, m=300, d=17)
    with pytest.raises(ValueError, match="'native' is built for up to 16 columns; received 17"):
        attention_pool(queries, keys, values, bandwidth=2.0, method="native")


def test_the_host_loops_agree_across_instruction_sets(monkeypatch):
    # the k-d order is the same permutation everywhere; linear binning the same bits
    # with FMA (AVX2, AVX-512), to rounding without; the fgt sums to rounding
    from attnpool.methods import binning, fgt, locality
    from attnpool.methods.binned import Grid

    rng = np.random.default_rng(0)
    keys, queries = rng.uniform(-3, 3, 4000), rng.uniform(-4, 4, 700)
    values, points = rng.normal(size=(4000, 2)), rng.normal(size=(5000, 2)) * 3
    features = rng.normal(size=(5000, 3))
    grid = Grid((-20.0, -20.0), (0.37, 0.37), (120, 120))
    found = {}
    for instruction_set in compiled.instruction_sets_run():
        monkeypatch.setenv(compiled.VARIABLE, instruction_set)
        found[instruction_set] = (
            locality.locality_order(points, 64, native.order_function()),
            binning.bin_points(points, 2.0, grid, features)[0],
            fgt.expansion_sums(queries[:, None], keys[:, None], values, 1 / 0.2)[0],
        )
    order, binned, sums = found["baseline"]
    for name, (other_order, other_binned, other_sums) in found.items():
        np.testing.assert_array_equal(other_order, order, err_msg=name)
        np.testing.assert_allclose(other_binned, binned, rtol=1e-13, atol=1e-13, err_msg=name)
        np.testing.assert_allclose(other_sums, sums, rtol=1e-11, err_msg=name)
    if {"avx2", "avx512"} <= set(found):
        np.testing.assert_array_equal(found["avx2"][1], found["avx512"][1])


@pytest.mark.parametrize("instruction_set", compiled.instruction_sets_run())
@pytest.mark.parametrize("d, p, bandwidth", [(1, 3, 0.05), (2, 2, 0.4), (3, 3, 1.5), (8, 4, 2.0)])
def test_padded_moments_are_each_responses_own(instruction_set, d, p, bandwidth, monkeypatch):
    # responses padded to the variant built (2, 3 → 4; the baseline's 2 → 4): each
    # response's moments are those of the one-response loop, and the shared ones equal
    monkeypatch.setenv(compiled.VARIABLE, instruction_set)
    rng = np.random.default_rng(d + p)
    keys = rng.normal(size=(900, d))
    queries = rng.normal(size=(60, d)) * 1.3
    values = rng.normal(size=(900, p)) * np.array([1.0, 1e150, 1e-150, 3.0])[:p]
    scale = np.full(d, 1 / bandwidth)
    moments, ref = native.native_moments(queries, keys, values, scale)
    head = 1 + d + d * d
    assert moments.shape == (60, head + p * (1 + d))
    for j in range(p):
        alone, alone_ref = native.native_moments(queries, keys, values[:, j : j + 1], scale)
        np.testing.assert_array_equal(ref, alone_ref)
        np.testing.assert_allclose(moments[:, :head], alone[:, :head], rtol=1e-13, atol=0)
        own = np.r_[head + j, head + p + j * d + np.arange(d)]
        np.testing.assert_allclose(moments[:, own], alone[:, head:], rtol=1e-12,
                                   atol=1e-12 * np.abs(alone[:, head:]).max())  # fmt: skip


def test_a_local_linear_fit_of_three_responses_on_the_loop_is_each_ones_own(monkeypatch):
    # 600 × 600 pairs: the NumPy engine sums the moments on the loop, three responses
    # padded to four, as three fits of one each
    from attnpool import LocalLinear

    widths, moments = [], native.native_moments

    def counted(queries, keys, values, *args, **kwargs):
        widths.append(values.shape[1])
        return moments(queries, keys, values, *args, **kwargs)

    monkeypatch.setattr(native, "native_moments", counted)
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 5, (600, 2))
    y = np.c_[np.sin(x[:, 0]), 1e6 * x[:, 1] ** 2, np.cos(x.sum(axis=1))]
    y = y + rng.normal(0, 0.1, y.shape)
    queries = rng.uniform(0, 5, (600, 2))
    together = LocalLinear(bandwidth=[0.4, 0.6]).fit(x, y).predict(queries)
    assert widths == [3]
    for j in range(3):
        alone = LocalLinear(bandwidth=[0.4, 0.6]).fit(x, y[:, j]).predict(queries)
        np.testing.assert_allclose(together[:, j], alone, rtol=1e-10,
                                   atol=1e-10 * np.ptp(y[:, j]))  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_far_pairs_are_summed_exactly_and_the_callers_subnormal_numbers_kept(dtype):
    # d = 8: most pairs' weights sit at the loop's floor, and their products with the
    # values were subnormal (each a slow microcode step on x86); the loop flushes such
    # products to 0 while it runs — terms below 2^-118 of a row's sum — and restores the
    # caller's floating-point mode after
    rng = np.random.default_rng(8)
    keys = rng.uniform(-2.5, 2.5, (3000, 8)).astype(dtype)
    values = np.sin(keys[:, :2]).astype(dtype)
    sums = native.native_sums(keys[:300], keys, values, np.full(8, 1 / 0.3))
    want = stable_gaussian_pool(keys[:300].astype(float), keys.astype(float),
                                values.astype(float), 0.3)  # fmt: skip
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(sums[:, 1:] / sums[:, :1], want, rtol=0, atol=tolerance)
    tiny = np.finfo(dtype).tiny
    assert np.array([tiny / 4], dtype) * dtype(1.0) == dtype(tiny / 4)  # not flushed here


def test_data_beyond_the_loops_extent_are_summed_exactly():
    """The loop scales coordinates before it takes their differences, so each carries
    2⁻⁵³ of its size in bandwidths: 3·10⁸ bandwidths from the keys' midrange, a log
    density was 5e-8 off. Beyond ``LOOP_MAX_EXTENT`` ``auto`` takes another exact path,
    and ``native`` by name leaves the rows to the layer's exact re-sum."""
    from scipy.special import logsumexp

    import attnpool

    rng = np.random.default_rng(0)
    h = 1e-8
    keys = np.r_[rng.normal(size=(20000, 2)), 3 + h * rng.normal(size=(2000, 2))]
    queries = 3 + h * rng.normal(size=(300, 2))
    log_w = -0.5 * (((queries[:, None, :] - keys[None]) / h) ** 2).sum(axis=2)
    want = logsumexp(log_w, axis=1) - np.log(keys.shape[0] * 2 * np.pi * h**2)
    for method in ("auto", "native"):
        got = attnpool.log_density(keys, queries, bandwidth=h, method=method)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
