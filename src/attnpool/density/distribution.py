"""Estimated distribution functions: products of one-dimensional kernel distribution
functions, ``F̂(x) = Σ_i w_i Π_j G((x_j − x_ij)/h_j) / Σ w``, summed in the log domain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import kernels as _kernels
from .._support.hints import ArrayLike, Bandwidth, KernelSpec
from .._support.validation import check_bandwidth, check_points
from ..kernels.calculus import CDF_KERNELS
from ..sums.observation_weights import check_weights, in_weight_unit

if TYPE_CHECKING:
    from ..kernels.mixed import MixedColumns

__all__ = ["CDF_KERNELS", "kernel_cdf"]


def kernel_cdf(
    x_train: ArrayLike,
    x_query: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    bandwidth: Bandwidth = 1.0,
    weights: ArrayLike | None = None,
    var_type: str | None = None,
) -> np.ndarray:
    """The estimated distribution function ``F̂(x) = Σ_i w_i Π_j G((x_j − x_ij)/h_j) / Σ w``
    at ``x_query (k,) | (k, d)`` (``G``: the one-dimensional kernel's distribution
    function): ``(k,)`` in float64, non-decreasing in each coordinate, in ``[0, 1]``. In
    one dimension every kernel of :data:`CDF_KERNELS`; in several the Gaussian and the
    ``-product`` kernels (a radial kernel's distribution function is no product).
    ``var_type`` (``c``, ``o``, ``u`` per column): a categorical column's factor is its
    kernel summed over the levels up to ``x`` (:mod:`attnpool.kernels.mixed`; unordered
    levels in their sorted order, as np and statsmodels take them).

    Parameters
    ----------
    x_train : array of shape (n,) or (n, d)
    x_query : array of shape (k,) or (k, d)
    kernel : str or Kernel
    bandwidth : float or array of shape (d,)
    weights : array of shape (n,), optional
    var_type : str, optional

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
    >>> attnpool.kernel_cdf(data.x_train, [2.5], bandwidth=0.5).round(4)
    array([0.4409])
    """
    x = np.asarray(check_points(x_train, "x_train"), np.float64)
    if x.shape[0] == 0:
        raise ValueError(f"x_train: expected at least one row; received shape {x.shape}")
    q = np.asarray(check_points(x_query, "x_query", dims=x.shape[1]), np.float64)
    continuous = x.shape[1] if var_type is None else var_type.count("c")
    record = _kernels.for_dimensions(_kernels.get(kernel), continuous)
    name = record.name.removesuffix("-product")
    several = continuous > 1 and not (record.product or name == "gaussian")
    if not _kernels.is_builtin(record) or name not in CDF_KERNELS or several:
        raise ValueError(
            f"kernel: distribution functions are products of one-dimensional ones: "
            f"{', '.join(CDF_KERNELS)} in one dimension, the Gaussian and the '-product' "
            f"kernels in several; received {record.name!r} in {x.shape[1]} dimension(s)"
        )
    w = in_weight_unit(None if weights is None else check_weights(weights, x.shape[0]))
    if var_type is not None and set(var_type) != {"c"}:
        from . import mixed_columns

        columns, h = mixed_columns(x, kernel, bandwidth, var_type)
    else:
        from ..kernels.mixed import MixedColumns

        columns = MixedColumns(x, "c" * x.shape[1], record)
        h = np.asarray(check_bandwidth(bandwidth, x.shape[1]), np.float64)
    return np.asarray(np.minimum(np.exp(log_cdf(x, q, columns, h, w)), 1.0))


def log_cdf(
    x: np.ndarray, q: np.ndarray, columns: MixedColumns, h: np.ndarray, w: ArrayLike | None
) -> np.ndarray:
    """``log F̂`` ``(k,)`` at ``q (k, d)`` of the sample ``x (n, d)`` of ``columns``
    (:class:`~attnpool.kernels.mixed.MixedColumns`: a continuous column's kernel
    distribution function, a categorical one's kernel summed over the levels up to
    ``q``), bandwidths ``h`` and weights ``w (n,)`` (None: ones): each row about its
    largest term, so that a tail far below the float range keeps its logarithm."""
    from ..kernels.mixed import log_sums

    term = (q, x, h, columns, "cdf")
    if w is None:
        return np.asarray(log_sums([term]) - np.log(x.shape[0]))
    w = np.asarray(w, np.float64)
    return np.asarray(log_sums([term], weights=w / np.sum(w)))
