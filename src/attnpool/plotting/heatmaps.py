"""Heatmaps of attention weights: queries on rows, keys on columns, one panel per
matrix, on one colour scale or each on its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from .._support.hints import ArrayLike
from .figures import colour_scale, new_figure

__all__ = ["show_heatmaps"]

#: The colour of a query no key reaches (a NaN row of weights).
EMPTY_GREY = "0.75"


def show_heatmaps(
    matrices: ArrayLike,
    xlabel: str = "Keys",
    ylabel: str = "Queries",
    titles: Sequence[Any] | None = None,
    *,
    figsize: tuple[float, float] | None = None,
    cmap: str = "Reds",
    shared_scale: bool = True,
) -> Figure:
    """Heatmaps of attention weights, on one shared colour scale or each on its own.

    Parameters
    ----------
    matrices : array of shape (queries, keys), (cols, queries, keys) or
        (rows, cols, queries, keys)
        One panel per matrix; a 3-D stack is one row of panels.
    xlabel, ylabel : str
        Written on the outer axes only (bottom row, left column).
    titles : sequence, optional
        One title per panel — a flat sequence of ``rows · cols`` strings or one
        sequence per row — or, as in "Dive into Deep Learning", one per column
        (``titles[j]`` over every row of column ``j``).
    figsize : (width, height), optional
        Defaults to about 2.5 inches per panel.
    cmap : str
        A matplotlib colormap name.
    shared_scale : bool, default True
        One colour scale (the minimum and maximum over all panels) and one colorbar for
        every panel, so that the panels compare; False: each panel its own scale and
        colorbar (a wide bandwidth's nearly uniform weights then show their pattern).

    Returns
    -------
    matplotlib.figure.Figure
        NaN entries (queries no key reaches) are grey, and the colour bar says so.

    Examples
    --------
    >>> import numpy as np
    >>> fig = show_heatmaps(np.eye(10))
    >>> len(fig.axes)  # one panel and its colorbar
    2
    >>> grid = np.ones((2, 3, 4, 4))  # the textbook's call: labels in order, a title per column
    >>> fig = show_heatmaps(grid, "Keys", "Queries", titles=["a", "b", "c"])
    >>> [ax.get_title() for ax in fig.axes[:6]]
    ['a', 'b', 'c', 'a', 'b', 'c']

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2 (``show_heatmaps``, whose calls these are). Crameri, F., Shephard,
    G. E. & Heron, P. J. (2020). The misuse of colour in science communication. *Nature
    Communications* 11, 5444 (one scale for panels that are compared).
    """
    grid = np.asarray(matrices, dtype=float)
    if grid.ndim not in (2, 3, 4) or grid.size == 0:
        raise ValueError(
            "matrices: expected a non-empty array of shape (queries, keys), (cols, queries, keys) "
            f"or (rows, cols, queries, keys); received shape {grid.shape}"
        )
    grid = grid.reshape((1,) * (4 - grid.ndim) + grid.shape)
    rows, cols = grid.shape[:2]
    labels = _panel_titles(titles, rows, cols)
    norm = colour_scale(grid)
    # a query no key reaches (NaN) in grey: blank, it read as weights of 0
    colours = matplotlib.colormaps[cmap].with_extremes(bad=EMPTY_GREY)
    label = "attention weight" + ("\n(grey: no key in reach)" if np.isnan(grid).any() else "")
    fig = new_figure(figsize or (2.5 * cols + 1.0, 2.5 * rows))
    axes = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)
    for (i, j), ax in np.ndenumerate(axes):
        own = norm if shared_scale else colour_scale(grid[i, j])
        image = ax.imshow(grid[i, j], cmap=colours, norm=own, aspect="auto",
                          interpolation="nearest")  # fmt: skip
        if not shared_scale:
            empty = np.isnan(grid[i, j]).any()
            fig.colorbar(image, ax=ax, shrink=0.8, label="grey: no key in reach" if empty else None)
        if i == rows - 1:
            ax.set_xlabel(xlabel)
        if j == 0:
            ax.set_ylabel(ylabel)
        if labels is not None:
            ax.set_title(labels[i][j])
    if shared_scale:
        fig.colorbar(image, ax=axes, shrink=0.8, label=label)
    return fig


def _panel_titles(titles: Any, rows: int, cols: int) -> Any:
    if titles is None:
        return None
    if isinstance(titles, str):
        titles = [titles]
    titles = list(titles)
    if all(isinstance(t, str) for t in titles):
        if len(titles) == rows * cols:
            return [titles[r * cols : (r + 1) * cols] for r in range(rows)]
        if len(titles) == cols:  # one per column, the textbook's form
            return [titles] * rows
    elif len(titles) == rows and all(
        not isinstance(row, str) and len(row) == cols and all(isinstance(t, str) for t in row)
        for row in titles
    ):
        return [list(row) for row in titles]
    raise ValueError(
        f"titles: expected {rows * cols} titles (one per panel, flat or {rows} rows of {cols}) "
        f"or {cols} (one per column); received {titles!r}"
    )
