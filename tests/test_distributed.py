"""attnpool.distributed on a real distributed.LocalCluster (two worker processes, loopback)."""

import os
import signal
import time
import warnings

import dask
import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster

import attnpool
from attnpool import NadarayaWatson, attention_pool, kernels
from attnpool import distributed as dist
from attnpool.distributed import selection as dask_selection
from attnpool.distributed import tasks
from reference import float64_limit, nearest_values

# These tests share one worker (one cluster per run, and the first test runs before it exists).
pytestmark = pytest.mark.xdist_group("dask")


def test_without_a_client_dask_local_scheduler_runs_it():
    # (first in the module: the cluster fixture below makes its client the default)
    keys = da.from_array(np.linspace(0, 1, 500), chunks=100)
    pooled = dist.attention_pool(np.array([0.25, 0.5]), keys, keys, bandwidth=0.05)
    assert isinstance(pooled, da.Array)
    expected = attnpool.attention_pool(
        np.array([0.25, 0.5]), np.linspace(0, 1, 500), np.linspace(0, 1, 500), bandwidth=0.05
    )
    np.testing.assert_allclose(pooled.compute(scheduler="threads"), expected, rtol=1e-13)


def _cluster(memory_limit):
    return LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        memory_limit=memory_limit,
        dashboard_address=":0",
    )


@pytest.fixture(scope="module")
def client():
    with _cluster("2GB") as cluster, Client(cluster) as client:
        yield client


def _worker_pids(client):
    return sorted(client.run(os.getpid).values())


CASES = [
    # (d, kernel, key chunks, value chunks, query chunks)
    (1, "gaussian", 400, 400, 300),
    (1, "epanechnikov", (1000, 1, 998, 500, 500), 300, 1000),  # uneven, one single row
    (3, "gaussian", 700, 700, 128),
    (3, "laplacian", 1, 1000, 1000),  # single-row key chunks, values re-aligned
    (2, "dot", 2999, 2999, 1),  # single-row query chunks
]


@pytest.mark.parametrize(("d", "kernel", "key_chunks", "value_chunks", "query_chunks"), CASES)
def test_equal_to_the_local_path(client, d, kernel, key_chunks, value_chunks, query_chunks):
    rng = np.random.default_rng(d)
    m = 2999 if key_chunks != 1 else 60
    queries, keys = 3 * rng.normal(size=(40, d)), rng.normal(size=(m, d))
    values = rng.normal(size=(m, 3))
    with warnings.catch_warnings():  # compact kernels leave far queries empty (NaN)
        warnings.simplefilter("ignore", attnpool.EmptyNeighbourhoodWarning)
        expected = attnpool.attention_pool(queries, keys, values, kernel=kernel, bandwidth=0.6)
    result = dist.attention_pool(
        da.from_array(queries, chunks=(query_chunks, d)),
        da.from_array(keys, chunks=(key_chunks, d)),
        da.from_array(values, chunks=(value_chunks, 3)),
        kernel=kernel,
        bandwidth=0.6,
        split_every=3,
    ).compute()
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-13)
    assert np.array_equal(np.isnan(result), np.isnan(expected))  # empty queries stay NaN
    if kernel == "epanechnikov":
        assert np.isnan(result).any()


def test_vector_values_one_dimensional_inputs_and_laziness(client):
    keys = np.linspace(-2, 2, 5000)
    values = np.column_stack([np.sin(keys), keys**2])
    pooled = dist.attention_pool(np.linspace(-1, 1, 7), keys, values, bandwidth=0.1, chunk_rows=900)
    assert isinstance(pooled, da.Array) and pooled.shape == (7, 2)
    total = (2 * pooled).sum().compute()  # composes with the rest of a Dask pipeline
    expected = attnpool.attention_pool(np.linspace(-1, 1, 7), keys, values, bandwidth=0.1)
    assert total == pytest.approx(2 * expected.sum(), rel=1e-12)
    flat = dist.attention_pool([0.0], keys, np.sin(keys), bandwidth=0.1).compute()
    assert flat.shape == (1,)


def test_a_killed_worker_loses_nothing(client):
    rng = np.random.default_rng(7)
    # (~1.8 s on two workers here: long enough to be killed while running)
    keys, values = rng.normal(size=(400_000, 1)), rng.normal(size=(400_000, 1))
    queries = rng.normal(size=(400, 1))
    expected = attnpool.attention_pool(queries, keys, values, bandwidth=0.3)
    before = _worker_pids(client)
    lazy = dist.attention_pool(queries, keys, values, bandwidth=0.3, chunk_rows=2_000)
    future = client.compute(lazy)
    deadline = time.monotonic() + 60
    while not client.processing() or not any(client.processing().values()):
        assert time.monotonic() < deadline, "the computation never started"
        time.sleep(0.05)
    time.sleep(0.5)  # some tasks done, some running
    assert not future.done()
    os.kill(before[0], signal.SIGKILL)
    result = future.result(timeout=300)
    np.testing.assert_allclose(result, expected, rtol=1e-12)
    client.wait_for_workers(2, timeout=60)
    assert before[0] not in _worker_pids(client)  # the worker really died and was replaced


def test_zarr_keys_larger_than_the_workers_memory(tmp_path):
    """1 GB of float64 keys in a Zarr store, twice what a worker may use (500 MB, of which
    JAX itself takes about 300 MB), so the store is pooled chunk by chunk."""
    m = 125_000_000
    store = str(tmp_path / "keys.zarr")
    da.linspace(0.0, 1.0, m, chunks=500_000).to_zarr(store)
    keys = da.from_zarr(store)
    assert keys.nbytes >= 2 * 500e6
    queries = np.array([0.3, 0.7])
    # no pausing at 80%: a paused worker would wait for memory that JAX never gives back
    with (
        dask.config.set({"distributed.worker.memory.pause": False}),
        _cluster("500MB") as cluster,
        Client(cluster) as small,
    ):
        before = _worker_pids(small)
        pooled = dist.attention_pool(queries, keys, keys, bandwidth=1e-3).compute()
        assert _worker_pids(small) == before  # no worker was killed for memory
    # keys on an even grid pooled with a symmetric kernel: the mean of the keys is the query
    np.testing.assert_allclose(pooled, queries, atol=1e-12)


def test_bad_inputs_give_clear_errors(client):
    keys = da.ones((100, 2), chunks=10)
    with pytest.raises(ValueError, match=r"values: expected one row per key \(100 rows\)"):
        dist.attention_pool(np.ones((3, 2)), keys, da.ones(99, chunks=10))
    with pytest.raises(ValueError, match="queries: expected 2 feature column"):
        dist.attention_pool(np.ones((3, 3)), keys, da.ones(100, chunks=10))
    unknown = da.ones((100, 2), chunks=10)[da.ones(100, chunks=10) > 0]
    with pytest.raises(ValueError, match="keys: the chunk sizes are unknown"):
        dist.attention_pool(np.ones((3, 2)), unknown, np.ones(100))
    with pytest.raises(ValueError, match="bandwidth: with Dask inputs expected 'cv' or numbers"):
        NadarayaWatson(bandwidth="scott").fit(keys, da.ones(100, chunks=10))
    with pytest.raises(ValueError, match="Dask inputs are supported by NadarayaWatson"):
        attnpool.LocalLinear(bandwidth=1.0).fit(keys, da.ones(100, chunks=10))
    spread = da.from_array(np.random.default_rng(0).normal(size=(100, 2)), chunks=(25, 2))
    with pytest.raises(ValueError, match=r"^kernel: rules of thumb need a kernel with finite"):
        dask_selection.select_bandwidth(spread, da.ones(100, chunks=25), kernel="gaussian-order4")


def test_a_client_that_is_not_running_is_a_clear_error():
    cluster = LocalCluster(n_workers=1, processes=False, dashboard_address=":0")
    stale = Client(cluster, set_as_default=False)
    cluster.close()
    stale.close()
    with dask.config.set(scheduler=stale):  # a closed client left in Dask's config
        with pytest.raises(ValueError, match=r"client: the distributed\.Client Dask would use"):
            dist.attention_pool([0.0], np.ones(10), np.ones(10))


@pytest.mark.parametrize("shift, bandwidth", [(0.0, 1e-200), (1.7e9, 1e-300)])
def test_tiny_bandwidths_take_the_nearest_keys_across_chunks(client, shift, bandwidth):
    """Where the scaled distances overflow, every chunk keeps its nearest keys in one
    unit: the result is the brute-force nearest-key mean, ties across chunks averaged."""
    rng = np.random.default_rng(11)
    keys = rng.integers(0, 6, (400, 2)).astype(float) + shift  # ties, in several chunks
    values = rng.normal(size=(400, 2))
    queries = np.concatenate([rng.uniform(0, 5, (6, 2)), keys[:3] + 0.25]) + shift
    got = dist.attention_pool(queries, da.from_array(keys, 100), values, bandwidth=bandwidth)
    want = nearest_values(queries, keys, values)
    np.testing.assert_allclose(got.compute(), want, rtol=1e-12)
    local = attention_pool(queries, keys, values, bandwidth=bandwidth)
    np.testing.assert_allclose(got.compute(), local, rtol=1e-12)


def test_hostile_inputs_raise_instead_of_silent_nan(client):
    rng = np.random.default_rng(5)
    keys = rng.uniform(size=(400, 2))
    values = rng.normal(size=400)
    queries = rng.uniform(size=(5, 2))
    # the dot score's overflow has no nearest-key state on Dask: a clear error, never NaN
    with pytest.raises(ValueError, match=r"bandwidth: \[1e-300, 1e-300\] is too small for Dask"):
        dist.attention_pool(
            queries * 1e10, da.from_array(keys * 1e10, 100), values, kernel="dot", bandwidth=1e-300
        ).compute()
    with_nan = keys.copy()
    with_nan[123, 1] = np.nan
    with pytest.raises(ValueError, match="keys: expected finite numbers; a chunk of 100 rows"):
        dist.attention_pool(queries, da.from_array(with_nan, 100), values).compute()
    with pytest.raises(ValueError, match="values: expected finite numbers"):
        dist.attention_pool(
            queries, keys, da.from_array(np.where(values > 2, np.inf, values), 100)
        ).compute()
    for dtype in (bool, complex):
        with pytest.raises(TypeError, match=f"keys: expected a numeric .* dtype {np.dtype(dtype)}"):
            dist.attention_pool(queries, da.from_array(keys.astype(dtype), 100), values)
    # estimators: NaN in y once gave cv_score_ = inf, NaN in X "constant column"
    x, y = da.from_array(keys[:, :1], 100), da.from_array(values, 100)
    with pytest.raises(ValueError, match="y: expected finite numbers"):
        NadarayaWatson().fit(x, da.from_array(np.where(values > 2, np.nan, values), 100))
    with pytest.raises(ValueError, match=r"x: column\(s\) \[0\] hold NaN"):
        NadarayaWatson().fit(da.from_array(with_nan[:, 1:], 100), y)
    assert np.isfinite(NadarayaWatson().fit(x, y).cv_score_)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_observation_weights_on_the_cluster(client, kernel):
    # integer weights (a whole chunk of zeros among them) pool as the repeated keys do
    rng = np.random.default_rng(31)
    queries, keys, values = (
        rng.normal(size=(50, 2)),
        rng.normal(size=(900, 2)),
        rng.normal(size=900),
    )
    weights = rng.integers(0, 4, 900).astype(float)
    weights[:300] = 0
    repeated = np.repeat(np.arange(900), weights.astype(int))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", attnpool.EmptyNeighbourhoodWarning)
        expected = attnpool.attention_pool(
            queries, keys[repeated], values[repeated], kernel=kernel, bandwidth=0.4
        )
    result = dist.attention_pool(
        queries, da.from_array(keys, chunks=(300, 2)), values, kernel=kernel, bandwidth=0.4,
        weights=da.from_array(weights, chunks=300),
    ).compute()  # fmt: skip
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-14)
    at_the_limit = dist.attention_pool(queries, keys, values, bandwidth=1e-200, weights=weights)
    np.testing.assert_allclose(
        at_the_limit.compute(),
        attnpool.attention_pool(queries, keys, values, bandwidth=1e-200, weights=weights),
        rtol=1e-13,
    )
    for bad, message in ((-weights, "non-negative"), (0 * weights, "some positive weight")):
        with pytest.raises(ValueError, match=f"weights: expected {message}"):
            dist.attention_pool(queries, keys, values, bandwidth=0.4, weights=bad).compute()
    # values of 2⁻¹⁰⁰⁰ times weights of 2⁻²⁵⁰ once underflowed to 0 in [w, w·v]
    wide = 2.0 ** rng.uniform(-250, 250, 900)
    chunked = da.from_array(keys, chunks=(300, 2))
    for scale in (2.0**-1000, 2.0**1000):
        tiny = dist.attention_pool(queries, chunked, values * scale, kernel=kernel,
                                   bandwidth=0.4, weights=wide).compute()  # fmt: skip
        local = attnpool.attention_pool(queries, keys, values * scale, kernel=kernel,
                                        bandwidth=0.4, weights=wide, empty="nan")  # fmt: skip
        np.testing.assert_allclose(tiny / scale, local / scale, rtol=1e-11, atol=1e-13)
    # weights at the float range's ends: w·v overflowed (a misleading "not finite" error,
    # or "only zeros"), and subnormal weights lost the whole pool to NaN
    positive = rng.uniform(0.5, 2.0, 900)
    for scale in (2.0**-1070, 2.0**1022):
        extreme = dist.attention_pool(queries, chunked, values, kernel=kernel, bandwidth=0.4,
                                      weights=positive * scale).compute()  # fmt: skip
        local = attnpool.attention_pool(queries, keys, values, kernel=kernel, bandwidth=0.4,
                                        weights=positive * scale, empty="nan")  # fmt: skip
        np.testing.assert_allclose(extreme, local, rtol=1e-11, atol=1e-13)


def test_a_chunk_is_the_layers_exact_sums_each_query_leaving_its_own_key_out():
    rng = np.random.default_rng(4)
    x, gaussian = rng.normal(size=(300, 1)), kernels.get("gaussian")
    values = np.stack([np.sin(3 * x[:, 0]), x[:, 0] ** 2], axis=1)
    bandwidths = np.array([[0.3], [0.8]])
    query_ids = np.arange(100, 200)  # their own keys: in either key chunk
    states = [
        tasks.host_states(
            x[query_ids], x[a:b], values[a:b], bandwidths, gaussian, (query_ids, np.arange(a, b))
        )
        for a, b in ((0, 150), (150, 300))
    ]
    merged = tasks.combine(np.stack(states, axis=1), axis=(1,), keepdims=True)
    pooled = tasks.finish_states(merged)  # (n, K, p)
    for c, h in enumerate(bandwidths[:, 0]):
        weights = np.exp(-0.5 * ((x[query_ids] - x[:, 0][None, :]) / h) ** 2)
        weights[np.arange(100), query_ids] = 0.0  # leave-one-out, written out
        want = weights @ values / weights.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(pooled[:, c], want, rtol=1e-12)
    # a row no key of the chunk reaches is the empty state, m = −inf (a merge keeps the rest)
    far = tasks.host_states(np.array([[50.0]]), x, values, bandwidths, kernels.get("epanechnikov"))
    assert np.all(far[..., 0] == -np.inf) and np.all(far[..., 1:] == 0)


@pytest.mark.parametrize("exponent", [-600, 0, 600])
def test_the_nearest_keys_of_near_far_and_tiny_queries_in_one_chunk(client, exponent):
    """Each row in its own unit: a chunk's one unit, set by its far query, flushed the
    near queries' differences to 0 (the mean of every key), and the centre of a chunk
    with a far query took their digits. At 2^-400 the near rows' log weights are about
    −2^795: each key chunk's state kept its tied keys' count in its shift, which
    rounded it away, and the merge weighed the chunks' ties alike."""
    rng = np.random.default_rng(3)
    scale = 2.0**exponent
    keys = rng.integers(-6, 7, (300, 2)) * scale  # integer grids: exact ties
    values = rng.normal(size=(300, 2))
    near = (rng.integers(-6, 7, (5, 2)) + 0.25) * scale
    odd = np.array([[2.0**400, 0.0], [2.0**-300, 0.0], [0.0, 0.0]]) * scale
    queries = np.concatenate([near, odd])
    bandwidth = scale * 2.0**-400  # the far and near rows' distances beyond the float range
    got = dist.attention_pool(da.from_array(queries, 8), da.from_array(keys, 100), values,
                              bandwidth=bandwidth).compute()  # fmt: skip
    np.testing.assert_allclose(got, float64_limit(queries, keys, values), rtol=1e-13)
    local = attention_pool(queries, keys, values, bandwidth=bandwidth)
    np.testing.assert_allclose(got, local, rtol=1e-13)
