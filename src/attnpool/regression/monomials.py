"""What every engine of a local polynomial fit shares: the monomial basis, the
derivatives of its monomials, the checked options (degree, derivative, kernel) with the
derivatives asked for, and the result's shape — the NumPy engine (:mod:`.polynomial`),
the compiled one (:mod:`.polynomial_program`) and Dask's
(:mod:`attnpool.distributed.polynomial`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .. import kernels
from .._support.hints import KernelSpec
from .._support.units import units_beyond

__all__ = [
    "ORDINARY_BANDWIDTHS",
    "SINGULAR",
    "checked_options",
    "derivative_rows",
    "derivatives_in_data_units",
    "monomials",
    "shaped",
    "span_units",
]

#: The scaled Gram matrix is taken as singular below this eigenvalue ratio.
SINGULAR = 1e-13


def monomials(d: int, degree: int) -> list[tuple[int, ...]]:
    """The exponents ``α`` of the monomials ``z^α`` of ``d`` variables up to ``degree``,
    by total degree (the constant first): ``C(d + degree, degree)`` of them."""
    return list(_monomials(d, degree))


@functools.cache
def _monomials(d: int, degree: int) -> tuple[tuple[int, ...], ...]:
    def within(columns: int, budget: int) -> Iterator[tuple[int, ...]]:
        if columns == 0:
            yield ()
            return
        for first in range(budget + 1):
            for rest in within(columns - 1, budget - first):
                yield (first, *rest)

    return tuple(sorted(within(d, degree), key=lambda a: (sum(a), tuple(-e for e in a))))


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


def checked_options(
    degree: int, derivative: int, kernel: KernelSpec, d: int
) -> tuple[kernels.Kernel, list[tuple[int, ...]]]:
    """``(kernel record, orders)``: the checked degree, derivative and kernel of a fit in
    ``d`` columns, and the derivatives' multi-indices (the Hessian's entries row by row)."""
    for value, name in ((degree, "degree"), (derivative, "derivative")):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ValueError(f"{name}: expected a non-negative integer; received {value!r}")
    if derivative > degree:
        raise ValueError(f"derivative: expected at most degree={degree}; received {derivative}")
    record = kernels.get(kernel)
    if record.similarity != "distance" or record.base is not None:
        raise ValueError(
            f"kernel: expected a non-negative distance kernel; received {record.name!r}"
        )
    if d > 1 and degree > 2:
        raise ValueError(f"degree: expected at most 2 in {d} columns; received {degree}")
    orders = [o for o in monomials(d, derivative) if sum(o) == derivative]
    if d > 1 and derivative == 2:
        orders = [tuple(int(i == a) + int(i == b) for i in range(d))
                  for a in range(d) for b in range(d)]  # fmt: skip
    return record, orders


def shaped(fit: Any, d: int, derivative: int, flat: bool) -> Any:
    """The estimates ``(k, len(orders), p)`` in :func:`local_polynomial`'s shape."""
    if d == 1 or derivative == 0:
        fit = fit[:, 0]
    elif derivative == 2:
        fit = fit.reshape(fit.shape[0], d, d, -1)
    return fit[..., 0] if flat else fit


#: Lengths within which a fit runs in the data's own units; beyond, each column in a
#: power-of-two unit of its length (``(x − q)^k`` of x ~ 1e±200 leave the float range).
ORDINARY_BANDWIDTHS = (2.0**-64, 2.0**64)


def span_units(span: np.ndarray, h: Any) -> np.ndarray | None:
    """``(d,)`` powers of two for the columns whose ``span`` of training rows — the scale
    of the offsets ``x − q`` the moments raise to powers at queries among them (the
    bandwidth's, for a column of one value) — lies beyond :data:`ORDINARY_BANDWIDTHS`;
    None where none does. (Not the queries': one far beyond the rows would move the
    unit of every other.)"""
    span = np.asarray(span, np.float64)
    return units_beyond(np.where(span > 0, span, np.asarray(h, np.float64)), ORDINARY_BANDWIDTHS)


def derivatives_in_data_units(fit: Any, unit: np.ndarray | None, orders: list[Any]) -> Any:
    """A fit ``(k, len(orders), p)`` found in ``unit``s, in the data's: a derivative of
    order ``o`` is in units of ``Π unit^−o``."""
    if unit is None:
        return fit
    with np.errstate(over="ignore", under="ignore"):
        return fit * np.array([np.prod(unit ** -np.array(o, float)) for o in orders])[:, None]
