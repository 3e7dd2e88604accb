"""The tiled kernel's backward pass: two Pallas kernels, as FlashAttention's.

The forward sums are ``s_q = Σ_i w_qi`` and ``t_qf = Σ_i w_qi f_qif`` with
``w_qi = c_i e^(l_qi − m_q)``, each row's maximum ``m_q`` held fixed (it cancels in every
ratio). Their cotangents ``ŝ (n,)`` and ``t̂ (n, F)`` give, pair by pair::

    ∂/∂l_qi = w_qi (ŝ_q + Σ_f t̂_qf f_qif),   ∂/∂f_qif = w_qi t̂_qf,
    ∂/∂c_i = Σ_q e^(l_qi − m_q) (ŝ_q + Σ_f t̂_qf f_qif)

pulled back through the pair's log weight and features by ``jax.vjp`` of the very
functions the forward kernel evaluates, inside the kernels. One kernel walks the key tiles
of each query tile and sums the queries' cotangents (and the divisor's, row by row); the
other walks the query tiles of each key tile and sums the keys', the values' and the
factors'. Both recompute the weights; nothing of size ``n·m`` is stored.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from .pallas_kernel import (
    KEY_TILE,
    QUERY_TILE,
    TileSums,
    allowed_pairs,
    launch,
    pair_features,
    pair_log_weights,
    rows_at,
    shift_of,
)

__all__ = ["tile_cotangents"]

_QUERY_ROWS = ("q", "lengths", "own", "top", "weight_sum_bar", "features_bar")
_KEY_ROWS = ("k", "ids", "factors", "v")


def _sum_to(x, shape):
    """``x (n, b)`` summed over the axes where ``shape`` has 1."""
    for axis in (0, 1):
        if shape[axis] == 1 and x.shape[axis] != 1:
            x = jnp.sum(x, axis=axis, keepdims=True)
    return x


def _tile_pullback(spec: TileSums, query_rows, key_rows, divisor, positions):
    """The cotangents of one (query tile, key tile): ``((q̄, k̄, v̄, h̄), c̄)``, ``q̄``/``h̄``
    lists of ``(rows, 1)``, ``k̄``/``v̄`` of ``(1, keys)``, ``c̄ (keys,)`` (None without
    factors). ``query_rows``/``key_rows``: the tiles' entries of ``_QUERY_ROWS`` and
    ``_KEY_ROWS``."""
    d = spec.d
    queries, lengths, own, top, weight_sum_bar, features_bar = query_rows
    keys, ids, factors, values = key_rows
    q = [column[:, None] for column in queries]
    k, v = [column[None, :] for column in keys], [column[None, :] for column in values]
    rows = q[0].shape[0]
    h = None if divisor is None else [jnp.broadcast_to(x, (rows, 1)) for x in divisor]

    def terms(q, k, v, h):
        log_w = pair_log_weights(q[:d], k, spec.kernel, h)
        return log_w, pair_features(spec, q, k, v, log_w, h)

    (log_w, features), pull_back = jax.vjp(terms, q, k, v, h)
    allowed = allowed_pairs(spec, positions, None if ids is None else ids[None, :],
                            None if lengths is None else lengths[:, None],
                            None if own is None else own[:, None])  # fmt: skip
    if allowed is not None:
        log_w = jnp.where(allowed, log_w, -jnp.inf)
    e = jnp.exp(log_w - shift_of(top)[:, None])
    inner = weight_sum_bar[:, None] + sum(
        bar[:, None] * feature for bar, feature in zip(features_bar, features, strict=True)
    )
    w = e if factors is None else e * factors[None, :]
    feature_cotangents = [
        _sum_to(w * bar[:, None], feature.shape)
        for bar, feature in zip(features_bar, features, strict=True)
    ]
    cotangents = pull_back((w * inner, feature_cotangents))
    return cotangents, None if factors is None else jnp.sum(e * inner, axis=0)


def _query_body(blocked, whole, *outputs, spec: TileSums, tiles: int):
    divisor = [whole["divisor"][j] for j in range(spec.d)] if "divisor" in whole else None
    query_rows = [_read(blocked.get(name)) for name in _QUERY_ROWS]
    zeros = jnp.zeros(query_rows[0][0].shape, outputs[0].dtype)

    def step(tile, sums):
        key_rows = rows_at(whole, _KEY_ROWS, tile * KEY_TILE, KEY_TILE)
        positions = tile * KEY_TILE + jnp.arange(KEY_TILE, dtype=jnp.int32)[None, :]
        (q_bar, _, _, h_bar), _ = _tile_pullback(spec, query_rows, key_rows, divisor, positions)
        parts = q_bar + (h_bar or [])
        return tuple(old + part[:, 0] for old, part in zip(sums, parts, strict=True))

    program = pl.program_id(0)
    start, stop = (whole["first"][program], whole["last"][program]) if spec.ranged else (0, tiles)
    sums = jax.lax.fori_loop(start, stop, step, tuple(zeros for _ in outputs))
    for ref, value in zip(outputs, sums, strict=True):
        ref[...] = value


def _key_body(blocked, whole, *outputs, spec: TileSums, tiles: int):
    divisor = [whole["divisor"][j] for j in range(spec.d)] if "divisor" in whole else None
    key_rows = [_read(blocked.get(name)) for name in _KEY_ROWS]
    program = pl.program_id(0)
    positions = program * KEY_TILE + jnp.arange(KEY_TILE, dtype=jnp.int32)[None, :]
    zeros = jnp.zeros(key_rows[0][0].shape, outputs[0].dtype)

    def step(tile, sums):
        query_rows = rows_at(whole, _QUERY_ROWS, tile * QUERY_TILE, QUERY_TILE)
        (_, k_bar, v_bar, _), c_bar = _tile_pullback(spec, query_rows, key_rows, divisor, positions)
        parts = [bar[0] for bar in k_bar + v_bar] + ([] if c_bar is None else [c_bar])
        return tuple(old + part for old, part in zip(sums, parts, strict=True))

    start, stop = (whole["first"][program], whole["last"][program]) if spec.ranged else (0, tiles)
    sums = jax.lax.fori_loop(start, stop, step, tuple(zeros for _ in outputs))
    for ref, value in zip(outputs, sums, strict=True):
        ref[...] = value


def _read(ref):
    if ref is None:
        return None
    return [r[...] for r in ref] if isinstance(ref, list) else ref[...]


def tile_cotangents(spec: TileSums, floats: dict, ints: dict, top, weight_sum_bar, features_bar):
    """The cotangents of ``floats`` (the forward's padded columns: ``"q"``, ``"k"``,
    ``"v"``, and ``"divisor"``/``"factors"`` where present) given those of the weight
    sums ``(n,)`` and the features ``(F, n)``; ``ints``: the forward's masks and tile
    ranges (``"query_first"``/``"query_last"``: query tiles per key tile)."""
    n, m = floats["q"][0].shape[0], floats["k"][0].shape[0]
    dtype = floats["k"][0].dtype
    query_side = {"q": floats["q"], "top": top, "weight_sum_bar": weight_sum_bar,
                  "features_bar": list(features_bar)}  # fmt: skip
    key_side = {"k": floats["k"], "v": floats["v"]}
    for name in ("lengths", "own"):
        if name in ints:
            query_side[name] = ints[name]
    if "ids" in ints:
        key_side["ids"] = ints["ids"]
    if "factors" in floats:
        key_side["factors"] = floats["factors"]
    shared = {"divisor": floats["divisor"]} if "divisor" in floats else {}
    ranges = {"first": ints["first"], "last": ints["last"]} if spec.ranged else {}
    swapped = {"first": ints["query_first"], "last": ints["query_last"]} if spec.ranged else {}
    d, width = spec.d, len(floats["q"])
    query_parts = launch(
        functools.partial(_query_body, spec=spec, tiles=m // KEY_TILE),
        query_side, {**key_side, **shared, **ranges},
        width + (d if "divisor" in floats else 0),
        tile=QUERY_TILE, dtype=dtype, name="attnpool_tile_query_cotangents",
    )  # fmt: skip
    key_parts = launch(
        functools.partial(_key_body, spec=spec, tiles=n // QUERY_TILE),
        key_side, {**query_side, **shared, **swapped},
        d + spec.p + (1 if "factors" in floats else 0),
        tile=KEY_TILE, dtype=dtype, name="attnpool_tile_key_cotangents",
    )  # fmt: skip
    out = {"q": list(query_parts[:width]), "k": list(key_parts[:d]),
           "v": list(key_parts[d : d + spec.p])}  # fmt: skip
    if "divisor" in floats:
        by_column = jnp.stack([jnp.sum(part) for part in query_parts[width:]])
        out["divisor"] = jnp.zeros_like(floats["divisor"]).at[:d].set(by_column)
    if "factors" in floats:
        out["factors"] = key_parts[-1]
    return out
