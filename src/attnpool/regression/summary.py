"""What a fitted regressor reports: its bandwidths and how they were chosen, the
criterion's value, R² in R np's definition beside scikit-learn's, the data and the method.

>>> import numpy as np
>>> from attnpool import NadarayaWatson
>>> x = np.linspace(0, 5, 200); y = np.sin(x) + 0.1 * np.cos(7 * x)
>>> print(NadarayaWatson(bandwidth=0.1).fit(x[:, None], y).summary())
NadarayaWatson kernel regression
...
Bandwidth                0.1
Chosen by                fixed by the user
R² (np, Doksum–Samarov)  0.9995
R² (scikit-learn score)  0.9995
Method                   auto
Backend                  numpy (at the training rows)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._support.units import power_of_two_above

__all__ = ["FitSummary", "r_squared", "summarised"]


def r_squared(y, fitted, weights=None) -> np.ndarray:
    """R² of ``fitted`` values against ``y``, each ``(n,)`` or ``(n, p)``, per output, as
    R's np reports it (Doksum & Samarov, 1995):

    .. math:: R^2 = \\frac{\\left[\\sum_i (y_i - \\bar y)(\\hat y_i - \\bar y)\\right]^2}
              {\\sum_i (y_i - \\bar y)^2 \\sum_i (\\hat y_i - \\bar y)^2}

    with ``ȳ`` the mean of ``y`` (statsmodels' ``KernelReg.r_squared`` centres on the mean
    of the fitted values instead, which is not np's statistic when the two means differ).
    In ``[0, 1]``; a constant ``y`` or a constant fit scores 1 when fitted exactly, else 0
    (as scikit-learn's ``r2_score`` does for a constant target). ``weights (n,)``: rows
    counted that many times (observation weights).
    """
    y = np.asarray(y, np.float64).reshape(np.shape(y)[0], -1)
    fitted = np.asarray(fitted, np.float64).reshape(y.shape)
    # in a power-of-two unit per output (exact): fourth powers of y ~ 1e±80 stay in range
    unit = power_of_two_above(np.max(np.abs(y), axis=0, initial=0.0))
    y, fitted = y / unit, fitted / unit
    w = np.ones(y.shape[0]) if weights is None else np.asarray(weights, np.float64)
    mean = w @ y / np.sum(w)
    observed, predicted = y - mean, fitted - mean
    numerator = (w @ (observed * predicted)) ** 2
    denominator = (w @ observed**2) * (w @ predicted**2)
    exact = np.all(fitted == y, axis=0)
    safe = np.where(denominator > 0, denominator, 1.0)
    return np.where(denominator > 0, numerator / safe, np.where(exact, 1.0, 0.0))


_CHOSEN_BY = {
    "cv": "leave-one-out cross-validation",
    "aicc": "AICc (Hurvich, Simonoff & Tsai)",
    "scott": "Scott's rule of thumb",
    "silverman": "Silverman's rule of thumb",
    "dpill": "plug-in (Ruppert, Sheather & Wand)",
    "fixed": "fixed by the user",
}


@dataclass(frozen=True)
class FitSummary:
    """A fitted regressor's summary; ``str()`` renders it as a table.

    ``bandwidth (d,)`` (numbers of neighbours for the ``bandwidth_type``s
    ``"generalized_nn"`` and ``"adaptive_nn"``); ``chosen_by``: ``"cv"``, ``"aicc"``,
    ``"scott"``, ``"silverman"`` or ``"fixed"``; ``criterion``: the CV mean squared error or
    the AICc at the bandwidth (None for rules and fixed bandwidths); ``r_squared``: np's R²
    (:func:`r_squared`), one per output; ``score``: scikit-learn's R² (``1 − SS_res /
    SS_tot``, averaged over outputs) of the in-sample fit.
    """

    estimator: str
    n_samples: int
    var_type: str
    kernel: str
    bandwidth: np.ndarray
    chosen_by: str
    criterion: float | None
    r_squared: np.ndarray
    score: float
    method: str
    bandwidth_type: str = "fixed"
    backend: str = ""

    def __str__(self) -> str:
        criterion = {"cv": "CV (mean squared error)", "aicc": "AICc"}.get(self.chosen_by)
        rows = [
            ("Estimator", self.estimator),
            ("Observations", str(self.n_samples)),
            ("Regressors", f"{len(self.var_type)} (var_type {self.var_type!r})"),
            ("Kernel", self.kernel),
            (
                "Bandwidth"
                if self.bandwidth_type == "fixed"
                else f"Neighbours ({self.bandwidth_type})",
                ", ".join(f"{h:.6g}" for h in self.bandwidth),
            ),
            ("Chosen by", _CHOSEN_BY[self.chosen_by]),
        ]
        if criterion and self.criterion is not None:
            rows.append((criterion, f"{self.criterion:.6g}"))
        rows += [
            ("R² (np, Doksum–Samarov)", ", ".join(f"{r:.4f}" for r in self.r_squared)),
            ("R² (scikit-learn score)", f"{self.score:.4f}"),
            ("Method", self.method),
        ]
        if self.backend:
            rows.append(("Backend", f"{self.backend} (at the training rows)"))
        width = max(len(name) for name, _ in rows)
        title = f"{self.estimator} kernel regression"
        lines = [title, "=" * max(len(title), width + 20)]
        lines += [f"{name:<{width}}  {value}" for name, value in rows]
        return "\n".join(lines)


def summarised(model: Any, var_type: str | None) -> FitSummary:
    """The :class:`FitSummary` of a fitted regressor ``model`` (its data, bandwidths, the
    criterion that chose them, R² of its in-sample fit) whose columns are ``var_type``."""
    from .._support.estimator_api import coefficient_of_determination

    fitted = model._fitted_training_values()
    criterion = getattr(model, {"cv": "cv_score_", "aicc": "aicc_"}.get(model._chosen_by, ""), None)
    kernel = (
        model.kernel if isinstance(model.kernel, str) else getattr(model.kernel, "name", "custom")
    )
    return FitSummary(
        estimator=type(model).__name__,
        n_samples=int(np.shape(model.X_train_)[0]),
        var_type=var_type or "c" * model.n_features_in_,
        kernel=str(kernel),
        bandwidth=np.asarray(model.bandwidth_, dtype=float),
        chosen_by=model._chosen_by,
        criterion=None if criterion is None else float(criterion),
        r_squared=r_squared(model.y_train_, fitted, model._weights),
        score=coefficient_of_determination(model.y_train_, fitted, model._weights),
        method=str(getattr(model.method, "name", model.method)),
        bandwidth_type=model.bandwidth_type,
        backend=str(getattr(model, "backend_", "")),
    )
