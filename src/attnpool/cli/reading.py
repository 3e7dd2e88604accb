"""Tables as the command line reads them: CSV, TSV or another separator (detected),
gzip-compressed or not, Parquet (with pyarrow); the used columns as numbers, a column
of levels (``--var-type o`` or ``u``) by its levels' positions. Every problem with the
data (a missing file or column, a cell that is not a number, missing values, a
malformed row) is a :class:`DataError` that says what and where.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import os
import sys
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

__all__ = ["DETECTED_SEPARATORS", "SEPARATOR_NAMES", "STDIO", "DataError", "read_columns",
           "text_levels"]  # fmt: skip

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
