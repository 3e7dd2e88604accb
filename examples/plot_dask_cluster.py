"""
Pooling over Dask on a local cluster
====================================

Keys and values that do not fit one machine are Dask arrays chunked along rows (in
memory, or in a Zarr store). Each (query chunk, key chunk) task returns a log-domain
pooling state, and a tree reduction merges them exactly — the result equals the
one-machine sum to rounding. Here two worker processes on this machine stand in for a
cluster.
"""

import dask.array as da
import numpy as np
from dask.distributed import Client, LocalCluster

import attnpool
from attnpool import distributed
from attnpool.plotting import plot_fit

cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
client = Client(cluster)

rng = np.random.default_rng(0)
x = rng.uniform(0, 5, 200_000)
y = 2 * np.sin(x) + x + rng.normal(0, 0.5, x.size)
keys = da.from_array(x, chunks=25_000)
values = da.from_array(y, chunks=25_000)
queries = np.linspace(0, 5, 500)

# %%
# The pooled values are a lazy Dask array; ``compute`` runs the tasks on the workers.
pooled = distributed.attention_pool(queries, keys, values, bandwidth=0.05)
print(pooled)
result = pooled.compute()
local = attnpool.attention_pool(queries, x, y, bandwidth=0.05)
print(f"largest difference from the one-machine result: {np.max(np.abs(result - local)):.1e}")

# %%
# The estimators take Dask arrays too: leave-one-out CV over the sharded training set
# (each point's own pair masked by its global row number), then predictions as a Dask
# array.
model = attnpool.NadarayaWatson().fit(keys[:5_000, None].rechunk((1_250, 1)), values[:5_000])
print(f"bandwidth {model.bandwidth_[0]:.4f}, CV score {model.cv_score_:.4f}")
fitted = model.predict(da.from_array(queries[:, None], chunks=(250, 1))).compute()

# %%
# The sharded pool, the one-machine pool and the cross-validated fit over a sample of
# the data:
plot_fit(
    x[:2_000],
    y[:2_000],
    queries,
    {
        "Dask, h = 0.05": result,
        "one machine, h = 0.05": local,
        f"Dask CV, h = {model.bandwidth_[0]:.3f}": fitted,
    },
    truth=attnpool.datasets.sine_truth(queries),
    title="200,000 keys in 8 chunks on two workers",
)

client.close()
cluster.close()
