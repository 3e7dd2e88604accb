"""What a Dask task of :mod:`attnpool.distributed` computes, on NumPy chunks.

:func:`state_task`: the pooling states ``(m, s, t)`` of one query chunk over one key chunk,
packed side by side in one array (with the nearest keys' state where the chunk leaves a
row without weight); :func:`combine`: their exact merge along the key chunks (the
tree reduction's step); :func:`finish_states`: ``t / s``.

A chunk of a distance kernel is a :class:`~attnpool.sums.problem.SumProblem` for each
bandwidth, summed exactly by the sums layer (:func:`attnpool.sums.layer.exact_sums`:
``fgt`` or ``sparse`` in one column, ``native`` for the Gaussian in several, else a
compiled exact engine, as the planner's table of Dask chunks says); a
dot-product score or a higher-order kernel runs on the compiled engines, the
bandwidths at once (:func:`chunk_state`).
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._support.interop import precision_scope
from ..engines.blocks import kernel_block, mask_own_pairs
from ..engines.compiled_backends import pool_state
from ..kernels.edges import has_edge
from ..methods.options import exact_engine
from ..methods.stream import KEY_BLOCK
from ..sums.geometry import block_log_weights, key_centre, queries_to_unit
from ..sums.observation_weights import chunk_of_positive_weight
from ..sums.problem import SumProblem
from ..sums.state import PoolingState, block_state, finalize, merge_stacked

__all__ = [
    "ChunkTask",
    "chunk_nearest",
    "chunk_state",
    "combine",
    "finish_states",
    "host_states",
    "identity",
    "nearest_factor",
    "pack",
    "state_task",
    "unpack",
]


class ChunkTask(NamedTuple):
    """What every task of one :func:`~attnpool.distributed.merged_states` sums (one
    static record). ``names``: the queries', keys' and values' names in messages;
    ``leave_one_out``: query ``i`` is key ``i``, left out of its own sums (the tasks
    then get the rows' global numbers); ``nearest``: rows a chunk leaves without weight
    also get the nearest-key state; ``weighted``: the values are ``[w, w·v]``."""

    kernel: Any
    names: tuple[str, str, str]
    leave_one_out: bool = False
    nearest: bool = False
    weighted: bool = False


def pack(state: PoolingState) -> np.ndarray:
    """``(..., p + 2)``: ``m``, ``s`` and ``t`` side by side (one array per task)."""
    return np.concatenate(
        [
            np.asarray(state.max_log)[..., None],
            np.asarray(state.weight_sum)[..., None],
            np.asarray(state.weighted_values),
        ],
        axis=-1,
    )


def unpack(packed: Any) -> PoolingState:
    return PoolingState(packed[..., 0], packed[..., 1], packed[..., 2:])


@partial(jax.jit, static_argnames=("kernel", "key_block"))
def chunk_state(
    queries: Any, keys: Any, values: Any, bandwidths: Any, ids: Any = None, *, kernel: Any,
    key_block: Any,
) -> Any:  # fmt: skip
    """States ``(n_i, K, ·)`` of one query chunk over one key chunk, for ``K`` bandwidths.
    ``ids``: the queries' and keys' global row numbers, each query leaving out the key of
    its own number (None: no key left out).

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
            if ids is not None:
                log_w = mask_own_pairs(log_w, ids[0][query_pos], ids[1][key_pos])
            return block_state(log_w, value_rows)

        n, m = q.shape[0], k.shape[0]
        method = exact_engine(n * m)
        return pool_state(block, q, k, values, method=method, key_block=key_block)

    states = jax.vmap(one)(bandwidths)  # leaves (K, n_i, ...)
    return jax.tree.map(lambda leaf: jnp.moveaxis(leaf, 0, 1), states)


def state_task(
    queries: Any, keys: Any, values: Any, *extra: Any, bandwidths: Any, task: ChunkTask
) -> Any:
    """One task: ``(n_i, 1, K, p + 2)`` packed states of a query chunk over a key chunk.

    ``extra``: the global row numbers of queries and keys and the queries' own values
    (``task.leave_one_out``: a query leaves out the keys identical to it, itself and its
    twins, :func:`host_states`).
    ``task.nearest``: rows this chunk leaves without weight also get the nearest-key
    state, ``p + 2`` more columns. ``task.weighted``: the values are ``[w, w·v]``
    (:func:`attnpool.sums.observation_weights.dask_augmented`). Non-finite inputs are found
    here, as the chunks are read: a ``ValueError`` at ``compute()``, never a silent NaN."""
    kernel, names, leave_one_out, nearest, weighted = task
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
        ids = (extra[0][:, 0], extra[1][:, 0]) if leave_one_out else None
        if kernel.similarity == "distance" and kernel.base is None:
            own = extra[2] if leave_one_out else None
            packed = host_states(queries, keys, values, bandwidths, kernel, ids, own).astype(dtype)
        else:
            state = chunk_state(
                *(jnp.asarray(a, dtype) for a in (queries, keys, values, bandwidths)),
                None if ids is None else tuple(jnp.asarray(i) for i in ids),
                kernel=kernel,
                key_block=KEY_BLOCK,
            )
            packed = pack(state)
        if nearest:
            closest = np.zeros_like(packed)  # the empty state: m = −inf, s = 0, t = 0
            closest[..., 0] = -np.inf
            if np.any(packed[..., 1] == 0):
                factor = nearest_factor(bandwidths[0])
                hard = chunk_nearest(
                    *(jnp.asarray(a, dtype) for a in (queries, keys, values, factor)),
                    kernel=kernel,
                    key_block=KEY_BLOCK,
                )
                closest = pack(hard)[:, None]
            packed = np.concatenate([packed, closest], axis=-1)
        return packed[:, None]


def host_states(
    queries: np.ndarray, keys: np.ndarray, values: np.ndarray, bandwidths: np.ndarray,
    kernel: Any, ids: tuple[np.ndarray, np.ndarray] | None = None,
    query_values: np.ndarray | None = None,
) -> np.ndarray:  # fmt: skip
    """``(n_i, K, p + 2)``: the packed states ``[m, s, t]`` of a query chunk over a key
    chunk for each of the ``K`` bandwidths, each the exact sums of a
    :class:`~attnpool.sums.problem.SumProblem` (:func:`attnpool.sums.layer.exact_sums`),
    in the chunks' own precision; ``m = −inf`` where no key weighs (the empty state, so
    that a merge keeps the other chunks' digits). ``ids``: the queries' and keys' global
    row numbers, each query leaving out the key of its own number; with the queries'
    own ``query_values``, every key identical to it in ``[x, y]`` too
    (:func:`twins_merged`), as a search in memory merges identical rows into one of
    their count and leaves it out whole."""
    from ..sums.layer import exact_sums

    left_out, weights = None, None
    if ids is not None:
        left_out = _own_keys(*(np.asarray(a) for a in ids))
    if left_out is not None and query_values is not None:
        merged = twins_merged(queries, np.asarray(query_values), keys, values, left_out)
        if merged is not None:
            keys, values, weights, left_out = merged
    packed = np.empty((queries.shape[0], bandwidths.shape[0], values.shape[1] + 2))
    for c, h in enumerate(np.asarray(bandwidths, np.float64)):
        problem = SumProblem(queries, keys, values, h, kernel, weights, left_out=left_out)
        found = exact_sums(problem, table="chunk")
        weighs = found.sums[:, 0] > 0
        packed[:, c, 0] = np.where(weighs, found.shift, -np.inf)
        packed[:, c, 1:] = found.sums
    return packed


def twins_merged(
    queries: np.ndarray, query_values: np.ndarray, keys: np.ndarray, values: np.ndarray,
    own_key: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:  # fmt: skip
    """``(keys, values, counts, left_out)``: the keys identical in ``[x, y]`` merged into one
    of their count, and the merged key each query's own ``[x, y]`` is (``−1``: none),
    which it leaves out with all its twins; None where no query has a twin among the keys
    (``own_key (n,)``: the position of each query's own row among them, ``−1``: none)."""
    first = np.sort(np.asarray(keys[:, 0], np.float64))
    found = np.isin(queries[:, 0], keys[:, 0])
    if not np.any(first[1:] == first[:-1]) and np.array_equal(found, own_key >= 0):
        return None  # (each query meets at most one key in x₁: its own, or none)
    d = keys.shape[1]
    rows = np.concatenate([keys, values], axis=1).astype(np.float64) + 0.0  # (−0.0 → 0.0)
    unique, counts = np.unique(rows, axis=0, return_counts=True)
    asked = np.concatenate([queries, query_values], axis=1).astype(np.float64) + 0.0
    _, where = np.unique(np.concatenate([unique, asked]), axis=0, return_inverse=True)
    where = where.reshape(-1)
    merged_of = np.full(unique.shape[0] + asked.shape[0], -1)
    merged_of[where[: unique.shape[0]]] = np.arange(unique.shape[0])
    left_out = merged_of[where[unique.shape[0] :]]
    dtype = np.result_type(keys, values)
    return (unique[:, :d].astype(dtype), unique[:, d:].astype(dtype),
            counts.astype(np.float64), left_out)  # fmt: skip


def _own_keys(query_ids: np.ndarray, key_ids: np.ndarray) -> np.ndarray:
    """``(n,)``: the position in the key chunk of the key whose row number each query's
    is, ``−1`` where the chunk does not hold it."""
    if key_ids.size == 0:
        return np.full(query_ids.shape[0], -1)
    order = np.argsort(key_ids, kind="stable")
    at = np.minimum(np.searchsorted(key_ids[order], query_ids), key_ids.size - 1)
    return np.where(key_ids[order][at] == query_ids, order[at], -1)


def nearest_factor(bandwidth: Any) -> np.ndarray:
    """``(d,)``: ``min h / h``, the nearest-key geometry's units (it orders keys exactly
    as the full scaling does, however small ``h``)."""
    bandwidth = np.asarray(bandwidth, np.float64)
    return np.asarray(bandwidth.min() / bandwidth)


@partial(jax.jit, static_argnames=("kernel", "key_block"))
def chunk_nearest(
    queries: Any, keys: Any, values: Any, factor: Any, *, kernel: Any, key_block: Any
) -> Any:
    """The nearest-key (zero-temperature) state of one query chunk over one key chunk:
    the inputs' own differences (no centre: one rounding) times ``factor``, in the
    query chunk's power of two (:func:`~attnpool.sums.geometry.queries_to_unit`), each
    row then in its own (:func:`~attnpool.sums.geometry.nearest_closeness`) — one unit
    per row for every key chunk, so the states compare across chunks, from the queries
    alone, so no task waits for a pass over the keys. A key more than ``2^500`` times
    its query's size (or the chunk's median query's) away has an infinite distance: the
    nearest key is never that far unless all are."""
    q, k = queries_to_unit(queries * factor, keys * factor)
    method = exact_engine(q.shape[0] * k.shape[0])
    block = kernel_block(kernel, hard=True)
    return pool_state(block, q, k, values, method=method, key_block=key_block, hard=True)


def identity(x: Any, axis: Any, keepdims: Any) -> Any:
    return x


def combine(x: Any, axis: Any, keepdims: Any, nearest: Any = False) -> Any:
    """Merge the states stacked along the key-chunk axis (exact log-sum-exp; the
    nearest-key states, if any, by the zero-temperature merge)."""
    parts = np.split(np.asarray(x), 2, axis=-1) if nearest else [np.asarray(x)]
    merged = [
        pack(merge_stacked(unpack(part), axis=axis[0], hard=hard))
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

    Parameters
    ----------
    packed : ndarray (n, 1, K, p + 2), or twice ``p + 2`` with ``nearest``
        Merged states (:func:`attnpool.distributed.merged_states`, computed).
    bandwidth : ndarray, optional
    nearest : bool

    Returns
    -------
    ndarray (n, K, p)

    Examples
    --------
    >>> import numpy as np, dask.array as da, attnpool
    >>> from attnpool import distributed, kernels
    >>> q = da.from_array(np.linspace(0, 1, 4)[:, None], chunks=2)     # 2 query chunks
    >>> k = da.from_array(np.linspace(0, 1, 6)[:, None], chunks=3)     # 2 key chunks
    >>> v = da.from_array(np.arange(6.0)[:, None], chunks=3)
    >>> states = distributed.merged_states(q, k, v, np.array([[0.5], [2.0]]),
    ...                                    kernels.get("gaussian"), False, None,
    ...                                    ("queries", "keys", "values"))
    >>> distributed.finish_states(states.compute())[:, :, 0].round(3)   # two bandwidths
    array([[1.585, 2.428],
           [2.177, 2.476],
           [2.823, 2.524],
           [3.415, 2.572]])

    References
    ----------
    Milakov, M. & Gimelshein, N. (2018). Online normalizer calculation for softmax.
    arXiv:1805.02867 (the mergeable state). Rocklin, M. (2015). Dask: parallel
    computation with blocked algorithms and task scheduling. *Proceedings of the 14th
    Python in Science Conference*, 130–136.
    """
    parts = np.split(packed[:, 0], 2, axis=-1) if nearest else [packed[:, 0]]
    pooled: Any
    empty: Any
    pooled, empty = finalize(unpack(np.asarray(parts[0])))
    if nearest:
        closest, keyless = finalize(unpack(np.asarray(parts[1])))
        if np.any(keyless & empty):  # no key at all: every weight was zero
            raise ValueError("weights: expected some positive weight; received only zeros")
        pooled = np.where(empty[..., None], closest, pooled)
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
