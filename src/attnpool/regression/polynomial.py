"""Local polynomial regression of any degree in one column, and the derivatives of the fit.

At a query ``q`` the fit of degree ``p`` is weighted least squares of ``y`` on the powers
``1, z, …, z^p`` of the scaled offsets ``z = (x_i − q)/h − μ``, with weights
``K((x_i − q)/h)``; ``μ`` is the weighted mean offset, about which the moments are taken
(in one pass about the query, ``Σ w z^k`` cancels to rounding once one key carries nearly
all the weight, as :mod:`attnpool.engines.numpy_engine` notes for degree 1). With the
coefficients ``β`` the ``ν``-th derivative at the query is

.. math:: \\hat m^{(ν)}(q) = h^{-ν} \\sum_{k \\ge ν} \\frac{k!}{(k-ν)!} β_k (-μ)^{k-ν}.

Sums are exact, in float64, over every pair in chunks (no binning: compare
:func:`attnpool.binned_local_polynomial`, KernSmooth's binned grid). A query with fewer
than ``p + 1`` distinct keys of positive weight cannot carry the polynomial: its row is
NaN (or the error or warning ``empty`` asks for).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import kernels
from .._typing import ArrayLike
from .._validation import check_choice, check_points, check_values
from ..kernels.edges import edge_log_profile, has_edge
from ..smoothers.local_polynomial import hankel
from ..smoothers.windows import CHUNK_ENTRIES
from ..sums.empty_policy import EmptyNeighbourhoodWarning

__all__ = ["local_polynomial"]

#: The scaled Gram matrix is taken as singular below this eigenvalue ratio.
SINGULAR = 1e-13


def _log_weights(u: np.ndarray, kernel: kernels.Kernel) -> np.ndarray:
    if has_edge(kernel):  # the support's edge decided exactly, as on every path
        return np.asarray(edge_log_profile([u], kernel), float)
    return np.asarray(kernel.log_profile(u * u), float)


def _chunk(
    x: np.ndarray, y: np.ndarray, q: np.ndarray, h: float, kernel: kernels.Kernel,
    degree: int, derivative: int,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``(estimates (k, p), undetermined (k,))`` of queries ``q (k,)``."""
    u = (x[None, :] - q[:, None]) / h
    log_w = _log_weights(u, kernel)
    top = np.max(log_w, axis=1)
    w = np.exp(log_w - np.where(top > -np.inf, top, 0.0)[:, None])
    total = w.sum(axis=1)
    safe = np.where(total > 0, total, 1.0)
    mean = np.einsum("kn,kn->k", w, u) / safe
    z = u - mean[:, None]
    powers = [np.ones_like(z)]
    for _ in range(2 * degree):
        powers.append(powers[-1] * z)
    s = np.stack([np.einsum("kn,kn->k", w, zk) for zk in powers], axis=1) / safe[:, None]
    t = np.stack([(w * zk) @ y for zk in powers[: degree + 1]], axis=1) / safe[:, None, None]
    gram = hankel(s)  # (k, p + 1, p + 1)
    scale = 1 / np.sqrt(np.maximum(np.diagonal(gram, axis1=1, axis2=2), np.finfo(float).tiny))
    scaled = gram * scale[:, :, None] * scale[:, None, :]
    values, vectors = np.linalg.eigh(scaled)
    undetermined = ~(total > 0) | ~(values[:, 0] > SINGULAR * values[:, -1])
    inverse_values = np.where(undetermined[:, None], 0.0, 1 / np.where(values > 0, values, 1.0))
    rhs = np.einsum("kij,kip->kjp", vectors, scale[:, :, None] * t)
    beta = scale[:, :, None] * np.einsum("kij,kj,kjp->kip", vectors, inverse_values, rhs)
    coefficients = np.array(
        [math.factorial(k) / math.factorial(k - derivative) for k in range(derivative, degree + 1)]
    )
    shifts = (-mean[:, None]) ** np.arange(degree + 1 - derivative)[None, :]
    estimate = np.einsum("k,kj,kjp->kp", np.ones(len(q)), coefficients * shifts,
                         beta[:, derivative:]) / h**derivative  # fmt: skip
    return np.where(undetermined[:, None], np.nan, estimate), undetermined


def local_polynomial(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    *,
    bandwidth: float,
    degree: int = 2,
    derivative: int = 0,
    kernel: str | kernels.Kernel = "gaussian",
    empty: str = "nan",
) -> np.ndarray:
    """Local polynomial regression of one column, or a derivative of the fit.

    Shapes: ``x_train (n,)``, ``y_train (n,) | (n, p)``, ``x_query (k,)``; returns
    ``(k,)`` or ``(k, p)``. ``derivative=ν`` estimates ``m^(ν)`` by ``ν! β_ν`` of the fit
    of ``degree`` (at least ``ν``; ``p − ν`` odd is the usual choice). The exact sums of
    every pair, in float64.

    Parameters
    ----------
    x_train : array of shape (n,)
    y_train : array of shape (n,) or (n, p)
    x_query : array of shape (k,)
    bandwidth : float
        The kernel's scale (the Gaussian's standard deviation, a compact kernel's
        half-width).
    degree : int
        The local polynomial's degree.
    derivative : int
        The derivative to estimate (0: the regression function).
    kernel : str or Kernel
        A non-negative distance kernel.
    empty : {"nan", "warn", "raise"}
        A query whose neighbourhood cannot carry the polynomial (fewer than ``degree + 1``
        distinct keys of positive weight): NaN, NaN with a warning, or an error.

    Returns
    -------
    ndarray of shape (k,) or (k, p)

    References
    ----------
    Fan, J. & Gijbels, I. (1996). *Local Polynomial Modelling and Its Applications*,
    chapter 3. Chapman & Hall. Wand, M. P. & Jones, M. C. (1995). *Kernel Smoothing*,
    chapter 5.

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> x = np.linspace(0, 2, 50)
    >>> attnpool.local_polynomial(x, x**3, [1.0], bandwidth=0.3, degree=3,
    ...                           derivative=2).round(6)                    # 6 x at x = 1
    array([6.])
    """
    check_choice(empty, "empty", ("nan", "warn", "raise"))
    for value, name in ((degree, "degree"), (derivative, "derivative")):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ValueError(f"{name}: expected a non-negative integer; received {value!r}")
    if derivative > degree:
        raise ValueError(f"derivative: expected at most degree={degree}; received {derivative}")
    h = float(bandwidth) if isinstance(bandwidth, int | float | np.number) else math.nan
    if not (math.isfinite(h) and h > 0):
        raise ValueError(f"bandwidth: expected a positive number; received {bandwidth!r}")
    record = kernels.get(kernel)
    if record.similarity != "distance" or record.base is not None:
        raise ValueError(
            f"kernel: expected a non-negative distance kernel; received {record.name!r}"
        )
    x = np.asarray(check_points(x_train, "x_train"), float)
    q = np.asarray(check_points(x_query, "x_query"), float)
    if x.shape[1] != 1 or q.shape[1] != 1:
        raise ValueError(
            f"x_train, x_query: expected one column; received {x.shape[1]} and {q.shape[1]}"
        )
    y, flat = check_values(y_train, x.shape[0])
    y = np.asarray(y, float).reshape(x.shape[0], -1)
    x, q = x[:, 0], q[:, 0]
    rows = max(1, CHUNK_ENTRIES // max(1, x.shape[0] * (2 * degree + 1)))
    parts = [
        _chunk(x, y, q[i : i + rows], h, record, degree, derivative)
        for i in range(0, q.shape[0], rows)
    ]
    fit = np.concatenate([p[0] for p in parts]) if parts else np.empty((0, y.shape[1]))
    undetermined = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, bool)
    if undetermined.any() and empty != "nan":
        message = (
            f"{int(undetermined.sum())} of {len(undetermined)} queries have fewer than "
            f"degree + 1 = {degree + 1} distinct training points of positive weight"
        )
        if empty == "raise":
            raise ValueError(f"empty: {message}; widen the bandwidth or lower the degree")
        warnings.warn(f"{message}; their result is NaN", EmptyNeighbourhoodWarning, stacklevel=2)
    return fit[:, 0] if flat else fit
