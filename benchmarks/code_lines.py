"""Count the package's code lines: lines holding code tokens.

A line counts when it holds a Python token other than a comment, a newline or
an indentation change, and is not part of a docstring (the first statement of
a module, class or function when it is a string). Blank lines, comments and
docstrings do not count; a multi-line expression counts every line it spans.
The architecture issue's size target is measured this way, on ``sklmargin/``
without the ``compare/`` command (the main job, counted apart).

Examples
--------
``python benchmarks/code_lines.py`` counts the working tree;
``python benchmarks/code_lines.py --rev db28ed1`` a commit (read with
``git show``, no checkout); ``--files`` lists every file.
"""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import tokenize
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Tokens that never make a line count.
_LAYOUT = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


def docstring_lines(source):
    """Line numbers of the module's, classes' and functions' docstrings."""
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(
            node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        ):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def code_lines(source):
    """Number of lines of ``source`` that hold code tokens (see module doc)."""
    docstrings = docstring_lines(source)
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in _LAYOUT or token.start[0] in docstrings:
            continue
        lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines)


def sources(package, rev):
    """``{path: source}`` of the package's ``.py`` files, now or at ``rev``."""
    if rev is None:
        return {
            str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
            for p in sorted((ROOT / package).rglob("*.py"))
        }
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, package],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return {
        name: subprocess.run(
            ["git", "show", f"{rev}:{name}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout  # fmt: skip
        for name in names
        if name.endswith(".py")
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", help="a git revision (default: the working tree)")
    parser.add_argument("--package", default="sklmargin")
    parser.add_argument(
        "--exclude",
        nargs="*",
        default=["compare"],
        help="subfolders counted apart (default: compare)",
    )
    parser.add_argument("--files", action="store_true", help="list every file")
    args = parser.parse_args(argv)
    counts = {
        path: code_lines(src) for path, src in sources(args.package, args.rev).items()
    }
    folders = Counter()
    for path, n in counts.items():
        parts = Path(path).parts
        folders[parts[1] if len(parts) > 2 else "(top level)"] += n
        if args.files:
            print(f"{n:6d}  {path}")
    excluded = sum(folders[name] for name in args.exclude)
    for name, n in sorted(folders.items(), key=lambda item: -item[1]):
        print(f"{n:6d}  {args.package}/{name}")
    total = sum(folders.values())
    label = f" without {', '.join(args.exclude)}" if args.exclude else ""
    print(
        f"{total - excluded:6d}  {args.package}{label} ({args.rev or 'working tree'})"
    )


if __name__ == "__main__":
    main()
