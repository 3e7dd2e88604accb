"""The nearest-key limit on the host: what pooling tends to as ``h → 0``.

As the bandwidth shrinks, every weight but the closest keys' vanishes against theirs,
so a query's pool tends to the mean value of its nearest keys (ties averaged, in
proportion to their observation weights): the pooling state at zero temperature. It
is what a row gets whose weights all vanished — every key beyond a compact kernel's
support, or distances beyond the float range.

Every NumPy path finds those keys by :func:`closest` — the NumPy engine, the layer's
finishing step (fixed bandwidths, and those that vary by query or by key), the
conditional densities. The differences are taken in units of each row's smallest
bandwidth (a column of that bandwidth as it is, unrounded: keys tied in the data —
``(3, 4)`` and ``(5, 0)`` from the origin — stay tied, as a division by the bandwidth or
logarithms would not keep them), each row times the power of two that brings its
largest below 1 (exact, and nothing overflows); a row whose nearest distance is then
near the bottom of the float range (or 0) is measured again about its nearest key, and
a row whose differences overflow is halved.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .local_model import LocalModel
from .pair_weights import row_blocks

__all__ = ["closest", "column_units", "nearest_mean"]

#: A row's nearest ``‖u‖^p`` (its largest difference below 1) under which the row is
#: measured again about its nearest key: its powers are near the float range's bottom.
LOW = 2.0**-900


def column_units(h: np.ndarray, model: LocalModel) -> np.ndarray:
    """Each column's unit: its bandwidth for a continuous column, 1 for a categorical
    one (its codes' differences)."""
    return np.where(_continuous(model), h, 1.0)


def _continuous(model: LocalModel) -> np.ndarray:
    return np.array([t == "c" for t in model.var_type])


def closest(queries: np.ndarray, keys: np.ndarray, units: np.ndarray, norm: float = 2.0,
            allowed: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """``(n, m)`` bool: each row's keys nearest in ``‖(q − k) / units‖_norm`` (ties all
    kept) among the ``allowed (n, m)`` ones (None: all); a row with none allowed has none.

    ``queries (n, c)``, ``keys (m, c)``; ``units``: positive, ``(c,)`` or broadcast
    against the pairs' ``(n, m, c)`` (a bandwidth per query or per key); ``norm``: the
    Minkowski ``p`` (``math.inf``: the largest column)."""
    n, m, c = queries.shape[0], keys.shape[0], queries.shape[1]
    units = np.asarray(units, np.float64)
    found = np.zeros((n, m), bool)
    for rows in row_blocks(n, m, 4 * c):
        block_units = units if units.ndim < 3 or units.shape[0] == 1 else units[rows]
        kept = None if allowed is None else allowed[rows]
        found[rows] = _closest_block(queries[rows], keys, block_units, norm, kept)
    return found


def _closest_block(queries, keys, units, norm, allowed):
    """:func:`closest` of a block of rows, column by column (``(n, m)`` arrays)."""
    n, c = queries.shape
    # one unit per row: each key's own units (a bandwidth by key) rank its keys
    smallest = np.min(units, axis=-1) if units.ndim < 3 else np.min(units, axis=(1, 2))[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        gaps = [np.abs(queries[:, j, None] - keys[None, :, j]) for j in range(c)]
        overflowed = np.zeros(n, bool)
        for gap in gaps:
            overflowed |= np.isinf(gap).any(axis=1)
        if overflowed.any():  # halved: the same order
            for j, gap in enumerate(gaps):
                gap[overflowed] = np.abs(queries[overflowed, j, None] / 2 - keys[None, :, j] / 2)
        gaps = [gap * (smallest / units[..., j]) for j, gap in enumerate(gaps)]
        size = _norm(gaps, _row_top(gaps), norm)
        if allowed is not None:
            size = np.where(allowed, size, np.inf)
        best = np.min(size, axis=1)
        low = np.flatnonzero(best < LOW)
        if low.size:  # again about the nearest key: its norm about 1, the far ones inf
            nearest = np.argmin(size[low], axis=1)
            low_gaps = [gap[low] for gap in gaps]
            top = functools.reduce(np.maximum, [gap[np.arange(low.size), nearest]
                                                for gap in low_gaps])  # fmt: skip
            again = _norm(low_gaps, top, norm)
            match = functools.reduce(np.logical_and, [gap == 0 for gap in low_gaps])
            again = np.where(top[:, None] > 0, again, np.where(match, 0.0, np.inf))
            size[low] = again if allowed is None else np.where(allowed[low], again, np.inf)
            best[low] = np.min(size[low], axis=1)
    return (size == best[:, None]) & (best < np.inf)[:, None]


def _row_top(gaps: list[np.ndarray]) -> np.ndarray:
    """Each row's largest gap over the keys and columns."""
    return functools.reduce(np.maximum, [np.max(gap, axis=1) for gap in gaps])


def _norm(gaps: list[np.ndarray], top: np.ndarray, norm: float) -> np.ndarray:
    """``‖u‖_p^p`` (``max |u_j|`` for ``p = ∞``: the same order) of the columns' gaps
    ``u_j``, each row times the power of two that brings its ``top`` below 1 (exact)."""
    exponent = np.frexp(np.where(np.isfinite(top), top, 0.0))[1][:, None]
    scaled = [np.ldexp(gap, -exponent) for gap in gaps]
    if norm == math.inf:
        return functools.reduce(np.maximum, scaled)
    if norm == 2.0:
        return sum(u * u for u in scaled)
    if norm == 1.0:
        return sum(scaled)
    return sum(u**norm for u in scaled)


def nearest_mean(queries, keys, y, h, model: LocalModel, w=None, allowed=None):
    """``(k, p)``: the mean of ``y (m, p)`` over each query's nearest keys (ties averaged,
    in proportion to the observation weights ``w`` if given) among the ``allowed (k, m)``
    ones (None: all), in units of the bandwidth over the continuous columns — ``h (d,)``,
    or each pair's broadcast against ``(k, m, d)`` (a bandwidth that varies, 0 counted
    as the smallest positive number), a categorical column's codes as they are, as the
    compiled engines measure it — in the kernel's norm."""
    h = np.asarray(h, np.float64)
    continuous = _continuous(model)
    if continuous.all():
        units = np.maximum(h, 5e-324)
    else:  # a categorical column's unit is the smallest bandwidth: its codes count as they are
        smallest = np.min(h[continuous]) if continuous.any() else 1.0
        units = np.where(continuous, h, smallest)
    share = closest(queries, keys, units, model.kernel.norm, allowed).astype(float)
    if w is not None:
        share *= w[None, :]
    return share @ y / share.sum(axis=1, keepdims=True)
