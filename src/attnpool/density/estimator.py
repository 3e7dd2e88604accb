"""Kernel density estimation as an estimator: :class:`KernelDensity` has scikit-learn's
interface over :func:`attnpool.density.log_density`, its bandwidths chosen by
:func:`attnpool.density.selection.select_density_bandwidth`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

import numpy as np

from .. import kernels as _kernels
from .._support.estimator_api import BaseEstimator, check_is_fitted, validate_data
from .._support.frames import fitted_var_type
from .._support.hints import ArrayLike, Bandwidth, KernelSpec, MethodSpec
from .._support.validation import check_bandwidth, check_choice
from ..bandwidth.rules import RULES, rule_of_thumb
from ..kernels import standard_deviation as kernel_standard_deviation
from ..sums.observation_weights import positive_rows
from . import log_density
from .distribution import kernel_cdf
from .functionals import density_entropy, density_quantile, log_survival
from .matrix_bandwidth import cholesky_factor, is_matrix
from .selection import DENSITY_SELECTORS, select_density_bandwidth

__all__ = ["KernelDensity"]


class KernelDensity(BaseEstimator):
    """Kernel density estimation with scikit-learn's ``KernelDensity`` interface.

    ``fit``, ``score_samples``, ``score`` and ``sample`` work as scikit-learn's do (and
    so ``GridSearchCV``); the bandwidth differs: the named rules scale by each column's
    spread (``"scott"`` is ``1.059 σ n^(−1/(4+d))``, statsmodels' ``normal_reference``,
    where scikit-learn's is ``n^(−1/(d+4))`` of standardised data) and ``bandwidth_``
    holds one bandwidth per column (scikit-learn's is one float).

    Parameters
    ----------
    kernel : str or Kernel, default="gaussian"
        A distance kernel of finite integral (:mod:`attnpool.kernels`; radial in several
        dimensions, or a ``-product`` kernel).
    bandwidth : float, array of shape (n_features,), "scott", "silverman", "normal_reference",
        "cv_ml", "cv_ls" or "isj", default="scott"
        Numbers, a rule of thumb of the data (Scott's by default, as statsmodels'
        ``KDEUnivariate`` and SciPy's ``gaussian_kde``: a fixed 1.0 flattened
        Old Faithful's two modes), or likelihood or least-squares cross-validation
        (:func:`select_density_bandwidth`), as the command line's ``density`` defaults to;
        or a peer's rule by name, giving that peer's number (R's ``"bw.nrd0"``,
        ``"scipy.scott"``, ``"sklearn.silverman"``, …:
        :mod:`attnpool.bandwidth.peer_rules`); or a callable ``bandwidth(X)`` returning
        numbers. A full matrix ``H`` of shape (n_features, n_features) (a radial kernel,
        continuous columns: ``K_H(u) = |H|^(−1/2) K(H^(−1/2) u)``, R ``ks``'s convention,
        ``diag(h²)`` being ``h``), or R ``ks``'s matrices by name: ``"Hns"`` (the normal
        reference), ``"Hpi"`` (the plug-in) and ``"Hlscv"`` (least-squares
        cross-validation), Gaussian.
    var_type : str, optional
        One letter per column, ``c`` continuous, ``o`` ordered, ``u`` unordered (as
        statsmodels' ``KDEMultivariate``); a categorical column's bandwidth is its ``λ``.
    method : str or Binned, default="auto"
        How ``score_samples`` sums (:data:`attnpool.density.DENSITY_METHODS`).
    bandwidth_kind : {"kernel", "sd"}, default="kernel"
        What numbers (given or returned by a callable) mean for continuous columns: the
        kernel's own parameter (the Gaussian's standard deviation, a compact kernel's
        half-width), or the kernel's standard deviation (R's ``density`` and KDEpy's
        convention: an Epanechnikov's half-width is √5 times it).

    Attributes
    ----------
    bandwidth_ : ndarray of shape (n_features,) or (n_features, n_features)
    n_features_in_ : int

    ``score_samples`` gives log densities (``−inf`` outside a compact kernel's reach),
    ``score`` their sum — the likelihood ``GridSearchCV`` maximises — and ``sample``
    draws from the estimate (Gaussian and boxcar kernels); ``cdf`` the distribution
    function, and for one column ``sf``, ``cumhazard``, ``quantile`` and ``entropy``
    (statsmodels' ``KDEUnivariate``'s, at any points: :mod:`attnpool.density.functionals`).

    References
    ----------
    Rosenblatt, M. (1956). Remarks on some nonparametric estimates of a density
    function. *Annals of Mathematical Statistics* 27(3), 832–837. Parzen, E. (1962). On
    estimation of a probability density function and mode. *Annals of Mathematical
    Statistics* 33(3), 1065–1076. Li, Q. & Racine, J. (2007). *Nonparametric
    Econometrics*, chapters 1–4. Princeton University Press.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> X = data.x_train[:, None]
    >>> density = attnpool.KernelDensity(bandwidth="cv_ml").fit(X)
    >>> density.bandwidth_.round(3), density.score_samples([[2.5]]).round(3)
    (array([0.201]), array([-1.33]))
    """

    n_features_in_: int

    def __init__(
        self,
        kernel: KernelSpec = "gaussian",
        bandwidth: Bandwidth | Callable[[np.ndarray], Any] = "scott",
        *,
        var_type: str | None = None,
        method: MethodSpec = "auto",
        bandwidth_kind: str = "kernel",
    ) -> None:
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.var_type = var_type
        self.method = method
        self.bandwidth_kind = bandwidth_kind

    def fit(
        self, X: ArrayLike, y: ArrayLike | None = None, sample_weight: ArrayLike | None = None
    ) -> Self:
        """Keep the sample ``X (n_samples, n_features)`` (``y`` is ignored) and its
        observation weights; rules of thumb choose the bandwidth if one is named."""
        X = validate_data(self, X, requires_y=False)
        X, _, weights = positive_rows(X, X[:, :1], sample_weight, name="sample_weight")
        if isinstance(self.bandwidth, str) and self.bandwidth in MATRIX_SELECTORS:
            self.bandwidth_ = _matrix_selection(self.bandwidth, X, self.kernel, weights)
        elif isinstance(self.bandwidth, str):
            check_choice(
                self.bandwidth, "bandwidth", (*RULES, *DENSITY_SELECTORS, *MATRIX_SELECTORS)
            )
            if X.shape[0] < 2:
                raise ValueError(
                    f"X: a bandwidth rule needs at least 2 samples; received n_samples={X.shape[0]}"
                )
            if self.bandwidth in DENSITY_SELECTORS:
                found = select_density_bandwidth(
                    X, method=self.bandwidth, kernel=self.kernel,
                    var_type=fitted_var_type(self, self.var_type), weights=weights,
                )  # fmt: skip
                self.bandwidth_ = found.bandwidth
            else:
                self.bandwidth_ = rule_of_thumb(
                    X, method=self.bandwidth, kernel=self.kernel, weights=weights,
                    var_type=fitted_var_type(self, self.var_type),
                )  # fmt: skip
        else:
            given = self.bandwidth(X) if callable(self.bandwidth) else self.bandwidth
            check_choice(self.bandwidth_kind, "bandwidth_kind", ("kernel", "sd"))
            if is_matrix(given) and X.shape[1] == 1:  # (1, 1): h² of the one column
                given = np.sqrt(np.asarray(given, float).reshape(-1))
            if is_matrix(given):
                self.bandwidth_ = self._checked_matrix(given, X.shape[1])
                given = None
            h = None if given is None else np.asarray(check_bandwidth(given, X.shape[1]), float)
            if h is None:
                pass
            elif self.bandwidth_kind == "sd":  # the kernel's standard deviation, R's and KDEpy's
                var_type = fitted_var_type(self, self.var_type) or "c" * X.shape[1]
                continuous = np.array([t == "c" for t in var_type])
                h = np.where(continuous, h / kernel_standard_deviation(self.kernel), h)
            if h is not None:
                self.bandwidth_ = h
        self.X_train_, self._weights = X, weights
        log_density(X[:1], X[:1], kernel=self.kernel, bandwidth=self.bandwidth_,
                    var_type=fitted_var_type(self, self.var_type))  # the checks  # fmt: skip
        return self

    def _checked_matrix(self, given: Any, d: int) -> np.ndarray:
        """A bandwidth matrix given for ``d`` columns, checked (continuous columns, a radial
        kernel), in the kernel's units."""
        var_type = fitted_var_type(self, self.var_type)
        if var_type is not None and set(var_type) != {"c"}:
            raise ValueError(
                f"bandwidth: a bandwidth matrix takes continuous columns; received "
                f"var_type={var_type!r}"
            )
        record = _kernels.get(self.kernel)
        matrix = np.asarray(given, float)
        cholesky_factor(matrix, d, record)
        if self.bandwidth_kind == "sd":
            matrix = matrix / kernel_standard_deviation(self.kernel) ** 2
        return matrix

    def score_samples(self, X: ArrayLike) -> np.ndarray:
        """Log density ``(n,)`` at each row of ``X``."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return log_density(
            self.X_train_, X, kernel=self.kernel, bandwidth=self.bandwidth_,
            weights=self._weights, var_type=fitted_var_type(self, self.var_type),
            method=self.method,
        )  # fmt: skip

    def score(self, X: ArrayLike, y: ArrayLike | None = None) -> float:
        """Total log likelihood of ``X`` under the estimate."""
        return float(np.sum(self.score_samples(X)))

    def cdf(self, X: ArrayLike) -> np.ndarray:
        """The estimated distribution function ``F̂`` ``(n,)`` at each row of ``X``
        (:func:`attnpool.kernel_cdf`)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        if is_matrix(self.bandwidth_):
            raise ValueError(
                "bandwidth: the distribution function takes a bandwidth per column; this "
                "estimate has a bandwidth matrix"
            )
        return kernel_cdf(
            self.X_train_, X, kernel=self.kernel, bandwidth=self.bandwidth_,
            weights=self._weights, var_type=fitted_var_type(self, self.var_type),
        )  # fmt: skip

    def sf(self, X: ArrayLike) -> np.ndarray:
        """The survival function ``Ŝ = 1 − F̂`` ``(n,)`` at each row of ``X`` (one column),
        summed from the right: exact in the far right tail."""
        return np.asarray(np.exp(-self.cumhazard(X)))

    def cumhazard(self, X: ArrayLike) -> np.ndarray:
        """The cumulative hazard ``−log Ŝ`` ``(n,)`` at each row of ``X`` (one column),
        from the log of the sums: finite wherever the estimate has mass to the right."""
        x, h = self._one_column("cumhazard")
        X = validate_data(self, X, reset=False)
        return np.asarray(-log_survival(x, X, self.kernel, h, self._weights))

    def quantile(self, p: ArrayLike) -> np.ndarray:
        """The quantiles ``F̂⁻¹(p)`` ``(k,)`` of the estimate (one column) at probabilities
        ``p`` in ``[0, 1]`` (0 and 1: the support's ends, ``±inf`` for an unbounded
        kernel)."""
        x, h = self._one_column("quantile")
        return density_quantile(x, p, self.kernel, h, self._weights)

    def entropy(self) -> float:
        """The differential entropy ``−∫ f̂ log f̂`` of the estimate (one column)."""
        x, h = self._one_column("entropy")
        return density_entropy(x, self.kernel, h, self._weights)

    def _one_column(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        check_is_fitted(self)
        if is_matrix(self.bandwidth_):
            raise ValueError(
                f"bandwidth: {name} is defined for an estimate of one continuous column; this "
                "one has a bandwidth matrix"
            )
        var_type = fitted_var_type(self, self.var_type) or "c"
        if self.n_features_in_ != 1 or var_type != "c":
            raise ValueError(
                f"X: {name} is defined for an estimate of one continuous column; this one has "
                f"{self.n_features_in_} column(s) of var_type {var_type!r}"
            )
        return self.X_train_, self.bandwidth_

    def sample(self, n_samples: int = 1, random_state: int | None = None) -> np.ndarray:
        """``(n_samples, n_features)`` draws: a training row (in proportion to its weight)
        plus the kernel's noise — a normal of standard deviation ``h`` (Gaussian), or a
        point uniform in the ball of radius ``h`` (boxcar)."""
        check_is_fitted(self)
        var_type = fitted_var_type(self, self.var_type)
        if var_type is not None and set(var_type) != {"c"}:
            raise ValueError(
                f"var_type: sample draws from continuous estimates; received var_type={var_type!r}"
            )
        record = _kernels.for_dimensions(_kernels.get(self.kernel), self.n_features_in_)
        if not _kernels.is_builtin(record, ("gaussian", "boxcar")):
            raise ValueError(
                f"kernel: sample draws from the 'gaussian' and 'boxcar' kernels; this estimate "
                f"has {record.name!r}"
            )
        rng = np.random.default_rng(random_state)
        n, d = self.X_train_.shape
        p = None if self._weights is None else self._weights / np.sum(self._weights)
        rows = self.X_train_[rng.choice(n, size=n_samples, p=p)]
        if record.name == "gaussian":
            noise = rng.normal(size=(n_samples, d))
        else:
            noise = rng.normal(size=(n_samples, d))
            noise /= np.linalg.norm(noise, axis=1, keepdims=True)
            noise *= rng.random(n_samples)[:, None] ** (1.0 / d)
        if is_matrix(self.bandwidth_):  # through the factor of H = L Lᵀ
            return np.asarray(rows + noise @ np.linalg.cholesky(self.bandwidth_).T)
        return np.asarray(rows + noise * self.bandwidth_)


#: ``bandwidth=`` names of R ``ks``'s bandwidth matrices (Gaussian kernel, unweighted).
MATRIX_SELECTORS = ("Hns", "Hpi", "Hlscv")


def _matrix_selection(name: str, X: np.ndarray, kernel: Any, weights: Any) -> np.ndarray:
    """The bandwidth matrix ``name`` of :data:`MATRIX_SELECTORS` for the sample ``X``."""
    from ..bandwidth.matrices import lscv_matrix, normal_scale_matrix
    from ..bandwidth.matrix_plug_in import plug_in_matrix

    if not _kernels.is_gaussian(_kernels.get(kernel)) or weights is not None:
        raise ValueError(
            f"bandwidth: {name!r} (R ks's) chooses the matrix of an unweighted Gaussian "
            f"estimate; received kernel={kernel!r}"
            + (" and sample_weight" if weights is not None else "")
        )
    choose = {"Hns": normal_scale_matrix, "Hpi": plug_in_matrix, "Hlscv": lscv_matrix}[name]
    return choose(X)
