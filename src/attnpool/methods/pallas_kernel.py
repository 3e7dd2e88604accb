"""The tiled kernel-sums kernel, written in Pallas: one program per query tile, key tiles
streamed through on-chip memory, the log-domain state kept per query row.

For a tile of ``QUERY_TILE`` queries the program walks key tiles of ``KEY_TILE`` keys in a
``fori_loop`` and keeps, per query row, the running maximum ``m`` of the log weights, the
weight sum ``s`` and the weighted features ``t`` (:class:`attnpool.sums.state.PoolingState`,
the FlashAttention update)::

    m' = max(m, max_i l_i),   s' = s e^(m−m') + Σ_i w_i e^(l_i−m'),   t' = … f_i

Every array is handled one coordinate at a time — a query column is a ``(QUERY_TILE,)``
vector, a key column a ``(KEY_TILE,)`` slice, a pair quantity a ``(QUERY_TILE, KEY_TILE)``
tile — so the kernel lowers to Triton (whose tensors have power-of-two shapes) for any
number of columns, and runs unchanged in Pallas' interpret mode on a CPU. Log weights are
formed in the difference form ``Σ_j ((q_j − k_j)/h_j)²`` (exact, no cancellation), a
compact kernel's edge decided by :func:`attnpool.kernels.edges.edge_log_profile` exactly as
every other path decides it.

What is summed is static (:class:`TileSums`): the pooled values or local linear's moments
``[r, δ, δδᵀ, δ rᵀ]`` about a reference row, with a key mask of valid lengths, each query's
left-out key, the keys' observation weights as factors after the shift, and, for compact
kernels on keys sorted by their first coordinate, the range of key tiles within reach of
each query tile (tiles beyond it cost nothing).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from ..kernels import Kernel
from ..kernels.edges import edge_log_profile, has_edge

__all__ = [
    "KEY_TILE",
    "QUERY_TILE",
    "TileSums",
    "feature_count",
    "pair_features",
    "pair_log_weights",
    "tile_sums",
]

#: Queries per program and keys per step (powers of two, as Triton's tensors need).
QUERY_TILE = 64
KEY_TILE = 64


@dataclass(frozen=True)
class TileSums:
    """What one call sums (static: each combination is its own kernel).

    ``d`` coordinates and ``p`` value columns; ``scaled``: the coordinates arrive divided
    by the bandwidth (else a divisor per column is passed and each difference divided by
    it); ``masked``: each query attends keys whose id is below its length; ``leave_one_out``:
    each query drops the key whose id is its own; ``weighted``: keys carry factors;
    ``ranged``: each query tile walks only its own range of key tiles; ``moments``: local
    linear's moments about a reference row of ``d + p`` numbers that follows each query's
    coordinates, instead of the values; ``limit``: the real keys (those past it pad the
    last tile).
    """

    kernel: Kernel
    d: int
    p: int
    scaled: bool = True
    masked: bool = False
    leave_one_out: bool = False
    weighted: bool = False
    ranged: bool = False
    moments: bool = False
    limit: int = 0


def feature_count(spec: TileSums) -> int:
    """Summed features per query row: ``p`` values, or ``p + d + d² + d·p`` moments."""
    d, p = spec.d, spec.p
    return p + d + d * d + d * p if spec.moments else p


def pair_log_weights(query_columns, key_columns, kernel: Kernel, divisor=None):
    """``(q, k)`` log weights from columns: ``query_columns`` ``d`` arrays ``(n, 1)``,
    ``key_columns`` ``d`` arrays ``(1, b)``, ``divisor`` ``d`` scalars or None (scaled
    coordinates). The exact difference form; from unscaled rows a compact kernel's edge is
    decided as everywhere else (:func:`attnpool.sums.geometry.block_log_weights`)."""
    if kernel.similarity == "dot":
        return kernel.log_profile(
            sum(q * k for q, k in zip(query_columns, key_columns, strict=True))
        )
    us = [q - k for q, k in zip(query_columns, key_columns, strict=True)]
    if divisor is not None:
        us = [u / h for u, h in zip(us, divisor, strict=True)]
        if has_edge(kernel):
            return edge_log_profile(us, kernel, jnp)
    if kernel.product:
        return sum(kernel.log_profile(u * u) for u in us)
    return kernel.log_profile(sum(u * u for u in us))


def pair_features(spec: TileSums, query_columns, key_columns, value_columns) -> list:
    """The summed features of a tile's pairs, each ``(n, b)`` or broadcastable to it."""
    if not spec.moments:
        return list(value_columns)
    d, p = spec.d, spec.p
    origin = query_columns[d:]
    delta = [key_columns[j] - origin[j] for j in range(d)]
    response = [value_columns[c] - origin[d + c] for c in range(p)]
    products = {}
    for j in range(d):
        for i in range(j, d):
            products[j, i] = products[i, j] = delta[j] * delta[i]
    squares = [products[j, i] for j in range(d) for i in range(d)]
    cross = [delta[j] * response[c] for j in range(d) for c in range(p)]
    return response + delta + squares + cross


def _body(*refs, spec: TileSums, key_tiles: int):
    d, p, features = spec.d, spec.p, feature_count(spec)
    pending = iter(refs)
    take = functools.partial(next, pending)
    query_columns = [take()[...][:, None] for _ in range(d + (d + p if spec.moments else 0))]
    lengths = take()[...][:, None] if spec.masked else None
    own = take()[...][:, None] if spec.leave_one_out else None
    first, last = (take(), take()) if spec.ranged else (None, None)
    divisor_ref = None if spec.scaled else take()
    key_refs = [take() for _ in range(d)]
    id_ref = take() if spec.masked or spec.leave_one_out else None
    factor_ref = take() if spec.weighted else None
    value_refs = [take() for _ in range(p)]
    max_ref, sum_ref, *feature_refs = pending
    dtype = sum_ref.dtype
    divisor = None if divisor_ref is None else [divisor_ref[j] for j in range(d)]
    rows = query_columns[0].shape[0]

    def step(tile, carry):
        top, total, sums = carry
        keys = pl.ds(pl.multiple_of(tile * KEY_TILE, KEY_TILE), KEY_TILE)
        key_columns = [ref[keys][None, :] for ref in key_refs]
        log_w = pair_log_weights(query_columns[:d], key_columns, spec.kernel, divisor)
        if spec.limit % KEY_TILE:
            positions = tile * KEY_TILE + jnp.arange(KEY_TILE, dtype=jnp.int32)
            log_w = jnp.where(positions[None, :] < spec.limit, log_w, -jnp.inf)
        if id_ref is not None:
            ids = id_ref[keys][None, :]
            if lengths is not None:
                log_w = jnp.where(ids < lengths, log_w, -jnp.inf)
            if own is not None:
                log_w = jnp.where(ids == own, -jnp.inf, log_w)
        new_top = jnp.maximum(top, jnp.max(log_w, axis=1))
        shift = jnp.where(new_top > -jnp.inf, new_top, 0.0)
        weights = jnp.exp(log_w - shift[:, None])
        if factor_ref is not None:
            weights = weights * factor_ref[keys][None, :]
        rescale = jnp.exp(top - shift)
        values = [ref[keys][None, :] for ref in value_refs]
        pairs = pair_features(spec, query_columns, key_columns, values)
        sums = tuple(
            rescale * old + jnp.sum(weights * feature, axis=1)
            for old, feature in zip(sums, pairs, strict=True)
        )
        return new_top, rescale * total + jnp.sum(weights, axis=1), sums

    start, stop = (
        (first[pl.program_id(0)], last[pl.program_id(0)]) if spec.ranged else (0, key_tiles)
    )
    init = (
        jnp.full((rows,), -jnp.inf, dtype),
        jnp.zeros((rows,), dtype),
        tuple(jnp.zeros((rows,), dtype) for _ in range(features)),
    )
    top, total, sums = jax.lax.fori_loop(start, stop, step, init)
    max_ref[...] = top
    sum_ref[...] = total
    for ref, value in zip(feature_refs, sums, strict=True):
        ref[...] = value


def tile_sums(
    spec: TileSums,
    query_columns,
    key_columns,
    value_columns,
    *,
    divisor=None,
    lengths=None,
    own=None,
    key_ids=None,
    factors=None,
    tile_range=None,
):
    """``(max_log (n,), weight_sum (n,), features (F, n))`` over padded columns.

    ``query_columns``: ``d`` (``2d + p`` with moments) arrays ``(n,)``, ``n`` a multiple of
    :data:`QUERY_TILE`; ``key_columns``/``value_columns``: ``d``/``p`` arrays ``(m,)``, ``m``
    a multiple of :data:`KEY_TILE`; ``divisor (D,)`` (``D ≥ d``, a power of two) unless
    scaled; ``lengths``/``own (n,)`` int32 and ``key_ids (m,)`` int32 for the masks;
    ``factors (m,)``; ``tile_range``: ``(first, last)`` key tiles per query tile, int32.
    Lowered for a GPU the kernel is compiled by Triton; for any other platform it runs in
    Pallas' interpreter.
    """
    n, m = query_columns[0].shape[0], key_columns[0].shape[0]
    dtype = key_columns[0].dtype
    whole = lambda size: pl.BlockSpec((size,), lambda i: (0,))  # noqa: E731
    rows = pl.BlockSpec((QUERY_TILE,), lambda i: (i,))
    inputs, specs = list(query_columns), [rows] * len(query_columns)
    for extra in (lengths, own):
        if extra is not None:
            inputs.append(extra)
            specs.append(rows)
    if tile_range is not None:
        inputs.extend(tile_range)
        specs.extend(whole(t.shape[0]) for t in tile_range)
    if divisor is not None:
        inputs.append(divisor)
        specs.append(whole(divisor.shape[0]))
    for group in (key_columns, [key_ids], [factors], value_columns):
        for column in group:
            if column is not None:
                inputs.append(column)
                specs.append(whole(m))
    count = 2 + feature_count(spec)

    def call(interpret: bool):
        params = {}
        if not interpret:
            from jax.experimental.pallas import triton as pallas_triton

            params["compiler_params"] = pallas_triton.CompilerParams(num_warps=4, num_stages=2)
        return pl.pallas_call(
            functools.partial(_body, spec=spec, key_tiles=m // KEY_TILE),
            out_shape=[jax.ShapeDtypeStruct((n,), dtype)] * count,
            grid=(n // QUERY_TILE,),
            in_specs=specs,
            out_specs=[rows] * count,
            interpret=interpret,
            name="attnpool_tile_sums",
            **params,
        )(*inputs)

    # Triton where the program is lowered for a GPU, Pallas' interpreter elsewhere
    outputs = jax.lax.platform_dependent(
        cuda=lambda: call(False), rocm=lambda: call(False), default=lambda: call(True)
    )
    return outputs[0], outputs[1], jnp.stack(outputs[2:]) if count > 2 else None
