"""Kernel weights pair by pair in NumPy float64: what every host pair sum shares.

The NumPy pairs backend (:mod:`attnpool.sums.exact_pairs`: the NumPy fits and pools,
signed kernels and varying bandwidths, the exact re-sums, and the kernel's other forms
of :mod:`attnpool.kernels.mixed`) sums, for a block of queries,

.. math:: w_{ij} = \\omega_j \\, \\exp\\big(\\log K_{ij} - s_i\\big), \\qquad
          s_i = \\max_j \\log K_{ij},

with ``log K`` the kernel of the continuous columns' scaled differences plus the
categorical columns' ``log L`` (Aitchison–Aitken, Wang–van Ryzin), a query's own pair
left out of a leave-one-out sum, and the observation weights ``ω`` multiplied after the
shift (as ``log ω`` they would round away beside the log terms of a tiny bandwidth).
Rows are taken in blocks (:func:`row_blocks`) so that memory is ``O(block · m)``; a row
whose log weights are all ``−inf`` is *empty* (its shift is 0, its weights 0).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from ..kernels import Kernel
from ..kernels.edges import edge_log_profile, has_edge
from ..kernels.norms import squared_norm
from .local_model import log_categorical

__all__ = ["BLOCK_PAIRS", "log_weights", "row_blocks", "shifted_weights"]

#: Pairs × numbers per pair a block of rows holds (memory: a few such float64 arrays).
BLOCK_PAIRS = 2**18


def row_blocks(n: int, m: int, width: int = 1, block_pairs: int = BLOCK_PAIRS) -> Iterator[slice]:
    """The blocks of ``n`` query rows over ``m`` keys, ``width`` numbers a pair, each
    holding at most ``block_pairs`` (at least one row)."""
    step = max(1, block_pairs // max(m * width, 1))
    for start in range(0, n, step):
        yield slice(start, min(start + step, n))


def log_weights(
    us: Sequence[np.ndarray],
    kernel: Kernel,
    categorical: Iterable[tuple[np.ndarray, np.ndarray, float, str, int]] = (),
    shape: tuple[int, int] | None = None,
) -> np.ndarray:
    """``(n, m)``: ``log K(u)`` of the continuous columns' scaled differences ``us`` (one
    ``(n, m)`` array per column; a compact kernel's edge decided exactly,
    :func:`attnpool.kernels.edges.edge_log_profile`, as on every path) plus ``log L(a, b)``
    of each categorical column ``(a (n, 1), b (1, m), λ, kind, levels)``
    (:func:`attnpool.sums.local_model.log_categorical`). ``shape``: the pairs' shape where
    no column is continuous."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if not us:
            total = np.zeros(shape) if shape is not None else np.zeros((1, 1))
        elif has_edge(kernel):
            total = edge_log_profile(list(us), kernel)
        else:
            total = np.asarray(kernel.log_profile(squared_norm(list(us), kernel)), np.float64)
        for a, b, lam, kind, count in categorical:
            total = total + log_categorical(a, b, lam, kind, count)
    return total


def shifted_weights(
    log_w: np.ndarray,
    *,
    left_out: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(w (n, m), shift (n,), empty (n,))`` of the log weights ``log_w (n, m)``, which
    are overwritten: ``w = ω · exp(log_w − shift)``. ``left_out (n,)``: the key each row
    leaves out, all of its weight (``−1``: none); ``weights (m,)``: ``ω`` (None: ones)."""
    if not log_w.flags.writeable:  # (a kernel of the user's may answer a read-only array)
        log_w = log_w.copy()
    if left_out is not None:
        rows = np.flatnonzero(left_out >= 0)
        log_w[rows, left_out[rows]] = -np.inf
    top = log_w.max(axis=1)
    empty = ~(top > -np.inf)
    shift = np.where(empty, 0.0, top) if empty.any() else top
    w = np.exp(np.subtract(log_w, shift[:, None], out=log_w), out=log_w)  # (−inf − 0: 0)
    if weights is not None:
        w *= np.asarray(weights, np.float64)[None, :]
    return w, shift, empty
