"""Curves of training and of studies: losses against the step, errors against the
sample size and against the bandwidth."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .._support.hints import ArrayLike
from .figures import axes_for

__all__ = ["plot_history", "plot_mse_curves", "plot_rates"]


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

    Parameters
    ----------
    histories : mapping of str to array of shape (steps,)
    reference : (str, float), optional
    ylabel, title : str
    ax : matplotlib.axes.Axes, optional
        Draw into these Axes (their figure is returned); by default a new pyplot figure.
    figsize : (width, height)
        The new figure's size in inches.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> fit = attnpool.fit_attention("bandwidth", data.x_train, data.y_train, steps=60)
    >>> fig = attnpool.plotting.plot_history({"bandwidth": fit.history},
    ...                                      reference=("LOO optimum", 0.26))
    >>> fig.axes[0].get_yscale()
    'log'

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2 (its training-loss animation).
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
    ``(sizes, mse)``.

    Parameters
    ----------
    curves : mapping of str to (sizes, mse)
    references : mapping of str to (sizes, mse), optional
        Dashed, as rates to compare with (say ``n^(−4/5)``).
    title : str
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
    >>> sizes = np.array([100, 400, 1600])
    >>> fig = attnpool.plotting.plot_rates(
    ...     {"gaussian": (sizes, [0.02, 0.0068, 0.0023])},
    ...     references={"n^(-4/5)": (sizes, 0.02 * (sizes / 100.0) ** -0.8)})
    >>> fig.axes[0].get_xscale(), fig.axes[0].get_yscale()
    ('log', 'log')

    References
    ----------
    Wand, M. P. & Jones, M. C. (1995). *Kernel Smoothing*, section 5.4 (the ``n^(−4/5)``
    rate of the mean squared error).
    """
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
    """Validation MSE against a common bandwidth scale, one curve per kernel (log–log).

    Parameters
    ----------
    scales : array of shape (k,)
        The common bandwidth scale (a kernel standard deviation).
    curves : mapping of str to array of shape (k,)
        One validation MSE curve per kernel.
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
    >>> scales = np.geomspace(0.05, 2, 5)
    >>> fig = attnpool.plotting.plot_mse_curves(
    ...     scales, {"gaussian": [0.4, 0.3, 0.27, 0.5, 1.2], "boxcar": [0.5, 0.31, 0.28, 0.5, 1.3]})
    >>> [line.get_label() for line in fig.axes[0].get_lines()]
    ['gaussian', 'boxcar']

    References
    ----------
    Marron, J. S. & Nolan, D. (1988). Canonical kernels for density estimation.
    *Statistics & Probability Letters* 7(3), 195–199 (kernels compared at a common
    scale).
    """
    fig, ax = axes_for(ax, figsize)
    for label, mse in curves.items():
        ax.loglog(scales, mse, linewidth=1.6, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("validation MSE")
    ax.set_title(title)
    ax.legend(fontsize="small")
    return fig
