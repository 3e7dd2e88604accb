"""Attention pooling: ``Σ_i α(q, k_i) v_i`` with ``α`` normalised over the keys.

Shapes: ``queries (n,) | (n, d)``, ``keys (m,) | (m, d)``, ``values (m,) | (m, p)``;
weights are ``(n_queries, n_keys)``; the output keeps the values' trailing shape.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from . import kernels as _kernels
from ._interop import (
    check_bandwidth_representable,
    compute_dtype,
    half_precision,
    numpy_mode,
    precision_scope,
    value_unit,
)
from ._shapes import MAX_ROWS, bucket, is_host, pad_rows, padded, query_bucket, unpadded
from ._validation import (
    check_bandwidth,
    check_choice,
    check_points,
    check_positive_int,
    check_values,
    is_traced,
)
from .geometry import MATMUL_MIN_DIM, block_log_weights, closeness, scale_coordinates
from .methods import choice, dense_state, dense_weights, fused, stream_state
from .methods.choice import DENSE_MAX_PAIRS, Binned, TopK
from .methods.stream import KEY_BLOCK
from .state import block_state, finalize, hard_block_state

__all__ = [
    "DENSE_MAX_PAIRS",
    "MAX_WEIGHT_ENTRIES",
    "Binned",
    "EmptyNeighbourhoodWarning",
    "TopK",
    "attention_pool",
    "attention_weights",
    "nadaraya_watson",
]

EMPTY_POLICIES = ("nan", "nearest", "raise")
#: Largest weight matrix (entries) that ``return_weights``/``attention_weights`` will build.
MAX_WEIGHT_ENTRIES = 2**26

KernelLike = str | _kernels.Kernel | Callable
MethodLike = str | Binned | TopK
# Built-in kernels whose weight never grows with the distance: the nearest key's is the largest.
_MONOTONE = frozenset(
    [
        "gaussian",
        "boxcar",
        "constant",
        "triangular",
        "epanechnikov",
        "tricube",
        "laplacian",
        "cosine",
    ]
)


class EmptyNeighbourhoodWarning(RuntimeWarning):
    """Some queries had no key inside a compact kernel's support (their result is NaN)."""


def attention_pool(
    queries,
    keys,
    values,
    *,
    kernel: KernelLike = "gaussian",
    bandwidth=1.0,
    return_weights: bool = False,
    empty: str = "nan",
    block_size: int | None = None,
    method: MethodLike = "auto",
):
    """Pool ``values`` with attention weights of ``queries`` over ``keys``.

    .. math::

        f(q) = \\sum_i \\alpha(q, k_i) v_i, \\qquad
        \\alpha(q, k_i) = \\frac{K(u_i)}{\\sum_j K(u_j)}, \\qquad
        u_i = (q - k_i) / h

    computed in the log domain (log-sum-exp), so a tiny bandwidth gives the
    nearest key's value instead of ``0 / 0``.

    Parameters
    ----------
    queries : array of shape (n,) or (n, d)
    keys : array of shape (m,) or (m, d)
    values : array of shape (m,) or (m, p)
    kernel : str, Kernel or callable
        A name from :func:`attnpool.kernels.names`, a :class:`~attnpool.kernels.Kernel`,
        or a callable ``K(u)`` of the scaled distance.
    bandwidth : float or array of shape (d,)
        The kernel's scale on the distance, per dimension if a vector
        (the Gaussian's standard deviation; the half-width of compact kernels;
        the temperature of ``dot``).
    return_weights : bool
        Also return the ``(n, m)`` weight matrix (built densely; at most
        :data:`MAX_WEIGHT_ENTRIES` entries).
    empty : {"nan", "nearest", "raise"}
        What a query with no key inside a compact kernel's support gets: NaN
        (with one :class:`EmptyNeighbourhoodWarning` saying how many), the
        value of the nearest key, or a ``ValueError``.
    block_size : int, optional
        Stream the keys in blocks of this many rows. By default keys are
        streamed (in blocks of 2048) once ``n·m`` exceeds :data:`DENSE_MAX_PAIRS`,
        so memory stays ``O(n·block)``.
    method : str, Binned or TopK
        How to compute the sum (:mod:`attnpool.methods`):

        - ``"dense"`` — the ``(n, m)`` weights in one block; ``"stream"`` — key
          blocks merged in the log domain, memory ``O(n·block)``;
        - ``"fused"`` — ``gaussian``/``dot`` through ``jax.nn.dot_product_attention``
          (flash attention on GPUs);
        - ``"sparse"`` — compact kernels, only keys inside the support
          (prefix sums in 1-D, a KD-tree above), exact;
        - ``"fgt"`` — the Gaussian in 1-D by truncated Taylor expansions over boxes
          of keys (a fast Gauss transform), ``O(n + m)``, within 1e-14 of each
          query's weight: exact to float64 rounding;
        - ``"native"`` — the Gaussian by a loop compiled with the machine's C compiler:
          distances, exponentials and sums in one pass over the keys, on every CPU
          core; exact;
        - ``"binned"`` or :class:`Binned` — ``d ≤ 2``, FFT on a grid, within
          ``tolerance × range(values)`` of the exact result;
        - ``"topk"`` or :class:`TopK` — each query's ``k`` nearest keys, with a
          checked bound on the weight left out;
        - ``"auto"`` — an exact method chosen by the rules in
          :mod:`attnpool.methods.choice`.

        ``sparse``, ``fgt``, ``native``, ``binned`` and ``topk`` need concrete arrays
        (not inside ``jit``).

    Returns
    -------
    pooled : array of shape (n,) or (n, p)
        NumPy in, NumPy out (in the input's precision); JAX in, JAX out.
    weights : array of shape (n, m)
        Only with ``return_weights=True``.

    Examples
    --------
    >>> import numpy as np
    >>> keys = np.array([0.0, 1.0, 2.0]); values = np.array([10.0, 20.0, 30.0])
    >>> attention_pool(np.array([1.0]), keys, values, bandwidth=1e-3)  # exact lookup
    array([20.])
    >>> attention_pool(np.array([1.0]), keys, values, kernel="constant")  # average
    array([20.])
    """
    kernel = _kernels.get(kernel)
    empty = check_choice(empty, "empty", EMPTY_POLICIES)
    block_size = check_positive_int(block_size, "block_size")
    q, k, v, h, flat = _check_inputs(queries, keys, values, bandwidth)
    n, m = q.shape[0], k.shape[0]
    if return_weights:
        _check_weight_size(n, m)
    method, options = _choose(method, kernel, q, k, h, return_weights, block_size)
    nearest = empty == "nearest" or not kernel.compact

    def compute(q, k, v, h):
        if method in choice.HOST_METHODS:
            from .host import pool_host

            return pool_host(
                q, k, v, h, kernel=kernel, method=method, options=options, nearest=nearest
            )
        if return_weights:
            weights, empty_rows = _weights_core(q, k, h, kernel=kernel, nearest=nearest)
            pooled = jnp.matmul(weights, v, precision=jax.lax.Precision.HIGHEST)
            return (pooled, weights), empty_rows
        pooled, empty_rows = _pool_core(
            q,
            k,
            v,
            h,
            kernel=kernel,
            method=method,
            key_block=block_size or KEY_BLOCK,
            nearest=nearest,
        )
        return pooled, empty_rows

    result = _run(compute, (q, k, v, h), kernel, empty, n)
    pooled, weights = result if return_weights else (result, None)
    if flat:
        pooled = pooled[:, 0]
    return (pooled, weights) if return_weights else pooled


def attention_weights(
    queries, keys, *, kernel: KernelLike = "gaussian", bandwidth=1.0, empty: str = "nan"
):
    """Attention weights ``α(q_i, k_j)`` as an ``(n_queries, n_keys)`` matrix; rows sum to 1.

    Arguments as in :func:`attention_pool`. Rows of queries with an empty
    neighbourhood are NaN (``empty="nan"``), one-hot on the nearest key
    (``"nearest"``, ties shared), or raise (``"raise"``).

    >>> import numpy as np
    >>> attention_weights(np.arange(3.0), np.arange(3.0), kernel="boxcar", bandwidth=0.5)
    array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 1.]])
    """
    kernel = _kernels.get(kernel)
    empty = check_choice(empty, "empty", EMPTY_POLICIES)
    q, k, _, h, _ = _check_inputs(queries, keys, None, bandwidth)
    _check_weight_size(q.shape[0], k.shape[0])
    nearest = empty == "nearest" or not kernel.compact

    def compute(q, k, h):
        return _weights_core(q, k, h, kernel=kernel, nearest=nearest)

    return _run(compute, (q, k, h), kernel, empty, q.shape[0])


def nadaraya_watson(
    x_train, y_train, x_query, *, kernel: KernelLike = "gaussian", bandwidth=1.0, **options
):
    """Nadaraya–Watson kernel regression: ``attention_pool(x_query, x_train, y_train)``.

    .. math:: \\hat f(x) = \\sum_i K((x - x_i)/h) y_i \\Big/ \\sum_j K((x - x_j)/h)

    ``options`` are those of :func:`attention_pool` (``empty``, ``block_size``,
    ``return_weights``).

    >>> import numpy as np
    >>> x = np.linspace(0, 1, 5); y = 3 * x
    >>> nadaraya_watson(x, y, np.array([0.5]), bandwidth=0.2).round(6)
    array([1.5])
    """
    return attention_pool(x_query, x_train, y_train, kernel=kernel, bandwidth=bandwidth, **options)


def _check_inputs(queries, keys, values, bandwidth):
    k = check_points(keys, "keys")
    if k.shape[0] == 0:
        raise ValueError(f"keys: expected at least one key; received shape {k.shape}")
    q = check_points(queries, "queries", dims=k.shape[1])
    v, flat = (None, False) if values is None else check_values(values, k.shape[0])
    h = check_bandwidth(bandwidth, k.shape[1])
    return q, k, v, h, flat


def _check_weight_size(n: int, m: int) -> None:
    if n * m > MAX_WEIGHT_ENTRIES:
        raise ValueError(
            f"return_weights: the weight matrix would have {n} × {m} = {n * m:,} entries, "
            f"above the limit of {MAX_WEIGHT_ENTRIES:,}; pool without weights "
            "(memory then stays O(n·block)) or ask for the weights of fewer queries"
        )


def _run(compute, args, kernel, empty: str, n: int):
    """Apply the precision/array-type policy around ``compute`` and the empty policy after."""
    as_numpy = numpy_mode(*args)
    dtype = compute_dtype(*args[:-1], numpy=as_numpy)
    if empty == "raise" and any(is_traced(a) for a in args):
        raise ValueError(
            "empty: 'raise' needs concrete inputs; inside jit, grad or vmap use 'nan' or 'nearest'"
        )
    check_bandwidth_representable(args[-1], dtype)
    with precision_scope(dtype):
        # NumPy stays NumPy until the jitted programs: eager JAX operations would each
        # compile a program for every new shape
        convert = np.asarray if as_numpy else jnp.asarray
        cast = [convert(a, dtype) for a in args]
        if n == 0:
            width = cast[2].shape[1] if len(cast) == 4 else cast[1].shape[0]
            result, empty_rows = jnp.zeros((0, width), dtype), jnp.zeros((0,), bool)
        elif len(cast) == 4:  # pooling: huge value columns in power-of-two units
            q, k, v, h = cast
            unit = value_unit(v)
            result, empty_rows = compute(q, k, v / unit, h)
            if isinstance(result, tuple):  # (pooled, weights)
                result = (result[0] * unit, result[1])
            else:
                result = result * unit
        else:
            result, empty_rows = compute(*cast)
        narrow = half_precision(args[:-1])
        if narrow is not None:  # computed in float32, returned in the inputs' precision
            result = jax.tree_util.tree_map(
                lambda a: a.astype(narrow) if jnp.issubdtype(a.dtype, jnp.floating) else a,
                result,
            )
        if as_numpy:
            result = jax.tree_util.tree_map(np.asarray, result)
    if kernel.compact and empty != "nearest" and not is_traced(empty_rows):
        n_empty = int(np.sum(np.asarray(empty_rows)))
        if n_empty and empty == "raise":
            raise ValueError(
                f"empty: {n_empty} of {n} queries have no key within the {kernel.name!r} "
                "kernel's support; widen the bandwidth or pass empty='nan' or 'nearest'"
            )
        if n_empty:
            warnings.warn(
                f"{n_empty} of {n} queries have no key within the {kernel.name!r} kernel's "
                "support; their result is NaN (pass empty='nearest' to use the nearest key)",
                EmptyNeighbourhoodWarning,
                stacklevel=3,
            )
    return result


def kernel_block(
    kernel: _kernels.Kernel, *, hard: bool = False, max_log=None, streamed=False, key_count=None
):
    """Block function of plain kernel pooling; ``hard`` for the nearest limit.

    ``max_log (n,)``: each query's largest log weight, if known (see :func:`nearest_log_weight`).
    ``streamed``: the block runs inside the streamed scan (distances by column).
    ``key_count``: keys from this row on are padding (see :mod:`attnpool._shapes`).
    """

    def block(query_rows, query_ids, key_rows, key_ids, value_rows):
        if hard:
            scores = closeness(query_rows, key_rows, kernel)
            return hard_block_state(mask_padding(scores, key_ids, key_count), value_rows)
        known = None if max_log is None else max_log[query_ids]
        log_weights = block_log_weights(query_rows, key_rows, kernel, by_column=streamed)
        return block_state(mask_padding(log_weights, key_ids, key_count), value_rows, known)

    return block


def mask_padding(scores, key_ids, key_count):
    """``scores (n, b)`` with the columns of padded keys (``id ≥ key_count``) at ``−inf``."""
    if key_count is None:
        return scores
    return jnp.where(key_ids[None, :] < key_count, scores, -jnp.inf)


def nearest_log_weight(queries, keys, kernel: _kernels.Kernel):
    """Each query's largest log weight, from its nearest key, for one column; else None.

    In one dimension the nearest key is found by a sorted search, O((n + m) log m), and
    for a built-in distance kernel (non-increasing in the distance) its log weight is the
    row maximum, so streamed blocks need no max reduction.
    """
    if queries.shape[1] != 1 or not is_monotone(kernel):
        return None
    ordered = jnp.sort(keys[:, 0])
    # the nearest key is one of the two around each query's insertion point
    right = jnp.clip(jnp.searchsorted(ordered, queries[:, 0]), 0, ordered.shape[0] - 1)
    left = jnp.maximum(right - 1, 0)
    gaps = jnp.minimum(
        jnp.abs(queries[:, 0] - ordered[left]), jnp.abs(queries[:, 0] - ordered[right])
    )
    return kernel.log_profile(gaps * gaps)


def is_monotone(kernel: _kernels.Kernel) -> bool:
    """A built-in distance kernel whose weight never grows with the distance."""
    return kernel.name in _MONOTONE and kernel is _kernels.get(kernel.name)


#: A streamed row with less weight than this many times the smallest normal number
#: (every weight underflowed under the log-weight bound) is pooled again with row maxima.
_UNDERFLOW = 2.0**24
#: Up to one row in this many is pooled again by itself; more, and every row is.
_AGAIN_SHARE = 16


def log_weight_bound(queries, kernel: _kernels.Kernel):
    """An upper bound ``(n,)`` on each query's log weights, or None.

    With it streamed blocks skip the max reduction (which XLA:CPU fuses poorly in
    d = 2: ten times the cost of the exponentials). For a built-in distance kernel
    ``log K(r²) ≤ log K(0)``; in the Gaussian's matrix-product form (d ≥ 3, the
    per-query constant dropped) ``log K = q·k − ‖k‖²/2 ≤ ‖q‖²/2``. A row far from
    every key may then underflow to zero weight: :func:`_pool_core` pools such
    rows again with their exact maxima.
    """
    if not is_monotone(kernel):
        return None
    if kernel.quadratic is not None and queries.shape[1] >= MATMUL_MIN_DIM:
        return -kernel.quadratic * jnp.sum(queries * queries, axis=1)
    top = kernel.log_profile(jnp.zeros((), queries.dtype))
    return jnp.broadcast_to(top, queries.shape[:1])


def pool_state(block_function, queries, keys, values, *, method: str, key_block: int, hard=False):
    """The pooling state by the dense or the streamed engine."""
    if method == "dense":
        return dense_state(block_function, queries, keys, values)
    return stream_state(block_function, queries, keys, values, key_block=key_block, hard=hard)


#: Keys per block of the fused method (the fused kernel tiles each block itself).
FUSED_KEY_BLOCK = 16384


def _pool_core(queries, keys, values, bandwidth, *, kernel, method, key_block, nearest):
    """The jitted pooling program on rows padded to their buckets: ``(pooled, empty)``."""
    n, m = queries.shape[0], keys.shape[0]
    if n == 0:
        return _pool_program(
            queries,
            keys,
            values,
            bandwidth,
            None,
            kernel=kernel,
            method=method,
            key_block=key_block,
            nearest=nearest,
        )
    host = is_host(queries, keys, values)
    key_count = None
    if method != "fused" and m <= MAX_ROWS:
        key_count = np.int32(m)
        keys, values = padded(keys, values, size=bucket(m))
    results = _pool_program(
        pad_rows(queries, query_bucket(n)),
        keys,
        values,
        bandwidth,
        key_count,
        kernel=kernel,
        method=method,
        key_block=key_block,
        nearest=nearest,
    )
    return unpadded(results, n, host=host)


@partial(jax.jit, static_argnames=("kernel", "method", "key_block", "nearest"))
def _pool_program(
    queries, keys, values, bandwidth, key_count, *, kernel, method, key_block, nearest
):
    def state(q, k, hard=False, bounded=True):
        if method == "fused" and not hard:
            engine = "dense" if q.shape[0] * k.shape[0] <= DENSE_MAX_PAIRS else "stream"
            return pool_state(
                fused.fused_block(kernel),
                *fused.centred(q, k, kernel),
                values,
                method=engine,
                key_block=FUSED_KEY_BLOCK,
            )
        engine = "dense" if method == "dense" else "stream"
        known = None
        if engine == "stream" and not hard:
            known = nearest_log_weight(q, k, kernel)
            if known is None and bounded:
                known = log_weight_bound(q, kernel)
        block = kernel_block(
            kernel, hard=hard, max_log=known, streamed=engine == "stream", key_count=key_count
        )
        return pool_state(block, q, k, values, method=engine, key_block=key_block, hard=hard)

    scaled = scale_coordinates(queries, keys, bandwidth, kernel)
    result = state(*scaled)
    if method == "stream" and is_monotone(kernel) and not kernel.compact and scaled[0].shape[1] > 1:
        # rows whose every weight underflowed under the bound: again, with the row maxima
        # (a few rows by themselves; past _AGAIN_SHARE of them, every row)
        low = result.weight_sum < _UNDERFLOW * jnp.finfo(result.weight_sum.dtype).tiny
        few = max(1, scaled[0].shape[0] // _AGAIN_SHARE)

        def some_again():
            rows = jnp.nonzero(low, size=few, fill_value=-1)[0]
            rows = jnp.where(rows >= 0, rows, rows[0])  # padding repeats a row that is low
            exact = state(scaled[0][rows], scaled[1], bounded=False)
            return jax.tree_util.tree_map(lambda a, b: a.at[rows].set(b), result, exact)

        def all_again():
            exact = state(*scaled, bounded=False)
            return jax.tree_util.tree_map(
                lambda a, b: jnp.where(low.reshape(-1, *[1] * (a.ndim - 1)), a, b), exact, result
            )

        count = jnp.sum(low)
        result = jax.lax.cond(
            count == 0,
            lambda: result,
            lambda: jax.lax.cond(count <= few, some_again, all_again),
        )
    pooled, empty_rows = finalize(result)
    fallback = needs_nearest(pooled, empty_rows, nearest)

    def with_nearest():
        relative = scale_coordinates(queries, keys, bandwidth, kernel, relative=True)
        closest, _ = finalize(state(*relative, hard=True))
        return jnp.where(fallback[:, None], closest, pooled)

    pooled = jax.lax.cond(jnp.any(fallback), with_nearest, lambda: pooled)
    return empty_as_nan(pooled, empty_rows, nearest), empty_rows


def needs_nearest(result, empty_rows, nearest: bool):
    """Rows for the nearest-key limit: overflowed rows (not finite), and empty ones if asked."""
    overflowed = ~jnp.all(jnp.isfinite(result), axis=1) & ~empty_rows
    return overflowed | (empty_rows & nearest)


def empty_as_nan(result, empty_rows, nearest: bool):
    return result if nearest else jnp.where(empty_rows[:, None], jnp.nan, result)


def _weights_core(queries, keys, bandwidth, *, kernel, nearest):
    """``(weights, empty)`` by the jitted dense program, queries padded to their bucket."""
    n = queries.shape[0]
    results = _weights_program(
        pad_rows(queries, query_bucket(n)), keys, bandwidth, kernel=kernel, nearest=nearest
    )
    return unpadded(results, n, host=is_host(queries))


@partial(jax.jit, static_argnames=("kernel", "nearest"))
def _weights_program(queries, keys, bandwidth, *, kernel, nearest):
    weights, empty_rows = dense_weights(
        *scale_coordinates(queries, keys, bandwidth, kernel), kernel
    )
    fallback = needs_nearest(weights, empty_rows, nearest)

    def with_nearest():
        relative = scale_coordinates(queries, keys, bandwidth, kernel, relative=True)
        closest, _ = dense_weights(*relative, kernel, hard=True)
        return jnp.where(fallback[:, None], closest, weights)

    weights = jax.lax.cond(jnp.any(fallback), with_nearest, lambda: weights)
    return empty_as_nan(weights, empty_rows, nearest), empty_rows


def _choose(method, kernel, q, k, h, weights: bool, block_size):
    """``(name, options)`` for the ``method`` argument, ``"auto"`` resolved (see
    :mod:`attnpool.methods.choice`), or a clear error if it cannot apply."""
    name, options = choice.resolve(method)
    traced = any(is_traced(a) for a in (q, k, h))
    if name == "auto":
        if block_size is not None and not weights:
            return "stream", None
        name = choice.choose_method(kernel, q, k, h, traced=traced, weights=weights)
    choice.check_applicable(name, kernel, k.shape[1], traced=traced, weights=weights)
    return name, options
