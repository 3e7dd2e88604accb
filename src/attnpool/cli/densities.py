"""Densities of a table's columns (the library side of ``attnpool density``): the joint
density of the ``--x`` columns, or their conditional density given the ``--given`` ones."""

from __future__ import annotations

import csv
import io
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._support.files import atomic_write
from .table import (
    STDIO,
    DataError,
    check_roles,
    parse_bandwidth,
    read_columns,
    rendered,
    shown_width,
)

__all__ = ["DensityTable", "density_table"]

_SELECTORS = ("cv_ml", "cv_ls", "normal_reference", "isj", "scott", "silverman")


@dataclass
class DensityTable:
    """A fitted joint (``model`` a :class:`~attnpool.KernelDensity`) or conditional
    (:class:`~attnpool.ConditionalDensity`) density of table columns, and its values at
    the table's rows."""

    columns: list[str]
    given: list[str]
    x: np.ndarray
    conditions: np.ndarray
    values: np.ndarray
    model: object
    #: Each value's data row in the table (counted from 1, blank lines not counted).
    rows: np.ndarray | None = None

    @property
    def label(self) -> str:
        return "density" if not self.given else "conditional_density"

    def summary(self) -> str:
        """What was estimated and with which bandwidths, in a few lines."""
        of = ", ".join(self.columns) + (f" given {', '.join(self.given)}" if self.given else "")
        lines = [f"{self.label.replace('_', ' ')} of {of} on {len(self.x)} rows"]
        if self.given:
            widths = [*self.model.y_bandwidth_, *self.model.bandwidth_]
        else:
            widths = list(self.model.bandwidth_)
        names = [*self.columns, *self.given]
        data = np.column_stack([self.x, self.conditions]).T
        lines.append(
            "bandwidth: "
            + ", ".join(
                f"{c} = {shown_width(h, column)}"
                for c, h, column in zip(names, widths, data, strict=True)
            )
        )
        return "\n".join(lines)

    def write(self, path: str | os.PathLike) -> str:
        """CSV of the columns and the density at each row: a file (atomically) or ``-``."""
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow([*self.columns, *self.given, self.label, "row"])
        rows = np.arange(1, len(self.values) + 1) if self.rows is None else self.rows
        for row, number in zip(np.column_stack([self.x, self.conditions, self.values]), rows,
                               strict=True):  # fmt: skip
            writer.writerow([*(repr(float(v)) for v in row), int(number)])
        if str(path) == STDIO:
            sys.stdout.write(text.getvalue())
            return "standard output"
        return str(atomic_write(path, lambda stream: stream.write(text.getvalue().encode())))

    def figure(self):
        """One continuous column: the density with a rug and a 95% band; one continuous
        column given one: the conditional density's heatmap with the conditional mean."""
        from ..plotting import plot_conditional_density, plot_density

        if not self.given:
            check_plottable(self.columns, self.given, self.model.var_type, None)
        else:
            check_plottable(self.columns, self.given, self.model.y_var_type,
                            self.model.x_var_type)  # fmt: skip
        grid = _grid(self.x[:, 0])
        if not self.given:
            from ..density import density_band

            options = {"kernel": self.model.kernel, "bandwidth": self.model.bandwidth_}
            density = np.exp(self.model.score_samples(grid[:, None]))
            band = density_band(self.x, grid[:, None], **options)
            name = self.columns[0]
            return plot_density(grid, density, sample=self.x[:, 0], band=band, xlabel=name,
                                title=f"density of {name}")  # fmt: skip
        from ..regression import nadaraya_watson

        x_grid = _grid(self.conditions[:, 0])
        xx, yy = np.meshgrid(x_grid, grid)
        density = self.model.pdf(xx.reshape(-1, 1), yy.reshape(-1, 1)).reshape(yy.shape)
        mean = nadaraya_watson(self.conditions[:, 0], self.x[:, 0], x_grid,
                               kernel=self.model.kernel, bandwidth=self.model.bandwidth_,
                               empty="nearest")  # fmt: skip
        return plot_conditional_density(
            x_grid, grid, density, mean=mean, sample=(self.conditions[:, 0], self.x[:, 0]),
            xlabel=self.given[0], ylabel=self.columns[0],
            title=f"density of {self.columns[0]} given {self.given[0]}",
        )  # fmt: skip

    def plot_image(self, path: str | os.PathLike) -> bytes:
        """:meth:`figure` rendered in the format ``path``'s suffix names."""
        return rendered(self.figure(), path)


def check_plottable(columns: Sequence[str], given: Sequence[str], var_type: str | None,
                    given_var_type: str | None) -> None:  # fmt: skip
    """The ``--plot`` error, before any work, unless the density is of one continuous
    column given at most one continuous column."""
    continuous = set(var_type or "c") | set(given_var_type or "c") == {"c"}
    if len(columns) != 1 or len(given) > 1 or not continuous:
        raise ValueError(
            "--plot: a density plot takes one continuous --x column, and at most one "
            f"continuous --given column; received --x {list(columns)}, --given {list(given)}"
        )


def _grid(values: np.ndarray, points: int = 200) -> np.ndarray:
    span = values.max() - values.min()
    return np.linspace(values.min() - 0.1 * span, values.max() + 0.1 * span, points)


def density_table(data, columns: Sequence[str], *, given: Sequence[str] = (), bandwidth="cv_ml",
                  kernel="gaussian", var_type=None, given_var_type=None, dropna=False,
                  sep=None, progress=None) -> DensityTable:  # fmt: skip
    """Estimate the density of ``columns`` of the table ``data`` (as
    :func:`~attnpool.cli.table.read_columns` reads it), or their conditional density given
    the ``given`` columns, and its values at the table's rows. ``progress``: called
    ``(done, total)`` by a cross-validated bandwidth's search."""
    from ..density.conditional_estimator import ConditionalDensity
    from ..density.conditional_selection import select_conditional_bandwidth
    from ..density.estimator import KernelDensity
    from ..density.selection import select_density_bandwidth

    if not columns:
        raise ValueError("--x: expected at least one column; received none")
    check_roles({"--x": columns, "--given": given})
    letters = (var_type or "c" * len(columns)) + (given_var_type or "c" * len(given))
    level_columns = {
        c: None for c, t in zip([*columns, *given], letters, strict=False) if t in "ou"
    }
    table, rows, _ = read_columns(
        data, [*columns, *given], dropna=dropna, sep=sep, levels=level_columns
    )
    if len(table) < 3:
        raise DataError(f"{data}: expected at least 3 complete rows; received {len(table)}")
    x, conditions = table[:, : len(columns)], table[:, len(columns) :]
    chosen = parse_bandwidth(bandwidth, _SELECTORS, {}) if isinstance(bandwidth, str) else bandwidth
    searched = isinstance(chosen, str) and chosen in ("cv_ml", "cv_ls")
    if not given:
        if searched:
            chosen = select_density_bandwidth(
                x, method=chosen, kernel=kernel, var_type=var_type, progress=progress
            ).bandwidth
        model = KernelDensity(kernel, chosen, var_type=var_type).fit(x)
        values = np.exp(model.score_samples(x))
    else:
        if searched:  # the condition's columns first, as ConditionalDensity takes them
            chosen = select_conditional_bandwidth(
                conditions, x, method=chosen, kernel=kernel, x_var_type=given_var_type,
                y_var_type=var_type, progress=progress,
            ).bandwidth.tolist()  # fmt: skip
        elif not isinstance(chosen, str):  # the command line's order: --x columns, then --given
            chosen = np.broadcast_to(chosen, (len(columns) + len(given),)).tolist()
            chosen = [*chosen[len(columns) :], *chosen[: len(columns)]]
        model = ConditionalDensity(kernel, chosen, x_var_type=given_var_type,
                                   y_var_type=var_type).fit(conditions, x)  # fmt: skip
        values = model.pdf(conditions, x)
    return DensityTable(list(columns), list(given), x, conditions, values, model, rows)
