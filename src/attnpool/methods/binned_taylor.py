"""Gaussian sums at queries on a lattice, from each key's moments about its nearest node.

A key ``x = c + t`` binned to its nearest node ``c`` (``|t_j| ≤ Δ_j/2``) and a query on
a node, ``u = q − c`` a node offset, sum the pair's kernel by Taylor's theorem in ``t``
to total order ``p``, for the scaled Gaussian ``K(u) = Π_j φ(u_j)``:

    K(u − t) = Σ_{|α| ≤ p} (−t)^α / α! · ∂^α K(u) + R,
    |R| ≤ Σ_{|α| = p+1} |t^α| / α! · Π_j max_{|s| ≤ Δ_j/2} |φ^(α_j)(u_j − s)|

(the Lagrange remainder of ``s ↦ K(u − s t)``). Summed over the keys, each term is a
convolution of a binned moment ``Σ_i t_i^α`` with a separable table of ``φ``'s
derivatives at the node offsets, and so is the remainder's bound, from the binned
``Σ_i |t_i^α|``: every query gets its sum and a proved bound on its error. Of order
``p + 1`` in the spacing, the scheme settles a density at the lattice's own spacing —
a plotting grid, KDEpy's grid — where linear binning needs several nodes between two
queries (:mod:`.binned_gaussian`), so the grid is as small as the queries' lattice and
the order, not the grid, is chosen for the tolerance (:func:`plan`).
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any, NamedTuple

import numpy as np

from .._support.units import column_extremes
from . import fgt, native
from .binned_gaussian import derivative, fast_length, hermite_maxima
from .binning import FFT_ROUNDING, Binning, GridPlan, counted_features, key_total
from .threads import cores, thread_pool

#: The unit roundoff of float64 (half its machine epsilon).
EPSILON = float(np.finfo(np.float64).eps) / 2
#: Highest order tried and taken (``expansions.c`` takes up to 15).
MAX_ORDER = 8
#: Keys per thread from which the binning is split between the cores (each its own grid,
#: where the grid holds fewer numbers than there are keys).
THREADED_KEYS = 2**17
#: The band of keys found beside the data's ends in the binning pass, in reaches of a
#: row at an end (:func:`.fgt.reach`): the rows beyond the data need the keys within
#: about one reach of its ends (:func:`.binned_near.keys_near` checks they fit).
BESIDE_REACHES = 1.5
#: The most keys recorded in that band: a share of the keys, at least a few thousand.
#: Beyond (uniform data, a bandwidth wide against the data), the rows take the full pass
#: rather than the pass writing an index for every key (fresh memory, slow here).
BESIDE_SHARE, BESIDE_LEAST = 64, 4096
#: Numbers (nodes times columns) a plan's grid may hold, in nodes of linear binning's
#: budget: about what that many nodes hold there with their columns and spectra.
LINEAR_COLUMNS = 12
#: Relative cost of one moment per key and of one column per grid node (FFTs,
#: products), as measured on the bench's sizes: the plan minimises their sum.
KEY_COST, NODE_COST = 1.0, 12.0


def moment_orders(order: int, d: int) -> list[tuple[int, ...]]:
    """The multi-indices ``|α| ≤ order`` in ``expansions.c``'s column order (``α_0``-major),
    then those with ``|α| = order + 1`` (the remainder's)."""
    if d == 1:
        return [(a,) for a in range(order + 1)] + [(order + 1,)]
    kept = [(a, b) for a in range(order + 1) for b in range(order + 1 - a)]
    return kept + [(a, order + 1 - a) for a in range(order + 2)]


def axis_tables(order: int, spacing: float, span: int, half: float):
    """``(values, bounds)`` along one axis, node offsets ``−span … span``: ``values[k] =
    (−Δ)^k/k! φ^(k)(vΔ)``, ``k ≤ order`` (the moments are in spacings), and ``bounds[k] =
    Δ^k/k! · max |φ^(k)|`` over ``half`` about each offset, ``k ≤ order + 1``."""
    offsets = np.arange(-span, span + 1) * spacing
    values = np.stack([(-spacing) ** k / math.factorial(k) * derivative(k, offsets)
                       for k in range(order + 1)])  # fmt: skip
    return values, bound_tables(order, spacing, span, half)


def bound_tables(order: int, spacing: float, span: int, half: float) -> np.ndarray:
    """:func:`axis_tables`' ``bounds``."""
    return np.stack([spacing**k / math.factorial(k) * hermite_maxima(k, spacing, span, half)
                     for k in range(order + 2)])  # fmt: skip


@cache
def relative_bound(order: int, spacing: float, d: int) -> float:
    """The remainder's bound over the density, both summed over keys spread evenly (one
    per node, ``|t_j|`` uniform in ``[0, ½]``), spacing ``Δ`` in every dimension."""
    span = int(np.ceil(9.0 / spacing)) + 1
    bounds = bound_tables(order, spacing, span, spacing / 2)
    mean_power = [0.5**k / (k + 1) for k in range(order + 2)]  # E |t|^k, t ~ U(−½, ½)
    totals = [mean_power[k] * float(np.sum(bounds[k])) for k in range(order + 2)]
    remainder = sum(math.prod(totals[a] for a in alpha)
                    for alpha in moment_orders(order, d) if sum(alpha) == order + 1)  # fmt: skip
    density = float(np.sum(derivative(0, np.arange(-span, span + 1) * spacing))) ** d
    return remainder / density


def _rounded_up(spacing: float) -> float:
    """``spacing`` rounded up to a power of ``2^(1/16)``: the plans' bounds are computed
    for a few spacings, and a coarser spacing bounds more."""
    return 2.0 ** (math.ceil(16 * math.log2(spacing)) / 16)


def plan(tolerance: float, step: Any, extent: Any, keys: int, budget: int):
    """``(order, divisions)`` for queries on a lattice ``step (d,)`` apart (scaled units)
    over ``extent (d,)`` scaled widths: each step divided into ``divisions (d,)`` spacings
    and the order such that :func:`relative_bound` is at most half of ``tolerance``, the
    pair of least estimated cost (:data:`KEY_COST` per moment a key, :data:`NODE_COST`
    per column a node); None where every such grid holds more than ``budget`` numbers
    (nodes times columns)."""
    step, extent = np.asarray(step, np.float64), np.asarray(extent, np.float64)
    d, best = step.size, None
    for order in range(1, MAX_ORDER + 1):
        columns = len(moment_orders(order, d))
        for k in range(1, 65):
            spacing = step / k
            if relative_bound(order, _rounded_up(float(np.max(spacing))), d) <= tolerance / 2:
                break
        else:
            continue
        divisions = np.ceil(step / spacing).astype(int)
        nodes = float(np.prod(extent / spacing + 2 * 9.0 / spacing + 3))
        if nodes * columns > budget:
            continue
        cost = columns * (KEY_COST * keys + NODE_COST * nodes)
        if best is None or cost < best[0]:
            best = (cost, order, divisions)
        if np.all(divisions == 1):  # the lattice itself: a higher order costs more
            break
    return None if best is None else best[1:]


def taylor_sums(
    queries: Any,
    keys: Any,
    scale: Any,
    plan: GridPlan,
    values: Any = None,
    *,
    cells: bool = False,
    weights: Any = None,
) -> tuple[np.ndarray, np.ndarray, Binning]:
    """:func:`.binned_host.binned_sums` for the Gaussian at queries on the plan's grid's
    nodes: ``(sums (n, 1 + p), error (n,), binning)``, the sums ``[Σ_j K_ij, Σ_j K_ij v_j]
    / K(0)`` to the plan's total ``order`` in each key's offset from its nearest node,
    ``error`` a bound on ``Σ_j |error of K_ij|`` per query: the remainder, the queries'
    own offsets from their nodes (rounding), the keys beyond the plan's ``reach`` and the
    FFT's rounding."""
    grid, reach, order = plan.grid, plan.reach, int(plan.order or 0)
    d, m = len(grid.size), keys.shape[0]
    spacing, size = np.asarray(grid.spacing, np.float64), np.asarray(grid.size)
    scale = np.broadcast_to(np.asarray(scale, np.float64), (d,))
    features = counted_features(m, values, weights)
    f = 1 if features is None else features.shape[1]
    alphas = moment_orders(order, d)
    kept = len(alphas) - (order + 2 if d == 2 else 1)
    band = None
    if d == 1 and features is None:  # the keys near the data's ends, found in the same pass
        low, high = (float(e[0]) for e in column_extremes(keys))  # (remembered)
        width = (BESIDE_REACHES * float(fgt.reach(0.0, m)) + 4 * spacing[0]) / scale[0]
        band = (low + width, high - width)
    binned, where, beside = _bin(keys, scale, grid, features, order, cells, band)

    queries = np.asarray(queries, np.float64) * scale
    position = (queries - np.asarray(grid.start)) / spacing
    node = np.clip(np.rint(position), 0, size - 1).astype(np.int64)
    off = np.max(np.abs(position - node), axis=0, initial=0.0) * spacing  # (d,)
    spans = [int(min(r + 1, s - 1)) for r, s in zip(reach, size, strict=True)]
    lengths = [fast_length(int(s) + w) for s, w in zip(size, spans, strict=True)]
    made = [
        axis_tables(order, h, w, h / 2 + e) for h, w, e in zip(spacing, spans, off, strict=True)
    ]
    tables = AxisTables([t[0] for t in made], [t[1] for t in made], spans, lengths)
    terms = [(c, k * f + c, "value", alpha, 1.0)
             for k, alpha in enumerate(alphas[:kept]) for c in range(f)]  # fmt: skip
    terms += [(f, kept * f + b, "bound", alpha, 1.0) for b, alpha in enumerate(alphas[kept:])]
    # the queries off their nodes: |K(q − x) − K(node − x)| ≤ Σ_j off_j max |∂_j K|
    terms += [(f, 0, "bound", tuple(int(a == j) for a in range(d)), off[j] / spacing[j])
              for j in range(d) if off[j] > 0]  # fmt: skip
    flat = np.ravel_multi_index(tuple(node.T), tuple(size))
    largest = 1.0 if features is None else float(np.max(np.abs(features)))
    direct = None
    if d == 2 and _direct_pays(terms, binned.shape[-1], tables):
        direct = _direct_sums(binned, terms, f + 1, tables, largest)
    if direct is not None:  # each node's rounding, relative to its own terms
        at, rounding = direct[0][:, flat].T, direct[1][flat]
    else:
        at, rounding = _fft_sums(binned, terms, f, tables, largest, flat)

    # keys beyond the reach along some axis: each weighs at most φ at half a node less
    cut = [(w + 0.5) * h - e for w, h, e, s in zip(spans, spacing, off, size, strict=True)
           if w < s - 1]  # fmt: skip
    left_out = key_total(m, weights) * math.exp(-0.5 * max(min(cut), 0.0) ** 2) if cut else 0.0
    error = at[:, f] + left_out + rounding
    found = None if beside is None else (beside, *band)
    return at[:, :f], error, Binning(grid, binned[..., :1], where, found)


class AxisTables(NamedTuple):
    """The terms' tables along each axis ``j``: ``value[j]`` the kernel's Taylor terms and
    ``bound[j]`` their remainders' bounds (:func:`axis_tables`, ``(order + 1, 2·span + 1)``
    each), their half-widths ``spans`` and the FFT ``lengths``."""

    value: list[np.ndarray]
    bound: list[np.ndarray]
    spans: list[int]
    lengths: list[int]

    def named(self, name: str) -> list[np.ndarray]:
        """A term's table set: ``"value"`` or ``"bound"``."""
        return self.value if name == "value" else self.bound


def _fft_sums(binned, terms, f, tables: AxisTables, largest, flat):
    """``(sums (k, f + 1), rounding)`` at the nodes ``flat`` by FFTs (:func:`_separable_sums`),
    ``rounding`` an FFT convolution's: ``eps·log2(length)·‖data‖₂·‖kernel‖₁`` every
    column, a moment of order ``|α|`` at most ``2^−|α|`` times its node's count
    (``|t_j| ≤ ½``)."""
    d = binned.ndim - 1
    lengths = tables.lengths
    spectra = {  # (table set, axis, order) → the table's spectrum (rfft on the last axis)
        (name, j, k): row
        for name in ("value", "bound")
        for j, (t, w, n) in enumerate(zip(tables.named(name), tables.spans, lengths, strict=True))
        for k, row in enumerate(_axis_spectra(t, w, n, last=j == d - 1))
    }
    full = _separable_sums(binned, terms, f + 1, spectra, lengths)
    counts = binned[..., 0]
    norm = float(np.sqrt(np.sum(counts * counts)))
    total = 0.0
    for _, column, name, alpha, coefficient in terms:
        per_axis = tables.named(name)
        weight = largest if name == "value" else 1.0
        weight *= 1.0 if name == "bound" and column == 0 else 0.5 ** sum(alpha)
        total += weight * abs(coefficient) * math.prod(
            float(np.sum(np.abs(per_axis[j][a]))) for j, a in enumerate(alpha))  # fmt: skip
    rounding = FFT_ROUNDING * math.log2(math.prod(lengths)) * norm * total
    return full.reshape(-1, f + 1)[flat], rounding


#: Taps summed directly for the time of one unit of the FFTs (a column transformed, per
#: ``log2`` of the grid's length): 3.3 on KDEpy's 258² grid here (7 ms of taps against
#: 17 ms of FFTs). Two columns sum directly where their taps cost less (:func:`_direct_pays`).
TAPS_PER_FFT = 3.0


def _groups(terms) -> list[tuple]:
    """The tables along the first axis, one per output and table set and order there."""
    return sorted({(output, name, orders[0]) for output, _, name, orders, _ in terms})


def _direct_pays(terms, width: int, tables: AxisTables) -> bool:
    """Whether summing two columns' taps directly costs less than their FFTs: the taps,
    ``terms`` along the second axis and groups along the first, against
    :data:`TAPS_PER_FFT` per column transformed, times ``log2`` of the grid's length."""
    groups, spans = len(_groups(terms)), tables.spans
    taps = len(terms) * (2 * spans[1] + 1) + groups * (2 * spans[0] + 1)
    return taps <= TAPS_PER_FFT * (width + groups) * math.log2(math.prod(tables.lengths))


def _direct_sums(binned, terms, outputs: int, axis_tables: AxisTables, largest: float):
    """``(sums (outputs, nodes), rounding (nodes,))``: :func:`_separable_sums`' terms in two
    columns, every tap summed directly (``expansions.c``'s ``separable_direct``), and
    each node's rounding bound: ``γ_K`` (``K`` the roundings in the longest chain)
    times the sum of its terms' magnitudes, bounded by one more plane — the counts
    convolved with the sums of every table's magnitudes along each axis, times the
    largest coefficient and feature (a moment is at most its node's count, ``|t_j| ≤
    ½``). None without the compiled loops or the memory (the FFTs then serve)."""
    compiled = native.expansion_function("separable_direct")
    if compiled is None:
        return None
    tables = {"value": axis_tables.value, "bound": axis_tables.bound}
    groups = _groups(terms)
    scale = max(1.0, max(abs(t[4]) for t in terms)) * max(1.0, largest)
    magnitude = [sum(np.sum(np.abs(t[j]), axis=0) for t in tables.values()) for j in (0, 1)]
    along1 = np.stack([c * tables[name][1][orders[1]] for _, _, name, orders, c in terms]
                      + [scale * magnitude[1]])  # fmt: skip
    along0 = np.stack([tables[name][0][a] for _, name, a in groups] + [magnitude[0]])
    column = np.array([t[1] for t in terms] + [0], np.int64)
    group = np.array([groups.index((o, n, orders[0])) for o, _, n, orders, _ in terms]
                     + [len(groups)], np.int64)  # fmt: skip
    output = np.array([g[0] for g in groups] + [outputs], np.int64)
    size0, size1, width = binned.shape
    binned = np.ascontiguousarray(binned, np.float64)
    out = np.empty((outputs + 1, size0 * size1))
    at = native.address
    failed = compiled(at(binned), size0, size1, width, len(column), at(column), at(group),
                      at(along1), along1.shape[1] // 2, len(output), at(output), at(along0),
                      along0.shape[1] // 2, outputs + 1, at(out))  # fmt: skip
    if failed:
        return None
    chain = len(column) * along1.shape[1] + len(output) * along0.shape[1] + 4
    gamma = chain * EPSILON / (1 - chain * EPSILON)
    # the sums' and the bound's own rounding, and the magnitude's
    return out[:outputs], 2.2 * gamma * out[outputs]


def _axis_spectra(tables: np.ndarray, span: int, length: int, last: bool) -> np.ndarray:
    """The spectra of the rows of ``tables (k, 2·span + 1)`` (offsets ``−span … span``)
    placed circularly in ``length``: ``rfft`` along the last axis, else ``fft``."""
    circular = np.zeros((tables.shape[0], length))
    circular[:, : span + 1] = tables[:, span:]
    circular[:, length - span :] = tables[:, :span]
    return np.fft.rfft(circular, axis=1) if last else np.fft.fft(circular, axis=1)


#: Grid rows transformed at once along the last axis (d = 2): the moments' spectra are
#: combined a block at a time, never held all at once.
ROW_BLOCK = 32


def _separable_sums(binned, terms, outputs: int, spectra, lengths) -> np.ndarray:
    """``(*size, outputs)``: ``Σ coefficient · binned[..., column] ⊛ ⊗_j table_j`` over
    ``terms (output, column, name, orders, coefficient)``, ``table_j`` the one whose
    spectrum is ``spectra[name, j, orders[j]]``. The last axis is transformed for every
    column, a block of rows at a time, and the columns combined there, per frequency,
    into one per output and table along the first axis (d = 2), which alone are
    transformed along it."""
    d, size, width = binned.ndim - 1, binned.shape[:-1], binned.shape[-1]
    last = lengths[-1] // 2 + 1
    groups = sorted({(o, name, orders[0] if d == 2 else 0) for o, _, name, orders, _ in terms})
    combine = np.zeros((last, width, len(groups)), complex)  # per frequency of the last axis
    for output, column, name, orders, coefficient in terms:
        group = groups.index((output, name, orders[0] if d == 2 else 0))
        combine[:, column, group] += coefficient * spectra[name, d - 1, orders[-1]]
    into = np.zeros((len(groups), outputs))
    into[np.arange(len(groups)), [g[0] for g in groups]] = 1.0
    if d == 1:
        rows = np.fft.rfft(binned, n=lengths[0], axis=0)  # (last, width)
        summed = np.einsum("fw,fwg->fg", rows, combine) @ into
        return np.fft.irfft(summed, n=lengths[0], axis=0)[: size[0]]
    along = np.zeros((last, lengths[0], len(groups)), complex)  # the first axis padded
    for start in range(0, size[0], ROW_BLOCK):
        block = np.fft.rfft(binned[start : start + ROW_BLOCK], n=lengths[1], axis=1)
        rows = slice(start, start + block.shape[0])
        along[:, rows] = np.matmul(block.transpose(1, 0, 2), combine)
    np.fft.fft(along, axis=1, out=along)  # (last, L0, groups), in place
    along *= np.stack([spectra[name, 0, order] for _, name, order in groups], axis=-1)
    summed = np.fft.ifft(along @ into, axis=1)  # (last, L0, outputs)
    full = np.fft.irfft(summed.transpose(1, 0, 2), n=lengths[1], axis=1)
    return full[: size[0], : size[1]]


def _bin(keys: Any, scale: Any, grid: Any, features: Any, order: int, cells: bool, band=None):
    """``(binned (*size, width), cells, beside)``: ``expansions.c``'s ``taylor_bin``, or
    NumPy's ``bincount`` without the compiled loops. ``band = (below, above)`` (one column of
    counts): ``beside``, the indices of the keys at most ``below`` or at least ``above``,
    found in the same pass (None without the compiled loops, not asked, or more than
    :data:`BESIDE_SHARE` of the keys)."""
    if not 0 <= order <= MAX_ORDER:
        raise ValueError(f"order: expected 0 to {MAX_ORDER}; received {order!r}")
    keys = np.ascontiguousarray(keys, np.float64)
    n, d = keys.shape
    f = 1 if features is None else features.shape[1]
    alphas = moment_orders(order, d)
    kept = len(alphas) - (order + 2 if d == 2 else 1)
    width = f * kept + len(alphas) - kept
    size = np.asarray(grid.size, np.int64)
    binned = np.zeros((int(np.prod(size)), width))
    where = np.empty(n, np.int32) if cells else None  # node indices: under 2^31
    compiled = native.expansion_function("taylor_bin")
    start, spacing = (np.ascontiguousarray(a, np.float64) for a in (grid.start, grid.spacing))
    if compiled is not None:
        features = None if features is None else np.ascontiguousarray(features, np.float64)
        at = native.address
        # a grid of its own per thread, where it costs less than the keys' moments
        parts = min(cores(), max(1, n // THREADED_KEYS)) if binned.size <= n else 1
        grids = [binned] + [np.zeros_like(binned) for _ in range(parts - 1)]
        bounds = [n * part // parts for part in range(parts + 1)]
        # each part's keys beside the band, at most `most` of them, from part · most
        most = 0 if band is None else max(BESIDE_LEAST, n // BESIDE_SHARE) // parts
        limits = None if band is None else np.array([*band, most], np.float64)
        beside = np.empty(parts * most, np.int64)
        besides = np.zeros(parts, np.int64)

        def task(part: int) -> None:
            low, high = bounds[part], bounds[part + 1]
            compiled(at(keys, low), high - low, d, at(scale), at(start), at(spacing), at(size),
                     None if features is None else at(features, low), f, order,
                     at(grids[part]), None if where is None else at(where, low),
                     None if limits is None else at(limits), at(beside, part * most),
                     at(besides, part))  # fmt: skip

        others = [thread_pool().submit(task, part) for part in range(1, parts)]
        task(0)  # this thread takes a part too: one wake-up fewer
        for other in others:
            other.result()
        for other in grids[1:]:
            binned += other
        found = None
        if band is not None and np.all(besides >= 0):
            found = np.concatenate(
                [beside[p * most : p * most + c] + bounds[p] for p, c in enumerate(besides)]
            )
        return binned.reshape(*grid.size, width), where, found
    position = (keys * scale - start) / spacing
    node = np.clip(np.floor(position + 0.5), 0, size - 1)
    t = position - node
    flat = np.ravel_multi_index(tuple(node.astype(np.int64).T), tuple(size))
    taken = np.ones((n, 1)) if features is None else features
    for k, alpha in enumerate(alphas):
        power = np.prod([t[:, j] ** a for j, a in enumerate(alpha)], axis=0)
        if k < kept:
            for c in range(f):
                binned[:, k * f + c] = np.bincount(flat, taken[:, c] * power, binned.shape[0])
        else:
            binned[:, f * kept + k - kept] = np.bincount(flat, np.abs(power), binned.shape[0])
    if where is not None:
        where[:] = flat
    return binned.reshape(*grid.size, width), where, None
