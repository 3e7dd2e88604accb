"""Pointwise standard errors and confidence bands for kernel regression.

Two methods, for Nadaraya–Watson (``degree=0``) and local linear (``degree=1``) fits:

- ``"asymptotic"`` — the large-sample variance of both estimators at an interior point,

  .. math:: \\operatorname{Var} \\hat g(x) \\approx
      \\frac{σ^2(x)\\, R(K)}{n h_1 \\cdots h_d\\, f(x)}
      = σ^2(x)\\, \\frac{\\int K^2}{\\int K} \\Big/ \\sum_i K\\big((x - x_i)/h\\big),

  where ``Σ_i K((x − x_i)/h)`` counts the points under the kernel (``n h^d f(x)`` in
  kernel units), ``R(K) = ∫K²`` is the kernel's roughness (for a radial kernel in
  ``d`` dimensions, by radial quadrature) and ``σ²(x)`` is the local residual
  variance: the Nadaraya–Watson smooth of the squared leave-one-out residuals at the
  same bandwidth. Continuous inputs only.
- ``"bootstrap"`` — ``B`` new responses ``y*ᵢ = ĝ(xᵢ) + εᵢ*`` (``"wild"``:
  ``εᵢ* = rᵢ vᵢ`` with Rademacher ``vᵢ``, robust to heteroscedastic noise;
  ``"residual"``: ``εᵢ*`` drawn from the centred residuals), all refitted in *one*
  pooling pass (the ``B`` replicates are ``B`` value columns of the same weights); the
  standard error is the replicates' standard deviation. Any column types. Residuals
  are the leave-one-out ones, so the noise is not under-estimated by the fit's own
  shrinkage.

Both bands are ``ĝ(x) ± z_{(1+level)/2} · se(x)``. (The "basic" bootstrap interval
``[2ĝ − q_{1−α/2}, 2ĝ − q_{α/2}]`` moves the centre by an estimate of the smoothing
bias, but the bias-corrected estimate ``2ĝ − E*ĝ*`` is noisier than ``ĝ`` and the
interval is not widened for it: on the sine data its coverage fell from 0.92 to 0.87.)

Neither method corrects the smoothing bias: the bands cover ``E ĝ(x)``, which is
``g(x)`` up to ``O(h²)`` in the interior. Near the boundary of the data,
Nadaraya–Watson's bias is ``O(h)`` (local linear's stays ``O(h²)``) and the asymptotic
variance is too small (fewer points lie under the kernel than its formula assumes for
the interior constant), so bands there cover less than their level; prefer local
linear and the bootstrap near the edges. Beyond the data (or in a gap of it), where
less than one point's weight lies under the kernel, the formula's variance grows as
``1 / Σ K`` — to 10⁴² twenty bandwidths out, where the fit's own spread is the noise's —
and is no standard error: the asymptotic band warns there, and the bootstrap's is one.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np
from scipy import stats

from .._support.hints import ArrayLike, Bandwidth, KernelSpec
from .._support.units import power_of_two_above
from .._support.validation import check_choice, check_positive_int
from ..kernels.calculus import kernel_integrals
from ..regression import validated
from ..sums.backends import get_backend
from ..sums.empty_policy import EmptyNeighbourhoodWarning, user_stacklevel
from .band_sums import (
    BandSettings,
    backend_band,
    host_band,
    numpy_band,
)

__all__ = [
    "BAND_METHODS",
    "ConfidenceBand",
    "confidence_band",
    "kernel_integrals",
]

#: How a band's standard errors are computed (``method=``).
BAND_METHODS = ("asymptotic", "bootstrap")
BOOTSTRAPS = ("wild", "residual")


class ConfidenceBand(NamedTuple):
    """Fit, standard error and a pointwise band; each ``(n,)`` or ``(n, p)`` like ``y``.

    Attributes
    ----------
    fit, std, lower, upper : ndarray
        The estimate, its standard error and the band ``fit ∓ z std`` (asymptotic) or the
        bootstrap's percentile-t limits.
    level : float
    method : str

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> band = attnpool.confidence_band(data.x_train, data.y_train, [2.0], bandwidth=0.4)
    >>> band.level, bool(band.lower[0] < band.fit[0] < band.upper[0])
    (0.95, True)

    References
    ----------
    Fan, J. & Gijbels, I. (1996). *Local Polynomial Modelling and Its Applications*,
    section 4.4. Chapman & Hall.
    """

    fit: np.ndarray
    std: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    method: str


def confidence_band(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_query: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    bandwidth: Bandwidth = 1.0,
    degree: int = 0,
    var_type: str | None = None,
    level: float = 0.95,
    method: str = "asymptotic",
    n_boot: int = 500,
    bootstrap: str = "wild",
    seed: int = 0,
    pooling: str = "auto",
) -> ConfidenceBand:
    """The fit at ``x_query`` with a pointwise ``level`` confidence band.

    Parameters
    ----------
    x_train : array (n,) or (n, d); y_train : array (n,) or (n, p); x_query : (k,) or (k, d)
    kernel, bandwidth, degree, var_type
        As :func:`attnpool.local_regression`.
    level : float in (0, 1)
    method : {"asymptotic", "bootstrap"}
    n_boot : int
        Bootstrap replicates
    bootstrap : {"wild", "residual"}
    seed : int
        The bootstrap's random draws
    pooling : str
        ``"auto"`` (the exact engines), or the name of a registered backend
        (:func:`attnpool.register_backend`), whose sums give the band of a
        local-constant fit of continuous columns.

    Returns
    -------
    ConfidenceBand

    Examples
    --------
    >>> import numpy as np
    >>> x = np.linspace(0, 5, 200); y = np.sin(x) + 0.1 * np.cos(40 * x)
    >>> band = confidence_band(x, y, [2.5], bandwidth=0.3)
    >>> bool(band.lower[0] < band.fit[0] < band.upper[0])
    True

    References
    ----------
    Fan, J. & Gijbels, I. (1996). *Local Polynomial Modelling and Its Applications*,
    section 4.4. Chapman & Hall.
    """
    check_choice(method, "method", BAND_METHODS)
    check_choice(bootstrap, "bootstrap", BOOTSTRAPS)
    n_boot = check_positive_int(n_boot, "n_boot", allow_none=False)
    if not (isinstance(level, float | int) and 0 < level < 1):
        raise ValueError(f"level: expected a number strictly between 0 and 1; received {level!r}")
    x, y, q, h, model, flat = validated(
        x_train, y_train, x_query, bandwidth, kernel, var_type, degree
    )
    if method == "asymptotic":
        _check_asymptotic(model, x.shape[1])
    settings = BandSettings(method, n_boot, bootstrap, seed)
    # each response in a power-of-two unit (exact to undo) of its largest magnitude: the
    # squared residuals then neither overflow (y ~ 1e200: NaN) nor underflow (1e-200: 0)
    unit = power_of_two_above(np.max(np.abs(y), axis=0))
    y = y / unit
    if get_backend(pooling) is not None:
        fit, std = backend_band(pooling, x, y, q, h, model, settings)
    else:
        check_choice(pooling, "pooling", ("auto",))
        found = None
        if method == "asymptotic":  # NumPy pairs, or the exact host backends: no JAX
            found = numpy_band(x, y, q, h, model) or host_band(x, y, q, h, model)
        fit, std = found or _compiled_band(x, y, q, h, model, settings)
    _report_empty(fit, model.kernel)
    return _band(fit * unit, std * unit, level, method, flat)


def _check_asymptotic(model: Any, d: int) -> None:
    """The asymptotic band's ``∫K²/∫K`` needs continuous columns and a kernel of finite
    integral."""
    if model.categorical:
        raise ValueError(
            f"method: 'asymptotic' needs continuous columns only; var_type {model.var_type!r} "
            "has categorical ones; use method='bootstrap'"
        )
    if not 0 < kernel_integrals(model.kernel, d)[0] < float("inf"):
        raise ValueError(
            f"kernel: method 'asymptotic' needs a kernel of finite integral in {d} "
            f"column(s); received {model.kernel.name!r}; use method='bootstrap'"
        )


def _report_empty(fit: np.ndarray, kernel: Any) -> None:
    """One :class:`~attnpool.EmptyNeighbourhoodWarning` for the queries no training
    point reaches (a compact kernel): their fit and band are NaN."""
    empty = int(np.sum(np.all(np.isnan(fit), axis=1)))
    if empty:
        warnings.warn(
            f"{empty} of {fit.shape[0]} queries have no training point within the "
            f"{kernel.name!r} kernel's support; their fit and band are NaN (widen the "
            "bandwidth)",
            EmptyNeighbourhoodWarning,
            stacklevel=user_stacklevel(),
        )


def _compiled_band(
    x: Any, y: Any, q: Any, h: Any, model: Any, settings: BandSettings
) -> tuple[np.ndarray, np.ndarray]:
    """``(fit, std)`` on the compiled exact engine (``dense`` or ``stream`` by size, JAX
    imported there) through the sums layer, in float64."""
    from ..engines.compiled_backends import ENGINES
    from ..methods.options import exact_engine

    engine = ENGINES[exact_engine(max(q.shape[0], x.shape[0]) * x.shape[0])]
    return backend_band(engine.name, x, y, q, h, model, settings, backend=engine)


def _band(fit: Any, std: Any, level: float, method: str, flat: bool) -> ConfidenceBand:
    z = stats.norm.ppf(0.5 + level / 2)
    lower, upper = fit - z * std, fit + z * std
    if flat:
        fit, std, lower, upper = fit[:, 0], std[:, 0], lower[:, 0], upper[:, 0]
    return ConfidenceBand(fit, std, lower, upper, float(level), method)
