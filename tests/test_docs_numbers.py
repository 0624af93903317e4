"""Numbers in documentation prose are the numbers of the results they quote.

The benchmarks page describes the run of ``python -m sklmargin compare`` that
``docs/benchmark_default.inc`` holds; when that table is regenerated, a
sentence quoting an accuracy that is no longer in it fails here. The README's
and the user guide's frozen-embedding numbers are checked against
``benchmarks/results_embeddings.md`` the same way, and every other decimal
number of the README's "Which to pick" and "Where margins help" sections
against the results files its table row or bullet cites. The benchmarks
page's "Where the defaults come from" and the open-set page's "With or
without the learned metric" are traced to the results files they cite, and
the open-set page's run on the digits is redone. User pages carry no
development-round labels (history is the changelog's).
"""

import re
from pathlib import Path

import numpy as np
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


def readme_blocks(text):
    """The README's claims, block by block, with the results files each cites.

    A block is a table row, a bullet or a paragraph of the sections "Which to
    pick, and when not to" and "Where margins help, and where they don't". A
    block that says "same file" also cites the files of the block before it; a
    bullet also cites the files its section's opening paragraph names.
    """
    start = text.index("## Which to pick")
    body = text[start : text.index("## Development")]
    blocks, previous, intro, opening = [], set(), set(), False
    for part in re.split(r"\n(?=\| |- \*\*|## |\n)", body):
        part = part.strip("\n")
        files = set(re.findall(r"benchmarks/[\w/]+\.md", part))
        if part.startswith("## "):
            intro, opening = set(), True
        elif part.startswith("- **"):
            files |= intro
        elif opening and part and not part.startswith("|"):
            intro, opening = files, False
        if "same file" in part:
            files |= previous
        blocks.append((part, files))
        previous = files
    return blocks


def test_readme_numbers_are_in_the_results_files_they_cite():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    checked = 0
    for block, files in readme_blocks(text):
        quoted = re.findall(r"(?<![\w.])\d+\.\d+", block)
        if not quoted:
            continue
        assert files, f"README quotes {quoted} without a results file: {block[:80]}"
        candidates = [
            number
            for name in sorted(files)
            for number in re.findall(
                r"\d+\.\d+", (ROOT / name).read_text(encoding="utf-8")
            )
        ]
        missing = [number for number in quoted if not rounds_to(number, candidates)]
        assert not missing, f"README quotes {missing}, not in {sorted(files)}"
        checked += len(quoted)
    assert checked >= 80, checked


def test_the_lift_numbers_on_iris_are_what_the_estimator_gives():
    """The user guide's lift section quotes a computation; this redoes it.

    Within one row of iris (0.67 points of a 3-fold mean): a row on a boundary
    may flip with the BLAS kernel at ``tol=1e-4``.
    """
    from sklearn.datasets import load_iris
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklmargin import MarginSoftmaxClassifier

    X, y = load_iris(return_X_y=True)
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    computed = []
    for lift in (None, 1.0):
        model = make_pipeline(
            StandardScaler(), MarginSoftmaxClassifier(constant_feature=lift)
        )
        computed.append(100 * cross_val_score(model, X, y, cv=folds).mean())
    guide = " ".join((DOCS / "user_guide.rst").read_text(encoding="utf-8").split())
    pattern = r"from (\d+\.\d)% without the lift to (\d+\.\d)% with it"
    quoted = [float(number) for number in re.search(pattern, guide).groups()]
    assert quoted[1] - quoted[0] > 5  # the lift's gain, as the text says
    for value, number in zip(computed, quoted, strict=True):
        assert abs(value - number) <= 100 / len(y) + 0.05, (computed, quoted)


#: The user-facing pages: every page but the changelog, and the README.
USER_PAGES = [
    page for page in sorted(DOCS.glob("*.rst")) if page.name != "changelog.rst"
] + [ROOT / "README.md"]
#: A development round's label ("Round 7", "round-4"): history, which belongs
#: in the changelog and in benchmarks/ (a script's variant name such as
#: ``--variants round4`` is a command, not a label).
ROUND_LABEL = re.compile(r"\b[Rr]ound[ -]\d")


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda p: p.name)
def test_user_pages_carry_no_round_labels(page):
    lines = page.read_text(encoding="utf-8").splitlines()
    labelled = [
        f"{page.name}:{number}: {line.strip()}"
        for number, line in enumerate(lines, start=1)
        if ROUND_LABEL.search(line)
    ]
    assert not labelled, "\n".join(labelled)


def test_round_label_pattern():
    for label in ("Round 7: the scaled run", "the round-4 default", "Round 5"):
        assert ROUND_LABEL.search(label), label
    for text in ("--variants default,round4", "round(11 sqrt(n))", "rounds of SV"):
        assert not ROUND_LABEL.search(text), text


def rst_blocks(text):
    """The blocks of an RST section with the results files each cites.

    A block is a paragraph or a bullet. A bullet also cites the files of the
    paragraph that opens its subsection; a block that says "same file" also
    cites the files of the block before it.
    """
    blocks, previous, intro = [], set(), set()
    lines = text.splitlines()
    for number, line in enumerate(lines[:-1]):
        if set(lines[number + 1].strip()) <= set("-~") and lines[number + 1].strip():
            lines[number] = "## " + line  # a subsection title
    for part in re.split(r"\n(?=\* |## )|\n\n", "\n".join(lines)):
        part = part.strip("\n")
        files = set(re.findall(r"benchmarks/[\w/]+\.md", part))
        if part.startswith("## "):
            intro = set()
            continue
        if part.startswith("* "):
            files |= intro
        elif files:
            intro = files
        if "same file" in part:
            files |= previous
        blocks.append((part, files))
        previous = files or previous
    return blocks


def quoted_numbers_missing(text, cited_at=ROOT):
    """Decimal numbers of ``text``'s blocks that no results file they cite holds."""
    missing, checked = [], 0
    for block, files in rst_blocks(text):
        quoted = re.findall(r"(?<![\w.])\d+\.\d+", block)
        if not quoted:
            continue
        assert files, f"numbers {quoted} without a results file: {block[:80]}"
        candidates = [
            number
            for name in sorted(files)
            for number in re.findall(
                r"\d+\.\d+", (cited_at / name).read_text(encoding="utf-8")
            )
        ]
        missing += [n for n in quoted if not rounds_to(n, candidates)]
        checked += len(quoted)
    return missing, checked


def test_defaults_page_numbers_are_in_the_results_files_they_cite():
    """The measurements behind the parameter docs, traced to their files."""
    page = (DOCS / "benchmarks.rst").read_text(encoding="utf-8")
    missing, checked = quoted_numbers_missing(
        section(page, "Where the defaults come from")
    )
    assert not missing, f"benchmarks.rst quotes {missing}, not in the cited files"
    assert checked >= 40, checked


def test_open_set_page_numbers_are_in_their_results_file():
    page = (DOCS / "openset.rst").read_text(encoding="utf-8")
    missing, checked = quoted_numbers_missing(
        section(page, "With or without the learned metric")
    )
    assert not missing, f"openset.rst quotes {missing}, not in the cited files"
    assert checked >= 10, checked


def test_open_set_numbers_on_digits_are_what_a_run_gives():
    """The open-set page quotes a run on the digits; this redoes it (seconds).

    At the precision a refit on another BLAS kernel keeps: the AUROC within
    0.01 of the two decimals quoted, the share of unseen digits rejected
    within 2 points of the percent quoted (a row near the threshold, or the
    threshold itself, may move with the last bits).
    """
    from sklearn.datasets import load_digits
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklmargin import KernelMarginSoftmaxClassifier, OpenSetClassifier

    page = " ".join((DOCS / "openset.rst").read_text(encoding="utf-8").split())
    match = re.search(
        r"the AUROC of ``score_samples`` is (0\.\d\d) without the metric and "
        r"(0\.\d\d) with it, and ``OpenSetClassifier`` rejects (\d+)% of the "
        r"unseen digits without it and (\d+)% with it",
        page,
    )
    assert match, "the open-set page no longer quotes the digits run"
    quoted = [float(number) for number in match.groups()]
    X, y = load_digits(return_X_y=True)
    known = y <= 5
    X_train, X_known_test, y_train, _ = train_test_split(
        X[known], y[known], test_size=0.5, random_state=0, stratify=y[known]
    )
    X_test = np.vstack([X_known_test, X[~known]])
    is_known = np.r_[np.ones(len(X_known_test)), np.zeros((~known).sum())]
    measured = {}
    for metric in (None, "diagonal"):
        model = make_pipeline(
            StandardScaler(),
            OpenSetClassifier(
                KernelMarginSoftmaxClassifier(metric=metric, random_state=0),
                target_rejection=0.05,
            ),
        ).fit(X_train, y_train)
        scores = make_pipeline(model[0], model[-1].estimator_).score_samples(X_test)
        rejected = model.predict(X[~known]) == model[-1].unknown_label_
        measured[metric] = (roc_auc_score(is_known, scores), 100 * rejected.mean())
    (auroc_none, rejected_none), (auroc_metric, rejected_metric) = measured.values()
    for value, number in [(auroc_none, quoted[0]), (auroc_metric, quoted[1])]:
        assert abs(value - number) <= 0.01, (measured, quoted)
    for value, number in [(rejected_none, quoted[2]), (rejected_metric, quoted[3])]:
        assert abs(value - number) <= 2, (measured, quoted)
