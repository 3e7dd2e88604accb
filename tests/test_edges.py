"""A compact kernel's edge: the plain sum decides far from it, the exact sum near it, and
both agree with the exact decision everywhere (NumPy, and JAX inside ``jit`` and ``vmap``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnpool
from attnpool import kernels
from attnpool.kernels.edges import (
    edge_log_profile,
    inside_decided,
    inside_exactly,
    rounded_quotient,
)

pytestmark = pytest.mark.usefixtures("float64")


@pytest.fixture
def float64():
    with jax.enable_x64(True):
        yield


def near_edge(seed: int, d: int, pairs: int, dtype) -> list[np.ndarray]:
    """``d`` columns of ``u`` whose norms sit within a few ulps of 1 (either side), beside
    exact cases ((0.6, 0.8), a coordinate of 1) and pairs far inside and outside."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=(pairs, d))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    steps = rng.integers(-6, 7, size=(pairs, 1))
    radius = 1.0 + steps * np.finfo(dtype).eps
    u = (direction * radius).astype(dtype)
    u[: pairs // 8] *= rng.choice([0.5, 2.0], size=(pairs // 8, 1)).astype(dtype)
    u[-1] = 0.0
    u[-1, 0] = 1.0
    if d >= 2:
        u[-2] = 0.0
        u[-2, :2] = (0.6, 0.8)
    return [np.ascontiguousarray(u[:, j]) for j in range(d)]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 4),
    dtype=st.sampled_from([np.float32, np.float64]),
    closed=st.booleans(),
)
def test_the_decision_is_the_exact_one_on_every_path(seed, d, dtype, closed):
    us = near_edge(seed, d, 256, dtype)
    want = inside_exactly(us, 1.0, closed=closed)
    r2 = sum(u * u for u in us)
    np.testing.assert_array_equal(inside_decided(us, r2, 1.0, closed=closed), want)

    @jax.jit
    def decided(*columns):
        plain = sum(u * u for u in columns)
        return inside_decided(list(columns), plain, 1.0, closed=closed, xp=jnp, branch=True)

    np.testing.assert_array_equal(decided(*us), want)
    by_row = jax.vmap(decided)(*(u.reshape(16, 16) for u in us))  # (a batched cond: select)
    np.testing.assert_array_equal(np.asarray(by_row).reshape(-1), want)


def test_far_from_the_edge_the_plain_sum_decides_and_near_it_the_exact_one():
    far = [np.array([0.5, 1.5, 0.999]), np.array([0.0, 0.0, 0.0])]
    r2 = sum(u * u for u in far)
    np.testing.assert_array_equal(inside_decided(far, r2, 1.0, closed=True), [True, False, True])
    # u² + v² is just below 1, and rounds to 1: the plain sum says outside the open
    # edge, the exact sum inside
    edge = [np.array([0.0777329478235005]), np.array([0.9969742167291333])]
    plain = edge[0] ** 2 + edge[1] ** 2
    assert plain[0] == 1.0 and inside_exactly(edge, 1.0, closed=False)[0]
    assert inside_decided(edge, plain, 1.0, closed=False)[0]
    got = jax.jit(lambda a, b: inside_decided([a, b], a * a + b * b, 1.0, closed=False,
                                              xp=jnp, branch=True))(*edge)  # fmt: skip
    assert bool(got[0])


def test_the_exact_decision_does_not_depend_on_the_compiler():
    # a float32 pair 1.4e-8 outside: XLA once dropped the first error-free addition's
    # error (its constant radius²), and the compiled decision put the pair inside
    us = [np.array([-0.022340128], np.float32), np.array([0.99975044], np.float32)]
    assert float(np.float64(us[0][0]) ** 2 + np.float64(us[1][0]) ** 2) > 1.0
    assert not inside_exactly(us, 1.0, closed=False)[0]
    compiled = jax.jit(lambda a, b: inside_exactly([a, b], 1.0, closed=False, xp=jnp))
    assert not bool(compiled(*us)[0])


@pytest.mark.parametrize("name", ["epanechnikov", "boxcar", "tricube", "epanechnikov-product"])
def test_log_weights_on_the_edge_are_alike_in_numpy_and_jax(name):
    kernel = kernels.for_dimensions(kernels.get(name), 2)
    us = near_edge(3, 2, 512, np.float64)
    want = edge_log_profile(us, kernel)
    got = np.asarray(jax.jit(lambda a, b: edge_log_profile([a, b], kernel, jnp, branch=True))(*us))
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    # the values, away from the edge (there K is rounding: log(1 − r²) of r² ≈ 1)
    inner = sum(u * u for u in us) < 0.99
    np.testing.assert_allclose(got[inner], want[inner], rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("scale", [1e-30, 1.0, 1e30])
def test_compiled_quotients_are_rounded_as_numpy_divides(dtype, scale):
    rng = np.random.default_rng(7)
    q = (rng.normal(size=300) * scale).astype(dtype)
    k = (rng.normal(size=400) * scale).astype(dtype)
    divide = jax.jit(lambda q, k, h: rounded_quotient(q[:, None] - k[None, :], h, jnp))
    for h in (0.37, 3.0, 49.0, 1e-3):
        h = np.asarray(h * scale, dtype)
        want = np.abs(q[:, None] - k[None, :]) / h
        np.testing.assert_array_equal(np.asarray(divide(q, k, h)), want)


@pytest.mark.parametrize("method", ["auto", "dense", "stream"])
@pytest.mark.parametrize("kernel", ["epanechnikov", "boxcar", "tricube"])
def test_a_key_exactly_one_bandwidth_away_is_on_the_edge_on_every_route(method, kernel):
    # 49 · fl(1/49) < 1: a product by the reciprocal put keys 49 away inside the edge
    keys = np.array([[0.0], [30.0], [98.0], [245.0]])
    values = np.array([[1.0], [2.0], [4.0], [8.0]])
    queries = np.array([[49.0], [196.0], [300.0]])  # 0 and 98 on the edge; 245; none
    got = attnpool.attention_pool(queries, keys, values, kernel=kernel, bandwidth=49.0,
                                  method=method, empty="nan")  # fmt: skip
    np.testing.assert_array_equal(np.isnan(got[:, 0]), [False, True, True])
    assert got[0, 0] == 2.0  # key 30 alone


@pytest.mark.parametrize("engine", ["dense", "stream"])
@pytest.mark.parametrize("kernel", ["epanechnikov", "boxcar", "biweight-product"])
def test_on_integer_grids_every_row_is_empty_or_not_as_numpy_says(engine, kernel):
    # keys and queries on grids, bandwidths whole multiples of the step (h·fl(1/h) < 1
    # for each of them): many pairs sit exactly on an edge, often a row's only ones, and
    # the compiled sums drop each as NumPy's do
    from attnpool.engines.compiled_backends import ENGINES
    from attnpool.sums.exact_pairs import exact_log_sums
    from attnpool.sums.problem import SumProblem

    rng = np.random.default_rng(4)
    record = kernels.for_dimensions(kernels.get(kernel), 2)
    for step, widths in [(49.0, [49.0, 49.0]), (49.0, [98.0, 49.0]), (103.0, [103.0, 206.0])]:
        keys = rng.integers(0, 12, (60, 2)) * step
        queries = rng.integers(0, 12, (200, 2)) * step
        values = rng.normal(size=(60, 1))
        problem = SumProblem(queries, keys, values, np.array(widths), record)
        want, got = exact_log_sums(problem), ENGINES[engine].log_sums(problem)
        weighs = want.sums[:, 0] > 0
        np.testing.assert_array_equal(got.sums[:, 0] > 0, weighs)
        pooled = got.sums[weighs, 1] / got.sums[weighs, 0]
        np.testing.assert_allclose(pooled, want.sums[weighs, 1] / want.sums[weighs, 0],
                                   rtol=1e-12, atol=1e-12)  # fmt: skip


@pytest.mark.parametrize("kernel", ["boxcar", "epanechnikov"])
@pytest.mark.parametrize("degree", [0, 1])
def test_compiled_local_fits_keep_the_keys_numpy_keeps(kernel, degree):
    # whole-number data and bandwidths: keys exactly one bandwidth away are outside the
    # open edges; the compiled fits once took them in from prepared coordinates (a
    # boxcar's local linear fit 0.026 off NumPy's at h = 49)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 200, (3000, 1)) * 1.0
    y = np.sin(x[:, 0] / 20) + 0.1 * rng.normal(size=3000)
    queries = np.arange(0.0, 200.0)[:, None]
    for h in (49.0, 7.0, 103.0):
        options = dict(bandwidth=h, kernel=kernel, degree=degree, empty="nan")
        numpy_fit = attnpool.local_regression(x, y, queries, **options)
        compiled = attnpool.local_regression(x, y, queries, block_size=256, **options)
        np.testing.assert_array_equal(np.isnan(compiled), np.isnan(numpy_fit))
        np.testing.assert_allclose(compiled, numpy_fit, rtol=1e-12, atol=1e-12)
