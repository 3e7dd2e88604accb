"""Sums that must keep the exact answer at the edges: observation weights of 0 beside far
keys, weights 1e20–1e30 times the rest, one huge value or weight before a prefix-sum
window, Gaussian densities far from the keys' mean in d ≥ 3, user kernels in float64,
and the methods' declarations of their accuracy. The reference is the textbook formula
in float64 with ``logsumexp`` (no cancellation, no truncation)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from attnpool import attention_pool, kernel_cdf
from attnpool.density import kernel_density, log_density
from attnpool.methods import native
from attnpool.methods.options import TRAITS
from reference import KERNEL_VALUES

HOST_GAUSSIAN = ["auto", "dense", "stream", "fgt", "native"]


def gaussian_log_density(x, q, h, w=None):
    """``log f̂`` by ``logsumexp`` of the exact exponents, weights as log offsets."""
    x, q = np.atleast_2d(x.T).T, np.atleast_2d(q.T).T
    w = np.ones(x.shape[0]) if w is None else np.asarray(w, np.float64)
    d = x.shape[1]
    exponents = -(((q[:, None, :] - x[None, :, :]) / h) ** 2).sum(axis=-1) / 2
    with np.errstate(divide="ignore"):
        log_w = np.log(w)
    return (
        logsumexp(exponents + log_w, axis=1)
        - math.log(w.sum())
        - d * math.log(h)
        - d * 0.5 * math.log(2 * math.pi)
    )


def methods_here(names):
    return [m for m in names if m != "native" or native.available()]


@pytest.mark.parametrize("method", methods_here(HOST_GAUSSIAN))
def test_a_key_of_weight_zero_never_sets_a_density(method):
    # keys at 0 (weight 0) and 50, the query at 0: the density is the far key's
    x, w, q = np.array([0.0, 50.0]), np.array([0.0, 1.0]), np.array([0.0])
    got = log_density(x, q, bandwidth=1.0, weights=w, method=method)
    np.testing.assert_allclose(got, gaussian_log_density(x, q, 1.0, w), rtol=1e-13)
    np.testing.assert_allclose(got, -1250.9189385332047, rtol=1e-13)


def test_weight_zero_in_jax_arrays_mixed_columns_and_distribution_functions():
    x, w, q = np.array([0.0, 50.0]), np.array([0.0, 1.0]), np.array([0.0])
    want = gaussian_log_density(x, q, 1.0, w)
    with jax.enable_x64(True):
        got = log_density(jnp.asarray(x), jnp.asarray(q), bandwidth=1.0, weights=jnp.asarray(w))
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13)
    x2, q2 = np.array([[0.0, 0.0], [50.0, 1.0]]), np.array([[0.0, 0.0]])
    mixed = log_density(x2, q2, bandwidth=[1.0, 0.1], weights=w, var_type="cu")
    np.testing.assert_allclose(mixed, want + math.log(0.1), rtol=1e-13)  # λ/(c − 1), c = 2
    cdf = kernel_cdf(x, [0.0], bandwidth=1.0, weights=w)
    np.testing.assert_allclose(cdf, 0.5 * math.erfc(50 / math.sqrt(2)), rtol=1e-12)


@pytest.mark.parametrize("huge", [1e20, 1e25, 1e30])
def test_a_far_key_of_huge_weight_counts_in_every_density(huge):
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0, 1, 20_000))
    x[-1] = 3.0  # 10 bandwidths from the nearest query
    w = np.ones(x.size)
    w[-1] = huge
    q = np.linspace(0, 1, 11)
    want = gaussian_log_density(x, q, 0.2, w)
    got = log_density(x, q, bandwidth=0.2, weights=w)  # "auto": no truncating method
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-12)
    for method in methods_here(["fgt", "native"]):
        with pytest.raises(ValueError, match=rf"weights: method '{method}' passes over"):
            log_density(x, q, bandwidth=0.2, weights=w, method=method)


def test_a_far_key_of_huge_weight_counts_in_every_pool():
    rng = np.random.default_rng(1)
    keys = np.sort(rng.uniform(0, 1, 5_000))
    keys[-1] = 3.0
    values = np.sin(keys)
    values[-1] = 7.0
    w = np.ones(keys.size)
    w[-1] = 1e28
    q = np.linspace(0, 1, 11)
    log_k = -(((q[:, None] - keys[None, :]) / 0.2) ** 2) / 2 + np.log(w)
    shares = np.exp(log_k - logsumexp(log_k, axis=1, keepdims=True))
    want = shares @ values
    got = attention_pool(q, keys, values, bandwidth=0.2, weights=w)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    for method in methods_here(["fgt", "native"]):
        with pytest.raises(ValueError, match="spanning 1e"):
            attention_pool(q, keys, values, bandwidth=0.2, weights=w, method=method)
    # a moderate span (censoring weights) stays with the fast methods
    moderate = rng.uniform(1, 100, keys.size)
    for method in methods_here(["fgt", "native"]):
        fast = attention_pool(q, keys, values, bandwidth=0.2, weights=moderate, method=method)
        exact = attention_pool(q, keys, values, bandwidth=0.2, weights=moderate, method="stream")
        np.testing.assert_allclose(fast, exact, rtol=1e-11)


@pytest.mark.parametrize("kernel", ["epanechnikov", "triangular", "boxcar", "cosine"])
@pytest.mark.parametrize("position", [460, 465])
def test_one_huge_value_or_weight_before_a_prefix_window_spoils_nothing(kernel, position):
    # the 1e16 sits in the same prefix block as the windows' first keys, outside them
    x = np.linspace(0, 10, 1001)
    q = np.array([5.0, 5.05, 5.1])
    values = np.sin(x)
    values[position] = 1e16
    got = attention_pool(q, x, values, kernel=kernel, bandwidth=0.3, method="sparse")
    want = attention_pool(q, x, values, kernel=kernel, bandwidth=0.3, method="dense")
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)
    for huge in (1e16, 1e20):
        w = np.ones(x.size)
        w[position] = huge
        u = np.abs(q[:, None] - x[None, :]) / 0.3
        kernel_sums = (KERNEL_VALUES[kernel](u) * w).sum(axis=1)
        want_log = np.log(kernel_sums / w.sum() / 0.3)
        got_log = log_density(x, q, kernel=kernel, bandwidth=0.3, weights=w, method="sparse")
        np.testing.assert_allclose(got_log, want_log, rtol=1e-13)


@pytest.mark.parametrize("d", [3, 8, 13])
@pytest.mark.parametrize("n", [300, 5000])
def test_gaussian_densities_far_from_the_keys_mean_keep_every_digit(d, n):
    # Cauchy data: queries a hair from a key but ~1e7 bandwidths from the keys' mean,
    # where q·k − ‖k‖²/2 − ‖q‖²/2 cancels
    rng = np.random.default_rng(d + n)
    x = rng.standard_cauchy((n, d))
    q = x[:20] + 1e-4
    want = gaussian_log_density(x, q, 3e-4)
    for method in methods_here(HOST_GAUSSIAN):
        if method == "fgt":
            continue  # one column only
        got = log_density(x, q, bandwidth=3e-4, method=method)
        # the host methods' scaled coordinates round at eps · |q/h| (~1e7 here), each
        # exponent u²/2 (u ≲ 1) by about that times u per column; no cancellation beyond
        rounding = 4 * d * np.finfo(np.float64).eps * np.max(np.abs(x)) / 3e-4
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=rounding, err_msg=method)


def test_native_keeps_the_matrix_product_form_where_it_is_accurate():
    rng = np.random.default_rng(3)
    q, k = rng.uniform(0, 5, (100, 8)) / 0.3, rng.uniform(0, 5, (200, 8)) / 0.3
    assert native.matmul_form(q, k, np.float32) is not None  # the benchmark's data
    assert native.matmul_form(q, k, np.float64) is not None
    far = q.copy()
    far[0] += 1e6
    assert native.matmul_form(far, k, np.float64) is None
    assert native.matmul_form(q[:, :2], k[:, :2], np.float64) is None  # d < 3


def test_a_user_kernel_density_is_float64_on_every_route():
    def biweight(u):
        return jnp.where(u < 1, 15 / 16 * (1 - u**2) ** 2, 0.0)

    rng = np.random.default_rng(0)
    x, q = rng.normal(size=50), np.linspace(-2, 2, 9)
    u = np.abs(q[:, None] - x[None, :]) / 0.7
    want = np.where(u < 1, 15 / 16 * (1 - u**2) ** 2, 0).sum(axis=1) / 50 / 0.7
    for method in ("auto", "dense", "stream"):
        got = kernel_density(x, q, kernel=biweight, bandwidth=0.7, method=method)
        np.testing.assert_allclose(got, want, rtol=1e-13, err_msg=method)


def test_fused_declares_float32_logits_and_is_held_to_them():
    assert not TRAITS["fused"].exact
    assert "float32" in TRAITS["fused"].accuracy
    assert all(TRAITS[name].exact for name in ("dense", "stream", "sparse", "fgt", "native"))
    rng = np.random.default_rng(0)
    keys, values, q = rng.normal(size=200), rng.normal(size=200), rng.normal(size=50)
    fused = attention_pool(q, keys, values, bandwidth=0.3, method="fused")
    exact = attention_pool(q, keys, values, bandwidth=0.3, method="dense")
    extent = (keys.max() - keys.min()) / 0.3
    bound = 8 * np.finfo(np.float32).eps * extent**2 * np.ptp(values)
    assert 1e-12 < np.max(np.abs(fused - exact)) <= bound  # float32, not float64, and within


WEIGHTED_METHODS = {
    "gaussian": ["auto", "dense", "stream", "fgt", "native"],
    "epanechnikov": ["auto", "dense", "stream", "sparse"],
    "triangular": ["auto", "dense", "stream", "sparse"],
}


@st.composite
def hostile_weights(draw, m):
    """Weights of 0, spans to 1e30 and mixtures of both, with the keys they go with."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["zeros", "huge", "mixed", "tiny"]))
    w = rng.uniform(0.5, 2.0, m)
    chosen = rng.choice(m, size=max(1, m // 10), replace=False)
    if kind in ("zeros", "mixed"):
        w[chosen[: max(1, chosen.size // 2)]] = 0.0
    if kind in ("huge", "mixed"):
        w[chosen[-1]] = 10.0 ** draw(st.floats(3, 30))
    if kind == "tiny":
        w[chosen] = 10.0 ** -draw(st.floats(3, 30))
    return w


@pytest.mark.filterwarnings("ignore::attnpool.EmptyNeighbourhoodWarning")  # (rows compared)
@pytest.mark.parametrize(
    ("kernel", "method"),
    [(k, m) for k, methods in WEIGHTED_METHODS.items() for m in methods_here(methods)],
)
def test_hostile_weights_meet_the_textbook_or_raise(kernel, method):
    @settings(max_examples=25, deadline=None, derandomize=True)
    @given(
        data=st.data(),
        shift=st.sampled_from([0.0, 1e3, 1.7e9]),
        scale=st.sampled_from([1e-6, 1.0, 1e6]),
        bandwidth=st.floats(0.02, 3.0),
    )
    def run(data, shift, scale, bandwidth):
        rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
        d = 1 if method in ("fgt", "sparse") else data.draw(st.sampled_from([1, 2, 3]))
        keys = rng.uniform(-1, 1, (300, d)) * scale + shift * scale
        queries = rng.uniform(-1.2, 1.2, (40, d)) * scale + shift * scale
        values = rng.normal(size=300)
        w = data.draw(hostile_weights(300))
        h = bandwidth * scale
        u = np.sqrt((((queries[:, None, :] - keys[None, :, :]) / h) ** 2).sum(axis=-1))
        with np.errstate(divide="ignore"):
            log_k = np.log(KERNEL_VALUES[kernel](u)) + np.log(w)[None, :]
        top = np.max(log_k, axis=1, keepdims=True)
        reachable = np.isfinite(top[:, 0])
        shares = np.exp(log_k[reachable] - top[reachable])
        want_pool = shares @ values / shares.sum(axis=1)
        want_log = (top[reachable, 0] + np.log(shares.sum(axis=1)) - np.log(w.sum())
                    - d * np.log(h))  # fmt: skip
        if kernel == "gaussian":  # (KERNEL_VALUES holds the one-dimensional constant)
            want_log -= (d - 1) * 0.5 * np.log(2 * np.pi)
        try:
            pooled = attention_pool(queries, keys, values, kernel=kernel, bandwidth=h,
                                    weights=w, method=method)  # fmt: skip
            logs = log_density(keys, queries, kernel=kernel, bandwidth=h, weights=w,
                               method=method if method != "fused" else "auto")  # fmt: skip
        except ValueError as error:  # the truncating methods refuse wide spans by name
            assert method in ("fgt", "native") and "weights: method" in str(error)
            return
        np.testing.assert_allclose(pooled[reachable], want_pool, rtol=0, atol=1e-9 * np.ptp(values))
        if kernel == "gaussian" or d == 1:  # (a radial compact kernel's constant: d = 1)
            np.testing.assert_allclose(logs[reachable], want_log, rtol=1e-10, atol=1e-9)
        assert np.all(np.isneginf(logs[~reachable]))

    run()


def gaussian_pool(q, k, v, h):
    """The Gaussian pool by ``logsumexp`` weights, in float64."""
    exponents = -(((q[:, None, :] - k[None, :, :]) / h) ** 2).sum(axis=-1) / 2
    w = np.exp(exponents - exponents.max(axis=1, keepdims=True))
    return (w @ v) / w.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("method", methods_here(["auto", "dense", "stream", "native"]))
def test_queries_far_from_every_key_in_three_columns_keep_every_digit(method):
    # 30–45 bandwidths from every key: under the streamed engine's log-weight bound the
    # rows' weights were ~1e-300, and those below the smallest normal number, flushed to 0
    # on a CPU, took 6e-8 of the pool (the rows were pooled again only below 2^24 · tiny)
    rng = np.random.default_rng(3)
    keys = rng.uniform(-1, 1, (1451, 3))
    values = np.stack([np.sin(3 * keys[:, 0]), np.cos(keys[:, 2])], axis=1)
    queries = rng.uniform(-1.5, 1.5, (50, 3)) * 20
    got = attention_pool(queries, keys, values, bandwidth=0.83, method=method)
    np.testing.assert_allclose(got, gaussian_pool(queries, keys, values, 0.83), rtol=0,
                               atol=1e-12)  # fmt: skip


@pytest.mark.parametrize("method", methods_here(["auto", "dense", "stream", "native"]))
@pytest.mark.parametrize("exponent", [-1000, 1000])
def test_values_near_the_floats_ends_keep_their_digits_far_from_the_keys(method, exponent):
    # a value column of 2^-1000: its products with weights below 2^-30 were subnormal
    # (digits lost, or flushed to 0 on a CPU: the streamed pool returned 0 for 9e-302);
    # it is now pooled in units of its largest, as a column near the largest number is
    rng = np.random.default_rng(4)
    keys = rng.uniform(-1, 1, (800, 3))
    values = 2.0**exponent * np.stack([np.cos(keys[:, 2]), np.sin(keys[:, 0])], axis=1)
    queries = np.concatenate([keys[:5], rng.uniform(-1.5, 1.5, (30, 3)) * 12])
    got = attention_pool(queries, keys, values, bandwidth=0.6, method=method)
    want = gaussian_pool(queries, keys, values * 2.0**-exponent, 0.6)
    np.testing.assert_allclose(got * 2.0**-exponent, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["dense", "stream", "auto"])
@pytest.mark.parametrize("d", [2, 3])
def test_rows_far_from_the_keys_keep_small_values_and_weights(method, d):
    # streamed blocks shift by a bound on the log weights, not each row's maximum: a row
    # 30 bandwidths from the keys then summed weights of e^-385 times values of 1e-150,
    # flushed to 0 (pooled 0); with observation weights, the column w / max w of 1e-145
    # at its nearest keys made the weighted pool 0 / 0 (NaN)
    rng = np.random.default_rng(46)
    far = np.full((1, d), 30.0 / math.sqrt(d))
    keys = np.vstack([rng.normal(size=(40, d)), -far])
    queries = np.vstack([far, rng.normal(size=(3, d))])
    values = rng.uniform(1, 2, (41, 2))
    log_k = -0.5 * ((queries[:, None, :] - keys[None, :, :]) ** 2).sum(axis=-1)
    for w in (None, np.r_[np.full(40, 1e-145), 1.0]):  # the heaviest key the farthest
        shares = np.exp(log_k - log_k.max(axis=1, keepdims=True)) * (1.0 if w is None else w)
        want = shares @ values / shares.sum(axis=1, keepdims=True)
        scale = 1e-150 if w is None else 1.0
        got = attention_pool(queries, keys, values * scale, method=method, weights=w)
        np.testing.assert_allclose(got / scale, want, rtol=1e-12)
