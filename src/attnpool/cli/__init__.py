"""Command line: each command parses its options and makes one library call.

Exit status: 0 on success; 2 for bad input — a usage error (a bad option or value, a
missing file) or a data error (a table in an unreadable format, a missing column, a
cell that is not a number, missing values, too few rows); 130 after Ctrl-C. Errors
print one line on stderr; output files are written atomically, so none is left
half-written.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Annotated

import typer

from .._support.optional import MissingDependencyError
from ..kernels import get, names
from .progress import CommandProgress

#: Exit status after Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130
#: Exit status of bad input: a usage error or a data error (its line says which).
BAD_INPUT = 2
#: The kernels of a distance that ``--kernel`` takes, listed in ``--help``.
KERNEL_NAMES = tuple(name for name in names() if get(name).similarity == "distance")
#: Those the density command takes: a finite integral, never negative (not the constant
#: kernel, nor the higher-order ones).
DENSITY_KERNEL_NAMES = tuple(
    name for name in KERNEL_NAMES if get(name).base is None and name != "constant"
)

from .app import app  # noqa: E402  (the commands below register on it)


@app.command()
def fit(
    data: Annotated[
        Path,
        typer.Argument(
            help="Table with a header row: CSV, TSV or another separator, gzip-compressed or "
            "not, or Parquet (with pyarrow); - reads standard input."
        ),
    ],
    x: Annotated[list[str], typer.Option("--x", help="Input column (repeat for several).")],
    y: Annotated[str, typer.Option("--y", help="Response column.")],
    kernel: Annotated[
        str, typer.Option("--kernel", help=f"One of: {', '.join(KERNEL_NAMES)}.")
    ] = "gaussian",
    bandwidth: Annotated[
        str, typer.Option("--bandwidth", help="cv, aicc, scott, silverman, dpill or numbers a,b,…")
    ] = "cv",
    degree: Annotated[
        int | None,
        typer.Option(
            "--degree",
            help="0 Nadaraya–Watson (default), 1 local linear; with --span 0, 1 or 2 (default).",
        ),
    ] = None,
    predict: Annotated[Path | None, typer.Option("--predict", help="CSV of query points.")] = None,
    out: Annotated[
        Path, typer.Option("--out", help="Predictions CSV; - writes standard output.")
    ] = Path("predictions.csv"),
    plot: Annotated[Path | None, typer.Option("--plot", help="Fit plot (one --x only).")] = None,
    dropna: Annotated[
        bool, typer.Option("--dropna", help="Drop rows with missing values.")
    ] = False,
    interval: Annotated[
        float | None,
        typer.Option("--interval", help="Add a pointwise confidence band at this level."),
    ] = None,
    sep: Annotated[
        str | None,
        typer.Option(
            "--sep", help="Column separator: a character, tab or space (default: detected)."
        ),
    ] = None,
    var_type: Annotated[
        str | None,
        typer.Option(
            "--var-type",
            help="One letter per --x: c continuous, o ordered, u unordered (default: all c).",
        ),
    ] = None,
    method: Annotated[
        str, typer.Option("--method", help="How predictions pool (see attention_pool).")
    ] = "auto",
    bandwidth_type: Annotated[
        str,
        typer.Option(
            "--bandwidth-type",
            help="fixed, generalized_nn or adaptive_nn (then --bandwidth is cv or numbers "
            "of neighbours).",
        ),
    ] = "fixed",
    empty: Annotated[
        str,
        typer.Option(
            "--empty",
            help="A query no key reaches (a compact kernel's support): nan, or nearest "
            "(the nearest key's value).",
        ),
    ] = "nan",
    span: Annotated[
        str | None,
        typer.Option(
            "--span",
            help="LOESS (R's loess) with this span: a number, or gcv, aicc or cv to choose it.",
        ),
    ] = None,
    lowess: Annotated[
        bool,
        typer.Option(
            "--lowess", help="LOWESS (statsmodels' lowess) of one --x, frac = --span (default 2/3)."
        ),
    ] = False,
    family: Annotated[
        str, typer.Option("--family", help="With --span: gaussian, or symmetric (robust).")
    ] = "gaussian",
    statistics: Annotated[
        str | None,
        typer.Option(
            "--statistics",
            help="With --span: exact (default) or approximate (R's default) δ₁, δ₂ for "
            "--interval's degrees of freedom.",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", "-f", help="Replace output files that exist.")
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress on standard error.")
    ] = False,
) -> None:
    """Kernel regression of a table's column: choose the bandwidth, predict, plot.

    Examples:

      attnpool fit data.csv --x age --y income --plot fit.png

      attnpool fit data.csv --x age --x region --var-type cu --y income --degree 1

      zcat data.csv.gz | attnpool fit - --x age --y income --out - > fit.csv

      attnpool fit data.csv --x age --y income --bandwidth-type adaptive_nn --bandwidth 30

      attnpool fit data.csv --x age --y income --span gcv --interval 0.95 --plot loess.png

      attnpool fit data.csv --x age --y income --lowess --span 0.3
    """
    from .._support.files import atomic_write, check_outputs
    from .table import STDIO, fit_table

    check_outputs(
        {"DATA": data, "--predict": predict}, {"--out": out, "--plot": plot}, force=force,
        skip=STDIO,
    )  # fmt: skip
    if span is not None or lowess:
        from .smoothing import check_span_options, smooth_table

        check_span_options(kernel, bandwidth, var_type, method, bandwidth_type, empty)
        with CommandProgress("smoothing", quiet=quiet):
            result = smooth_table(data, x, y, span=span, lowess=lowess, degree=degree,
                                  family=family, predict=predict, dropna=dropna,
                                  plot=plot is not None, interval=interval, sep=sep,
                                  statistics=statistics)  # fmt: skip
    else:
        if statistics is not None:
            raise ValueError(f"--statistics: LOESS's, with --span; received {statistics!r} "
                             "without it")  # fmt: skip
        with CommandProgress("choosing the bandwidth", quiet=quiet) as progress:
            result = fit_table(
                data,
                x,
                y,
                kernel=kernel,
                bandwidth=bandwidth,
                degree=0 if degree is None else degree,
                predict=predict,
                dropna=dropna,
                plot=plot is not None,
                interval=interval,
                progress=progress,
                sep=sep,
                var_type=var_type,
                method=method,
                bandwidth_type=bandwidth_type,
                empty=empty,
            )
    image = result.plot_image(plot) if plot is not None else None  # before any file is written
    to_stderr = str(out) == STDIO  # standard output holds the predictions only
    typer.echo(result.summary(), err=to_stderr)
    typer.echo(f"wrote {result.write_predictions(out)}", err=to_stderr)
    if image is not None:
        typer.echo(f"wrote {atomic_write(plot, image)}", err=to_stderr)


@app.command()
def density(
    data: Annotated[
        Path,
        typer.Argument(help="Table with a header row (as fit reads it); - reads standard input."),
    ],
    x: Annotated[list[str], typer.Option("--x", help="Column whose density (repeat for several).")],
    given: Annotated[
        list[str] | None,
        typer.Option("--given", help="Condition on this column (repeat): f(x | given)."),
    ] = None,
    bandwidth: Annotated[
        str,
        typer.Option(
            "--bandwidth",
            help="cv_ml, cv_ls, normal_reference (also isj, scott, silverman without --given) "
            "or numbers a,b,… (--x columns, then --given).",
        ),
    ] = "cv_ml",
    kernel: Annotated[
        str,
        typer.Option(
            "--kernel",
            help=f"The continuous columns' kernel, one of: {', '.join(DENSITY_KERNEL_NAMES)}.",
        ),
    ] = ("gaussian"),
    var_type: Annotated[
        str | None, typer.Option("--var-type", help="c, o or u per --x column.")
    ] = None,
    given_var_type: Annotated[
        str | None, typer.Option("--given-var-type", help="c, o or u per --given column.")
    ] = None,
    out: Annotated[
        Path,
        typer.Option("--out", help="CSV of the density at each row; - writes standard output."),
    ] = Path("densities.csv"),
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Density plot (one --x, at most one --given).")
    ] = None,
    dropna: Annotated[
        bool, typer.Option("--dropna", help="Drop rows with missing values.")
    ] = False,
    sep: Annotated[
        str | None, typer.Option("--sep", help="Column separator (default: detected).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", "-f", help="Replace output files that exist.")
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress on standard error.")
    ] = False,
) -> None:
    """Kernel density of table columns, or their conditional density given others.

    Examples:

      attnpool density data.csv --x income --plot income.png

      attnpool density data.csv --x income --given age --plot income-given-age.png

      attnpool density data.csv --x income --x region --var-type cu --bandwidth cv_ls
    """
    from .._support.files import atomic_write, check_outputs
    from .densities import check_plottable, density_table
    from .table import STDIO

    check_outputs({"DATA": data}, {"--out": out, "--plot": plot}, force=force, skip=STDIO)
    if plot is not None:
        check_plottable(x, given or (), var_type, given_var_type)
    with CommandProgress("choosing the bandwidth", quiet=quiet) as progress:
        result = density_table(
            data, x, given=given or (), bandwidth=bandwidth, kernel=kernel, var_type=var_type,
            given_var_type=given_var_type, dropna=dropna, sep=sep, progress=progress,
        )  # fmt: skip
    image = result.plot_image(plot) if plot is not None else None  # before any file is written
    to_stderr = str(out) == STDIO
    typer.echo(result.summary(), err=to_stderr)
    typer.echo(f"wrote {result.write(out)}", err=to_stderr)
    if image is not None:
        typer.echo(f"wrote {atomic_write(plot, image)}", err=to_stderr)


# the demonstrations register after fit and density: --help lists the main commands first
from . import demos  # noqa: E402, F401


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``attnpool`` command. The library's warnings come out as one
    line each, ``attnpool: warning: …``, naming the option that acts on them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return _run(argv)
        finally:
            _report(caught)


def _report(caught: list[warnings.WarningMessage]) -> None:
    """The library's own warnings, each once, as one line on standard error, its advice
    in the command line's words; others (a dependency's deprecations) are not the user's."""
    seen = set()
    for warning in caught:
        message = " ".join(str(warning.message).split())
        ours = "attnpool" in type(warning.message).__module__ or f"{os.sep}attnpool{os.sep}" in (
            warning.filename
        )
        if not ours or message in seen:
            continue
        seen.add(message)
        for library, option in OPTION_WORDS.items():
            message = message.replace(library, option)
        print(f"attnpool: warning: {message}", file=sys.stderr)


#: The library's advice in warnings, in the command line's words.
OPTION_WORDS = {
    "empty='nearest'": "--empty nearest",
    "method='bootstrap' gives one": "a wider --bandwidth reaches them",
    "a rule of thumb ('scott')": "a rule of thumb (--bandwidth scott)",
    "'cv_ls' or 'isj' are not so set": "--bandwidth cv_ls or isj are not so set",
    "prefer 'normal_reference' or 'cv_ml'": "prefer --bandwidth normal_reference or cv_ml",
    "prefer 'normal_reference'": "prefer --bandwidth normal_reference",
    "pass those (x's columns, then y's) as bandwidth= and y_bandwidth=": (
        "pass those as --bandwidth, comma-separated, the --x columns' first (listed here "
        "after the --given columns')"
    ),
}


def _run(argv: list[str] | None) -> int:
    try:
        code = app(args=argv, prog_name="attnpool", standalone_mode=False)
    except typer.TyperException as error:  # usage errors: unknown option, bad type
        return _fail(error.format_message())
    except MissingDependencyError as error:  # an extra this command needs
        return _fail(str(error))
    except (ValueError, TypeError, OSError) as error:
        return _fail(str(error))
    except (typer.Abort, KeyboardInterrupt):
        code = INTERRUPTED
    if code == INTERRUPTED:  # typer turns Ctrl-C into this status
        print("attnpool: interrupted", file=sys.stderr)
    return code if isinstance(code, int) else 0


def run() -> None:
    """Console-script wrapper: exit with :func:`main`'s status."""
    code = main()
    if code == INTERRUPTED:
        # Files are whole or absent already; skip the interpreter's teardown, which can
        # race with compiled code still running in other threads.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _fail(message: str) -> int:
    if message.strip():  # a bare `attnpool` has already printed the help
        print(f"attnpool: error: {' '.join(message.split())}", file=sys.stderr)
    return BAD_INPUT


if __name__ == "__main__":
    run()
