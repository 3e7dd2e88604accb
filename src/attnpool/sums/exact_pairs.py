"""Every pair in NumPy float64: the exact sums of a problem, and each row's heaviest key.

:func:`exact_log_sums` is the reference every backend's answer is finished with
(:mod:`attnpool.sums.layer`) and the NumPy backend of small problems: for a block of
rows, the textbook's weights

.. math:: w_{ij} = \\omega_j \\exp\\big(r \\log K_{ij} - s_i\\big), \\qquad
          s_i = \\max_{j:\\, \\omega_j > 0} r \\log K_{ij},

with ``log K`` the kernel of the continuous columns' scaled differences (the difference
first, so that keys equally far from a query stay tied at any bandwidth, and a compact
kernel's edge decided exactly, :func:`attnpool.kernels.edges.pair_log_weights`) plus the
categorical columns' ``log L``, a row's left-out key masked, and the observation weights
``ω`` — in units of the largest, keys of weight 0 dropped — multiplied after the shift:
as ``log ω`` they rounded away beside the log terms of a tiny bandwidth (``−10¹⁵``, whose
rounding step is ``0.125``), then each row scaled by the power of two that brings its
largest term below 1. Weights spanning more than ``2^900``, whose smallest would
underflow as factors, are added as ``log ω`` instead. Then the sums ``w @ [1, v]``, and
local linear's moments about each row's reference key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import kernels
from ..kernels.edges import pair_log_weights
from ..kernels.norms import squared_norm
from ..kernels.signed import signed_log_weights
from .local_model import log_categorical
from .pair_weights import BLOCK_PAIRS, row_blocks, shifted_weights
from .problem import LogSums, SumProblem

__all__ = ["diagonal_log_weights", "exact_log_sums", "heaviest_keys", "log_row_ratios",
           "log_row_sums"]  # fmt: skip


LN2 = float(np.log(2.0))
#: The widest span of observation weights taken as factors after the shift.
FACTOR_SPAN = 2.0**-900


def exact_log_sums(problem: SumProblem) -> LogSums:
    """Every pair of ``problem`` in NumPy float64, each row about its largest log weight
    (module docstring); every row settled."""
    n, m, d, p = problem.sizes
    weighing = _factors(problem.weights)
    per_pair = 1 if problem.degree == 0 else 2 + d + p
    reference = problem.reference() if problem.degree else None
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if n * m * per_pair <= BLOCK_PAIRS:  # (one block: the small calls' own path)
            shift, sums = _block_sums(problem, slice(None), weighing, reference)
        else:
            found = [_block_sums(problem, rows, weighing, reference)
                     for rows in row_blocks(n, m, per_pair)]  # fmt: skip
            shift = np.concatenate([f[0] for f in found])
            sums = np.concatenate([f[1] for f in found])
    return LogSums(shift + weighing[1], sums, np.ones(n, bool))


def _block_sums(
    problem: SumProblem, rows: slice, weighing: tuple[Any, ...],
    reference: tuple[np.ndarray, np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``(shift, sums)`` of the query ``rows``: the weights shifted by each row's largest,
    observation weights multiplied after the shift (:func:`_factors`), then ``Σ w [1, v]``
    or the moments about each row's ``reference``."""
    factors, _, dropped, log_w = weighing
    logs, sign = _log_weights(problem, rows, dropped, log_w)
    left_out = None if problem.left_out is None else problem.left_out[rows]
    shares, shift = _row_shares(logs, left_out, factors)
    if sign is not None:
        shares *= sign
    if reference is not None:
        return shift, _moments(shares, problem, rows, reference)
    sums = np.empty((shares.shape[0], 1 + problem.values.shape[1]))
    sums[:, 0] = shares.sum(axis=1)
    sums[:, 1:] = shares @ problem.values
    return shift, sums


def _row_shares(
    logs: np.ndarray, left_out: np.ndarray | None, factors: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """``(shares, shift)``: the terms ``exp(logs)`` (overwritten) about each row's largest,
    times the ``factors`` after the shift, each row then brought by a power of two to a
    largest term in ``[1/2, 1)`` (exact: no share of a tiny factor is subnormal)."""
    shares, shift, _ = shifted_weights(logs, left_out=left_out, weights=factors)
    if factors is not None:
        exponent = np.frexp(shares.max(axis=1, initial=0.0))[1]
        shares = np.ldexp(shares, -exponent[:, None])
        shift = shift + exponent * LN2
    return shares, shift


def log_row_sums(
    log_terms: Callable[[slice], np.ndarray], n: int, m: int, *,
    weights: np.ndarray | None = None, left_out: np.ndarray | None = None,
) -> np.ndarray:  # fmt: skip
    """``(n,)``: ``log Σ_j ω_j exp(T_ij)`` of pair terms that ``log_terms(rows)`` gives
    ``(rows, m)`` a block of rows at a time (a kernel's other forms: its convolution, its
    distribution function, products of them), weighed as :func:`exact_log_sums` weighs
    (``weights (m,)`` ``ω ≥ 0`` after each row's shift, as ``log ω`` beyond
    :data:`FACTOR_SPAN`); ``left_out (n,)``: the key each row leaves out (``−1``: none).
    ``−inf`` where no pair weighs."""
    factors, log_top, dropped, log_w = _factors(weights)
    out = np.empty(n)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for rows in row_blocks(n, m):
            logs = np.asarray(log_terms(rows), np.float64)
            if not logs.flags.writeable:
                logs = logs.copy()
            if log_w is not None:
                logs += log_w[None, :]
            np.fmax(logs, -np.inf, out=logs)
            if dropped is not None:
                logs[:, dropped] = -np.inf
            shares, shift = _row_shares(logs, None if left_out is None else left_out[rows],
                                        factors)  # fmt: skip
            out[rows] = shift + np.log(shares.sum(axis=1))
    return out + log_top


def log_row_ratios(
    log_weights: Callable[[slice], np.ndarray], log_values: Callable[[slice], np.ndarray],
    n: int, m: int, *, left_out: np.ndarray | None = None, weights: np.ndarray | None = None,
) -> np.ndarray:  # fmt: skip
    """``(n,)``: ``log(Σ_j ω_j e^{A_ij} e^{B_ij} / Σ_j ω_j e^{A_ij})`` — the pool of
    ``e^B`` under the weights ``ω e^A`` — of the pair terms ``log_weights(rows)`` (``A``)
    and ``log_values(rows)`` (``B``), each ``(rows, m)``, a block of rows at a time. Each
    row's ``A`` is taken about its largest before ``B`` is added: at a tiny bandwidth
    ``A`` is near ``−1e17``, beside which ``A + B`` would round ``B`` away, and the
    difference of two such logarithms would keep none of the answer's digits; then both
    sums are taken in logs, so that a key far in ``A`` but near in ``B`` still counts.
    ``left_out (n,)``: the key each row leaves out (``−1``: none); ``weights (m,)``:
    ``ω > 0`` (None: ones), multiplying after the row's shift. NaN where no pair weighs
    (``0 / 0``), ``−inf`` where only pairs of ``B = −inf`` do."""
    out = np.empty(n)
    log_factors = None if weights is None else np.log(np.asarray(weights, np.float64))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for rows in row_blocks(n, m):
            logs = np.array(log_weights(rows), np.float64)
            np.fmax(logs, -np.inf, out=logs)  # (NaN: no weight)
            if left_out is not None:
                own = left_out[rows]
                at = np.flatnonzero(own >= 0)
                logs[at, own[at]] = -np.inf
            top = logs.max(axis=1, keepdims=True)
            logs -= np.where(np.isfinite(top), top, 0.0)
            if log_factors is not None:  # (after the shift: beside it, log ω keeps its digits)
                logs += log_factors
            # in logs, not as exp(A) shares: a key whose share underflows may carry the
            # largest e^{A+B} (its B far above the nearest key's)
            terms = logs + np.asarray(log_values(rows), np.float64)
            out[rows] = _row_log_totals(terms) - _row_log_totals(logs)
    return out


def _row_log_totals(logs: np.ndarray) -> np.ndarray:
    """``(rows,)``: ``log Σ_j e^{logs_ij}`` of each row (``−inf`` where every term is)."""
    top = logs.max(axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    return np.asarray(safe + np.log(np.exp(logs - safe[:, None]).sum(axis=1)))


def heaviest_keys(problem: SumProblem) -> np.ndarray:
    """``(n,)``: each row's key of the largest weight ``ω_j K_ij`` (the first of ties; its
    left-out key excluded): the reference of its moments. Unweighted continuous columns
    and a kernel that never grows with the distance: the nearest key, found without
    evaluating the kernel — beyond one block of pairs by a sorted search (one column) or
    a k-d tree (several): a nearest key, not always the first of ties. A row no key
    weighs gets ``−1`` or a key (any reference serves it: its sums are 0)."""
    n, m, d, _ = problem.sizes
    nearest = problem.weights is None and not (problem.categorical or problem.varying)
    nearest = nearest and kernels.is_monotone(problem.kernel) and not problem.kernel.product
    if nearest and n * m > BLOCK_PAIRS and d == 1:
        return _nearest_in_one_column(problem)
    if nearest and n * m > BLOCK_PAIRS and isinstance(problem.kernel.norm, float | int):
        return _nearest_by_tree(problem, float(problem.kernel.norm))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        log_w = None if problem.weights is None else np.log(problem.weights)
        found = [_heaviest(problem, rows, nearest, log_w) for rows in row_blocks(n, m)]
    return found[0] if len(found) == 1 else np.concatenate([np.zeros(0, int), *found])


def _heaviest(
    problem: SumProblem, rows: slice, nearest: bool, log_w: np.ndarray | None
) -> np.ndarray:
    """:func:`heaviest_keys` of the query ``rows``."""
    if nearest:  # the least distance (in one column, any norm's is |u|; never NaN)
        differences = _differences(problem, rows)
        scores = (np.abs(differences[0]) if len(differences) == 1
                  else squared_norm(differences, problem.kernel))  # fmt: skip
        if problem.left_out is None:
            return np.asarray(scores.argmin(axis=1))
        scores = np.negative(scores, out=scores)
    else:
        scores = _log_weights(problem, rows, None, log_w)[0]
    if problem.left_out is not None:
        at = np.flatnonzero(problem.left_out[rows] >= 0)
        scores[at, problem.left_out[rows][at]] = -np.inf
    best = scores.argmax(axis=1)
    return np.where(scores.max(axis=1) > -np.inf, best, -1)


def _nearest_in_one_column(problem: SumProblem) -> np.ndarray:
    """:func:`heaviest_keys`' nearest keys in one column by a sorted search, O((n + m) log m):
    the two keys on either side of each query's place among the sorted keys hold a
    nearest one that is not left out (of tied keys, the first of those four; any serves
    as a reference)."""
    keys, queries = problem.keys[:, 0], problem.queries[:, 0]
    order = np.argsort(keys, kind="stable")
    place = np.searchsorted(keys[order], queries)
    at = np.clip(place[:, None] + np.arange(-2, 2)[None, :], 0, keys.size - 1)
    candidates = order[at]
    distance = np.abs(keys[candidates] - queries[:, None])
    if problem.left_out is not None:
        distance[candidates == problem.left_out[:, None]] = np.inf
    closest = distance.min(axis=1)
    first = np.where(distance == closest[:, None], candidates, keys.size).min(axis=1)
    return np.where(closest < np.inf, first, -1)


def _nearest_by_tree(problem: SumProblem, norm: float) -> np.ndarray:
    """:func:`heaviest_keys`' nearest keys in several columns by a k-d tree in the ``norm``
    (a Minkowski one's), O((n + m) log m) for few columns: coordinates about the keys'
    midrange, each column in units of ``h / min h`` (which cannot overflow); the second
    nearest where the first is the row's left-out key."""
    from scipy.spatial import cKDTree

    from .._support.units import midrange

    centre, scale = midrange(problem.keys), np.min(problem.bandwidth) / problem.bandwidth
    keys, queries = ((a - centre) * scale for a in (problem.keys, problem.queries))
    count = 1 if problem.left_out is None else min(2, keys.shape[0])
    _, found = cKDTree(keys).query(queries, k=count, p=norm)
    found = np.asarray(found, int).reshape(queries.shape[0], count)
    if problem.left_out is None:
        return found[:, 0]
    own = found[:, 0] == problem.left_out
    first = np.where(own, found[:, -1], found[:, 0])
    return np.where(own & (found[:, -1] == found[:, 0]), -1, first)


def diagonal_log_weights(problem: SumProblem) -> np.ndarray:
    """``(n,)``: ``r log K`` of each query with itself — a difference of 0 in every
    continuous column, the same level in every categorical one: a row's weight on one
    copy of itself, as the sums' rows are (its observation weight not counted)."""
    n = problem.queries.shape[0]
    continuous, categorical = problem.column_kinds()
    zero = np.zeros((n, 1))
    logs = np.zeros((n, 1))
    if continuous:
        logs = logs + np.asarray(pair_log_weights([zero] * len(continuous), problem.kernel))
    kinds, levels = problem.var_type or "", problem.levels or (0,) * problem.keys.shape[1]
    q, h = problem.queries, problem.bandwidth
    for j in categorical:
        with np.errstate(divide="ignore"):
            logs = logs + log_categorical(q[:, j, None], q[:, j, None], h[j], kinds[j], levels[j])
    return problem.power * logs[:, 0]


def _factors(
    weights: np.ndarray | None,
) -> tuple[np.ndarray | None, float, np.ndarray | None, np.ndarray | None]:
    """``(ω / max ω, log max ω, keys of weight 0, None)``; ``(None, 0, None, None)``
    unweighted; ``(None, 0, None, log ω)`` for weights spanning more than
    :data:`FACTOR_SPAN`, whose smallest would underflow as factors."""
    if weights is None:
        return None, 0.0, None, None
    top = float(np.max(weights, initial=0.0))
    dropped = weights <= 0
    if not top > 0:
        return np.zeros_like(weights), 0.0, dropped, None
    if np.min(weights, where=~dropped, initial=top) < top * FACTOR_SPAN:
        with np.errstate(divide="ignore"):
            return None, 0.0, None, np.log(weights)
    return weights / top, float(np.log(top)), dropped if dropped.any() else None, None


def _log_weights(
    problem: SumProblem, rows: slice, dropped: np.ndarray | None, log_w: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """``(logs, sign)``: ``(rows, m)`` ``r log|K|`` of each pair (plus ``log ω``, where
    given), ``−inf`` for keys ``dropped`` and for NaN, a new array; and the pairs' signs
    for a higher-order kernel (else None)."""
    q, k = problem.queries[rows], problem.keys
    continuous, categorical = problem.column_kinds()
    shape = (q.shape[0], k.shape[0])
    h = problem.bandwidth
    sign, counts, offset, unequal = None, None, None, None
    if problem.varying:
        us, counts, offset, unequal = _varying_differences(problem, rows)
    else:
        us = [(q[:, j, None] - k[None, :, j]) / h[j] for j in continuous]
    if problem.signed:
        found, sign = signed_log_weights(us, problem.kernel)
        sign = sign if problem.power % 2 else None  # (K^r of an even r: no sign)
    else:
        found = pair_log_weights(us, problem.kernel) if us else np.zeros(shape)
    logs = np.asarray(found, np.float64)
    if logs.shape != shape or not logs.flags.writeable:  # (a kernel of the user's)
        logs = np.array(np.broadcast_to(logs, shape))
    if offset is not None:
        logs += offset
    if unequal is not None:
        logs[unequal] = -np.inf
    kinds, levels = problem.var_type or "", problem.levels or (0,) * k.shape[1]
    for j in categorical:
        logs += log_categorical(q[:, j, None], k[None, :, j], h[j], kinds[j], levels[j])
    if problem.power != 1:
        logs *= problem.power
    if log_w is not None:
        logs += log_w[None, :]
    np.fmax(logs, -np.inf, out=logs)  # NaN (a pair no kernel weighs) to −inf
    if dropped is not None:
        logs[:, dropped] = -np.inf
    if counts is not None:
        _keep_most_infinite(logs, counts, None if problem.left_out is None
                            else problem.left_out[rows])  # fmt: skip
    return logs, sign


def _varying_differences(
    problem: SumProblem, rows: slice
) -> tuple[list[np.ndarray], np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """``(us, counts, offset, unequal)`` of a varying bandwidth's pairs: the scaled
    differences; the zero bandwidths' counts of infinite factors, and the pairs unequal
    in a column of zero bandwidth, which weigh nothing (both None where no bandwidth is
    0); and the keys' ``−Σ_c log h_jc`` ``(1, m)`` (a zero bandwidth counted apart; None
    by query)."""
    q, k, h = problem.queries[rows], problem.keys, problem.pair_bandwidths(rows)
    d = k.shape[1]
    shape = (q.shape[0], k.shape[0])
    zero = h == 0
    unit = np.where(zero, 1.0, h)
    offset = None
    if problem.bandwidth_by == "key":  # the key's 1 / Π h
        offset = -np.sum(np.log(unit), axis=-1)
    if not zero.any():
        return [(q[:, j, None] - k[None, :, j]) / h[..., j] for j in range(d)], None, offset, None
    us, counts = [], np.zeros(shape, int)
    unequal = np.zeros(shape, bool)
    for j in range(d):
        difference = q[:, j, None] - k[None, :, j]
        us.append(np.where(zero[..., j], 0.0, difference / unit[..., j]))
        unequal |= zero[..., j] & (difference != 0)
        counts += zero[..., j]
    return us, counts, offset, unequal


def _keep_most_infinite(logs: np.ndarray, counts: np.ndarray, left_out: np.ndarray | None) -> None:
    """Keep, in each row of ``logs`` (in place), only its weighed pairs with the most
    infinite factors (``counts``: the columns of zero bandwidth a pair is equal in),
    the row's left-out key not counted."""
    if left_out is not None:
        at = np.flatnonzero(left_out >= 0)
        logs[at, left_out[at]] = -np.inf
    counts = np.where(np.isfinite(logs), counts, -1)
    logs[counts < counts.max(axis=1, keepdims=True)] = -np.inf


def _differences(problem: SumProblem, rows: slice) -> list[np.ndarray]:
    """``(q − k) / h`` of the continuous columns, ``(rows, m)`` each: the difference first."""
    q, k, h = problem.queries[rows], problem.keys, problem.bandwidth
    return [(q[:, j, None] - k[None, :, j]) / h[j] for j in problem.column_kinds()[0]]


def _moments(
    shares: np.ndarray, problem: SumProblem, rows: slice,
    reference: tuple[np.ndarray, np.ndarray],
) -> np.ndarray:  # fmt: skip
    """``(rows, width)``: ``Σ w [1, r, δ, δδᵀ, δrᵀ]`` about each row's reference, ``δ``
    the keys' differences from its key in each column's unit (its bandwidth, or 1 for a
    categorical column's codes) and ``r`` the values' from its values."""
    k, v = problem.keys, problem.values
    _, _, d, p = problem.sizes
    units = problem.units[rows] if problem.varying else problem.units[None, :]
    about_k, about_v = reference[0][rows], reference[1][rows]
    delta = [(k[None, :, a] - about_k[:, a, None]) / units[:, a, None] for a in range(d)]
    response = [v[None, :, c] - about_v[:, c, None] for c in range(p)]
    n = shares.shape[0]
    second, cross = np.empty((n, d, d)), np.empty((n, d, p))
    for a in range(d):
        moved = shares * delta[a]
        for b in range(a, d):
            second[:, a, b] = second[:, b, a] = np.vecdot(moved, delta[b])
        for c in range(p):
            cross[:, a, c] = np.vecdot(moved, response[c])
    total = shares.sum(axis=1, keepdims=True)
    return np.concatenate(
        [total, _dots(shares, response), _dots(shares, delta), second.reshape(n, d * d),
         cross.reshape(n, d * p)], axis=1,
    )  # fmt: skip


def _dots(shares: np.ndarray, arrays: list[np.ndarray]) -> np.ndarray:
    """``(n, len(arrays))``: each row's ``Σ_k shares · array``."""
    found = np.empty((shares.shape[0], len(arrays)))
    for c, array in enumerate(arrays):
        found[:, c] = np.vecdot(shares, array)
    return found
