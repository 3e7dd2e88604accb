"""Kernel shapes side by side, each kernel's fit below its shape."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from .. import kernels as _kernels
from .._support.hints import ArrayLike
from .figures import new_figure

__all__ = ["plot_kernels"]


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
    figsize : (width, height), optional
        Inches (about 2.6 by 2.4 a panel by default)

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> grid = np.linspace(0, 5, 100)
    >>> names = ["gaussian", "boxcar"]
    >>> fits = {k: attnpool.nadaraya_watson(data.x_train, data.y_train, grid, k,
    ...                                     bandwidth=0.4) for k in names}
    >>> fig = attnpool.plotting.plot_kernels(names, fits=fits, x_grid=grid,
    ...                                      data=(data.x_train, data.y_train))
    >>> [ax.get_title() for ax in fig.axes[:2]]
    ['gaussian', 'boxcar']

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2 (its figure of four kernels and their fits).
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
