"""The Gaussian by a compiled loop on the CPU: distances, exponentials and sums in one pass.

An exact Gaussian pool costs ``n·m`` exponentials, and on a CPU the streamed XLA path
pays about as much again around them: the matrix product that forms a block of log
weights is written out and read back, since XLA:CPU does not fuse a product with the
``exp`` that follows. ``native.c`` fuses the three steps for six queries at a time
over chunks of 256 keys held in registers and L1, and evaluates ``2^x`` by an exact
range reduction and a polynomial (float32: relative error ~2e-8; float64: Taylor to
degree 13), so it runs below the cost of XLA's ``exp`` alone. Sums are exact to the
working precision's rounding (see ``native.c`` for the running shift that keeps every
weight in range), so ``auto`` may pick it.

The source is compiled with the package (:mod:`.compiled`: one library per
instruction set, the widest this processor runs loaded), once per variant — precision,
columns, value columns, product form —, :data:`DIMS_BUILT` and :data:`VALUES_BUILT` say
which: other column and value counts are padded with zeros to the next one built (a
zero column adds exactly nothing to a distance or a product), more than the largest
are not served. It is called from one thread per core (:mod:`.threads`) on disjoint
query rows (``ctypes`` releases the GIL). Where no library loads :func:`available` is
False, ``auto`` keeps to ``stream`` and ``method="native"`` is a clear error. The same
libraries hold ``expansions.c``, the one- and two-dimensional methods' host loops
(:func:`expansion_function`).

Log weights: ``d ≤ 2`` by differences, ``−|q − k|²/2``; ``d ≥ 3`` in the matrix-product
form ``q·k − |k|²/2`` on coordinates centred on the keys' mean, like the streamed path
(:mod:`attnpool.sums.geometry`).

Far keys are passed over. Where a query's reach — the distance beyond which a Gaussian
weight is below ``2^−48`` of a row's sum — leaves out enough keys for that to pay
(:func:`.native_layout.passes_over`: at small bandwidths, as cross-validation picks, in
few columns or in clustered data), keys and queries are put in *k*-d
locality order (:mod:`.locality`) and each run of 64 keys is bounded by its
box; a block of six queries sums the chunk of its nearest box first, then skips every
box whose largest possible weight keeps what the row leaves out within ``2^−47`` of its
sum (float32: ``2^−30``). The sums stay exact to rounding; the work follows the pairs
that matter, not ``n·m``.
"""

from __future__ import annotations

import ctypes
import itertools
from typing import Any

import numpy as np

from .._support.units import LOOP_MAX_EXTENT, column_extremes
from ..kernels import MATMUL_MIN_DIM, Kernel, is_gaussian
from . import compiled
from .native_layout import CHUNK, LOG2E, Layout
from .native_signatures import RETURNS_STATUS, SIGNATURES
from .threads import cores, thread_pool

#: Value columns per compiled pass; more are pooled in groups of this many.
MAX_VALUES = 16
#: Query rows per task handed to a thread, at most (tasks are equal, a whole number per core).
TASK_ROWS = 2048
#: Fewest query × key pairs split across threads: below, handing the parts to the
#: threads costs about what the second core saves (one core sums 2^20 pairs in ~2 ms).
THREAD_MIN_PAIRS = 2**20
#: Largest |coordinate| / h, about the points' midrange, the loops sum: beyond, scaled
#: differences would lose digits (:data:`attnpool._support.units.LOOP_MAX_EXTENT`).
MAX_SCALED = LOOP_MAX_EXTENT
#: The column counts built (``meson.build``); d = 9-15 are padded to 16.
DIMS_BUILT = (1, 2, 3, 4, 5, 6, 7, 8, 16)
#: The value-column counts built, by library and precision (``meson.build``); a pass of
#: other counts is padded with zero columns to the next one.
VALUES_BUILT = {
    "wide": {True: (1, 2, 4, 8, 16), False: (1, 4, 16)},
    "baseline": {True: (1, 4, 16), False: (1, 16)},
}
#: The local moments are built in float64 for d ≤ this, with up to four value columns.
MOMENTS_MAX_DIMS = 8
MOMENTS_MAX_VALUES = 4


def supports(kernel: Kernel) -> bool:
    return is_gaussian(kernel)


def refusal(kernel: Kernel, d: int) -> str | None:
    """Why ``native`` cannot pool this kernel here (no compiled loops, say), or None."""
    if not supports(kernel):
        return f"'native' pools the built-in 'gaussian' kernel; received {kernel.name!r}"
    reason = unavailable_reason()
    if reason is not None:
        return (
            f"'native' needs the compiled loops, which do not run here: {reason}; "
            "use method='stream'"
        )
    if built_dims(d) is None:
        return (
            f"'native' is built for up to {DIMS_BUILT[-1]} columns; received {d}; "
            "use method='stream'"
        )
    return None


def built_dims(dims: int) -> int | None:
    """The column count of the variant that serves ``dims`` columns, or None (too many)."""
    return next((built for built in DIMS_BUILT if built >= dims), None)


def built_values(double: bool, values: int) -> int:
    """The value-column count of the variant that serves a pass of ``values`` (≤
    :data:`MAX_VALUES`) in the loaded library."""
    loops = compiled.loops()
    kind = "baseline" if loops is None or loops.instruction_set == "baseline" else "wide"
    return next(built for built in VALUES_BUILT[kind][double] if built >= values)


def _state_function(double: bool, dims: int, values: int, matmul: bool) -> Any:
    """The compiled ``gaussian_state`` for a pass (padded to the variant built), or None."""
    built = built_dims(dims)
    if built is None:
        return None
    width = built_values(double, values)
    name = f"gaussian_state_f{int(double)}_d{built}_v{width}_m{int(matmul)}"
    return compiled.function(name, SIGNATURES["gaussian_state"])


def moments_function(dims: int, values: int, matmul: bool) -> Any:
    """The compiled ``gaussian_moments`` for ``dims`` columns and ``values`` value
    columns (padded to the variant built), or None."""
    if dims > MOMENTS_MAX_DIMS or values > MOMENTS_MAX_VALUES:
        return None
    width = built_values(True, values)
    name = f"gaussian_moments_f1_d{dims}_v{width}_m{int(matmul)}"
    return compiled.function(name, SIGNATURES["gaussian_moments"])


def available(double: bool = True, dims: int = 1, values: int = 1) -> bool:
    """Whether the compiled loop sums ``dims`` columns with ``values`` value columns (in
    passes of at most :data:`MAX_VALUES`; float64 if ``double``) here: its library loads
    and holds the variants, in both forms of the log weights."""
    widths = {min(MAX_VALUES, values - start) for start in range(0, max(values, 1), MAX_VALUES)}
    forms = (False, True) if dims >= MATMUL_MIN_DIM else (False,)
    return all(_state_function(double, dims, width, matmul) is not None
               for width in widths for matmul in forms)  # fmt: skip


def moments_available(dims: int, values: int) -> bool:
    """Whether the compiled loop sums local linear moments of ``dims`` columns and
    ``values`` responses here."""
    forms = (False, True) if dims >= MATMUL_MIN_DIM else (False,)
    return all(moments_function(dims, values, matmul) is not None for matmul in forms)


def unavailable_reason() -> str | None:
    """Why the compiled loops do not run here, in one line; None when they do."""
    return compiled.unavailable_reason()


def native_sums(queries, keys, values, scale, *, exclude_self: bool = False,
                return_shift: bool = False, ordered: bool = False):  # fmt: skip
    """``(n, 1 + p)`` Gaussian sums ``[Σ_k w, Σ_k w·v]``, each row relative to its own shift.

    ``queries (n, d)``, ``keys (m, d)``, ``values (m, p ≥ 1)``; ``scale (d,)`` multiplies the
    coordinates (``1 / h``). Computed in float32 when every input is float32, else
    float64. A row whose scaled coordinates overflowed is not finite.
    ``exclude_self``: query ``i`` is key ``i`` and is left out of its own sums
    (leave-one-out). ``return_shift``: also the ``(n,)`` shifts, in log2 units, of the
    log weights ``−‖q − k‖²/2`` of the scaled rows, so that ``Σ_k w = 2^shift ·
    sums[:, 0]`` (:func:`matmul_form` says how the loop forms them). Large sums put
    keys and queries in locality order (:mod:`.locality`) so that the loop passes over
    what is too far to matter (at most ``2^−47`` of a row's sum); ``ordered``: the
    caller's order already is one.
    """
    queries, keys, values = (np.asarray(a) for a in (queries, keys, values))
    single = all(a.dtype == np.float32 for a in (queries, keys, values))
    dtype = np.float32 if single else np.float64
    n, d = queries.shape
    m, p = values.shape
    q, kt, centre = coordinates(queries, keys, np.asarray(scale, np.float64), dtype)
    layout = Layout(q, kt, m, exclude_self, ordered=ordered, compiled_order=order_function())
    m_pad = kt.shape[1]
    sums, shift = np.empty((n, 1 + p)), np.empty(n)
    for start in range(0, p, MAX_VALUES):
        columns = slice(start, min(start + MAX_VALUES, p))
        width = columns.stop - columns.start
        padded = built_values(not single, width)
        vt = np.zeros((padded, m_pad), dtype)
        vt[:width, :m] = (
            values[layout.keys, columns] if layout.reordered else values[:, columns]
        ).T
        function = _state_function(not single, d, width, centre is not None)
        total, weighted = np.empty(n), np.empty((n, padded))
        run_threads(function, layout, vt, m, (shift, total, weighted))
        rows = layout.queries if layout.reordered else slice(None)
        sums[rows, 0] = total
        sums[rows, 1 + columns.start : 1 + columns.stop] = weighted[:, :width]
    if layout.reordered:
        shift[layout.queries] = shift.copy()
    if return_shift and centre is not None:  # the query's own −‖q_c‖²/2, in log2 units
        centred = np.multiply(queries, scale, dtype=np.float64) - centre
        shift -= 0.5 * LOG2E * np.einsum("ij,ij->i", centred, centred)
    return (sums, shift) if return_shift else sums


def leave_one_out_sums(
    points,
    values,
    scale,
    kernel: Kernel | None = None,
    rows: int | None = None,
    ordered: bool = False,
) -> np.ndarray | None:
    """``(n, 1 + p)``: each point's Gaussian sums over the others (own pair masked in the
    loop), rows relative to their own shift; None where the points reach beyond
    :data:`MAX_SCALED` bandwidths of their midrange or a sum is not finite.
    ``points (n, d)``, ``values (n, p)``, ``scale (d,)`` the inverse bandwidths;
    ``rows``: only the first ``rows`` points' sums (over all the others); ``ordered`` as
    in :func:`native_sums` (the first ``rows`` points, and the others, each in locality
    order)."""
    points = np.asarray(points, np.float64)
    low, high = column_extremes(points)
    centred = points - (low / 2 + high / 2)  # as midrange: no overflow
    if np.any((high / 2 - low / 2) * scale > MAX_SCALED):
        return None
    sums = native_sums(centred[:rows], centred, values, scale, exclude_self=True, ordered=ordered)
    return sums if np.all(np.isfinite(sums)) else None


def native_moments(queries, keys, values, scale, *, exclude_self: bool = False,
                   ordered: bool = False):  # fmt: skip
    """Gaussian local moments about each query's heaviest key, in float64.

    Returns ``moments (n, 1 + d + d² + p·(1 + d))`` — ``[Σ w, Σ w δ, Σ w δδᵀ, Σ w y',
    Σ w δ y']`` with ``δ = k − k_ref``, ``y' = y − y_ref`` in scaled coordinates, weights
    relative to the heaviest key's (1) — and ``ref (n,)``, that key's row (−1 where a row
    has no weight). Arguments as :func:`native_sums` (far keys passed over alike, a
    weight counted with the most a moment multiplies it by); ``values (m, p ≤
    MAX_VALUES)``. A row whose scaled coordinates overflowed is not finite.
    """
    queries, keys, values = (np.asarray(a, np.float64) for a in (queries, keys, values))
    n, d = queries.shape
    m, p = values.shape
    q, kt, centre = coordinates(queries, keys, np.asarray(scale, np.float64), np.float64)
    padded = built_values(True, p)
    vt = np.zeros((padded, kt.shape[1]))
    vt[:p, :m] = values.T
    function = moments_function(d, p, centre is not None)
    shift = np.empty(n)
    moments = np.empty((n, 1 + d + d * d + padded * (1 + d)))
    ref = np.empty(n, np.intp)
    layout = Layout(q, kt, m, exclude_self, ordered=ordered, compiled_order=order_function())
    vt[:, :m] = vt[:, layout.keys]
    run_threads(function, layout, vt, m, (shift, moments, ref))
    found = ref >= 0
    ref[found] = layout.keys[ref[found]]
    moments[layout.queries], ref[layout.queries] = moments.copy(), ref.copy()
    if padded > p:  # the padded responses' moments dropped: [.., Σ w y' (p), Σ w δ y' (p·d)]
        head = 1 + d + d * d
        moments = np.concatenate(
            [moments[:, : head + p], moments[:, head + padded : head + padded + p * d]], axis=1
        )
    return moments, ref


#: The largest rounding ``eps · max‖q_c‖ · max‖k_c‖`` (scaled rows about the keys' mean)
#: of a log weight in the matrix-product form, by precision: beyond it (queries or keys
#: far from the keys' mean in bandwidths) the loop takes the difference form.
MATMUL_MAX_ROUNDING = {np.dtype(np.float64): 2.0**-36, np.dtype(np.float32): 2.0**-10}


def matmul_form(q, k, dtype) -> np.ndarray | None:
    """The keys' mean (the centre) where the loop forms ``log w = q·k − ‖k‖²/2`` about it
    — from d = :data:`MATMUL_MIN_DIM` on, while its rounding stays within
    :data:`MATMUL_MAX_ROUNDING` —, else None (``−‖q − k‖²/2``, exact to rounding
    wherever the rows are). ``q (n, d)``, ``k (m, d)`` scaled, float64."""
    if k.shape[1] < MATMUL_MIN_DIM:
        return None
    centre = key_centre(k)
    extent = [np.sqrt(np.max(np.einsum("ij,ij->i", a - centre, a - centre), initial=0.0))
              for a in (q, k)]  # fmt: skip
    rounding = np.finfo(dtype).eps * extent[0] * extent[1]
    return centre if rounding <= MATMUL_MAX_ROUNDING[np.dtype(dtype)] else None


def coordinates(queries, keys, scale, dtype):
    """Queries ``(n, d)`` and keys by column ``(rows, m_pad)`` as ``native.c`` reads them
    (each scaled in one pass that converts it to float64: every new array's memory is
    touched for the first time, which costs more than the arithmetic), and the centre of
    the matrix-product form (None: the difference form; :func:`matmul_form`)."""
    q = np.multiply(queries, scale, dtype=np.float64)
    k = np.multiply(keys, scale, dtype=np.float64)
    m, d = k.shape
    m_pad = -(-m // CHUNK) * CHUNK
    built = built_dims(d) or d
    centre = matmul_form(q, k, dtype)
    if centre is not None:
        # log2 w = q·k − |k|²/2 (the query's own −|q|²/2 cancels), log2(e) folded in
        q -= centre
        k -= centre
        kt = np.zeros((built + 1, m_pad), dtype)
        kt[built, :m] = -0.5 * LOG2E * np.einsum("ij,ij->i", k, k)
        q *= LOG2E
    else:
        kt = np.zeros((built, m_pad), dtype)
    kt[:d, :m] = k.T
    if built > d:  # the variant's extra columns: zeros, which add exactly nothing
        q = np.concatenate([q, np.zeros((q.shape[0], built - d))], axis=1)
    return np.ascontiguousarray(q, dtype), kt, centre


def key_centre(scaled_keys: np.ndarray) -> np.ndarray:
    """``(d,)``: the mean of the scaled keys ``(m, d)`` (float64), about which the
    matrix-product form centres its coordinates (a product with a ones vector: NumPy's
    mean down a narrow array's rows is ten times slower)."""
    return np.ones(scaled_keys.shape[0]) @ scaled_keys / scaled_keys.shape[0]


def run_threads(function, layout: Layout, vt, m, outputs, constants=()) -> list[Any]:
    """``function`` of ``native.c`` over equal parts of the query rows, a whole number of
    parts per core (``ctypes`` releases the GIL), each reading and writing its rows of
    ``outputs``; ``constants``: the arguments after the boxes, the same for every part.
    Returns what each part's call returned."""
    q, kt = layout.q, layout.kt
    n = q.shape[0]
    boxes = (None, None) if layout.lo is None else (address(layout.lo), address(layout.hi))

    def task(start: int, stop: int) -> Any:
        return function(
            address(q, start),
            stop - start,
            address(kt),
            address(vt),
            m,
            kt.shape[1],
            *(address(a, start) for a in outputs),
            None if layout.own is None else address(layout.own, start),
            *boxes,
            *constants,
        )

    used = cores() if n * kt.shape[1] >= THREAD_MIN_PAIRS else 1
    parts = used * max(1, -(-n // (used * TASK_ROWS)))
    bounds = np.linspace(0, n, min(parts, n) + 1).astype(np.int64).tolist()
    if len(bounds) <= 2 or used == 1:
        return [task(start, stop) for start, stop in itertools.pairwise(bounds)]
    return list(thread_pool().map(task, bounds[:-1], bounds[1:]))


def address(array, row: int = 0) -> int:
    """Pointer to ``array[row]`` for ``ctypes`` (the caller keeps ``array`` alive)."""
    return int(array.ctypes.data) + row * array.strides[0]


def expansion_function(name: str) -> Any:
    """The function ``name`` of ``expansions.c``, or None where the compiled loops do not
    run here (the caller takes its XLA form)."""
    restype = ctypes.c_int if name in RETURNS_STATUS else None
    return compiled.function(name, SIGNATURES[name], restype)


def order_function() -> Any:
    """``expansions.c``'s k-d ``locality_order``, or None (:func:`.locality.locality_order`
    then splits in NumPy)."""
    return expansion_function("locality_order")


def expansions_ready() -> bool:
    """Whether ``expansions.c``'s loops run here."""
    return compiled.loops() is not None
