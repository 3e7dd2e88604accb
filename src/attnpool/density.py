"""Kernel density estimates on the pooling engines: attention pooling's denominator.

.. math:: \\hat f(x) = \\frac{1}{\\sum_i w_i} \\sum_i w_i \\,
          \\frac{K((x - x_i) / h)}{\\prod_j h_j \\int K}

(``w_i = 1`` without observation weights). ``Σ_i w_i K(u_i)`` is the pooling state of
the values ``w`` — ``m + log t`` in the log domain — on the exact engines (dense or
streamed key blocks, a compact kernel's edge decided as pooling decides it), so a
density far from the data is a finite log density, not 0 or ``log 0``. ``∫K`` is over
``ℝ^d``: radial kernels by radial quadrature, product kernels the one-dimensional
integral to the power ``d`` (:func:`kernel_integrals`). The estimator and the bandwidth
selectors are in :mod:`attnpool.density_estimator`, distribution functions in
:mod:`attnpool.distribution`.

>>> import numpy as np
>>> from attnpool.density import kernel_density
>>> kernel_density(np.zeros(1), np.array([0.0, 1.0]), bandwidth=1.0).round(4)  # φ(0), φ(1)
array([0.3989, 0.242 ])
"""

from __future__ import annotations

import math
from functools import lru_cache, partial

import jax
import jax.numpy as jnp
import numpy as np
from scipy import integrate, special

from . import kernels as _kernels
from ._interop import compute_dtype, precision_scope
from ._shapes import MAX_ROWS, bucket, pad_rows, padded, query_bucket
from ._validation import check_bandwidth, check_points
from .engines.programs import kernel_block, pool_state
from .geometry import MATMUL_MIN_DIM, block_coordinates
from .methods.options import exact_engine
from .methods.stream import KEY_BLOCK
from .observation_weights import check_weights

__all__ = [
    "conditional_density",
    "kernel_density",
    "kernel_integrals",
    "log_density",
    "log_kernel_sums",
]


@lru_cache(maxsize=64)
def kernel_integrals(kernel: _kernels.Kernel, d: int) -> tuple[float, float]:
    """``(∫K, ∫K²)`` over ``ℝ^d`` of the radial kernel ``K(‖u‖)``, unnormalised.

    By radial quadrature, ``∫ g(‖u‖) du = S_{d−1} ∫₀^∞ g(r) r^{d−1} dr`` with the
    sphere's area ``S_{d−1} = 2π^{d/2} / Γ(d/2)``. A product kernel's integrals are the
    one-dimensional ones to the power ``d``.

    >>> a, b = kernel_integrals(_kernels.get("gaussian"), 1)   # √(2π), √π
    >>> round(a, 6), round(b, 6)
    (2.506628, 1.772454)
    """
    if kernel.product and d > 1:
        first, second = kernel_integrals(kernel, 1)
        return first**d, second**d
    sphere = 2 * math.pi ** (d / 2) / special.gamma(d / 2)

    def profile(r):
        with precision_scope(np.float64):
            return float(np.exp(kernel.log_profile(jnp.asarray(r * r, jnp.float64))))

    upper = kernel.support if kernel.compact else np.inf
    first = integrate.quad(lambda r: profile(r) * r ** (d - 1), 0, upper, limit=200)[0]
    second = integrate.quad(lambda r: profile(r) ** 2 * r ** (d - 1), 0, upper, limit=200)[0]
    return float(sphere * first), float(sphere * second)


def log_kernel_sums(x_train, x_query, bandwidth, kernel: _kernels.Kernel, weights=None,
                    key_count=None):  # fmt: skip
    """``log Σ_i w_i K((x − x_i)/h)`` at each query, ``(n_q,)`` (traceable), streamed for
    large inputs: pooling's coordinates and blocks. ``weights (m,)``: positive observation
    weights (None: ones); ``key_count``: training rows from this one on are padding."""
    queries, keys, divisor = block_coordinates(x_query, x_train, bandwidth, kernel)
    n, m = queries.shape[0], keys.shape[0]
    method = exact_engine(n * m)
    block = kernel_block(kernel, streamed=method == "stream", divisor=divisor, key_count=key_count)
    values = jnp.ones((m, 1), keys.dtype) if weights is None else weights[:, None]
    state = pool_state(block, queries, keys, values, method=method, key_block=KEY_BLOCK)
    sums = state.max_log + jnp.log(state.weighted_values[:, 0])
    if kernel.quadratic is not None and divisor is None and queries.shape[1] >= MATMUL_MIN_DIM:
        # the matrix-product form drops each query's own term, quadratic · ‖q‖²: a sum
        # is absolute here, not a weight relative to others
        sums = sums + kernel.quadratic * jnp.sum(queries * queries, axis=1)
    return sums


@partial(jax.jit, static_argnames="kernel")
def _log_density_program(x_train, x_query, bandwidth, weights, key_count, constant, *, kernel):
    sums = log_kernel_sums(x_train, x_query, bandwidth, kernel, weights, key_count)
    return sums - constant


def log_density(x_train, x_query, *, kernel="gaussian", bandwidth=1.0, weights=None) -> np.ndarray:
    """``log f̂`` at ``x_query (k,) | (k, d)`` of the sample ``x_train (n,) | (n, d)``:
    ``(k,)`` in float64 (the inputs' precision if narrower), ``−inf`` where a compact
    kernel covers no training point. ``weights (n,)``: observation weights."""
    record = _kernels.get(kernel)
    x = check_points(x_train, "x_train")
    if x.shape[0] == 0:
        raise ValueError(f"x_train: expected at least one row; received shape {x.shape}")
    q = check_points(x_query, "x_query", dims=x.shape[1])
    record = _kernels.for_dimensions(record, x.shape[1])
    first = kernel_integrals(record, x.shape[1])[0] if record.similarity == "distance" else 0.0
    if not (0 < first < math.inf):
        raise ValueError(
            f"kernel: a density needs a distance kernel of finite integral; received "
            f"{record.name!r}"
        )
    h = np.asarray(check_bandwidth(bandwidth, x.shape[1]), np.float64)
    dtype = np.dtype(compute_dtype(x, q, numpy=True))
    w = None if weights is None else check_weights(weights, x.shape[0], dtype)
    total = x.shape[0] if w is None else float(np.sum(w))
    constant = math.log(total) + float(np.sum(np.log(h))) + math.log(first)
    n, m = q.shape[0], x.shape[0]
    if n == 0:
        return np.zeros(0)
    count = None
    keys = np.asarray(x, dtype)
    if m <= MAX_ROWS:  # rows padded to their buckets: a program per bucket, not per size
        count = np.int32(m)
        keys = pad_rows(keys, bucket(m))
        w = None if w is None else padded(np.asarray(w, dtype), size=bucket(m))[0]
    with precision_scope(dtype):
        result = _log_density_program(
            keys, pad_rows(np.asarray(q, dtype), query_bucket(n)), np.asarray(h, dtype),
            None if w is None else np.asarray(w, dtype), count, np.asarray(constant, dtype),
            kernel=record,
        )  # fmt: skip
    return np.asarray(result, np.float64)[:n]


def kernel_density(x_train, x_query, **options) -> np.ndarray:
    """The density ``f̂`` at ``x_query``: ``exp`` of :func:`log_density` (same options)."""
    return np.exp(log_density(x_train, x_query, **options))


def conditional_density(
    x_train, y_train, x_query, y_query, *, kernel="gaussian", bandwidth=1.0, y_bandwidth=1.0
) -> np.ndarray:
    """``f̂(y | x)`` at the pairs ``(x_query[i], y_query[i])``: the attention pooling of the
    values ``K_b(y − y_i)`` with weights ``K_h(x − x_i)``,

    .. math:: \\hat f(y \\mid x) = \\frac{\\sum_i K((x - x_i)/h) \\, K((y - y_i)/b)}
              {\\prod_j b_j \\int K \\; \\sum_i K((x - x_i)/h)}

    in the log domain (both sums by :func:`log_kernel_sums`): ``(k,)`` in float64, NaN
    where no training point reaches ``x`` (a compact kernel). The Gaussian or a
    ``-product`` kernel (the joint kernel is then the product of the two). Continuous
    columns; ``bandwidth`` is ``x``'s, ``y_bandwidth`` ``y``'s.
    """
    x = np.asarray(check_points(x_train, "x_train"), np.float64)
    y = np.asarray(check_points(y_train, "y_train"), np.float64)
    if y.shape[0] != x.shape[0]:
        raise ValueError(
            f"y_train: expected one row per row of x_train ({x.shape[0]}); received {y.shape}"
        )
    qx = np.asarray(check_points(x_query, "x_query", dims=x.shape[1]), np.float64)
    qy = np.asarray(check_points(y_query, "y_query", dims=y.shape[1]), np.float64)
    if qy.shape[0] != qx.shape[0]:
        raise ValueError(
            f"y_query: expected one row per row of x_query ({qx.shape[0]}); received {qy.shape}"
        )
    record = _kernels.get(kernel)
    if not (_kernels.is_gaussian(record) or (record.product and _kernels.is_builtin(record))):
        raise ValueError(
            f"kernel: a conditional density needs the Gaussian or a '-product' kernel (the "
            f"joint kernel a product of x's and y's); received {record.name!r}"
        )
    h = np.asarray(check_bandwidth(bandwidth, x.shape[1]), np.float64)
    b = np.asarray(check_bandwidth(y_bandwidth, y.shape[1]), np.float64)
    joint = log_density(np.hstack([x, y]), np.hstack([qx, qy]), kernel=record,
                        bandwidth=np.concatenate([h, b]))  # fmt: skip
    marginal = log_density(x, qx, kernel=record, bandwidth=h)
    with np.errstate(invalid="ignore"):
        return np.exp(joint - marginal)
