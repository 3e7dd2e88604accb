"""Command line: each command parses its options and makes one library call.

User mistakes (bad options, bad values) print one line on stderr and exit with
status 2; output files are written atomically, so none is left half-written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from . import __version__

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="attnpool — attention as differentiable lookup: attention pooling and "
    "Nadaraya–Watson kernel regression.",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"attnpool {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """attnpool — attention as differentiable lookup."""


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
    seed: Annotated[int, typer.Option("--seed", help="Seed of the noisy sample.")] = 0,
    bandwidths: Annotated[str, typer.Option("--bandwidths", help="Comma-separated.")] = (
        "0.1,0.5,2.0"
    ),
    kernels: Annotated[str, typer.Option("--kernels", help="Comma-separated kernel names.")] = (
        "gaussian,boxcar,constant,triangular"
    ),
) -> None:
    """The classic example: 40 noisy points, fits, heatmaps, kernels, exact lookup."""
    from .demo import run_demo, save_figures

    result = run_demo(
        seed=seed,
        bandwidths=_split(bandwidths, "--bandwidths", float),
        kernels=_split(kernels, "--kernels"),
    )
    written = save_figures(result.figures, out)
    typer.echo(result.table())
    typer.echo(f"wrote {', '.join(str(path) for path in written)}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``attnpool`` command."""
    try:
        code = app(args=argv, prog_name="attnpool", standalone_mode=False)
    except typer.TyperException as error:  # usage errors: unknown option, bad type
        return _fail(error.format_message())
    except (ValueError, TypeError, OSError) as error:
        return _fail(str(error))
    except typer.Abort:
        return _fail("aborted")
    return code if isinstance(code, int) else 0


def run() -> None:
    """Console-script wrapper: exit with :func:`main`'s status."""
    sys.exit(main())


def _fail(message: str) -> int:
    if message.strip():  # a bare `attnpool` has already printed the help
        print(f"attnpool: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    run()
