"""Linear binning on the host: points split between their grid cells' corners in one
pass of ``expansions.c`` (NumPy's ``bincount`` without the compiled loops), optionally with
their places in their cells, the weights of :mod:`.binned_gaussian`'s correction."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import native
from .binned import corners

#: A float64 FFT convolution errs by at most this · log2(length) · ‖x‖₂ · ‖w‖₁ per entry.
FFT_ROUNDING = 8 * np.finfo(np.float64).eps
#: Queries interpolated at once (memory ``O(QUERY_CHUNK · 2^d · f)``).
QUERY_CHUNK = 2**18


class Binning(NamedTuple):
    """Keys binned: the ``grid`` used, the ``counts (*size, 1)`` and each key's ``cells``
    (its lowest corner, flat; None unless asked for); ``beside``: in one column, where
    the binning pass found them, ``(indices, below, above)`` — every key at most
    ``below`` or at least ``above`` (unscaled), those near the data's ends."""

    grid: Any
    counts: np.ndarray
    cells: np.ndarray | None
    beside: tuple[np.ndarray, float, float] | None = None


class GridPlan(NamedTuple):
    """Where binned sums are taken: the ``grid``, the kernel's ``reach`` on it (nodes per
    column), whether it is ``hopeless`` (coarsened past
    :data:`.binned.HOPELESS_COARSENING`: no row would be settled), ``correct_queries``
    (the Gaussian's queries: False bounds their second-order sums on a finer grid, None
    takes them away unless the queries are on the nodes), and the ``order`` of the keys'
    moments where the queries are on the grid's nodes (:mod:`.binned_taylor`; None:
    linear binning)."""

    grid: Any
    reach: tuple[int, ...]
    hopeless: bool = False
    correct_queries: bool | None = None
    order: int | None = None


def bin_points(
    points: Any,
    scale: Any,
    grid: Any,
    features: Any = None,
    *,
    cells: bool = False,
    moments: bool = False,
) -> tuple[np.ndarray, np.ndarray | None]:
    """``(binned (*size, w), cells)``: ``features (n, f)`` (None: counts) of ``points (n, d)``,
    scaled by ``scale (d,)``, split between their cells' corners on ``grid``; ``moments``:
    also each feature times the point's ``a_j b_j`` in its cell, dimension by dimension
    (:func:`second_moments`; ``w = f (1 + d)``, else ``w = f``);
    ``cells``: also each point's cell (its lowest corner, flat), else None."""
    points = np.ascontiguousarray(points, np.float64)
    n, d = points.shape
    f = 1 if features is None else features.shape[1]
    width = f * (1 + d) if moments else f
    size = np.asarray(grid.size, np.int64)
    binned = np.zeros((int(np.prod(size)), width))
    scale = np.ascontiguousarray(np.broadcast_to(np.asarray(scale, np.float64), (d,)))
    where = np.empty(n, np.int64) if cells else None
    compiled = native.expansion_function("linear_bin")
    if compiled is not None:
        start, spacing = (np.ascontiguousarray(a, np.float64) for a in (grid.start, grid.spacing))
        features = None if features is None else np.ascontiguousarray(features, np.float64)
        at = native.address
        compiled(at(points), n, d, at(scale), at(start), at(spacing), at(size),
                 None if features is None else at(features), f, at(binned),
                 None if where is None else at(where), int(moments))  # fmt: skip
        return binned.reshape(*grid.size, width), where
    for rows in (slice(i, i + QUERY_CHUNK) for i in range(0, n, QUERY_CHUNK)):
        scaled = points[rows] * scale
        indices, weights = corners(scaled, grid, np)
        taken = np.ones((scaled.shape[0], 1)) if features is None else features[rows]
        if moments:
            place = second_moments(scaled, grid)
            taken = np.concatenate([taken] + [taken * place[:, j, None] for j in range(d)], 1)
        for index, weight in zip(indices, weights, strict=True):
            for c in range(width):
                binned[:, c] += np.bincount(index, weight * taken[:, c], minlength=binned.shape[0])
        if where is not None:
            where[rows] = indices[0]
    return binned.reshape(*grid.size, width), where


def second_moments(scaled: Any, grid: Any) -> Any:
    """``(n, d)``: ``a·b`` of each point's place in its cell, per dimension (``a`` above the
    lower node, ``b`` below the upper one, in scaled units), the cell as
    :func:`.binned.corners` takes it."""
    start, spacing = np.asarray(grid.start), np.asarray(grid.spacing)
    position = (scaled - start) / spacing
    left = np.clip(np.floor(position), 0, np.asarray(grid.size) - 2)
    fraction = position - left
    return fraction * (1.0 - fraction) * spacing**2


def counted_features(m: int, values: Any, weights: Any) -> np.ndarray | None:
    """The columns binned: each key's count (its weight, or one) and its values; None
    for unweighted counts alone."""
    if values is None and weights is None:
        return None
    count = np.ones((m, 1)) if weights is None else np.asarray(weights, np.float64)[:, None]
    return count if values is None else np.concatenate([count, values], axis=1)


def key_total(m: int, weights: Any) -> float:
    """The keys' total count: ``m``, or their weights' sum."""
    return float(m) if weights is None else float(np.sum(weights))
