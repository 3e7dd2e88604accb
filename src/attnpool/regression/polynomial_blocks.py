"""A local polynomial fit's sums over one block of keys, and its solve (NumPy, float64).

Each query's fit needs four passes over its keys, each a sum over them, so the keys may
come in blocks — all at once on the NumPy engine (:func:`fit_block`), chunk by chunk on
Dask (:mod:`attnpool.distributed.polynomial`):

1. the largest log weight ``m`` (the shift, :func:`shift_of`) and the heaviest key
   ``(x_r, y_r)``, the reference (:func:`heaviest`);
2. ``Σ w`` and ``Σ w δ`` with ``w = e^(log K − m)`` and offsets ``δ = x − x_r``: the
   weighted mean offset ``μ``;
3. ``Σ w (δ − μ)²``: the spread ``s`` about it;
4. the moments of the monomials of ``z = (δ − μ) / s``: ``Σ w z^α z^β`` and
   ``Σ w z^α (y − y_r)``, which :func:`solve` turns into the polynomial and its
   derivatives at the query, ``z = (q − x_r − μ) / s``.

Offsets and responses about the heaviest key: where one key outweighs the others by
1e40, ``μ`` and the responses' moments are sums of the light keys' terms alone (offsets
about the query lost them in ``x_r − q − μ`` and ``y_r``: two engines' summation orders
then gave fits apart by half their size).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ..kernels.edges import pair_log_weights
from ..kernels.record import Kernel
from .monomials import SINGULAR, derivative_rows

__all__ = [
    "Moments",
    "fit_block",
    "heavier",
    "heaviest",
    "log_weights",
    "mean_of",
    "mean_sums",
    "moment_sums",
    "offsets_from",
    "shift_of",
    "solve",
    "spread_of",
    "spread_sums",
]

Offsets = list[np.ndarray]
Index = tuple[int, ...]
#: Each query's largest log weight, its key and its response.
Reference = tuple[np.ndarray, np.ndarray, np.ndarray]


class Moments(NamedTuple):
    """A local polynomial fit's sums for ``k`` queries, what :func:`solve` takes (NumPy
    or JAX arrays): the monomials' Gram matrix ``Σ w z^α z^β (k, B, B)`` and response
    moments ``Σ w z^α (y − y_r) (k, B, p)``, the weight ``Σ w (k,)``, the mean offset
    ``μ (k, d)`` from the reference key and the spread ``s (k, d)`` about it."""

    gram: Any
    responses: Any
    total: Any
    mean: Any
    spread: Any


def log_weights(
    x: np.ndarray, q: np.ndarray, h: np.ndarray, kernel: Kernel, left_out: int | None = None
) -> np.ndarray:
    """``log K (k, b)`` of queries ``q (k, d)`` over keys ``x (b, d)``; ``left_out``: the
    queries are the keys from this one on, each without its own pair (leave-one-out)."""
    with np.errstate(over="ignore"):  # h → 0: infinite offsets weigh 0
        us = [(x[None, :, j] - q[:, j, None]) / h[j] for j in range(x.shape[1])]
        log_w = np.array(pair_log_weights(us, kernel), np.float64)
    if left_out is not None:
        own = np.arange(q.shape[0])
        log_w[own, left_out + own] = -np.inf
    return log_w


def heaviest(log_w: np.ndarray, x: np.ndarray, y: np.ndarray) -> Reference:
    """``(largest log weight (k,), its key (k, d), its response (k, p))`` per query."""
    index = np.argmax(log_w, axis=1) if log_w.shape[1] else np.zeros(log_w.shape[0], int)
    top = log_w[np.arange(log_w.shape[0]), index] if log_w.shape[1] else np.full(
        log_w.shape[0], -np.inf)  # fmt: skip
    return top, x[index] if x.shape[0] else np.zeros((log_w.shape[0], x.shape[1])), (
        y[index] if y.shape[0] else np.zeros((log_w.shape[0], y.shape[1])))  # fmt: skip


def heavier(a: Reference, b: Reference) -> Reference:
    """The heavier reference of two (of two blocks of keys), per query."""
    take = b[0] > a[0]
    return (np.where(take, b[0], a[0]), np.where(take[:, None], b[1], a[1]),
            np.where(take[:, None], b[2], a[2]))  # fmt: skip


def offsets_from(x: np.ndarray, reference: Reference) -> Offsets:
    """The keys' offsets ``x − x_r`` from each query's reference, one ``(k, b)`` per column."""
    return [x[None, :, j] - reference[1][:, j, None] for j in range(x.shape[1])]


def shift_of(top: np.ndarray) -> np.ndarray:
    """Each row's shift from its largest log weight (0 where no key weighs anything)."""
    return np.asarray(np.where(top > -np.inf, top, 0.0))


def _weights(log_w: np.ndarray, shift: np.ndarray) -> np.ndarray:
    return np.asarray(np.exp(log_w - shift[:, None]))


def mean_sums(log_w: np.ndarray, offsets: Offsets, shift: np.ndarray) -> np.ndarray:
    """``(k, 1 + d)``: ``[Σ w, Σ w δ_j]``."""
    w = _weights(log_w, shift)
    return np.stack([w.sum(axis=1)] + [np.einsum("kn,kn->k", w, o) for o in offsets], axis=1)


def mean_of(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(total (k,), mean offset (k, d))`` from the summed :func:`mean_sums`."""
    total = sums[:, 0]
    return total, sums[:, 1:] / np.where(total > 0, total, 1.0)[:, None]


def spread_sums(
    log_w: np.ndarray, offsets: Offsets, shift: np.ndarray, mean: np.ndarray
) -> np.ndarray:
    """``(k, d)``: ``Σ w (δ_j − μ_j)²``."""
    w = _weights(log_w, shift)
    return np.stack([np.einsum("kn,kn->k", w, (o - mean[:, j, None]) ** 2)
                     for j, o in enumerate(offsets)], axis=1)  # fmt: skip


def spread_of(sums: np.ndarray, total: np.ndarray) -> np.ndarray:
    """``(k, d)``: the weighted spread about the mean (1 where it is 0 or not finite)."""
    spread = np.sqrt(sums / np.where(total > 0, total, 1.0)[:, None])
    return np.where((spread > 0) & np.isfinite(spread), spread, 1.0)


@np.errstate(over="ignore", invalid="ignore")  # rows whose powers overflow: undetermined
def moment_sums(
    log_w: np.ndarray, offsets: Offsets, shift: np.ndarray, mean: np.ndarray,
    spread: np.ndarray, y: np.ndarray, y_r: np.ndarray, exponents: list[Index],
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``(Σ w z^α z^β (k, B, B), Σ w z^α (y − y_r) (k, B, p))`` of the monomials
    ``exponents``; ``y (b, p)`` the keys' responses, ``y_r (k, p)`` the reference's."""
    w = _weights(log_w, shift)
    # (keys of weight 0 at 0: far ones' powers would overflow and make 0 · inf)
    zs = [np.where(w > 0, (o - mean[:, j, None]) / spread[:, j, None], 0.0)
          for j, o in enumerate(offsets)]  # fmt: skip
    basis = [math.prod((z**a for z, a in zip(zs, alpha, strict=True)), start=np.ones_like(w))
             for alpha in exponents]  # fmt: skip
    weighted = [w * b for b in basis]
    gram = np.stack([np.stack([np.einsum("kn,kn->k", wb, b) for b in basis], axis=1)
                     for wb in weighted], axis=1)  # fmt: skip
    responses = [y[None, :, c] - y_r[:, c, None] for c in range(y.shape[1])]  # (k, b) each
    t = np.stack([np.stack([np.einsum("kn,kn->k", wb, r) for r in responses], axis=1)
                  for wb in weighted], axis=1)  # fmt: skip
    return gram, t


@np.errstate(over="ignore", invalid="ignore")
def solve(
    moments: Moments, q: np.ndarray, reference: Reference, exponents: list[Index],
    orders: list[Index],
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``(estimates (k, len(orders), p), undetermined (k,))`` from the summed moments: the
    Jacobi-scaled Gram matrix's eigen-solve, the derivatives ``orders`` of the polynomial
    at the queries ``q`` (``z = (q − x_r − μ)/s``) in the data's units, the reference's
    response added back to the fit; NaN where the matrix is singular."""
    gram, t, total, mean, spread = moments
    safe = np.where(total > 0, total, 1.0)[:, None, None]
    gram, t = gram / safe, t / safe
    finite = np.all(np.isfinite(gram), axis=(1, 2)) & np.all(np.isfinite(t), axis=(1, 2))
    gram = np.where(finite[:, None, None], gram, np.eye(len(exponents)))
    t = np.where(finite[:, None, None], t, 0.0)
    scale = 1 / np.sqrt(np.maximum(np.diagonal(gram, axis1=1, axis2=2), np.finfo(float).tiny))
    scaled = gram * scale[:, :, None] * scale[:, None, :]
    values, vectors = np.linalg.eigh(scaled)
    undetermined = ~(total > 0) | ~finite | ~(values[:, 0] > SINGULAR * values[:, -1])
    inverse_values = np.where(undetermined[:, None], 0.0, 1 / np.where(values > 0, values, 1.0))
    rhs = np.einsum("kij,kip->kjp", vectors, scale[:, :, None] * t)
    beta = scale[:, :, None] * np.einsum("kij,kj,kjp->kip", vectors, inverse_values, rhs)
    units = np.stack([np.prod(spread ** np.array(order), axis=1) for order in orders], axis=1)
    at_query = (q - reference[1] - mean) / spread
    rows = derivative_rows(exponents, orders, at_query) / units[:, :, None]
    estimate = np.einsum("koj,kjp->kop", rows, beta)
    fit = np.array([sum(order) == 0 for order in orders])
    estimate = estimate + np.where(fit[None, :, None], reference[2][:, None, :], 0.0)
    return np.where(undetermined[:, None, None], np.nan, estimate), undetermined


def fit_block(
    x: np.ndarray, y: np.ndarray, q: np.ndarray, h: np.ndarray, kernel: Kernel,
    exponents: list[Index], orders: list[Index], left_out: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """:func:`solve`'s result for queries ``q (k, d)`` over all keys ``x`` at once."""
    log_w = log_weights(x, q, h, kernel, left_out)
    reference = heaviest(log_w, x, y)
    shift, offsets = shift_of(reference[0]), offsets_from(x, reference)
    total, mean = mean_of(mean_sums(log_w, offsets, shift))
    spread = spread_of(spread_sums(log_w, offsets, shift, mean), total)
    gram, t = moment_sums(log_w, offsets, shift, mean, spread, y, reference[2], exponents)
    return solve(Moments(gram, t, total, mean, spread), q, reference, exponents, orders)
