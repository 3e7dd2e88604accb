"""Kernel regression on a table: read columns, choose the bandwidth, predict, write.

The library side of ``attnpool fit``. Every problem with the data (a missing
file or column, a non-numeric cell, missing values, too few rows) is a
``ValueError`` that says what and where.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import os
import sys
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._files import atomic_write, figure_bytes
from .._validation import check_choice
from ..bandwidth import SELECTORS
from ..bandwidth.selection import SELECTOR_ALIASES
from ..estimation import fitted_bandwidth
from ..estimation import predict as estimation_predict
from ..pair_regression import is_pair_fit

__all__ = ["DataError", "TableFit", "fit_table", "read_columns"]

_MISSING = {"", "na", "nan", "null", "none"}


class DataError(ValueError):
    """A table that cannot serve the fit as it is: an unreadable format, a missing
    column, a cell that is not a number, missing values, too few rows."""


#: ``--sep`` names for the separators that are awkward to type.
SEPARATOR_NAMES = {"tab": "\t", "\\t": "\t", "space": " ", "comma": ",", "semicolon": ";"}
#: Separators detected when ``--sep`` is not given.
DETECTED_SEPARATORS = ",\t;|"
#: Standard input or output, as the command line names it.
STDIO = "-"


def read_columns(
    path: str | os.PathLike,
    columns: Sequence[str],
    *,
    dropna: bool = False,
    sep: str | None = None,
    levels: Mapping[str, tuple[str, ...] | None] | None = None,
):
    """Numeric columns of a table with a header row: ``(array (n, k), kept row indices,
    levels)`` — ``levels`` each level column's (``{name: levels}``, those read as text).

    ``levels``: the columns that may hold text (categorical ones, ``var_type`` ``o`` or
    ``u``), each with the levels to read it by (a fit's) or None to find them. Such a
    column of numbers stays numbers; one with text becomes its cells' positions among
    the levels — their sorted distinct values — which :func:`text_levels` gives.

    ``path``: a file, or ``"-"`` for standard input. Text tables are UTF-8 with the
    separator ``sep`` (a character, or ``tab``/``space``/…; detected among ``, TAB ; |``
    when None); gzip-compressed text is read as it is; Parquet files are read with
    pyarrow where it is installed. Empty cells and ``NA``/``NaN``/``null`` are missing:
    an error naming how many rows and the first few (data row numbers counted from 1),
    unless ``dropna``.
    """
    name, raw = _raw_bytes(path)
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as error:
            raise DataError(f"{name}: a gzip file that does not decompress: {error}") from None
    if raw[:4] == b"PAR1":
        return _read_rows(name, _parquet_rows(name, raw), columns, dropna, levels or {})
    if raw[:4] == b"PK\x03\x04":
        raise DataError(
            f"{name}: a ZIP archive (an Excel workbook?); expected a CSV, TSV or Parquet "
            "table (save the sheet as CSV)"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise DataError(
            f"{name}: expected UTF-8 text; byte {error.object[error.start]:#04x} at offset "
            f"{error.start} is not (save the file as UTF-8 CSV)"
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_separator(sep, text, name))
    try:
        return _read_rows(name, reader, columns, dropna, levels or {})
    except csv.Error as error:  # a field over the csv module's size limit
        raise DataError(f"{name}: line {reader.line_num}: {error}") from None


def _raw_bytes(path) -> tuple[str, bytes]:
    """``(name for messages, the file's bytes)``; ``"-"`` reads standard input."""
    if str(path) == STDIO:
        return "<stdin>", sys.stdin.buffer.read()
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    return str(path), path.read_bytes()


def _separator(sep: str | None, text: str, name: str) -> str:
    """``sep`` checked, or the separator detected from the first lines (``,`` if none)."""
    if sep is not None:
        chosen = SEPARATOR_NAMES.get(sep, sep)
        if len(chosen) != 1 or chosen in '"\r\n':
            raise ValueError(
                f"--sep: expected one character or one of {', '.join(SEPARATOR_NAMES)}; "
                f"received {sep!r}"
            )
        return chosen
    if name.endswith((".tsv", ".tsv.gz", ".tab")):
        return "\t"
    try:
        return csv.Sniffer().sniff(text[: 2**16], delimiters=DETECTED_SEPARATORS).delimiter
    except csv.Error:  # one column, or nothing to tell the separators apart
        return ","


def _parquet_rows(name: str, raw: bytes):
    """A Parquet table as rows of text cells (floats by ``repr``: they read back exactly)."""
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        raise DataError(
            f"{name}: a Parquet file; reading it needs pyarrow (pip install pyarrow), or "
            "save the table as CSV"
        ) from None
    table = parquet.read_table(io.BytesIO(raw))
    cells = [
        ["" if v is None else repr(v) if isinstance(v, float) else str(v) for v in column]
        for column in table.to_pydict().values()
    ]
    yield table.column_names
    yield from (list(row) for row in zip(*cells, strict=True))


def _read_rows(path: str, reader, columns: Sequence[str], dropna: bool, levels: Mapping):
    header = next(reader, None)
    if not header:
        raise DataError(f"{path}: expected a header row of column names; the file is empty")
    header = [name.strip() for name in header]
    missing = [c for c in columns if c not in header]
    if missing:
        raise DataError(
            f"{path}: no column named {', '.join(map(repr, missing))}; "
            f"the columns are {', '.join(map(repr, header))}"
        )
    repeated = sorted({c for c in columns if header.count(c) > 1})
    if repeated:
        raise DataError(
            f"{path}: the header names {', '.join(map(repr, repeated))} more than once; "
            "rename the columns so that each name is one column"
        )
    index = [header.index(c) for c in columns]
    values, missing_rows = [], []
    for row_number, row in enumerate(reader, start=1):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(header) and any(cell.strip() for cell in row[len(header) :]):
            raise DataError(
                f"{path}: row {row_number} has {len(row)} fields; the header has "
                f"{len(header)} (a separator inside a value, or a misaligned row?)"
            )
        cells = [row[i].strip() if i < len(row) else "" for i in index]
        numbers: list[float | str] = []
        for cell, name in zip(cells, columns, strict=True):
            if cell.lower() in _MISSING:
                numbers.append(math.nan)
                continue
            try:
                numbers.append(float(cell))
            except ValueError:
                if name in levels:  # a level: its text, positioned below
                    numbers.append(cell)
                    continue
                raise DataError(
                    f"{path}: row {row_number}, column {name!r}: expected a number; "
                    f"received {cell!r}"
                ) from None
        if any(isinstance(v, float) and (math.isnan(v) or math.isinf(v)) for v in numbers):
            missing_rows.append(row_number)
        values.append(numbers)
    data, found = _positioned(path, values, columns, levels)
    rows = np.arange(1, len(data) + 1)
    if missing_rows and not dropna:
        shown = ", ".join(map(str, missing_rows[:5])) + (", …" if len(missing_rows) > 5 else "")
        raise DataError(
            f"{path}: {len(missing_rows)} row(s) have missing or infinite values in the used "
            f"columns (rows {shown}); pass --dropna to drop them"
        )
    if missing_rows:
        keep = np.all(np.isfinite(data), axis=1)
        data, rows = data[keep], rows[keep]
    return data, rows, found


def _positioned(path: str, values: list, columns: Sequence[str], levels: Mapping):
    """``(n, k)`` numbers of the rows' cells — a level column holding text as its cells'
    positions among its levels (given, or its sorted distinct values) — and those levels
    (``{name: levels}``)."""
    table = np.empty((len(values), len(columns)))
    found: dict[str, tuple[str, ...]] = {}
    for j, name in enumerate(columns):
        column = [row[j] for row in values]
        text = [v for v in column if isinstance(v, str)]
        if name not in levels or (not text and levels[name] is None):
            table[:, j] = column
            continue
        known = found[name] = levels[name] or text_levels(column)
        position = {level: i for i, level in enumerate(known)}
        for i, cell in enumerate(column):
            key = cell if isinstance(cell, str) else _as_text(cell)
            if isinstance(cell, float) and math.isnan(cell):
                table[i, j] = math.nan
            elif key in position:
                table[i, j] = position[key]
            else:
                raise DataError(
                    f"{path}: column {name!r} has the level {key!r}, which the fit's data do "
                    f"not; its levels are {list(known)!r}"
                )
    return table, found


def text_levels(column: Sequence) -> tuple[str, ...]:
    """A level column's levels: its distinct cells as text, sorted (numbers as written)."""
    cells = {c if isinstance(c, str) else _as_text(c) for c in column
             if isinstance(c, str) or not math.isnan(c)}  # fmt: skip
    return tuple(sorted(cells))


def _as_text(value: float) -> str:
    """A number read from a level column, as the text it would be among the levels."""
    return repr(int(value)) if float(value).is_integer() else repr(value)


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
        curve = estimation_predict(
            self.x_train, self.y_train, grid[:, None], bandwidth=self.bandwidth,
            kernel=self.kernel, degree=self.degree, var_type=self.var_type, empty="nearest",
            block_size=None, method="auto", estimator="the fit plot",
            bandwidth_type=self.bandwidth_type,
        )  # fmt: skip
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
        from ..inference import confidence_band

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
    options = {
        "kernel": kernel,
        "degree": degree,
        "var_type": var_type,
        "empty": empty,
        "block_size": None,
        "method": method,
        "estimator": "LocalLinear" if degree == 1 else "NadarayaWatson",
        "bandwidth_type": bandwidth_type,
    }
    widths, scores = fitted_bandwidth(
        x_train, y_train, bandwidth=chosen, progress=progress, **options
    )
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
    prediction = estimation_predict(x_train, y_train, x_query, bandwidth=widths, **options)
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
