"""Fits and densities against the data: estimates with their bands, a density over a
rug of its sample, a conditional density as a heatmap."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .._support.hints import ArrayLike
from .figures import axes_for, data_name

__all__ = ["plot_conditional_density", "plot_density", "plot_fit"]


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

    The axes are labelled with the data's names (pandas Series) unless ``xlabel`` and
    ``ylabel`` are given, else "x" and "y".

    Parameters
    ----------
    x_train, y_train : array of shape (n,)
        The data, drawn as points.
    x_grid : array of shape (k,)
        Where the estimates are given.
    estimates : mapping of str to array of shape (k,)
        One curve per label.
    truth : array of shape (k,), optional
    bands : mapping of str to (lower, upper), optional
        Shaded bands, each of shape (k,).
    title, xlabel, ylabel : str, optional
    ax : matplotlib.axes.Axes, optional
        Draw into these Axes (their figure is returned); by default a new pyplot figure.
    figsize : (width, height)
        The new figure's size in inches.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> grid = np.linspace(0, 5, 100)
    >>> fit = attnpool.nadaraya_watson(data.x_train, data.y_train, grid, bandwidth=0.3)
    >>> band = attnpool.confidence_band(data.x_train, data.y_train, grid, bandwidth=0.3)
    >>> fig = attnpool.plotting.plot_fit(
    ...     data.x_train, data.y_train, grid, {"h = 0.3": fit},
    ...     truth=attnpool.datasets.sine_truth(grid), bands={"95 %": band[2:4]})
    >>> [line.get_label() for line in fig.axes[0].get_lines()]
    ['data', 'truth', 'h = 0.3']

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2 (``plot_kernel_reg``). Fan, J. & Gijbels, I. (1996). *Local
    Polynomial Modelling and Its Applications*, section 4.4 (pointwise bands).
    """
    xlabel, ylabel = xlabel or data_name(x_train, "x"), ylabel or data_name(y_train, "y")
    x_grid, x_column, y_column = np.asarray(x_grid), np.asarray(x_train), np.asarray(y_train)
    x_column, y_column = (a[:, 0] if a.ndim == 2 and a.shape[1] == 1 else a
                          for a in (x_column, y_column))  # fmt: skip
    if x_column.ndim != 1 or y_column.shape != x_column.shape:
        raise ValueError(
            "x_train, y_train: plot_fit draws one input column against one response, "
            f"shape (n,) each; received shapes {np.shape(x_train)} and {np.shape(y_train)}"
        )
    fig, ax = axes_for(ax, figsize)
    ax.plot(x_column, y_column, "o", color="0.5", alpha=0.6, markersize=4, label="data")
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
    ``x_grid``'s shape); ``ax``: draw into these Axes.

    Parameters
    ----------
    x_grid : array of shape (k,)
    density : array of shape (k,)
        The estimate on ``x_grid``.
    sample : array of shape (n,), optional
        Drawn as a rug under the curve.
    band : (lower, upper), optional
        A pointwise band, each of shape (k,) (:func:`attnpool.density.density_band`).
    truth : array of shape (k,), optional
    xlabel, title : str
    ax : matplotlib.axes.Axes, optional
        Draw into these Axes (their figure is returned); by default a new pyplot figure.
    figsize : (width, height)
        The new figure's size in inches.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> grid = np.linspace(0, 5, 100)
    >>> f = attnpool.kernel_density(data.x_train, grid, bandwidth=0.4)
    >>> band = attnpool.density.density_band(data.x_train, grid, bandwidth=0.4)
    >>> fig = attnpool.plotting.plot_density(grid, f, sample=data.x_train, band=band,
    ...                                      truth=np.full(100, 0.2))  # uniform on [0, 5]
    >>> [line.get_label() for line in fig.axes[0].get_lines()]
    ['truth', 'estimate', 'sample']

    References
    ----------
    Silverman, B. W. (1986). *Density Estimation for Statistics and Data Analysis*,
    section 2.10 (the estimate over a rug of its sample).
    """
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
    ``(x, y)`` as points, both optional; the colour bar is the density's own scale.

    Parameters
    ----------
    x_grid : array of shape (k,)
    y_grid : array of shape (l,)
    density : array of shape (l, k)
        ``f̂(y_grid[i] | x_grid[j])``.
    mean : array of shape (k,), optional
        The conditional mean on ``x_grid``.
    sample : (x, y), optional
    xlabel, ylabel, title : str
    cmap : str
        A matplotlib colormap name.
    ax : matplotlib.axes.Axes, optional
        Draw into these Axes (their figure is returned); by default a new pyplot figure.
    figsize : (width, height)
        The new figure's size in inches.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> grid = np.linspace(0, 5, 100)
    >>> y_grid = np.linspace(-1, 7, 60)
    >>> xs, ys = np.meshgrid(grid, y_grid)
    >>> f = attnpool.conditional_density(data.x_train, data.y_train, xs.ravel(), ys.ravel(),
    ...                                  bandwidth=0.4, y_bandwidth=0.5).reshape(60, 100)
    >>> mean = attnpool.nadaraya_watson(data.x_train, data.y_train, grid, bandwidth=0.4)
    >>> fig = attnpool.plotting.plot_conditional_density(
    ...     grid, y_grid, f, mean=mean, sample=(data.x_train, data.y_train))
    >>> fig.axes[1].get_ylabel()                      # the colour bar's
    'f̂(y | x)'

    References
    ----------
    Hyndman, R. J., Bashtannyk, D. M. & Grunwald, G. K. (1996). Estimating and
    visualizing conditional densities. *Journal of Computational and Graphical
    Statistics* 5(4), 315–336.
    """
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
