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
import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from ..kernels import Kernel
from ..kernels.edges import edge_log_profile, has_edge
from ..kernels.norms import squared_norm

__all__ = [
    "KEY_TILE",
    "QUERY_TILE",
    "TileSums",
    "allowed_pairs",
    "feature_count",
    "launch",
    "pair_features",
    "pair_log_weights",
    "rows_at",
    "shift_of",
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
    coordinates, instead of the values; ``stage`` with ``polynomial`` (the monomials'
    exponents): a local polynomial's sums (:mod:`attnpool.regression.polynomial_blocks`)
    from the columns that follow each query's coordinates — ``"mean"``: the offsets
    ``δ = x − x_r`` from the reference ``x_r`` (``d`` columns); ``"spread"``: ``(δ − μ)²``
    (``x_r``, ``μ``); ``"moments"``: the monomials' products ``z^α z^β`` and
    ``z^α (y − y_r)``, ``z = (δ − μ)/s`` (``x_r``, ``μ``, ``s``, ``y_r``); ``limit``: the
    real keys (those past it pad the last tile).
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
    stage: str = ""
    polynomial: tuple[tuple[int, ...], ...] = ()


def feature_count(spec: TileSums) -> int:
    """Summed features per query row: ``p`` values, or ``p + d + d² + d·p`` moments."""
    d, p = spec.d, spec.p
    if spec.stage == "moments":
        return len(spec.polynomial) * (len(spec.polynomial) + p)
    if spec.stage:
        return d
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
    return kernel.log_profile(squared_norm(us, kernel, jnp))


def pair_features(spec: TileSums, query_columns, key_columns, value_columns, log_w=None,
                  divisor=None) -> list:  # fmt: skip
    """The summed features of a tile's pairs, each ``(n, b)`` or broadcastable to it;
    ``log_w``: the pairs' log weights (a polynomial's monomials are 0 where they are
    ``−inf``: far keys' powers would overflow, and 0 · inf is NaN). ``divisor``: the
    rows are unscaled, and the moments' differences are taken in its units."""
    if spec.stage:
        return _polynomial_features(spec, query_columns, key_columns, value_columns, log_w)
    if not spec.moments:
        return list(value_columns)
    d, p = spec.d, spec.p
    origin = query_columns[d:]
    delta = [key_columns[j] - origin[j] for j in range(d)]
    if divisor is not None:
        delta = [u / h for u, h in zip(delta, divisor[:d], strict=True)]
    response = [value_columns[c] - origin[d + c] for c in range(p)]
    products = {}
    for j in range(d):
        for i in range(j, d):
            products[j, i] = products[i, j] = delta[j] * delta[i]
    squares = [products[j, i] for j in range(d) for i in range(d)]
    cross = [delta[j] * response[c] for j in range(d) for c in range(p)]
    return response + delta + squares + cross


def _polynomial_features(spec: TileSums, query_columns, key_columns, value_columns,
                         log_w) -> list:  # fmt: skip
    """A local polynomial's features of the stage ``spec.stage`` (:class:`TileSums`)."""
    d, p = spec.d, spec.p
    extra = query_columns[d:]
    delta = [key_columns[j] - extra[j] for j in range(d)]
    if spec.stage == "mean":
        return delta
    centred = [delta[j] - extra[d + j] for j in range(d)]
    if spec.stage == "spread":
        return [c * c for c in centred]
    zs = [jnp.where(log_w > -jnp.inf, centred[j] / extra[2 * d + j], 0.0) for j in range(d)]
    basis = [math.prod((z**a for z, a in zip(zs, alpha, strict=True)), start=jnp.ones_like(zs[0]))
             for alpha in spec.polynomial]  # fmt: skip
    responses = [value_columns[c] - extra[3 * d + c] for c in range(p)]
    return [a * b for a in basis for b in basis] + [a * r for a in basis for r in responses]


def allowed_pairs(spec: TileSums, positions, ids, lengths, own):
    """``(n, b)`` pairs a tile may sum, or None for all: keys at ``positions (1, b)`` past
    ``spec.limit`` are padding; ``ids (1, b)`` against each query's ``lengths (n, 1)`` and
    left-out key ``own (n, 1)``."""
    allowed = None

    def both(mask):
        return mask if allowed is None else allowed & mask

    if spec.limit % KEY_TILE:
        allowed = both(positions < spec.limit)
    if lengths is not None:
        allowed = both(ids < lengths)
    if own is not None:
        allowed = both(ids != own)
    return allowed


def rows_at(refs, names, start, size):
    """The entries ``names`` of a dict of whole refs, sliced ``[start, start + size)``:
    lists of columns as lists of ``(size,)`` arrays, single columns as arrays, absent
    ones None."""
    where = pl.ds(pl.multiple_of(start, size), size)
    out = []
    for name in names:
        ref = refs.get(name)
        out.append(None if ref is None else [r[where] for r in ref] if isinstance(ref, list)
                   else ref[where])  # fmt: skip
    return out


def shift_of(top):
    """The log weights' shift: each row's maximum, 0 where a row has none."""
    return jnp.where(top > -jnp.inf, top, 0.0)


def _forward_body(blocked, whole, top_ref, sum_ref, *feature_refs, spec: TileSums, tiles: int):
    d = spec.d
    query_columns = [ref[...][:, None] for ref in blocked["q"]]
    lengths, own = (blocked[n][...][:, None] if n in blocked else None for n in ("lengths", "own"))
    divisor = [whole["divisor"][j] for j in range(d)] if "divisor" in whole else None
    rows = query_columns[0].shape[0]
    dtype = sum_ref.dtype

    def step(tile, carry):
        top, total, sums = carry
        keys, ids, factors, values = rows_at(whole, ("k", "ids", "factors", "v"), tile * KEY_TILE,
                                             KEY_TILE)  # fmt: skip
        key_columns = [k[None, :] for k in keys]
        log_w = pair_log_weights(query_columns[:d], key_columns, spec.kernel, divisor)
        positions = tile * KEY_TILE + jnp.arange(KEY_TILE, dtype=jnp.int32)[None, :]
        allowed = allowed_pairs(spec, positions, None if ids is None else ids[None, :],
                                lengths, own)  # fmt: skip
        if allowed is not None:
            log_w = jnp.where(allowed, log_w, -jnp.inf)
        new_top = jnp.maximum(top, jnp.max(log_w, axis=1))
        shift = shift_of(new_top)
        weights = jnp.exp(log_w - shift[:, None])
        if factors is not None:
            weights = weights * factors[None, :]
        rescale = jnp.exp(top - shift)
        values = [v[None, :] for v in values]
        pairs = pair_features(spec, query_columns, key_columns, values, log_w, divisor)
        sums = tuple(
            rescale * old + jnp.sum(weights * feature, axis=1)
            for old, feature in zip(sums, pairs, strict=True)
        )
        return new_top, rescale * total + jnp.sum(weights, axis=1), sums

    program = pl.program_id(0)
    start, stop = (whole["first"][program], whole["last"][program]) if spec.ranged else (0, tiles)
    init = (
        jnp.full((rows,), -jnp.inf, dtype),
        jnp.zeros((rows,), dtype),
        tuple(jnp.zeros((rows,), dtype) for _ in range(feature_count(spec))),
    )
    top, total, sums = jax.lax.fori_loop(start, stop, step, init)
    top_ref[...] = top
    sum_ref[...] = total
    for ref, value in zip(feature_refs, sums, strict=True):
        ref[...] = value


def launch(body, blocked: dict, whole: dict, outputs: int, *, tile: int, dtype, name: str):
    """``outputs`` arrays ``(N,)`` of ``body(blocked_refs, whole_refs, *output_refs)`` run
    once per tile of ``tile`` rows of the ``(N,)`` arrays in ``blocked`` (dicts of arrays
    or of lists of arrays), the arrays in ``whole`` passed entire. Lowered for a GPU the
    kernel is compiled by Triton; for any other platform it runs in Pallas' interpreter."""
    size = jax.tree_util.tree_leaves(blocked)[0].shape[0]
    rows = pl.BlockSpec((tile,), lambda i: (i,))
    in_specs = [
        jax.tree_util.tree_map(lambda _: rows, blocked),
        jax.tree_util.tree_map(lambda a: pl.BlockSpec(a.shape, lambda i: (0,) * a.ndim), whole),
    ]

    def call(interpret: bool):
        params = {}
        if not interpret:
            from jax.experimental.pallas import triton as pallas_triton

            params["compiler_params"] = pallas_triton.CompilerParams(num_warps=4, num_stages=2)
        return pl.pallas_call(
            body,
            out_shape=[jax.ShapeDtypeStruct((size,), dtype)] * outputs,
            grid=(size // tile,),
            in_specs=in_specs,
            out_specs=[rows] * outputs,
            interpret=interpret,
            name=name,
            **params,
        )(blocked, whole)

    # Triton where the program is lowered for a GPU, Pallas' interpreter elsewhere
    return jax.lax.platform_dependent(
        cuda=lambda: call(False), rocm=lambda: call(False), default=lambda: call(True)
    )


def tile_sums(spec: TileSums, queries: dict, keys: dict, shared: dict):
    """``(max_log (n,), weight_sum (n,), features (F, n))`` over padded columns.

    ``queries``: ``"q"``, ``d`` (``2d + p`` with moments) arrays ``(n,)``, ``n`` a multiple
    of :data:`QUERY_TILE`, and ``"lengths"``/``"own"`` ``(n,)`` int32 for the masks;
    ``keys``: ``"k"``/``"v"``, ``d``/``p`` arrays ``(m,)``, ``m`` a multiple of
    :data:`KEY_TILE`, ``"ids"`` ``(m,)`` int32 and ``"factors"`` ``(m,)``; ``shared``:
    ``"divisor" (D,)`` (``D ≥ d``, a power of two) unless scaled, ``"first"``/``"last"``
    key tiles per query tile, int32, when ranged.
    """
    count = 2 + feature_count(spec)
    m = keys["k"][0].shape[0]
    body = functools.partial(_forward_body, spec=spec, tiles=m // KEY_TILE)
    outputs = launch(body, queries, {**keys, **shared}, count, tile=QUERY_TILE,
                     dtype=keys["k"][0].dtype, name="attnpool_tile_sums")  # fmt: skip
    return outputs[0], outputs[1], jnp.stack(outputs[2:]) if count > 2 else None
