"""The command line's demonstrations: ``demo``, ``study``, ``report`` and ``learn-demo``
(each a few lines over one library call), registered on :data:`attnpool.cli.app` after
the main commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app
from .progress import CommandProgress

#: The studies ``study`` runs (:data:`attnpool.studies.STUDIES`, not imported for --help).
STUDY_NAMES = ("consistency", "kernels")


def _split(text: str, option: str, convert=str) -> list:
    items = [item.strip() for item in text.split(",") if item.strip()]
    try:
        return [convert(item) for item in items]
    except ValueError:
        raise ValueError(
            f"{option}: expected a comma-separated list of numbers; received {text!r}"
        ) from None


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="Folder for the pictures.")] = Path(
        "demo-output"
    ),
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the noisy sample.")] = 0,
    bandwidths: Annotated[str, typer.Option("--bandwidths", help="Comma-separated.")] = (
        "0.1,0.5,2.0"
    ),
    kernels: Annotated[str, typer.Option("--kernels", help="Comma-separated kernel names.")] = (
        "gaussian,boxcar,constant,triangular"
    ),
    html: Annotated[
        bool, typer.Option("--html", help="Also write report.html (interactive, offline).")
    ] = False,
    dpi: Annotated[int, typer.Option("--dpi", min=30, help="The pictures' resolution.")] = 150,
    picture_format: Annotated[
        str, typer.Option("--format", help="The pictures' format: png, svg, pdf, …")
    ] = "png",
) -> None:
    """The classic example: 40 noisy points, fits, heatmaps, kernels, exact lookup."""
    from ..demo import run_demo, save_figures

    result = run_demo(
        seed=seed,
        bandwidths=_split(bandwidths, "--bandwidths", float),
        kernels=_split(kernels, "--kernels"),
    )
    page = None
    if html:  # built before any file is written, so a failure leaves nothing behind
        from ..report import build_report

        page = build_report(result)
    written = save_figures(result.figures, out, dpi=dpi, format=picture_format)
    if page is not None:
        from .._support.files import atomic_write

        written.append(atomic_write(out / "report.html", lambda s: s.write(page.encode())))
    typer.echo(result.table())
    typer.echo(f"wrote {', '.join(str(path) for path in written)}")


@app.command()
def study(
    name: Annotated[
        str,
        typer.Argument(
            help=f"The study, one of: {', '.join(STUDY_NAMES)}.",
            metavar="|".join(STUDY_NAMES),
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="Folder for the figure.")] = Path(
        "study-output"
    ),
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the simulated samples.")] = 0,
    quick: Annotated[bool, typer.Option("--quick", help="A small size, for a first look.")] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress on standard error.")
    ] = False,
) -> None:
    """A simulation study: 'consistency' (MSE against n) or 'kernels' (shape vs bandwidth).

    Example: attnpool study consistency --quick --out study-output
    """
    from ..demo import save_figures
    from ..studies import run_study

    with CommandProgress(name, quiet=quiet) as progress:
        result = run_study(name, quick=quick, seed=seed, progress=progress)
    written = save_figures(result.figures, out)
    typer.echo(result.table)
    typer.echo(f"finished in {result.seconds:.0f} s; wrote {', '.join(map(str, written))}")


@app.command()
def report(
    out: Annotated[Path, typer.Option("--out", help="The HTML file.")] = Path("report.html"),
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the noisy sample.")] = 0,
) -> None:
    """One self-contained HTML page: the demo, a bandwidth slider and a kernel selector."""
    from ..report import write_report

    typer.echo(f"wrote {write_report(out, seed=seed)}")


@app.command("learn-demo")
def learn_demo(
    out: Annotated[Path, typer.Option("--out", help="Folder for the pictures.")] = Path(
        "learn-demo-output"
    ),
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the noisy sample.")] = 0,
    steps: Annotated[int, typer.Option("--steps", help="Optimisation steps.")] = 300,
    learning_rate: Annotated[float, typer.Option("--learning-rate", help="Adam's rate.")] = 0.05,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress on standard error.")
    ] = False,
) -> None:
    """Learn the bandwidth by gradient descent: loss curve, fits, fixed vs learned heatmaps."""
    from ..demo import run_learn_demo, save_figures

    with CommandProgress("training", quiet=quiet) as progress:
        result = run_learn_demo(
            seed=seed, steps=steps, learning_rate=learning_rate, progress=progress
        )
    written = save_figures(result.figures, out)
    typer.echo(result.summary())
    typer.echo(f"wrote {', '.join(str(path) for path in written)}")
