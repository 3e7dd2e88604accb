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

Leave-one-out with weights leaves one *copy* out: a point's own pair keeps weight
``max(w_i − 1, 0)``, so cross-validation with integer weights is cross-validation on
the repeated rows (a row weighing less than one is left out whole).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import as_array, is_traced

__all__ = [
    "augmented",
    "check_weights",
    "chunk_of_positive_weight",
    "dask_augmented",
    "divided",
    "leave_one_copy_out",
    "max_span",
    "positive_keys",
    "positive_rows",
]


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
    span = positive.max() / positive.min()
    if not span <= max_span(dtype):
        raise ValueError(
            f"{name}: the positive weights span {span:.3g} (largest / smallest), beyond "
            f"{max_span(dtype):.3g}, which {np.dtype(dtype).name} pooling resolves; drop "
            "the negligible rows (weight 0) or rescale"
        )
    return w.astype(dtype)


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


def augmented(values, w):
    """``(m, 1 + p)``: ``[w, w·v]`` with ``w`` divided by its largest, for ``values (m, p)``
    and weights ``w (m,)`` (NumPy or JAX)."""
    xp = _namespace(values, w)
    unit = w / xp.max(w)
    return xp.concatenate([unit[:, None], unit[:, None] * values], axis=1)


def divided(pooled):
    """The weighted pool from the pool of :func:`augmented` values: ``(n, p)`` from
    ``(n, 1 + p)``."""
    return pooled[:, 1:] / pooled[:, :1]


def leave_one_copy_out(w):
    """``log(max(1 − 1/w_i, 0))``: the log of the share of a point's own weight its
    leave-one-out fit keeps (``−inf`` for weights up to one: left out whole)."""
    xp = _namespace(w)
    safe = xp.where(w > 1, w, 2.0)
    return xp.where(w > 1, xp.log1p(-1.0 / safe), -xp.inf)


def _namespace(*arrays):
    if all(isinstance(a, np.ndarray | np.generic) for a in arrays):
        return np
    import jax.numpy as jnp

    return jnp


def dask_augmented(values, weights):
    """The Dask path's ``[w, w·v]`` for ``values (m, p)`` and ``weights (m, 1)``, Dask
    arrays chunked alike: not divided by the largest weight (no pass over the weights
    before the pool); each task drops its keys of weight 0
    (:func:`chunk_of_positive_weight`)."""
    import dask.array as da

    if weights.shape[1] != 1:
        raise ValueError(
            f"weights: expected one weight per key, shape ({weights.shape[0]},); received "
            f"shape {weights.shape}"
        )
    return da.concatenate([weights, weights * values], axis=1)


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
    from ._validation import check_mask
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
