"""``python -m attnpool`` and the ``attnpool`` command: the command line, or one line
naming the extra that brings it."""

import sys


def main() -> None:
    """Run the command line; without typer, say how to install it (exit status 2)."""
    from ._optional import MissingDependencyError, require

    try:
        require("typer", "the attnpool command")
    except MissingDependencyError as error:
        print(f"attnpool: error: {error}", file=sys.stderr)
        sys.exit(2)
    from .cli import run

    run()


if __name__ == "__main__":
    main()
