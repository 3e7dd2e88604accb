"""LOWESS and LOESS on a table: the library side of ``attnpool fit --span`` and
``attnpool fit --lowess``.

``--span`` fits :class:`~attnpool.Loess` (R's ``loess``: degree 2 unless ``--degree``
says otherwise, a number or ``gcv``/``aicc``/``cv`` for the span, standard errors for
``--interval`` on exact or, with ``--statistics approximate``, R's approximate degrees
of freedom); ``--lowess`` smooths one column with :func:`~attnpool.lowess`
(statsmodels' rules, three robustness iterations, ``frac`` the span, 2/3 by default).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._support.validation import check_choice
from ..smoothers import lowess as lowess_smooth
from ..smoothers.loess import Loess
from .reading import DataError, read_columns
from .table import TableFit, check_roles, check_varying

__all__ = ["SmoothFit", "check_span_options", "smooth_table"]


@dataclass
class SmoothFit(TableFit):
    """A LOWESS or LOESS fit of a table (``method`` is ``"lowess"`` or ``"loess"``;
    ``bandwidth`` holds the span, ``objective`` LOESS's equivalent number of parameters)."""

    family: str = "gaussian"
    chosen_by: str = ""
    model: Any = None

    def summary(self) -> str:
        """What was fitted, in a few lines."""
        span = float(self.bandwidth[0])
        rows = f"{self.y_column!r} on {len(self.y_train)} rows"
        if self.method == "lowess":
            return (
                f"LOWESS (statsmodels' rules, 3 robustness iterations) of {rows}, frac = {span:.4g}"
            )
        chosen = f" (by {self.chosen_by})" if self.chosen_by else ""
        lines = [
            f"LOESS of degree {self.degree} ({self.family}) of {rows}, span = {span:.4g}{chosen}",
            f"equivalent number of parameters {self.objective:.2f}",
        ]
        if self.interval is not None:
            lines.append(
                f"pointwise {self.interval:g} t intervals on {self.model.df_:.1f} df (R's "
                f"predict.loess, {self.model.statistics} statistics)"
            )
        return "\n".join(lines)

    def figure(self):
        """The data and the smooth (one input column), with the band if asked."""
        from ..plotting import plot_fit

        grid = np.linspace(self.x_train.min(), self.x_train.max(), 400)
        bands = None
        if self.method == "lowess":
            curve = lowess_smooth(self.y_train, self.x_train[:, 0], frac=float(self.bandwidth[0]),
                           xvals=grid)  # fmt: skip
        else:
            curve = self.model.predict(grid[:, None])
            if self.interval is not None:
                band = self.model.predict_interval(grid[:, None], level=self.interval)
                bands = {f"{self.interval:g} band": band}
        return plot_fit(
            self.x_train[:, 0],
            self.y_train,
            grid,
            {f"{self.method}, span {float(self.bandwidth[0]):.3g}": curve},
            bands=bands,
            title=f"{self.y_column} against {self.x_columns[0]}",
            xlabel=self.x_columns[0],
            ylabel=self.y_column,
        )


def smooth_table(
    data: str | os.PathLike,
    x_columns: Sequence[str],
    y_column: str,
    *,
    span: str | None,
    lowess: bool = False,
    degree: int | None = None,
    family: str = "gaussian",
    predict: str | os.PathLike | None = None,
    dropna: bool = False,
    plot: bool = False,
    interval: float | None = None,
    sep: str | None = None,
    statistics: str | None = None,
) -> SmoothFit:
    """Smooth ``y_column`` on ``x_columns`` of the table ``data`` by LOESS (or LOWESS with
    ``lowess``); predict at ``predict`` (or the data)."""
    check_choice(family, "--family", ("gaussian", "symmetric"))
    if statistics is not None:
        check_choice(statistics, "--statistics", ("exact", "approximate"))
        if lowess:
            raise ValueError("--statistics: LOWESS has none; drop --lowess for LOESS's")
    if not x_columns:
        raise ValueError("--x: expected at least one input column; received none")
    check_roles({"--x": x_columns, "--y": [y_column]})
    if (lowess or plot) and len(x_columns) != 1:
        what = "--lowess" if lowess else "--plot"
        raise ValueError(f"{what}: needs exactly one --x column; received {len(x_columns)}")
    if lowess and interval is not None:
        raise ValueError("--interval: LOWESS has no standard errors; drop --lowess for "
                         "LOESS's t intervals")  # fmt: skip
    if interval is not None and not 0 < interval < 1:
        raise ValueError(f"--interval: expected a level strictly between 0 and 1 (such as "
                         f"0.95); received {interval!r}")  # fmt: skip
    chosen = _span(span, lowess)
    table, rows, _ = read_columns(data, [*x_columns, y_column], dropna=dropna, sep=sep)
    if len(table) < 3:
        raise DataError(f"{data}: expected at least 3 complete rows; received {len(table)}")
    x_train, y_train = table[:, :-1], table[:, -1]
    check_varying(data, x_columns, x_train)
    x_query, query_rows = (x_train, rows) if predict is None else read_columns(
        predict, list(x_columns), dropna=dropna, sep=sep)[:2]  # fmt: skip
    if lowess:
        frac = float(chosen)
        prediction = lowess_smooth(y_train, x_train[:, 0], frac=frac, xvals=x_query[:, 0])
        return SmoothFit(list(x_columns), y_column, x_train, y_train, x_query, prediction,
                         np.array([frac]), "lowess", float("nan"), 1, "tricube",
                         rows=query_rows)  # fmt: skip
    model = Loess(span=chosen, degree=2 if degree is None else degree, family=family,
                  statistics=statistics or "exact")  # fmt: skip
    model.fit(x_train, y_train)
    lower = upper = None
    if interval is not None:
        lower, upper = model.predict_interval(x_query, level=interval)
    return SmoothFit(list(x_columns), y_column, x_train, y_train, x_query,
                     model.predict(x_query), np.array([model.span_]), "loess", model.enp_,
                     model.degree, "tricube", interval, lower=lower, upper=upper,
                     rows=query_rows, family=family, model=model,
                     chosen_by=chosen if isinstance(chosen, str) else "")  # fmt: skip


def check_span_options(kernel, bandwidth, var_type, method, bandwidth_type, empty) -> None:
    """Kernel regression's options refused with ``--span`` or ``--lowess``, which choose
    their neighbourhoods by the span."""
    given = {"--kernel": kernel != "gaussian", "--bandwidth": bandwidth != "cv",
             "--var-type": var_type is not None, "--method": method != "auto",
             "--bandwidth-type": bandwidth_type != "fixed", "--empty": empty != "nan"}  # fmt: skip
    named = [name for name, set_ in given.items() if set_]
    if named:
        raise ValueError(
            f"{', '.join(named)}: not used by --span or --lowess (LOESS and LOWESS set "
            "their neighbourhoods by the span); leave them out"
        )


def _span(span: str | None, lowess: bool) -> float | str:
    if span is None:
        return 2.0 / 3.0 if lowess else 0.75
    if span in ("gcv", "aicc", "cv") and not lowess:
        return span
    try:
        value = float(span)
    except ValueError:
        accepted = "a number in (0, 1]" if lowess else "a number > 0, gcv, aicc or cv"
        raise ValueError(f"--span: expected {accepted}; received {span!r}") from None
    if not (value > 0 and (value <= 1 or not lowess) and np.isfinite(value)):
        accepted = "a number in (0, 1]" if lowess else "a number > 0, gcv, aicc or cv"
        raise ValueError(f"--span: expected {accepted}; received {span!r}")
    return value
