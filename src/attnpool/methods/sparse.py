"""Sparse pooling for compact kernels: only keys inside the support are touched.

- One dimension: windows of sorted keys. Built-in kernels that split into
  ``Σ_j a_j(q) b_j(k)`` on each side of the query sum a window by prefix sums
  (:mod:`attnpool.methods.prefix_sums`), ``O((n + m) log m)`` whatever the number of
  pairs; rows whose rounding that cannot bound, and other kernels, pair by pair.
- Otherwise, pairs: a KD-tree (``scipy.spatial.cKDTree``) over scaled coordinates
  finds the candidates, summed in query chunks of at most :data:`PAIR_BUDGET` pairs,
  ``O((n + m) log m + nnz)``.

Every pair's offset is ``(q − k) / h`` of unscaled float64 coordinates; sums are in
float64 and exact up to rounding.
"""

from __future__ import annotations

import functools
from functools import partial

import numpy as np

from ..kernels import Kernel, is_builtin
from ..kernels.edges import inside_decided, support_edge
from .prefix_sums import QUERY_CHUNK, prefix_sums, split_kernel

#: Query–key pairs evaluated at once (memory ``O(PAIR_BUDGET)``).
PAIR_BUDGET = 2**22


def supports(kernel: Kernel) -> bool:
    """A compact radial distance kernel of the Euclidean distance (its support a ball:
    the trees' neighbourhoods)."""
    return (
        kernel.compact
        and kernel.similarity == "distance"
        and not kernel.product
        and kernel.norm == 2.0
    )


def refusal(kernel: Kernel, d: int) -> str | None:
    """Why ``sparse`` cannot pool this kernel, or None."""
    if not supports(kernel):
        return (
            "'sparse' needs a compact-support radial kernel of the Euclidean distance "
            f"(product kernels, other norms: 'dense', 'stream' or 'auto'); received {kernel.name!r}"
        )
    return None


def sparse_sums(queries, keys, values, scale, kernel: Kernel, *, edges=None) -> np.ndarray:
    """``[Σ_j K_ij, Σ_j K_ij v_j]`` with ``K_ij = K(s·(q_i − k_j)) / K(0)`` over pairs within
    the support: ``(n, 1 + p)`` float64 sums.

    ``queries (n, d)``, ``keys (m, d)``, ``values (m, p)`` in any float precision;
    ``scale (d,)`` the inverse bandwidths.

    ``edges``: ``(queries, keys, bandwidth)`` unscaled and uncentred, in the inputs'
    precision; whether a key is inside the support is then decided as the exact engines
    decide it (:func:`inside_support`), the same in every method. Without them it is
    decided on ``(q − k) · s``.

    Every pair's offset is a difference of unscaled float64 coordinates divided by the
    bandwidth, never a difference of scaled ones: those round at ``eps · |q · s|``, which
    grows with the data's extent over the bandwidth.
    """
    queries, keys = np.asarray(queries), np.asarray(keys)
    scale = np.broadcast_to(np.asarray(scale, np.float64), queries.shape[1:])
    if edges is None:
        edges = (queries, keys, 1.0 / scale)
        inside = None
    else:
        inside = partial(inside_support, bandwidth=edges[2], kernel=kernel)
    raw_queries, raw_keys = edges[0], edges[1]
    bandwidth = np.broadcast_to(np.asarray(edges[2], np.float64), queries.shape[1:])
    values = np.asarray(values, np.float64)
    if queries.shape[1] == 1:
        return _sums_1d(raw_queries[:, 0], raw_keys[:, 0], values, bandwidth[0], kernel, inside)
    return _sums_tree(
        queries, keys, scale, (raw_queries, raw_keys, bandwidth), values, kernel, inside
    )


#: Leave-one-out weights (in units of ``K(0)``) at or below this are none: what is left
#: of a point's sum once its own term is taken away is that term's rounding (the backend's
#: leave-one-out sums, :mod:`attnpool.methods.backends.support`).
LOO_MIN_WEIGHT = 1e-9
#: Leave-one-out rests (in units of ``K(0)``, and of the point's own weight) below which
#: the point is summed again exactly: a rest of keys near the support's edge has the
#: relative error of kernel values taken from scaled coordinates there.
LOO_SETTLED = 1e-3


def _offsets(queries, keys, bandwidth):
    """``u = (q − k) / h`` of paired rows ``(P, d)`` in float64."""
    return (np.asarray(queries, np.float64) - np.asarray(keys, np.float64)) / bandwidth


def inside_support(queries, keys, bandwidth, kernel: Kernel) -> np.ndarray:
    """Whether each pair of rows ``queries (P, d)``, ``keys (P, d)`` (unscaled) is inside the
    support, decided from ``u_j = (q_j − k_j) / h_j`` in the inputs' precision by
    :func:`attnpool.kernels.edges.inside_decided` — as the exact engines decide it."""
    dtype = np.result_type(queries, keys, np.float32)
    bandwidth = np.broadcast_to(np.asarray(bandwidth, dtype), queries.shape[-1:])
    us = [
        (queries[:, j].astype(dtype) - keys[:, j].astype(dtype)) / bandwidth[j]
        for j in range(queries.shape[1])
    ]
    radius2, closed = support_edge(kernel)
    r2 = sum(u * u for u in us)
    return inside_decided(us, r2, radius2, closed=closed)


def _inside(r2, kernel: Kernel):
    radius2, closed = support_edge(kernel)
    radius2 = np.asarray(radius2, r2.dtype)
    return r2 <= radius2 if closed else r2 < radius2


def largest_inside(kernel: Kernel) -> float:
    """The largest ``r2`` inside the support (its square, or just below for an open one)."""
    radius2, closed = support_edge(kernel)
    return radius2 if closed else float(np.nextafter(radius2, 0.0))


def _within(r2, kernel: Kernel):
    """``r2`` of a pair known to be inside, no larger than :func:`largest_inside`."""
    return np.minimum(r2, largest_inside(kernel))


def sorted_scaled(x, scale, order=None):
    """``(order, x[order] · scale)`` in float64; scaling by ``scale > 0`` keeps the order
    (``x`` already in order is not sorted again)."""
    if order is None:
        order = np.arange(x.shape[0]) if np.all(x[1:] >= x[:-1]) else np.argsort(x)
    scaled = x[order].astype(np.float64, copy=False)  # a fresh array either way
    scaled *= scale
    return order, scaled


def _sums_1d(raw_queries, raw_keys, values, bandwidth, kernel, inside_raw):
    """Sums over windows of the sorted unscaled keys; ``inside_raw(queries, keys)`` decides
    the support's edge on the inputs (None: on the float64 offsets)."""
    # sorted queries make every search and prefix lookup below a forward sweep
    key_order, keys = sorted_scaled(raw_keys, 1.0)
    query_order, queries = sorted_scaled(raw_queries, 1.0)
    values = values[key_order]
    if inside_raw is None:
        inside = None
    else:
        sorted_queries, sorted_keys = raw_queries[query_order, None], raw_keys[key_order, None]

        def inside(rows, index):
            return inside_raw(sorted_queries[rows], sorted_keys[index])

    del key_order
    index = np.int32 if keys.shape[0] < 2**31 else np.intp
    reach = kernel.support * bandwidth
    low = np.searchsorted(keys, queries - reach, side="left").astype(index)
    high = np.searchsorted(keys, queries + reach, side="right").astype(index)
    for rows in (slice(i, i + 16 * QUERY_CHUNK) for i in range(0, len(queries), 16 * QUERY_CHUNK)):
        low[rows], high[rows] = _settle_windows(
            queries[rows], keys, bandwidth, low[rows], high[rows], kernel, rows, inside
        )
    split = split_kernel(kernel)
    if split is None:
        sums = _pairs_1d(queries, keys, values, bandwidth, kernel, low, high)
    else:
        sums, unreliable = prefix_sums(queries, keys, values, bandwidth, split, low, high)
        rows = np.flatnonzero(unreliable)
        if rows.size:
            sums[rows] = _pairs_1d(
                queries[rows], keys, values, bandwidth, kernel, low[rows], high[rows]
            )
    del low, high, queries, keys, values
    result = np.empty_like(sums)
    result[query_order] = sums
    return result


def _settle_windows(queries, keys, bandwidth, low, high, kernel, block, inside_raw=None):
    """Move window edges until they agree with the support (``inside_raw(rows, index)`` on
    the inputs of this ``block`` of sorted queries, else ``u²`` of the float64 offsets;
    ``q ± h`` rounds differently); ties move together."""
    offset = block.start

    def inside(rows, index):
        if inside_raw is not None:
            return inside_raw(rows + offset, index)
        return _inside(_offsets(queries[rows], keys[index], bandwidth) ** 2, kernel)

    m = keys.shape[0]
    while True:
        rows = np.flatnonzero(low > 0)
        grow = rows[inside(rows, low[rows] - 1)]
        low[grow] = np.searchsorted(keys, keys[low[grow] - 1], side="left")
        rows = np.flatnonzero(low < high)
        shrink = rows[~inside(rows, low[rows])]
        low[shrink] = np.searchsorted(keys, keys[low[shrink]], side="right")
        rows = np.flatnonzero(high < m)
        grow_high = rows[inside(rows, high[rows])]
        high[grow_high] = np.searchsorted(keys, keys[high[grow_high]], side="right")
        rows = np.flatnonzero(high > low)
        shrink_high = rows[~inside(rows, high[rows] - 1)]
        high[shrink_high] = np.searchsorted(keys, keys[high[shrink_high] - 1], side="left")
        high = np.maximum(high, low)
        if not (grow.size or shrink.size or grow_high.size or shrink_high.size):
            return low, high


def _pairs_1d(queries, keys, values, bandwidth, kernel, low, high):
    """Pair-by-pair sums ``(n, 1 + p)`` over the sorted unscaled windows ``keys[low:high]``,
    in chunks."""
    sums = np.zeros((queries.shape[0], 1 + values.shape[1]))
    counts = high - low
    cumulative = np.cumsum(counts)
    start = 0
    while start < queries.shape[0]:
        done = cumulative[start - 1] if start else 0
        stop = max(int(np.searchsorted(cumulative, done + PAIR_BUDGET, side="right")), start + 1)
        window = counts[start:stop]
        rows = np.repeat(np.arange(start, stop), window)
        first = np.repeat(np.cumsum(window) - window, window)  # each row's first pair
        columns = low[rows] + np.arange(rows.size) - first
        u = _offsets(queries[rows], keys[columns], bandwidth)
        # the window decided who is inside: a pair in it weighs at least the edge's weight
        _accumulate(sums, rows, columns, _within(u * u, kernel), values, kernel)
        start = stop
    return sums


def _sums_tree(queries, keys, scale, unscaled, values, kernel, inside_raw):
    """Pair sums ``(n, 1 + p)`` from KD-tree neighbourhoods (``d ≥ 2``), in chunks of queries.

    The tree holds the scaled coordinates and finds candidates a little beyond the
    support (their rounding, and the inputs' if ``inside_raw`` decides the edge);
    ``unscaled = (queries, keys, bandwidth)`` give the pairs' offsets.
    """
    from scipy.spatial import cKDTree

    queries, keys = (np.asarray(x, np.float64) * scale for x in (queries, keys))
    tree = cKDTree(keys)
    sums = np.zeros((queries.shape[0], 1 + values.shape[1]))
    chunk = max(1, min(queries.shape[0], 8192))
    extent = max(np.max(np.abs(queries), initial=0.0), np.max(np.abs(keys), initial=0.0))
    slack = max(1e-9, 8 * np.finfo(np.float64).eps * extent / kernel.support)
    if inside_raw is not None:
        slack = max(slack, 64 * np.finfo(unscaled[0].dtype).eps)
    reach = kernel.support * (1 + slack)
    raw_queries, raw_keys, bandwidth = unscaled
    # r² of offsets in float64 is within d·eps of the exact sum of the rounded ones, and
    # those of float32 inputs within a few eps32: farther from the edge, it decides
    radius2 = support_edge(kernel)[0]
    precision = np.finfo(np.result_type(raw_queries, raw_keys, np.float32)).eps
    edge_margin = 16 * queries.shape[1] * precision * radius2
    start = 0
    while start < queries.shape[0]:
        rows = slice(start, start + chunk)
        block = cKDTree(queries[rows])
        if chunk > 1 and block.count_neighbors(tree, reach) > PAIR_BUDGET:
            chunk //= 2
            continue
        pairs = block.sparse_distance_matrix(tree, reach, output_type="ndarray")
        local, columns = pairs["i"].astype(np.intp), pairs["j"].astype(np.intp)
        pair_queries, pair_keys = raw_queries[start:][local], raw_keys[columns]
        r2 = np.sum(_offsets(pair_queries, pair_keys, bandwidth) ** 2, axis=1)
        keep = _inside(r2, kernel)
        if inside_raw is not None:  # decided exactly where r² could round across the edge
            close = np.flatnonzero(np.abs(r2 - radius2) <= edge_margin)
            keep[close] = inside_raw(pair_queries[close], pair_keys[close])
        partial_sums = np.zeros((block.n, sums.shape[1]))
        # inside by the test: a pair weighs at least the edge's weight
        _accumulate(
            partial_sums, local[keep], columns[keep], _within(r2[keep], kernel), values, kernel
        )
        sums[rows] = partial_sums
        start += chunk
    return sums


def _accumulate(sums, rows, columns, r2, values, kernel):
    """``sums[rows] += K(r2) / K(0) · [1, values[columns]]`` (unbuffered)."""
    if rows.size == 0:
        return
    weights = _relative_weights(r2, kernel)
    sums[:, 0] += np.bincount(rows, weights, minlength=sums.shape[0])
    for c in range(values.shape[1]):
        sums[:, 1 + c] += np.bincount(rows, weights * values[columns, c], minlength=sums.shape[0])


def _relative_weights(r2, kernel):
    """``K(r²) / K(0)`` in float64: by NumPy where it evaluates the profile (a built-in
    kernel, a callable's), else by the profile's program."""
    if is_builtin(kernel) or kernel.host:
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            ratio = np.exp(kernel.log_profile(r2) - kernel.log_profile(np.zeros(())))
        return np.asarray(ratio, np.float64)
    import jax.numpy as jnp

    from .._support.interop import precision_scope

    size = 1 << int(np.ceil(np.log2(max(r2.size, 1024))))  # few shapes, few compilations
    padded = np.zeros(size)
    padded[: r2.size] = r2
    with precision_scope(np.float64):
        return np.asarray(_kernel_ratio()(jnp.asarray(padded), kernel=kernel))[: r2.size]


@functools.cache
def _kernel_ratio():
    """``K(r²) / K(0)``, jitted (JAX imported on first use: the Gaussian's paths through
    this module, :func:`sorted_scaled`, need none)."""
    import jax
    import jax.numpy as jnp

    @partial(jax.jit, static_argnames="kernel")
    def ratio(r2, *, kernel):
        return jnp.exp(kernel.log_profile(r2) - kernel.log_profile(jnp.zeros((), r2.dtype)))

    return ratio
