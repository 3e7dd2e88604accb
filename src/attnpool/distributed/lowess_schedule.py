"""``delta``'s schedule for LOWESS on Dask: which sorted rows are fitted, and the lines
between them.

In memory (:func:`attnpool.smoothers.smoother.fit_schedule`) the fitted rows are a chain:
after a fit at rank ``i`` the next is at ``max(beyond(i) − 1, last_tie(i) + 1)``, with
``beyond(i)`` the rank of the first key past ``x_i + δ`` (``n`` less the peer's
``last_but`` where none is) and ``last_tie(i)`` that of ``x_i``'s last tie, until a last
tie is the last key. Both ranks are counts over all blocks, so every row's successor is
found where its block is; the chain itself is walked block after block, each task
handing the next the rank where it continues and the last rank it fitted. A block's
rows are then fitted at its own fitted ranks and interpolated between them and the
fitted rows just outside it (:func:`attnpool.smoothers.smoother.interpolated`).
"""

from __future__ import annotations

import numpy as np

from .._support.optional import require
from ..smoothers.smoother import interpolated
from .order_statistics import tree_sum
from .sorting import SortedRows

dask = require("dask", "Dask support (attnpool.distributed)")
from dask import delayed  # noqa: E402

__all__ = ["Schedule", "fitted_ranks", "lines"]


class Schedule:
    """Per block of sorted rows: its fitted rows (delayed local indices), and the global
    ranks of the fitted rows just before and after it (``-1`` and ``n`` for none)."""

    def __init__(self, fitted: list, before: list[int], after: list[int]) -> None:
        self.fitted, self.before, self.after = fitted, before, after


def fitted_ranks(rows: SortedRows, delta: float, last_but: int) -> Schedule:
    """The fitted rows of ``delta``'s schedule over sorted ``rows``."""
    n = rows.n
    successors = []
    for block in rows.blocks:
        ends = delayed(_ends)(block, delta)
        counts = tree_sum([delayed(_at_or_below)(other, ends) for other in rows.blocks])
        successors.append(delayed(_successors)(counts, n, last_but))
    state, walked = (0, -1), []
    for successor, start, stop in zip(successors, rows.starts[:-1], rows.starts[1:], strict=True):
        step = delayed(_walk, nout=3)(successor, start, stop, state)
        walked.append(step)
        state = (step[1], step[2])
    walked = dask.persist(*walked)
    handed = dask.compute(*[(step[1], step[2]) for step in walked])
    before = [-1] + [int(last) for _, last in handed[:-1]]
    after = [int(entry) if entry < n else n for entry, _ in handed]
    return Schedule([step[0] for step in walked], before, after)


def _ends(block, delta):
    x = block[0]
    return np.stack([x + delta, x])


def _at_or_below(block, values):
    return np.searchsorted(block[0], values, side="right")


def _successors(counts, n, last_but):
    """Each row's next fitted rank, and whether its last tie is the last key (-1)."""
    beyond, through = counts
    beyond = np.where(beyond == n, n - last_but, beyond)
    return np.where(through - 1 >= n - 1, -1, np.maximum(beyond - 1, through))


def _walk(successor, start, stop, state):
    """The chain through ranks ``start`` to ``stop``: ``(fitted local indices, the rank
    where it continues (n or more: done), the last rank fitted)``."""
    entry, last = state
    fitted = []
    while start <= entry < stop:
        fitted.append(entry - start)
        last = entry
        following = int(successor[entry - start])
        entry = following if following >= 0 else np.iinfo(np.int64).max
    return np.asarray(fitted, dtype=np.int64), entry, last


def lines(rows: SortedRows, schedule: Schedule, at_fitted: list) -> list:
    """Each block's fits: its fitted rows' ``at_fitted`` (delayed, in the fitted order) and
    straight lines between them and the fitted rows just outside it."""
    owner = np.asarray(rows.starts[1:])
    out = []
    for b, block in enumerate(rows.blocks):
        ends = []
        for rank in (schedule.before[b], schedule.after[b]):
            if 0 <= rank < rows.n:
                c = int(np.searchsorted(owner, rank, side="right"))
                local = rank - rows.starts[c]
                ends.append(
                    delayed(_point)(rows.blocks[c], schedule.fitted[c], at_fitted[c], local)
                )
            else:
                ends.append(None)
        out.append(delayed(_block_lines)(block, schedule.fitted[b], at_fitted[b], *ends))
    return out


def _point(block, fitted, fits, local):
    """``(x, fit)`` of the fitted row ``local`` of a block."""
    return float(block[0][local]), float(fits[np.searchsorted(fitted, local)])


def _block_lines(block, fitted, fits, before, after):
    x = block[0]
    keys, where, values = [x], [fitted + (before is not None)], [fits]
    if before is not None:
        keys.insert(0, np.array([before[0]]))
        where.insert(0, np.array([0]))
        values.insert(0, np.array([before[1]]))
    if after is not None:
        keys.append(np.array([after[0]]))
        where.append(np.array([x.size + (before is not None)]))
        values.append(np.array([after[1]]))
    joined = interpolated(np.concatenate(keys), np.concatenate(where), np.concatenate(values))
    first = int(before is not None)
    return joined[first : first + x.size]
