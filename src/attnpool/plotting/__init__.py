"""Pictures of attention: weight heatmaps, fits against the truth, kernel shapes.

Every function returns its :class:`matplotlib.figure.Figure`: a pyplot figure of its
own (``plt.show()`` shows it, notebooks and sphinx-gallery capture it;
``fig.savefig(path)`` writes it), or, given ``ax=``, the figure of that Axes, drawn
into. No rcParams change. Axes are labelled from the data's names where they have
them (a pandas Series), and panels with several curves carry a legend. Heatmaps put
queries on rows (y axis) and keys on columns (x axis).
"""

from .._support.optional import require

require("matplotlib", "attnpool.plotting")

from .curves import plot_conditional_density, plot_density, plot_fit  # noqa: E402
from .heatmaps import show_heatmaps  # noqa: E402
from .kernel_shapes import plot_kernels  # noqa: E402
from .studies import plot_history, plot_mse_curves, plot_rates  # noqa: E402

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
