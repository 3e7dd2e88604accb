"""The exact engines' jitted programs, shared by every layer above them.

:func:`pool_core` pools on rows padded to their buckets (:mod:`attnpool._support.shapes`)
by one compiled engine (:mod:`.compiled_backends`: dense or streamed key blocks, the
fused kernel, the tiled Pallas kernel), and takes the nearest-key limit for rows that
overflow (or are empty, when asked). :func:`weights_core` builds the dense weight matrix
the same way. Block functions (:mod:`.blocks`) are what regression, learned attention,
inference and Dask build their own sums from.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .._support.interop import precision_scope
from .._support.shapes import MAX_ROWS, bucket, is_host, pad_rows, padded, query_bucket, unpadded
from ..methods import dense_weights
from ..sums.geometry import block_coordinates, scale_coordinates
from ..sums.masks import allowed_block, keyless_rows, padded_mask
from ..sums.state import finalize
from .compiled_backends import ENGINES, Rows
from .pool_route import PoolRoute

__all__ = ["pool_core", "weights_core", "with_nearest_limit"]


def pool_core(queries, keys, values, bandwidth, route: PoolRoute, allowed=None):
    """The jitted pooling program on rows padded to their buckets: ``(pooled, empty)``,
    by ``route``'s compiled engine (its key blocks the stream's default where it names
    none).

    ``allowed``: the keys each query may attend (:func:`~attnpool.sums.masks.mask_keys`);
    a query left no key is empty and NaN whatever ``route.nearest`` says. NumPy inputs
    are summed in their own precision (float64 without the global flag), whoever calls."""
    if route.key_block is None:
        from ..methods.stream import KEY_BLOCK

        route = route._replace(key_block=KEY_BLOCK)
    route = route._replace(options=None)  # (a compiled engine takes none)
    if is_host(queries, keys, values):
        with precision_scope(np.result_type(queries, keys, values)):
            return _pool_core(queries, keys, values, bandwidth, route, allowed)
    return _pool_core(queries, keys, values, bandwidth, route, allowed)


def _pool_core(queries, keys, values, bandwidth, route: PoolRoute, allowed=None):
    n, m = queries.shape[0], keys.shape[0]
    if n == 0:
        return _pool_program(queries, keys, values, bandwidth, None, allowed, route=route)
    host = is_host(queries, keys, values)
    key_count = None
    if ENGINES[route.method].pads_keys and m <= MAX_ROWS:
        key_count = np.int32(m)
        keys, values = padded(keys, values, size=bucket(m))
    results = _pool_program(
        pad_rows(queries, query_bucket(n)),
        keys,
        values,
        bandwidth,
        key_count,
        padded_mask(allowed, query_bucket(n), keys.shape[0]),
        route=route,
    )
    return unpadded(results, n, host=host)


@partial(jax.jit, static_argnames=("route",))
def _pool_program(queries, keys, values, bandwidth, key_count, allowed, *, route: PoolRoute):
    engine, kernel, key_block = ENGINES[route.method], route.kernel, route.key_block
    rows = Rows(*block_coordinates(queries, keys, bandwidth, kernel))
    result = engine.state(rows, values, kernel=kernel, key_count=key_count, allowed=allowed,
                          key_block=key_block)  # fmt: skip
    pooled, empty_rows = finalize(result)

    def closest():
        relative = Rows(*scale_coordinates(queries, keys, bandwidth, kernel, relative=True))
        state = engine.closest(relative, values, kernel=kernel, key_count=key_count,
                               allowed=allowed, key_block=key_block)  # fmt: skip
        return finalize(state)[0]

    pooled = with_nearest_limit(pooled, empty_rows, route.nearest, closest)
    if allowed is None:
        return pooled, empty_rows
    return _without_keyless(pooled, empty_rows, allowed)


def _without_keyless(result, empty_rows, allowed):
    """``(result, empty)`` with the rows a mask left no key NaN and empty."""
    keyless = keyless_rows(allowed)
    return jnp.where(keyless[:, None], jnp.nan, result), empty_rows | keyless


def with_nearest_limit(result, empty_rows, nearest: bool, closest):
    """``result (n, ·)`` with the nearest-key limit where it is needed, the empty rows NaN
    unless ``nearest``.

    Rows that overflowed (not finite), and empty rows when ``nearest``, take the rows of
    ``closest()`` — the same computation with hard (zero-temperature) weights, traced
    but run only when some row needs it (``lax.cond``).
    """
    overflowed = ~jnp.all(jnp.isfinite(result), axis=1) & ~empty_rows
    fallback = overflowed | (empty_rows & nearest)
    result = jax.lax.cond(
        jnp.any(fallback),
        lambda: jnp.where(fallback[:, None], closest(), result),
        lambda: result,
    )
    return result if nearest else jnp.where(empty_rows[:, None], jnp.nan, result)


def weights_core(queries, keys, bandwidth, *, kernel, nearest, allowed=None):
    """``(weights, empty)`` by the jitted dense program, queries padded to their bucket;
    ``allowed`` as :func:`pool_core`'s (a query left no key has a NaN row)."""
    n = queries.shape[0]
    results = _weights_program(
        pad_rows(queries, query_bucket(n)),
        keys,
        bandwidth,
        padded_mask(allowed, query_bucket(n), keys.shape[0]),
        kernel=kernel,
        nearest=nearest,
    )
    return unpadded(results, n, host=is_host(queries))


@partial(jax.jit, static_argnames=("kernel", "nearest"))
def _weights_program(queries, keys, bandwidth, allowed, *, kernel, nearest):
    q, k, divisor = block_coordinates(queries, keys, bandwidth, kernel)
    matrix = None
    if allowed is not None:
        matrix = allowed_block(allowed, jnp.arange(q.shape[0]), jnp.arange(k.shape[0]))
    weights, empty_rows = dense_weights(q, k, kernel, divisor=divisor, allowed=matrix)

    def closest():
        relative = scale_coordinates(queries, keys, bandwidth, kernel, relative=True)
        return dense_weights(*relative, kernel, hard=True, allowed=matrix)[0]

    weights = with_nearest_limit(weights, empty_rows, nearest, closest)
    if allowed is None:
        return weights, empty_rows
    return _without_keyless(weights, empty_rows, allowed)
