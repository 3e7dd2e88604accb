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
  ``m``; two backward kernels (:mod:`.pallas_backward`) recompute the weights tile by
  tile with that ``m`` as the shift and pull the cotangents of ``s`` and ``t`` back to the
  queries (one program per query tile) and to the keys, values and weights (one per key
  tile). ``jit``, ``grad`` and ``vmap`` all apply.

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
from ..sums.local_model import LocalModel
from ..sums.state import PoolingState
from .pallas_backward import tile_cotangents
from .pallas_kernel import KEY_TILE, QUERY_TILE, TileSums, feature_count, tile_sums

__all__ = [
    "GPU_BACKENDS",
    "fit_refusal",
    "interpreted",
    "refusal",
    "search_refusal",
    "supports",
    "tile_range",
    "tiled_state",
]

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


def fit_refusal(model: LocalModel) -> str | None:
    """Why ``pallas`` cannot compute the local fit ``model``, or None: continuous columns,
    a kernel it sums."""
    if model.categorical or not supports(model.kernel):
        return (
            "'pallas' fits continuous columns with a non-negative kernel; received "
            f"var_type={model.var_type!r}, kernel={model.kernel.name!r}"
        )
    return None


def search_refusal(model: LocalModel, criterion: str) -> str | None:
    """Why ``pallas``' leave-one-out sums cannot serve a search of ``model``, or None:
    those of every fit it computes, by any criterion."""
    reason = fit_refusal(model)
    return reason and reason.replace("fits", "searches", 1)


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
    stage: str = "",
    polynomial: tuple = (),
) -> PoolingState:
    """Pooling state of ``queries (n, ·)`` over ``keys (m, d)`` with ``values (m, p)``.

    ``divisor (d,)``: the rows are unscaled and each difference is divided by it (as
    :func:`attnpool.sums.geometry.block_coordinates` gives them; None: already scaled).
    ``key_count``: keys from this row on are padding; ``lengths (n,)``: query ``i``
    attends keys ``0 … lengths_i − 1``; ``left_out (n,)``: the key each query leaves
    out (``−1``: none); ``factors (m,)``: the keys' positive weights, multiplying their
    kernel weights after the shift. ``moments``: sum local linear's moments about the
    reference row of ``d + p`` numbers that follows each query's ``d`` coordinates
    (:mod:`attnpool.engines.local_fits`; the differences in units of ``divisor`` where it
    is given); ``weighted_values`` is then ``(n, p + d + d² + d·p)``. ``stage``,
    ``polynomial``: a local polynomial's sums from the columns that follow each query's
    coordinates (:class:`~.pallas_kernel.TileSums`).
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
        stage=stage,
        polynomial=tuple(polynomial),
    )
    if n == 0 or m == 0:
        width = feature_count(spec)
        dtype = np.result_type(keys.dtype, values.dtype)
        return PoolingState(
            jnp.full((n,), -jnp.inf, dtype), jnp.zeros((n,), dtype), jnp.zeros((n, width), dtype)
        )
    if divisor is not None:
        divisor = jnp.broadcast_to(jnp.asarray(divisor, keys.dtype), (d,))
    as_ints = lambda a: None if a is None else jnp.asarray(a, jnp.int32)  # noqa: E731
    lengths, left_out = as_ints(lengths), as_ints(left_out)
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

    def pad(array, extra):  # repeated edge rows: padded keys sit past the limit
        return jnp.pad(array, [(0, extra)], mode="edge")

    floats = {
        "q": [pad(queries[:, j], rows) for j in range(queries.shape[1])],
        "k": [pad(keys[:, j], slots) for j in range(d)],
        "v": [pad(values[:, c], slots) for c in range(values.shape[1])],
    }
    if divisor is not None:
        floats["divisor"] = _power_of_two_long(divisor)
    if factors is not None:
        floats["factors"] = pad(factors, slots)
    ints = {name: pad(a, rows) for name, a in (("lengths", lengths), ("own", left_out))
            if a is not None}  # fmt: skip
    if spec.masked or spec.leave_one_out:
        ints["ids"] = pad(key_ids, slots)
    if spec.ranged:
        reach = kernel.support * jnp.abs(divisor[0]) * (1 + _REACH_MARGIN)
        ints["first"], ints["last"] = tile_range(floats["q"][0], keys[:, 0], reach, KEY_TILE)
        ints["query_first"], ints["query_last"] = tile_range(
            floats["k"][0], floats["q"][0], reach, QUERY_TILE, tile=KEY_TILE
        )
    top, total, features = _tiled(spec, floats, ints)
    outputs = (top[:n], total[:n], features[:, :n].T)
    if query_order is not None:
        outputs = tuple(jnp.zeros_like(a).at[query_order].set(a) for a in outputs)
    return PoolingState(jax.lax.stop_gradient(outputs[0]), outputs[1], outputs[2])


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _tiled(spec: TileSums, floats: dict, ints: dict):
    return _sums(spec, floats, ints)


def _sums(spec: TileSums, floats: dict, ints: dict):
    """``(max_log (n,), weight_sum (n,), features (F, n))`` of the padded columns."""
    queries = {"q": floats["q"], **{n: ints[n] for n in ("lengths", "own") if n in ints}}
    keys = {name: source[name] for name, source in
            (("k", floats), ("v", floats), ("factors", floats), ("ids", ints))
            if name in source}  # fmt: skip
    shared = {name: source[name] for name, source in
              (("divisor", floats), ("first", ints), ("last", ints)) if name in source}  # fmt: skip
    top, total, features = tile_sums(spec, queries, keys, shared)
    if features is None:
        features = jnp.zeros((0, total.shape[0]), total.dtype)
    return top, total, features


def _tiled_forward(spec, floats, ints):
    outputs = _sums(spec, floats, ints)
    return outputs, (floats, ints, outputs[0])


def _tiled_backward(spec, saved, cotangents):
    floats, ints, top = saved
    _, weight_sum_bar, features_bar = cotangents
    return tile_cotangents(spec, floats, ints, top, weight_sum_bar, features_bar), None


_tiled.defvjp(_tiled_forward, _tiled_backward)


def tile_range(rows, sorted_others, reach, other_tile: int, tile: int = QUERY_TILE):
    """``(first, last)`` tiles of ``other_tile`` entries of ``sorted_others`` within
    ``reach`` of each tile of ``tile`` entries of the sorted, padded ``rows``: the tiles a
    compact kernel's pairs can fall in (both sides sorted by their first coordinate)."""
    tiles = rows.reshape(-1, tile)
    start = jnp.searchsorted(sorted_others, tiles[:, 0] - reach, side="left")
    stop = jnp.searchsorted(sorted_others, tiles[:, -1] + reach, side="right")
    first = (start // other_tile).astype(jnp.int32)
    last = jnp.maximum(first, -(-stop // other_tile)).astype(jnp.int32)
    return first, last


def _power_of_two_long(array):
    size = 1 << max(0, (array.shape[0] - 1).bit_length())
    return jnp.pad(array, (0, size - array.shape[0]), constant_values=1)
