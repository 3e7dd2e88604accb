"""``pallas``: exact kernel sums by a tiled GPU kernel, differentiable.

The kernel (:mod:`.pallas_kernel`) keeps each query row's log-domain state while key
tiles stream through on-chip memory, so memory is ``O(n + m)`` and each pair costs one
exponential. On a GPU it is compiled by Triton; elsewhere it runs in Pallas' interpret
mode (the same program, evaluated by XLA — exact, but slow: ``auto`` chooses it only on
GPUs). It returns a :class:`~attnpool.sums.state.PoolingState`, so the finishing steps
(division, the empty policy, the nearest-key limit) are those of every method.

- **Kernels**: every distance kernel (radial or product) and ``dot``; compact kernels'
  keys are sorted by their first coordinate and each query tile walks only the key tiles
  within the support of its own first coordinates, so pairs beyond reach cost nothing.
- **Sums**: pooled values, or local linear's moments; masks of valid lengths, each
  query's left-out key (leave-one-out), the keys' observation weights.
- **Gradients**: a custom VJP. The forward pass saves each row's maximum log weight
  ``m``; the backward pass recomputes the weights tile by tile in the streamed engine
  (:func:`~attnpool.methods.stream_state`, each step rematerialised) with that ``m`` as
  the known shift, and pulls the cotangents of ``s`` and ``t`` back through it.
  ``jit``, ``grad`` and ``vmap`` all apply.

Precision: the inputs' own. Float32 sums carry float32's relative rounding per row
(``~√m·eps``); float64 inputs are summed in float64 on the GPU too.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels import Kernel
from ..kernels.edges import has_edge
from ..sums.state import PoolingState
from .pallas_kernel import (
    KEY_TILE,
    QUERY_TILE,
    TileSums,
    feature_count,
    pair_features,
    pair_log_weights,
    tile_sums,
)
from .stream import stream_state

__all__ = ["GPU_BACKENDS", "interpreted", "refusal", "supports", "tiled_state"]

#: JAX backends on which the kernel is compiled (elsewhere it is interpreted).
GPU_BACKENDS = frozenset(["gpu", "cuda", "rocm"])
#: Relative widening of a compact kernel's reach when key tiles are ranged (a superset:
#: the kernel itself decides each key's edge exactly).
_REACH_MARGIN = 1e-3


def supports(kernel: Kernel) -> bool:
    """Every kernel but the higher-order ones (signed weights have no log domain)."""
    return kernel.base is None and kernel.similarity in ("distance", "dot")


def refusal(kernel: Kernel, d: int) -> str | None:
    """Why ``pallas`` cannot pool this kernel, or None."""
    if not supports(kernel):
        return (
            f"'pallas' sums non-negative kernels; received the higher-order {kernel.name!r} "
            "(use 'dense' or 'stream')"
        )
    return None


def interpreted() -> bool:
    """Whether the kernel runs in Pallas' interpret mode (JAX computes on no GPU)."""
    return jax.default_backend() not in GPU_BACKENDS


def tiled_state(
    queries,
    keys,
    values,
    divisor=None,
    *,
    kernel: Kernel,
    key_count=None,
    lengths=None,
    left_out=None,
    factors=None,
    moments: bool = False,
) -> PoolingState:
    """Pooling state of ``queries (n, ·)`` over ``keys (m, d)`` with ``values (m, p)``.

    ``divisor (d,)``: the rows are unscaled and each difference is divided by it (as
    :func:`attnpool.sums.geometry.block_coordinates` gives them; None: already scaled).
    ``key_count``: keys from this row on are padding; ``lengths (n,)``: query ``i``
    attends keys ``0 … lengths_i − 1``; ``left_out (n,)``: the key each query leaves
    out (``−1``: none); ``factors (m,)``: the keys' positive weights, multiplying their
    kernel weights after the shift. ``moments``: sum local linear's moments about the
    reference row of ``d + p`` numbers that follows each query's ``d`` coordinates
    (:mod:`attnpool.engines.local_fits`); ``weighted_values`` is then ``(n, p + d + d² +
    d·p)``.
    """
    n, m, d = queries.shape[0], keys.shape[0], keys.shape[1]
    if key_count is not None:
        count = jnp.broadcast_to(jnp.asarray(key_count, jnp.int32), (n,))
        lengths = count if lengths is None else jnp.minimum(lengths, count)
    spec = TileSums(
        kernel,
        d,
        values.shape[1],
        scaled=divisor is None,
        masked=lengths is not None,
        leave_one_out=left_out is not None,
        weighted=factors is not None,
        ranged=divisor is not None and has_edge(kernel) and m > KEY_TILE,
        moments=moments,
        limit=m,
    )
    if n == 0 or m == 0:
        return _state_by_stream(spec, queries, keys, values, divisor, factors, lengths, left_out)
    if divisor is not None:
        divisor = jnp.broadcast_to(jnp.asarray(divisor, keys.dtype), (d,))
    as_ints = lambda a: None if a is None else jnp.asarray(a, jnp.int32)  # noqa: E731
    top, total, features = _tiled(
        spec, queries, keys, values, divisor, factors, as_ints(lengths), as_ints(left_out)
    )
    return PoolingState(jax.lax.stop_gradient(top), total, features)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _tiled(spec: TileSums, queries, keys, values, divisor, factors, lengths, left_out):
    return _forward(spec, queries, keys, values, divisor, factors, lengths, left_out)


def _tiled_forward(spec, queries, keys, values, divisor, factors, lengths, left_out):
    outputs = _forward(spec, queries, keys, values, divisor, factors, lengths, left_out)
    return outputs, (queries, keys, values, divisor, factors, lengths, left_out, outputs[0])


def _tiled_backward(spec, saved, cotangents):
    *inputs, lengths, left_out, top = saved
    _, weight_sum_bar, features_bar = cotangents

    def sums(queries, keys, values, divisor, factors):
        state = _state_by_stream(
            spec, queries, keys, values, divisor, factors, lengths, left_out, top
        )
        return state.weight_sum, state.weighted_values

    _, pull_back = jax.vjp(sums, *inputs)
    return (*pull_back((weight_sum_bar, features_bar)), None, None)


_tiled.defvjp(_tiled_forward, _tiled_backward)


def _forward(spec: TileSums, queries, keys, values, divisor, factors, lengths, left_out):
    """``(max_log (n,), weight_sum (n,), features (n, F))`` by the Pallas kernel."""
    n, m = queries.shape[0], keys.shape[0]
    key_ids = jnp.arange(m, dtype=jnp.int32)
    query_order = None
    if spec.ranged:  # both sides sorted by their first coordinate
        key_ids = jnp.argsort(keys[:, 0]).astype(jnp.int32)
        keys, values = keys[key_ids], values[key_ids]
        factors = None if factors is None else factors[key_ids]
        query_order = jnp.argsort(queries[:, 0])
        queries = queries[query_order]
        lengths = None if lengths is None else lengths[query_order]
        left_out = None if left_out is None else left_out[query_order]
    rows, slots = -n % QUERY_TILE, -m % KEY_TILE

    def pad(array, extra):  # repeated edge rows: padded keys sit past ``limit``
        return None if array is None else jnp.pad(array, [(0, extra)], mode="edge")

    query_columns = [pad(queries[:, j], rows) for j in range(queries.shape[1])]
    key_columns = [pad(keys[:, j], slots) for j in range(keys.shape[1])]
    value_columns = [pad(values[:, c], slots) for c in range(values.shape[1])]
    tile_range = None
    if spec.ranged:
        tile_range = _key_tile_range(query_columns[0], keys[:, 0], spec.kernel, divisor[0])
    top, total, features = tile_sums(
        spec,
        query_columns,
        key_columns,
        value_columns,
        divisor=None if divisor is None else _power_of_two_long(divisor),
        lengths=pad(lengths, rows),
        own=pad(left_out, rows),
        key_ids=pad(key_ids, slots) if spec.masked or spec.leave_one_out else None,
        factors=pad(factors, slots),
        tile_range=tile_range,
    )
    outputs = (top[:n], total[:n], features[:, :n].T)
    if query_order is None:
        return outputs
    return tuple(jnp.zeros_like(a).at[query_order].set(a) for a in outputs)


def _key_tile_range(first_column, sorted_keys, kernel: Kernel, divisor):
    """``(first, last)`` key tiles within a compact kernel's reach of each query tile:
    ``first_column`` the queries' sorted, padded first coordinates, ``sorted_keys`` the
    keys' (unpadded)."""
    tiles = first_column.reshape(-1, QUERY_TILE)
    reach = kernel.support * jnp.abs(divisor) * (1 + _REACH_MARGIN)
    start = jnp.searchsorted(sorted_keys, tiles[:, 0] - reach, side="left")
    stop = jnp.searchsorted(sorted_keys, tiles[:, -1] + reach, side="right")
    first = (start // KEY_TILE).astype(jnp.int32)
    last = jnp.maximum(first, -(-stop // KEY_TILE)).astype(jnp.int32)
    return first, last


def _power_of_two_long(array):
    size = 1 << max(0, (array.shape[0] - 1).bit_length())
    return jnp.pad(array, (0, size - array.shape[0]), constant_values=1)


def _state_by_stream(spec, queries, keys, values, divisor, factors, lengths, left_out, top=None):
    """The same sums by the streamed engine (``top``: each row's known maximum log
    weight): the backward pass's recomputation, and the empty inputs' state."""
    d = spec.d
    divisor = None if divisor is None else [divisor[j] for j in range(d)]

    def block(query_rows, query_ids, key_rows, key_ids, value_rows):
        q = [query_rows[:, j, None] for j in range(query_rows.shape[1])]
        k = [key_rows[None, :, j] for j in range(d)]
        log_w = pair_log_weights(q[:d], k, spec.kernel, divisor)
        allowed = key_ids[None, :] < spec.limit
        if lengths is not None:
            allowed = allowed & (key_ids[None, :] < lengths[query_ids][:, None])
        if left_out is not None:
            allowed = allowed & (key_ids[None, :] != left_out[query_ids][:, None])
        log_w = jnp.where(allowed, log_w, -jnp.inf)
        known = jnp.max(log_w, axis=1) if top is None else top[query_ids]
        known = jax.lax.stop_gradient(known)
        weights = jnp.exp(log_w - jnp.where(known > -jnp.inf, known, 0.0)[:, None])
        if factors is not None:
            weights = weights * factors[key_ids][None, :]
        v = [value_rows[None, :, c] for c in range(value_rows.shape[1])]
        pairs = pair_features(spec, q, k, v)
        sums = [jnp.sum(weights * jnp.broadcast_to(f, weights.shape), axis=1) for f in pairs]
        return PoolingState(known, jnp.sum(weights, axis=1), jnp.stack(sums, axis=1))

    if queries.shape[0] == 0 or keys.shape[0] == 0:
        width = feature_count(spec)
        dtype = np.result_type(keys.dtype, values.dtype)
        n = queries.shape[0]
        return PoolingState(
            jnp.full((n,), -jnp.inf, dtype), jnp.zeros((n,), dtype), jnp.zeros((n, width), dtype)
        )
    return stream_state(block, queries, keys, values, key_block=KEY_TILE * 16)
