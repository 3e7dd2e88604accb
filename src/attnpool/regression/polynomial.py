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

import warnings
from typing import Any

import numpy as np

from .. import kernels
from .._estimator_api import is_dask
from .._typing import ArrayLike, KernelSpec
from .._units import midrange
from .._validation import (
    check_bandwidth,
    check_choice,
    check_points,
    check_values,
    is_jax,
    is_traced,
)
from ..methods import native
from ..smoothers.windows import CHUNK_ENTRIES
from ..sums.empty_policy import EmptyNeighbourhoodWarning
from .monomials import checked_options, monomials, shaped
from .polynomial_blocks import fit_block, solve

__all__ = ["local_polynomial"]


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
    method : {"auto", "numpy", "dense", "stream", "pallas"}
        How the pairs are summed (:data:`POLYNOMIAL_METHODS`): the same fit on the
        NumPy engine or on the compiled engines, which also take JAX arrays (traceable:
        ``jit``, ``grad`` with respect to every input, on any device). Dask arrays are
        fitted lazily, chunk by chunk (:func:`attnpool.distributed.polynomial.local_polynomial`).

    Returns
    -------
    ndarray (a JAX array for JAX inputs, a lazy Dask array for Dask inputs)

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
    if is_dask(x_train, y_train, x_query):  # the same fit, lazily, chunk by chunk
        if empty != "nan" or method != "auto":
            raise ValueError(
                "x_train: Dask inputs take empty='nan' and method='auto' (a lazy result, "
                f"summed chunk by chunk); received empty={empty!r}, method={method!r}"
            )
        from ..distributed.polynomial import local_polynomial as on_dask

        return on_dask(x_train, y_train, x_query, bandwidth=bandwidth, degree=degree,
                       derivative=derivative, kernel=kernel)  # fmt: skip
    x = check_points(x_train, "x_train")
    q = check_points(x_query, "x_query", dims=x.shape[1])
    d = x.shape[1]
    record, orders = checked_options(degree, derivative, kernel, d)
    h = check_bandwidth(bandwidth, d)
    y, flat = check_values(y_train, x.shape[0])
    y = y.reshape(x.shape[0], -1)
    engine = _engine(method, record, x, y, q, h, degree)
    found = _native_fit(x, y, q, h, degree, orders) if engine == "native" else None
    if found is not None:
        fit, undetermined = found
    elif engine == "numpy":
        fit, undetermined = _numpy_fit(x, y, q, h, record, degree, orders)
    else:  # (the loop's scaled coordinates out of its range: the streamed engine)
        engine = "stream" if engine == "native" else engine
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
    return shaped(fit, d, derivative, flat)


#: How :func:`local_polynomial` sums: ``"auto"`` (the planner's fit table: NumPy pairs
#: for small work and NumPy arrays, the compiled loop for the Gaussian on a CPU, else
#: the compiled engines), ``"numpy"`` (float64 pairs in chunks), ``"native"`` (the
#: compiled loop: the Gaussian, NumPy arrays, float64; far keys passed over),
#: ``"dense"``/``"stream"`` (compiled: the keys in one block, or in blocks),
#: ``"pallas"`` (the tiled kernel: ``auto``'s choice for streamed work on a GPU).
POLYNOMIAL_METHODS = ("auto", "numpy", "native", "dense", "stream", "pallas")


def _engine(method: str, kernel: kernels.Kernel, x: Any, y: Any, q: Any, h: Any,
            degree: int) -> str:  # fmt: skip
    """The engine of ``method`` for these inputs (``"numpy"``, ``"dense"`` or ``"stream"``)."""
    check_choice(method, "method", POLYNOMIAL_METHODS)
    on_host = not any(is_jax(a) for a in (x, y, q, h))
    if method in ("numpy", "native") and not on_host:
        raise ValueError(f"method: {method!r} sums concrete NumPy arrays; received JAX arrays")
    if method == "native":
        from ..methods import native_polynomial

        reason = native.refusal(kernel, x.shape[1])
        terms, basis = len(monomials(x.shape[1], 2 * degree)), len(monomials(x.shape[1], degree))
        if reason is None and not native_polynomial.serves(x.shape[1], y.shape[1], terms, basis):
            reason = (
                f"'native' fits up to {native.MOMENTS_MAX_DIMS} columns and "
                f"{native.MOMENTS_MAX_VALUES} responses, {native_polynomial.MAX_TERMS} "
                f"monomials of degree up to 2·degree; received {x.shape[1]} columns, "
                f"{y.shape[1]} responses, {terms} monomials; use method='stream'"
            )
        if reason is not None:
            raise ValueError(f"method: {reason}")
    if method != "auto":
        return method
    from ..methods.options import exact_engine
    from ..sums.facts import polynomial_facts
    from ..sums.plan import pair_width, plan

    facts = polynomial_facts(kernel, q.shape[0], x.shape[0], x.shape[1], y.shape[1], degree)
    decision = plan(facts)
    if on_host and decision.backend == "numpy":  # rule 2: the compiled loop's moments
        return "numpy" if decision.rule == 1 else "native"
    from ..methods import pallas

    engine = exact_engine(q.shape[0] * x.shape[0] * pair_width(degree, x.shape[1], y.shape[1]))
    tiled = engine == "stream" and not pallas.interpreted() and pallas.supports(kernel)
    return "pallas" if tiled else engine


def _numpy_fit(x: Any, y: Any, q: Any, h: Any, kernel: kernels.Kernel, degree: int,
               orders: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The NumPy engine: :func:`.polynomial_blocks.fit_block` over chunks of queries,
    in float64."""
    x, y, q, h = (np.asarray(a, np.float64) for a in (x, y, q, h))
    width = len(monomials(x.shape[1], degree)) ** 2
    rows = max(1, CHUNK_ENTRIES // max(1, x.shape[0] * width))
    exponents = monomials(x.shape[1], degree)
    parts = [fit_block(x, y, q[i : i + rows], h, kernel, exponents, orders)
             for i in range(0, q.shape[0], rows)]  # fmt: skip
    if not parts:
        return np.empty((0, len(orders), y.shape[1])), np.zeros(0, bool)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _native_fit(x: Any, y: Any, q: Any, h: Any, degree: int, orders: list[tuple[int, ...]],
                left_out: bool = False) -> tuple[np.ndarray, np.ndarray] | None:  # fmt: skip
    """The compiled loop (:mod:`attnpool.methods.native_polynomial`): the Gaussian's sums
    in bandwidths about the keys' midrange, solved as the NumPy engine solves; None where
    the rows reach beyond ``native.MAX_SCALED`` bandwidths of it or a sum is not finite.
    ``left_out``: the queries are the keys, each without its own pair."""
    from ..methods.native_polynomial import native_polynomial

    x, y, q, h = (np.asarray(a, np.float64) for a in (x, y, q, h))
    centre = midrange(x)
    keys, queries = x - centre, q - centre
    reach = np.maximum(np.max(np.abs(keys), axis=0, initial=0.0),
                       np.max(np.abs(queries), axis=0, initial=0.0))  # fmt: skip
    if np.any(reach / h > native.MAX_SCALED):
        return None
    exponents, basis = monomials(x.shape[1], 2 * degree), len(monomials(x.shape[1], degree))
    sums = native_polynomial(queries, keys, y, 1.0 / h, exponents, basis, exclude_self=left_out)
    if sums is None:
        return None
    row = np.maximum(sums.reference, 0)
    reference = (sums.total, x[row], y[row])
    return solve(sums.gram, sums.responses, sums.total, sums.mean * h, sums.spread * h, q,
                 reference, exponents[:basis], orders)  # fmt: skip


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
            orders=orders, key_block=key_block, tiled=engine == "pallas",
        )  # fmt: skip
        if on_host:
            return np.asarray(fit, np.float64), np.asarray(undetermined)
    return fit, undetermined


def loo_residuals(
    x: np.ndarray, y: np.ndarray, bandwidth: Any, kernel: Any, degree: int, method: str = "auto"
) -> np.ndarray:
    """``(n, p)``: ``y_i − m̂₋ᵢ(x_i)``, each training row's residual from the fit without
    it, on the NumPy engine (float64); NaN where the other rows cannot carry the
    polynomial. ``x (n, d)``, ``y (n, p)``. ``method``: ``"numpy"`` or ``"native"``
    (the compiled loop; where the rows reach beyond its range, NumPy); any other takes
    the loop where the planner's fit table does (the Gaussian, large ``n``), else NumPy."""
    from ..sums.facts import polynomial_facts
    from ..sums.plan import plan

    record = kernels.get(kernel)
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64).reshape(x.shape[0], -1)
    h = np.broadcast_to(np.asarray(bandwidth, np.float64), (x.shape[1],))
    orders = [(0,) * x.shape[1]]
    facts = polynomial_facts(record, x.shape[0], x.shape[0], x.shape[1], y.shape[1], degree)
    loop = method == "native" or (method != "numpy" and plan(facts) == ("numpy", 2))
    if loop:  # each row's own pair left out
        found = _native_fit(x, y, x, h, degree, orders, left_out=True)
        if found is not None:
            return np.asarray(y - found[0][:, 0])
    rows = max(1, CHUNK_ENTRIES // max(1, x.shape[0] * len(monomials(x.shape[1], degree)) ** 2))
    exponents = monomials(x.shape[1], degree)
    fit = np.concatenate([
        fit_block(x, y, x[i : i + rows], h, record, exponents, orders, left_out=i)[0][:, 0]
        for i in range(0, x.shape[0], rows)
    ])  # fmt: skip
    return np.asarray(y - fit)
