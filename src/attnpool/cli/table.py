"""Kernel regression on a CSV table: read columns, choose the bandwidth, predict, write.

The library side of ``attnpool fit``. Every problem with the data (a missing
file or column, a non-numeric cell, missing values, too few rows) is a
``ValueError`` that says what and where.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._files import atomic_write, figure_bytes
from .._validation import check_bandwidth
from ..bandwidth import SELECTORS, select_bandwidth
from ..regression import local_regression

__all__ = ["TableFit", "fit_table", "read_columns"]

_MISSING = {"", "na", "nan", "null", "none"}


def read_columns(path: str | os.PathLike, columns: Sequence[str], *, dropna: bool = False):
    """Numeric columns of a CSV file with a header row: ``(array (n, k), kept row indices)``.

    Empty cells and ``NA``/``NaN``/``null`` are missing: an error naming how many
    rows and the first few (data row numbers counted from 1), unless ``dropna``.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        with open(path, newline="", encoding="utf-8-sig") as stream:
            reader = csv.reader(stream)
            try:
                return _read_rows(path, reader, columns, dropna)
            except csv.Error as error:  # a field over the csv module's size limit
                raise ValueError(f"{path}: line {reader.line_num}: {error}") from None
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path}: expected UTF-8 text; byte {error.object[error.start]:#04x} at offset "
            f"{error.start} is not (save the file as UTF-8 CSV)"
        ) from None


def _read_rows(path: Path, reader, columns: Sequence[str], dropna: bool):
    header = next(reader, None)
    if not header:
        raise ValueError(f"{path}: expected a header row of column names; the file is empty")
    header = [name.strip() for name in header]
    missing = [c for c in columns if c not in header]
    if missing:
        raise ValueError(
            f"{path}: no column named {', '.join(map(repr, missing))}; "
            f"the columns are {', '.join(map(repr, header))}"
        )
    index = [header.index(c) for c in columns]
    values, missing_rows = [], []
    for row_number, row in enumerate(reader, start=1):
        if not any(cell.strip() for cell in row):
            continue
        cells = [row[i].strip() if i < len(row) else "" for i in index]
        numbers = []
        for cell, name in zip(cells, columns, strict=True):
            if cell.lower() in _MISSING:
                numbers.append(math.nan)
                continue
            try:
                numbers.append(float(cell))
            except ValueError:
                raise ValueError(
                    f"{path}: row {row_number}, column {name!r}: expected a number; "
                    f"received {cell!r}"
                ) from None
        if any(math.isnan(v) or math.isinf(v) for v in numbers):
            missing_rows.append(row_number)
        values.append(numbers)
    data = np.array(values, dtype=float).reshape(-1, len(columns))
    rows = np.arange(1, len(data) + 1)
    if missing_rows and not dropna:
        shown = ", ".join(map(str, missing_rows[:5])) + (", …" if len(missing_rows) > 5 else "")
        raise ValueError(
            f"{path}: {len(missing_rows)} row(s) have missing or infinite values in the used "
            f"columns (rows {shown}); pass --dropna to drop them"
        )
    if missing_rows:
        keep = np.all(np.isfinite(data), axis=1)
        data, rows = data[keep], rows[keep]
    return data, rows


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
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None

    def summary(self) -> str:
        """What was chosen, in a few lines."""
        widths = ", ".join(
            f"{c} = {h:.6g}" for c, h in zip(self.x_columns, self.bandwidth, strict=True)
        )
        lines = [
            f"{'Nadaraya–Watson' if self.degree == 0 else 'local linear'} regression of "
            f"{self.y_column!r} on {len(self.y_train)} rows, {self.kernel} kernel",
            f"bandwidth ({self.method}): {widths}",
        ]
        if self.method in ("cv", "aicc"):
            label = "leave-one-out CV error (mean squared)" if self.method == "cv" else "AICc"
            lines.append(f"{label}: {self.objective:.6g}")
        if self.interval is not None:
            lines.append(f"pointwise {self.interval:g} confidence band (asymptotic)")
        return "\n".join(lines)

    def write_predictions(self, path: str | os.PathLike) -> Path:
        """CSV of the query columns and the prediction, in the queries' row order (atomic)."""
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        header = [*self.x_columns, f"{self.y_column}_predicted"]
        columns = [self.prediction]
        if self.interval is not None:
            header += [f"{self.y_column}_lower", f"{self.y_column}_upper"]
            columns += [self.lower, self.upper]
        writer.writerow(header)
        for row, values in zip(self.x_query, np.column_stack(columns), strict=True):
            writer.writerow([repr(float(v)) for v in (*row, *values)])
        return atomic_write(path, lambda stream: stream.write(text.getvalue().encode()))

    def figure(self):
        """The data and the fitted curve (one input column only)."""
        if len(self.x_columns) != 1:
            raise ValueError(
                f"plot: a fit plot needs exactly one --x column; received {len(self.x_columns)}"
            )
        from ..plotting import plot_fit

        grid = np.linspace(self.x_train.min(), self.x_train.max(), 400)
        curve = local_regression(
            self.x_train,
            self.y_train,
            grid,
            kernel=self.kernel,
            bandwidth=self.bandwidth,
            degree=self.degree,
            empty="nearest",
        )
        label = f"fit, h = {self.bandwidth[0]:.3g}"
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
        )

    def _band(self, x_query):
        from ..inference import confidence_band

        return confidence_band(
            self.x_train,
            self.y_train,
            x_query,
            kernel=self.kernel,
            bandwidth=self.bandwidth,
            degree=self.degree,
            level=self.interval,
        )

    def plot_image(self, path: str | os.PathLike) -> bytes:
        """:meth:`figure` rendered in the format ``path``'s suffix names (PNG without one)."""
        import matplotlib.pyplot as plt

        figure = self.figure()
        try:
            return figure_bytes(figure, path)
        except ValueError as error:
            raise ValueError(f"--plot: {error}") from None
        finally:
            plt.close(figure)


def parse_bandwidth(text: str):
    """``cv|aicc|scott|silverman`` or comma-separated positive numbers."""
    text = text.strip()
    if text in SELECTORS:
        return text
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(
            f"--bandwidth: expected one of {', '.join(SELECTORS)} or positive numbers separated "
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
) -> TableFit:
    """Fit ``y_column`` on ``x_columns`` of the CSV ``data``; predict at ``predict`` (or the data).

    ``plot=True`` checks up front that a fit plot can be drawn (one input column);
    ``interval`` (a level such as 0.95) adds a pointwise asymptotic confidence band.
    """
    if interval is not None and not 0 < interval < 1:
        raise ValueError(
            f"--interval: expected a level strictly between 0 and 1 (such as 0.95); "
            f"received {interval!r}"
        )
    if not x_columns:
        raise ValueError("--x: expected at least one input column; received none")
    if plot and len(x_columns) != 1:
        raise ValueError(
            f"--plot: a fit plot needs exactly one --x column; received {len(x_columns)}"
        )
    table, _ = read_columns(data, [*x_columns, y_column], dropna=dropna)
    if len(table) < 3:
        raise ValueError(f"{data}: expected at least 3 complete rows; received {len(table)}")
    x_train, y_train = table[:, :-1], table[:, -1]
    chosen = parse_bandwidth(bandwidth) if isinstance(bandwidth, str) else bandwidth
    if isinstance(chosen, str):
        selection = select_bandwidth(
            x_train, y_train, method=chosen, kernel=kernel, degree=degree, progress=progress
        )
        widths, objective, method = selection.bandwidth, selection.objective, chosen
    else:
        widths = np.array(check_bandwidth(chosen, x_train.shape[1]), dtype=float)
        objective, method = math.nan, "given"
    x_query = (
        x_train if predict is None else read_columns(predict, list(x_columns), dropna=dropna)[0]
    )
    prediction = local_regression(
        x_train, y_train, x_query, kernel=kernel, bandwidth=widths, degree=degree
    )
    result = TableFit(
        list(x_columns),
        y_column,
        x_train,
        y_train,
        x_query,
        prediction,
        widths,
        method,
        float(objective),
        degree,
        kernel,
        interval,
    )
    if interval is not None:
        band = result._band(x_query)
        result.lower, result.upper = band.lower, band.upper
    return result
