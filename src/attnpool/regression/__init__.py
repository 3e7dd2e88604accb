"""Local polynomial regression: Nadaraya–Watson and local linear.

Degree 0 (local constant, Nadaraya–Watson) pools the responses. Degree 1 (local
linear) pools the local moments of ``δ = x_j − x`` — ``Σw``, ``Σw δ``,
``Σw δδᵀ``, ``Σw y``, ``Σw δ y`` — with the *same* pooling state, and solves
at each query

.. math::

    \\min_{a, b} \\sum_j w_j (y_j - a - b^\\top δ_j)^2 ,\\qquad \\hat g(x) = a,
    \\quad \\nabla \\hat g(x) = b

by the Schur complement ``C = E_w[δδᵀ] − E_w[δ]E_w[δ]ᵀ`` (a weighted
covariance, computed in bandwidth-scaled units and solved with unit diagonal plus a
ridge of ``1e-12`` — ``1e-6`` in float32 — relative to each column's local spread, so
linear data are reproduced at every bandwidth and a singular local design gets no slope
along a direction its keys do not span: one distinct key gives its response, keys on a
line the fit along that line; :func:`attnpool.local_polynomial`
answers NaN there instead).

Mixed data follow statsmodels/np: ``var_type`` has one letter per column —
``c`` continuous (the kernel of the scaled distance over all continuous columns),
``o`` ordered (Wang–van Ryzin: ``1 − λ`` if equal, else ``½(1 − λ) λ^|x − X|``),
``u`` unordered (Aitchison–Aitken: ``1 − λ`` if equal, else ``λ / (c − 1)`` with
``c`` levels) — multiplied across columns. For categorical columns the
"bandwidth" is ``λ ∈ (0, 1)``; as ``λ → 0`` it matches exactly.

Leave-one-out fits mask each point's own pair inside the blocks (no refits, no
subtraction that could cancel). The hat-matrix diagonal ``W_ii`` (for AICc) is
``α_ii`` for degree 0 and ``α_ii (1 + μ₁ᵀ C⁻¹ μ₁)`` for degree 1.

The fit's engine is the planner's or the method's (:mod:`attnpool.engines.planned_fit`):
the compiled engines' programs are in :mod:`attnpool.engines.local_fits`; small problems
run on the NumPy engine (:mod:`attnpool.engines.numpy_engine`), with the same formula and
without importing JAX.
"""

from __future__ import annotations

from typing import Any, Literal, overload

from .._support.hints import (
    Array,
    ArrayLike,
    Bandwidth,
    HostArrayLike,
    HostBandwidth,
    KernelSpec,
    NDArray,
)
from .._support.validation import check_choice
from ..engines.planned_fit import planned_local_fit
from ..methods.options import LOCAL_FIT_METHODS
from ..sums.empty_policy import EMPTY_POLICIES, fills_empty, report_empty
from ..sums.local_model import LocalModel, model_for, validated
from ..sums.observation_weights import positive_rows

__all__ = [
    "LocalModel",
    "local_regression",
    "model_for",
    "nadaraya_watson",
    "validated",
]


@overload
def nadaraya_watson(
    x_train: HostArrayLike,
    y_train: HostArrayLike,
    x_query: HostArrayLike,
    kernel: KernelSpec = "gaussian",
    *,
    bandwidth: HostBandwidth = 1.0,
    return_weights: Literal[False] = False,
    **options: Any,
) -> NDArray: ...


@overload
def nadaraya_watson(
    x_train: HostArrayLike,
    y_train: HostArrayLike,
    x_query: HostArrayLike,
    kernel: KernelSpec = "gaussian",
    *,
    bandwidth: HostBandwidth = 1.0,
    return_weights: Literal[True],
    **options: Any,
) -> tuple[NDArray, NDArray]: ...


@overload
def nadaraya_watson(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    kernel: KernelSpec = "gaussian",
    *,
    bandwidth: Bandwidth = 1.0,
    return_weights: Literal[False] = False,
    **options: Any,
) -> Array: ...


@overload
def nadaraya_watson(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    kernel: KernelSpec = "gaussian",
    *,
    bandwidth: Bandwidth = 1.0,
    return_weights: Literal[True],
    **options: Any,
) -> tuple[Array, Array]: ...


@overload
def nadaraya_watson(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    kernel: KernelSpec = "gaussian",
    *,
    bandwidth: Bandwidth = 1.0,
    return_weights: bool = False,
    **options: Any,
) -> Array | tuple[Array, Array]: ...


def nadaraya_watson(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    kernel: KernelSpec = "gaussian",
    *,
    bandwidth: Bandwidth = 1.0,
    return_weights: bool = False,
    **options: Any,
) -> Array | tuple[Array, Array]:
    """Nadaraya–Watson kernel regression: ``attention_pool(x_query, x_train, y_train)``.

    .. math:: \\hat f(x) = \\sum_i K((x - x_i)/h) y_i \\Big/ \\sum_j K((x - x_j)/h)

    ``options`` are those of :func:`attnpool.attention_pool` (``empty``, ``block_size``,
    ``return_weights``, ``method``, ``mask``, ``weights`` — the observations' weights).
    ``kernel`` may come fourth, as in the textbook's ``nadaraya_watson(x_train,
    y_train, x_val, kernel)``: a name, a :class:`~attnpool.Kernel`, or a Python function
    ``K(u)`` of the scaled distance ``u ≥ 0`` written with ``jax.numpy`` (on small NumPy
    data it is evaluated by one small program of its own, ~0.1 s the first time, not a
    pooling program per function). The weights (``return_weights=True``) are ``(n_query,
    n_train)``, each *row* summing to 1 — the transpose of the textbook's
    ``attention_w``, whose columns are the queries.

    Parameters
    ----------
    x_train : array of shape (n,) or (n, d)
    y_train : array of shape (n,) or (n, p)
    x_query : array of shape (k,) or (k, d)
    kernel : str, Kernel or callable
        The textbook's fourth argument.
    bandwidth : float or array of shape (d,)
    return_weights : bool
        Also return the ``(k, n)`` attention weights.
    **options
        ``empty``, ``block_size``, ``method``, ``mask``, ``weights``.

    Returns
    -------
    fit : array of shape (k,) or (k, p)
        NumPy for NumPy inputs, a JAX array for JAX inputs.
    weights : array of shape (k, n)
        With ``return_weights``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.linspace(0, 1, 5); y = 3 * x
    >>> nadaraya_watson(x, y, np.array([0.5]), bandwidth=0.2).round(6)
    array([1.5])

    References
    ----------
    Nadaraya, E. A. (1964). *Theory of Probability & Its Applications* 9(1), 141–142.
    Watson, G. S. (1964). *Sankhyā A* 26(4), 359–372. Zhang, A., Lipton, Z. C., Li, M.
    & Smola, A. J. (2023). *Dive into Deep Learning*, chapter 11.2.
    """
    from ..pooling import attention_pool

    return attention_pool(
        x_query, x_train, y_train, kernel=kernel, bandwidth=bandwidth,
        return_weights=return_weights, **options,
    )  # fmt: skip


@overload
def local_regression(
    x_train: HostArrayLike,
    y_train: HostArrayLike,
    x_query: HostArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    bandwidth: HostBandwidth = 1.0,
    degree: int = 0,
    var_type: str | None = None,
    empty: str = "nan",
    block_size: int | None = None,
    return_slopes: Literal[False] = False,
    weights: HostArrayLike | None = None,
) -> NDArray: ...


@overload
def local_regression(
    x_train: HostArrayLike,
    y_train: HostArrayLike,
    x_query: HostArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    bandwidth: HostBandwidth = 1.0,
    degree: int = 0,
    var_type: str | None = None,
    empty: str = "nan",
    block_size: int | None = None,
    return_slopes: Literal[True],
    weights: HostArrayLike | None = None,
) -> tuple[NDArray, NDArray]: ...


@overload
def local_regression(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    bandwidth: Bandwidth = 1.0,
    degree: int = 0,
    var_type: str | None = None,
    empty: str = "nan",
    block_size: int | None = None,
    return_slopes: Literal[False] = False,
    weights: ArrayLike | None = None,
) -> Array: ...


@overload
def local_regression(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    bandwidth: Bandwidth = 1.0,
    degree: int = 0,
    var_type: str | None = None,
    empty: str = "nan",
    block_size: int | None = None,
    return_slopes: Literal[True],
    weights: ArrayLike | None = None,
) -> tuple[Array, Array]: ...


@overload
def local_regression(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    bandwidth: Bandwidth = 1.0,
    degree: int = 0,
    var_type: str | None = None,
    empty: str = "nan",
    block_size: int | None = None,
    return_slopes: bool = False,
    weights: ArrayLike | None = None,
) -> Array | tuple[Array, Array]: ...


def local_regression(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    bandwidth: Bandwidth = 1.0,
    degree: int = 0,
    var_type: str | None = None,
    empty: str = "nan",
    block_size: int | None = None,
    return_slopes: bool = False,
    weights: ArrayLike | None = None,
    method: str = "auto",
) -> Any:
    """Local constant (``degree=0``) or local linear (``degree=1``) regression.

    Shapes: ``x_train (n,) | (n, d)``, ``y_train (n,) | (n, p)``, ``x_query (k,) | (k, d)``.
    Returns the fit ``(k,)`` or ``(k, p)``; with ``return_slopes`` also the
    gradient of the fit, ``(k, d)`` or ``(k, d, p)`` (statsmodels' marginal effects).
    Small problems with a built-in kernel run on the NumPy engine
    (:mod:`attnpool.engines.numpy_engine`), the rest on the compiled ones (``block_size`` streams
    the training points in blocks of that size).
    ``empty`` as in :func:`attnpool.attention_pool` (a query whose neighbourhood is
    empty gets NaN, the nearest training response, or an error). ``weights (n,)``:
    observation weights of the training rows (:mod:`attnpool.sums.observation_weights`; each
    key's kernel weight times ``w_i``, rows of weight 0 left out).

    Parameters
    ----------
    x_train : array of shape (n,) or (n, d)
    y_train : array of shape (n,) or (n, p)
    x_query : array of shape (k,) or (k, d)
    kernel : str, Kernel or callable
    bandwidth : float or array of shape (d,)
        A categorical column's entry is its ``λ``.
    degree : {0, 1}
    var_type : str, optional
        ``c``, ``o``, ``u`` per column (statsmodels' letters).
    empty : {"nan", "nearest", "warn", "raise"}
    block_size : int, optional
    return_slopes : bool
    weights : array of shape (n,), optional
    method : {"auto", "dense", "stream", "pallas"}
        The exact engine: by size (``"auto"``, ``"dense"``), key blocks (``"stream"``),
        or the tiled kernel (``"pallas"``: continuous columns; ``"auto"`` takes it on
        GPUs for problems beyond one block).

    Returns
    -------
    fit : ndarray of shape (k,) or (k, p)
    slopes : ndarray of shape (k, d) or (k, d, p)
        With ``return_slopes``.

    References
    ----------
    Fan, J. & Gijbels, I. (1996). *Local Polynomial Modelling and Its Applications*.
    Chapman & Hall.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.local_regression(data.x_train, data.y_train, [2.0], bandwidth=0.5,
    ...                           degree=1).round(3)
    array([3.553])
    """
    check_choice(empty, "empty", EMPTY_POLICIES)
    check_choice(method, "method", LOCAL_FIT_METHODS)
    x, y, q, h, model, flat = validated(
        x_train, y_train, x_query, bandwidth, kernel, var_type, degree
    )
    x, y, weights = positive_rows(x, y, weights)
    fit, slopes, empty_rows = planned_local_fit(
        x, y, q, h, model, method=method, nearest=fills_empty(model.kernel, empty),
        block_size=block_size, weights=weights,
    )  # fmt: skip
    report_empty(model.kernel, empty, empty_rows, noun="training point")
    if flat:
        fit, slopes = fit[:, 0], slopes[..., 0]
    return (fit, slopes) if return_slopes else fit
