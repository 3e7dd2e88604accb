"""The parts of a kernel fit beyond its values: the attention weights of each query over
the training rows (:func:`weight_matrix`, mixed data too) and the local-constant fit's
marginal effects, the exact gradient of the Nadaraya–Watson fit with respect to the
query (:func:`local_constant_slopes`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import kernels
from .._support.hints import Array, ArrayLike, Bandwidth, KernelSpec
from .._support.validation import check_choice, numpy_dtype
from ..engines import numpy_engine
from ..sums.empty_policy import EMPTY_POLICIES, fills_empty, report_empty, takes_nearest
from ..sums.observation_weights import positive_rows
from . import validated

__all__ = ["local_constant_slopes", "weight_matrix"]


def local_constant_slopes(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    bandwidth: Bandwidth = 1.0,
    empty: str = "nan",
    block_size: int | None = None,
    weights: ArrayLike | None = None,
) -> Array:
    """The gradient of the Nadaraya–Watson fit with respect to the query: the
    local-constant estimator's marginal effects, ``(k, d)`` or ``(k, d, p)``.

    .. math:: \\partial_j \\hat g(x) = \\sum_i \\alpha_i(x)\\,
              \\partial_j \\log K_h(x - x_i)\\,\\bigl(y_i - \\hat g(x)\\bigr)

    computed exactly, by forward-mode differentiation of
    :func:`attnpool.attention_pool` in float64 (small Gaussian fits: the formula above in
    NumPy, no program to build) (one pass per column, the kernel's own
    derivative whatever the kernel). Continuous columns. A query with no training point
    inside a compact kernel's support has NaN slopes (``empty="nan"`` or ``"raise"``,
    whose error the fit itself gives) or, under ``"nearest"``, the slope of the
    nearest-point fit, 0 — as where the Gaussian's fit is the nearest point's response.
    ``weights``: observation weights of the training rows.
    """
    x, y, q, h, model, flat = validated(x_train, y_train, x_query, bandwidth, kernel, None, 0)
    x, y, weights = positive_rows(x, y, weights)
    served = block_size is None and numpy_engine.serves(model, q.shape[0], x.shape[0], y.shape[1])
    if served and kernels.is_gaussian(model.kernel):  # no program (no JAX): NumPy, in float64
        found: Array | None = numpy_engine.gaussian_slopes(x, y, q, h, weights)
        if found is not None:
            return found[..., 0] if flat else found
    import jax
    import jax.numpy as jnp

    from .._support.interop import precision_scope
    from ..pooling import attention_pool

    with precision_scope(np.float64):
        keys, values = jnp.asarray(x, jnp.float64), jnp.asarray(y, jnp.float64)
        queries = jnp.asarray(q, jnp.float64)

        def fit(points: Any) -> Any:
            return attention_pool(
                points,
                keys,
                values,
                kernel=kernel,
                bandwidth=h,
                block_size=block_size,
                empty="nearest" if takes_nearest(empty) else "nan",
                weights=weights,
            )

        columns = []
        for j in range(x.shape[1]):
            direction = jnp.zeros_like(queries).at[:, j].set(1.0)
            value, slope = (np.asarray(a) for a in jax.jvp(fit, (queries,), (direction,)))
            columns.append(np.where(np.isnan(value), np.nan, slope))  # no fit, no slope
    slopes = np.stack(columns, axis=1)  # (k, d, p)
    return slopes[..., 0] if flat else slopes


def weight_matrix(
    x_train: ArrayLike,
    x_query: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    bandwidth: Bandwidth = 1.0,
    var_type: str | None = None,
    empty: str = "nan",
    weights: ArrayLike | None = None,
) -> np.ndarray:
    """Attention weights ``(n_query, n_train)`` of the (mixed-type) product kernel; rows sum to 1.

    Rows of queries with an empty neighbourhood are NaN (``empty="nan"``) or
    shared by the nearest training points (``"nearest"``). ``weights (n_train,)``: positive
    observation weights (each column times ``w_i``, rows normalised again).
    """
    check_choice(empty, "empty", EMPTY_POLICIES)
    x, _, q, h, model, _ = validated(
        x_train, np.zeros(len(np.asarray(x_train))), x_query, bandwidth, kernel, var_type, 0
    )
    from .._support.interop import precision_scope
    from ..engines.local_fits import weights_core

    dtype = numpy_dtype(x, q)
    with precision_scope(dtype):
        matrix, empty_rows = weights_core(
            np.asarray(x, dtype),
            np.asarray(q, dtype),
            np.asarray(h, dtype),
            model=model,
            nearest=fills_empty(model.kernel, empty),
        )
        matrix, empty_rows = np.asarray(matrix), np.asarray(empty_rows)
    report_empty(model.kernel, empty, empty_rows, noun="training point")
    if weights is not None:
        matrix = matrix * np.asarray(weights, matrix.dtype)[None, :]
        matrix = matrix / matrix.sum(axis=1, keepdims=True)
    return np.asarray(matrix)
