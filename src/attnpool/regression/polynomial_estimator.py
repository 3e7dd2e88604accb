"""The local polynomial regressor (scikit-learn's protocol): :func:`local_polynomial` of
any degree with its bandwidth chosen by leave-one-out cross-validation, and the fit's
derivatives.

>>> import numpy as np
>>> from attnpool import LocalPolynomial
>>> X = np.linspace(0, 5, 80)[:, None]; y = np.sin(X[:, 0])
>>> model = LocalPolynomial(bandwidth=0.4, degree=3).fit(X, y)
>>> model.predict([[2.5]]).round(3), model.derivative([[2.5]]).round(3)   # sin, cos
(array([0.597]), array([-0.799]))
"""

from __future__ import annotations

import math
from typing import Any, Self

import numpy as np

from .. import kernels
from .._support.estimator_api import MultiOutputRegressor, check_is_fitted, is_dask, validate_data
from .._support.hints import ArrayLike, KernelSpec, NDArray
from .._support.units import objective_in_data_units, response_unit, units_beyond
from .._support.validation import check_bandwidth, check_choice
from .monomials import ORDINARY_BANDWIDTHS, checked_options
from .polynomial import POLYNOMIAL_METHODS, local_polynomial, loo_residuals
from .polynomial_engines import ENGINES

__all__ = ["LocalPolynomial"]


class LocalPolynomial(MultiOutputRegressor):
    """Local polynomial regression of any degree (R's ``locfit`` and ``loess`` default to
    2, ``KernSmooth::locpoly`` to 1): at each query, weighted least squares on the
    monomials of the offsets up to ``degree``, weights ``K((x − q)/h)``.

    Parameters
    ----------
    kernel : str or Kernel, default="gaussian"
        A non-negative distance kernel.
    bandwidth : float, array of shape (n_features,) or "cv", default="cv"
        The kernel's scale per column, or ``"cv"``: the leave-one-out cross-validation
        bandwidth, ``argmin_h Σ_i (y_i − m̂₋ᵢ(x_i))²`` (one factor times each column's
        rule of thumb, on the regressions' grid — reaching down past far points and gaps
        between clusters, and on past either end while the criterion falls — refined by
        Brent's method; rows a fit cannot carry make a bandwidth inadmissible). About 25
        leave-one-out fits of ``n²`` pairs each, on the compiled loop for the Gaussian at
        large ``n`` (as ``"auto"`` predicts; ``method="numpy"`` keeps them on the NumPy
        engine): on a 2-core machine in one column, 0.6 s at 500 rows (NumPy) and 0.35 s
        at 2000 (the loop; 9.3 s in NumPy).
    degree : int, default=2
        The local polynomial's degree (at most 2 in several columns).
    empty : {"nan", "warn", "raise"}, default="warn"
        Queries whose neighbourhood cannot carry the polynomial.
    method : {"auto", "numpy", "native", "dense", "stream", "pallas"}, default="auto"
        How the pairs are summed (:func:`attnpool.local_polynomial`); the CV search's
        leave-one-out fits run on the host: the compiled loop or the NumPy engine.

    Attributes
    ----------
    bandwidth_ : ndarray of shape (n_features,)
    cv_score_ : float
        The mean squared leave-one-out residual at ``bandwidth_`` (``"cv"`` only).

    References
    ----------
    Fan, J. & Gijbels, I. (1996). *Local Polynomial Modelling and Its Applications*.
    Chapman & Hall. Loader, C. (1999). *Local Regression and Likelihood*. Springer
    (R's ``locfit``).

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> x = np.random.default_rng(0).uniform(0, 1, (200, 1)); y = x[:, 0] ** 2
    >>> model = attnpool.LocalPolynomial(bandwidth=0.2).fit(x, y)
    >>> model.derivative([[0.5]], order=2).round(6)          # d²/dx² x² = 2
    array([2.])
    """

    def __init__(
        self,
        kernel: KernelSpec = "gaussian",
        bandwidth: Any = "cv",
        *,
        degree: int = 2,
        empty: str = "warn",
        method: str = "auto",
    ) -> None:
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.degree = degree
        self.empty = empty
        self.method = method

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Store the training data and choose the bandwidth.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)

        Returns
        -------
        self
        """
        if is_dask(X, y):
            raise ValueError(
                "X: LocalPolynomial fits arrays in memory; for Dask arrays call "
                "attnpool.local_polynomial with a bandwidth (a lazy fit, chunk by chunk)"
            )
        X, y = validate_data(self, X, y, multi_output=True, y_numeric=True, dtype=np.float64)
        check_choice(self.method, "method", POLYNOMIAL_METHODS)
        check_choice(self.empty, "empty", ("nan", "warn", "raise"))
        record, _ = checked_options(self.degree, 0, self.kernel, X.shape[1])
        if self.method in ENGINES:  # (what the method named refuses, refused now)
            outputs = 1 if y.ndim == 1 else y.shape[1]
            reason = ENGINES[self.method].refusal(record, X.shape[1], outputs, self.degree)
            if reason is not None:
                raise ValueError(f"method: {reason}")
        if isinstance(self.bandwidth, str):
            check_choice(self.bandwidth, "bandwidth", ("cv",))
            self.bandwidth_, self.cv_score_ = _cv_bandwidth(
                X, y, self.kernel, self.degree, self.method
            )
        else:
            self.bandwidth_ = np.asarray(check_bandwidth(self.bandwidth, X.shape[1]), float)
            self.bandwidth_ = np.broadcast_to(self.bandwidth_, (X.shape[1],)).copy()
        self.X_train_, self.y_train_ = X, y
        return self

    def predict(self, X: ArrayLike) -> NDArray:
        """The fit ``(n,)`` or ``(n, n_outputs)`` at the rows of ``X``."""
        return self.derivative(X, order=0)

    def derivative(self, X: ArrayLike, order: int = 1) -> NDArray:
        """The fit's derivatives of ``order`` at the rows of ``X``: in one column
        ``m^(order)`` ``(n,)``; in several the gradient ``(n, d)`` or Hessian
        ``(n, d, d)`` (a trailing axis per output for several outputs).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        order : int
            0 (the fit), 1, or 2 (at most ``degree``; in several columns at most 2).

        Returns
        -------
        ndarray
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return np.asarray(local_polynomial(
            self.X_train_, self.y_train_, X, bandwidth=self.bandwidth_, degree=self.degree,
            derivative=order, kernel=self.kernel, empty=self.empty, method=self.method,
        ))  # fmt: skip


def _cv_bandwidth(
    X: np.ndarray, y: np.ndarray, kernel: Any, degree: int, method: str
) -> tuple[Any, float]:
    """``(bandwidth (d,), score)``: the leave-one-out CV bandwidth, one factor times
    each column's rule of thumb, by the regressions' one-column host search (its grid
    of multiples of the rule, reaching down past far points and clusters and on past
    either end while the criterion falls, then Brent's method)."""
    from ..bandwidth.flat_criteria import FlatSettings, response_variance, smoothest_flat, warn_flat
    from ..bandwidth.grid import GRID, SearchLine, multipliers, steps_below
    from ..bandwidth.rules import search_start
    from ..bandwidth.search import SearchObjective, host_search

    # columns of x ~ 1e±200 in a power-of-two unit (exact): their spread and the fits'
    # powers of x − q stay in the float range
    centred = np.max(np.abs(X - X.mean(axis=0)), axis=0)
    x_unit = units_beyond(centred, ORDINARY_BANDWIDTHS)
    if x_unit is not None:
        bandwidth, cv_score = _cv_bandwidth(X / x_unit, y, kernel, degree, method)
        return bandwidth * x_unit, cv_score
    if not np.all(np.std(X, axis=0) > 0):
        raise ValueError("X: 'cv' needs every column to vary; a constant column has no scale")
    unit = response_unit(y)  # (y ~ 1e±200: squared residuals neither overflow nor vanish)
    y = y / unit
    start = search_start(X, kernel=kernel)
    grid = multipliers(len(GRID) + steps_below(X, range(X.shape[1])))

    def score(theta: np.ndarray) -> float:
        residuals = loo_residuals(X, y, math.exp(theta[0]) * start, kernel, degree, method)
        value = float(np.mean(residuals**2))
        return value if np.isfinite(value) else math.inf

    try:
        search = SearchObjective(score, smooth=not kernels.get(kernel).compact)
        theta, value, tried = host_search(search, SearchLine(np.log(grid)[:, None]), None)
        # (one factor times every column's rule: the columns move together)
        settings = FlatSettings(
            math.exp(theta[0]) * start,
            lambda points: np.array([score(np.log(point[:1] / start[:1])) for point in points]),
            np.full(len(start), np.inf),
        )
        moved = smoothest_flat("cv", value, tried, response_variance(y), settings,
                               below_grid=bool(math.exp(theta[0]) < grid[0]))  # fmt: skip
        if moved is not None:
            theta, value = np.log(moved[0][:1] / start[:1]), moved[1]
            warn_flat("cv", moved[0], moved[2])
    except ValueError as undefined:
        if "criterion is undefined at every candidate" not in str(undefined):
            raise  # (another error keeps its own message)
        raise ValueError(
            f"bandwidth: no bandwidth from {grid[0]:.3g}× to {grid[-1]:g}× the rule of thumb "
            f"gives every row a fit of degree {degree} when it is left out; lower the "
            "degree or give a bandwidth"
        ) from undefined
    return math.exp(theta[0]) * start, float(objective_in_data_units(value, "cv", unit))
