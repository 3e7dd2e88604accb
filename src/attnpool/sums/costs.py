"""What a problem costs, as the planner's rules (:mod:`attnpool.sums.plan`) weigh it:
the numbers a pair carries, a compiled block's width per pair, and the evaluations a
host search is expected to take. ``f``: the planner's
:class:`~attnpool.sums.plan.Facts` (what they read of it: :class:`Shape`)."""

from __future__ import annotations

import math
from typing import Protocol

__all__ = ["Shape", "block_width", "pair_width", "search_evaluations", "work_width"]


class Shape(Protocol):
    """What the costs read of a problem: its local polynomial's degree, its columns and
    its responses."""

    @property
    def degree(self) -> int: ...
    @property
    def d(self) -> int: ...
    @property
    def outputs(self) -> int: ...


def pair_width(degree: int, d: int, outputs: int) -> int:
    """Numbers a pair carries: one per response, a local polynomial's moments (the
    squared count of its monomials, ``(1 + d)²`` for local linear) per response."""
    return outputs if degree == 0 else math.comb(d + degree, degree) ** 2 * outputs


def work_width(f: Shape) -> int:
    """Numbers a pair of ``f`` carries (:func:`pair_width`)."""
    return pair_width(f.degree, f.d, f.outputs)


def block_width(f: Shape) -> int:
    """Numbers a compiled block holds per pair: its weight (local constant: the values
    are a product with the weights), or the local polynomial's moments."""
    return 1 if f.degree == 0 else work_width(f)


def search_evaluations(f: Shape) -> int:
    """Objective evaluations a host search is expected to take, the grid's included
    (Brent's ~40 in one column; L-BFGS's on forward differences in several, measured:
    Nadaraya–Watson 25–110 in two to five columns, local linear 25–450), tripled for
    local linear, whose evaluations also cost more: a unit of its cost."""
    return (40 if f.d == 1 else 20 * (f.d + 1)) * (1 + 2 * f.degree)
