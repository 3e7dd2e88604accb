"""The criteria of density bandwidth selection: likelihood cross-validation's leave-one-out
log densities (:func:`loo_log_density`, by the ``fgt`` expansions for a Gaussian column:
:class:`ExpandedLikelihood`) and least squares' integrated squared error
(:func:`least_squares_criterion`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import kernels as _kernels
from .._support.hints import ArrayLike, Bandwidth, KernelSpec
from ..methods import fgt
from ..methods.loo_weights import leave_one_out_log_weights
from .methods import expansions_pay

__all__ = [
    "EXPANSION_MIN_ROWS",
    "ExpandedLikelihood",
    "by_expansions",
    "least_squares_criterion",
    "loo_log_density",
]


def loo_log_density(
    x: ArrayLike,
    bandwidth: Bandwidth,
    kernel: KernelSpec,
    var_type: str | None = None,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """``(n,)`` leave-one-out log densities ``log f̂₋ᵢ(xᵢ)`` of the sample ``x (n, d)`` in
    float64: the criterion of likelihood cross-validation, ``−inf`` for a point no other
    reaches. Sums by NumPy pairs through the sums layer (no program; mixed data by
    ``var_type``); a Gaussian sample of one column of
    :data:`EXPANSION_MIN_ROWS` points (fewer where
    :func:`attnpool.density.methods.expansions_pay`) by the ``fgt`` method's expansions,
    ``O(n)`` an evaluation (:class:`ExpandedLikelihood`); with weights, or mixed data, by
    the exact backend the planner's finishing table gives (NumPy pairs, or for a larger
    Gaussian column the ``fgt`` backend's leave-one-out sums). With observation ``weights (n,)``,
    ``f̂₋ᵢ = Σ_{j≠i} w_j K_h(xᵢ − x_j) / Σ_{j≠i} w_j``: row ``i`` is left out whole."""
    from . import mixed_columns
    from .methods import exact_normalised_log_sums, mixed_problem

    x = np.asarray(x, np.float64)
    columns, h = mixed_columns(x, kernel, bandwidth, var_type or "c" * x.shape[1])
    if weights is None and by_expansions(x, columns):
        order = np.argsort(x[:, 0], kind="stable")
        out = np.empty(x.shape[0])
        out[order] = ExpandedLikelihood(x[order]).log_densities(h)
        return out
    w = None if weights is None else np.asarray(weights, np.float64)
    problem = mixed_problem(x, x, h, columns, w, left_out=np.arange(x.shape[0]))
    sums = exact_normalised_log_sums(problem)  # (the planner's exact backend)
    others = x.shape[0] - 1 if w is None else np.sum(w) - w  # the weight left
    return np.asarray(sums - np.log(others))


def by_expansions(x: np.ndarray, columns: Any) -> bool:
    """Whether ``x``'s leave-one-out densities are summed by :class:`ExpandedLikelihood`."""
    return (
        columns.var_type == "c"
        and _kernels.is_gaussian(columns.kernel)
        and (x.shape[0] >= EXPANSION_MIN_ROWS or expansions_pay(x.shape[0] ** 2))
    )


#: Points from which a Gaussian sample of one column sums its leave-one-out densities
#: by expansions even where their compiled loop is still to be built: a search of
#: twenty-odd evaluations pays for building it.
EXPANSION_MIN_ROWS = 1000


class ExpandedLikelihood:
    """The leave-one-out log densities of a Gaussian sample ``x (n, 1)`` by the ``fgt``
    expansions (:mod:`attnpool.methods.loo_weights`), and likelihood cross-validation's
    criterion ``−(1/n) Σ_i log f̂₋ᵢ(xᵢ)`` (``__call__``): the sample sorted and centred on
    its midrange once, for the many bandwidths of a search."""

    def __init__(self, x: np.ndarray) -> None:
        from .._support.units import centred_on_keys

        self.x = np.sort(np.asarray(x, np.float64), axis=0)
        self.centred = np.ascontiguousarray(centred_on_keys(self.x, self.x)[0][:, 0])

    def log_densities(self, h: np.ndarray, tolerance: float | None = None) -> np.ndarray:
        """``(n,)``: ``log f̂₋ᵢ(xᵢ)`` of the sorted sample at bandwidth ``h (1,)``, each sum
        within ``tolerance`` (default ``fgt.TOLERANCE``) of the weight with its own term
        (:func:`attnpool.methods.loo_weights.leave_one_out_log_weights`)."""
        log_rest, normaliser = self._log_weights(h, tolerance)
        return log_rest - normaliser

    def __call__(self, h: np.ndarray, tolerance: float | None = None) -> float:
        log_rest, normaliser = self._log_weights(h, tolerance)
        # the mean log density; a NaN or an infinity among the weights makes the sum one
        mean = float(log_rest.sum()) / log_rest.shape[0] - normaliser
        return -mean if math.isfinite(mean) else math.inf

    def _log_weights(self, h: np.ndarray, tolerance: float | None) -> tuple[np.ndarray, float]:
        """``(log Σ_{j≠i} K_ij (n,), log((n − 1) h √(2π)))``."""
        n, bandwidth = self.x.shape[0], float(np.asarray(h, np.float64).reshape(-1)[0])
        log_rest = leave_one_out_log_weights(
            self.centred, 1.0 / bandwidth, tolerance or fgt.TOLERANCE, raw=self.x[:, 0]
        )
        return log_rest, math.log(math.sqrt(2 * math.pi) * bandwidth * (n - 1))

    def estimate(self, h: np.ndarray) -> float:
        """The criterion with sums to :data:`ESTIMATE_TOLERANCE` of each weight with its own
        term (a rest within ``2 · ESTIMATE_TOLERANCE / fgt.LOO_MIN_WEIGHT`` of itself, far
        closer in practice: ~1e-10 on the criterion): enough to rank a search's grid, whose
        neighbours differ by far more, for 17 × 17 terms a point instead of 23 × 19."""
        return self(h, ESTIMATE_TOLERANCE)


#: The tolerance of :meth:`ExpandedLikelihood.estimate`'s sums.
ESTIMATE_TOLERANCE = 1e-8


def least_squares_criterion(
    x: ArrayLike,
    bandwidth: Bandwidth,
    kernel: KernelSpec = "gaussian",
    var_type: str | None = None,
    weights: np.ndarray | None = None,
) -> float:
    """Least-squares cross-validation's ``∫ f̂² − (2/n) Σ_i f̂₋ᵢ(xᵢ)`` (statsmodels' and
    np's ``cv_ls``): the integrated squared error to a constant, ``∫ f̂²`` from the
    kernels' convolutions (the Gaussian's for continuous columns, sums over the levels
    for categorical ones: :mod:`attnpool.kernels.mixed`). With observation ``weights``,
    ``f̂`` weighs each row by ``w_i``, the mean over the rows is weighted alike and each
    row is left out whole. Summed by the exact backend the planner's finishing table
    gives (:func:`attnpool.density.methods.exact_normalised_log_sums`): NumPy pairs, or
    for a larger Gaussian column the ``fgt`` backend, ``O(n)`` an evaluation."""
    from ..kernels.mixed import log_sums
    from . import mixed_columns
    from .methods import exact_normalised_log_sums, mixed_problem

    x = np.asarray(x, np.float64)
    columns, h = mixed_columns(x, kernel, bandwidth, var_type or "c" * x.shape[1])
    if columns.continuous and not _kernels.is_gaussian(columns.kernel):
        raise ValueError(
            f"kernel: cv_ls integrates f̂² by the kernel's convolution, the Gaussian's; "
            f"received {columns.kernel.name!r} (use cv_ml)"
        )
    w = np.ones(x.shape[0]) if weights is None else np.asarray(weights, np.float64)
    total = float(np.sum(w))
    given = None if weights is None else w
    left_out = np.arange(x.shape[0])
    problem = mixed_problem(x, x, h, columns, given, left_out)
    if not columns.categorical:  # (the Gaussian's convolution: the Gaussian at √2 h)
        pairs = exact_normalised_log_sums(mixed_problem(x, x, math.sqrt(2) * h, columns, given))
    else:
        pairs = log_sums([(x, x, h, columns, "convolution")], weights=given)
    loo = exact_normalised_log_sums(problem)  # (both by the planner's exact backend)
    square = float(w @ np.exp(pairs - 2 * math.log(total)))
    return float(square - 2.0 * (w @ np.exp(loo - np.log(total - w))) / total)
