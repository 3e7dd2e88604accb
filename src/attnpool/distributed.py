"""Attention pooling and bandwidth selection on Dask: the pooling state, tree-reduced.

Keys and values are Dask arrays chunked along rows (from memory, or from a Zarr store
with :func:`dask.array.from_zarr`); queries are NumPy or Dask arrays chunked along rows.
For every pair (query chunk ``i``, key chunk ``j``) one task computes the log-domain
pooling state ``(m, s, t)`` of :mod:`attnpool.state` with the local engines; a
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

import jax
import jax.numpy as jnp
import numpy as np

from . import kernels as _kernels
from ._interop import precision_scope
from ._optional import require
from ._typing import ArrayLike, Bandwidth, KernelSpec
from ._validation import check_bandwidth, check_numeric_dtype, check_positive_int
from .edges import has_edge
from .engines.programs import kernel_block, mask_own_pairs, pool_state
from .geometry import block_log_weights, key_centre
from .methods.options import exact_engine
from .methods.stream import KEY_BLOCK
from .observation_weights import chunk_of_positive_weight, dask_augmented
from .state import PoolingState, block_state, finalize, merge_stacked

dask = require("dask", "Dask support (attnpool.distributed)")
import dask.array as da  # noqa: E402
from dask.base import is_dask_collection  # noqa: E402

__all__ = [
    "as_rows",
    "attention_pool",
    "finish_states",
    "is_dask",
    "merged_states",
    "prepare_arrays",
]

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


def _pack(state: PoolingState) -> np.ndarray:
    """``(..., p + 2)``: ``m``, ``s`` and ``t`` side by side (one array per task)."""
    return np.concatenate(
        [
            np.asarray(state.max_log)[..., None],
            np.asarray(state.weight_sum)[..., None],
            np.asarray(state.weighted_values),
        ],
        axis=-1,
    )


def _unpack(packed: Any) -> PoolingState:
    return PoolingState(packed[..., 0], packed[..., 1], packed[..., 2:])


@partial(jax.jit, static_argnames=("kernel", "key_block", "leave_one_out"))
def _chunk_state(
    queries: Any,
    query_ids: Any,
    keys: Any,
    key_ids: Any,
    values: Any,
    bandwidths: Any,
    *,
    kernel: Any,
    key_block: Any,
    leave_one_out: Any,
) -> Any:
    """States ``(n_i, K, ·)`` of one query chunk over one key chunk, for ``K`` bandwidths.

    Coordinates are centred on the query chunk before they are scaled (data far from
    the origin keep their digits; the same centre for every key chunk, so log weights
    defined up to a per-query constant stay comparable across chunks).
    """
    differences = has_edge(kernel)
    if kernel.similarity == "distance" and not differences:
        centre = key_centre(queries)
        queries, keys = queries - centre, keys - centre

    def one(h: Any) -> Any:
        q = queries if differences else queries / h
        k = keys if kernel.similarity == "dot" or differences else keys / h

        def block(
            query_rows: Any, query_pos: Any, key_rows: Any, key_pos: Any, value_rows: Any
        ) -> Any:
            divisor = h if differences else None
            log_w = block_log_weights(query_rows, key_rows, kernel, divisor=divisor)
            if leave_one_out:
                log_w = mask_own_pairs(log_w, query_ids[query_pos], key_ids[key_pos])
            return block_state(log_w, value_rows)

        n, m = q.shape[0], k.shape[0]
        method = exact_engine(n * m)
        return pool_state(block, q, k, values, method=method, key_block=key_block)

    states = jax.vmap(one)(bandwidths)  # leaves (K, n_i, ...)
    return jax.tree.map(lambda leaf: jnp.moveaxis(leaf, 0, 1), states)


def _state_task(
    queries: Any,
    keys: Any,
    values: Any,
    *extra: Any,
    bandwidths: Any,
    kernel: Any,
    names: Any,
    leave_one_out: Any,
    nearest: Any,
    weighted: Any,
) -> Any:
    """One task: ``(n_i, 1, K, p + 2)`` packed states of a query chunk over a key chunk.

    ``extra``: the global row numbers of queries and keys (``leave_one_out``).
    ``nearest``: rows this chunk leaves without weight also get the nearest-key state,
    ``p + 2`` more columns. ``weighted``: the values are ``[w, w·v]``
    (:func:`attnpool.observation_weights.dask_augmented`). Non-finite inputs are found
    here, as the chunks are read: a ``ValueError`` at ``compute()``, never a silent NaN."""
    for chunk, name in zip((queries, keys, values), names, strict=True):
        if not np.all(np.isfinite(chunk)):
            raise ValueError(
                f"{name}: expected finite numbers; a chunk of {chunk.shape[0]} rows holds "
                "NaN or infinite values"
            )
    dtype = np.result_type(queries, keys, values, np.float32)
    if weighted:  # (no leave-one-out: the Dask search takes no weights)
        keys, values = chunk_of_positive_weight(keys, values)
        if keys.shape[0] == 0:  # the empty state: m = −inf, s = 0, t = 0
            empty = np.zeros((queries.shape[0], 1, len(bandwidths), values.shape[1] + 2), dtype)
            empty[..., 0] = -np.inf
            return np.concatenate([empty, empty], axis=-1) if nearest else empty
    with precision_scope(dtype):
        state = _chunk_state(
            jnp.asarray(queries, dtype),
            jnp.asarray(extra[0][:, 0]) if leave_one_out else None,
            jnp.asarray(keys, dtype),
            jnp.asarray(extra[1][:, 0]) if leave_one_out else None,
            jnp.asarray(values, dtype),
            jnp.asarray(bandwidths, dtype),
            kernel=kernel,
            key_block=KEY_BLOCK,
            leave_one_out=leave_one_out,
        )
        packed = _pack(state)
        if nearest:
            closest = np.zeros_like(packed)  # the empty state: m = −inf, s = 0, t = 0
            closest[..., 0] = -np.inf
            if np.any(packed[..., 1] == 0):
                factor = _nearest_factor(queries, bandwidths[0])
                hard = _chunk_nearest(
                    *(jnp.asarray(a, dtype) for a in (queries, keys, values, factor)),
                    kernel=kernel,
                    key_block=KEY_BLOCK,
                )
                closest = _pack(hard)[:, None]
            packed = np.concatenate([packed, closest], axis=-1)
        return packed[:, None]


def _nearest_factor(queries: Any, bandwidth: Any) -> np.ndarray:
    """``(d,)``: ``min h / h`` times the power of two that brings the query chunk's
    coordinates about its centre to at most 1/2 (its magnitude if they are all equal).

    One unit for every key chunk of a query chunk, so the nearest-key states compare
    across chunks; it depends on the queries alone, so no task waits for a pass over the
    keys. A key more than ``2^500`` of that unit away has an infinite distance (the
    nearest key is never that far unless all are), and keys within ``2^-500`` of it tie.
    """
    queries = np.asarray(queries, np.float64)
    factor = bandwidth.min() / bandwidth
    centre = queries.min(axis=0) * 0.5 + queries.max(axis=0) * 0.5
    reach = np.max(np.abs(queries - centre) * factor)
    if not reach > 0:
        reach = np.max(np.abs(queries) * factor)
    return np.asarray(factor * (2.0 ** -(np.frexp(reach)[1] + 1) if 0 < reach < np.inf else 1.0))


@partial(jax.jit, static_argnames=("kernel", "key_block"))
def _chunk_nearest(
    queries: Any, keys: Any, values: Any, factor: Any, *, kernel: Any, key_block: Any
) -> Any:
    """The nearest-key (zero-temperature) state of one query chunk over one key chunk,
    coordinates about the query chunk's centre times ``factor``."""
    centre = key_centre(queries)
    q, k = (queries - centre) * factor, (keys - centre) * factor
    method = exact_engine(q.shape[0] * k.shape[0])
    block = kernel_block(kernel, hard=True)
    return pool_state(block, q, k, values, method=method, key_block=key_block, hard=True)


def _identity(x: Any, axis: Any, keepdims: Any) -> Any:
    return x


def _combine(x: Any, axis: Any, keepdims: Any, nearest: Any = False) -> Any:
    """Merge the states stacked along the key-chunk axis (exact log-sum-exp; the
    nearest-key states, if any, by the zero-temperature merge)."""
    with precision_scope(x.dtype):
        parts = np.split(np.asarray(x), 2, axis=-1) if nearest else [x]
        merged = [
            _pack(merge_stacked(_unpack(jnp.asarray(part)), axis=axis[0], hard=hard))
            for part, hard in zip(parts, (False, True), strict=False)
        ]
        return np.concatenate(merged, axis=-1)[:, None]


def finish_states(
    packed: np.ndarray, bandwidth: np.ndarray | None = None, nearest: bool = False
) -> np.ndarray:
    """``t / s`` per query and bandwidth; NaN where no key had weight.

    With ``nearest`` such rows (an unbounded kernel's distances overflowed) take the
    nearest keys' values from the second half of the state, as the local path does.
    With ``bandwidth`` (kernels without that state) they are an error.
    """
    parts = np.split(packed[:, 0], 2, axis=-1) if nearest else [packed[:, 0]]
    with precision_scope(packed.dtype):
        pooled_state, empty_state = finalize(_unpack(jnp.asarray(parts[0])))
        pooled, empty = np.asarray(pooled_state), np.asarray(empty_state)
        if nearest:
            closest, keyless = finalize(_unpack(jnp.asarray(parts[1])))
            if np.any(keyless & np.asarray(empty)):  # no key at all: every weight was zero
                raise ValueError("weights: expected some positive weight; received only zeros")
            pooled = np.where(empty[..., None], np.asarray(closest), pooled)
            empty = np.zeros_like(empty)
    failed = ~np.all(np.isfinite(pooled), axis=-1) & ~empty
    if bandwidth is not None:
        failed |= empty
    if failed.any():
        shown = [] if bandwidth is None else np.ravel(bandwidth).tolist()
        raise ValueError(
            f"bandwidth: {shown} is too small for Dask pooling: the "
            f"scaled distances or scores of {int(failed.any(axis=1).sum())} queries overflow; "
            "pool them with attnpool.attention_pool, which takes the nearest-key limit"
        )
    return np.asarray(np.where(empty[..., None], np.nan, pooled))  # (n_i, K, p)


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
    ``weighted``: the values are ``[w, w·v]`` (see :func:`_state_task`)."""
    n_bandwidths, p = bandwidths.shape[0], values.shape[1]
    dtype = np.result_type(queries.dtype, keys.dtype, values.dtype, np.float32)
    arrays = [queries, "ia", keys, "ja", values, "jb"]
    if leave_one_out:  # global row numbers, to mask each point's own pair
        query_ids = da.arange(queries.shape[0], chunks=queries.chunks[0])[:, None]
        key_ids = da.arange(keys.shape[0], chunks=keys.chunks[0])[:, None]
        arrays += [query_ids, "iz", key_ids, "jz"]
    task = partial(
        _state_task,
        bandwidths=bandwidths,
        kernel=kernel,
        names=names,
        leave_one_out=leave_one_out,
        nearest=nearest,
        weighted=weighted,
    )
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
    combine = partial(_combine, nearest=nearest)
    merged: da.Array = da.reduction(
        states,
        chunk=_identity,
        combine=combine,
        aggregate=combine,
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
        :func:`attnpool.attention_pool` takes them (negative ones, or ``w·v`` beyond the
        float range, raise ``ValueError`` at ``compute()``).

    Equal to :func:`attnpool.attention_pool` up to floating-point rounding. A query with
    no key inside a compact kernel's support is NaN (``empty="nan"``). A bandwidth so
    small that scaled distances overflow (where the local path takes the nearest-key
    limit) takes the same limit for distance kernels (each task also keeps the nearest
    keys of the rows it leaves without weight) and raises for ``similarity="dot"``; NaN
    or infinite inputs raise ``ValueError`` at ``compute()``.
    """
    check_positive_int(split_every, "split_every")
    rows, key_rows, value_rows, h, record, flat = prepare_arrays(
        queries, keys, values, bandwidth, kernel, chunk_rows
    )
    names = ("queries", "keys", "values")
    if weights is not None:
        w = _aligned(key_rows, as_rows(weights, "weights", chunk_rows), "weights")
        value_rows = dask_augmented(value_rows, w)
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
    if weights is not None:
        pooled = pooled[:, 1:] / pooled[:, :1]
    result: da.Array = pooled[:, 0] if flat else pooled
    return result
