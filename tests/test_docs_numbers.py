"""Numbers in documentation prose are the numbers of the results they quote.

The benchmarks page describes the run of ``python -m sklmargin compare`` that
``docs/benchmark_default.inc`` holds; when that table is regenerated, a
sentence quoting an accuracy that is no longer in it fails here. The README's
and the user guide's frozen-embedding numbers are checked against
``benchmarks/results_embeddings.md`` the same way.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PERCENT = re.compile(r"(\d{1,3}\.\d)%")


def section(text, title):
    """The body of an RST section, from its title to the next title."""
    start = text.index(title + "\n")
    rest = text[start + len(title) + 1 :]
    underline = re.compile(r"\n[^\n]+\n={3,}\n")
    match = underline.search(rest[rest.index("\n", 1) :])
    return rest if match is None else rest[: rest.index("\n", 1) + match.start()]


def test_bundled_run_prose_quotes_the_table():
    page = (DOCS / "benchmarks.rst").read_text(encoding="utf-8")
    prose = section(page, "A run on the bundled data sets")
    table = (DOCS / "benchmark_default.inc").read_text(encoding="utf-8")
    quoted = PERCENT.findall(prose.split(".. include:: benchmark_default.inc")[1])
    assert len(quoted) >= 8, quoted
    # the accuracies themselves ("- 96.9 (94.8-98.1)"), not their intervals
    values = set(re.findall(r"- (\d{1,3}\.\d) \(", table))
    missing = [number for number in quoted if number not in values]
    assert not missing, f"benchmarks.rst quotes {missing}, not in the table"


def rounds_to(number, candidates):
    """Whether some candidate rounds to ``number`` at its number of decimals."""
    decimals = len(number.split(".")[1])
    return any(f"{float(c):.{decimals}f}" == number for c in candidates)


@pytest.mark.parametrize(
    ("page_name", "title"),
    [
        ("benchmarks.rst", "Linear probes on frozen embeddings"),
        ("embeddings.rst", "Measured on CLIP features"),
    ],
)
def test_embedding_numbers_are_in_the_results_file(page_name, title):
    results = (ROOT / "benchmarks" / "results_embeddings.md").read_text(
        encoding="utf-8"
    )
    candidates = re.findall(r"\d+\.\d+", results)
    page = (DOCS / page_name).read_text(encoding="utf-8")
    table = section(page, title)
    # the table and the prose after it (the command above it has no numbers)
    quoted = re.findall(r"(?<![\w.])\d+\.\d+", table.split(".. list-table::")[1])
    assert len(quoted) >= 24, quoted
    missing = [number for number in quoted if not rounds_to(number, candidates)]
    assert not missing, f"benchmarks.rst quotes {missing}, not in the results file"
