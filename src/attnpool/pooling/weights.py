"""Attention weights as a matrix: ``α(q_i, k_j)``, queries on rows, each row summing to 1
(the transpose of the textbook's keys × queries)."""

from __future__ import annotations

from typing import Any

from .. import kernels as _kernels
from .._support.hints import Array, ArrayLike, Bandwidth
from .._support.validation import check_choice
from ..sums.empty_policy import EMPTY_POLICIES, fills_empty
from .attention import (
    KernelLike,
    attention_pool,
    check_inputs,
    check_weight_size,
    checked_mask,
)

__all__ = ["attention_weights"]


def attention_weights(
    queries: ArrayLike,
    keys: ArrayLike,
    *,
    kernel: KernelLike = "gaussian",
    bandwidth: Bandwidth = 1.0,
    empty: str = "nan",
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
) -> Array:
    """Attention weights ``α(q_i, k_j)`` as an ``(n_queries, n_keys)`` matrix; rows sum to 1.

    Arguments as in :func:`attention_pool` (``weights``: the keys' observation weights).
    Rows of queries with an empty neighbourhood are NaN (``empty="nan"``), one-hot on the
    nearest key (``"nearest"``, ties shared), or raise (``"raise"``); masked keys have
    weight 0.

    Parameters
    ----------
    queries : array of shape (n,) or (n, d)
    keys : array of shape (m,) or (m, d)
    kernel : str, Kernel or callable
    bandwidth : float or array of shape (d,)
    empty : {"nan", "nearest", "warn", "raise"}
    mask : bool array of shape (n, m), or (n,) valid lengths, optional
    weights : array of shape (m,), optional

    Returns
    -------
    array of shape (n, m)

    Examples
    --------
    >>> import numpy as np
    >>> attention_weights(np.arange(3.0), np.arange(3.0), kernel="boxcar", bandwidth=0.5)
    array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 1.]])

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2 (its ``attention_w`` is this matrix transposed: keys × queries).
    """
    q, k, _, h, _ = check_inputs(queries, keys, None, bandwidth)
    if weights is not None:  # the weights of a pool of zeros (in the keys' precision)
        return attention_pool(
            q, k, k[:, 0] * 0, kernel=kernel, bandwidth=h, empty=empty, mask=mask,
            weights=weights, return_weights=True,
        )[1]  # fmt: skip
    kernel = _kernels.for_dimensions(_kernels.get(kernel), k.shape[1])
    empty = check_choice(empty, "empty", EMPTY_POLICIES)
    check_weight_size(q.shape[0], k.shape[0])
    allowed, keyless = checked_mask(mask, q.shape[0], k.shape[0], empty)
    nearest = fills_empty(kernel, empty)

    def compute(q: Any, k: Any, h: Any) -> Any:
        from ..engines.programs import weights_core

        return weights_core(q, k, h, kernel=kernel, nearest=nearest, allowed=allowed)

    from .._support.interop import run_in_policy

    weights_matrix: Array = run_in_policy(compute, (q, k, h), kernel, empty, q.shape[0], keyless)
    return weights_matrix
