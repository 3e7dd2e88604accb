"""``python -m attnpool`` and the ``attnpool`` command: the command line, or one line
naming the extra that brings it."""

import os
import sys


def main() -> None:
    """Run the command line; without typer, say how to install it (exit status 2). Ctrl-C
    while the command line is still being imported ends as it does later: one line and
    exit status 130, no traceback."""
    try:
        from ._support.optional import MissingDependencyError, require

        try:
            require("typer", "the attnpool command")
        except MissingDependencyError as error:
            print(f"attnpool: error: {error}", file=sys.stderr)
            sys.exit(2)
        from .cli import run
    except KeyboardInterrupt:
        print("attnpool: interrupted", file=sys.stderr)
        sys.stderr.flush()
        os._exit(130)  # (no teardown: an import broken off may have left threads behind)
    run()


if __name__ == "__main__":
    main()
