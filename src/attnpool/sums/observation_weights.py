"""Observation weights: a weight ``w_i ≥ 0`` per key (per training row).

A weighted pool adds ``log w_i`` to each key's log weight::

    f(q) = Σ_i w_i K(u_i) v_i / Σ_i w_i K(u_i)

so an integer weight is that many copies of the row (frequency weights, scikit-learn's
``sample_weight``). Pooling methods take them by pooling the augmented values
``[w, w·v]`` in one pass — any method, the Dask path too — and dividing the columns:
exact wherever the unweighted pool is, and in the nearest-key limit too, where tied
keys share in proportion to their weights. Keys of weight 0 are left out (on concrete
arrays they are dropped; inside ``jit`` they are masked), so they never decide a limit.
Weights are divided by their largest first; concrete positive weights must span at
most :func:`max_span` (``1/√tiny`` of the computation's precision, ~1.5e154 in float64),
which keeps every product ``α_i w_i`` that matters above underflow.

Leave-one-out leaves the whole row out, all of its weight, and with it every row
identical to it: a bandwidth search first merges identical rows into one whose weight
is their total (:func:`merged_rows`). So integer weights and repeated rows give the
same criterion, and no criterion can be lowered by interpolating a point's own copies
(with "one copy out", weights of 2 or a repeated row left each point its own twin, and
cross-validation chose bandwidths near 0).

Density searches are the exception: there a row is its values alone, so identical rows
are the ties of recorded data. They stay separate rows, with or without weights — each
row left out whole, its twins kept, and the search kept above half the ties' resolution
(:mod:`attnpool.bandwidth.resolution`) — so that equal weights select what no weights
select. (Merged, values recorded to 0.1 chose twice Scott's bandwidth.)
"""

from __future__ import annotations

from typing import Any, overload

import numpy as np

from .._support.validation import as_array, is_traced

__all__ = [
    "augmented",
    "check_weights",
    "chunk_of_positive_weight",
    "dask_augmented",
    "divided",
    "in_weight_unit",
    "max_span",
    "merged_rows",
    "positive_keys",
    "positive_rows",
    "refuse_wide_span",
    "sorted_rows",
    "span",
    "too_wide_to_truncate",
]

#: The widest span (largest / smallest positive weight) the truncating methods (``fgt``,
#: ``native``) take: they pass over keys whose *kernel* weight is below ~1e-14 of a
#: row's, which leaves out up to ``span`` times that of the weighted sum. Wider spans
#: are summed by the exact engines under ``"auto"``, and refused by those methods.
TRUNCATED_MAX_SPAN = 2.0**10
TRUNCATING_METHODS = ("fgt", "native")


def max_span(dtype) -> float:
    """Largest ratio of the largest to the smallest positive weight pooled in ``dtype``."""
    return float(1.0 / np.sqrt(np.finfo(dtype).tiny))


def check_weights(weights, m: int, dtype=np.float64, name: str = "weights"):
    """``weights`` as an ``(m,)`` array of ``dtype`` (NumPy, or JAX when given JAX):
    finite, non-negative, some positive, spanning at most :func:`max_span` (checks on
    concrete arrays only); else a ``ValueError`` naming ``name``."""
    w = as_array(weights, name)
    if w.ndim == 2 and w.shape[1:] == (1,):
        w = w[:, 0]
    if w.shape != (m,):
        raise ValueError(
            f"{name}: expected one non-negative weight per key (training row), shape ({m},); "
            f"received shape {w.shape}"
        )
    if is_traced(w):
        return w.astype(dtype)
    concrete = np.asarray(w, np.float64)
    if not np.all(np.isfinite(concrete)) or np.any(concrete < 0):
        bad = concrete[~(np.isfinite(concrete) & (concrete >= 0))]
        raise ValueError(
            f"{name}: expected finite non-negative weights; received {bad.size} other "
            f"value(s), e.g. {bad[0]!r}"
        )
    positive = concrete[concrete > 0]
    if positive.size == 0:
        raise ValueError(f"{name}: expected some positive weight; received {m} zeros")
    widest = span(positive)
    if not widest <= max_span(dtype):
        raise ValueError(
            f"{name}: the positive weights span "
            f"{f'{widest:.3g}' if np.isfinite(widest) else 'more than 1.8e+308'} "
            f"(largest {positive.max():.3g} / "
            f"smallest {positive.min():.3g}), beyond "
            f"{max_span(dtype):.3g}, which {np.dtype(dtype).name} pooling resolves; drop "
            "the negligible rows (weight 0) or rescale"
        )
    return w.astype(dtype)


def span(w) -> float:
    """Largest over smallest positive weight of concrete weights ``w`` (``inf`` beyond
    the float range)."""
    positive = np.asarray(w, np.float64)
    positive = positive[positive > 0]
    with np.errstate(over="ignore"):
        return float(positive.max() / positive.min()) if positive.size else 1.0


def too_wide_to_truncate(w) -> bool:
    """Whether concrete weights span more than :data:`TRUNCATED_MAX_SPAN` (None: no)."""
    return w is not None and not is_traced(w) and span(w) > TRUNCATED_MAX_SPAN


def refuse_wide_span(method: str, w) -> None:
    """A ``ValueError`` when the truncating ``method`` is asked to sum weights spanning
    more than :data:`TRUNCATED_MAX_SPAN`."""
    if method in TRUNCATING_METHODS and too_wide_to_truncate(w):
        raise ValueError(
            f"weights: method {method!r} passes over keys of negligible kernel weight, "
            f"which weights spanning {span(w):.3g} (largest / smallest) can make the "
            f"largest terms; it takes spans up to {TRUNCATED_MAX_SPAN:g}: use "
            "method='auto', 'dense' or 'stream'"
        )


def merged_rows(
    x: np.ndarray, y: np.ndarray, weights: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(x, y, w)`` with identical rows of ``[x, y]`` merged into one, its weight their
    total (1 a row without ``weights``), in the order of first appearance; unchanged
    (``weights`` as given) where no row repeats. ``x (n, d)``, ``y (n, p)``, concrete."""
    column = np.sort(np.asarray(x[:, 0], np.float64))
    if not np.any(column[1:] == column[:-1]):  # rows differ in their first column
        return x, y, weights
    rows = np.concatenate([np.asarray(x, np.float64), np.asarray(y, np.float64)], axis=1)
    order = np.lexsort(rows.T[::-1])  # stable: a group's first row comes first
    ordered = rows[order]
    starts = np.r_[True, np.any(ordered[1:] != ordered[:-1], axis=1)]
    if starts.all():
        return x, y, weights
    group = np.empty(rows.shape[0], np.intp)
    group[order] = np.cumsum(starts) - 1
    first = order[starts]  # each group's first row, by the groups' sorted order
    by_appearance = np.argsort(first, kind="stable")
    rank = np.empty_like(by_appearance)
    rank[by_appearance] = np.arange(by_appearance.size)
    w = np.ones(rows.shape[0]) if weights is None else np.asarray(weights, np.float64)
    total = np.bincount(rank[group], weights=w, minlength=first.size)
    kept = first[by_appearance]
    return x[kept], y[kept], total


def sorted_rows(
    x: np.ndarray, y: np.ndarray, weights: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(x, y, w)`` with the rows in the lexicographic order of ``[x, y]``: what a
    search does then depends on the rows, not on their order, to the last digit — so
    that integer weights and the repeated rows they stand for (merged in another order)
    select the same bandwidth, where a flat criterion leaves the optimiser's stopping
    point to rounding. ``x (n, d)``, ``y (n, p)``, concrete."""
    rows = np.concatenate([np.asarray(x, np.float64), np.asarray(y, np.float64)], axis=1)
    order = np.lexsort(rows.T[::-1])
    return x[order], y[order], None if weights is None else np.asarray(weights)[order]


def positive_rows(
    x: np.ndarray, y: np.ndarray, weights: Any, name: str = "weights"
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(x, y, w)`` without the rows of weight 0, for concrete ``x (n, d)``, ``y (n, p)``
    and ``weights`` (checked; None passes through as None)."""
    if weights is None:
        return x, y, None
    w = check_weights(weights, x.shape[0], name=name)
    kept = w > 0
    if kept.all():
        return x, y, w
    return x[kept], y[kept], w[kept]


@overload
def in_weight_unit(weights: None) -> None: ...
@overload
def in_weight_unit(weights: np.ndarray) -> np.ndarray: ...
def in_weight_unit(weights: np.ndarray | None) -> np.ndarray | None:
    """Concrete positive ``weights`` divided by the power of two at or above their
    largest (exact: their span keeps the smallest normal), in their own precision, for
    what does not change when every weight is multiplied by one number (CV, AICc,
    densities and their criteria): weights of 10³⁰⁰ or 10⁻³⁰⁰ are then summed, squared
    and held in float32 as weights near 1 are. None passes."""
    if weights is None:
        return None
    weights = np.asarray(weights)
    _, exponent = np.frexp(np.max(weights))
    return np.ldexp(weights, -int(exponent)).astype(weights.dtype, copy=False)


def augmented(values, w):
    """``(m, 1 + p)``: ``[w, w·v]`` with ``w`` divided by its largest and each value
    column by :func:`column_scale`, for ``values (m, p)`` and weights ``w (m,)`` (NumPy
    or JAX): the products keep their digits down to ``2⁻⁵¹¹`` of the column's largest
    value (the weights' span is at most ``2⁵¹¹``), whatever the values' own scale."""
    xp = _namespace(values, w)
    unit = w / xp.max(w)
    return xp.concatenate([unit[:, None], unit[:, None] * (values / column_scale(values))], axis=1)


def divided(pooled, values):
    """The weighted pool ``(n, p)`` from the pool ``(n, 1 + p)`` of :func:`augmented`
    ``values``."""
    return pooled[:, 1:] / pooled[:, :1] * column_scale(values)


def column_scale(values):
    """``(p,)``: a power of two per value column, its largest magnitude's (1 for a column
    of zeros); dividing by it is exact. Values of 2⁻¹⁰⁰⁰ times weights 2⁻³⁰⁰ below the
    largest underflowed to 0 unscaled."""
    xp = _namespace(values)
    largest = xp.max(xp.abs(values), axis=0)
    _, exponent = xp.frexp(xp.where(largest > 0, largest, 1.0))
    scale = xp.ldexp(xp.ones_like(largest), exponent - 1)
    if xp is np:
        return scale
    import jax

    return jax.lax.stop_gradient(scale)


def _namespace(*arrays):
    if all(isinstance(a, np.ndarray | np.generic) for a in arrays):
        return np
    import jax.numpy as jnp

    return jnp


def dask_augmented(values, weights):
    """The Dask path's ``([w/u, (w/u)·v/c], c)`` for ``values (m, p)`` and ``weights
    (m, 1)``, Dask arrays chunked alike, ``c (p,)`` the values' :func:`column_scale` and
    ``u`` the power of two at or above the largest weight (lazy: reductions over the
    values and the weights, which the pool then waits for), so that weights near the
    float range's ends neither overflow in ``w·v`` nor lose their digits as subnormals.
    The divided pool is multiplied back by ``c``; each task drops its keys of weight 0
    (:func:`chunk_of_positive_weight`)."""
    import dask.array as da

    if weights.shape[1] != 1:
        raise ValueError(
            f"weights: expected one weight per key, shape ({weights.shape[0]},); received "
            f"shape {weights.shape}"
        )
    largest = da.max(da.abs(values), axis=0)
    _, exponent = da.frexp(da.where(largest > 0, largest, 1.0))
    scale = da.ldexp(da.ones_like(largest), exponent - 1)
    heaviest = da.max(weights)  # (not finite, or not positive: the tasks refuse it)
    _, power = da.frexp(da.where(da.isfinite(heaviest) & (heaviest > 0), heaviest, 1.0))
    relative = da.ldexp(weights, -power)  # (2^power itself may overflow)
    return da.concatenate([relative, relative * (values / scale)], axis=1), scale


def chunk_of_positive_weight(keys, values):
    """``(keys, values)``: a chunk's keys of positive weight (``values[:, 0]``, the
    weight column of :func:`dask_augmented`); a negative weight raises."""
    if np.any(values[:, 0] < 0):
        raise ValueError(
            f"weights: expected non-negative weights; a chunk of {values.shape[0]} rows "
            f"holds {int(np.sum(values[:, 0] < 0))} negative"
        )
    kept = values[:, 0] > 0
    return keys[kept], values[kept]


def positive_keys(k: Any, w: Any, mask: Any, n: int) -> Any:
    """``(keys, weights, mask, kept)`` with the keys of weight 0 left out: dropped from
    concrete arrays (``kept``: the boolean ``(m,)`` of those kept, or None if all are),
    masked for traced weights."""
    from .._support.validation import check_mask
    from .masks import allowed_block

    if is_traced(w):
        positive = (w > 0)[None, :]
        if mask is None:
            return k, w, positive, None
        allowed = check_mask(mask, n, k.shape[0])
        ids = np.arange(n), np.arange(k.shape[0])
        return k, w, allowed_block(allowed, *ids) & positive, None
    kept = np.asarray(w) > 0
    if kept.all():
        return k, w, mask, None
    if mask is not None:
        allowed = check_mask(mask, n, k.shape[0])
        if allowed.ndim == 1:  # valid lengths, counted among the kept keys
            counts = np.concatenate([[0], np.cumsum(kept)])
            mask = counts[np.asarray(allowed)].astype(np.int32)
        else:
            mask = np.asarray(allowed)[:, kept]
    return k[kept], w[kept], mask, kept
