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
Gram matrix singular) gets NaN with a warning, or the error ``empty`` asks for.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import kernels
from .._support.estimator_api import is_dask
from .._support.hints import ArrayLike, KernelSpec
from .._support.validation import (
    check_bandwidth,
    check_choice,
    check_points,
    check_values,
    is_jax,
    is_traced,
)
from ..smoothers.windows import CHUNK_ENTRIES
from ..sums.empty_policy import EmptyNeighbourhoodWarning
from .monomials import checked_options, derivatives_in_data_units, monomials, shaped, span_units
from .polynomial_blocks import fit_block
from .polynomial_engines import ENGINES, compiled_fit, native_fit

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
        of positive weight): NaN with one :class:`~attnpool.EmptyNeighbourhoodWarning`
        counting them (``"nan"``, ``"warn"``: no nearest value stands in for a
        polynomial; under ``jit``, ``grad`` or ``vmap``, ``"nan"`` without it), or an
        error.
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
    x = check_points(x_train, "x_train", min_rows=1)
    q = check_points(x_query, "x_query", dims=x.shape[1])
    d = x.shape[1]
    record, orders = checked_options(degree, derivative, kernel, d)
    h = check_bandwidth(bandwidth, d)
    y, flat = check_values(y_train, x.shape[0])
    y = y.reshape(x.shape[0], -1)
    engine = _engine(method, record, x, y, q, h, degree)
    unit = None if any(is_jax(a) for a in (x, q, h)) else span_units(np.ptp(x, axis=0), h)
    if unit is not None:  # (exact) the moments' powers of x − q in the float range
        with np.errstate(over="ignore"):  # (h ≫ the span, alike to rounding from 2^500)
            x, q, h = x / unit, q / unit, np.minimum(h / unit, 2.0**500)
    found = ENGINES[engine].fit(x, y, q, h, record, degree, orders)
    if found is None:  # (the loop's scaled coordinates out of its range): streamed
        found = compiled_fit(x, y, q, h, record, degree, orders, blocked=True)
    fit, undetermined = found
    fit = derivatives_in_data_units(fit, unit, orders)
    if is_traced(undetermined):
        if empty != "nan":
            raise ValueError(
                f"empty: {empty!r} needs concrete inputs; inside jit, grad or vmap use 'nan'"
            )
    elif undetermined.any():
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
    """The engine of ``method`` for these inputs (a name of :data:`.polynomial_engines.ENGINES`),
    checked: refused by name where it does not serve them."""
    check_choice(method, "method", POLYNOMIAL_METHODS)
    on_host = not any(is_jax(a) for a in (x, y, q, h))
    if method != "auto":
        named = ENGINES[method]
        if named.host_only and not on_host:
            raise ValueError(f"method: {method!r} sums concrete NumPy arrays; received JAX arrays")
        reason = named.refusal(kernel, x.shape[1], y.shape[1], degree)
        if reason is not None:
            raise ValueError(f"method: {reason}")
        return method
    from ..sums.facts import polynomial_facts
    from ..sums.plan import plan

    facts = polynomial_facts(kernel, q.shape[0], x.shape[0], x.shape[1], y.shape[1], degree)
    backend = plan(facts).backend
    if on_host and backend in ENGINES and ENGINES[backend].host_only:  # numpy, native
        return backend
    return plan(facts._replace(task="compiled")).backend


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
    loop = method == "native" or (method != "numpy" and plan(facts).by_loop)
    if loop:  # each row's own pair left out
        found = native_fit(x, y, x, h, record, degree, orders, left_out=True)
        if found is not None:
            return np.asarray(y - found[0][:, 0])
    rows = max(1, CHUNK_ENTRIES // max(1, x.shape[0] * len(monomials(x.shape[1], degree)) ** 2))
    exponents = monomials(x.shape[1], degree)
    fit = np.concatenate([
        fit_block(x, y, x[i : i + rows], h, record, exponents, orders, left_out=i)[0][:, 0]
        for i in range(0, x.shape[0], rows)
    ])  # fmt: skip
    return np.asarray(y - fit)
