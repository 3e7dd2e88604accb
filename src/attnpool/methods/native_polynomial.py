"""A local polynomial fit's sums by the compiled loop: the Gaussian on a CPU, in float64.

A fit of degree ``p`` at a query takes four passes over its keys about the heaviest
one, ``k_r`` (:mod:`attnpool.regression.polynomial_blocks` names them): the shift and
``k_r``; ``Σ w`` and ``Σ w δ`` (``δ = k − k_r``), whose ratio is the mean offset ``μ``;
the spread ``s`` about it; the moments ``Σ w z^γ`` (``|γ| ≤ 2p``) and
``Σ w z^α (y − y_r)`` (``|α| ≤ p``) of ``z = (δ − μ) / s``. The loop's local moments
(``gaussian_moments``, as :func:`.native.native_moments` returns them) are the first
three at once — ``s² = E[δ²] − μ²`` from them loses at most ``m·eps`` of itself, since
the heaviest key alone, at ``δ = 0``, carries at least ``1/m`` of the weight, so that
``s² ≥ μ²/m``; ``s`` only scales the monomials, so a relative error leaves the fit
exact —, and ``gaussian_polynomial`` sums the last: each key's monomials as products
of the previous ones (one multiplication each), far keys passed over where their
weights, times the most a monomial multiplies one by, keep what a row leaves out within
``2^−47`` of its sum.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..kernels import MATMUL_MIN_DIM
from . import compiled
from .native import (
    MOMENTS_MAX_DIMS,
    MOMENTS_MAX_VALUES,
    built_values,
    coordinates,
    moments_function,
    order_function,
    run_threads,
)
from .native_layout import Layout
from .native_signatures import SIGNATURES

__all__ = [
    "MAX_RESPONSES",
    "MAX_TERMS",
    "PolynomialSums",
    "monomial_tables",
    "native_polynomial",
    "serves",
]

#: The most monomials (of degree up to ``2p``) the loop sums, and monomials of the basis
#: times (padded) response columns (``native.c``'s ``MAX_TERMS``, ``MAX_RESPONSES``).
MAX_TERMS = 128
MAX_RESPONSES = 128

Exponents = Sequence[tuple[int, ...]]


class PolynomialSums(NamedTuple):
    """A fit's sums per query, in the loop's scaled coordinates (``x / h``); weights
    relative to the heaviest key's (1)."""

    total: np.ndarray  #: ``(n,)``: ``Σ w``
    mean: np.ndarray  #: ``(n, d)``: ``μ``, the weighted mean offset from the heaviest key
    spread: np.ndarray  #: ``(n, d)``: ``s`` (1 where it is 0 or not finite)
    gram: np.ndarray  #: ``(n, B, B)``: ``Σ w z^α z^β`` over the basis
    responses: np.ndarray  #: ``(n, B, p)``: ``Σ w z^α (y − y_r)``
    reference: np.ndarray  #: ``(n,)``: the heaviest key's row, −1 where none weighs


def serves(dims: int, values: int, terms: int, basis: int) -> bool:
    """Whether the loop sums a fit in ``dims`` columns with ``values`` responses here,
    whose moments are ``terms`` monomials (every one up to degree ``2p``), the first
    ``basis`` of them its basis: the library loads and holds the variants, and the
    tables fit its arrays."""
    if dims > MOMENTS_MAX_DIMS or values > MOMENTS_MAX_VALUES or compiled.loops() is None:
        return False
    fits = terms <= MAX_TERMS and basis * built_values(True, values) <= MAX_RESPONSES
    return fits and all(
        _function(dims, values, matmul) is not None for matmul in {False, dims >= MATMUL_MIN_DIM}
    )


def _function(dims: int, values: int, matmul: bool) -> Any:
    if moments_function(dims, values, matmul) is None:
        return None
    name = f"gaussian_polynomial_f1_d{dims}_v{built_values(True, values)}_m{int(matmul)}"
    return compiled.function(name, SIGNATURES["gaussian_polynomial"], ctypes.c_int)


@functools.cache
def monomial_tables(
    exponents: tuple[tuple[int, ...], ...], basis: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(table, gram_index)``: the loop's ``[parent, axis]`` of each monomial (monomial
    ``g`` is ``parent[g]`` times ``z[axis[g]]``) and the position of ``α + β`` for each
    pair of the basis (``(B, B)``)."""
    position = {alpha: g for g, alpha in enumerate(exponents)}
    parent, axis = [0], [0]
    for alpha in exponents[1:]:
        a = next(j for j, e in enumerate(alpha) if e)
        parent.append(position[tuple(e - (j == a) for j, e in enumerate(alpha))])
        axis.append(a)
    gram_index = np.array([[position[tuple(np.add(a, b))] for b in exponents[:basis]]
                           for a in exponents[:basis]])  # fmt: skip
    return np.array(parent + axis, np.intp), gram_index


def native_polynomial(
    queries: np.ndarray, keys: np.ndarray, values: np.ndarray, scale: np.ndarray,
    exponents: Exponents, basis: int, *, exclude_self: bool = False,
) -> PolynomialSums | None:  # fmt: skip
    """A fit's sums of ``queries (n, d)`` over ``keys (m, d)`` with responses ``values
    (m, p)``, coordinates times ``scale (d,)`` (``1 / h``): the monomials ``exponents``
    (every one up to degree ``2p``, by total degree, the constant first; the first
    ``basis`` the fit's). ``exclude_self``: query ``i`` is key ``i`` and is left out
    (leave-one-out). None where the loop does not serve it (:func:`serves`) or a sum is
    not finite (scaled coordinates beyond its range)."""
    queries, keys, values = (np.asarray(a, np.float64) for a in (queries, keys, values))
    n, d = queries.shape
    m, p = values.shape
    exponents = tuple(tuple(int(e) for e in alpha) for alpha in exponents)
    if not serves(d, p, len(exponents), basis):
        return None
    q, kt, centre = coordinates(queries, keys, np.asarray(scale, np.float64), np.float64)
    padded = built_values(True, p)
    vt = np.zeros((padded, kt.shape[1]))
    vt[:p, :m] = values.T
    layout = Layout(q, kt, m, exclude_self, compiled_order=order_function())
    vt[:, :m] = vt[:, layout.keys]
    matmul = centre is not None
    shift, ref = np.empty(n), np.empty(n, np.intp)
    moments = np.empty((n, 1 + d + d * d + padded * (1 + d)))
    run_threads(moments_function(d, p, matmul), layout, vt, m, (shift, moments, ref))
    total = moments[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        safe = np.where(total > 0, total, 1.0)[:, None]
        mean = moments[:, 1 : 1 + d] / safe
        square = np.diagonal(moments[:, 1 + d : 1 + d + d * d].reshape(n, d, d), axis1=1, axis2=2)
        spread = np.sqrt(square / safe - mean**2)
    spread = np.where((spread > 0) & np.isfinite(spread), spread, 1.0)
    table, gram_index = monomial_tables(exponents, basis)
    powers, responses = np.empty((n, len(exponents))), np.empty((n, padded * basis))
    degree = -(-sum(exponents[-1]) // 2)
    status = run_threads(
        _function(d, p, matmul), layout, vt, m,
        (shift, ref, np.ascontiguousarray(mean), 1 / spread, powers, responses),
        (len(exponents), basis, table.ctypes.data, degree),
    )  # fmt: skip
    finite = all(np.all(np.isfinite(a)) for a in (total, powers, responses))
    if any(s != 0 for s in status) or not finite:
        return None
    found = ref >= 0
    ref[found] = layout.keys[ref[found]]
    rows = layout.queries
    gram = powers[:, gram_index]
    t = responses.reshape(n, padded, basis)[:, :p].transpose(0, 2, 1)
    out = [np.empty_like(a) for a in (total, mean, spread, gram, t, ref)]
    for target, source in zip(out, (total, mean, spread, gram, t, ref), strict=True):
        target[rows] = source
    return PolynomialSums(*out)
