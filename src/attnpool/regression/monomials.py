"""The monomial basis of a local polynomial fit and the derivatives of its monomials,
shared by the NumPy engine (:mod:`.polynomial`) and the compiled one
(:mod:`.polynomial_program`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["SINGULAR", "derivative_rows", "monomials"]

#: The scaled Gram matrix is taken as singular below this eigenvalue ratio.
SINGULAR = 1e-13


def monomials(d: int, degree: int) -> list[tuple[int, ...]]:
    """The exponents ``α`` of the monomials ``z^α`` of ``d`` variables up to ``degree``,
    by total degree (the constant first)."""
    return sorted(
        (a for a in itertools.product(range(degree + 1), repeat=d) if sum(a) <= degree),
        key=lambda a: (sum(a), tuple(-e for e in a)),
    )


def derivative_rows(
    exponents: Sequence[tuple[int, ...]], orders: Sequence[tuple[int, ...]], point: Any,
    xp: Any = np,
) -> Any:  # fmt: skip
    """``(k, len(orders), B)``: ``∂^β z^α`` at ``point (k, d)`` for each order ``β`` and
    monomial ``α`` (NumPy or JAX: integer powers, whose gradients are finite at 0)."""
    zero = xp.zeros(point.shape[0], point.dtype)
    rows = []
    for beta in orders:
        row = []
        for alpha in exponents:
            if all(a >= b for a, b in zip(alpha, beta, strict=True)):
                factor = math.prod(math.factorial(a) // math.factorial(a - b)
                                   for a, b in zip(alpha, beta, strict=True))  # fmt: skip
                powers = [point[:, j] ** (a - b)
                          for j, (a, b) in enumerate(zip(alpha, beta, strict=True))]  # fmt: skip
                row.append(factor * math.prod(powers, start=xp.ones_like(zero)))
            else:
                row.append(zero)
        rows.append(xp.stack(row, axis=1))
    return xp.stack(rows, axis=1)
