"""A self-contained HTML report: the demo's figures and table, and an interactive part.

The interactive part — a bandwidth slider and a kernel selector that redraw the fitted
curve and the attention heatmap — needs no server and no network: the fits and weights
for a grid of bandwidths are computed here and embedded in the page as JSON (weights as
bytes on one shared colour scale, base64), and about a hundred lines of plain
JavaScript draw them on two canvases. Figures are embedded as PNG data URIs.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from . import kernels as _kernels
from ._support.files import atomic_write
from .demo import DemoResult, run_demo
from .pooling import EmptyNeighbourhoodWarning, attention_weights
from .regression import nadaraya_watson

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["build_report", "interactive_data", "write_report"]

INTERACTIVE_KERNELS = ("gaussian", "epanechnikov", "triangular", "boxcar")


def interactive_data(
    demo: DemoResult,
    *,
    kernels: Sequence[str] = INTERACTIVE_KERNELS,
    bandwidths: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Fits and weights of every kernel × bandwidth on the demo's data, ready for JSON.

    Weights are quantised to bytes over ``[0, largest weight of all]`` — the one colour
    scale shared by every heatmap the slider shows.
    """
    data = demo.data
    grid = np.geomspace(0.05, 3.0, 30) if bandwidths is None else np.asarray(bandwidths)
    names = [_kernels.get(k).name for k in kernels]
    fits: dict[str, list[list[float]]] = {}
    mse: dict[str, list[float]] = {}
    weights: dict[str, list[np.ndarray]] = {}
    for name in names:
        fits[name], mse[name], weights[name] = [], [], []
        for h in grid:
            fit = nadaraya_watson(
                data.x_train, data.y_train, data.x_val, kernel=name, bandwidth=h, empty="nearest"
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", EmptyNeighbourhoodWarning)
                w = attention_weights(data.x_val, data.x_train, kernel=name, bandwidth=h)
            fits[name].append(np.round(fit, 5).tolist())
            mse[name].append(round(float(np.mean((fit - data.y_val) ** 2)), 6))
            weights[name].append(np.nan_to_num(w))
    top = max(float(w.max()) for ws in weights.values() for w in ws)
    encoded = {
        name: [
            base64.b64encode(np.round(255 * w / top).astype(np.uint8).tobytes()).decode()
            for w in ws
        ]
        for name, ws in weights.items()
    }
    return {
        "x_train": np.round(data.x_train, 5).tolist(),
        "y_train": np.round(data.y_train, 5).tolist(),
        "x_grid": np.round(data.x_val, 5).tolist(),
        "truth": np.round(data.y_val, 5).tolist(),
        "bandwidths": np.round(grid, 5).tolist(),
        "kernels": names,
        "fits": fits,
        "mse": mse,
        "weights": encoded,
        "weight_max": top,
    }


def _png(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80)
    return base64.b64encode(buffer.getvalue()).decode()


def build_report(demo: DemoResult | None = None, *, seed: int = 0) -> str:
    """The report as one HTML string (runs the demo first unless one is given).

    One self-contained page: the demo's table and figures (PNG data URIs) and a slider
    that redraws the attention weights and the fit for each bandwidth, with no script
    or stylesheet from the network.

    Parameters
    ----------
    demo : DemoResult, optional
        A demo already run (:func:`attnpool.demo.run_demo`).
    seed : int
        The demo's data, when it is run here.

    Returns
    -------
    str
        The whole HTML page.

    Examples
    --------
    >>> from attnpool import report
    >>> page = report.build_report()
    >>> page.startswith("<!DOCTYPE html>"), "https://" in page
    (True, False)

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2 (the figures it shows, here with a bandwidth slider).
    """
    demo = demo if demo is not None else run_demo(seed=seed)
    payload = json.dumps(interactive_data(demo), separators=(",", ":"))
    payload = payload.replace("</", "<\\/")  # nothing in the JSON may close the script
    images = "\n".join(
        f'<figure><img alt="{html.escape(name)}" src="data:image/png;base64,{_png(fig)}">'
        f"<figcaption>{html.escape(name)}</figcaption></figure>"
        for name, fig in demo.figures.items()
    )
    return (
        _TEMPLATE.replace("{{TABLE}}", html.escape(demo.table()))
        .replace("{{IMAGES}}", images)
        .replace("{{DATA}}", payload)
        .replace("{{SCRIPT}}", _SCRIPT)
    )


def write_report(
    path: str | os.PathLike[str], demo: DemoResult | None = None, *, seed: int = 0
) -> Path:
    """Write :func:`build_report` to ``path`` atomically.

    Parameters
    ----------
    path : str or path-like
        The HTML file (written whole or not at all; never a directory).
    demo, seed
        As :func:`build_report` takes them.

    Returns
    -------
    pathlib.Path
        The file written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from attnpool import report
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> report.write_report(folder / "report.html").name
    'report.html'

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapter 11.2 (the figures it shows, here with a bandwidth slider).
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"out: expected an HTML file name; received the directory {str(path)!r}")
    text = build_report(demo, seed=seed)

    def write(stream: BinaryIO) -> None:
        stream.write(text.encode())

    return atomic_write(path, write)


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>attnpool report: attention pooling and Nadaraya–Watson regression</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.5em; }
.controls { display: flex; gap: 2em; align-items: center; flex-wrap: wrap; margin: 0.8em 0; }
.panels { display: flex; gap: 1.5em; flex-wrap: wrap; }
canvas { border: 1px solid #ccc; background: #fff; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; }
figure { display: inline-block; margin: 0.5em; } img { max-width: 100%; }
figcaption { font-size: 0.85em; color: #555; text-align: center; }
</style>
</head>
<body>
<h1>Attention pooling as Nadaraya–Watson regression</h1>
<p>Forty noisy samples of 2&nbsp;sin(x)&nbsp;+&nbsp;x. Each validation point (a query)
averages the training responses (values), weighted by a kernel of its distance to the
training inputs (keys), normalised over keys. Move the bandwidth and change the kernel:
the fitted curve and the queries&nbsp;×&nbsp;keys attention weights follow.</p>
<section id="interactive">
<h2>Interactive: bandwidth and kernel</h2>
<div class="controls">
<label>kernel <select id="kernel"></select></label>
<label>bandwidth <input id="bandwidth" type="range" min="0" step="1"></label>
<span>h = <output id="h-value"></output></span>
<span>validation MSE = <output id="mse-value"></output></span>
</div>
<div class="panels">
<canvas id="fit" width="620" height="380" aria-label="fitted curve"></canvas>
<canvas id="heatmap" width="420" height="380" aria-label="attention weights"></canvas>
</div>
</section>
<section id="demo">
<h2>The demo: validation MSE, kernel × bandwidth</h2>
<pre id="table">{{TABLE}}</pre>
{{IMAGES}}
</section>
<script type="application/json" id="data">{{DATA}}</script>
<script>{{SCRIPT}}</script>
</body>
</html>
"""

_SCRIPT = r"""
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const kernelSelect = document.getElementById("kernel");
const slider = document.getElementById("bandwidth");
const decoded = {};
for (const k of D.kernels) {
  kernelSelect.add(new Option(k, k));
  decoded[k] = D.weights[k].map(
    (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0)));
}
slider.max = String(D.bandwidths.length - 1);
slider.value = String(Math.floor(D.bandwidths.length / 2));

function scale(lo, hi, a, b) { return (v) => a + (v - lo) / (hi - lo) * (b - a); }

function drawFit(kernel, index) {
  const canvas = document.getElementById("fit");
  const ctx = canvas.getContext("2d");
  const W = canvas.width, H = canvas.height, pad = 40;
  ctx.clearRect(0, 0, W, H);
  const ys = D.y_train.concat(D.truth);
  const lo = Math.min(...ys) - 0.3, hi = Math.max(...ys) + 0.3;
  const sx = scale(D.x_grid[0], D.x_grid[D.x_grid.length - 1], pad, W - 10);
  const sy = scale(lo, hi, H - pad, 10);
  ctx.strokeStyle = "#888"; ctx.lineWidth = 1;
  ctx.strokeRect(pad, 10, W - pad - 10, H - pad - 10);
  ctx.fillStyle = "#444"; ctx.font = "12px sans-serif";
  for (let t = Math.ceil(lo); t <= hi; t += 1) { ctx.fillText(String(t), 8, sy(t) + 4); }
  for (let t = 0; t <= D.x_grid[D.x_grid.length - 1]; t += 1) {
    ctx.fillText(String(t), sx(t) - 3, H - pad + 16);
  }
  ctx.fillText("x", W / 2, H - 6);
  ctx.fillStyle = "rgba(90,90,90,0.6)";
  D.x_train.forEach((x, i) => {
    ctx.beginPath(); ctx.arc(sx(x), sy(D.y_train[i]), 3, 0, 2 * Math.PI); ctx.fill();
  });
  const line = (ys, colour, dash) => {
    ctx.strokeStyle = colour; ctx.lineWidth = 2; ctx.setLineDash(dash); ctx.beginPath();
    D.x_grid.forEach((x, i) => (i ? ctx.lineTo(sx(x), sy(ys[i])) : ctx.moveTo(sx(x), sy(ys[i]))));
    ctx.stroke(); ctx.setLineDash([]);
  };
  line(D.truth, "#000", [6, 4]);
  line(D.fits[kernel][index], "#c0392b", []);
  ctx.fillStyle = "#c0392b"; ctx.fillText("fit", W - 60, 28);
  ctx.fillStyle = "#000"; ctx.fillText("truth (dashed)", W - 110, 44);
}

function drawHeatmap(kernel, index) {
  const canvas = document.getElementById("heatmap");
  const ctx = canvas.getContext("2d");
  const W = canvas.width, H = canvas.height, bar = 50, pad = 30;
  ctx.clearRect(0, 0, W, H);
  const rows = D.x_grid.length, cols = D.x_train.length;
  const weights = decoded[kernel][index];
  const plotW = W - bar - pad, plotH = H - pad;
  const image = ctx.createImageData(plotW, plotH);
  for (let py = 0; py < plotH; py++) {
    const r = Math.floor(py * rows / plotH);
    for (let px = 0; px < plotW; px++) {
      const c = Math.floor(px * cols / plotW);
      const v = weights[r * cols + c] / 255;
      const o = 4 * (py * plotW + px);
      image.data[o] = 255 - 52 * v; image.data[o + 1] = 255 - 255 * v;
      image.data[o + 2] = 255 - 240 * v; image.data[o + 3] = 255;
    }
  }
  ctx.putImageData(image, pad, 0);
  for (let py = 0; py < plotH; py++) {  // the colour bar: one scale for every bandwidth
    const v = 1 - py / plotH;
    ctx.fillStyle = `rgb(${255 - 52 * v},${255 - 255 * v},${255 - 240 * v})`;
    ctx.fillRect(W - bar + 10, py, 14, 1);
  }
  ctx.fillStyle = "#444"; ctx.font = "11px sans-serif";
  ctx.fillText(D.weight_max.toFixed(2), W - bar + 26, 10);
  ctx.fillText("0", W - bar + 26, plotH);
  ctx.fillText("keys (training inputs)", pad + 40, H - 8);
  ctx.save(); ctx.translate(12, plotH / 2 + 40); ctx.rotate(-Math.PI / 2);
  ctx.fillText("queries", 0, 0); ctx.restore();
}

function update() {
  const kernel = kernelSelect.value, index = Number(slider.value);
  document.getElementById("h-value").textContent = D.bandwidths[index].toFixed(3);
  document.getElementById("mse-value").textContent = D.mse[kernel][index].toFixed(4);
  drawFit(kernel, index);
  drawHeatmap(kernel, index);
}
kernelSelect.addEventListener("change", update);
slider.addEventListener("input", update);
update();
"""
