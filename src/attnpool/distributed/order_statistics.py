"""Exact order statistics of numbers held in blocks, found by rounds of counting.

The ``k``-th smallest of numbers spread over blocks (the median residual of a fit, a
column's trimmed range, each query's distance to its ``k``-th nearest key) is found
without gathering them. Each wanted statistic keeps a :class:`Bracket` ``(lo, hi]`` with
``count(≤ lo) < k ≤ count(≤ hi)``; a round counts, in every block at once, the numbers
at or below :data:`THRESHOLDS` points inside it — half spread evenly over the values,
half over the float64 bit patterns, so that a bracket of any scale narrows by at least
4 bits a round — and keeps the narrowest bracket the counts allow. Once at most
:data:`GATHER` numbers lie inside, the blocks send those and the ``k``-th smallest is
picked from them; once no float64 lies strictly between ``lo`` and ``hi``, ``hi`` is it.
Either way the answer is exact; on data spread over a few orders of magnitude a couple
of rounds suffice, on any float64 data at most 16.

The functions here are the rounds' pure parts and the driver of a few statistics
(:func:`order_statistics`); :mod:`.neighbourhoods` runs the rounds for every query.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._support.optional import require
from ..smoothers.windows import first_index

dask = require("dask", "Dask support (attnpool.distributed)")
from dask import delayed  # noqa: E402

__all__ = [
    "GATHER",
    "THRESHOLDS",
    "Bracket",
    "below_sorted",
    "between_sorted",
    "distance_counts",
    "distances_between",
    "finished",
    "median",
    "narrowed",
    "order_statistics",
    "padded_runs",
    "picked",
    "smallest",
    "thresholds",
    "tree_sum",
    "trimmed_scale",
]

#: Points counted at inside each bracket per round.
THRESHOLDS = 32
#: Numbers inside a bracket from which they are sent and the answer picked among them.
GATHER = 256
_SIGN = np.int64(np.iinfo(np.int64).min)


class Bracket(NamedTuple):
    """Per wanted statistic (shape (m,) each): the ``rank``-th smallest lies in
    ``(lo, hi]``, with ``low`` numbers at or below ``lo`` and ``high`` at or below ``hi``."""

    lo: np.ndarray
    hi: np.ndarray
    low: np.ndarray
    high: np.ndarray
    rank: np.ndarray


def _ordered(values: np.ndarray) -> np.ndarray:
    """Integers in the order of the float64 ``values`` (−0 and +0 alike): their bits,
    negated for negative numbers."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    return np.where(bits >= 0, bits, -(bits & ~_SIGN))


def _floats(ordered: np.ndarray) -> np.ndarray:
    """The inverse of :func:`_ordered`."""
    bits = np.where(ordered >= 0, ordered, (-ordered) | _SIGN).astype(np.int64)
    return bits.view(np.float64)


def _gap(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The float64 values from ``lo`` up to ``hi`` (``hi ≥ lo``), which can exceed int64's
    range."""
    return _ordered(hi).astype(np.uint64) - _ordered(lo).astype(np.uint64)


def _settled(bracket: Bracket) -> np.ndarray:
    """Where no float64 lies strictly between ``lo`` and ``hi``: ``hi`` is the answer."""
    return _gap(bracket.lo, bracket.hi) <= 1


def finished(bracket: Bracket) -> bool:
    """Whether every statistic is settled or has at most :data:`GATHER` candidates."""
    return bool(np.all(_settled(bracket) | (bracket.high - bracket.low <= GATHER)))


def thresholds(bracket: Bracket) -> np.ndarray:
    """:data:`THRESHOLDS` points inside each bracket to count at: shape (m, THRESHOLDS)."""
    lo, hi = bracket.lo, bracket.hi
    half = THRESHOLDS // 2
    share = np.arange(1, half + 1) / (half + 1)
    with np.errstate(over="ignore", invalid="ignore"):
        even = lo[:, None] + share * (hi - lo)[:, None]
    steps = _gap(lo, hi)[:, None] // np.uint64(half + 1) * np.arange(1, half + 1, dtype=np.uint64)
    bitwise = _floats((_ordered(lo).astype(np.uint64)[:, None] + steps).astype(np.int64))
    points = np.concatenate([even, bitwise], axis=1)
    inside = np.isfinite(points) & (points > lo[:, None]) & (points < hi[:, None])
    return np.where(inside, points, hi[:, None])


def narrowed(bracket: Bracket, points: np.ndarray, counts: np.ndarray) -> Bracket:
    """The narrowest brackets that the ``counts`` (m, T) of numbers at or below
    ``points`` (m, T) allow."""
    below = counts < bracket.rank[:, None]
    low_at = np.where(below, points, -np.inf).argmax(axis=1)
    high_at = np.where(below, np.inf, points).argmin(axis=1)
    rows = np.arange(points.shape[0])
    low_point, high_point = points[rows, low_at], points[rows, high_at]
    raise_low = below[rows, low_at] & (low_point > bracket.lo)
    lower_high = ~below[rows, high_at] & (high_point < bracket.hi)
    return Bracket(
        np.where(raise_low, low_point, bracket.lo),
        np.where(lower_high, high_point, bracket.hi),
        np.where(raise_low, counts[rows, low_at], bracket.low),
        np.where(lower_high, counts[rows, high_at], bracket.high),
        bracket.rank,
    )


def padded_runs(values: np.ndarray, start: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """``values[start_i:stop_i]`` for each row (at most :data:`GATHER` long), padded with
    infinity: shape (m, the longest run)."""
    index = start[:, None] + np.arange(max(1, int(np.max(stop - start, initial=0))))
    inside = index < stop[:, None]
    if values.shape[0] == 0:
        return np.full(index.shape, np.inf)
    return np.where(inside, values[np.minimum(index, values.shape[0] - 1)], np.inf)


def picked(bracket: Bracket, candidates: np.ndarray) -> np.ndarray:
    """The answers: ``hi`` where settled, else the ``(rank − low)``-th smallest of each
    row's ``candidates`` (m, w), the numbers inside its bracket padded with infinity."""
    settled = _settled(bracket) | (bracket.high - bracket.low > GATHER)
    place = np.clip(bracket.rank - bracket.low - 1, 0, candidates.shape[1] - 1)
    ordered = np.sort(candidates, axis=1)
    return np.where(settled, bracket.hi, ordered[np.arange(place.shape[0]), place])


def smallest(a: np.ndarray, b: np.ndarray, count: int = GATHER) -> np.ndarray:
    """The ``count`` smallest of each row of ``a`` and ``b`` together (m, ≤ count)."""
    both = np.concatenate([a, b], axis=1)
    if both.shape[1] <= count:
        return both
    return np.partition(both, count - 1, axis=1)[:, :count]


def below_sorted(values: np.ndarray, points: np.ndarray) -> np.ndarray:
    """How many of the sorted ``values`` are at or below each of ``points`` (any shape)."""
    return np.searchsorted(values, points, side="right")


def between_sorted(values: np.ndarray, bracket: Bracket) -> np.ndarray:
    """The sorted ``values`` inside each bracket, padded: (m, ≤ GATHER)."""
    start = np.searchsorted(values, bracket.lo, side="right")
    stop = np.searchsorted(values, bracket.hi, side="right")
    return padded_runs(values, start, np.minimum(stop, start + GATHER))


def distance_counts(keys: np.ndarray, queries: np.ndarray, points: np.ndarray) -> np.ndarray:
    """How many sorted ``keys`` (n,) lie within each of ``points`` (m, T) of each query
    (m,), distance as the fit computes it, ``|fl(x − q)|`` (monotone in ``x``, so each
    side is a run of the keys found by bisection). Shape (m, T)."""
    m, count = points.shape
    right, left = _sides(keys, np.repeat(queries, count), points.ravel())
    return (right - left).reshape(m, count)


def _sides(keys, q, t):
    """``(right, left)``: the keys within ``t`` of ``q`` are ``keys[left:right]``. Each end
    is searched for at ``q ± t`` with NumPy's sorted search and then settled by bisection
    over the few keys whose rounded distance could fall either side of ``t``."""
    n = keys.shape[0]
    split = np.searchsorted(keys, q, side="left")  # keys[:split] < q ≤ keys[split:]
    margin = 4.0 * np.finfo(float).eps * (np.abs(q) + np.abs(t)) + np.finfo(float).tiny
    low = np.clip(np.searchsorted(keys, q + t - margin, side="left"), split, n)
    high = np.clip(np.searchsorted(keys, q + t + margin, side="right"), low, n)
    right = first_index(lambda rows, j: keys[j] - q[rows] > t[rows], low, high)
    low = np.clip(np.searchsorted(keys, q - t - margin, side="left"), 0, split)
    high = np.clip(np.searchsorted(keys, q - t + margin, side="right"), low, split)
    left = first_index(lambda rows, j: q[rows] - keys[j] <= t[rows], low, high)
    return right, left


def distances_between(keys: np.ndarray, queries: np.ndarray, bracket: Bracket) -> np.ndarray:
    """The distances ``|fl(x − q)|`` of the sorted ``keys`` inside each query's bracket,
    padded: (m, ≤ 2 GATHER)."""
    outer_right, outer_left = _sides(keys, queries, bracket.hi)
    inner_right, inner_left = _sides(keys, queries, bracket.lo)
    right = padded_runs(keys, inner_right, np.minimum(outer_right, inner_right + GATHER))
    left = padded_runs(keys, outer_left, np.minimum(inner_left, outer_left + GATHER))
    q = queries[:, None]
    return np.concatenate([right - q, np.where(np.isfinite(left), q - left, np.inf)], axis=1)


def tree_sum(items: list, add=None):
    """The sum of Dask ``items`` (delayed, non-empty), added pairwise in a tree."""
    add = add or _add
    while len(items) > 1:
        pairs = [items[i : i + 2] for i in range(0, len(items), 2)]
        items = [delayed(add)(*pair) if len(pair) == 2 else pair[0] for pair in pairs]
    return items[0]


def _add(a, b):
    if isinstance(a, tuple):
        return tuple(_add(x, y) for x, y in zip(a, b, strict=True))
    return a + b


def order_statistics(blocks: list, ranks) -> np.ndarray:
    """The ``ranks``-th smallest (1-based) of the numbers in ``blocks`` (delayed 1-D
    arrays), exactly: rounds of counting (module docstring). Shape (len(ranks),)."""
    ranks = np.asarray(ranks, dtype=np.int64)
    ordered = dask.persist(*[delayed(np.sort)(block) for block in blocks])
    ends = [end for end in dask.compute(*[delayed(_ends)(block) for block in ordered]) if end]
    low, high = min(end[0] for end in ends), max(end[1] for end in ends)
    total = sum(end[2] for end in ends)
    bracket = Bracket(np.full(ranks.shape, np.nextafter(low, -np.inf)), np.full(ranks.shape, high),
                      np.zeros_like(ranks), np.full(ranks.shape, total), ranks)  # fmt: skip
    while not finished(bracket):
        points = thresholds(bracket)
        counts = tree_sum([delayed(below_sorted)(block, points) for block in ordered])
        bracket = narrowed(bracket, points, counts.compute())
    candidates = tree_sum([delayed(between_sorted)(block, bracket) for block in ordered],
                          smallest)  # fmt: skip
    return picked(bracket, candidates.compute())


def _ends(values: np.ndarray) -> tuple[float, float, int] | None:
    return (float(values[0]), float(values[-1]), values.shape[0]) if values.shape[0] else None


def median(blocks: list, n: int) -> float:
    """The median of the ``n`` numbers in ``blocks``, as :func:`numpy.median` gives it
    (the mean of the two middle ones for even ``n``)."""
    middle = order_statistics(blocks, [(n + 1) // 2, n // 2 + 1])
    return float(np.mean(middle))


def trimmed_scale(blocks: list, n: int, d: int, low: np.ndarray) -> np.ndarray:
    """:func:`attnpool.smoothers.neighbourhoods.trimmed_scale` of the rows in ``blocks``
    (delayed (n_b, d) arrays, whose columns' least values are ``low``): each column's
    standard deviation without its ``⌈0.1 n⌉`` smallest and largest values, from their
    order statistics and two rounds of sums."""
    trim = math.ceil(0.1 * n)
    kept = n - 2 * trim
    whole = _deviation(blocks, d, None, n, low)
    if kept < 2:
        scale = np.zeros(d)
    else:
        ends = [order_statistics([delayed(_column)(b, c) for b in blocks], [trim + 1, n - trim])
                for c in range(d)]  # fmt: skip
        cut = (np.array(ends), trim, n)
        scale = _deviation(blocks, d, cut, kept, cut[0][:, 0])
    scale = np.where(scale > 0, scale, whole)
    return np.where(scale > 0, scale, 1.0)


def _column(rows: np.ndarray, c: int) -> np.ndarray:
    return rows[:, c]


def _deviation(blocks, d, cut, count, shift):
    """Each column's standard deviation (``count − 1``) over all rows (``cut`` None) or
    over the sorted ranks kept between the order statistics ``cut = (ends (d, 2), trim,
    n)``: the values strictly between the two ends, and as many of each end as the kept
    ranks hold. The columns less ``shift`` (their least values), as in memory."""
    if count < 2:
        return np.zeros(d)
    first = tree_sum([delayed(_kept_sums)(b, cut, shift, None) for b in blocks]).compute()
    mean = _kept_total(first, cut, count, shift, None) / count
    second = tree_sum([delayed(_kept_sums)(b, cut, shift, mean) for b in blocks]).compute()
    return np.sqrt(_kept_total(second, cut, count, shift, mean) / (count - 1))


def _kept_sums(rows, cut, shift, mean):
    """Per column: Σ (x − shift − mean)^(1 or 2) of the kept middle values, and the counts
    at or below the lower end and below the upper end."""
    if cut is None:
        middle = np.ones(rows.shape, dtype=bool)
        at_low = below_high = np.zeros(rows.shape[1])
    else:
        low, high = cut[0][:, 0], cut[0][:, 1]
        middle = (rows > low) & (rows < high)
        at_low, below_high = np.sum(rows <= low, axis=0), np.sum(rows < high, axis=0)
    moved = rows - shift
    terms = moved if mean is None else (moved - mean) ** 2
    return np.sum(np.where(middle, terms, 0.0), axis=0), at_low, below_high


def _kept_total(sums, cut, count, shift, mean):
    """The sums of :func:`_kept_sums` with the ends' kept copies added."""
    total, at_low, below_high = sums
    if cut is None:
        return total
    (low, high), trim, n = cut[0].T, cut[1], cut[2]
    copies_low = np.where(low < high, at_low - trim, count)
    copies_high = np.where(low < high, n - trim - below_high, 0)
    low, high = low - shift, high - shift
    if mean is None:
        return total + copies_low * low + copies_high * high
    return total + copies_low * (low - mean) ** 2 + copies_high * (high - mean) ** 2
