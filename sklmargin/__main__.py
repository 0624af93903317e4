"""Command line of sklmargin: ``python -m sklmargin <command>`` or ``sklmargin``.

Each subcommand lives in its own module, which provides
``register(subparsers) -> argparse.ArgumentParser``: it adds its parser with
``subparsers.add_parser(name, ...)`` and sets ``func`` (a function
``args -> int`` returning the exit code) with ``parser.set_defaults``. Adding a
subcommand is one line in :data:`SUBCOMMAND_MODULES`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Modules that define a subcommand, in the order ``--help`` lists them.
SUBCOMMAND_MODULES = ("sklmargin._compare", "sklmargin._bench")


def _version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("sklmargin")
    except PackageNotFoundError:  # running from a source tree, not installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every subcommand registered.

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
    for module_name in SUBCOMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
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
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as exc:  # --help, --version or a usage error, already printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
