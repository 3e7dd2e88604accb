"""Kernel regression on a table: choose the bandwidth, predict, write.

The library side of ``attnpool fit``, over the tables :mod:`attnpool.cli.reading`
reads. Every problem with the data (too few rows, a constant column) is a
:class:`~attnpool.cli.reading.DataError` that says what and where.
"""

from __future__ import annotations

import csv
import io
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .._support.files import atomic_write, figure_bytes
from .._support.validation import check_choice
from ..bandwidth import SELECTORS
from ..bandwidth.selection import SELECTOR_ALIASES
from ..regression.estimation import FitOptions, fitted_bandwidth
from ..regression.estimation import predict as estimation_predict
from ..regression.pairs import is_pair_fit
from .reading import STDIO, DataError, read_columns

__all__ = ["STDIO", "DataError", "TableFit", "fit_table", "read_columns"]


@dataclass
class TableFit:
    """Result of :func:`fit_table`."""

    x_columns: list[str]
    y_column: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_query: np.ndarray
    prediction: np.ndarray
    bandwidth: np.ndarray
    method: str
    objective: float
    degree: int
    kernel: str
    interval: float | None = None
    var_type: str | None = None
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    bandwidth_type: str = "fixed"
    #: Each query's data row in its table (counted from 1, blank lines not counted): what
    #: joins the predictions back to the input after ``--dropna``.
    rows: np.ndarray | None = None

    def summary(self) -> str:
        """What was chosen, in a few lines."""
        widths = ", ".join(
            f"{c} = {shown_width(h, column)}"
            for c, h, column in zip(self.x_columns, self.bandwidth, self.x_train.T, strict=True)
        )
        what = "bandwidth" if self.bandwidth_type == "fixed" else self.bandwidth_type
        lines = [
            f"{'Nadaraya–Watson' if self.degree == 0 else 'local linear'} regression of "
            f"{self.y_column!r} on {len(self.y_train)} rows, {self.kernel} kernel",
            f"{what} ({self.method}): {widths}",
        ]
        if self.method in ("cv", "aicc"):
            label = "leave-one-out CV error (mean squared)" if self.method == "cv" else "AICc"
            lines.append(f"{label}: {self.objective:.6g}")
        if self.interval is not None:
            lines.append(f"pointwise {self.interval:g} confidence band (asymptotic)")
        return "\n".join(lines)

    def write_predictions(self, path: str | os.PathLike) -> str:
        """CSV of the query columns and the prediction, in the queries' row order: a file
        (written atomically; its path is returned) or ``"-"``, standard output."""
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        header = [*self.x_columns, f"{self.y_column}_predicted"]
        columns = [self.prediction]
        if self.interval is not None:
            header += [f"{self.y_column}_lower", f"{self.y_column}_upper"]
            columns += [self.lower, self.upper]
        writer.writerow([*header, "row"])
        rows = np.arange(1, len(self.x_query) + 1) if self.rows is None else self.rows
        for row, values, number in zip(self.x_query, np.column_stack(columns), rows, strict=True):
            writer.writerow([*(repr(float(v)) for v in (*row, *values)), int(number)])
        if str(path) == STDIO:
            sys.stdout.write(text.getvalue())
            sys.stdout.flush()
            return "standard output"
        return str(atomic_write(path, lambda stream: stream.write(text.getvalue().encode())))

    def figure(self):
        """The data and the fitted curve (one input column only)."""
        if len(self.x_columns) != 1:
            raise ValueError(
                f"plot: a fit plot needs exactly one --x column; received {len(self.x_columns)}"
            )
        from ..plotting import plot_fit

        grid = np.linspace(self.x_train.min(), self.x_train.max(), 400)
        options = FitOptions(
            self.kernel, self.degree, self.var_type, "nearest",
            estimator="the fit plot", bandwidth_type=self.bandwidth_type,
        )  # fmt: skip
        curve = estimation_predict(self.x_train, self.y_train, grid[:, None], self.bandwidth,
                                   options)  # fmt: skip
        label = f"fit, {'h' if self.bandwidth_type == 'fixed' else 'k'} = {self.bandwidth[0]:.3g}"
        bands = None
        if self.interval is not None:
            band = self._band(grid)
            bands = {f"{self.interval:g} band": (band.lower, band.upper)}
        return plot_fit(
            self.x_train[:, 0],
            self.y_train,
            grid,
            {label: curve},
            bands=bands,
            title=f"{self.y_column} against {self.x_columns[0]}",
            xlabel=self.x_columns[0],
            ylabel=self.y_column,
        )

    def _band(self, x_query):
        from ..inference.bands import confidence_band

        return confidence_band(
            self.x_train,
            self.y_train,
            x_query,
            kernel=self.kernel,
            bandwidth=self.bandwidth,
            degree=self.degree,
            var_type=self.var_type,
            level=self.interval,
        )

    def plot_image(self, path: str | os.PathLike) -> bytes:
        """:meth:`figure` rendered in the format ``path``'s suffix names (PNG without one)."""
        return rendered(self.figure(), path)


def rendered(figure, path: str | os.PathLike) -> bytes:
    """``figure`` rendered in the format ``path``'s suffix names (PNG without one), then
    closed; a format matplotlib lacks is a ``--plot`` error."""
    import matplotlib.pyplot as plt

    try:
        return figure_bytes(figure, path)
    except ValueError as error:
        raise ValueError(f"--plot: {error}") from None
    finally:
        plt.close(figure)


def shown_width(h: float, column: np.ndarray) -> str:
    """A fitted bandwidth as the summary shows it: "smoothed out" where it spans the column
    a million times over (half :data:`attnpool.bandwidth.search.SMOOTHED_OUT` half-widths
    and more — where a search leaves a column that does not matter), else its value."""
    from ..bandwidth.search import SMOOTHED_OUT

    half = float(np.max(column) - np.min(column)) / 2 if column.size else 0.0
    if half > 0 and h >= SMOOTHED_OUT * half / 2:
        return f"smoothed out ({h:.3g}, {h / half:.3g} half-widths: the fit ignores it)"
    return f"{h:.6g}"


def check_roles(roles: dict[str, Sequence[str]]) -> None:
    """Refuse a column named twice, in one option or in two (``{option: columns}``)."""
    seen: dict[str, str] = {}
    for option, columns in roles.items():
        for column in columns:
            if column in seen:
                where = "twice" if seen[column] == option else f"as {seen[column]} too"
                raise ValueError(
                    f"{option}: column {column!r} is named {where}; each column takes one role"
                )
            seen[column] = option


def check_varying(path, columns: Sequence[str], x: np.ndarray) -> None:
    """A :class:`DataError` for an input column with one value only (nothing to smooth)."""
    constant = [c for c, j in zip(columns, range(x.shape[1]), strict=True)
                if x.shape[0] and np.all(x[:, j] == x[0, j])]  # fmt: skip
    if constant:
        raise DataError(
            f"{path}: column(s) {', '.join(map(repr, constant))} hold one value in every "
            "used row; an input column must vary"
        )


def parse_bandwidth(
    text: str,
    selectors: Sequence[str] = SELECTORS,
    aliases: Mapping[str, str] = SELECTOR_ALIASES,
):
    """One of ``selectors`` (the regressions' ``cv|aicc|scott|silverman`` by default), an
    alias of one (statsmodels' ``cv_ls`` and ``aic`` by default), or comma-separated
    positive numbers (one: a number)."""
    text = text.strip()
    if text in aliases:
        return aliases[text]
    if text in selectors:
        return text
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(
            f"--bandwidth: expected one of {', '.join([*selectors, *aliases])} or positive "
            "numbers separated "
            f"by commas; received {text!r}"
        ) from None
    return values[0] if len(values) == 1 else values


def fit_table(
    data: str | os.PathLike,
    x_columns: Sequence[str],
    y_column: str,
    *,
    kernel: str = "gaussian",
    bandwidth: str = "cv",
    degree: int = 0,
    predict: str | os.PathLike | None = None,
    dropna: bool = False,
    plot: bool = False,
    interval: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    sep: str | None = None,
    var_type: str | None = None,
    method: str = "auto",
    bandwidth_type: str = "fixed",
    empty: str = "nan",
) -> TableFit:
    """Fit ``y_column`` on ``x_columns`` of the table ``data``; predict at ``predict`` (or
    the data). Tables as :func:`read_columns` reads them (``sep`` the separator);
    ``var_type``, ``method`` and ``bandwidth_type`` as the estimators take them (the same
    path: a
    :class:`~attnpool.NadarayaWatson` or :class:`~attnpool.LocalLinear` fit).

    ``plot=True`` checks up front that a fit plot can be drawn (one input column);
    ``interval`` (a level such as 0.95) adds a pointwise asymptotic confidence band.
    """
    check_choice(empty, "--empty", ("nan", "nearest"))
    if interval is not None and is_pair_fit(kernel, bandwidth_type):
        raise ValueError(
            f"--interval: confidence bands are for fixed bandwidths and non-negative kernels; "
            f"received --kernel {kernel} --bandwidth-type {bandwidth_type}"
        )
    if interval is not None and not 0 < interval < 1:
        raise ValueError(
            f"--interval: expected a level strictly between 0 and 1 (such as 0.95); "
            f"received {interval!r}"
        )
    if not x_columns:
        raise ValueError("--x: expected at least one input column; received none")
    check_roles({"--x": x_columns, "--y": [y_column]})
    if plot and len(x_columns) != 1:
        raise ValueError(
            f"--plot: a fit plot needs exactly one --x column; received {len(x_columns)}"
        )
    if str(data) == STDIO and predict is not None and str(predict) == STDIO:
        raise ValueError("--predict: standard input holds DATA already; name a file")
    level_columns = {c: None for c, t in zip(x_columns, var_type or "", strict=False) if t in "ou"}
    table, rows, found = read_columns(
        data, [*x_columns, y_column], dropna=dropna, sep=sep, levels=level_columns
    )
    if len(table) < 3:
        raise DataError(f"{data}: expected at least 3 complete rows; received {len(table)}")
    x_train, y_train = table[:, :-1], table[:, -1]
    check_varying(data, x_columns, x_train)
    chosen = parse_bandwidth(bandwidth) if isinstance(bandwidth, str) else bandwidth
    estimator = "LocalLinear" if degree == 1 else "NadarayaWatson"
    options = FitOptions(kernel, degree, var_type, empty, None, method, estimator, bandwidth_type)
    widths, scores = fitted_bandwidth(x_train, y_train, chosen, options, progress=progress)
    selected = isinstance(chosen, str)
    objective = next(iter(scores.values()), math.nan)
    x_query, query_rows = (
        (x_train, rows)
        if predict is None
        else read_columns(
            predict,
            list(x_columns),
            dropna=dropna,
            sep=sep,
            levels=found,  # the fit's levels; a column of numbers there takes numbers
        )[:2]
    )
    prediction = estimation_predict(x_train, y_train, x_query, widths, options)
    result = TableFit(
        list(x_columns),
        y_column,
        x_train,
        y_train,
        x_query,
        prediction,
        widths,
        chosen if selected else "given",
        float(objective),
        degree,
        kernel,
        interval,
        var_type,
        bandwidth_type=bandwidth_type,
        rows=query_rows,
    )
    if interval is not None:
        band = result._band(x_query)
        result.lower, result.upper = band.lower, band.upper
    return result
