"""Query–key geometry: scaled coordinates, closeness of blocks, and log weights.

Distance kernels see ``r2 = Σ_j ((q_j − k_j) / h_j)²``. The coordinates are
divided by the bandwidth once, before any block is touched, so that a block
costs one distance evaluation and one ``exp`` per query–key pair — except for
compact kernels, whose edge decides whether a key counts at all: their blocks
divide the differences of the unscaled inputs (:func:`block_coordinates`), so
every path and method keeps the same keys.

Two forms of the squared distance:

- difference form ``Σ_j (q_j − k_j)²`` for ``d ≤ 2`` — exact, used where the
  ``exp`` dominates anyway;
- matmul form ``‖q‖² + ‖k‖² − 2 q·k`` for ``d ≥ 3`` — a matrix product, much
  faster, but it cancels on uncentred data, so keys and queries are first
  centred on the keys' mean (translation leaves distances unchanged).

For a Gaussian (``log K = −r2/2``) in ``d ≥ 3`` the log weights themselves are
one matrix product, ``[q, 1]·[k, −‖k‖²/2]`` — the query's own ``−‖q‖²/2`` is
dropped, since a per-query constant cancels when weights are normalised over
keys. Log weights from :func:`block_log_weights` are therefore defined up to a
per-query constant, which the pooling state never needs.

``closeness`` is ``−r2`` for distance kernels and the score ``q·k`` for ``dot``:
larger means closer. The nearest-key limit uses it at *relative* scale
(``h_j / min h``), where it cannot overflow even for a vanishing bandwidth.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels import MATMUL_MIN_DIM, Kernel
from ..kernels.edges import edge_log_profile, has_edge
from ..kernels.norms import squared_norm

_HIGHEST = jax.lax.Precision.HIGHEST


def key_centre(keys):
    """The keys' midrange ``(d,)``, ``min/2 + max/2`` (never overflows), without gradient.

    Distances do not change under translation, but coordinates far from the origin
    (Unix timestamps, data shifted by 1e8) lose their low digits once divided by a
    small bandwidth: every path subtracts this centre before it scales.
    """
    low, high = jnp.min(keys, axis=0), jnp.max(keys, axis=0)
    return jax.lax.stop_gradient(0.5 * low + 0.5 * high)


def scale_coordinates(queries, keys, bandwidth, kernel: Kernel, *, relative: bool = False):
    """Scaled ``(queries, keys)`` for a ``(d,)`` bandwidth, centred on the keys' midrange
    (distance kernels).

    ``relative=False`` divides by ``h`` (``closeness`` is then the kernel's argument).
    ``relative=True`` gives the nearest-key geometry: coordinates times ``min h / h``
    (which orders keys exactly as the full scaling does), then by the power of two of
    :func:`keys_to_unit` (the keys' largest at most 1), whatever the bandwidth;
    :func:`nearest_closeness` scales each query's row from there, so no squared distance
    overflows however far apart the points. Below :data:`MATMUL_MIN_DIM` not centred, so
    that the differences are the inputs' own and keys exactly as far stay tied.

    Scaled coordinates carry a rounding of ``eps`` times their size, so a scaled
    distance carries an absolute rounding of ``eps`` times the data's extent in
    bandwidths (XLA may also contract ``(x − c)·(1/h)`` into an FMA in one fusion and
    not in another); the methods' guarantees in the design notes state this term.
    """
    if kernel.similarity == "dot":
        queries = queries * (jnp.min(bandwidth) / bandwidth if relative else 1.0 / bandwidth)
        if relative:
            queries, keys = _unit_power_of_two(queries), _unit_power_of_two(keys)
        return queries, keys
    queries, keys, bandwidth = lifted(queries, keys, bandwidth)
    scale = jnp.min(bandwidth) / bandwidth if relative else 1.0 / bandwidth
    if relative and keys.shape[1] < MATMUL_MIN_DIM:
        # differences of the inputs themselves (closeness subtracts): a centre subtracted
        # first rounds each coordinate apart, and keys exactly as far would stop tying
        return keys_to_unit(queries * scale, keys * scale)
    centre = key_centre(keys)
    queries, keys = (queries - centre) * scale, (keys - centre) * scale
    if relative:
        return keys_to_unit(queries, keys)
    return queries, keys


def keys_to_unit(queries, keys):
    """``(queries, keys)`` times one power of two (exact: no digit changes) that brings
    the keys' largest magnitude to at most 1 — or lower, so that no query passes
    ``2^1000`` (float64; ``2^104`` in float32) — for :func:`nearest_closeness`. The keys',
    not the queries': a far query scaling everything down would flush the near queries'
    differences to 0 and tie their keys."""
    exponents = [jnp.frexp(_finite_largest(a))[1] for a in (keys, queries)]
    exponent = jnp.maximum(exponents[0], exponents[1] - _query_headroom(queries))
    return jnp.ldexp(queries, -exponent), jnp.ldexp(keys, -exponent)


def queries_to_unit(queries, keys):
    """``(queries, keys)`` times one power of two (exact) that brings the median size of
    the nonzero query rows (their largest coordinates) to ``[1/2, 1)`` — or less, so
    that no query passes ``2^1000`` (``2^104`` in float32) — for
    :func:`nearest_closeness`, where the keys' size is not known (one chunk of them): the
    queries' own scale then sets the rows' floor, data of ``1e−200`` as data of 1, and a
    far or a tiny query leaves the others' unit alone."""
    size = jnp.max(jnp.abs(queries), axis=1)
    typical = jnp.nanmedian(jnp.where(jnp.isfinite(size) & (size > 0), size, jnp.nan))
    typical = jnp.where(jnp.isfinite(typical), typical, 1.0)
    largest = jnp.frexp(_finite_largest(queries))[1]
    exponent = jnp.maximum(jnp.frexp(typical)[1], largest - _query_headroom(queries))
    return jnp.ldexp(queries, -exponent), jnp.ldexp(keys, -exponent)


def _query_headroom(a) -> int:
    """The largest power of two a query may keep beside keys brought to 1: the float
    type's range less its digits (1000 in float64, 104 in float32)."""
    return int(jnp.finfo(a.dtype).maxexp) - 24


def _finite_largest(a):
    """``a``'s largest magnitude, 1 where that is 0 or not finite."""
    largest = jnp.max(jnp.abs(a)) if a.size else jnp.zeros((), a.dtype)
    return jnp.where(jnp.isfinite(largest) & (largest > 0), largest, 1.0)


def _unit_power_of_two(array):
    """``array`` times the power of two that brings its largest magnitude to ≤ 1
    (exact: no digit changes)."""
    return jnp.ldexp(array, -jnp.frexp(_finite_largest(array))[1])


def block_coordinates(queries, keys, bandwidth, kernel: Kernel):
    """``(queries, keys, divisor)`` as blocks take them.

    A compact kernel's edge decides whether a key counts at all, so its blocks form
    ``(q_j − k_j) / h_j`` from the unscaled inputs (``divisor = bandwidth``): one rounding
    of the difference and one of the quotient, the same in every path and method —
    scaled coordinates would round ``q/h`` and ``k/h`` apart, and XLA may contract
    ``q/h − k/h`` into ``(q − k)/h`` in one fusion and not in another. Differences of
    unscaled coordinates need no centring. Other kernels get :func:`scale_coordinates`
    (``divisor = None``).
    """
    if has_edge(kernel):
        return lifted(queries, keys, bandwidth)
    return *scale_coordinates(queries, keys, bandwidth, kernel), None


def lifted(queries, keys, bandwidth):
    """``(queries, keys, bandwidth)`` times one power of two, at least 1, that brings the
    keys' largest magnitude up to ``[1/2, 1)`` where it is below (no query passing
    ``2^1000``, ``2^104`` in float32): a distance kernel's argument is unchanged, to the
    last digit, and tiny data's differences stay above the subnormal numbers, which XLA
    flushes to zero (data of 1e-305 in float64, or 1e-36 in float32, lost digits)."""
    exponent = lift_exponent(queries, keys)
    return tuple(jnp.ldexp(a, -exponent) for a in (queries, keys, bandwidth))


def lift_exponent(queries, keys):
    """The exponent ``e ≤ 0`` of :func:`lifted`'s power of two ``2^−e``."""
    exponents = [jnp.frexp(_finite_largest(a))[1] for a in (keys, queries)]
    exponent = jnp.maximum(exponents[0], exponents[1] - _query_headroom(queries))
    return jnp.minimum(exponent, 0)


def host_lifted(queries: np.ndarray, keys: np.ndarray, bandwidth: np.ndarray, model):
    """:func:`lifted` by NumPy (a subnormal input keeps its digits) for a sum problem's
    concrete rows: the continuous columns of ``queries (n, ·)`` — and of the reference
    keys that follow their ``d`` coordinates where ``model`` (a
    :class:`~attnpool.sums.local_model.LocalModel`) has a degree — of ``keys (m, d)``
    and of ``bandwidth (d,)``."""
    cont = list(model.continuous)
    if not cont or keys.shape[0] == 0:
        return queries, keys, bandwidth
    exponent = _host_lift_exponent(queries[:, cont], keys[:, cont])
    if exponent == 0:
        return queries, keys, bandwidth
    d = keys.shape[1]
    columns = cont + [d + j for j in cont] if model.degree else cont
    queries, keys, bandwidth = queries.copy(), keys.copy(), np.array(bandwidth, copy=True)
    queries[:, columns] = np.ldexp(queries[:, columns], -exponent)
    keys[:, cont] = np.ldexp(keys[:, cont], -exponent)
    bandwidth[cont] = np.ldexp(bandwidth[cont], -exponent)
    return queries, keys, bandwidth


def _host_lift_exponent(queries: np.ndarray, keys: np.ndarray) -> int:
    """:func:`lift_exponent` of concrete arrays, by NumPy (in their own precision)."""
    exponents = []
    for a in (keys, queries):
        largest = np.max(np.abs(a)) if a.size else 0.0
        finite = np.isfinite(largest) and largest > 0
        exponents.append(int(np.frexp(largest if finite else 1.0)[1]))
    headroom = int(np.finfo(queries.dtype).maxexp) - 24
    return min(max(exponents[0], exponents[1] - headroom), 0)


def closeness(queries, keys, kernel: Kernel, *, by_column: bool = False, divisor=None):
    """``(n, b)`` closeness of scaled ``queries (n, d)`` and ``keys (b, d)``.

    ``by_column`` sums one ``(n, b)`` term per coordinate instead of reducing an
    ``(n, b, d)`` difference: inside the streamed scan only that form is vectorised
    by XLA:CPU for d = 2 (see :func:`attnpool.methods.stream_state`). It is not the
    default because XLA:CPU miscompiles it in float64 in the dense softmax fusion of
    kernels with a square root (a zero distance gave uniform weights).

    ``divisor (d,)``: the coordinates are unscaled, and each difference is divided by
    it (see :func:`block_coordinates`).
    """
    if kernel.similarity == "dot":
        return jnp.matmul(queries, keys.T, precision=_HIGHEST)
    if kernel.norm != 2.0:  # a Minkowski norm: the difference form, by coordinate
        if divisor is not None:
            us = scaled_differences(queries, keys, divisor)
        else:
            us = differences(queries, keys)
        return -squared_norm(us, kernel, jnp)
    if divisor is not None:
        r2 = 0.0
        for u in scaled_differences(queries, keys, divisor):
            r2 = r2 + u * u
        return -r2
    if queries.shape[1] < MATMUL_MIN_DIM and by_column:
        r2 = 0.0
        for j in range(queries.shape[1]):
            diff = queries[:, j, None] - keys[None, :, j]
            r2 = r2 + diff * diff
        return -r2
    if queries.shape[1] < MATMUL_MIN_DIM:
        diff = queries[:, None, :] - keys[None, :, :]
        return -jnp.sum(diff * diff, axis=-1)
    cross = jnp.matmul(queries, keys.T, precision=_HIGHEST)
    sq = jnp.sum(queries * queries, axis=1)[:, None] + jnp.sum(keys * keys, axis=1)[None, :]
    return -jnp.maximum(sq - 2.0 * cross, 0.0)


def nearest_closeness(queries, keys, kernel: Kernel):
    """``(n, b)``: ``−‖q − k‖²`` in the kernel's norm, one difference per coordinate — the
    nearest-key limit's scores. Never the matrix-product form: its rounding,
    ``eps·(‖q‖² + ‖k‖²)``, ties keys whose distances differ by less, and a categorical
    column's codes beside tiny continuous coordinates left every key of a level tied."""
    # each row times the power of two of its query's size (at least 1): with the keys at
    # most 1 (keys_to_unit), no difference passes 2 and no square overflows, and the
    # factor is the row's alone, so every key block of a row is scored alike
    unit = jnp.ldexp(jnp.ones((), queries.dtype), -jnp.frexp(
        jnp.maximum(jnp.max(jnp.abs(queries), axis=1), 1.0))[1])[:, None]  # fmt: skip
    return -squared_norm(differences(queries * unit, keys, unit), kernel, jnp)


def block_log_weights(queries, keys, kernel: Kernel, *, by_column: bool = False, divisor=None):
    """``(n, b)`` log weights of scaled ``queries`` over ``keys``, up to a per-query constant.

    ``by_column``: as in :func:`closeness`; always for the Gaussian (``log K = c·r2``, no
    square root, so not the miscompiled case), whose dense blocks it makes 4× faster in d = 2.
    ``divisor``: unscaled coordinates, as in :func:`closeness` (any kernel: the exact
    difference form, which a sum that is absolute, not relative, needs).
    """
    if divisor is not None and not has_edge(kernel):  # differences, no edge to decide
        us = scaled_differences(queries, keys, divisor)
        if kernel.product:
            return sum(kernel.log_profile(u * u) for u in us)
        return kernel.log_profile(squared_norm(us, kernel, jnp))
    if divisor is not None:
        return edge_log_weights(queries, keys, divisor, kernel)
    if kernel.product and queries.shape[1] > 1:  # Σ_j log K(u_j²)
        return sum(
            kernel.log_profile((queries[:, j, None] - keys[None, :, j]) ** 2)
            for j in range(queries.shape[1])
        )
    if kernel.quadratic is not None and queries.shape[1] >= MATMUL_MIN_DIM:
        c = kernel.quadratic
        ones = jnp.ones((queries.shape[0], 1), queries.dtype)
        key_term = c * jnp.sum(keys * keys, axis=1, keepdims=True)
        logw = jnp.matmul(
            jnp.concatenate([queries, ones], axis=1),
            jnp.concatenate([(-2.0 * c) * keys, key_term], axis=1).T,
            precision=_HIGHEST,
        )
        return logw
    by_column = by_column or kernel.quadratic is not None
    return log_weights(closeness(queries, keys, kernel, by_column=by_column), kernel)


def differences(queries, keys, key_unit=None) -> list:
    """``[q_j − k_j]``, one ``(n, b)`` array per coordinate; with ``key_unit (n, 1)``,
    each row's keys times its unit first (``k_j · u``)."""
    if key_unit is None:
        return [queries[:, j, None] - keys[None, :, j] for j in range(queries.shape[1])]
    return [queries[:, j, None] - keys[None, :, j] * key_unit for j in range(queries.shape[1])]


def scaled_differences(queries, keys, divisor) -> list:
    """``[(q_j − k_j) / h_j]``, one ``(n, b)`` array per coordinate, of unscaled rows."""
    divisor = jnp.broadcast_to(divisor, queries.shape[1:])
    return [d / divisor[j] for j, d in enumerate(differences(queries, keys))]


def edge_log_weights(queries, keys, divisor, kernel: Kernel):
    """Log weights of a compact kernel from unscaled rows (see :mod:`attnpool.kernels.edges`):
    near the edge the differences are divided again as NumPy divides them."""
    divisor = jnp.broadcast_to(divisor, queries.shape[1:])
    diffs = differences(queries, keys)
    us = [d / divisor[j] for j, d in enumerate(diffs)]
    divisors = [divisor[j] for j in range(len(diffs))]
    return edge_log_profile(us, kernel, jnp, branch=True, quotients=(diffs, divisors))


def log_weights(close, kernel: Kernel):
    """Log kernel weights from closeness.

    Overflowed coordinates (a vanishing bandwidth) can make a log weight NaN or
    ``+inf``; no per-pair guard is spent on that here: the pooled row is then not
    finite, and :mod:`attnpool.pooling` recomputes such rows in the nearest-key limit.
    """
    if kernel.similarity == "dot":
        return kernel.log_profile(close)
    return kernel.log_profile(-close)
