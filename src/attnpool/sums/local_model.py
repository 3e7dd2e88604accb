"""A local regression's static description and its mixed-type product kernel.

The description and its checks are plain Python (the NumPy engine needs no JAX); the
traced functions import ``jax.numpy`` when first called.

Continuous columns use the kernel of the scaled distance (radial, or a product of
one-dimensional kernels: :mod:`attnpool.kernels`); ordered categorical
columns Wang–van Ryzin's kernel and unordered ones Aitchison–Aitken's, each with its
own ``λ ∈ (0, 1)``, as statsmodels and R's np do (their ``λ = 0``, exact matching, is
the limit ``λ → 0`` here).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .. import kernels as _kernels
from .._support.hints import ArrayLike, Bandwidth, KernelSpec
from .._support.validation import check_bandwidth, check_points, check_values

__all__ = [
    "VAR_TYPES",
    "LocalModel",
    "bandwidth_of",
    "categorical_upper",
    "checked_bandwidth",
    "log_categorical",
    "model_for",
    "relative",
    "solve_moments",
    "validated",
]

VAR_TYPES = "cou"


class LocalModel(NamedTuple):
    """Static description of a local regression (hashable, for ``jit``): what is fitted,
    not the data. Built by :func:`model_for`, which checks it against the training rows.

    Attributes
    ----------
    kernel : Kernel
        The continuous columns' kernel (for their number of columns).
    var_type : str
        One letter per column: ``"c"`` continuous, ``"o"`` ordered, ``"u"`` unordered.
    levels : tuple of int
        The number of levels of each unordered column (0 for the others): its
        Aitchison–Aitken kernel's ``c − 1``.
    degree : int
        0 (Nadaraya–Watson) or 1 (local linear).

    Examples
    --------
    >>> import numpy as np
    >>> model = model_for(np.array([[0.5, 0], [1.5, 2], [2.0, 1]]), var_type="cu")
    >>> model.var_type, model.levels, model.continuous, model.categorical
    ('cu', (0, 3), (0,), (1,))
    """

    kernel: _kernels.Kernel
    var_type: str
    levels: tuple[int, ...]
    degree: int

    @property
    def continuous(self) -> tuple[int, ...]:
        return tuple(j for j, t in enumerate(self.var_type) if t == "c")

    @property
    def categorical(self) -> tuple[int, ...]:
        return tuple(j for j, t in enumerate(self.var_type) if t != "c")


def model_for(x, *, kernel="gaussian", var_type=None, degree: int = 0) -> LocalModel:
    """The :class:`LocalModel` of a local regression on training inputs ``x``, its
    options checked and the levels of its unordered columns counted.

    Parameters
    ----------
    x : array of shape (n, d)
        The training inputs.
    kernel : str, Kernel or callable
        A distance kernel (:func:`attnpool.kernels.get`).
    var_type : str, optional
        One letter per column from ``"c"``, ``"o"``, ``"u"`` (default: all ``"c"``).
    degree : {0, 1}

    Returns
    -------
    LocalModel

    Raises
    ------
    ValueError
        Naming the argument: a dot-product kernel, a ``var_type`` of another length or
        letter, another degree.

    Examples
    --------
    >>> import numpy as np
    >>> model_for(np.zeros((4, 2)), kernel="epanechnikov", degree=1).var_type
    'cc'
    """
    kernel = _kernels.get(kernel)
    if kernel.similarity != "distance":
        raise ValueError(f"kernel: regression needs a distance kernel; received {kernel.name!r}")
    if kernel.base is not None:
        kernel.log_profile(0.0)  # a higher-order kernel's: says which functions take it
    d = x.shape[1]
    var_type = "c" * d if var_type is None else var_type
    if (
        not isinstance(var_type, str)
        or len(var_type) != d
        or any(t not in VAR_TYPES for t in var_type)
    ):
        raise ValueError(
            f"var_type: expected a string of {d} letters from 'c' (continuous), 'o' (ordered), "
            f"'u' (unordered), one per column; received {var_type!r}"
        )
    if degree not in (0, 1) or isinstance(degree, bool):
        raise ValueError(
            f"degree: expected 0 (Nadaraya–Watson) or 1 (local linear); received {degree!r}"
        )
    levels = tuple(
        int(np.unique(np.asarray(x[:, j])).size) if t == "u" else 0 for j, t in enumerate(var_type)
    )
    kernel = _kernels.for_dimensions(kernel, var_type.count("c"))
    return LocalModel(kernel, var_type, levels, int(degree))


def validated(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike | None,
    bandwidth: Bandwidth,
    kernel: KernelSpec,
    var_type: str | None,
    degree: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, LocalModel, bool]:
    """The arguments of a local regression checked, as every regression front end takes
    them (:func:`attnpool.local_regression`, the bands, the estimators' fits).

    Parameters
    ----------
    x_train : array of shape (n,) or (n, d)
    y_train : array of shape (n,) or (n, p)
    x_query : array of shape (k,) or (k, d), or None
        None: the training inputs.
    bandwidth : float or array of shape (d,)
        Positive for continuous columns, ``λ ∈ (0, 1)`` for categorical ones.
    kernel, var_type, degree
        As :func:`model_for` takes them.

    Returns
    -------
    x : ndarray of shape (n, d)
    y : ndarray of shape (n, p)
    q : ndarray of shape (k, d)
    h : ndarray of shape (d,), float64
    model : LocalModel
    flat : bool
        Whether ``y_train`` was given as ``(n,)``.

    Examples
    --------
    >>> x, y, q, h, model, flat = validated([0.0, 1.0, 2.0], [1.0, 3.0, 2.0], [0.5], 0.4,
    ...                                     "gaussian", None, 0)
    >>> x.shape, y.shape, q.shape, h, flat
    ((3, 1), (3, 1), (1, 1), array([0.4]), True)
    """
    x = check_points(x_train, "x_train", min_rows=1)
    y, flat = check_values(y_train, x.shape[0])
    q = x if x_query is None else check_points(x_query, "x_query", dims=x.shape[1])
    model = model_for(x, kernel=kernel, var_type=var_type, degree=degree)
    h = checked_bandwidth(bandwidth, model)
    return x, y, q, h, model, flat


def checked_bandwidth(bandwidth: Bandwidth, model: LocalModel) -> np.ndarray:
    """``(d,)`` float64: ``bandwidth`` checked for ``model``'s columns — positive and
    finite, a categorical column's ``λ`` below 1."""
    h = np.asarray(check_bandwidth(bandwidth, len(model.var_type)), dtype=float)
    for j in model.categorical:
        if not h[j] < 1:
            raise ValueError(
                f"bandwidth: column {j} is categorical ({model.var_type[j]!r}); its bandwidth λ "
                f"must lie in (0, 1); received {h[j]}"
            )
    return h


def relative(x, bandwidth, centre, model: LocalModel):
    """Rows prepared at bandwidths relative to the smallest continuous one, ``h / min h``
    (≥ 1): the nearest-key geometry, which cannot overflow however small the bandwidth.
    From the inputs themselves — rescaling rows already divided by ``h`` rounds twice, and
    keys equally far from a query were no longer tied."""
    import jax.numpy as jnp

    cont, cat = list(model.continuous), list(model.categorical)
    parts = []
    if cont:
        h = bandwidth[jnp.array(cont)]
        parts.append((x[:, cont] - centre) * (jnp.min(h) / h))  # as scale_coordinates does
    if cat:
        parts.append(x[:, cat])
    return jnp.concatenate(parts, axis=1)


def log_categorical(a, b, lam, kind: str, count: int, xp=np):
    """``log L(a, b)`` of one categorical column, broadcast over ``a`` and ``b`` (NumPy,
    or ``jax.numpy`` as ``xp``): Wang–van Ryzin's ``1 − λ`` on the diagonal and
    ``(1 − λ) λ^|a − b| / 2`` off it for an ordered column (``kind`` ``"o"``),
    Aitchison–Aitken's ``1 − λ`` and ``λ / (c − 1)`` for an unordered one of ``count``
    levels."""
    same = a == b
    if kind == "o":
        distance = xp.where(same, 1.0, xp.abs(a - b))
        other = math.log(0.5) + xp.log1p(-lam) + distance * xp.log(lam)
    else:
        other = xp.log(lam) - math.log(max(count - 1, 1))
    return xp.where(same, xp.log1p(-lam), other)


def categorical_upper(model: LocalModel) -> np.ndarray:
    """Largest meaningful λ per categorical column (Aitchison–Aitken: (c − 1)/c)."""
    return np.array(
        [
            1.0 if model.var_type[j] == "o" else (model.levels[j] - 1) / max(model.levels[j], 1)
            for j in model.categorical
        ]
    )


def bandwidth_of(theta, model: LocalModel, dtype=np.float64) -> np.ndarray:
    """``θ → h`` on the host (:func:`attnpool.bandwidth.criteria.to_bandwidth` traces it), computed
    in ``dtype`` and returned in float64: no eager JAX operation, each of which would
    build a program."""
    theta = np.asarray(theta, dtype)
    h = np.zeros(theta.shape, dtype)
    cont, cat = list(model.continuous), list(model.categorical)
    h[cont] = np.exp(theta[cont])
    if cat:
        with np.errstate(over="ignore"):  # a very negative logit: λ = 0
            h[cat] = categorical_upper(model).astype(dtype) / (1 + np.exp(-theta[cat]))
    return h.astype(float)


def solve_moments(means, d: int, p: int, degree: int, offset=None, signed: bool = False):
    """Fit ``(n, p)``, slopes ``(n, d, p)`` (prepared units) and ``(M⁻¹)₁₁`` from the local
    moments ``means (n, p [+ d + d² + d·p])`` (``[y, δ, δδᵀ, δy]``), in NumPy or JAX as
    ``means`` is.

    ``offset (n, d)``: the moments' offsets ``δ`` are taken from a reference point this
    far from each query (the fit is still at the query); None: from the query itself.

    Solved with unit diagonal (Jacobi scaling), so the ridge — 1e-12 (1e-6 in float32)
    — is relative to each column's local spread: linear data stay exact at every
    bandwidth (an absolute ridge shrank slopes once (spread / h)² fell near it).
    ``signed``: moments of signed weights (higher-order kernels), whose local "variance"
    may be negative: scaled by its magnitude, the ridge taking the diagonal's sign.
    """
    if isinstance(means, np.ndarray):
        xp = np
    else:
        import jax.numpy as xp
    y_bar = means[:, :p]
    n = means.shape[0]
    if degree == 0:
        return y_bar, xp.zeros((n, d, p), means.dtype), xp.ones(n, means.dtype)
    ridge = 1e-12 if means.dtype == np.float64 else 1e-6
    if d == 1 and xp is np:
        return _one_column(means, p, offset, signed, ridge)
    mu1 = means[:, p : p + d]
    mu2 = means[:, p + d : p + d + d * d].reshape(n, d, d)
    mu_dy = means[:, p + d + d * d :].reshape(n, d, p)
    covariance = mu2 - mu1[:, :, None] * mu1[:, None, :]
    variance = xp.diagonal(covariance, axis1=1, axis2=2)
    if signed:
        spread = xp.sqrt(xp.where(variance != 0, xp.abs(variance), 1.0))
        sign = xp.where(variance < 0, -1.0, 1.0)[:, :, None]
    else:
        spread, sign = xp.sqrt(xp.where(variance > 0, variance, 1.0)), 1.0
    unit = covariance / (spread[:, :, None] * spread[:, None, :]) + ridge * sign * xp.eye(
        d, dtype=means.dtype
    )
    moment = (mu_dy - mu1[:, :, None] * y_bar[:, None, :]) / spread[:, :, None]
    from_query = mu1 if offset is None else mu1 + offset
    mean = from_query / spread
    # one solve for the slopes' columns and (M⁻¹)₁₁'s (a division in one column on the host)
    both = xp.concatenate([moment, mean[:, :, None]], axis=2)
    solved = both / unit if d == 1 and xp is np else xp.linalg.solve(unit, both)
    slopes = solved[..., :p] / spread[:, :, None]
    intercept = y_bar - xp.einsum("nd,ndp->np", from_query, slopes)
    inverse_11 = 1.0 + xp.einsum("nd,nd->n", mean, solved[..., p])
    return intercept, slopes, inverse_11


def _one_column(means: np.ndarray, p: int, offset, signed: bool, ridge: float):
    """:func:`solve_moments` of degree 1 in one column, in NumPy: the same arithmetic on
    ``(n, 1)`` columns, each ``1 × 1`` system a division (a batched solve costs more)."""
    y_bar, mu1, mu2, mu_dy = (
        means[:, :p],
        means[:, p : p + 1],
        means[:, p + 1 : p + 2],
        means[:, p + 2 :],
    )
    variance = mu2 - mu1 * mu1
    if signed:
        spread = np.sqrt(np.where(variance != 0, np.abs(variance), 1.0))
        sign = np.where(variance < 0, -1.0, 1.0)
    else:
        spread, sign = np.sqrt(np.where(variance > 0, variance, 1.0)), 1.0
    unit = variance / (spread * spread) + ridge * sign
    from_query = mu1 if offset is None else mu1 + offset
    mean = from_query / spread
    slopes = (mu_dy - mu1 * y_bar) / spread / unit / spread
    intercept = y_bar - from_query * slopes
    inverse_11 = 1.0 + (mean * (mean / unit))[:, 0]
    return intercept, slopes[:, None, :], inverse_11
