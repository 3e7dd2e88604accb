"""The command line's Typer application, on which :mod:`attnpool.cli` and
:mod:`attnpool.cli.demos` register their commands."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import __version__

__all__ = ["app"]


app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
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
