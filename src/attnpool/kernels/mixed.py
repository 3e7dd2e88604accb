"""Densities of mixed data in NumPy: the product kernel of continuous and categorical
columns, its convolution and its distribution function, pair by pair in the log domain
(the joint density's plain sums are a :class:`~attnpool.sums.problem.SumProblem` of the
columns' var types, :func:`attnpool.density.methods.mixed_problem`; these forms, and the
conditionals' products of them, are summed here).

Continuous columns take the density's kernel (radial over them, or a product), scaled by
``h``; categorical ones the kernels statsmodels and R's np use, each a probability over
the column's levels (the values observed in the training sample):

- unordered (``"u"``), Aitchison–Aitken: ``1 − λ`` for the same level, ``λ / (c − 1)``
  for each of the ``c − 1`` others;
- ordered (``"o"``), Wang–van Ryzin: ``1 − λ`` for the same level, ``(1 − λ)/2 ·
  λ^|a − b|`` otherwise.

The *convolution* ``Σ_l L(l, a) L(l, b)`` (the Gaussian's: ``φ(Δ / √2h) / √2h``) sums
over the levels, as least-squares cross-validation's ``∫ f̂²`` needs; the *distribution*
of a categorical column sums the kernel over the levels ``l ≤ x`` (for unordered columns
too, in the levels' sorted order, as np and statsmodels do).
"""

from __future__ import annotations

import math

import numpy as np

from .. import kernels as _kernels
from ..sums.local_model import log_categorical
from ..sums.pair_weights import log_weights
from .calculus import kernel_integrals, log_kernel_cdf

__all__ = ["MixedColumns", "log_pair_terms", "log_ratios", "log_sums"]


class MixedColumns:
    """The columns of a mixed sample: ``var_type``, each categorical column's levels, the
    kernel as given and the continuous columns' kernel (resolved for their number)."""

    def __init__(self, x_train: np.ndarray, var_type: str, kernel):
        self.var_type = var_type
        self.continuous = [c for c, t in enumerate(var_type) if t == "c"]
        self.categorical = [c for c, t in enumerate(var_type) if t != "c"]
        self.levels = {c: np.unique(x_train[:, c]) for c in self.categorical}
        self.given = _kernels.get(kernel)
        self.kernel = _kernels.for_dimensions(self.given, len(self.continuous))


def _log_categorical(a, b, lam: float, kind: str, count: int):
    """``log L(a, b)`` of one categorical column
    (:func:`attnpool.sums.local_model.log_categorical`), ``λ = 0`` giving ``−inf`` off the
    diagonal without a warning."""
    with np.errstate(divide="ignore"):
        return log_categorical(a, b, lam, kind, count)


def _log_level_sum(a, b, lam, kind, levels, *, convolution: bool):
    """``log Σ_l L(l, a) L(l, b)`` (``convolution``) or ``log Σ_{l ≤ a} L(l, b)`` over the
    levels ``l``, for ``a (n, 1)`` and ``b (1, m)``: a table over the distinct values of
    ``a`` and of ``b`` (a few levels), gathered for every pair."""
    a_values, a_at = np.unique(a, return_inverse=True)
    b_values, b_at = np.unique(b, return_inverse=True)
    table = _log_level_table(a_values[:, None], b_values[None, :], lam, kind, levels,
                             convolution=convolution)  # fmt: skip
    return table[a_at.reshape(a.shape), b_at.reshape(b.shape)]


def _log_level_table(a, b, lam, kind, levels, *, convolution: bool):
    """:func:`_log_level_sum` term by term, for ``a (n, 1)`` and ``b (1, m)``."""
    count = levels.size
    terms = []
    for level in levels:
        if convolution:
            terms.append(_log_categorical(level, a, lam, kind, count)
                         + _log_categorical(level, b, lam, kind, count))  # fmt: skip
        else:
            below = np.where(level <= a, 0.0, -np.inf)
            terms.append(below + _log_categorical(level, b, lam, kind, count))
    stacked = np.stack(np.broadcast_arrays(*terms))
    top = np.max(stacked, axis=0)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.sum(np.exp(stacked - safe), axis=0))


def log_pair_terms(q, k, bandwidth, columns: MixedColumns, form: str = "density"):
    """``(n, m)``: the log of each pair's normalised kernel (``form="density"``), of its
    convolution (``"convolution"``, Gaussian continuous columns) or of its distribution
    function (``"cdf"``, continuous columns by :func:`attnpool.density.distribution` 's
    one-dimensional ones) — summed over the columns."""
    h = np.asarray(bandwidth, np.float64)
    cont = columns.continuous
    total = np.zeros((q.shape[0], k.shape[0]))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if cont and form == "cdf":
            name = columns.kernel.name.removesuffix("-product")
            terms = [log_kernel_cdf(name, (q[:, c, None] - k[None, :, c]) / h[c]) for c in cont]
            total = terms[0] if len(terms) == 1 and not columns.categorical else sum(terms, total)
        elif cont:
            scale = math.sqrt(2.0) if form == "convolution" else 1.0
            us = [(q[:, c, None] - k[None, :, c]) / (scale * h[c]) for c in cont]
            integral = kernel_integrals(columns.kernel, len(cont))[0]
            log_norm = math.log(integral) + sum(math.log(scale * h[c]) for c in cont)
            total = total + log_weights(us, columns.kernel) - log_norm
        for c in columns.categorical:
            a, b, lam = q[:, c, None], k[None, :, c], float(h[c])
            kind, levels = columns.var_type[c], columns.levels[c]
            if form == "density":
                total = total + _log_categorical(a, b, lam, kind, levels.size)
            else:
                total = total + _log_level_sum(a, b, lam, kind, levels,
                                               convolution=form == "convolution")  # fmt: skip
    return total


def log_sums(parts, *, leave_out=False, weights=None):
    """``(n,)``: ``log Σ_j ω_j Π_parts T(q_i, k_j)`` of the terms of :func:`log_pair_terms`
    of each part ``(q (n, ·), k (m, ·), bandwidth, columns, form)`` (a conditional
    distribution multiplies the distribution of ``y``'s columns by the density of
    ``x``'s), summed as every NumPy pair sum is
    (:func:`attnpool.sums.exact_pairs.log_row_sums`); ``leave_out``: ``q`` is ``k`` and
    each row leaves its own pair out (True), or the index of the key each row leaves out
    (an ``(n,)`` array); ``weights (m,)``: ``ω ≥ 0`` (None: ones), multiplying after the
    row's shift (as ``log ω`` they would round away beside the log terms of a tiny
    bandwidth)."""
    from ..sums.exact_pairs import log_row_sums

    n, m = parts[0][0].shape[0], parts[0][1].shape[0]
    left_out = _left_out(n, leave_out)

    def terms(rows: slice) -> np.ndarray:
        return sum(log_pair_terms(q[rows], k, h, columns, form)
                   for q, k, h, columns, form in parts)  # fmt: skip

    weights = None if weights is None else np.asarray(weights, np.float64)
    return log_row_sums(terms, n, m, weights=weights, left_out=left_out)


def log_ratios(weight_parts, value_parts, *, leave_out=False, weights=None):
    """``(n,)``: ``log(Σ_j ω_j W_ij V_ij / Σ_j ω_j W_ij)``, ``W`` and ``V`` the products of
    the terms of :func:`log_pair_terms` of ``weight_parts`` and ``value_parts`` (as
    :func:`log_sums` takes its parts): a conditional distribution, ``y``'s terms pooled
    under ``x``'s weights, each row's weights about their largest before ``y``'s terms
    join them (:func:`attnpool.sums.exact_pairs.log_row_ratios`) — a tiny ``x``
    bandwidth's log weights would round ``y``'s away. ``leave_out`` as :func:`log_sums`'s;
    ``weights (m,)``: ``ω > 0`` (None: ones). NaN where no ``x`` weight is left."""
    from ..sums.exact_pairs import log_row_ratios

    n, m = weight_parts[0][0].shape[0], weight_parts[0][1].shape[0]

    def terms(parts):
        return lambda rows: sum(log_pair_terms(q[rows], k, h, columns, form)
                                for q, k, h, columns, form in parts)  # fmt: skip

    weights = None if weights is None else np.asarray(weights, np.float64)
    return log_row_ratios(terms(weight_parts), terms(value_parts), n, m,
                          left_out=_left_out(n, leave_out), weights=weights)  # fmt: skip


def _left_out(n: int, leave_out) -> np.ndarray | None:
    """The key each of ``n`` rows leaves out: its own (``leave_out`` True), those given
    (an array), or none (False: None)."""
    if leave_out is False:
        return None
    return np.arange(n) if leave_out is True else np.asarray(leave_out)
