"""Significance tests of regressors: does ``E[y | x]`` depend on these columns?

R's np ``npsigtest`` and statsmodels' ``KernelReg.sig_test``, on a fitted
:class:`~attnpool.NadarayaWatson` or :class:`~attnpool.LocalLinear` (its kernel, columns
and bandwidths, held fixed):

- **continuous columns** ``J`` — Racine, Hart & Li (2006): the mean squared marginal
  effect ``λ = (1/n) Σ_i Σ_{j∈J} (∂ĝ(x_i)/∂x_j)²``; under the null the columns do not
  matter, so the null fit ``M`` is the fit with them held at their means, and its
  centred residuals are resampled (``bootstrap="iid"``, as statsmodels) or multiplied by
  Mammen's two-point weights (``"wild"``);
- **a categorical column** ``z`` with levels ``l_0 < l_1 < …`` — Racine (2004):
  ``I = (1/n) Σ_i Σ_{l ≠ l_0} (ĝ(x_i, z = l) − ĝ(x_i, z = l_0))²``; the null fit is the
  mean of ``ĝ(x_i, z = l)`` over the levels, with wild-bootstrap residuals.

Each replicate ``y* = M + e*`` is refitted at the same bandwidths and the statistic
recomputed; the p-value is ``(1 + #{stat* ≥ stat}) / (1 + B)``. The errors ``e*`` are
drawn from the *unrestricted* model's leave-one-out residuals ``y_i − ĝ₋ᵢ(x_i)``, as in
Racine, Hart & Li (2006) and np's ``npsigtest``: the null fit's residuals would carry the
tested columns' effect into every replicate (a strong signal then had p ≈ 0.8), and
the in-sample residuals are shrunk by the fit (too many rejections of a true null). The
fits are linear in ``y``, so the replicates are one fit of a ``(n, B)`` response (in
column chunks).

Size and power are measured in the tests by simulation (n = 80, two columns, fixed
bandwidths, nominal 10 %): both models reject a true null about 10 % of the time.

References
----------
Racine, J. (1997). Consistent significance testing for nonparametric regression.
*Journal of Business & Economic Statistics* 15(3), 369–378.

Racine, J., Hart, J. & Li, Q. (2006). Testing the significance of categorical predictor
variables in nonparametric regression models. *Econometric Reviews* 25(4), 523–544.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._support.units import power_of_two_above
from .._support.validation import check_choice, check_positive_int
from ..engines.numpy_engine import NUMPY_MAX_WORK

if TYPE_CHECKING:
    from ..regression.estimator import LocalLinear, NadarayaWatson

__all__ = ["SignificanceTest", "significance_test"]

BOOTSTRAPS = ("iid", "wild")


@dataclass(frozen=True)
class SignificanceTest:
    """The outcome of :func:`significance_test`.

    Attributes
    ----------
    statistic : float
        ``λ`` (continuous columns) or ``I`` (a categorical one), in squared units of
        ``y`` (0 or ``inf`` where that is beyond the float range: the test itself runs
        in a power-of-two unit of ``y``, so its p-value does not depend on ``y``'s scale)
    p_value : float
        Bootstrap p-value, ``(1 + #{stat* ≥ stat}) / (1 + n_boot)``
    columns : tuple of int
        The columns tested (jointly)
    kind : {"continuous", "categorical"}
    null_statistics : ndarray (n_boot,)
        The statistic of each bootstrap replicate

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> model = attnpool.LocalLinear(bandwidth=0.4).fit(data.x_train[:, None], data.y_train)
    >>> found = attnpool.significance_test(model, 0, n_boot=99)
    >>> found.p_value, found.stars
    (0.01, '**')

    References
    ----------
    Racine, J. (1997). Consistent significance testing for nonparametric regression.
    *JBES* 15(3), 369–378. Hayfield, T. & Racine, J. S. (2008). Nonparametric
    econometrics: the np package. *Journal of Statistical Software* 27(5) (``npsigtest``
    and its significance codes).
    """

    statistic: float
    p_value: float
    columns: tuple[int, ...]
    kind: str
    null_statistics: np.ndarray

    @property
    def stars(self) -> str:
        """np's and statsmodels' codes: ``***`` below 0.01, ``**`` 0.05, ``*`` 0.1."""
        for level, code in ((0.01, "***"), (0.05, "**"), (0.1, "*")):
            if self.p_value < level:
                return code
        return ""

    def __str__(self) -> str:
        tested = ", ".join(map(str, self.columns))
        return (
            f"Significance of {self.kind} column(s) {tested}: statistic {self.statistic:.6g}, "
            f"p-value {self.p_value:.4g} {self.stars} ({self.null_statistics.size} bootstrap "
            "replicates)"
        ).rstrip()


def significance_test(
    model: NadarayaWatson | LocalLinear,
    columns: int | Sequence[int],
    *,
    n_boot: int = 399,
    bootstrap: str = "iid",
    seed: int = 0,
) -> SignificanceTest:
    """Test whether the fitted regression depends on ``columns`` (indices of ``X``'s columns).

    Parameters
    ----------
    model : fitted NadarayaWatson or LocalLinear (its bandwidths are kept)
    columns : int or sequence of int
        Continuous columns, tested jointly, or one categorical column (``var_type`` ``o``
        or ``u``).
    n_boot : int
        Bootstrap replicates
    bootstrap : {"iid", "wild"}
        Residuals resampled, or wild (Mammen) weights;
        categorical columns use wild weights, as the Racine (2004) test does
    seed : int

    Returns
    -------
    SignificanceTest

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, (150, 2)); y = np.sin(6 * X[:, 0]) + rng.normal(0, 0.3, 150)
    >>> model = attnpool.LocalLinear(bandwidth=[0.1, 0.3]).fit(X, y)
    >>> significance_test(model, 0, n_boot=99).p_value           # x₀ matters
    0.01
    >>> significance_test(model, 1, n_boot=99).p_value > 0.1     # x₁ does not
    True

    References
    ----------
    Racine, J. (1997). Consistent significance testing for nonparametric regression.
    *JBES* 15(3), 369–378. Racine, J., Hart, J. & Li, Q. (2006). *Econometric Reviews*
    25(4), 523–544.
    """
    from .._support.estimator_api import check_is_fitted
    from ..regression.pairs import refuse

    check_is_fitted(model)
    # the tests refit at fixed bandwidths with a non-negative kernel: neighbour counts are
    # no widths, and a higher-order kernel has no slopes of its own here
    refuse(model.kernel, getattr(model, "bandwidth_type", "fixed"), "significance_test")
    n_boot = check_positive_int(n_boot, "n_boot", allow_none=False)
    check_choice(bootstrap, "bootstrap", BOOTSTRAPS)
    x, y = np.asarray(model.X_train_, np.float64), np.asarray(model.y_train_, np.float64)
    if y.ndim != 1:
        raise ValueError(f"model: expected a fit of one response; this one has {y.shape[1]}")
    if getattr(model, "_weights", None) is not None:
        raise ValueError("model: the tests are for unweighted fits; it was fitted with weights")
    tested = _columns(columns, x.shape[1])
    var_type = model.var_type or "c" * x.shape[1]
    kinds = {var_type[j] == "c" for j in tested}
    if len(kinds) > 1 or (False in kinds and len(tested) > 1):
        raise ValueError(
            f"columns: expected continuous columns, or one categorical column; received "
            f"{list(tested)} of var_type {var_type!r}"
        )
    fit = _Fit(model, x, var_type)
    # y in a power-of-two unit (exact to undo): the squared effects neither overflow nor
    # underflow (y ~ 1e±200 gave p = 1); the statistics are brought back to y's units
    unit = float(power_of_two_above(np.max(np.abs(y))))
    y = y / unit
    rng = np.random.default_rng(seed)
    # the errors are the unrestricted fit's leave-one-out residuals: the null fit's would
    # carry the tested columns' signal into every replicate (no power), the in-sample
    # residuals are shrunk by the fit's own noise (too small a spread: too many rejections)
    residuals = y - fit.left_out(y)
    if True in kinds:  # slopes in a power-of-two unit of the tested bandwidths (exact): their
        # squares for x ~ 1e±200 stay in range, and are brought back with y's units below
        slope_unit = float(power_of_two_above(np.min(fit.options["bandwidth"][list(tested)])))
        fit.slope_unit = slope_unit
        unit = unit / slope_unit
        statistic, null_fit = fit.mean_squared_effect(y[:, None], tested)[0], fit.held(y, tested)
        draw = _residual_draws(residuals, n_boot, bootstrap, rng)
        replicates = null_fit[:, None] + draw
        null = fit.in_chunks(lambda block: fit.mean_squared_effect(block, tested), replicates)
        kind = "continuous"
    else:
        levels = np.unique(x[:, tested[0]])
        statistic = fit.level_differences(y[:, None], tested[0], levels)[0]
        null_fit = np.mean([fit.at_level(y[:, None], tested[0], lv)[:, 0] for lv in levels], 0)
        replicates = null_fit[:, None] + _residual_draws(residuals, n_boot, "wild", rng)
        null = fit.in_chunks(
            lambda block: fit.level_differences(block, tested[0], levels), replicates
        )
        kind = "categorical"
    p_value = (1 + np.sum(null >= statistic)) / (1 + n_boot)
    with np.errstate(over="ignore", under="ignore"):  # (in y's units: 0 or ∞ beyond floats)
        statistic, null = statistic * unit * unit, null * unit * unit
    return SignificanceTest(float(statistic), float(p_value), tested, kind, null)


def _columns(columns: Any, d: int) -> tuple[int, ...]:
    chosen = np.atleast_1d(np.asarray(columns))
    valid = np.issubdtype(chosen.dtype, np.integer) and chosen.ndim == 1 and chosen.size
    if not (valid and np.all((0 <= chosen) & (chosen < d))) or len(set(chosen.tolist())) < len(
        chosen
    ):
        raise ValueError(
            f"columns: expected distinct column indices in [0, {d}); received {columns!r}"
        )
    return tuple(int(c) for c in chosen)


def _residual_draws(
    residuals: np.ndarray, n_boot: int, bootstrap: str, rng: np.random.Generator
) -> np.ndarray:
    """``(n, n_boot)`` bootstrap residuals from the centred ``residuals``."""
    e = residuals - residuals.mean()
    if bootstrap == "iid":
        return np.asarray(e[rng.integers(0, e.size, (e.size, n_boot))])
    # Mammen's two-point weights: mean 0, variance 1, third moment 1
    low, high = (1 - np.sqrt(5)) / 2, (1 + np.sqrt(5)) / 2
    pick_low = rng.random((e.size, n_boot)) < (np.sqrt(5) + 1) / (2 * np.sqrt(5))
    return np.asarray(e[:, None] * np.where(pick_low, low, high))


class _Fit:
    """The model's fit at fixed bandwidths, for any response matrix ``(n, k)``."""

    def __init__(self, model: Any, x: np.ndarray, var_type: str | None) -> None:
        self.x, self.var_type = x, var_type
        self.slope_unit = 1.0  # slopes are reported times this (a power of two)
        self.options = {
            "kernel": model.kernel,
            "bandwidth": np.asarray(model.bandwidth_, np.float64),
            "degree": model._degree,
            "var_type": var_type,
        }

    def in_chunks(self, statistic: Any, responses: Any) -> np.ndarray:
        """``statistic`` of each response column, evaluated a few columns at a time (the
        NumPy engine's size; one fit per chunk)."""
        d = self.x.shape[1]
        width = 1 if self.options["degree"] == 0 else (1 + d) ** 2
        per_chunk = max(1, NUMPY_MAX_WORK // (self.x.shape[0] ** 2 * width))
        return np.concatenate(
            [
                statistic(responses[:, start : start + per_chunk])
                for start in range(0, responses.shape[1], per_chunk)
            ]
        )

    def mean_squared_effect(self, responses: Any, tested: Any) -> np.ndarray:
        """``λ (k,)``: the mean over the rows of the tested columns' squared marginal effects."""
        from ..regression import local_regression
        from ..regression.fit_parts import local_constant_slopes

        if self.options["degree"] == 1:
            _, slopes = local_regression(
                self.x, responses, self.x, return_slopes=True, **self.options
            )
        else:
            slopes = local_constant_slopes(
                self.x, responses, self.x, kernel=self.options["kernel"],
                bandwidth=self.options["bandwidth"],
            )  # fmt: skip
        slopes = np.reshape(slopes, (self.x.shape[0], self.x.shape[1], -1)) * self.slope_unit
        return np.asarray(np.sum(slopes[:, list(tested), :] ** 2, axis=(0, 1)) / self.x.shape[0])

    def left_out(self, y: np.ndarray) -> np.ndarray:
        """The model's leave-one-out fit ``(n,)`` (a row with no other in reach: its own
        value, a residual of 0)."""
        from ..engines.numpy_engine import local_fit
        from ..sums.local_model import model_for

        o = self.options
        model = model_for(self.x, kernel=o["kernel"], var_type=o["var_type"], degree=o["degree"])
        fit = local_fit(self.x, y[:, None], self.x, o["bandwidth"], model, exclude_self=True)[0]
        return np.where(np.isfinite(fit[:, 0]), fit[:, 0], y)

    def held(self, y: np.ndarray, tested: Any) -> np.ndarray:
        """The null fit ``(n,)``: the fit of ``y`` with the tested columns at their means."""
        from ..regression import local_regression

        x = self.x.copy()
        x[:, list(tested)] = x[:, list(tested)].mean(axis=0)
        return np.asarray(local_regression(x, y, x, **self.options))

    def at_level(self, responses: Any, column: int, level: float) -> np.ndarray:
        """The fits ``(n, k)`` at the rows with ``column`` set to ``level``."""
        from ..regression import local_regression

        queries = self.x.copy()
        queries[:, column] = level
        return np.reshape(
            local_regression(self.x, responses, queries, **self.options), (self.x.shape[0], -1)
        )

    def level_differences(self, responses: Any, column: int, levels: Any) -> np.ndarray:
        """``I (k,)``: the mean over the rows of ``Σ_{l ≠ l_0} (ĝ(z = l) − ĝ(z = l_0))²``."""
        base = self.at_level(responses, column, levels[0])
        total = sum((self.at_level(responses, column, lv) - base) ** 2 for lv in levels[1:])
        return np.asarray(np.sum(total, axis=0) / self.x.shape[0])
