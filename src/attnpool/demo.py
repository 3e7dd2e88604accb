"""The classic attention-pooling example end to end (Dive into Deep Learning, §11.2).

Forty noisy samples of ``2 sin x + x``; Nadaraya–Watson estimates for several
kernels and bandwidths; their attention-weight heatmaps; the exact-lookup
picture; and a table of validation MSE that shows the bandwidth matters more
than the kernel's shape.

>>> result = run_demo(bandwidths=(0.5,), kernels=("gaussian",))
>>> sorted(result.figures)
['fit.png', 'heatmaps.png', 'kernels.png', 'lookup.png']
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import kernels as _kernels
from ._support.files import atomic_write, figure_bytes
from ._support.validation import check_positive_int
from .datasets import SineData, sine_data
from .pooling import EmptyNeighbourhoodWarning, attention_weights
from .regression import nadaraya_watson

__all__ = ["DemoResult", "LearnDemoResult", "run_demo", "run_learn_demo", "save_figures"]


@dataclass
class DemoResult:
    """What :func:`run_demo` computed: data, fits, validation MSE and the figures.

    Attributes
    ----------
    data : SineData
    bandwidths : list of float
    kernels : list of str
    fits : dict mapping (kernel, bandwidth) to predictions on ``data.x_val``
    mse : dict mapping (kernel, bandwidth) to the validation mean squared error
    empty : dict mapping (kernel, bandwidth) to the number of validation points
        with no training point inside the kernel's support (they used the nearest)
    figures : dict mapping a file name to a matplotlib Figure
    """

    data: SineData
    bandwidths: list[float]
    kernels: list[str]
    fits: dict = field(default_factory=dict)
    mse: dict = field(default_factory=dict)
    empty: dict = field(default_factory=dict)
    figures: dict = field(default_factory=dict)

    def table(self) -> str:
        """Validation MSE, kernel × bandwidth, and how much each factor moves it."""
        width = max(12, *(len(k) + 2 for k in self.kernels))
        header = "kernel".ljust(width) + "".join(f"h = {h:<8g}" for h in self.bandwidths)
        lines = [
            f"Validation MSE of Nadaraya–Watson on {len(self.data.x_train)} noisy points "
            f"of 2 sin(x) + x ({len(self.data.x_val)} validation points)",
            header,
            "-" * len(header),
        ]
        for kernel in self.kernels:
            cells = []
            for h in self.bandwidths:
                mark = "*" if self.empty[kernel, h] else " "
                cells.append(f"{self.mse[kernel, h]:<7.4f}{mark}   ")
            lines.append(kernel.ljust(width) + "".join(cells).rstrip())
        if any(self.empty.values()):
            lines.append(
                "* some validation points had no training point inside the kernel's "
                "support and used the nearest one"
            )
        shaped = [k for k in self.kernels if k != "constant"] or self.kernels
        best_h = min(self.bandwidths, key=lambda h: min(self.mse[k, h] for k in shaped))
        across_kernels = [self.mse[k, best_h] for k in shaped]
        reference = "gaussian" if "gaussian" in shaped else shaped[0]
        across_bandwidths = [self.mse[reference, h] for h in self.bandwidths]
        lines.append(
            f"spread across kernels at h = {best_h:g}: "
            f"{max(across_kernels) - min(across_kernels):.4f}; "
            f"across bandwidths for {reference}: "
            f"{max(across_bandwidths) - min(across_bandwidths):.4f}"
        )
        return "\n".join(lines)


def run_demo(
    *,
    seed: int = 0,
    n: int = 40,
    bandwidths: Sequence[float] = (0.1, 0.5, 2.0),
    kernels: Sequence[str] = ("gaussian", "boxcar", "constant", "triangular"),
) -> DemoResult:
    """Fit the sine data with every kernel × bandwidth and draw the four figures.

    ``fit.png``: gaussian estimates at each bandwidth with the truth and the data;
    ``heatmaps.png``: their attention weights (validation points × training
    points) on one colour scale; ``kernels.png``: each kernel's shape and its fit
    at the middle bandwidth; ``lookup.png``: one-hot weights, exact lookup.
    """
    from . import plotting  # matplotlib is loaded only when pictures are wanted

    n = check_positive_int(n, "n", allow_none=False)
    bandwidths = [float(h) for h in bandwidths]
    if not bandwidths:
        raise ValueError("bandwidths: expected at least one positive number; received none")
    kernels = [_kernels.get(k).name for k in kernels]
    if not kernels:
        raise ValueError("kernels: expected at least one kernel name; received none")
    data = sine_data(n=n, seed=seed)
    result = DemoResult(data, bandwidths, kernels)
    weight_matrices = {}
    for kernel in kernels:
        for h in bandwidths:
            fit = nadaraya_watson(
                data.x_train, data.y_train, data.x_val, kernel=kernel, bandwidth=h, empty="nearest"
            )
            with warnings.catch_warnings():  # counted here, reported in the table
                warnings.simplefilter("ignore", EmptyNeighbourhoodWarning)
                weights = attention_weights(data.x_val, data.x_train, kernel=kernel, bandwidth=h)
            result.fits[kernel, h] = fit
            result.mse[kernel, h] = float(np.mean((fit - data.y_val) ** 2))
            result.empty[kernel, h] = int(np.isnan(weights).any(axis=1).sum())
            weight_matrices[kernel, h] = weights

    first = "gaussian" if "gaussian" in kernels else kernels[0]
    result.figures["fit.png"] = plotting.plot_fit(
        data.x_train,
        data.y_train,
        data.x_val,
        {f"{first}, h = {h:g}": result.fits[first, h] for h in bandwidths},
        truth=data.y_val,
        title="Nadaraya–Watson: the bandwidth sets the smoothness",
    )
    result.figures["heatmaps.png"] = plotting.show_heatmaps(
        np.stack([weight_matrices[first, h] for h in bandwidths]),
        xlabel="training inputs (keys)",
        ylabel="validation inputs (queries)",
        titles=[f"{first}, h = {h:g}" for h in bandwidths],
    )
    middle = bandwidths[len(bandwidths) // 2]
    result.figures["kernels.png"] = plotting.plot_kernels(
        kernels,
        fits={k: result.fits[k, middle] for k in kernels},
        x_grid=data.x_val,
        data=(data.x_train, data.y_train),
        truth=data.y_val,
        fit_label=f"fit, h = {middle:g}",
    )
    lookup_keys = np.arange(10.0)
    result.figures["lookup.png"] = plotting.show_heatmaps(
        attention_weights(lookup_keys, lookup_keys, kernel="boxcar", bandwidth=0.5),
        titles=["exact lookup: one-hot weights"],
        figsize=(4.0, 3.4),
    )
    return result


@dataclass
class LearnDemoResult:
    """What :func:`run_learn_demo` computed.

    Attributes
    ----------
    data : SineData
    fit : AttentionFit
        The bandwidth trained by leave-one-out error
    interpolating : AttentionFit
        The same model trained without leaving one out
    cv_bandwidth, cv_error : float — the cross-validated bandwidth and its LOO error
    mse : dict mapping a label to the validation mean squared error
    figures : dict mapping a file name to a matplotlib Figure
    """

    data: SineData
    fit: object
    interpolating: object
    cv_bandwidth: float
    cv_error: float
    mse: dict = field(default_factory=dict)
    figures: dict = field(default_factory=dict)

    def summary(self) -> str:
        """The learned parameters, the CV reference and the validation errors."""
        h = self.fit.parameters()["bandwidth"]
        trivial = self.interpolating.parameters()["bandwidth"]
        lines = [
            f"Parametric Nadaraya–Watson on {len(self.data.x_train)} noisy points of "
            f"2 sin(x) + x, trained by leave-one-out error ({len(self.fit.history)} steps)",
            f"learned bandwidth       h = {h:.4f} (w = 1/h = {1 / h:.3f}), "
            f"leave-one-out MSE {self.fit.loo_error():.4f}",
            f"cross-validated         h = {self.cv_bandwidth:.4f}, "
            f"leave-one-out MSE {self.cv_error:.4f}",
            f"without leaving one out h = {trivial:.4f}, training MSE "
            f"{self.interpolating.history[-1]:.4f}: it attends to each point itself",
            "validation MSE:",
        ]
        width = max(len(label) for label in self.mse) + 2
        lines += [f"  {label.ljust(width)}{mse:.4f}" for label, mse in self.mse.items()]
        return "\n".join(lines)


def run_learn_demo(
    *,
    seed: int = 0,
    steps: int = 300,
    learning_rate: float = 0.05,
    fixed_bandwidths: Sequence[float] = (0.1, 0.5, 2.0),
    progress=None,
) -> LearnDemoResult:
    """Learn the bandwidth of Nadaraya–Watson on the sine data and draw three figures.

    ``loss.png``: the leave-one-out loss during training, the in-sample loss that
    collapses to zero without leaving one out, and the CV optimum;
    ``learned_fit.png``: the learned fit against fixed-bandwidth fits and the truth;
    ``learned_heatmaps.png``: fixed and learned attention weights on one colour scale.
    """
    from . import plotting
    from .bandwidth import select_bandwidth
    from .learn import GlobalBandwidth, fit_attention

    fixed = [float(h) for h in fixed_bandwidths]
    data = sine_data(seed=seed)
    model = GlobalBandwidth(initial=1.0)
    options = dict(steps=steps, learning_rate=learning_rate, seed=seed)
    fit = fit_attention(model, data.x_train, data.y_train, progress=progress or False, **options)
    interpolating = fit_attention(model, data.x_train, data.y_train, loss="mse", **options)
    selection = select_bandwidth(data.x_train, data.y_train)
    result = LearnDemoResult(
        data, fit, interpolating, float(selection.bandwidth[0]), float(selection.objective)
    )
    h = fit.parameters()["bandwidth"]
    fits = {
        f"fixed h = {b:g}": nadaraya_watson(data.x_train, data.y_train, data.x_val, bandwidth=b)
        for b in fixed
    }
    fits[f"learned h = {h:.3f}"] = fit.predict(data.x_val)
    fits[f"no leave-one-out h = {interpolating.parameters()['bandwidth']:.3f}"] = (
        interpolating.predict(data.x_val)
    )
    result.mse = {label: float(np.mean((f - data.y_val) ** 2)) for label, f in fits.items()}
    result.figures["loss.png"] = plotting.plot_history(
        {
            "leave-one-out MSE (training)": fit.history,
            "in-sample MSE (no leave-one-out)": interpolating.history,
        },
        reference=("cross-validated optimum", selection.objective),
        ylabel="mean squared error",
        title="Learning the bandwidth by gradient descent",
    )
    shown = {label: f for label, f in fits.items() if not label.startswith("no ")}
    result.figures["learned_fit.png"] = plotting.plot_fit(
        data.x_train,
        data.y_train,
        data.x_val,
        shown,
        truth=data.y_val,
        title="Learned bandwidth against fixed ones",
    )
    weights = [attention_weights(data.x_val, data.x_train, bandwidth=b) for b in fixed]
    weights.append(fit.attention_weights(data.x_val))
    result.figures["learned_heatmaps.png"] = plotting.show_heatmaps(
        np.stack(weights),
        xlabel="training inputs (keys)",
        ylabel="validation inputs (queries)",
        titles=[f"fixed h = {b:g}" for b in fixed] + [f"learned h = {h:.3f}"],
    )
    return result


def save_figures(
    figures: dict, out: str | os.PathLike, *, dpi: int = 150, format: str = "png"
) -> list[Path]:
    """Write each figure to ``out/NAME`` (``NAME`` with the suffix of ``format``: png,
    svg, pdf, …) at ``dpi``, all rendered before the first file is written.

    Each file is written atomically (a temporary file, then a rename): a figure that
    cannot be drawn leaves no file behind, and none is ever half-written.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out: expected a directory; received {str(out)!r}, which is a file")
    named = {str(Path(name).with_suffix("." + format.lower().lstrip("."))): figure
             for name, figure in figures.items()}  # fmt: skip
    images = {name: figure_bytes(figure, out / name, dpi=dpi) for name, figure in named.items()}
    out.mkdir(parents=True, exist_ok=True)
    return [atomic_write(out / name, image) for name, image in images.items()]
