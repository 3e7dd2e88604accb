"""Conditional densities and distributions of mixed data, their bandwidths, and the
estimator: ``f̂(y | x)`` is attention pooling of ``y``'s kernel with ``x``'s weights,

.. math:: \\hat f(y \\mid x) = \\frac{\\sum_i K_h(x, x_i) \\, L_b(y, y_i)}{\\sum_i K_h(x, x_i)},
          \\qquad \\hat F(y \\mid x) = \\frac{\\sum_i K_h(x, x_i) \\, G_b(y, y_i)}
          {\\sum_i K_h(x, x_i)}

(``L``: the normalised product kernel of ``y``'s columns, ``G`` its distribution), for
continuous, ordered and unordered columns on either side (statsmodels'
``KDEMultivariateConditional``, R np's ``npcdens``/``npcdist``), summed in the log domain
(:mod:`attnpool.kernels.mixed`). Bandwidths (:mod:`.conditional_selection`) by
``normal_reference`` or by cross-validation of the leave-one-out conditional density:
``cv_ml`` maximises ``Σ_l log f̂₋ₗ(y_l | x_l)``; ``cv_ls`` minimises

.. math:: \\frac1n \\sum_l \\Big[\\int \\hat f_{-l}(y \\mid x_l)^2 dy
          - 2 \\hat f_{-l}(y_l \\mid x_l)\\Big], \\qquad
          \\int \\hat f_{-l}(y \\mid x_l)^2 dy
          = \\frac{w_l^\\top C \\, w_l}{(\\mathbf 1^\\top w_l)^2}

with ``w_l`` the weights ``K_h(x_l, x_i)`` of the other points and ``C`` the matrix of
``y``'s kernel convolutions: ``O(n³)`` by matrix products (``O(n²)`` memory).
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np

from .. import kernels as _kernels
from .._support.hints import ArrayLike, Bandwidth, KernelSpec
from .._support.validation import check_points
from ..kernels.mixed import MixedColumns, log_pair_terms, log_ratios
from ..sums.empty_policy import EmptyNeighbourhoodWarning
from . import mixed_columns

__all__ = [
    "PRECISE_LOG",
    "conditional_cdf",
    "conditional_density",
    "conditional_log_density",
    "sides",
]

#: Largest ``|log f̂(x, y)| + |log f̂(x)|`` whose difference :func:`conditional_density`
#: takes: it carries ``2^−53`` of it (here ``6e−14``) into the ratio; rows beyond are
#: pooled (:func:`attnpool.kernels.mixed.log_ratios`).
PRECISE_LOG = 512.0


def sides(
    x: Any,
    y: Any,
    x_var_type: Any,
    y_var_type: Any,
    kernel: Any,
    x_bandwidth: Any,
    y_bandwidth: Any,
) -> Sides:
    """Checked :class:`Sides`: ``(x, y, x side, y side)``, each side ``(columns,
    bandwidths)``."""
    x = np.asarray(check_points(x, "x_train"), np.float64)
    y = np.asarray(check_points(y, "y_train"), np.float64)
    if y.shape[0] != x.shape[0]:
        raise ValueError(
            f"y_train: expected one row per row of x_train ({x.shape[0]}); received {y.shape}"
        )
    x_side = mixed_columns(x, kernel, x_bandwidth, x_var_type or "c" * x.shape[1])
    y_side = mixed_columns(y, kernel, y_bandwidth, y_var_type or "c" * y.shape[1])
    return Sides(x, y, x_side, y_side)


class Sides(NamedTuple):
    """A conditional's checked sample: ``x (n, d)``, ``y (n, e)`` and each side's
    ``(columns, bandwidths)`` (:func:`attnpool.density.mixed_columns`)."""

    x: np.ndarray
    y: np.ndarray
    x_side: tuple[Any, np.ndarray]
    y_side: tuple[Any, np.ndarray]


def _queries(x: Any, y: Any, x_query: Any, y_query: Any) -> Any:
    qx = np.asarray(check_points(x_query, "x_query", dims=x.shape[1]), np.float64)
    qy = np.asarray(check_points(y_query, "y_query", dims=y.shape[1]), np.float64)
    if qy.shape[0] != qx.shape[0]:
        raise ValueError(
            f"y_query: expected one row per row of x_query ({qx.shape[0]}); received {qy.shape}"
        )
    return qx, qy


def conditional_density(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    y_query: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    bandwidth: Bandwidth = 1.0,
    y_bandwidth: Bandwidth = 1.0,
    x_var_type: str | None = None,
    y_var_type: str | None = None,
) -> np.ndarray:
    """``f̂(y | x)`` at the pairs ``(x_query[i], y_query[i])``: the attention pooling of the
    values ``K_b(y − y_i)`` with weights ``K_h(x − x_i)``,

    .. math:: \\hat f(y \\mid x) = \\frac{\\sum_i K((x - x_i)/h) \\, K((y - y_i)/b)}
              {\\prod_j b_j \\int K \\; \\sum_i K((x - x_i)/h)}

    in the log domain (:func:`log_conditional`): the joint and ``x``'s density by the sums
    layer's exact backends, or where their logarithms are too large for their difference
    to keep the ratio's digits (a tiny bandwidth), ``y``'s terms pooled under ``x``'s
    weights taken about their largest: ``(k,)`` in float64, NaN where no training point
    reaches ``x`` (a compact kernel). ``x``'s kernel acts on ``x``'s continuous columns,
    ``y``'s on ``y``'s (radial over each side's, or a ``-product`` over each column);
    ``bandwidth`` is ``x``'s, ``y_bandwidth`` ``y``'s; categorical columns by
    ``x_var_type``, ``y_var_type`` (as :func:`conditional_log_density`).

    Parameters
    ----------
    x_train : array of shape (n,) or (n, d)
    y_train : array of shape (n,) or (n, e)
    x_query : array of shape (k,) or (k, d)
    y_query : array of shape (k,) or (k, e)
    kernel : str or Kernel
    bandwidth : float or array of shape (d,)
        ``x``'s.
    y_bandwidth : float or array of shape (e,)
        ``y``'s.
    x_var_type, y_var_type : str, optional

    Returns
    -------
    ndarray of shape (k,)

    References
    ----------
    Hall, P., Racine, J. & Li, Q. (2004). Cross-validation and the estimation of
    conditional probability densities. *JASA* 99(468), 1015–1026.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.conditional_density(data.x_train, data.y_train, [2.0], [3.5], bandwidth=0.5,
    ...                              y_bandwidth=0.5).round(3)   # f̂(y = 3.5 | x = 2)
    array([0.526])
    """
    return np.asarray(np.exp(conditional_log_density(
        x_train, y_train, x_query, y_query, bandwidth=bandwidth, y_bandwidth=y_bandwidth,
        kernel=kernel, x_var_type=x_var_type, y_var_type=y_var_type,
    )))  # fmt: skip


def _log_pooled(sample: Sides, x_query: Any, y_query: Any, y_form: str) -> np.ndarray:
    """:func:`log_conditional` of the checked ``sample`` at the pairs ``(x_query[i],
    y_query[i])``, where every ``x`` weight underflowed (``x``'s bandwidth vanishing) its
    nearest-key limit, NaN with a warning where no training point reaches ``x``."""
    x, y, (cx, _), _ = sample
    qx, qy = _queries(x, y, x_query, y_query)
    out = log_conditional(sample, qx, qy, y_form)
    hollow = np.flatnonzero(np.isnan(out))  # no x weight: 0 / 0
    if hollow.size and cx.continuous and not cx.kernel.compact:
        out[hollow] = _nearest_limit(sample, qx[hollow], qy[hollow], y_form)
        hollow = hollow[np.isnan(out[hollow])]
    if hollow.size:
        warnings.warn(
            f"{hollow.size} of {len(out)} queries have no training point within reach of "
            "their x (a compact kernel's support, or an unseen level at λ = 0): their "
            "conditional density is NaN",
            EmptyNeighbourhoodWarning,
            stacklevel=3,
        )
    return np.asarray(out)


def log_conditional(
    sample: Sides, qx: np.ndarray, qy: np.ndarray, y_form: str = "density",
    left_out: np.ndarray | None = None, weights: np.ndarray | None = None,
) -> np.ndarray:  # fmt: skip
    """``(k,)``: ``log Σ_i ω_i K_h(x, x_i) T_b(y, y_i) − log Σ_i ω_i K_h(x, x_i)`` of the
    checked ``sample`` at the pairs ``(qx[i], qy[i])``, ``T`` the ``y_form`` of ``y``'s
    kernel (:func:`attnpool.kernels.mixed.log_pair_terms`); ``left_out (k,)``: the
    training row each pair leaves out (leave-one-out), or None; ``weights (n,)``: the
    training rows' ``ω > 0`` (None: ones). NaN where no ``x`` weight is left.

    A density is the joint's and ``x``'s log densities (:func:`_by_densities`: the sums
    layer's exact backends); the rows they cannot give — a distribution function, a joint
    kernel that is no product of the sides', logarithms too large for their difference —
    are pooled pair by pair, ``x``'s weights about their largest before ``y``'s terms join
    them (:func:`attnpool.kernels.mixed.log_ratios`)."""
    x, y, (cx, hx), (cy, hy) = sample
    out = np.full(qx.shape[0], np.nan)
    if y_form == "density":
        out = _by_densities(sample, qx, qy, left_out, weights)
    pooled = np.flatnonzero(np.isnan(out))
    if pooled.size:
        x_terms, y_terms = (qx[pooled], x, hx, cx, "density"), (qy[pooled], y, hy, cy, y_form)
        leave_out = False if left_out is None else left_out[pooled]
        out[pooled] = log_ratios([x_terms], [y_terms], leave_out=leave_out, weights=weights)
    return out


def _by_densities(
    sample: Sides, qx: Any, qy: Any, left_out: Any, weights: Any = None
) -> np.ndarray:
    """``log f̂(x, y) − log f̂(x)`` by the sums layer's exact backends
    (:func:`attnpool.density.methods.exact_normalised_log_sums`); NaN where that is not
    the conditional to ``2⁻⁵³·PRECISE_LOG`` — no ``x`` weight, a non-finite joint, a
    joint kernel that is no product of ``x``'s and ``y``'s (:func:`_joint_kernel`), or
    logarithms beyond :data:`PRECISE_LOG` — and everywhere where the planner gives the
    joint NumPy pairs (the pooled form's one pass over them is cheaper than two)."""
    from ..methods.backends.exact import exact_plan
    from .methods import exact_normalised_log_sums, mixed_problem

    x, y, (cx, hx), (cy, hy) = sample
    kernel = _joint_kernel(cx, cy)
    if kernel is None:
        return np.full(qx.shape[0], np.nan)
    both = np.hstack([x, y])
    joint_columns = MixedColumns(both, cx.var_type + cy.var_type, kernel)
    joint_problem = mixed_problem(np.hstack([qx, qy]), both, np.concatenate([hx, hy]),
                                  joint_columns, weights, left_out)  # fmt: skip
    if exact_plan(joint_problem).by_numpy:  # (one pooled pass over the pairs costs less)
        return np.full(qx.shape[0], np.nan)
    joint = exact_normalised_log_sums(joint_problem)
    marginal = exact_normalised_log_sums(mixed_problem(qx, x, hx, cx, weights, left_out))
    with np.errstate(invalid="ignore"):
        out = joint - marginal
        out[~np.isfinite(out) | (np.abs(joint) + np.abs(marginal) > PRECISE_LOG)] = np.nan
    return np.asarray(out)


def _joint_kernel(cx: MixedColumns, cy: MixedColumns) -> _kernels.Kernel | None:
    """The kernel over ``x``'s and ``y``'s continuous columns together that is the product
    of ``x``'s kernel and ``y``'s: the kernel given where one side has none, or where it
    is a product (the Gaussian's is radial too); a radial kernel's ``-product`` twin for
    one column each; else None."""
    given, counts = cx.given, (len(cx.continuous), len(cy.continuous))
    if min(counts) == 0 or given.product or _kernels.is_gaussian(given):
        return given
    twin = f"{given.name}-product"
    if counts != (1, 1) or not _kernels.is_builtin(given) or twin not in _kernels.names():
        return None
    product = _kernels.get(twin)
    return product if _kernels.is_builtin(product) else None


def _nearest_limit(sample: Sides, qx: Any, qy: Any, y_form: str) -> np.ndarray:
    """The limit of vanishing ``x`` bandwidths: ``y``'s terms pooled over the training
    points nearest each query in scaled distance over the continuous columns
    (:func:`attnpool.sums.nearest.closest`: no overflow, ties kept), ties weighted by
    their categorical kernel — as pooling's nearest-key limit, for the conditional's
    weights."""
    from copy import copy

    from scipy.special import logsumexp

    from ..sums.nearest import closest

    x, y, (cx, hx), (cy, hy) = sample
    cont = cx.continuous
    categorical = copy(cx)
    categorical.continuous = []
    log_l = log_pair_terms(qx, x, hx, categorical, "density")  # the categorical factors
    nearest = closest(qx[:, cont], x[:, cont], hx[cont], cx.kernel.norm, np.isfinite(log_l))
    share = np.where(nearest, log_l, -np.inf)
    with np.errstate(invalid="ignore"):
        joint = logsumexp(share + log_pair_terms(qy, y, hy, cy, y_form), axis=1)
        return np.asarray(joint - logsumexp(share, axis=1))


def conditional_log_density(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    y_query: ArrayLike,
    *,
    bandwidth: Bandwidth,
    y_bandwidth: Bandwidth,
    kernel: KernelSpec = "gaussian",
    x_var_type: str | None = None,
    y_var_type: str | None = None,
) -> np.ndarray:
    """``log f̂(y | x)`` at the pairs ``(x_query[i], y_query[i])``, ``(k,)`` in float64
    (NaN, with an :class:`EmptyNeighbourhoodWarning`, where no training point reaches
    ``x``; where every ``x`` weight underflows — a vanishing bandwidth — the limit: ``y``'s
    kernel of the nearest training points): ``var_type`` letters per side as
    :func:`attnpool.log_density` takes them; ``bandwidth`` is ``x``'s, ``y_bandwidth``
    ``y``'s (``λ`` for categorical columns)."""
    sample = sides(x_train, y_train, x_var_type, y_var_type, kernel, bandwidth, y_bandwidth)
    return np.asarray(_log_pooled(sample, x_query, y_query, "density"))


def conditional_cdf(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    y_query: ArrayLike,
    *,
    bandwidth: Bandwidth,
    y_bandwidth: Bandwidth,
    kernel: KernelSpec = "gaussian",
    x_var_type: str | None = None,
    y_var_type: str | None = None,
) -> np.ndarray:
    """``F̂(y | x)`` at the pairs ``(x_query[i], y_query[i])``: ``x``'s kernel weights
    pooling ``y``'s kernel distribution functions (products over ``y``'s columns; levels
    up to ``y`` for categorical ones). Options as :func:`conditional_log_density`.

    Parameters
    ----------
    x_train : array of shape (n,) or (n, d)
    y_train : array of shape (n,) or (n, e)
    x_query : array of shape (k,) or (k, d)
    y_query : array of shape (k,) or (k, e)
    bandwidth, y_bandwidth, kernel, x_var_type, y_var_type
        As :func:`conditional_density` takes them.

    Returns
    -------
    ndarray of shape (k,)

    References
    ----------
    Li, Q. & Racine, J. (2008). Nonparametric estimation of conditional CDF and quantile
    functions with mixed categorical and continuous data. *JBES* 26(4), 423–434.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.conditional_cdf(data.x_train, data.y_train, [2.0], [3.5], bandwidth=0.5,
    ...                          y_bandwidth=0.5).round(3)       # F̂(3.5 | x = 2)
    array([0.445])
    """
    sample = sides(x_train, y_train, x_var_type, y_var_type, kernel, bandwidth, y_bandwidth)
    log_f = _log_pooled(sample, x_query, y_query, "cdf")
    return np.asarray(np.minimum(np.exp(log_f), 1.0))
