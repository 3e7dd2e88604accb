"""Pictures of attention: weight heatmaps, fits against the truth, kernel shapes.

Every function returns its :class:`matplotlib.figure.Figure`: a pyplot figure of its
own (``plt.show()`` shows it, notebooks and sphinx-gallery capture it;
``fig.savefig(path)`` writes it), or, given ``ax=``, the figure of that Axes, drawn
into. No rcParams change. Axes are labelled from the data's names where they have
them (a pandas Series), and panels with several curves carry a legend. Heatmaps put
queries on rows (y axis) and keys on columns (x axis).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import kernels as _kernels
from ._optional import require
from ._typing import ArrayLike

require("matplotlib", "attnpool.plotting")
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ._figures import axes_for, colour_scale, data_name, new_figure  # noqa: E402

__all__ = [
    "plot_conditional_density",
    "plot_density",
    "plot_fit",
    "plot_history",
    "plot_kernels",
    "plot_mse_curves",
    "plot_rates",
    "show_heatmaps",
]


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
        NaN entries (empty neighbourhoods) are left blank.

    >>> import numpy as np
    >>> fig = show_heatmaps(np.eye(10))
    >>> len(fig.axes)  # one panel and its colorbar
    2
    >>> grid = np.ones((2, 3, 4, 4))  # the textbook's call: labels in order, a title per column
    >>> fig = show_heatmaps(grid, "Keys", "Queries", titles=["a", "b", "c"])
    >>> [ax.get_title() for ax in fig.axes[:6]]
    ['a', 'b', 'c', 'a', 'b', 'c']
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
    fig = new_figure(figsize or (2.5 * cols + 1.0, 2.5 * rows))
    axes = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)
    for (i, j), ax in np.ndenumerate(axes):
        own = norm if shared_scale else colour_scale(grid[i, j])
        image = ax.imshow(grid[i, j], cmap=cmap, norm=own, aspect="auto", interpolation="nearest")
        if not shared_scale:
            fig.colorbar(image, ax=ax, shrink=0.8)
        if i == rows - 1:
            ax.set_xlabel(xlabel)
        if j == 0:
            ax.set_ylabel(ylabel)
        if labels is not None:
            ax.set_title(labels[i][j])
    if shared_scale:
        fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
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


def plot_fit(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_grid: ArrayLike,
    estimates: Mapping[str, np.ndarray],
    *,
    truth: ArrayLike | None = None,
    bands: Mapping[str, tuple[Any, ...]] | None = None,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    ax: Axes | None = None,
    figsize: tuple[float, float] = (6.0, 4.0),
) -> Figure:
    """Training points, the true function and several estimates on ``x_grid``.

    ``estimates`` maps a legend label (say ``"h = 0.5"``) to predictions of
    shape ``(len(x_grid),)``; ``truth`` is the true function on the grid;
    ``bands`` maps a label to ``(lower, upper)`` on the grid, drawn shaded.
    ``xlabel``/``ylabel``: default to the data's names (pandas Series), else "x"/"y".
    ``ax``: draw into these Axes (their figure is returned).
    """
    xlabel, ylabel = xlabel or data_name(x_train, "x"), ylabel or data_name(y_train, "y")
    x_grid = np.asarray(x_grid)
    fig, ax = axes_for(ax, figsize)
    ax.plot(x_train, y_train, "o", color="0.5", alpha=0.6, markersize=4, label="data")
    if truth is not None:
        ax.plot(x_grid, truth, "k--", linewidth=1.5, label="truth")
    for label, estimate in estimates.items():
        estimate = np.asarray(estimate)
        if estimate.shape != x_grid.shape:
            raise ValueError(
                f"estimates[{label!r}]: expected shape {x_grid.shape} to match x_grid; "
                f"received {estimate.shape}"
            )
        ax.plot(x_grid, estimate, linewidth=1.8, label=label)
    for label, (lower, upper) in (bands or {}).items():
        if np.shape(lower) != x_grid.shape or np.shape(upper) != x_grid.shape:
            raise ValueError(
                f"bands[{label!r}]: expected (lower, upper) of shape {x_grid.shape} each; "
                f"received {np.shape(lower)} and {np.shape(upper)}"
            )
        ax.fill_between(x_grid, lower, upper, alpha=0.25, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize="small")
    return fig


def plot_density(
    x_grid: ArrayLike,
    density: ArrayLike,
    *,
    sample: ArrayLike | None = None,
    band: tuple[Any, ...] | None = None,
    truth: ArrayLike | None = None,
    xlabel: str = "x",
    title: str | None = None,
    ax: Axes | None = None,
    figsize: tuple[float, float] = (6.0, 4.0),
) -> Figure:
    """A density estimate on ``x_grid`` with a rug of the ``sample`` under it, a shaded
    pointwise ``band`` ``(lower, upper)`` and the ``truth``, all optional (arrays of
    ``x_grid``'s shape); ``ax``: draw into these Axes."""
    x_grid = np.asarray(x_grid, float)
    given: dict[str, tuple[Any, ...]] = {
        "density": (density,),
        "truth": () if truth is None else (truth,),
        "band": () if band is None else band,
    }
    for name, arrays in given.items():
        if any(np.shape(a) != x_grid.shape for a in arrays):
            raise ValueError(
                f"{name}: expected arrays of x_grid's shape {x_grid.shape}; received "
                f"{[np.shape(a) for a in arrays]}"
            )
    fig, ax = axes_for(ax, figsize)
    if band is not None:
        ax.fill_between(x_grid, *band, alpha=0.25, color="C0", label="pointwise band")
    if truth is not None:
        ax.plot(x_grid, truth, "k--", linewidth=1.2, label="truth")
    ax.plot(x_grid, density, color="C0", linewidth=1.8, label="estimate")
    if sample is not None:
        ax.plot(np.ravel(sample), np.zeros(np.size(sample)), "|", color="0.3", markersize=12,
                alpha=0.5, label="sample")  # fmt: skip
    ax.set_xlabel(xlabel)
    ax.set_ylabel("density")
    if title:
        ax.set_title(title)
    ax.legend(fontsize="small")
    return fig


def plot_conditional_density(
    x_grid: ArrayLike,
    y_grid: ArrayLike,
    density: ArrayLike,
    *,
    mean: ArrayLike | None = None,
    sample: tuple[Any, ...] | None = None,
    xlabel: str = "x",
    ylabel: str = "y",
    title: str | None = None,
    cmap: str = "viridis",
    ax: Axes | None = None,
    figsize: tuple[float, float] = (6.5, 4.5),
) -> Figure:
    """``f̂(y | x)`` as a heatmap: ``density (len(y_grid), len(x_grid))``, one column per
    ``x``, with the conditional ``mean`` on ``x_grid`` overlaid and the ``sample``
    ``(x, y)`` as points, both optional; the colour bar is the density's own scale."""
    x_grid, y_grid = np.asarray(x_grid, float), np.asarray(y_grid, float)
    density = np.asarray(density, float)
    if density.shape != (y_grid.size, x_grid.size):
        raise ValueError(
            f"density: expected shape (len(y_grid), len(x_grid)) = {(y_grid.size, x_grid.size)}; "
            f"received {density.shape}"
        )
    fig, ax = axes_for(ax, figsize)
    image = ax.pcolormesh(x_grid, y_grid, density, cmap=cmap, shading="auto")
    fig.colorbar(image, ax=ax, label="f̂(y | x)")
    if sample is not None:
        ax.plot(*sample, ".", color="white", markersize=3, alpha=0.5, label="sample")
    if mean is not None:
        ax.plot(x_grid, mean, color="C3", linewidth=2, label="conditional mean")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if mean is not None or sample is not None:
        ax.legend(fontsize="small")
    return fig


def plot_history(
    histories: Mapping[str, np.ndarray],
    *,
    reference: tuple[str, float] | None = None,
    ylabel: str = "loss",
    title: str | None = None,
    ax: Axes | None = None,
    figsize: tuple[float, float] = (6.0, 4.0),
) -> Figure:
    """Loss curves against the training step, on a log scale.

    ``histories`` maps a label to the loss at each step; ``reference`` is a
    ``(label, value)`` drawn as a horizontal line (say, the cross-validated optimum).
    """
    fig, ax = axes_for(ax, figsize)
    for label, history in histories.items():
        history = np.asarray(history, dtype=float)
        if history.ndim != 1 or history.size == 0:
            raise ValueError(
                f"histories[{label!r}]: expected a non-empty 1-D array of losses; "
                f"received shape {history.shape}"
            )
        ax.plot(np.arange(history.size), history, linewidth=1.8, label=label)
    if reference is not None:
        ax.axhline(reference[1], color="k", linestyle="--", linewidth=1.2, label=reference[0])
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize="small")
    return fig


def plot_rates(
    curves: Mapping[str, tuple[Any, ...]],
    *,
    references: Mapping[str, tuple[Any, ...]] | None = None,
    title: str = "Mean squared error against the sample size",
    ax: Axes | None = None,
    figsize: tuple[float, float] = (6.5, 4.5),
) -> Figure:
    """Log–log MSE against n: ``curves`` and dashed ``references`` map a label to
    ``(sizes, mse)``."""
    fig, ax = axes_for(ax, figsize)
    for label, (sizes, mse) in curves.items():
        ax.loglog(sizes, mse, "o-", markersize=4, linewidth=1.5, label=label)
    for label, (sizes, mse) in (references or {}).items():
        ax.loglog(sizes, mse, "--", color="0.4", linewidth=1.0, label=label)
    ax.set_xlabel("n (training points)")
    ax.set_ylabel("MSE against the truth")
    ax.set_title(title)
    ax.legend(fontsize="x-small", ncol=2)
    return fig


def plot_mse_curves(
    scales: ArrayLike,
    curves: Mapping[str, np.ndarray],
    *,
    xlabel: str = "kernel standard deviation s (h = s / σ_K)",
    title: str = "Bandwidth matters more than the kernel's shape",
    ax: Axes | None = None,
    figsize: tuple[float, float] = (6.5, 4.5),
) -> Figure:
    """Validation MSE against a common bandwidth scale, one curve per kernel (log–log)."""
    fig, ax = axes_for(ax, figsize)
    for label, mse in curves.items():
        ax.loglog(scales, mse, linewidth=1.6, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("validation MSE")
    ax.set_title(title)
    ax.legend(fontsize="small")
    return fig


def plot_kernels(
    kernels: Sequence[Any] = ("gaussian", "boxcar", "constant", "triangular"),
    *,
    fits: Mapping[str, np.ndarray] | None = None,
    x_grid: ArrayLike | None = None,
    data: tuple[Any, ...] | None = None,
    truth: ArrayLike | None = None,
    fit_label: str = "fit",
    figsize: tuple[float, float] | None = None,
) -> Figure:
    """Kernel shapes side by side; with ``fits``, each kernel's fit below its shape.

    Parameters
    ----------
    kernels : sequence of names or Kernel records
    fits : mapping from kernel name to predictions on ``x_grid``, optional
    x_grid : array, needed with ``fits``
    data : (x_train, y_train), optional
        Drawn under each fit
    truth : array on ``x_grid``, optional
    fit_label : str
        The y label of the row of fits
    """
    records = [_kernels.get(k) for k in kernels]
    rows = 1 if fits is None else 2
    fig = new_figure(figsize or (2.6 * len(records), 2.4 * rows))
    axes = fig.subplots(rows, len(records), squeeze=False)
    u = np.linspace(-2.5, 2.5, 501)
    for j, kernel in enumerate(records):
        ax = axes[0, j]
        shape = kernel(u)
        ax.plot(u, shape, color="C3")
        ax.set_ylim(1.1 * min(float(np.min(shape)), 0.0), 1.1 * float(np.max(shape)))
        ax.set_title(kernel.name)
        ax.set_xlabel("scaled distance u")
        if j == 0:
            ax.set_ylabel("K(u)")
        if fits is None:
            continue
        if x_grid is None or kernel.name not in fits:
            raise ValueError(
                f"fits: expected predictions on x_grid for kernel {kernel.name!r}; "
                f"received keys {sorted(fits)} and x_grid={'given' if x_grid is not None else None}"
            )
        ax = axes[1, j]
        if data is not None:
            ax.plot(*data, "o", color="0.5", alpha=0.5, markersize=3, label="data")
        if truth is not None:
            ax.plot(x_grid, truth, "k--", linewidth=1, label="truth")
        ax.plot(x_grid, fits[kernel.name], color="C0", label=fit_label)
        ax.set_xlabel("x")
        if j == 0:
            ax.set_ylabel(fit_label)
            if data is not None or truth is not None:
                ax.legend(fontsize="x-small")  # (the same three curves in every panel)
    return fig
