"""The tiled Pallas kernel (``method="pallas"``): run here in Pallas' interpret mode, held
to the textbook formula in float64, and lowered for a GPU to check that Triton takes it.

The GPU-only parts — the Triton-compiled kernel's numbers and speed — are measured by
``benchmarks/gpu_checks.sh`` on a GPU; here the same program is interpreted, and its
lowering for CUDA (Triton's custom call) is built without a GPU.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnpool import attention_pool, kernels
from attnpool.methods import pallas
from attnpool.methods.choice import choose_method
from attnpool.methods.pallas_kernel import KEY_TILE, QUERY_TILE
from reference import COMPACT_KERNELS, DISTANCE_KERNELS, reference_pool

KERNELS = [*DISTANCE_KERNELS, "dot", "epanechnikov-product", "triangular-product"]


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


def data(seed, n, m, d, p=2, spread=4.0):
    rng = np.random.default_rng(seed)
    keys = rng.uniform(0, spread, (m, d))
    queries = rng.uniform(-0.5, spread + 0.5, (n, d))
    values = np.stack([np.sin(keys).sum(1), keys[:, 0] ** 2, rng.normal(size=m)][:p], axis=1)
    return queries, keys, values


def product_reference(queries, keys, values, kernel, bandwidth):
    """Product kernels: the one-dimensional kernel in each coordinate, multiplied."""
    from reference import KERNEL_VALUES

    one = KERNEL_VALUES[kernel.removesuffix("-product")]
    weights = np.prod(one(np.abs(queries[:, None, :] - keys[None, :, :]) / bandwidth), axis=-1)
    with np.errstate(invalid="ignore"):
        return (weights / weights.sum(1, keepdims=True)) @ values


def textbook(queries, keys, values, kernel, bandwidth):
    if kernel.endswith("-product"):
        return product_reference(queries, keys, values, kernel, bandwidth)
    return reference_pool(queries, keys, values, kernel, bandwidth)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("d", [1, 3])
def test_pallas_equals_the_textbook_formula_in_float64(x64, kernel, d):
    # sizes that are no multiple of the tiles: the last query and key tiles are padded
    queries, keys, values = data(d, n=QUERY_TILE + 7, m=3 * KEY_TILE + 5, d=d)
    h = 0.9 if kernel != "dot" else 4.0
    got = attention_pool(queries, keys, values, kernel=kernel, bandwidth=h, method="pallas",
                         empty="nan")  # fmt: skip
    want = textbook(queries, keys, values, kernel, h)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(values).max())


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_pallas_in_float32_is_within_float32_rounding(kernel):
    queries, keys, values = data(3, n=150, m=900, d=8, p=3, spread=2.0)
    got = attention_pool(
        queries.astype(np.float32), keys.astype(np.float32), values.astype(np.float32),
        kernel=kernel, bandwidth=1.5, method="pallas", empty="nan",
    )  # fmt: skip
    assert got.dtype == np.float32
    want = textbook(queries, keys, values, kernel, 1.5)
    finite = np.isfinite(want)
    error = np.abs(np.asarray(got, np.float64) - want)[finite]
    assert error.max() <= 1e-5 * np.ptp(values)


def test_compact_kernels_walk_only_the_key_tiles_within_reach(x64):
    # sorted keys: the first and last tiles of each query tile cover every key whose
    # first coordinate is within the support, and far fewer than all tiles
    rng = np.random.default_rng(4)
    keys = np.sort(rng.uniform(0, 100, 40 * KEY_TILE))
    queries = np.sort(rng.uniform(0, 100, 8 * QUERY_TILE))
    h = 0.5
    first, last = pallas.tile_range(jnp.asarray(queries), jnp.asarray(keys), h, KEY_TILE)
    first, last = np.asarray(first), np.asarray(last)
    for tile, (start, stop) in enumerate(zip(first, last, strict=True)):
        rows = queries[tile * QUERY_TILE : (tile + 1) * QUERY_TILE]
        inside = np.flatnonzero(np.abs(rows[:, None] - keys[None, :]).min(0) <= h)
        assert start * KEY_TILE <= inside.min() and inside.max() < stop * KEY_TILE
    assert np.mean(last - first) < 40 / 4


@pytest.mark.parametrize("kernel", COMPACT_KERNELS)
def test_keys_on_the_support_edge_count_as_in_the_dense_method(x64, kernel):
    # an integer grid at bandwidth 1: keys exactly on the edge, decided as everywhere else
    grid = np.arange(-3.0, 4.0)
    keys = np.stack(np.meshgrid(grid, grid), -1).reshape(-1, 2)
    keys = np.concatenate([keys] * 4)
    values = np.arange(keys.shape[0], dtype=float)
    queries = keys[::3] + np.array([0.0, 0.0])
    dense = attention_pool(queries, keys, values, kernel=kernel, bandwidth=1.0, method="dense")
    got = attention_pool(queries, keys, values, kernel=kernel, bandwidth=1.0, method="pallas")
    np.testing.assert_allclose(got, dense, rtol=1e-13)


def test_valid_lengths_mask_each_querys_keys(x64):
    queries, keys, values = data(5, n=90, m=300, d=2)
    lengths = np.random.default_rng(5).integers(1, 300, 90)
    got = attention_pool(queries, keys, values, bandwidth=0.7, method="pallas", mask=lengths)
    for row, length in enumerate(lengths[:20]):
        want = reference_pool(queries[row : row + 1], keys[:length], values[:length],
                              "gaussian", 0.7)  # fmt: skip
        np.testing.assert_allclose(got[row], want[0], rtol=1e-12)


def test_a_mask_matrix_is_pooled_exactly_too(x64):
    queries, keys, values = data(6, n=40, m=200, d=2)
    allowed = np.random.default_rng(6).random((40, 200)) < 0.3
    got = attention_pool(queries, keys, values, bandwidth=0.7, method="pallas", mask=allowed)
    want = attention_pool(queries, keys, values, bandwidth=0.7, method="dense", mask=allowed)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("empty", ["nan", "nearest"])
def test_empty_rows_and_vanishing_bandwidths_take_the_common_policy(x64, empty):
    queries, keys, values = data(7, n=70, m=200, d=2)
    queries[:5] += 50.0  # beyond every key's support
    got = attention_pool(queries, keys, values, kernel="epanechnikov", bandwidth=0.5,
                         method="pallas", empty=empty)  # fmt: skip
    want = attention_pool(queries, keys, values, kernel="epanechnikov", bandwidth=0.5,
                          method="dense", empty=empty)  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.isnan(got[:5]).all() == (empty == "nan")
    tiny = attention_pool(queries, keys, values, bandwidth=1e-200, method="pallas")
    np.testing.assert_allclose(tiny, attention_pool(queries, keys, values, bandwidth=1e-200,
                                                    method="dense"))  # fmt: skip


def test_far_rows_keep_their_weight_by_the_running_maximum():
    # float32 rows thousands of bandwidths from every key: each row's own maximum shift
    queries, keys, values = data(8, n=64, m=256, d=3)
    far = (queries + 300.0).astype(np.float32)
    got = attention_pool(far, keys.astype(np.float32), values.astype(np.float32),
                         bandwidth=0.2, method="pallas")  # fmt: skip
    assert np.all(np.isfinite(got))
    want = attention_pool(far.astype(np.float64), keys, values, bandwidth=0.2, method="dense")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.ptp(values))


@pytest.mark.parametrize("kernel", ["gaussian", "tricube", "dot"])
def test_gradients_equal_finite_differences_and_the_dense_method(x64, kernel):
    queries, keys, values = (jnp.asarray(a) for a in data(9, n=70, m=150, d=2, p=1))

    def loss(method, q, k, v, h):
        pooled = attention_pool(q, k, v, kernel=kernel, bandwidth=h, method=method)
        return jnp.sum(jnp.where(jnp.isfinite(pooled), pooled, 0.0) ** 2)

    h = jnp.asarray(1.3)
    got = jax.grad(lambda *a: loss("pallas", *a), argnums=(0, 1, 2, 3))(queries, keys, values, h)
    want = jax.grad(lambda *a: loss("dense", *a), argnums=(0, 1, 2, 3))(queries, keys, values, h)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11)
    step = 1e-6
    difference = (loss("pallas", queries, keys, values, h + step)
                  - loss("pallas", queries, keys, values, h - step)) / (2 * step)  # fmt: skip
    np.testing.assert_allclose(got[3], difference, rtol=1e-6)


def test_pallas_runs_under_jit_and_vmap(x64):
    queries, keys, values = (jnp.asarray(a) for a in data(10, n=40, m=130, d=2))
    bandwidths = jnp.asarray([0.4, 0.8, 1.6])
    pool = jax.jit(jax.vmap(lambda h: attention_pool(queries, keys, values, bandwidth=h,
                                                     method="pallas")))  # fmt: skip
    got = pool(bandwidths)
    for h, row in zip(np.asarray(bandwidths), got, strict=True):
        np.testing.assert_allclose(row, reference_pool(queries, keys, values, "gaussian", h),
                                   rtol=1e-12)  # fmt: skip


def test_auto_chooses_pallas_on_a_gpu_only():
    q = np.zeros((3000, 3))
    choose = lambda kernel, **kw: choose_method(  # noqa: E731
        kernels.get(kernel), q, q, np.ones(3), weights=False, **kw
    )
    assert choose("gaussian", traced=False, backend="gpu") == "pallas"
    assert choose("laplacian", traced=True, backend="gpu") == "pallas"
    assert choose("gaussian", traced=True, backend="cpu") == "stream"
    assert pallas.refusal(kernels.get("gaussian-order4"), 1)
    # Pallas' interpreter on a CPU, Triton on a GPU
    assert pallas.interpreted() == (jax.default_backend() not in pallas.GPU_BACKENDS)


def _lowered_for_cuda(function, *arguments) -> str:
    lowered = jax.jit(function).trace(*arguments).lower(lowering_platforms=("cuda",))
    return lowered.as_text()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "kernel", ["gaussian", "epanechnikov", "dot", "biweight-product", "laplacian-l1.5"]
)
def test_the_kernel_lowers_to_triton_for_a_gpu(kernel, dtype):
    # the GPU's program is built here without a GPU: Pallas lowers the kernel to Triton
    # (its custom call), gradients included; the interpreter's program is not in it
    if kernel.endswith("-l1.5"):  # a Minkowski norm: powers of absolute differences
        kernel = kernels.with_norm(kernels.get("laplacian"), 1.5)
    with jax.enable_x64(dtype == np.float64):
        q, k, v = (jnp.asarray(a, dtype) for a in data(11, n=100, m=200, d=3))

        def loss(q, k, v, h):
            pooled = attention_pool(q, k, v, kernel=kernel, bandwidth=h, method="pallas")
            return jnp.sum(jnp.where(jnp.isnan(pooled), 0.0, pooled))

        text = _lowered_for_cuda(jax.grad(loss, argnums=(0, 1, 2, 3)), q, k, v, dtype(0.8))
    assert "__gpu$xla.gpu.triton" in text
    for kernel_name in ("tile_sums", "tile_query_cotangents", "tile_key_cotangents"):
        assert f"attnpool_{kernel_name}" in text


def test_leave_one_out_moments_and_their_gradient_lower_to_triton_for_a_gpu():
    from attnpool.engines.local_fits import loo_residuals
    from attnpool.sums.local_model import model_for

    _, x, y = data(12, n=1, m=300, d=2, p=1)
    model = model_for(x, kernel="epanechnikov", degree=1)
    text = _lowered_for_cuda(
        jax.grad(lambda x, y, h: jnp.sum(loo_residuals(x, y, h, model, engine="pallas") ** 2),
                 argnums=(0, 2)),
        jnp.asarray(x, np.float32), jnp.asarray(y, np.float32), jnp.ones(2, np.float32),
    )  # fmt: skip
    assert "__gpu$xla.gpu.triton" in text
    assert "attnpool_tile_key_cotangents" in text
