"""Attention pooling: ``Σ_i α(q, k_i) v_i`` with ``α`` normalised over the keys.

Shapes: ``queries (n,) | (n, d)``, ``keys (m,) | (m, d)``, ``values (m,) | (m, p)``;
weights are ``(n_queries, n_keys)``; the output keeps the values' trailing shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, overload

import numpy as np

from .. import kernels as _kernels
from .._support.hints import Array, ArrayLike, Bandwidth, HostArrayLike, HostBandwidth, NDArray
from .._support.validation import (
    check_bandwidth,
    check_choice,
    check_mask,
    check_points,
    check_positive_int,
    check_values,
    is_traced,
)
from ..kernels.sphere import is_haversine, to_chords
from ..methods.options import DENSE_MAX_PAIRS, HOST_METHODS, Binned, TopK, resolve
from ..sums.backends import get_backend
from ..sums.empty_policy import (
    EMPTY_POLICIES,
    fills_empty,
    report_empty,
    report_keyless,
)

__all__ = ["DENSE_MAX_PAIRS", "MAX_WEIGHT_ENTRIES", "attention_pool"]

#: Largest weight matrix (entries) that ``return_weights``/``attention_weights`` will build.
MAX_WEIGHT_ENTRIES = 2**26

KernelLike = str | _kernels.Kernel | Callable[..., Any]
MethodLike = str | Binned | TopK


@overload
def attention_pool(
    queries: HostArrayLike,
    keys: HostArrayLike,
    values: HostArrayLike,
    *,
    kernel: KernelLike = "gaussian",
    bandwidth: HostBandwidth = 1.0,
    return_weights: Literal[False] = False,
    empty: str = "nan",
    block_size: int | None = None,
    method: MethodLike = "auto",
    mask: HostArrayLike | None = None,
    weights: HostArrayLike | None = None,
) -> NDArray: ...


@overload
def attention_pool(
    queries: HostArrayLike,
    keys: HostArrayLike,
    values: HostArrayLike,
    *,
    kernel: KernelLike = "gaussian",
    bandwidth: HostBandwidth = 1.0,
    return_weights: Literal[True],
    empty: str = "nan",
    block_size: int | None = None,
    method: MethodLike = "auto",
    mask: HostArrayLike | None = None,
    weights: HostArrayLike | None = None,
) -> tuple[NDArray, NDArray]: ...


@overload
def attention_pool(
    queries: ArrayLike,
    keys: ArrayLike,
    values: ArrayLike,
    *,
    kernel: KernelLike = "gaussian",
    bandwidth: Bandwidth = 1.0,
    return_weights: Literal[False] = False,
    empty: str = "nan",
    block_size: int | None = None,
    method: MethodLike = "auto",
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
) -> Array: ...


@overload
def attention_pool(
    queries: ArrayLike,
    keys: ArrayLike,
    values: ArrayLike,
    *,
    kernel: KernelLike = "gaussian",
    bandwidth: Bandwidth = 1.0,
    return_weights: Literal[True],
    empty: str = "nan",
    block_size: int | None = None,
    method: MethodLike = "auto",
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
) -> tuple[Array, Array]: ...


@overload
def attention_pool(
    queries: ArrayLike,
    keys: ArrayLike,
    values: ArrayLike,
    *,
    kernel: KernelLike = "gaussian",
    bandwidth: Bandwidth = 1.0,
    return_weights: bool = False,
    empty: str = "nan",
    block_size: int | None = None,
    method: MethodLike = "auto",
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
) -> Array | tuple[Array, Array]: ...


def attention_pool(
    queries: ArrayLike,
    keys: ArrayLike,
    values: ArrayLike,
    *,
    kernel: KernelLike = "gaussian",
    bandwidth: Bandwidth = 1.0,
    return_weights: bool = False,
    empty: str = "nan",
    block_size: int | None = None,
    method: MethodLike = "auto",
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
) -> Any:
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
    empty : {"nan", "nearest", "warn", "raise"}
        What a query with no key inside a compact kernel's support gets: NaN
        (with one :class:`EmptyNeighbourhoodWarning` saying how many), the
        value of the nearest key (silently, or with that warning: ``"warn"``), or a
        ``ValueError``.
    block_size : int, optional
        Stream the keys in blocks of this many rows. By default keys are
        streamed (in blocks of 2048) once ``n·m`` exceeds :data:`DENSE_MAX_PAIRS`,
        so memory stays ``O(n·block)``.
    method : str, Binned or TopK
        How to compute the sum (:mod:`attnpool.methods`):

        - ``"dense"`` — the ``(n, m)`` weights in one block; ``"stream"`` — key
          blocks merged in the log domain, memory ``O(n·block)``;
        - ``"pallas"`` — a tiled kernel (Pallas; Triton on GPUs): key tiles streamed
          through on-chip memory, each row's log-domain state kept as they pass, one
          exponential per pair, memory ``O(n + m)``; exact, differentiable; every
          non-negative kernel. ``"auto"`` takes it on GPUs (elsewhere it runs in
          Pallas' interpreter: right, but slow);
        - ``"fused"`` — ``gaussian``/``dot`` through ``jax.nn.dot_product_attention``
          (flash attention on GPUs; float32 logits);
        - ``"sparse"`` — compact kernels, only keys inside the support
          (prefix sums in 1-D, a KD-tree above), exact;
        - ``"fgt"`` — the Gaussian in 1-D by truncated Taylor expansions over boxes
          of keys (a fast Gauss transform), ``O(n + m)``, within 1e-14 of each
          query's weight: exact to float64 rounding;
        - ``"native"`` — the Gaussian by a C loop compiled with the package (for the
          widest instruction set the CPU runs): distances, exponentials and sums in
          one pass over the keys, on every CPU core, ``d ≤ 16``; exact;
        - ``"binned"`` or :class:`Binned` — ``d ≤ 2``, FFT on a grid, within
          ``tolerance × range(values)`` of the exact result;
        - ``"topk"`` or :class:`TopK` — each query's ``k`` nearest keys, with a
          checked bound on the weight left out;
        - ``"auto"`` — an exact method chosen by the rules in
          :mod:`attnpool.methods.choice`.

        ``sparse``, ``fgt``, ``native``, ``binned`` and ``topk`` need concrete arrays
        (not inside ``jit``).
    mask : bool array of shape (n, m), or int array of shape (n,), optional
        The keys each query may attend: ``True`` where allowed, or valid lengths (query
        ``i`` attends keys ``0 … mask[i] − 1``, the textbook's ``valid_lens``). Masked
        keys get no weight — on every method, under ``jit`` and ``grad``, in the
        nearest-key limit too (the host methods pool the rows a mask restricts by the
        exact engine; ``auto`` takes ``dense`` or ``stream``). A query left no key has
        no value: NaN with an :class:`EmptyNeighbourhoodWarning` (``"nan"``,
        ``"nearest"``) or a ``ValueError`` (``"raise"``). A boolean ``(1, m)`` mask
        applies to every query.
    weights : array of shape (m,), optional
        Observation weights ``w_i ≥ 0`` of the keys: ``α(q, k_i) ∝ w_i K(u_i)`` (an
        integer weight counts as that many copies of the key). Every method takes them
        (:mod:`attnpool.sums.observation_weights`); keys of weight 0 get no weight, in the
        nearest-key limit too.

    A higher-order kernel (``"gaussian-order4"`` …, :func:`attnpool.kernels.higher_order`)
    has signed weights: it is summed pair by pair (:mod:`attnpool.sums.pairs`) on concrete
    arrays, by ``"auto"``, ``"dense"`` or ``"stream"``, without ``mask`` or
    ``return_weights``.

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
    >>> attention_pool(np.zeros(2), keys, values, kernel="constant", mask=np.array([1, 2]))
    array([10., 15.])

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2, "Attention pooling by similarity". Milakov, M. & Gimelshein, N. (2018).
    Online normalizer calculation for softmax. arXiv:1805.02867 (the merged state).
    """
    kernel = _kernels.get(kernel)
    if is_haversine(kernel):  # (latitude, longitude) rows: the chords of unit vectors
        queries, keys, kernel = to_chords(queries, keys, kernel, bandwidth)
        bandwidth = 1.0
    empty = check_choice(empty, "empty", EMPTY_POLICIES)
    block_size = check_positive_int(block_size, "block_size")
    q, k, v, h, flat = check_inputs(queries, keys, values, bandwidth)
    kernel = _kernels.for_dimensions(kernel, k.shape[1])
    n, m = q.shape[0], k.shape[0]
    if isinstance(method, str) and get_backend(method) is not None:  # the sums layer
        from .by_backend import pool_by_backend, refuse_options

        refuse_options(method, mask=mask, return_weights=return_weights, block_size=block_size)
        pooled = pool_by_backend(method, q, k, v, h, kernel, weights, empty=empty)
        return pooled[:, 0] if flat else pooled
    if kernel.base is not None:  # signed: summed pair by pair
        from ..sums.pairs import pool, refuse

        refuse(kernel, method, mask, return_weights, (q, k, v, h, weights))
        pooled = pool(q, k, v, h, kernel=kernel, weights=weights, empty=empty)
        return pooled[:, 0] if flat else pooled
    if return_weights:
        check_weight_size(n, m)
    if weights is not None:
        from .weighted import weighted_pool

        return weighted_pool(
            attention_pool, q, k, v, weights, flat, mask, kernel=kernel, bandwidth=h,
            return_weights=return_weights, empty=empty, block_size=block_size, method=method,
        )  # fmt: skip
    allowed, keyless = checked_mask(mask, n, m, empty)
    nearest = fills_empty(kernel, empty)
    planned, found = None, None
    name, options = resolve(method)
    if allowed is None and not return_weights and (name in HOST_METHODS or block_size is None):
        from ..engines import host_route

        if name in HOST_METHODS:  # NumPy stays NumPy: no JAX for a host method asked for
            found = host_route.pool_named_on_host(name, options, q, k, v, h, kernel,
                                                  nearest=nearest)  # fmt: skip
        elif name == "auto":
            found, planned = host_route.pool_without_jax(q, k, v, h, kernel, nearest=nearest)
    if found is not None:
        pooled, empty_rows = found
        report_empty(kernel, empty, empty_rows)
        return pooled[:, 0] if flat else pooled
    from .._support.interop import run_in_policy
    from ..engines.dispatch import pool_on_engine
    from ..engines.pool_route import PoolRoute
    from ..methods import choice

    chosen, options = choice.choose(
        method,
        kernel,
        q,
        k,
        h,
        weights=return_weights,
        block_size=block_size,
        masked=allowed is not None,
        planned=planned,
    )

    def compute(q: Any, k: Any, v: Any, h: Any) -> Any:
        route = PoolRoute(kernel, chosen, nearest, block_size, options)
        return pool_on_engine(q, k, v, h, route, weights=return_weights, allowed=allowed)

    result = run_in_policy(compute, (q, k, v, h), kernel, empty, n, keyless)
    pooled, weights = result if return_weights else (result, None)
    if flat:
        pooled = pooled[:, 0]
    return (pooled, weights) if return_weights else pooled


def check_inputs(queries: Any, keys: Any, values: Any, bandwidth: Any) -> Any:
    k = check_points(keys, "keys")
    if k.shape[0] == 0:
        raise ValueError(f"keys: expected at least one key; received shape {k.shape}")
    q = check_points(queries, "queries", dims=k.shape[1])
    v, flat = (None, False) if values is None else check_values(values, k.shape[0])
    h = check_bandwidth(bandwidth, k.shape[1])
    return q, k, v, h, flat


def checked_mask(mask: Any, n: int, m: int, empty: str) -> Any:
    """``(allowed, keyless)``: the checked mask, and on concrete masks the ``(n,)`` queries
    it leaves no key (reported here, by the ``empty`` policy)."""
    allowed = check_mask(mask, n, m)
    if allowed is None or is_traced(allowed):
        return allowed, None
    from ..sums.masks import keyless_rows

    keyless = np.broadcast_to(np.asarray(keyless_rows(allowed)), (n,))
    report_keyless(empty, int(keyless.sum()), n, stacklevel=4)
    return allowed, keyless


def check_weight_size(n: int, m: int) -> None:
    if n * m > MAX_WEIGHT_ENTRIES:
        raise ValueError(
            f"return_weights: the weight matrix would have {n} × {m} = {n * m:,} entries, "
            f"above the limit of {MAX_WEIGHT_ENTRIES:,}; pool without weights "
            "(memory then stays O(n·block)) or ask for the weights of fewer queries"
        )
