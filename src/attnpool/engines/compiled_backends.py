"""The compiled engines as backends: ``dense``, ``stream``, ``fused`` and ``pallas``.

Each is one object that declares what it serves (:class:`~attnpool.sums.backends.Serves`)
and computes the log-domain pooling state ``(m, s, t)`` of :mod:`attnpool.sums.state` in
two settings:

- :meth:`Engine.state`, inside a traced program: pooling's (:mod:`.programs`), with a
  key mask, padded keys and a bound on each row's log weights — what ``jit``, ``grad``
  and ``vmap`` run;
- :meth:`Engine.log_sums` of a concrete :class:`~attnpool.sums.problem.SumProblem`: the
  backend protocol's one call, answered as every host backend answers it, in the rows'
  precision (float64 for float64 rows), with observation weights, leave-one-out rows and
  ``K²`` where it serves them.

``dense`` sums every key in one block (the ``(n, m)`` matrix formed), ``stream`` merges
key blocks in a scan (memory ``O(block)``), ``fused`` runs each block through
:func:`jax.nn.dot_product_attention` (the Gaussian's matrix-product form; float32
logits) and ``pallas`` the tiled kernel (Triton on GPUs, interpreted elsewhere).
:data:`ENGINES` holds them by name.
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import kernels as _kernels
from .._support.interop import precision_scope
from .._support.shapes import MAX_ROWS, bucket, pad_rows, padded, query_bucket
from ..methods import dense_state, fused, pallas, stream_state
from ..methods.backends.columns import Columns, log_sums_of
from ..methods.options import exact_engine
from ..methods.options import refusal as method_refusal
from ..methods.stream import KEY_BLOCK
from ..sums.backends import Serves
from ..sums.backends import refusal as declared_refusal
from ..sums.geometry import host_lifted, scale_coordinates
from ..sums.local_model import LocalModel
from ..sums.observation_weights import column_scale
from ..sums.problem import LogSums, SumProblem
from ..sums.state import PoolingState
from .blocks import kernel_block, log_weight_bound, nearest_log_weight, smallest_magnitude
from .problem_blocks import BlockArrays, ProblemSums, problem_block

__all__ = ["ENGINES", "FUSED_KEY_BLOCK", "Engine", "Rows", "pool_state"]

#: Keys per block of the fused method (the fused kernel tiles each block itself).
FUSED_KEY_BLOCK = 16384
#: A streamed row whose weights under the log-weight bound sum to less than the keys'
#: count times ``2 / eps`` smallest normal numbers (float64: 2^53) is pooled again with
#: row maxima: the weights below the smallest normal number (each flushed to 0 on a CPU,
#: as XLA does) could then take more than the precision's rounding of its sum (far from
#: every key in d ≥ 3, rows 35 bandwidths off lost 6e-8 of their pool under a fixed 2^24).
#: The products of weights and values are held to the same floor: the sum is measured in
#: units of the smallest value magnitude below 1 (values of 1e-150 in two columns, 30
#: bandwidths from the keys, pooled to 0; observation weights' column ``w / max w`` of
#: 2e-117 at the nearest key made a weighted pool 0 / 0).
UNDERFLOW_PER_KEY_EPS = 2.0
#: Up to one row in this many is pooled again by itself; more, and every row is.
AGAIN_SHARE = 16
#: The widest span of observation weights the engines sum: each key's weight, in units of
#: the largest, multiplies its kernel weight after the shift, and a row's sum is then at
#: least ``1 / MAX_WEIGHT_SPAN`` (its heaviest kernel weight's key); a product flushed to
#: zero (XLA:CPU flushes subnormal numbers) is below ``2^−122`` of that. Wider weights
#: leave every row to the layer.
MAX_WEIGHT_SPAN = 2.0**900


class Rows(NamedTuple):
    """Block coordinates (:func:`~attnpool.sums.geometry.block_coordinates`): ``queries
    (n, d)``, ``keys (m, d)`` and, for unscaled rows, the ``divisor (d,)`` each difference
    is divided by (None: the rows are scaled)."""

    queries: Any
    keys: Any
    divisor: Any = None


@dataclasses.dataclass(frozen=True)
class Engine:
    """A compiled engine: its ``name``, what it ``serves``, and how it sums.

    Attributes
    ----------
    name : str
        The ``method=`` that selects it.
    serves : Serves
        What :meth:`log_sums` takes; pooling's program takes more (key masks, the dot
        kernel) where the method's own ``refusal`` allows.
    one_block : bool
        Every key in one block (``dense``), else key blocks in a scan.
    pads_keys : bool
        Keys padded to their bucket (:mod:`attnpool._support.shapes`): one program per
        bucket, not per size.
    scales_rows : bool
        Its blocks take rows already divided by the bandwidth where a local fit gives them
        (XLA's blocks: a bandwidth's gradient is then cheapest); else unscaled rows, each
        difference divided in the blocks.
    """

    name: str
    serves: Serves
    one_block: bool = False
    pads_keys: bool = True
    scales_rows: bool = True

    def refusal(self, problem: SumProblem) -> str | None:
        """Why it cannot sum ``problem``: a kernel of signed or similarity weights (no log
        domain), its declaration, then its method's own words."""
        kernel, d = problem.kernel, problem.keys.shape[1]
        if kernel.similarity != "distance" or kernel.base is not None:
            return f"{self.name!r} sums non-negative distance kernels; received {kernel.name!r}"
        return declared_refusal(self, problem, kernel) or method_refusal(self.name, kernel, d)

    def blocks(self, block, queries, keys, values, *, key_block: int, hard: bool = False):
        """The state of ``block`` over every key: one block, or blocks in a scan."""
        if self.one_block:
            return dense_state(block, queries, keys, values)
        return stream_state(block, queries, keys, values, key_block=key_block, hard=hard)

    def state(
        self, rows: Rows, values, *, kernel: _kernels.Kernel, key_count=None, allowed=None,
        key_block: int = KEY_BLOCK, bounded: bool = True,
    ) -> PoolingState:  # fmt: skip
        """Pooling's state of the block coordinates ``rows`` with ``values (m, p)``
        (traceable). ``key_count``: keys from this one on are padding; ``allowed``: a key
        mask (:mod:`attnpool.sums.masks`); ``bounded``: streamed blocks may skip their max
        reduction under a bound."""
        queries, keys, divisor = rows
        known = None
        if not self.one_block and allowed is None:  # a mask may hide the nearest key
            known = nearest_log_weight(queries, keys, kernel, divisor)
            if known is None and bounded:
                known = log_weight_bound(queries, kernel)
        block = kernel_block(kernel, max_log=known, streamed=not self.one_block,
                             key_count=key_count, divisor=divisor, allowed=allowed)  # fmt: skip
        return self.blocks(block, queries, keys, values, key_block=key_block)

    def closest(
        self, rows: Rows, values, *, kernel, key_count=None, allowed=None,
        key_block: int = KEY_BLOCK,
    ) -> PoolingState:  # fmt: skip
        """The zero-temperature state: the mean of each row's closest keys (``rows`` in
        relative coordinates, :func:`~attnpool.sums.geometry.scale_coordinates`)."""
        block = kernel_block(kernel, hard=True, key_count=key_count, allowed=allowed)
        return self.blocks(block, rows.queries, rows.keys, values, key_block=key_block,
                           hard=True)  # fmt: skip

    def problem_state(self, rows: Rows, columns, sums: ProblemSums,
                      arrays: BlockArrays, *,
                      key_block: int | None = None) -> PoolingState:  # fmt: skip
        """The state of a problem's arrays (traceable): ``rows`` unscaled, their divisor
        the bandwidth (or scaled, as ``sums`` says: :class:`~.problem_blocks.ProblemSums`),
        ``columns (m, c)`` the values summed — a :class:`SumProblem`'s ones, then its
        values; for moments the ones and the ``p`` values, each query row followed by
        its reference's ``d + p`` numbers (:mod:`.problem_blocks`) — and ``arrays`` what
        the blocks read beside them. ``key_block``: keys per streamed block (None: by the
        block's width)."""
        queries, keys, divisor = rows
        d = keys.shape[1]
        if not self.one_block and arrays.max_log is None and _nearest_is_heaviest(sums, arrays):
            # each row's maximum known beforehand: the streamed blocks skip its reduction
            known = nearest_log_weight(queries, keys, sums.model.kernel,
                                       None if sums.scaled else divisor)  # fmt: skip
            arrays = arrays._replace(max_log=known)
        block = problem_block(sums, divisor, arrays, streamed=not self.one_block)
        if key_block is None:
            moments = sums.model.degree and not sums.hard
            width = columns.shape[1] + (d + d * d + d * (columns.shape[1] - 1) - 1 if moments
                                        else 0)  # fmt: skip
            key_block = max(64, KEY_BLOCK // width) if moments else KEY_BLOCK
        return self.blocks(block, queries, keys, columns, key_block=key_block, hard=sums.hard)

    def log_sums(self, problem: SumProblem) -> LogSums:
        """``problem``'s sums in its rows' precision (float64 with observation weights);
        weights spanning more than :data:`MAX_WEIGHT_SPAN` leave every row unsettled."""
        return _log_sums(self, problem)


def _nearest_is_heaviest(sums: ProblemSums, arrays: BlockArrays) -> bool:
    """Whether each row's heaviest key is its nearest (:func:`.blocks.nearest_log_weight`
    finds it in one column): plain sums of ``K`` over every key, unweighted."""
    plain = sums.power == 1 and not sums.hard and sums.model.degree == 0
    unweighted = arrays.factors is None and arrays.left_out is None
    return plain and unweighted and sums.model.var_type == "c"


@dataclasses.dataclass(frozen=True)
class Stream(Engine):
    """``stream``: where the bound on the log weights let every weight of a row
    underflow, the row is pooled again with its own maximum."""

    def state(
        self, rows: Rows, values, *, kernel: _kernels.Kernel, key_count=None, allowed=None,
        key_block: int = KEY_BLOCK, bounded: bool = True,
    ) -> PoolingState:  # fmt: skip
        settings = dict(kernel=kernel, key_count=key_count, allowed=allowed, key_block=key_block)
        result = Engine.state(self, rows, values, bounded=bounded, **settings)
        queries, keys, _ = rows

        def again(queries):
            return Engine.state(self, rows._replace(queries=queries), values, bounded=False,
                                **settings)  # fmt: skip

        bound = bounded and allowed is None and _kernels.is_monotone(kernel)
        if not bound or kernel.compact or queries.shape[1] == 1:  # (then the maxima are known)
            return result
        info = jnp.finfo(result.weight_sum.dtype)
        floor = keys.shape[0] * UNDERFLOW_PER_KEY_EPS / float(info.eps) * float(info.tiny)
        low = result.weight_sum * smallest_magnitude(values) < floor
        few = max(1, queries.shape[0] // AGAIN_SHARE)

        def some_again():  # a few rows by themselves
            rows = jnp.nonzero(low, size=few, fill_value=-1)[0]
            rows = jnp.where(rows >= 0, rows, rows[0])  # padding repeats a row that is low
            exact = again(queries[rows])
            return jax.tree_util.tree_map(lambda a, b: a.at[rows].set(b), result, exact)

        def all_again():
            exact = again(queries)
            return jax.tree_util.tree_map(
                lambda a, b: jnp.where(low.reshape(-1, *[1] * (a.ndim - 1)), a, b), exact, result
            )

        count = jnp.sum(low)
        return jax.lax.cond(
            count == 0, lambda: result, lambda: jax.lax.cond(count <= few, some_again, all_again)
        )


@dataclasses.dataclass(frozen=True)
class Fused(Engine):
    """``fused``: blocks through :func:`jax.nn.dot_product_attention`, coordinates
    centred on the keys' mean; a key mask is the kernel's own."""

    def state(
        self, rows: Rows, values, *, kernel: _kernels.Kernel, key_count=None, allowed=None,
        key_block: int = KEY_BLOCK, bounded: bool = True,
    ) -> PoolingState:  # fmt: skip
        queries, keys, _ = rows
        engine = ENGINES[exact_engine(queries.shape[0] * keys.shape[0])]
        block = fused.fused_block(kernel, allowed)
        centred = fused.centred(queries, keys, kernel)
        return engine.blocks(block, *centred, values, key_block=FUSED_KEY_BLOCK)

    def problem_state(self, rows: Rows, columns, sums: ProblemSums,
                      arrays: BlockArrays, *,
                      key_block: int | None = None) -> PoolingState:  # fmt: skip
        kernel = sums.model.kernel
        unweighted = arrays.factors is None and arrays.left_out is None
        if not unweighted or sums.power != 1 or sums.hard or sums.scaled:
            raise ValueError("'fused' sums K of unweighted keys, every key in each row")
        # the matrix-product form drops each row's −‖q‖²/2, which absolute sums add back
        q, k = fused.centred(*scale_coordinates(*rows, kernel), kernel)
        found = self.state(Rows(q, k), columns, kernel=kernel)
        return found._replace(max_log=found.max_log - 0.5 * jnp.sum(q * q, axis=1))


@dataclasses.dataclass(frozen=True)
class Pallas(Engine):
    """``pallas``: the tiled kernel (:mod:`attnpool.methods.pallas`); a mask that is not
    a prefix of the keys is streamed with the mask's matrix."""

    def state(
        self, rows: Rows, values, *, kernel: _kernels.Kernel, key_count=None, allowed=None,
        key_block: int = KEY_BLOCK, bounded: bool = True,
    ) -> PoolingState:  # fmt: skip
        if allowed is not None and allowed.ndim != 1:
            return ENGINES["stream"].state(rows, values, kernel=kernel, key_count=key_count,
                                           allowed=allowed, key_block=key_block)  # fmt: skip
        queries, keys, divisor = rows
        return pallas.tiled_state(queries, keys, values, divisor, kernel=kernel,
                                  key_count=key_count, lengths=allowed)  # fmt: skip

    def problem_state(self, rows: Rows, columns, sums: ProblemSums,
                      arrays: BlockArrays, *,
                      key_block: int | None = None) -> PoolingState:  # fmt: skip
        if sums.hard:  # the nearest keys: streamed blocks
            return Engine.problem_state(self, rows, columns, sums, arrays, key_block=key_block)
        if sums.power != 1:
            raise ValueError("'pallas' sums K, not its powers")
        if sums.scaled:
            raise ValueError("'pallas' divides unscaled rows in its tiles")
        queries, keys, divisor = rows
        moments = sums.model.degree == 1
        if moments:  # (the ones' sum is the state's weight sum)
            columns = columns[:, 1:]
        return pallas.tiled_state(queries, keys, columns, divisor, kernel=sums.model.kernel,
                                  key_count=arrays.key_count, left_out=arrays.left_out,
                                  factors=arrays.factors, moments=moments)  # fmt: skip


#: The compiled engines by name.
ENGINES: dict[str, Engine] = {
    engine.name: engine
    for engine in (
        Engine("dense", Serves(var_types="cou", degrees=(0, 1)), one_block=True),
        Stream("stream", Serves(var_types="cou", degrees=(0, 1))),
        Fused(
            "fused",
            Serves(kernels=("gaussian",), weights=False, leave_one_out=False, powers=(1,)),
            pads_keys=False,
        ),
        Pallas("pallas", Serves(powers=(1,)), scales_rows=False),
    )
}


def pool_state(block, queries, keys, values, *, method: str, key_block: int, hard=False):
    """The state of a block function over every key by the engine ``method``: one block
    (``dense``), else key blocks in a scan (traceable)."""
    return ENGINES[method].blocks(block, queries, keys, values, key_block=key_block, hard=hard)


def _log_sums(engine: Engine, problem: SumProblem) -> LogSums:
    """:meth:`Engine.log_sums`: rows and keys padded to their buckets, the program run in
    the rows' precision (:func:`_precision`); each row's sums taken relative to its
    weights' sum (:func:`~attnpool.methods.backends.columns.log_sums_of`), so that a value
    column at ``2^−1000`` keeps its digits."""
    n, _, d, _ = problem.sizes
    about = _about(problem)  # (before the keys of weight 0 leave: the origins index them)
    problem, unit = _weighing_keys(problem)
    m = problem.keys.shape[0]
    weights = problem.weights
    too_wide = weights is not None and m > 0 and np.min(weights) * MAX_WEIGHT_SPAN < 1.0
    if n == 0 or m == 0 or too_wide:
        return LogSums(np.zeros(n), np.zeros((n, problem.width)), np.full(n, not too_wide))
    keys = problem.keys
    dtype = _precision(problem)
    scale = column_scale(problem.values)  # each value column in units of its largest
    values = np.asarray(problem.values / scale, dtype)
    key_count = None
    if engine.pads_keys and m <= MAX_ROWS:
        key_count = np.int32(m)
        keys, values = padded(keys, values, size=bucket(m))
        weights = None if weights is None else pad_rows(weights, bucket(m))
    rows = query_bucket(n)
    left_out = problem.left_out
    left_out = None if left_out is None else pad_rows(np.asarray(left_out, np.int32), rows)
    queries = problem.queries
    if about is not None:  # the reference's values in the same units
        queries = np.concatenate([queries, about[:, :d], about[:, d:] / scale], axis=1)
    queries, keys, bandwidth = host_lifted(*(np.asarray(a, dtype) for a in (queries, keys,
                                             problem.bandwidth)), problem.model)  # fmt: skip
    weights = None if weights is None else np.asarray(weights, dtype)
    with precision_scope(dtype):
        state = _problem_program(Rows(pad_rows(queries, rows), keys, bandwidth), values,
                                 weights, left_out, key_count, engine=engine,
                                 model=problem.model, power=problem.power)  # fmt: skip
    shift, sums = (np.asarray(a, np.float64)[:n] for a in state)
    shift = np.where(np.isfinite(shift), shift, 0.0) + unit
    if problem.degree:  # r and δr scale with the values; δ and δδ do not
        scale = np.concatenate([scale, np.ones(d + d * d), np.tile(scale, d)])
    return log_sums_of(sums, shift, np.ones(n, bool), Columns(values, None, scale))


def _about(problem: SumProblem) -> np.ndarray | None:
    """``(n, d + p)``: each row's reference key and its values (degree 1), else None."""
    if not problem.degree:
        return None
    keys, values = problem.reference()
    return np.concatenate([keys, values], axis=1)


def _precision(problem: SumProblem) -> type:
    """The program's precision: the rows' own, float32 at the least (narrower floats sum
    in float32, as pooling's programs take them); float64 with observation weights,
    whose factors span the whole float64 range."""
    rows = np.result_type(problem.queries, problem.keys)
    return np.float64 if rows == np.float64 or problem.weights is not None else np.float32


def _weighing_keys(problem: SumProblem) -> tuple[SumProblem, float]:
    """``(problem, log unit)``: the keys of positive weight alone (a row whose left-out
    key had none leaves none out), their weights in units of the largest one's power of
    two (factors after the shift, at most 1)."""
    weights, left_out = problem.weights, problem.left_out
    if weights is None:
        return problem, 0.0
    kept = weights > 0
    if left_out is not None:
        at = np.maximum(left_out, 0)
        left_out = np.where((left_out < 0) | ~kept[at], -1, np.cumsum(kept)[at] - 1)
    weights = weights[kept]
    exponent = math.frexp(float(np.max(weights)))[1] if weights.size else 0
    trimmed = problem.replace(keys=problem.keys[kept], values=problem.values[kept],
                                  weights=np.ldexp(weights, -exponent),
                                  left_out=left_out)  # fmt: skip
    return trimmed, exponent * math.log(2.0)


@partial(jax.jit, static_argnames=("engine", "model", "power"))
def _problem_program(rows: Rows, values, factors, left_out, key_count, *, engine: Engine,
                     model: LocalModel, power: int) -> tuple[Any, Any]:  # fmt: skip
    """``(shift, sums)`` of unscaled ``rows`` whose ``divisor`` is the bandwidth:
    differences divided by it, absolute sums (the matrix-product form, whose per-row
    constant cancels in a pool, would not do); for degree 1 each query row is followed
    by its reference's ``d + p`` numbers."""
    keys = rows.keys
    rows = rows._replace(divisor=jnp.broadcast_to(rows.divisor, keys.shape[1:]))
    # the ones' column made here: a density's sums (no values) are then reductions
    columns = jnp.concatenate([jnp.ones((keys.shape[0], 1), values.dtype), values], axis=1)
    state = engine.problem_state(
        rows, columns, ProblemSums(model, power), BlockArrays(factors, left_out, key_count)
    )
    if model.degree:  # (the moments' block sums no ones' column: the state's weight sum)
        return state.max_log, jnp.concatenate([state.weight_sum[:, None],
                                               state.weighted_values], axis=1)  # fmt: skip
    # (the weights' sum is the ones' column: XLA then drops the state's own)
    return state.max_log, state.weighted_values
