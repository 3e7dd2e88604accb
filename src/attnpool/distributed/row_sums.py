"""Sums over each query's row of the LOESS operator, over training rows held in Dask
blocks.

What :func:`attnpool.smoothers.operator_rows.row_sums` gives in memory — the fits,
``Lᵢᵢ``, ``Σ L² s`` and the smooths of sign vectors — are sums over the keys, so over
blocks of keys they are the blocks' sums added: each (query group, key block) pair is
one task that runs the library's own engine on its block (running sums in one column,
the compiled loop in several, every pair for other kernels), and a group's partial sums
are added in a tree; pairs whose bounding boxes lie beyond the group's largest radius
are never formed. The few ill-conditioned rows are fitted from the operator's rows over
their neighbours, gathered from every block within reach, as in memory.

A task holds one key block, one query group and the group's sums: the groups have at
most :data:`~attnpool.smoothers.operator_rows.GRAM_ENTRIES` Gram entries (and, in
several columns, lists of at most :data:`.neighbourhoods.LIST_ENTRIES` distances).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .._support.optional import require
from ..smoothers.local_polynomial import intercept_solution
from ..smoothers.neighbour_sums import Neighbourhoods, terms
from ..smoothers.neighbourhoods import span_too_small
from ..smoothers.operator_rows import (
    GRAM_ENTRIES,
    Columns,
    RowSums,
    engine_type,
    key_engine,
    refit,
)
from ..sums.observation_weights import positive_rows
from .neighbourhoods import LIST_ENTRIES, distributed_radii, reaches, within_reach
from .order_statistics import tree_sum

dask = require("dask", "Dask support (attnpool.distributed)")
import dask.array as da  # noqa: E402
from dask import delayed  # noqa: E402

__all__ = [
    "Group",
    "Layout",
    "Part",
    "Spread",
    "distributed_sums",
    "gathered",
    "group_radii",
    "group_rows",
    "keys_of",
    "ones_of",
    "query_groups",
    "training_parts",
]


@dataclass(frozen=True)
class Part:
    """One block of training rows: predictors ``X`` (n_b, d), responses ``y`` and prior
    weights (n_b,), and the index of its first row among all rows (``start``)."""

    X: np.ndarray
    y: np.ndarray
    prior: np.ndarray
    start: int = 0


@dataclass(frozen=True)
class Spread:
    """Where the training rows lie: the row count, each block's bounding box ((2, d) or
    None when empty), and the least and greatest coordinates of all."""

    n: int
    boxes: list
    low: np.ndarray
    high: np.ndarray
    starts: list
    sizes: list


def training_parts(X, y, sample_weight) -> tuple[list, Spread]:
    """The rows of Dask ``X`` (n, d), ``y`` (n,) and ``sample_weight`` (n,) as persisted
    :class:`Part` blocks (rows of weight 0 left out), and their :class:`Spread`."""
    from . import as_rows

    X = as_rows(X, "X")
    rows = X.chunks[0]
    columns = [_aligned(y, "y", rows)]
    if sample_weight is not None:
        columns.append(_aligned(sample_weight, "sample_weight", rows))
    blocks = [
        block.ravel().tolist() for block in (X.to_delayed(), *(c.to_delayed() for c in columns))
    ]
    parts = [delayed(_cleaned)(*block) for block in zip(*blocks, strict=True)]
    parts = list(dask.persist(*parts))
    boxes = dask.compute(*[delayed(_box)(part) for part in parts])
    sizes = np.array([0 if box is None else box[2] for box in boxes])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()
    parts = [
        delayed(replace)(part, start=int(start)) for part, start in zip(parts, starts, strict=True)
    ]
    kept = [box[:2] for box in boxes if box is not None]
    if not kept:
        raise ValueError("sample_weight: every row has weight 0, leaving nothing to fit")
    spread = Spread(int(sizes.sum()), [None if b is None else np.array(b[:2]) for b in boxes],
                    np.min([b[0] for b in kept], axis=0), np.max([b[1] for b in kept], axis=0),
                    starts, sizes.tolist())  # fmt: skip
    return list(dask.persist(*parts)), spread


def gathered(*arrays):
    """The Dask ``arrays`` computed into memory (a small problem: the exact ``δ₂`` of up
    to :data:`~attnpool.smoothers.loess_fit.EXACT_STATISTICS` rows needs the operator)."""
    return dask.compute(*arrays)


def _aligned(values, name, rows):
    if not isinstance(values, da.Array):
        values = np.asarray(values)
        if values.ndim != 1 or values.shape[0] != sum(rows):
            raise ValueError(
                f"{name}: expected shape ({sum(rows)},); received shape {values.shape}"
            )
        return da.from_array(values, chunks=(rows,))
    if values.ndim != 1 or values.shape[0] != sum(rows):
        raise ValueError(f"{name}: expected shape ({sum(rows)},); received shape {values.shape}")
    return values.rechunk((rows,))


def _cleaned(X, y, weights=None) -> Part:
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    for name, array in (("X", X), ("y", y)):
        if not np.isfinite(array).all():
            raise ValueError(f"{name}: expected finite numbers; received NaN or infinity")
    X, y2, w = positive_rows(X, y[:, None], weights, name="sample_weight")
    return Part(X, y2[:, 0], np.ones(X.shape[0]) if w is None else np.asarray(w, float))


def _box(part: Part):
    if part.X.shape[0] == 0:
        return None
    return part.X.min(axis=0), part.X.max(axis=0), part.X.shape[0]


@dataclass(frozen=True)
class Group:
    """Queries fitted together: ``queries`` (delayed (m, d)), and where they are the
    training rows, their part and its rows (``own``: ``(part index, slice)``)."""

    queries: object
    size: int
    own: tuple | None = None


def query_groups(parts_or_queries: list, sizes: list, rows: int, own: bool) -> list[Group]:
    """Groups of at most ``rows`` queries from blocks of ``sizes`` rows (the training
    parts' ``X`` where ``own``, else delayed query arrays)."""
    groups = []
    for index, (block, size) in enumerate(zip(parts_or_queries, sizes, strict=True)):
        for start in range(0, size, rows):
            part = slice(start, min(start + rows, size))
            source = delayed(_rows_of)(block, part)
            groups.append(Group(source, part.stop - part.start, (index, part) if own else None))
    return groups


def _rows_of(block, part):
    return (block.X if isinstance(block, Part) else block)[part]


def group_rows(n_columns: int, degree: int, count: int) -> int:
    """How many queries a group holds: its Gram matrices, and in several columns its
    lists of nearest distances, bounded."""
    p = terms(n_columns, degree)
    bound = GRAM_ENTRIES // (p * p)
    if n_columns > 1:
        bound = min(bound, LIST_ENTRIES // max(count, 1))
    return max(1, bound)


def group_radii(parts, spread, groups, count, span) -> list:
    """The radius of every query of ``groups`` (delayed arrays), checked positive."""
    keys = [delayed(keys_of)(part) for part in parts]
    radius = distributed_radii(keys, [g.queries for g in groups], count, spread.low.shape[0])
    factor = math.sqrt(max(span, 1.0))
    radius = list(dask.persist(*[delayed(np.multiply)(r, factor) for r in radius]))
    least = min(dask.compute(*[delayed(np.min)(r) for r in radius]))
    if not least > 0:
        raise span_too_small(span, count, "some row")
    return radius


def keys_of(part: Part) -> np.ndarray:
    """A part's predictors (a task's function)."""
    return part.X


@dataclass(frozen=True)
class Layout:
    """The operator's rows over blocks: the training ``parts`` and their ``spread``, the
    query ``groups`` with their radii (``radius``: delayed (m,) each), and the parts
    within each group's reach (``near``: their indices)."""

    parts: list
    spread: Spread
    groups: list
    radius: list
    near: list


def distributed_sums(parts, spread, groups, radius, columns: Columns, degree, kernel, *,
                     own=False) -> list:  # fmt: skip
    """:func:`~attnpool.smoothers.operator_rows.row_sums` of every group, over the key
    ``parts`` and their ``columns`` (per-part delayed arrays; the second pass where
    ``columns.squares`` or ``columns.extra`` is given): persisted :class:`RowSums`."""
    hint = float(np.median(dask.compute(*[delayed(np.median)(r) for r in radius])))
    engines = dask.persist(*[delayed(key_engine)(delayed(keys_of)(part), w, kernel, hint)
                             for part, w in zip(parts, columns.weights, strict=True)])  # fmt: skip
    extents = dask.compute(
        *[delayed(_extent)(g.queries, r) for g, r in zip(groups, radius, strict=True)]
    )
    layout = Layout(parts, spread, groups, radius,
                    [reaches(spread.boxes, box, reach) for box, reach in extents])  # fmt: skip
    condition = engine_type(spread.low.shape[0], kernel).condition
    out = []
    for group, reach, near in zip(groups, radius, layout.near, strict=True):
        moments = tree_sum([delayed(_moments)(engines[j], columns.values[j], group.queries,
                                              reach, degree) for j in near])  # fmt: skip
        own_weights = (delayed(_own_weights)(columns.weights[group.own[0]], group.own[1])
                       if own else None)  # fmt: skip
        out.append(delayed(_solved)(moments, condition, own_weights))
    out = list(dask.persist(*out))
    if columns.squares is not None or columns.extra is not None:
        out = _second_pass(out, layout, engines, columns, degree)
    return _refitted(out, layout, columns, degree, kernel, own)


def _extent(queries, radius):
    return np.array([queries.min(axis=0), queries.max(axis=0)]), float(radius.max())


def _moments(engine, values, queries, radius, degree):
    return engine.moments(values[:, None], Neighbourhoods(queries, radius, degree))


def _own_weights(weights, rows):
    return weights[rows]


def _solved(moments, condition, own_weights):
    gram, cross = moments
    a, redo = intercept_solution(gram, condition)
    sums = RowSums(np.einsum("qi,qi->q", a, cross[:, :, 0]), None, None, None)
    if own_weights is not None:
        sums.own = own_weights * a[:, 0]
    return sums, a, redo


def _second_pass(out, layout: Layout, engines, columns: Columns, degree):
    extra = columns.extra or [delayed(_no_columns)(part) for part in layout.parts]
    squares = columns.squares or [delayed(ones_of)(part) for part in layout.parts]
    spread, smooths = columns.squares is not None, columns.extra is not None
    following = []
    for solved, group, reach, near in zip(out, layout.groups, layout.radius, layout.near,
                                          strict=True):  # fmt: skip
        rows = tree_sum([delayed(_rows)(engines[j], extra[j], squares[j], solved,
                                        group.queries, reach, degree) for j in near])  # fmt: skip
        following.append(delayed(_with_rows)(solved, rows, spread, smooths))
    return list(dask.persist(*following))


def ones_of(part: Part) -> np.ndarray:
    """Ones, one per row of a part (a task's function)."""
    return np.ones(part.X.shape[0])


def _no_columns(part):
    return np.zeros((part.X.shape[0], 0))


def _rows(engine, columns, squares, solved, queries, radius, degree):
    return engine.rows(columns, squares, solved[1], Neighbourhoods(queries, radius, degree))


def _with_rows(solved, rows, spread, smooths):
    sums, a, redo = solved
    return replace(sums, spread=rows[0] if spread else None,
                   smooths=rows[1] if smooths else None), a, redo  # fmt: skip


def _refitted(out, layout: Layout, columns: Columns, degree, kernel, final_own) -> list:
    """The groups' :class:`RowSums`, their ill-conditioned rows refitted from the
    neighbours gathered from every block within reach."""
    redo = dask.compute(*[delayed(_redo_count)(solved) for solved in out])
    final = []
    for solved, group, reach, near, count in zip(out, layout.groups, layout.radius,
                                                 layout.near, redo, strict=True):  # fmt: skip
        if not count:
            final.append(delayed(_first)(solved))
            continue
        gathered = [delayed(_gathered)(layout.parts[j], columns.of(j), solved, group.queries,
                                       reach) for j in near]  # fmt: skip
        own_ids = None
        if group.own is not None and final_own:
            index, rows = group.own
            own_ids = np.arange(rows.start, rows.stop) + layout.spread.starts[index]
        final.append(delayed(_refit)(solved, gathered, group.queries, reach, own_ids, degree,
                                     kernel))  # fmt: skip
    return list(dask.persist(*final))


def _redo_count(solved) -> int:
    return int(solved[2].sum())


def _first(solved):
    return solved[0]


def _gathered(part, columns: Columns, solved, queries, radius):
    redo = solved[2]
    near = within_reach(part.X, queries[redo], radius[redo])
    return part.X[near], columns.of(near), part.start + near


def _refit(solved, gathered, queries, radius, own_ids, degree, kernel):
    sums, _, redo = solved
    X, ids = (np.concatenate([piece[i] for piece in gathered]) for i in (0, 2))
    columns = Columns.joined([piece[1] for piece in gathered])
    rows = np.flatnonzero(redo)
    own_rows = None if own_ids is None else np.searchsorted(ids, own_ids[rows])
    at = Neighbourhoods(queries[rows], radius[rows], degree)
    refit(sums, rows, X, columns, at, kernel, own_rows=own_rows)
    return sums
