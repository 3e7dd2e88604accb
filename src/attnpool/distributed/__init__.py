"""Attention pooling and bandwidth selection on Dask: the pooling state, tree-reduced.

Keys and values are Dask arrays chunked along rows (from memory, or from a Zarr store
with :func:`dask.array.from_zarr`); queries are NumPy or Dask arrays chunked along rows.
For every pair (query chunk ``i``, key chunk ``j``) one task computes the log-domain
pooling state ``(m, s, t)`` of :mod:`attnpool.sums.state` with the local engines; a
:func:`dask.array.reduction` then merges the states of all key chunks of a query chunk
by a tree of log-sum-exp combines (``split_every`` states per combine) — the exact
merge, not an approximation — and the last step divides ``t / s``. The result is a lazy
Dask array; it runs on whatever ``distributed.Client`` is active, or on Dask's local
scheduler when there is none.

Cost and memory: a task holds one query chunk, one key chunk and its ``(n_i, p + 2)``
state, and streams the pairs in blocks inside (so a task's memory does not grow with
``n_i · m_j``). A combine holds ``split_every`` states of one query chunk. The work is
``n · m`` kernel evaluations, split into ``I · J`` independent tasks.

>>> import numpy as np, dask.array as da
>>> keys = da.from_array(np.linspace(0, 1, 1000), chunks=250)
>>> pooled = attention_pool(np.array([0.5]), keys, keys, bandwidth=0.05)
>>> pooled.compute().round(6)
array([0.5])
"""

from __future__ import annotations

import sys
from functools import partial
from typing import Any

import numpy as np

from .. import kernels as _kernels
from .._support.hints import ArrayLike, Bandwidth, KernelSpec
from .._support.optional import require
from .._support.validation import check_bandwidth, check_numeric_dtype, check_positive_int
from ..sums.observation_weights import dask_augmented
from .tasks import ChunkTask, combine, finish_states, identity, state_task

dask = require("dask", "Dask support (attnpool.distributed)")
import dask.array as da  # noqa: E402
from dask.base import is_dask_collection  # noqa: E402

__all__ = ["attention_pool", "finish_states", "merged_states"]

#: rows per chunk when a NumPy array is turned into a Dask array
DEFAULT_ROWS = 100_000


def is_dask(*arrays: Any) -> bool:
    """True when any argument is a Dask collection."""
    return any(is_dask_collection(a) for a in arrays)


def as_rows(x: Any, name: str, chunk_rows: int | None = None) -> da.Array:
    """``x`` as a Dask array ``(n, d)``, chunked along rows only."""
    if not is_dask_collection(x):
        x = np.asarray(x)
        check_numeric_dtype(x.dtype, name)
        x = da.from_array(x, chunks=(chunk_rows or DEFAULT_ROWS, *x.shape[1:]))
    if not isinstance(x, da.Array):
        raise TypeError(f"{name}: expected a Dask or NumPy array; received {type(x).__name__}")
    check_numeric_dtype(x.dtype, name)
    if x.ndim not in (1, 2):
        raise ValueError(f"{name}: expected shape (n,) or (n, d); received shape {x.shape}")
    if any(np.isnan(c) for c in x.chunks[0]):
        raise ValueError(
            f"{name}: the chunk sizes are unknown (NaN); call .compute_chunk_sizes() first"
        )
    if x.ndim == 1:
        x = x[:, None]
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name}: expected at least one row and one column; received {x.shape}")
    rows: da.Array = x.rechunk({1: -1})
    return rows


def _aligned(keys: da.Array, values: da.Array, name: str) -> da.Array:
    """Values chunked like the keys' rows (re-aligned when they differ)."""
    if values.shape[0] != keys.shape[0]:
        raise ValueError(
            f"{name}: expected one row per key ({keys.shape[0]} rows); "
            f"received shape {values.shape}"
        )
    if values.chunks[0] != keys.chunks[0]:
        values = values.rechunk({0: keys.chunks[0]})
    return values


def _check_client() -> None:
    """The client Dask will use — the default one, or one set as ``scheduler`` in Dask's
    config — must be running; with none, Dask's local scheduler runs the graph."""
    if sys.modules.get("distributed") is None:
        return
    from distributed import Client, default_client

    candidates = []
    configured = dask.config.get("scheduler", None)
    if isinstance(configured, Client):
        candidates.append(configured)
    try:
        candidates.append(default_client())
    except ValueError:  # no default client
        pass
    for client in candidates:
        if client.status != "running":
            raise ValueError(
                f"client: the distributed.Client Dask would use is {client.status!r}, not "
                "'running'; reconnect it, or unset it to use Dask's local scheduler"
            )


def merged_states(
    queries: da.Array,
    keys: da.Array,
    values: da.Array,
    bandwidths: np.ndarray,
    kernel: _kernels.Kernel,
    leave_one_out: bool,
    split_every: int | None,
    names: tuple[str, str, str],
    nearest: bool = False,
    weighted: bool = False,
) -> da.Array:
    """The merged states, lazily: ``(n, 1, K, p + 2)`` (twice ``p + 2`` with ``nearest``);
    ``weighted``: the values are ``[w, w·v]`` (see :func:`state_task`).

    Each task computes the log-domain state of one query chunk over one key chunk; the
    states of a query chunk are merged along the keys by a tree reduction
    (``split_every`` at a time). ``bandwidths (K, d)``: ``K`` bandwidths at once.

    Parameters
    ----------
    queries, keys, values : dask.array.Array
        ``(n, d)``, ``(m, d)``, ``(m, p)``, keys and values chunked alike.
    bandwidths : ndarray of shape (K, d)
    kernel : Kernel
    leave_one_out : bool
        Query ``i`` is key ``i``, left out of its own sums.
    split_every : int or None
    names : (str, str, str)
        The three arrays' names in messages.
    nearest : bool
        Also keep each row's nearest keys (the nearest-key limit).
    weighted : bool

    Returns
    -------
    dask.array.Array

    Examples
    --------
    >>> import numpy as np, dask.array as da, attnpool
    >>> from attnpool import distributed, kernels
    >>> q = da.from_array(np.linspace(0, 1, 4)[:, None], chunks=2)     # 2 query chunks
    >>> k = da.from_array(np.linspace(0, 1, 6)[:, None], chunks=3)     # 2 key chunks
    >>> v = da.from_array(np.arange(6.0)[:, None], chunks=3)
    >>> states = distributed.merged_states(q, k, v, np.array([[0.5]]), kernels.get("gaussian"),
    ...                                    False, None, ("queries", "keys", "values"))
    >>> states.shape, states.chunks[0]            # lazy: one merged state per query chunk
    ((4, 1, 1, 3), (2, 2))
    >>> distributed.finish_states(states.compute())[:, 0, 0].round(4)
    array([1.5846, 2.1768, 2.8232, 3.4154])

    References
    ----------
    Milakov, M. & Gimelshein, N. (2018). Online normalizer calculation for softmax.
    arXiv:1805.02867 (the mergeable state). Rocklin, M. (2015). Dask: parallel
    computation with blocked algorithms and task scheduling. *Proceedings of the 14th
    Python in Science Conference*, 130–136.
    """
    n_bandwidths, p = bandwidths.shape[0], values.shape[1]
    dtype = np.result_type(queries.dtype, keys.dtype, values.dtype, np.float32)
    arrays = [queries, "ia", keys, "ja", values, "jb"]
    if leave_one_out:  # global row numbers, to mask each point's own pair
        query_ids = da.arange(queries.shape[0], chunks=queries.chunks[0])[:, None]
        key_ids = da.arange(keys.shape[0], chunks=keys.chunks[0])[:, None]
        # (query i is key i: its values, to leave out the keys identical to it)
        query_values = values.rechunk({0: queries.chunks[0]})
        arrays += [query_ids, "iz", key_ids, "jz", query_values, "ib"]
    task = partial(state_task, bandwidths=bandwidths,
                   task=ChunkTask(kernel, names, leave_one_out, nearest, weighted))  # fmt: skip
    states = da.blockwise(
        task,
        "ijcs",
        *arrays,
        new_axes={"c": n_bandwidths, "s": (p + 2) * (2 if nearest else 1)},
        adjust_chunks={"j": 1},
        concatenate=True,
        dtype=dtype,
        meta=np.empty((0, 0, 0, 0), dtype),
    )
    merge = partial(combine, nearest=nearest)
    merged: da.Array = da.reduction(
        states,
        chunk=identity,
        combine=merge,
        aggregate=merge,
        axis=1,
        keepdims=True,
        split_every=split_every,
        concatenate=True,
        dtype=dtype,
        meta=np.empty((0, 0, 0, 0), dtype),
        name="attnpool-merge",
    )
    return merged


def prepare_arrays(
    queries: ArrayLike,
    keys: ArrayLike,
    values: ArrayLike,
    bandwidth: Bandwidth,
    kernel: KernelSpec,
    chunk_rows: int | None,
    names: tuple[str, str, str] = ("queries", "keys", "values"),
) -> tuple[da.Array, da.Array, da.Array, np.ndarray, _kernels.Kernel, bool]:
    """Checked inputs of a Dask pooling: ``(queries, keys, values, h, kernel record,
    flat)`` — the arrays as Dask arrays chunked along rows (``values (m, p)``; ``flat``:
    given as ``(m,)``), ``h (d,)``; errors name the arguments by ``names``."""
    _check_client()
    keys = as_rows(keys, names[1], chunk_rows)
    record = _kernels.for_dimensions(_kernels.get(kernel), keys.shape[1])
    queries = as_rows(queries, names[0], chunk_rows)
    if queries.shape[1] != keys.shape[1]:
        raise ValueError(
            f"queries: expected {keys.shape[1]} feature column(s) to match the keys; "
            f"received shape {queries.shape}"
        )
    flat = values is not None and getattr(values, "ndim", np.ndim(values)) == 1
    values = _aligned(keys, as_rows(values, names[2], chunk_rows), names[2])
    h = np.asarray(check_bandwidth(bandwidth, keys.shape[1]), dtype=float)
    return queries, keys, values, h, record, flat


def attention_pool(
    queries: ArrayLike,
    keys: ArrayLike,
    values: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    bandwidth: Bandwidth = 1.0,
    split_every: int | None = None,
    chunk_rows: int | None = None,
    weights: ArrayLike | None = None,
) -> da.Array:
    """Attention pooling with Dask: a lazy ``(n,)`` or ``(n, p)`` Dask array.

    Parameters
    ----------
    queries : array (n,) or (n, d), NumPy or Dask (chunked along rows)
    keys : array (m,) or (m, d), NumPy or Dask (chunked along rows)
    values : array (m,) or (m, p); re-chunked to the keys' row chunks if they differ
    kernel, bandwidth : as :func:`attnpool.attention_pool`
    split_every : int, optional
        States merged per combine task (Dask's default: 4)
    chunk_rows : int, optional
        Rows per chunk for NumPy inputs
    weights : array (m,), optional
        The keys' observation weights (NumPy or Dask), as
        :func:`attnpool.attention_pool` takes them (negative ones, or weights beyond
        the float range, raise ``ValueError`` at ``compute()``; the values are summed
        in units of their column's largest, so tiny values keep their digits).

    Equal to :func:`attnpool.attention_pool` up to floating-point rounding. A query with
    no key inside a compact kernel's support is NaN (``empty="nan"``). A bandwidth so
    small that scaled distances overflow (where the local path takes the nearest-key
    limit) takes the same limit for distance kernels (each task also keeps the nearest
    keys of the rows it leaves without weight) and raises for ``similarity="dot"``; NaN
    or infinite inputs raise ``ValueError`` at ``compute()``.

    Returns
    -------
    dask.array.Array
        ``(n,)`` or ``(n, p)`` like ``values``, lazy.

    Examples
    --------
    >>> import numpy as np, dask.array as da, attnpool
    >>> from attnpool import distributed, kernels
    >>> q = da.from_array(np.linspace(0, 1, 4)[:, None], chunks=2)     # 2 query chunks
    >>> k = da.from_array(np.linspace(0, 1, 6)[:, None], chunks=3)     # 2 key chunks
    >>> v = da.from_array(np.arange(6.0)[:, None], chunks=3)
    >>> distributed.attention_pool(q, k, v[:, 0], bandwidth=0.5).compute().round(4)
    array([1.5846, 2.1768, 2.8232, 3.4154])
    >>> attnpool.attention_pool(np.linspace(0, 1, 4), np.linspace(0, 1, 6), np.arange(6.0),
    ...                         bandwidth=0.5).round(4)                # the same numbers
    array([1.5846, 2.1768, 2.8232, 3.4154])

    References
    ----------
    Milakov, M. & Gimelshein, N. (2018). Online normalizer calculation for softmax.
    arXiv:1805.02867 (the mergeable state). Rocklin, M. (2015). Dask: parallel
    computation with blocked algorithms and task scheduling. *Proceedings of the 14th
    Python in Science Conference*, 130–136.
    """
    check_positive_int(split_every, "split_every")
    rows, key_rows, value_rows, h, record, flat = prepare_arrays(
        queries, keys, values, bandwidth, kernel, chunk_rows
    )
    names = ("queries", "keys", "values")
    if weights is not None:
        w = _aligned(key_rows, as_rows(weights, "weights", chunk_rows), "weights")
        value_rows, scale = dask_augmented(value_rows, w)
        names = ("queries", "keys", "values and weights")
    nearest = not record.compact and record.similarity == "distance"
    states: Any = merged_states(  # dask's map_blocks confuses type checkers
        rows, key_rows, value_rows, h[None], record, False, split_every, names, nearest,
        weighted=weights is not None,
    )  # fmt: skip
    pooled: Any = states.map_blocks(
        lambda block: finish_states(block, None if record.compact or nearest else h, nearest)[:, 0],
        drop_axis=[1, 2],
        chunks=(rows.chunks[0], (value_rows.shape[1],)),
        dtype=states.dtype,
        meta=np.empty((0, 0), states.dtype),
    )
    if weights is not None:  # (the values in units of their column's largest)
        pooled = pooled[:, 1:] / pooled[:, :1] * scale
    result: da.Array = pooled[:, 0] if flat else pooled
    return result
