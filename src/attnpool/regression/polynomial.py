"""Local polynomial regression of any degree, and the derivatives of the fit.

At a query ``q`` the fit of degree ``p`` is weighted least squares of ``y`` on the
monomials ``z^α`` (``|α| ≤ p``) of the standardised offsets ``z = (x_i − q − μ) / s``,
with weights ``K((x_i − q)/h)``; ``μ`` and ``s`` are the offsets' weighted mean and
spread at that query, so the moments are well scaled whatever the bandwidth (in one pass
about the query they cancel to rounding once one key carries nearly all the weight, as
:mod:`attnpool.engines.numpy_engine` notes for degree 1). With the coefficients ``β`` a
derivative ``∂^ν`` at the query is that of the polynomial at ``z = −μ/s``:

.. math:: \\partial^ν \\hat m(q) = s^{-ν} \\sum_{α \\ge ν} \\frac{α!}{(α-ν)!} β_α (-μ/s)^{α-ν}

(multi-indices; in one column ``ν! β_ν`` when ``μ = 0``). Sums are exact, over every
pair (no binning: compare :func:`attnpool.binned_local_polynomial`, KernSmooth's binned
grid): in float64 chunks on the NumPy engine, or on the compiled engines
(:mod:`.polynomial_program`: JAX, differentiable, any device), by the planner's fit
table. A query whose keys of positive weight cannot carry the polynomial (its scaled
Gram matrix singular) gets NaN, or the error or warning ``empty`` asks for.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import kernels
from .._typing import ArrayLike, KernelSpec
from .._validation import (
    check_bandwidth,
    check_choice,
    check_points,
    check_values,
    is_jax,
    is_traced,
)
from ..kernels.edges import pair_log_weights
from ..smoothers.windows import CHUNK_ENTRIES
from ..sums.empty_policy import EmptyNeighbourhoodWarning
from .monomials import SINGULAR, derivative_rows, monomials

__all__ = ["local_polynomial"]


@np.errstate(over="ignore", invalid="ignore")  # rows whose powers overflow: undetermined
def _chunk(
    x: np.ndarray, y: np.ndarray, q: np.ndarray, h: np.ndarray, kernel: kernels.Kernel,
    degree: int, orders: list[tuple[int, ...]], left_out: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``(estimates (k, len(orders), p), undetermined (k,))`` of queries ``q (k, d)``;
    ``left_out``: the queries are the training rows from this one on, each without its
    own pair (leave-one-out)."""
    offsets = [x[None, :, j] - q[:, j, None] for j in range(x.shape[1])]
    us = [o / h[j] for j, o in enumerate(offsets)]  # (h → 0: infinite offsets weigh 0)
    log_w = np.array(pair_log_weights(us, kernel), float)
    if left_out is not None:
        own = np.arange(q.shape[0])
        log_w[own, left_out + own] = -np.inf
    top = np.max(log_w, axis=1)
    w = np.exp(log_w - np.where(top > -np.inf, top, 0.0)[:, None])
    total = w.sum(axis=1)
    safe = np.where(total > 0, total, 1.0)
    # each query's offsets about their weighted mean, in units of their weighted spread:
    # the Gram matrix is well scaled whatever the bandwidth (h = 1e150 or 1e-300)
    mean = np.stack([np.einsum("kn,kn->k", w, o) for o in offsets], axis=1) / safe[:, None]
    spread = np.stack([np.sqrt(np.einsum("kn,kn->k", w, (o - mean[:, j, None]) ** 2) / safe)
                       for j, o in enumerate(offsets)], axis=1)  # fmt: skip
    spread = np.where((spread > 0) & np.isfinite(spread), spread, 1.0)
    # (keys of weight 0 at 0: far ones' powers would overflow and make 0 · inf)
    zs = [np.where(w > 0, (o - mean[:, j, None]) / spread[:, j, None], 0.0)
          for j, o in enumerate(offsets)]  # fmt: skip
    exponents = monomials(x.shape[1], degree)
    basis = [math.prod((z**a for z, a in zip(zs, alpha, strict=True)), start=np.ones_like(w))
             for alpha in exponents]  # fmt: skip
    weighted = [w * b for b in basis]
    gram = np.stack([np.stack([np.einsum("kn,kn->k", wb, b) for b in basis], axis=1)
                     for wb in weighted], axis=1) / safe[:, None, None]  # fmt: skip
    t = np.stack([wb @ y for wb in weighted], axis=1) / safe[:, None, None]
    finite = np.all(np.isfinite(gram), axis=(1, 2)) & np.all(np.isfinite(t), axis=(1, 2))
    gram = np.where(finite[:, None, None], gram, np.eye(len(exponents)))
    t = np.where(finite[:, None, None], t, 0.0)
    scale = 1 / np.sqrt(np.maximum(np.diagonal(gram, axis1=1, axis2=2), np.finfo(float).tiny))
    scaled = gram * scale[:, :, None] * scale[:, None, :]
    values, vectors = np.linalg.eigh(scaled)
    undetermined = ~(total > 0) | ~finite | ~(values[:, 0] > SINGULAR * values[:, -1])
    inverse_values = np.where(undetermined[:, None], 0.0, 1 / np.where(values > 0, values, 1.0))
    rhs = np.einsum("kij,kip->kjp", vectors, scale[:, :, None] * t)
    beta = scale[:, :, None] * np.einsum("kij,kj,kjp->kip", vectors, inverse_values, rhs)
    # the polynomial's derivatives at the query (z = −μ/s), back in the data's units
    units = np.stack([np.prod(spread ** np.array(order), axis=1) for order in orders], axis=1)
    rows = derivative_rows(exponents, orders, -mean / spread) / units[:, :, None]
    estimate = np.einsum("koj,kjp->kop", rows, beta)
    return np.where(undetermined[:, None, None], np.nan, estimate), undetermined


def local_polynomial(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    *,
    bandwidth: Any,
    degree: int = 2,
    derivative: int = 0,
    kernel: KernelSpec = "gaussian",
    empty: str = "nan",
    method: str = "auto",
) -> Any:
    """Local polynomial regression, or a derivative of the fit.

    Shapes: ``x_train (n,) | (n, d)``, ``y_train (n,) | (n, p)``, ``x_query (k,) | (k, d)``.
    The fit at each query is weighted least squares on every monomial of the offsets up
    to ``degree``; ``derivative=ν`` returns its ``ν``-th derivatives at the query: in one
    column ``m^(ν)`` (``ν! β_ν``; ``degree − ν`` odd is the usual choice), ``(k,)`` or
    ``(k, p)``; in ``d`` columns the fit (``ν = 0``, ``(k,)`` or ``(k, p)``), its gradient
    (``ν = 1``, ``(k, d)`` or ``(k, d, p)``) or its Hessian (``ν = 2``, ``(k, d, d)`` or
    ``(k, d, d, p)``). The exact sums of every pair, in float64.

    Parameters
    ----------
    x_train : array of shape (n,) or (n, d)
    y_train : array of shape (n,) or (n, p)
    x_query : array of shape (k,) or (k, d)
    bandwidth : float or array of shape (d,)
        The kernel's scale in each column (the Gaussian's standard deviation, a compact
        kernel's half-width).
    degree : int
        The local polynomial's degree (in several columns, at most 2).
    derivative : int
        The order of the derivatives to estimate (0: the regression function).
    kernel : str or Kernel
        A non-negative distance kernel (radial, or a ``-product`` kernel).
    empty : {"nan", "warn", "raise"}
        A query whose neighbourhood cannot carry the polynomial (too few distinct keys
        of positive weight): NaN, NaN with a warning, or an error.
    method : {"auto", "numpy", "dense", "stream"}
        How the pairs are summed (:data:`POLYNOMIAL_METHODS`): the same fit on the
        NumPy engine or on the compiled engines, which also take JAX arrays (traceable:
        ``jit``, ``grad`` with respect to every input, on any device).

    Returns
    -------
    ndarray (a JAX array for JAX inputs)

    References
    ----------
    Fan, J. & Gijbels, I. (1996). *Local Polynomial Modelling and Its Applications*,
    chapter 3. Chapman & Hall. Ruppert, D. & Wand, M. P. (1994). Multivariate locally
    weighted least squares regression. *The Annals of Statistics* 22(3), 1346–1370.

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> x = np.linspace(0, 2, 50)
    >>> attnpool.local_polynomial(x, x**3, [1.0], bandwidth=0.3, degree=3,
    ...                           derivative=2).round(6)                    # 6 x at x = 1
    array([6.])
    >>> grid = np.stack(np.meshgrid(x, x), -1).reshape(-1, 2)
    >>> surface = grid[:, 0] ** 2 + grid[:, 0] * grid[:, 1]
    >>> attnpool.local_polynomial(grid, surface, [[1.0, 1.0]], bandwidth=0.4,
    ...                           derivative=1).round(6)                    # (2x + y, x)
    array([[3., 1.]])
    """
    check_choice(empty, "empty", ("nan", "warn", "raise"))
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
    x = check_points(x_train, "x_train")
    q = check_points(x_query, "x_query", dims=x.shape[1])
    d = x.shape[1]
    if d > 1 and degree > 2:
        raise ValueError(f"degree: expected at most 2 in {d} columns; received {degree}")
    h = check_bandwidth(bandwidth, d)
    y, flat = check_values(y_train, x.shape[0])
    y = y.reshape(x.shape[0], -1)
    orders = [o for o in monomials(d, derivative) if sum(o) == derivative]
    if d > 1 and derivative == 2:  # the Hessian's entries, row by row
        orders = [tuple(int(i == a) + int(i == b) for i in range(d))
                  for a in range(d) for b in range(d)]  # fmt: skip
    engine = _engine(method, record, x, y, q, h, degree)
    if engine == "numpy":
        fit, undetermined = _numpy_fit(x, y, q, h, record, degree, orders)
    else:
        fit, undetermined = _compiled_fit(x, y, q, h, record, degree, orders, engine)
    if is_traced(undetermined):
        if empty != "nan":
            raise ValueError(
                f"empty: {empty!r} needs concrete inputs; inside jit, grad or vmap use 'nan'"
            )
    elif undetermined.any() and empty != "nan":
        message = (
            f"{int(undetermined.sum())} of {len(undetermined)} queries have too few distinct "
            f"training points of positive weight for a polynomial of degree {degree}"
        )
        if empty == "raise":
            raise ValueError(f"empty: {message}; widen the bandwidth or lower the degree")
        warnings.warn(f"{message}; their result is NaN", EmptyNeighbourhoodWarning, stacklevel=2)
    if d == 1 or derivative == 0:
        fit = fit[:, 0]
    elif derivative == 2:
        fit = fit.reshape(fit.shape[0], d, d, -1)
    return fit[..., 0] if flat else fit


#: How :func:`local_polynomial` sums: ``"auto"`` (the planner's fit table: NumPy pairs
#: for small work and NumPy arrays, else the compiled engines), ``"numpy"`` (float64 pairs
#: in chunks), ``"dense"``/``"stream"`` (compiled: the keys in one block, or in blocks).
POLYNOMIAL_METHODS = ("auto", "numpy", "dense", "stream")


def _engine(method: str, kernel: kernels.Kernel, x: Any, y: Any, q: Any, h: Any,
            degree: int) -> str:  # fmt: skip
    """The engine of ``method`` for these inputs (``"numpy"``, ``"dense"`` or ``"stream"``)."""
    check_choice(method, "method", POLYNOMIAL_METHODS)
    on_host = not any(is_jax(a) for a in (x, y, q, h))
    if method == "numpy" and not on_host:
        raise ValueError("method: 'numpy' sums concrete NumPy arrays; received JAX arrays")
    if method != "auto":
        return method
    from ..methods.options import exact_engine
    from ..sums.facts import polynomial_facts
    from ..sums.plan import pair_width, plan

    facts = polynomial_facts(kernel, q.shape[0], x.shape[0], x.shape[1], y.shape[1], degree)
    if on_host and plan(facts).backend == "numpy":
        return "numpy"
    return exact_engine(q.shape[0] * x.shape[0] * pair_width(degree, x.shape[1], y.shape[1]))


def _numpy_fit(x: Any, y: Any, q: Any, h: Any, kernel: kernels.Kernel, degree: int,
               orders: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The NumPy engine: :func:`_chunk` over chunks of queries, in float64."""
    x, y, q, h = (np.asarray(a, np.float64) for a in (x, y, q, h))
    width = len(monomials(x.shape[1], degree)) ** 2
    rows = max(1, CHUNK_ENTRIES // max(1, x.shape[0] * width))
    parts = [_chunk(x, y, q[i : i + rows], h, kernel, degree, orders)
             for i in range(0, q.shape[0], rows)]  # fmt: skip
    if not parts:
        return np.empty((0, len(orders), y.shape[1])), np.zeros(0, bool)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _compiled_fit(x: Any, y: Any, q: Any, h: Any, kernel: kernels.Kernel, degree: int,
                  orders: list[tuple[int, ...]], engine: str) -> tuple[Any, Any]:  # fmt: skip
    """The compiled engines (:mod:`.polynomial_program`): NumPy in float64 and NumPy out,
    JAX arrays in their precision (traceable, differentiable)."""
    import jax.numpy as jnp

    from .._interop import precision_scope
    from ..methods.stream import KEY_BLOCK
    from .polynomial_program import compiled_polynomial

    on_host = not any(is_jax(a) for a in (x, y, q, h))
    dtype = np.float64 if on_host else jnp.result_type(x, y, q, h, jnp.float32)
    width = len(monomials(x.shape[1], degree)) ** 2 * y.shape[1]
    key_block = None if engine == "dense" else max(64, KEY_BLOCK // width)
    with precision_scope(dtype):
        fit, undetermined = compiled_polynomial(
            *(jnp.asarray(a, dtype) for a in (x, y, q, h)), kernel=kernel, degree=degree,
            orders=orders, key_block=key_block,
        )  # fmt: skip
        if on_host:
            return np.asarray(fit, np.float64), np.asarray(undetermined)
    return fit, undetermined


def loo_residuals(
    x: np.ndarray, y: np.ndarray, bandwidth: Any, kernel: Any, degree: int
) -> np.ndarray:
    """``(n, p)``: ``y_i − m̂₋ᵢ(x_i)``, each training row's residual from the fit without
    it, on the NumPy engine (float64); NaN where the other rows cannot carry the
    polynomial. ``x (n, d)``, ``y (n, p)``."""
    record = kernels.get(kernel)
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64).reshape(x.shape[0], -1)
    h = np.broadcast_to(np.asarray(bandwidth, np.float64), (x.shape[1],))
    orders = [(0,) * x.shape[1]]
    rows = max(1, CHUNK_ENTRIES // max(1, x.shape[0] * len(monomials(x.shape[1], degree)) ** 2))
    fit = np.concatenate([
        _chunk(x, y, x[i : i + rows], h, record, degree, orders, left_out=i)[0][:, 0]
        for i in range(0, x.shape[0], rows)
    ])  # fmt: skip
    return np.asarray(y - fit)
