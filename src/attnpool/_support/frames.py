"""Data frames as R's np takes them: text and categorical columns are levels.

A pandas ``DataFrame`` (or any table with ``columns`` and ``dtypes``) given to an
estimator is read column by column: numbers stay numbers (``var_type`` letter ``c``); an
*ordered* ``Categorical`` becomes the positions of its values among its categories, in
the categories' order (``o``); an unordered ``Categorical``, text or booleans become
their positions among their sorted distinct values (``u``). The levels are kept from the
fit and applied to new rows, so a level the fit never saw is an error naming it, not a
silent number. Without a ``var_type``, the estimators take these letters.

>>> import pandas as pd
>>> frame = pd.DataFrame({"age": [30.0, 41.0, 52.0], "gear": ["manual", "auto", "auto"]})
>>> encoded = encode(frame)
>>> encoded.values.tolist(), encoded.var_type
([[30.0, 1.0], [41.0, 0.0], [52.0, 0.0]], 'cu')
>>> encode(pd.DataFrame({"age": [1.0], "gear": ["auto"]}), encoded.levels).values.tolist()
[[1.0, 0.0]]
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["Encoded", "as_table", "encode", "fitted_var_type", "is_frame", "levels_applied"]


class Encoded(NamedTuple):
    """A table as numbers: ``values (n, d)`` float64, each column's ``levels`` (None for
    a numeric column) and the ``var_type`` letters they imply."""

    values: np.ndarray
    levels: tuple[tuple[Any, ...] | None, ...]
    var_type: str


def is_frame(X: Any) -> bool:
    """Whether ``X`` is a table with typed columns (a pandas ``DataFrame``)."""
    return hasattr(X, "columns") and hasattr(X, "dtypes") and getattr(X, "ndim", 0) == 2


def has_levels(X: Any) -> bool:
    """Whether the table ``X`` has a column that is not numbers."""
    return is_frame(X) and any(_levels_kind(dtype) is not None for dtype in X.dtypes)


def encode(X: Any, levels: tuple[tuple[Any, ...] | None, ...] | None = None) -> Encoded:
    """``X``'s columns as numbers, its text and categorical columns by their levels —
    found here, or the fit's ``levels`` (a value among none of them is a ``ValueError``)."""
    names = [str(c) for c in X.columns]
    found_levels: list[tuple[Any, ...] | None] = []
    letters, columns = [], []
    for j, name in enumerate(names):
        column = X.iloc[:, j]
        kind = _levels_kind(column.dtype)
        if kind is None and (levels is None or levels[j] is None):
            columns.append(np.asarray(column, dtype=np.float64))
            found_levels.append(None)
            letters.append("c")
            continue
        known = _column_levels(column) if levels is None else levels[j]
        if known is None:
            raise ValueError(
                f"X: column {name!r} held numbers when the model was fitted; received "
                f"{column.dtype} values"
            )
        position = {level: i for i, level in enumerate(known)}
        values = column.tolist()
        unknown = [v for v in values if v not in position]
        if unknown:
            raise ValueError(
                f"X: column {name!r} has the level {unknown[0]!r}, which the fit did not "
                f"see; its levels are {list(known)!r}"
            )
        columns.append(np.array([position[v] for v in values], dtype=np.float64))
        found_levels.append(tuple(known))
        letters.append("o" if kind == "o" else "u")
    values = np.column_stack(columns) if columns else np.empty((len(X), 0))
    return Encoded(values, tuple(found_levels), "".join(letters))


def _levels_kind(dtype: Any) -> str | None:
    """``"o"`` an ordered categorical, ``"u"`` other levels (unordered categorical, text,
    booleans), None numbers."""
    if getattr(dtype, "categories", None) is not None:
        return "o" if getattr(dtype, "ordered", False) else "u"
    kind = getattr(dtype, "kind", "O")
    return "u" if kind in "OSUb" else None


def _column_levels(column: Any) -> tuple[Any, ...]:
    """A column's levels: a categorical's categories in their order, else its sorted
    distinct values."""
    categories = getattr(column.dtype, "categories", None)
    if categories is not None:
        return tuple(categories.tolist())
    distinct = set(column.tolist())
    if any(v is None or (isinstance(v, float) and np.isnan(v)) for v in distinct):
        raise ValueError(f"X: column {str(column.name)!r} has missing values")
    return tuple(sorted(distinct, key=lambda v: (str(type(v)), v)))


#: Where an estimator keeps a table's levels and the letters they imply: its inputs'
#: (``X``) or its targets (a conditional density's ``y``).
_KEPT = {"X": ("_levels", "_frame_var_type"), "y": ("_y_levels", "_y_frame_var_type")}


def as_table(data: Any) -> Any:
    """A pandas ``Series`` as a one-column table; anything else as it is."""
    if getattr(data, "ndim", 0) == 1 and hasattr(data, "to_frame") and hasattr(data, "dtype"):
        return data.to_frame()
    return data


def levels_applied(estimator, X, reset: bool, role: str = "X"):
    """A table's text and categorical columns as their levels' positions: found at the
    fit (kept on the estimator, with the ``var_type`` letters they imply), applied to new
    rows. ``role``: ``"X"``, the inputs, or ``"y"``, the targets of a conditional
    density (a ``Series`` is then a one-column table)."""
    levels_name, letters_name = _KEPT[role]
    table = as_table(X) if role == "y" else X
    if reset:
        estimator.__dict__.pop(levels_name, None)
        estimator.__dict__.pop(letters_name, None)
        if not has_levels(table):
            return X
        found = encode(table)
        setattr(estimator, levels_name, found.levels)
        setattr(estimator, letters_name, found.var_type)
        return found.values
    levels = getattr(estimator, levels_name, None)
    return encode(table, levels).values if levels is not None and is_frame(table) else X


def fitted_var_type(estimator, given: str | None, role: str = "X") -> str | None:
    """The ``var_type`` a fit uses: ``given``, else the letters a table's columns imply
    (None: all continuous). A text or categorical column given ``c`` is an error.
    ``role`` as :func:`levels_applied` takes it."""
    inferred = getattr(estimator, _KEPT[role][1], None)
    if given is None or inferred is None:
        return given if given is not None else inferred
    wrong = [j for j, (a, b) in enumerate(zip(given, inferred, strict=False)) if a == "c" != b]
    if wrong:
        raise ValueError(
            f"var_type: column(s) {wrong} hold levels (text or categories), not numbers; "
            f"received var_type={given!r} (their letters: 'o' ordered, 'u' unordered)"
        )
    return given
