"""Command line of sklmargin: ``python -m sklmargin <command>`` or ``sklmargin``.

Each subcommand lives in its own module, which provides
``register(subparsers) -> argparse.ArgumentParser``: it adds its parser with
``subparsers.add_parser(name, ...)`` and sets ``func`` (a function
``args -> int`` returning the exit code) with ``parser.set_defaults``. Adding a
subcommand is one line in :data:`SUBCOMMANDS`.

Only the module of the subcommand invoked is imported (``sklmargin --help``
lists the others from :data:`SUBCOMMANDS` alone): a slow or broken import of
one command never costs another.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Subcommand name -> (module that registers it, one line of help), in the
#: order ``--help`` lists them. One module may register several subcommands.
SUBCOMMANDS = {
    "compare": (
        "sklmargin.compare.cli",
        "accuracy and fit/predict time of sklmargin vs scikit-learn",
    ),
}


def _invoked_command(argv: Sequence[str]) -> str | None:
    """Return the first argument that is not an option: the subcommand, if any."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def _version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("sklmargin")
    except PackageNotFoundError:  # running from a source tree, not installed
        return "unknown (not installed)"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Return the top-level parser; only ``command``'s module is imported.

    Parameters
    ----------
    command : str, default=None
        The subcommand about to run. Its module registers its full parser; every
        other subcommand gets a placeholder that only carries its help line.
        ``None`` imports nothing.

    Returns
    -------
    argparse.ArgumentParser
        The parser of ``sklmargin``.
    """
    parser = argparse.ArgumentParser(
        prog="sklmargin",
        description="scikit-learn classifiers trained with margin-based softmax "
        "losses: command-line tools.",
    )
    parser.add_argument("--version", action="version", version=_version())
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    invoked_module = SUBCOMMANDS[command][0] if command in SUBCOMMANDS else None
    for name, (module_name, help_line) in SUBCOMMANDS.items():
        if name in subparsers.choices:
            continue  # registered with a sibling from the same module
        if module_name == invoked_module:
            importlib.import_module(module_name).register(subparsers)
        else:
            subparsers.add_parser(name, help=help_line)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code (never raises SystemExit).

    Parameters
    ----------
    argv : sequence of str, default=None
        Arguments without the program name; ``None`` reads ``sys.argv[1:]``.

    Returns
    -------
    int
        0 on success, 2 for usage errors, otherwise what the subcommand returns.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_invoked_command(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version or a usage error, already printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
