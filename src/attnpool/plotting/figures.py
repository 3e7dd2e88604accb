"""What every picture of :mod:`attnpool.plotting` starts from: a pyplot-managed figure
(or the figure of a given Axes), labels from the data's names, a colour scale."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

__all__ = ["axes_for", "colour_scale", "data_name", "new_figure"]


def new_figure(figsize: tuple[float, float] | None) -> Figure:
    """A pyplot-managed figure (``plt.show()``, notebooks and sphinx-gallery see it)."""
    import matplotlib.pyplot as plt

    figure: Figure = plt.figure(figsize=figsize, layout="constrained")
    return figure


def axes_for(ax: Axes | None, figsize: tuple[float, float] | None) -> tuple[Figure, Axes]:
    """``(figure, axes)``: a new figure's one Axes, or ``ax`` and its figure."""
    if ax is None:
        fig = new_figure(figsize)
        return fig, fig.subplots()
    figure = ax.get_figure(root=True)  # (a subfigure's Axes: the whole figure)
    assert isinstance(figure, Figure)
    return figure, ax


def data_name(data: Any, default: str) -> str:
    """A label from the data's own name (a pandas Series'), else ``default``."""
    name = getattr(data, "name", None)
    return str(name) if isinstance(name, str) and name else default


def colour_scale(values: np.ndarray) -> Normalize:
    """The colour scale of ``values``' finite entries (0–1 where there are none)."""
    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    return Normalize(vmin=low, vmax=high if high > low else low + 1.0)
