"""Full (non-diagonal) bandwidth matrices for Gaussian densities in several columns, as R's
``ks`` chooses them.

With a matrix ``H`` the estimate is ``f̂(x) = n⁻¹ Σ_i φ_H(x − X_i)``, ``φ_H`` the normal
density of covariance ``H`` (``H = diag(h²)`` is the diagonal bandwidth ``h``).

- :func:`normal_scale_matrix` — ``ks::Hns``: the normal reference
  ``(4 / (n (d + 2)))^(2/(d+4)) S``, ``S`` the sample covariance.
- :func:`lscv_matrix` — ``ks::Hlscv``: the least-squares cross-validation criterion

  .. math:: \\mathrm{LSCV}(H) = \\frac1{n^2} \\sum_{i,j} φ_{2H}(X_i - X_j)
            - \\frac2{n(n-1)} \\sum_{i \\ne j} φ_H(X_i - X_j)

  (:func:`lscv_matrix_criterion`, exact over every pair) minimised over the Cholesky
  factor of ``H``, from the normal reference.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.optimize import minimize

from .._support.hints import ArrayLike
from .._support.validation import check_points
from .resolution import TiedDataWarning

__all__ = ["lscv_matrix", "lscv_matrix_criterion", "normal_scale_matrix"]

#: Pair differences formed at a time (memory).
_CHUNK = 2**20
#: The least eigenvalue of a sample's correlation matrix below which its covariance is
#: taken as singular (a column a combination of the others, to rounding).
SINGULAR_CORRELATION = 1e-12
#: How far (in log units) the search for the LSCV matrix's Cholesky factor may move its
#: diagonal from the normal reference's on the sphered sample (off the diagonal: as far
#: as ``e^LOG_REACH`` times its largest diagonal entry), and how often it restarts.
LOG_REACH = 12.0
RESTARTS = 8


def checked_sample(x: ArrayLike) -> np.ndarray:
    """``x (n, d)`` checked, in float64, with more rows than columns + 1."""
    data = np.asarray(check_points(x, "x"), float)
    if data.shape[0] < data.shape[1] + 2:
        raise ValueError(
            f"x: a bandwidth matrix needs more rows than columns + 1; received shape {data.shape}"
        )
    return data


def scaled_covariance(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(C, unit)``: the covariance ``(d, d)`` of the centred columns of checked ``data``
    each divided by its ``unit`` (its largest deviation, so that no square under- or
    overflows on the way); the sample covariance is ``unit_i unit_j C_ij``. Refused
    unless positive definite (a constant column, or one a combination of the others,
    has no bandwidth matrix)."""
    centred = data - data.mean(axis=0)
    unit = np.max(np.abs(centred), axis=0)
    unit = np.where(unit > 0, unit, 1.0)
    d = data.shape[1]
    scaled = np.asarray(np.cov(centred / unit, rowvar=False), float).reshape(d, d)
    spread = np.sqrt(np.diag(scaled))
    if not (np.all(spread > 0) and np.linalg.eigvalsh(scaled / np.outer(spread, spread))[0]
            > SINGULAR_CORRELATION):  # fmt: skip
        raise ValueError(
            "x: a bandwidth matrix needs a sample whose covariance is positive definite "
            "(no column constant or a combination of the others)"
        )
    return scaled, unit


def sample_covariance(data: np.ndarray) -> np.ndarray:
    """The sample covariance ``(d, d)`` of checked ``data`` (:func:`scaled_covariance`),
    refused where it lies beyond the float range."""
    return in_data_units(*scaled_covariance(data))


def in_data_units(matrix: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """``unit_i unit_j matrix_ij``: a matrix of the columns divided by ``unit``
    (:func:`scaled_covariance`) in the data's own units, refused where it lies beyond the
    float range (no bandwidth matrix of such data is a float64 number)."""
    with np.errstate(over="ignore", under="ignore"):
        return representable(matrix * np.outer(unit, unit), unit)


def representable(matrix: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """``matrix``, a bandwidth matrix (or covariance) of columns spread over ``unit``,
    refused where it lies beyond the float range (where it overflowed or underflowed
    on its way)."""
    if not (np.all(np.isfinite(matrix)) and np.all(np.diag(matrix) >= np.finfo(float).tiny)):
        raise ValueError(
            f"x: a bandwidth matrix of columns spread over {unit.tolist()} lies beyond the "
            "float range; rescale x"
        )
    return matrix


def normal_scale_matrix(x: ArrayLike) -> np.ndarray:
    """The normal reference bandwidth matrix ``(d, d)`` of a sample ``x (n, d)`` (``ks::Hns``).

    Parameters
    ----------
    x : array of shape (n, d)

    Returns
    -------
    ndarray of shape (d, d)

    References
    ----------
    Wand, M. P. & Jones, M. C. (1995). *Kernel Smoothing*, section 4.4. Chacón, J. E. &
    Duong, T. (2018). *Multivariate Kernel Smoothing and Its Applications*, section 3.6.

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> x = np.random.default_rng(0).normal(size=(400, 2)) @ [[1.0, 0.5], [0.0, 1.0]]
    >>> attnpool.normal_scale_matrix(x).round(3)
    array([[0.137, 0.069],
           [0.069, 0.17 ]])
    """
    data = checked_sample(x)
    n, d = data.shape
    return np.asarray((4 / (n * (d + 2))) ** (2 / (d + 4)) * sample_covariance(data))


def _pair_sums(data: np.ndarray, inverse: np.ndarray) -> tuple[float, float]:
    """``(Σ_{i<j} e^(−D_ij/2), Σ_{i<j} e^(−D_ij/4))`` with ``D = Δᵀ H⁻¹ Δ`` of the pairs."""
    n = data.shape[0]
    first, second = 0.0, 0.0
    rows = max(1, _CHUNK // max(1, n))
    for start in range(0, n - 1, rows):
        i = np.arange(start, min(start + rows, n - 1))
        block = data[i, None, :] - data[None, :, :]  # (rows, n, d)
        quadratic = np.einsum("rnj,jk,rnk->rn", block, inverse, block)
        upper = np.arange(n)[None, :] > i[:, None]
        first += float(np.sum(np.exp(-quadratic / 2), where=upper))
        second += float(np.sum(np.exp(-quadratic / 4), where=upper))
    return first, second


def lscv_matrix_criterion(x: ArrayLike, bandwidth: ArrayLike) -> float:
    """The LSCV criterion of a Gaussian density with bandwidth matrix ``bandwidth (d, d)``
    (``ks``'s unbinned ``lscv.mat``; every pair, exactly).

    Parameters
    ----------
    x : array of shape (n, d)
    bandwidth : array of shape (d, d)

    Returns
    -------
    float

    References
    ----------
    Rudemo, M. (1982). Empirical choice of histograms and kernel density estimators.
    *Scandinavian Journal of Statistics* 9(2), 65–78. Duong, T. & Hazelton, M. L. (2005).
    Cross-validation bandwidth matrices for multivariate kernel density estimation.
    *Scandinavian Journal of Statistics* 32(3), 485–506.

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> x = np.random.default_rng(0).normal(size=(200, 2))
    >>> round(attnpool.lscv_matrix_criterion(x, 0.2 * np.eye(2)), 5)
    -0.0774
    """
    data = checked_sample(x)
    d = data.shape[1]
    h = np.asarray(bandwidth, float)
    if h.shape != (d, d) or not np.all(np.isfinite(h)):
        raise ValueError(f"bandwidth: expected a finite ({d}, {d}) matrix; received {h!r}")
    value = _criterion(data, h)
    if value is None:
        raise ValueError("bandwidth: expected a positive definite matrix")
    return value


def _criterion(data: np.ndarray, h: np.ndarray) -> float | None:
    """:func:`lscv_matrix_criterion` of checked data; None where ``h`` is not positive
    definite (in floating point)."""
    n, d = data.shape
    sign, log_det = np.linalg.slogdet(h)
    if sign <= 0 or not np.isfinite(log_det):
        return None
    inverse = np.linalg.inv(h)
    near, far = _pair_sums(data, inverse)
    log_norm = -d / 2 * math.log(2 * math.pi) - log_det / 2  # of φ_H at 0
    at_zero_2h = math.exp(log_norm - d / 2 * math.log(2))  # φ_{2H}(0)
    whole = (n * at_zero_2h + 2 * far * at_zero_2h) / n**2
    left_out = 2 * near * math.exp(log_norm) / (n * (n - 1))
    return float(whole - 2 * left_out)


def lscv_matrix(x: ArrayLike) -> np.ndarray:
    """The least-squares cross-validation bandwidth matrix ``(d, d)`` of a Gaussian density
    of ``x (n, d)`` (``ks::Hlscv`` with ``binned = FALSE``): the criterion
    (:func:`lscv_matrix_criterion`) minimised over the Cholesky factor of ``H``, from the
    normal reference, on the sphered sample (so at any scale and shift). Tied rows make
    the criterion fall without end as ``H`` shrinks (``ks`` warns the same): a
    :class:`~attnpool.bandwidth.resolution.TiedDataWarning`.

    Parameters
    ----------
    x : array of shape (n, d)

    Returns
    -------
    ndarray of shape (d, d)

    References
    ----------
    Duong, T. & Hazelton, M. L. (2005). Cross-validation bandwidth matrices for
    multivariate kernel density estimation. *Scandinavian Journal of Statistics* 32(3),
    485–506. R package ``ks``, ``Hlscv``.

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> x = np.random.default_rng(0).normal(size=(200, 2)) @ [[1.0, 0.6], [0.0, 0.8]]
    >>> attnpool.lscv_matrix(x).round(2)
    array([[0.23, 0.31],
           [0.31, 0.42]])
    """
    data = checked_sample(x)
    d = data.shape[1]
    if np.unique(data, axis=0).shape[0] < data.shape[0]:
        warnings.warn(
            "x: the data contain tied rows; least-squares cross-validation is not well "
            "behaved with ties (it favours ever smaller bandwidths)",
            TiedDataWarning,
            stacklevel=2,
        )
    # searched on the sphered sample (its covariance the identity): LSCV is equivariant,
    # LSCV_x(T H Tᵀ) = LSCV_z(H) / |T|, so the minimiser is T H_z Tᵀ at any scale or shift
    # (data scaled by 1e-150 or 1e100 broke the search in the data's own units)
    scaled, unit = scaled_covariance(data)
    factor = np.linalg.cholesky(scaled)
    sphere = unit[:, None] * factor
    data = np.linalg.solve(sphere, (data - data.mean(axis=0)).T).T
    start = np.linalg.cholesky(normal_scale_matrix(data))
    lower = np.tril_indices(d)
    diagonal = lower[0] == lower[1]

    def matrix(theta: np.ndarray) -> np.ndarray:
        factor = np.zeros((d, d))
        factor[lower] = theta
        factor[lower[0][diagonal], lower[1][diagonal]] = np.exp(theta[diagonal])
        return factor @ factor.T

    def criterion(theta: np.ndarray) -> float:
        value = _criterion(data, matrix(theta))
        return math.inf if value is None else value

    theta = start[lower].copy()
    theta[diagonal] = np.log(theta[diagonal])
    # bounded (a first step of e^±1000 left the search where the criterion is not
    # finite, and it stopped short), and restarted where it stopped until it stays
    centre = np.where(diagonal, theta, 0.0)
    reach = np.where(diagonal, LOG_REACH, math.exp(LOG_REACH) * np.exp(theta[diagonal]).max())
    bounds = list(zip(centre - reach, centre + reach, strict=True))
    value = criterion(theta)
    for _ in range(RESTARTS):
        with np.errstate(invalid="ignore"):  # (SciPy's differences of ∞ where H is singular)
            found = minimize(criterion, theta, method="L-BFGS-B", bounds=bounds,
                             options={"ftol": 1e-15, "gtol": 1e-10})  # fmt: skip
        if not found.fun < value - 1e-13 * abs(value):
            break
        theta, value = found.x, found.fun
    return in_data_units(factor @ matrix(theta) @ factor.T, unit)
