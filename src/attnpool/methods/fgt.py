"""The Gaussian in one dimension by truncated Taylor expansions (a fast Gauss transform).

Coordinates are already divided by the bandwidth. Keys are grouped in boxes of
width ``w`` with centres ``c``; for a key ``k`` in a box, ``s = q − c`` and ``t = k − c``::

    exp(−(q − k)²/2) = exp(−s²/2) · exp(−t²/2) · exp(s·t),   exp(s·t) ≈ Σ_{j<p} (s·t)^j / j!

so each box's keys collapse into ``p`` coefficients per feature,
``A_j = Σ_k F_k exp(−t²/2) t^j / j!``, and a query sums
``exp(−s²/2) Σ_j A_j s^j`` over the boxes within ``R`` of it: ``O(m·p + n·p·R/w)``
instead of ``n·m`` exponentials (Greengard & Strain, 1991, in the Taylor form of
Yang, Duraiswami & Gumerov, 2003).

Error, for each query–key term relative to itself: the Taylor remainder is at most
``S^p / p! · e^S`` with ``S = max |s·t|``. Keys in boxes beyond the window are
farther than ``R`` from the query and hold at most ``m · exp(−(R² − r²)/2)`` of its
weight (``r``: the distance to its nearest key). ``R``, ``w`` and ``p`` are chosen
so that both bounds are below :data:`TOLERANCE` — as exact as the float64 sum itself.
Where every feature is a count (densities), the truncation may instead be bounded
for the row as a whole, as the keys beyond the window are: a key's error is at most
``e^{−(|s| − |t|)²/2} |s·t|^p / p!``, whose largest value over the window times ``m``
must stay below ``tolerance · e^{−r²/2}``, that is below ``e^{−R²/2}`` — a third fewer
terms than each term's own bound, whose far boxes pay for a weight they do not have.
Queries farther than :data:`MAX_NEAREST` from every key are returned unsettled
(the caller pools them exactly).

The coefficients and the sums at the queries are loops of ``expansions.c``, compiled
with the package as the ``native`` method's loop is (:mod:`.compiled`): a box's
coefficients accumulate over its keys in vectors, and queries that share a box run
their Horner steps side by side across the window, whose Gaussian factors come from one
exponential and ratios. Without the compiled loops the same sums are built in NumPy and
evaluated by XLA.
"""

from __future__ import annotations

import functools
import math
from functools import partial

import numpy as np

from ..kernels import Kernel, is_gaussian
from . import native
from .gaps import closed_gaps
from .sparse import sorted_scaled

#: Bound on the truncation and on the weight left out, relative to each query's weight.
TOLERANCE = 1e-14
#: Queries whose nearest key is farther (in bandwidths) are left to the exact path.
MAX_NEAREST = 8.0
#: Box widths tried (in bandwidths); the cheapest window × order is used.
WIDTHS = (1.0, 0.5, 0.25, 0.125)
#: Largest coefficient table (boxes × order × features) built; beyond, every row is unsettled.
MAX_COEFFICIENTS = 2**25
#: Queries evaluated at once.
QUERY_CHUNK = 1024
#: Query chunks evaluated per call (memory ``O(CHUNK_GROUP · QUERY_CHUNK)``).
CHUNK_GROUP = 256
#: Keys expanded at once.
KEY_CHUNK = 2**16


def supports(kernel: Kernel) -> bool:
    return is_gaussian(kernel)


def refusal(kernel: Kernel, d: int) -> str | None:
    """Why ``fgt`` cannot pool this kernel in ``d`` dimensions, or None."""
    if not (supports(kernel) and d == 1):
        return (
            "'fgt' pools the built-in 'gaussian' kernel in one dimension; received "
            f"kernel {kernel.name!r}, d = {d}"
        )
    return None


def reach(nearest2, count: float, tolerance: float = TOLERANCE):
    """The scaled distance beyond which ``count`` keys weigh at most ``tolerance`` of
    a row whose nearest key is ``√nearest2`` away: ``m e^{−R²/2} ≤ tol · e^{−r²/2}``.
    With observation weights, ``count`` is their total over the smallest. Widened by
    :data:`REACH_MARGIN`: for a row far from every key the logarithm is lost beside
    ``r²``, and a radius rounded below ``r`` would leave out the nearest key itself."""
    return np.sqrt(nearest2 + 2 * math.log(count / tolerance)) * (1 + REACH_MARGIN)


#: The relative margin of :func:`reach` (eight units of rounding).
REACH_MARGIN = 8 * np.finfo(np.float64).eps


def keys_within(
    points, centres, radii, max_intervals: int = 16, extent: tuple[float, float] | None = None
) -> np.ndarray:
    """Indices of ``points (m,)`` (one column, any order) within ``radii`` of ``centres``:
    the intervals merged, one pass over the points each; every point where more than
    ``max_intervals`` intervals remain apart. ``extent``: the points' least and largest
    value, where known — an interval's side beyond it needs no comparison (the rows
    beyond the data, whose intervals reach past its ends, take one a point)."""
    low, high = centres - radii, centres + radii
    order = np.argsort(low)
    merged: list[list[float]] = []
    for a, b in zip(low[order], high[order], strict=True):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    if len(merged) > max_intervals:
        return np.arange(points.shape[0])
    if not merged:
        return np.zeros(0, np.intp)
    least, largest = (-np.inf, np.inf) if extent is None else extent
    # a chunk of points at a time: the flags stay small and are reused (flags for all
    # 10⁶ points at once were megabytes of fresh memory, most of a first call's time)
    if any(a <= least and b >= largest for a, b in merged):
        return np.arange(points.shape[0])
    found = [np.zeros(0, np.intp)]
    inside, side = np.empty(KEY_CHUNK, bool), np.empty(KEY_CHUNK, bool)
    for start in range(0, points.shape[0], KEY_CHUNK):
        part = points[start : start + KEY_CHUNK]
        flags, other = inside[: part.shape[0]], side[: part.shape[0]]
        for k, (a, b) in enumerate(merged):
            into = flags if k == 0 else other
            if a <= least:
                np.less_equal(part, b, out=into)
            elif b >= largest:
                np.greater_equal(part, a, out=into)
            else:
                np.logical_and(np.greater_equal(part, a, out=into), part <= b, out=into)
            if k:
                flags |= other
        if flags.any():  # most chunks hold none of the few keys beside the rows
            found.append(np.flatnonzero(flags) + start)
    return np.concatenate(found)


def plan(
    reach: float, *, counts: bool = False, tolerance: float = TOLERANCE
) -> tuple[float, int, int]:
    """``(width, half_window, order)``: boxes of ``width`` bandwidths, ``half_window`` boxes
    on each side of the query's box (covering ``reach``), Taylor ``order`` — the
    cheapest that meets ``tolerance`` (for ``reach`` rounded up to a 64th): each term's
    own bound, or with ``counts`` (every feature a count) the row's, whichever is lower."""
    return _plan(math.ceil(reach * 64) / 64, counts, tolerance)


@functools.cache
def _plan(reach: float, counts: bool, tolerance: float) -> tuple[float, int, int]:
    best = None
    for width in WIDTHS:
        half = math.ceil(reach / width)
        largest = (half + 0.5) * width * (width / 2)  # max |s·t| in the window
        order = 1
        while largest**order / math.factorial(order) * math.exp(largest) > tolerance:
            order += 1
        if counts:
            order = min(order, _row_order(width, (half + 0.5) * width, reach))
        cost = (2 * half + 1) * order
        if best is None or cost < best[0]:
            best = (cost, width, half, order)
    return best[1:]


def _row_order(width: float, farthest: float, reach: float) -> int:
    """The least order whose largest error per key, ``e^{−(σ − τ)²/2} (σ τ)^p / p!`` over
    offsets ``σ ≤ farthest`` and ``τ ≤ width/2``, is at most ``e^{−reach²/2}``. It grows
    with ``τ`` (its log's slope ``p/τ + σ − τ > 0`` for ``τ ≤ ½``), so ``τ = width/2``; in
    ``σ`` its log is concave, largest at ``σ τ = p + σ τ (τ − σ)``'s root or at ``farthest``."""
    tau, order = width / 2, 1
    while True:
        sigma = min(farthest, (tau + math.sqrt(tau * tau + 4 * order)) / 2)
        largest = order * math.log(sigma * tau) - (sigma - tau) ** 2 / 2 - math.lgamma(order + 1)
        if largest <= -(reach**2) / 2:
            return order
        order += 1


def expansion_sums(
    queries,
    keys,
    values,
    scale,
    *,
    centre: float = 0.0,
    return_nearest: bool = False,
    tolerance: float = TOLERANCE,
) -> tuple[np.ndarray, ...]:
    """``(sums (n, 1 + p), settled (n,))``: ``[Σ_j K_ij, Σ_j K_ij v_j] · exp(r_i²/2)`` for
    the Gaussian ``K_ij = exp(−(s(q_i − k_j))²/2)`` (``r_i``: the scaled distance to the
    nearest key, a per-row factor that cancels in the pooled ratio) and which rows are
    within the error bound (``tolerance`` of the row's weight, and of its values' for
    the terms' truncation); ``return_nearest``: also ``r_i² (n,)``, to take the factor
    back.

    ``queries (n, 1)``, ``keys (m, 1)``, ``values (m, p)``; ``scale`` the inverse bandwidth;
    ``centre`` subtracted from both before they are scaled (the keys' midrange: far data
    keep their digits; clusters far apart each take their own, :func:`~.gaps.closed_gaps`).
    Queries that are the keys (the same array) are sorted once.
    """
    scale = float(np.asarray(scale, np.float64).reshape(-1)[0])
    raw_keys = np.asarray(keys, np.float64)[:, 0]
    key_order, k = sorted_scaled(raw_keys - centre, scale)
    features = np.ones((k.shape[0], 1 + values.shape[1]))
    features[:, 1:] = np.asarray(values)[key_order]
    # sorted queries: the nearest-key search is a forward sweep, the boxes come in order
    if queries is keys:  # leave-one-out: each query is its own nearest key
        query_order, q, nearest2 = key_order, k, np.zeros(k.shape[0])
    else:
        query_order, q = sorted_scaled(np.asarray(queries, np.float64)[:, 0] - centre, scale)
        nearest2 = nearest_squared(q, k)
    near = nearest2 <= MAX_NEAREST**2
    settled = np.zeros(q.shape[0], bool)
    sums = np.zeros((q.shape[0], features.shape[1]))
    result = (sums, settled)
    if return_nearest:
        in_order = np.empty_like(nearest2)
        in_order[query_order] = nearest2
        result = (sums, settled, in_order)
    if not near.any():
        return result
    rows = np.flatnonzero(near)
    farthest = float(reach(nearest2[near].max(), k.shape[0], tolerance))
    raw = (np.asarray(queries, np.float64)[query_order[rows], 0], raw_keys[key_order], scale)
    found = sorted_sums(q[rows], nearest2[rows], k, features, farthest, tolerance, raw)
    if found is not None:
        sums[query_order[rows]] = found
        settled[query_order[rows]] = np.isfinite(found).all(axis=1)
    return result


def sorted_sums(q, nearest2, k, features, farthest, tolerance, raw=None):
    """``(n, f)``: the expanded sums at scaled queries ``q`` over the sorted scaled keys
    ``k`` (keys beyond ``farthest`` left out; NaN where a window leaves the table), or
    None where the coefficients would be more than :data:`MAX_COEFFICIENTS`. Wide gaps
    between keys are closed first (:func:`~.gaps.closed_gaps`, with ``raw``)."""
    counts = features.shape[1] == 1  # the ones column only: every feature a count
    width, half, order = plan(farthest, counts=counts, tolerance=tolerance)
    k, q = closed_gaps(k, q, width, (2 * half + 4) * width, raw)
    boxes = np.floor((k - k[0]) / width).astype(np.int64)
    if (int(boxes[-1]) + 4 * half + 3) * order * features.shape[1] > MAX_COEFFICIENTS:
        return None
    table = _coefficients(k, features, boxes, k[0], width, order, half)
    return _evaluate(q - k[0], nearest2, table, width, half, order)


#: Leave-one-out weights (in units of ``K(0)``) below which a point's sums are summed
#: again pair by pair: the expansion's error is relative to the weight *with* the own
#: term (:mod:`attnpool.methods.backends.expansions`, :mod:`attnpool.methods.loo_weights`).
LOO_MIN_WEIGHT = 1e-4


def nearest_squared(q, ordered):
    """Squared distance from each query to its nearest key; ``ordered`` sorted."""
    right = np.clip(np.searchsorted(ordered, q), 0, ordered.shape[0] - 1)
    left = np.maximum(right - 1, 0)
    gaps = np.minimum(np.abs(q - ordered[left]), np.abs(q - ordered[right]))
    return gaps * gaps


def _coefficients(k, features, boxes, origin, width, order, half):
    """``(order · f, boxes + 2·pad)``: box ``b``'s ``A_j`` (row ``j·f + c``) in column
    ``b + pad``, ``pad = 2·half + 1`` empty boxes on either side (windows of queries outside
    the keys): by ``expansions.c`` where it compiles, else in NumPy key chunks."""
    f, pad = features.shape[1], 2 * half + 1
    table = np.zeros((order * f, int(boxes[-1]) + 1 + 2 * pad))
    compiled = native.expansion_function("fgt_coefficients")
    if compiled is not None and order * f <= COMPILED_MAX_TERMS:
        k, features = np.ascontiguousarray(k), np.ascontiguousarray(features)
        boxes = np.ascontiguousarray(boxes, np.int64)
        at = native.address
        if compiled(at(k), at(features), at(boxes), k.shape[0], f, origin, width, order, pad,
                    table.shape[1], at(table)):  # fmt: skip
            raise MemoryError("fgt: no memory for a box's coefficients")
        return table
    for chunk in (slice(i, i + KEY_CHUNK) for i in range(0, k.shape[0], KEY_CHUNK)):
        box = boxes[chunk]
        t = k[chunk] - (origin + (box + 0.5) * width)
        terms = np.empty((order, f, t.shape[0]))  # F exp(−t²/2) t^j / j!
        np.multiply(np.exp(-0.5 * t * t), features[chunk].T, out=terms[0])
        for j in range(1, order):
            np.multiply(terms[j - 1], t / j, out=terms[j])
        starts = np.flatnonzero(np.diff(box, prepend=box[0] - 1))  # keys are sorted by box
        table[:, box[starts] + pad] += np.add.reduceat(terms.reshape(order * f, -1), starts, axis=1)
    return table


#: The compiled loops' limits (``expansions.c``'s ``MAX_WINDOW``, ``SPREAD`` and
#: ``MAX_TERMS``): a window wider than the first less the second, or more coefficients in
#: a box, take the NumPy and XLA forms.
COMPILED_MAX_WINDOW, COMPILED_SPREAD, COMPILED_MAX_TERMS = 512, 4, 1024
#: Query × window × order terms from which the compiled evaluation is split across cores:
#: ~2·10⁵ densities of one column (two cores were no faster at 10⁵, 1.3× at 3·10⁵; and
#: a first threaded call may wait ~10 ms on threads still starting).
THREAD_MIN_TERMS = 2**26


def _evaluate(u, nearest2, table, width, half, order):
    """``Σ_boxes exp(−(s² − r²)/2) Σ_j A_j s^j``: ``(n, f)`` at ``u = q − origin``, by
    ``expansions.c`` where it compiles (one thread per core for many queries), else
    :func:`_evaluate_xla`."""
    compiled = native.expansion_function("fgt_evaluate")
    if compiled is None or 2 * half + 1 + COMPILED_SPREAD > COMPILED_MAX_WINDOW:
        return _evaluate_xla(u, nearest2, np.ascontiguousarray(table.T), width, half, order)
    f = table.shape[0] // order
    u, nearest2 = np.ascontiguousarray(u, np.float64), np.ascontiguousarray(nearest2, np.float64)
    n = u.shape[0]
    sums = np.empty((n, f))

    def task(start: int, stop: int) -> None:
        at = native.address
        if compiled(at(u, start), at(nearest2, start), stop - start, at(table), table.shape[1],
                    f, width, half, order, at(sums, start)):  # fmt: skip
            raise MemoryError("fgt: no memory for a window's factors")

    if n * (2 * half + 1) * order * f < THREAD_MIN_TERMS or native.cores() == 1:
        task(0, n)
        return sums
    bounds = np.linspace(0, n, min(native.cores(), n) + 1).astype(np.int64).tolist()
    list(native.thread_pool().map(task, bounds[:-1], bounds[1:]))
    return sums


def _evaluate_xla(u, nearest2, table, width, half, order):
    """:func:`_evaluate` on the XLA engine, ``table`` by box ``(columns, order · f)``.

    Queries are grouped by their box into chunks: the queries of a chunk share one
    window of coefficients, a contiguous slice of ``table``, so nothing is gathered
    per query.
    """
    import jax.numpy as jnp

    from .._support.interop import precision_scope

    f = table.shape[1] // order
    box = np.floor(u / width).astype(np.int64)
    by_box = np.argsort(box, kind="stable")
    starts = np.flatnonzero(np.diff(box[by_box], prepend=box[by_box[0]] - 1))
    counts = np.diff([*starts, u.shape[0]])
    size = int(np.clip(_bucket(u.shape[0] // starts.size), 16, QUERY_CHUNK))
    pieces = -(-counts // size)  # chunks per box
    firsts = np.repeat(starts, pieces) + size * _ranks(pieces)  # in by_box order
    ends = np.repeat(starts + counts, pieces)
    group = min(_bucket(firsts.size), CHUNK_GROUP)
    table = np.pad(table, [(0, _bucket(table.shape[0]) - table.shape[0]), (0, 0)])
    sums = np.zeros((u.shape[0], f))
    for at in range(0, firsts.size, group):
        first, end = np.zeros(group, np.int64), np.zeros(group, np.int64)  # padded: empty
        taken = slice(at, min(at + group, firsts.size))
        first[: taken.stop - at], end[: taken.stop - at] = firsts[taken], ends[taken]
        slots = first[:, None] + np.arange(size)
        valid = slots < end[:, None]
        rows = by_box[np.minimum(slots, u.shape[0] - 1)]
        with precision_scope(np.float64):
            out = _chunk_program()(
                jnp.asarray(u[rows]),
                jnp.asarray(nearest2[rows]),
                jnp.asarray(box[by_box[first]] + half + 1),  # each window's first table row
                table,
                width,
                window=2 * half + 1,
                order=order,
            )
        sums[rows[valid]] = np.asarray(out)[valid]
    return sums


def _ranks(pieces):
    """``0 … p − 1`` for each ``p`` in ``pieces``, concatenated."""
    return np.arange(pieces.sum()) - np.repeat(np.cumsum(pieces) - pieces, pieces)


def _bucket(size: int) -> int:
    """``size`` rounded up to a power of two (few shapes, few compilations)."""
    return 1 << max(0, math.ceil(math.log2(size)))


@functools.cache
def _chunk_program():
    """:func:`_evaluate_xla`'s jitted sums (JAX imported on first use: the compiled loop
    needs none)."""
    import jax

    return partial(jax.jit, static_argnames=("window", "order"))(_evaluate_chunks)


def _evaluate_chunks(u, nearest2, first, table, width, *, window, order):
    """``(chunks, c, f)`` sums for query chunks ``u, nearest2 (chunks, c)`` whose windows
    start at table rows ``first (chunks,)``."""
    import jax
    import jax.numpy as jnp

    f = table.shape[1] // order
    offsets = jnp.arange(window) - window // 2

    def chunk(args):
        u, r2, first = args
        slab = jax.lax.dynamic_slice_in_dim(table, first, window).reshape(window, order, f)
        box = first - window // 2 - 1
        s = u[:, None] - ((box + offsets) + 0.5) * width  # (c, window)
        total = jnp.broadcast_to(slab[:, -1], (*s.shape, f))
        for j in range(order - 2, -1, -1):  # Horner in s
            total = total * s[..., None] + slab[:, j]
        factor = jnp.exp(-0.5 * (s * s - r2[:, None]))
        return jnp.sum(factor[..., None] * total, axis=1)

    return jax.lax.map(chunk, (u, nearest2, first))
