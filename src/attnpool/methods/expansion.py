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
Queries farther than :data:`MAX_NEAREST` from every key are returned unsettled
(the caller pools them exactly).
"""

from __future__ import annotations

import math

import numpy as np

from ..kernels import Kernel

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
#: Keys expanded at once.
KEY_CHUNK = 2**16


def supports(kernel: Kernel) -> bool:
    from .. import kernels

    return kernel is kernels.get("gaussian")


def plan(reach: float) -> tuple[float, int, int]:
    """``(width, half_window, order)``: boxes of ``width`` bandwidths, ``half_window`` boxes
    on each side of the query's box (covering ``reach``), Taylor ``order`` — the
    cheapest that meets :data:`TOLERANCE`."""
    best = None
    for width in WIDTHS:
        half = math.ceil(reach / width)
        largest = (half + 0.5) * width * (width / 2)  # max |s·t| in the window
        order = 1
        while largest**order / math.factorial(order) * math.exp(largest) > TOLERANCE:
            order += 1
        cost = (2 * half + 1) * order
        if best is None or cost < best[0]:
            best = (cost, width, half, order)
    return best[1:]


def expansion_sums(queries, keys, values, scale) -> tuple[np.ndarray, np.ndarray]:
    """``(sums (n, 1 + p), settled (n,))``: ``[Σ_j K_ij, Σ_j K_ij v_j] · exp(r_i²/2)`` for
    the Gaussian ``K_ij = exp(−(s(q_i − k_j))²/2)`` (``r_i``: the scaled distance to the
    nearest key, a per-row factor that cancels in the pooled ratio) and which rows are
    within the error bound.

    ``queries (n, 1)``, ``keys (m, 1)``, ``values (m, p)``; ``scale`` the inverse bandwidth.
    """
    scale = float(np.asarray(scale, np.float64).reshape(-1)[0])
    order_k = np.argsort(np.asarray(keys)[:, 0])
    k = np.asarray(keys)[order_k, 0].astype(np.float64) * scale
    features = np.ones((k.shape[0], 1 + values.shape[1]))
    features[:, 1:] = np.asarray(values)[order_k]
    del order_k
    q = np.asarray(queries, np.float64)[:, 0] * scale
    nearest2 = _nearest_squared(q, k)
    settled = nearest2 <= MAX_NEAREST**2
    sums = np.zeros((q.shape[0], features.shape[1]))
    if not settled.any():
        return sums, settled
    m = k.shape[0]
    reach = math.sqrt(float(nearest2[settled].max()) + 2 * math.log(m / TOLERANCE))
    width, half, order = plan(reach)
    boxes = np.floor((k - k[0]) / width).astype(np.int64)
    if (int(boxes[-1]) + 4 * half + 3) * order * features.shape[1] > MAX_COEFFICIENTS:
        return sums, np.zeros_like(settled)
    table = _coefficients(k, features, boxes, k[0], width, order, half)
    rows = np.flatnonzero(settled)
    sums[rows] = _evaluate(q[rows] - k[0], nearest2[rows], table, width, half, order)
    return sums, settled


def _nearest_squared(q, ordered):
    """Squared distance from each query to its nearest key; ``ordered`` sorted."""
    right = np.clip(np.searchsorted(ordered, q), 0, ordered.shape[0] - 1)
    left = np.maximum(right - 1, 0)
    gaps = np.minimum(np.abs(q - ordered[left]), np.abs(q - ordered[right]))
    return gaps * gaps


def _coefficients(k, features, boxes, origin, width, order, half):
    """``(boxes + 2·pad, order · f)``: box ``b``'s ``A_j`` (``j`` major) in row ``b + pad``,
    ``pad = 2·half + 1`` empty boxes on either side (windows of queries outside the keys)."""
    f, pad = features.shape[1], 2 * half + 1
    table = np.zeros((order * f, int(boxes[-1]) + 1 + 2 * pad))
    for chunk in (slice(i, i + KEY_CHUNK) for i in range(0, k.shape[0], KEY_CHUNK)):
        box = boxes[chunk]
        t = k[chunk] - (origin + (box + 0.5) * width)
        starts = np.flatnonzero(np.diff(box, prepend=box[0] - 1))  # keys are sorted by box
        power = np.exp(-0.5 * t * t)  # exp(−t²/2) t^j / j!
        for j in range(order):
            for c in range(f):
                term = power * features[chunk, c]
                table[j * f + c, box[starts] + pad] += np.add.reduceat(term, starts)
            power *= t / (j + 1)
    return np.ascontiguousarray(table.T)


def _evaluate(u, nearest2, table, width, half, order):
    """``Σ_boxes exp(−(s² − r²)/2) Σ_j A_j s^j``: ``(n, f)`` at ``u = q − origin``.

    Queries are taken in order of their box: the ones in a box share the window's
    coefficients, a contiguous slice of ``table``, so each box is one matrix product.
    """
    f = table.shape[1] // order
    box = np.floor(u / width).astype(np.int64)
    sorted_rows = np.argsort(box, kind="stable")
    sums = np.zeros((u.shape[0], f))
    window = np.arange(-half, half + 1)
    for chunk in (slice(i, i + QUERY_CHUNK) for i in range(0, u.shape[0], QUERY_CHUNK)):
        rows = sorted_rows[chunk]
        s = u[rows, None] - ((box[rows, None] + window) + 0.5) * width  # (c, 2·half + 1)
        basis = np.empty((order, *s.shape))  # exp(−(s² − r²)/2) s^j
        np.exp(-0.5 * (s * s - nearest2[rows, None]), out=basis[0])
        for j in range(1, order):
            np.multiply(basis[j - 1], s, out=basis[j])
        in_box = box[rows]
        starts = np.flatnonzero(np.diff(in_box, prepend=in_box[0] - 1))
        for start, stop in zip(starts, [*starts[1:], in_box.size], strict=True):
            first = in_box[start] + half + 1  # the window's rows in the table
            slab = table[first : first + 2 * half + 1].reshape(-1, f)  # (w, j) major
            local = basis[:, start:stop].transpose(1, 2, 0).reshape(stop - start, -1)
            sums[rows[start:stop]] = local @ slab
    return sums
