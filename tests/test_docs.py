"""The documentation stays in step with the code.

The Sphinx build itself (``python -m sphinx -W --keep-going -b html docs
docs/_build/html``) runs the gallery and fails on any warning; these tests are
the cheap checks that run with the rest of the suite and need no Sphinx.
"""

import ast
import doctest
import re
from pathlib import Path

import pytest

import sklmargin

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))
PAGES = sorted(DOCS.glob("*.rst"))


def test_api_page_lists_every_public_name():
    api = (DOCS / "api.rst").read_text()
    listed = set(re.findall(r"^   (\w+)$", api, flags=re.MULTILINE))
    listed |= set(
        re.findall(r"^\.\. auto(?:data|exception):: (\w+)$", api, flags=re.MULTILINE)
    )
    assert listed == set(sklmargin.__all__)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_doctests_in_pages(page):
    result = doctest.testfile(
        str(page),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        verbose=False,
    )
    assert result.failed == 0


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_is_a_gallery_script(path):
    source = path.read_text()
    docstring = ast.get_docstring(ast.parse(source), clean=False)
    assert docstring, "a gallery script starts with its title docstring"
    title, underline = docstring.strip().splitlines()[:2]
    assert set(underline) == {"="} and len(underline) >= len(title)
    assert "\n# %%" in source, "code is split into cells with '# %%'"


def test_gallery_header_is_a_page_in_the_index_toctree():
    # sphinx-gallery makes auto_examples/index from this file: it needs a
    # title, and the index page's toctree must reach it.
    header = (ROOT / "examples" / "GALLERY_HEADER.rst").read_text().splitlines()
    title, underline = [line for line in header if line.strip()][1:3]
    assert set(underline) == {"="} and len(underline) >= len(title)
    index = (DOCS / "index.rst").read_text()
    toctree = index.split(".. toctree::", 1)[1].split("\n\n\n", 1)[0]
    assert "\n   auto_examples/index\n" in toctree


def _formula(text):
    """A logit written in any of our tables, in one comparable form."""
    for unicode, ascii in (("θ", "theta"), ("ψ", "psi"), ("−", "-"), ("\\|", "|")):
        text = text.replace(unicode, ascii)
    return re.sub(r"[`*()\s]", "", text)


def _expected_rows():
    aliases = {}
    for alias, target in sklmargin.losses._registry.ALIASES.items():
        aliases.setdefault(target, []).append(alias)
    return {
        margin.name: (
            sorted([margin.name, *aliases.get(margin.name, ())]),
            tuple(_formula(t) for t in margin.logits_text),
        )
        for margin in sklmargin.registered_margins()
    }


def test_readme_loss_table_is_the_registry():
    # The README is not built by Sphinx: its table is written by hand and
    # checked here, row by row, against each Margin's logits_text.
    readme = (ROOT / "README.md").read_text()
    rows = {}
    for line in readme.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 5 and cells[0].startswith('`"'):
            names = sorted(re.findall(r'`"([^"]+)"`', cells[0]))
            formulas = (_formula(cells[1]), _formula(cells[2]))
            rows[names[0] if names[0] in _expected_rows() else names[-1]] = (
                names,
                formulas,
            )
    assert rows == _expected_rows()


def test_estimator_docstring_loss_table_is_the_registry():
    doc = sklmargin.MarginSoftmaxClassifier.__doc__
    rows = {}
    for line in doc.splitlines():
        match = re.match(r'\s*``"([^"]+)"``\s{2,}(.+?)\s{2,}(.+?)\s*$', line)
        if match:
            name, target, other = match.groups()
            rows[name] = (_formula(target), _formula(other))
    expected = {name: formulas for name, (_, formulas) in _expected_rows().items()}
    assert rows == expected


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_pages_reference_existing_examples(page):
    names = re.findall(r"sphx_glr_auto_examples_(\w+)\.py", page.read_text())
    for name in names:
        assert (ROOT / "examples" / f"{name}.py").is_file(), name


def test_readme_python_blocks_run_as_pasted(capsys):
    """Every ```python block of the README runs in a fresh namespace, in order.

    A newcomer pastes them into a notebook: a block that uses a name it does
    not define (``X_train``) fails here, not in their hands.
    """
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(
        r"^```python\n(.*?)^```", readme, flags=re.MULTILINE | re.DOTALL
    )
    assert blocks, "the README has no python block"
    namespace: dict = {}  # shared, as in one notebook
    for number, block in enumerate(blocks, start=1):
        exec(compile(block, f"README.md python block {number}", "exec"), namespace)
    out = capsys.readouterr().out
    # the blocks' own prints: scores, so a broken model shows up too
    scores = [float(word) for word in re.findall(r"\b0\.\d{3,}\b", out)]
    assert scores and min(scores) > 0.9


@pytest.mark.parametrize(
    "cls",
    [
        sklmargin.MarginSoftmaxClassifier,
        sklmargin.KernelMarginSoftmaxClassifier,
        sklmargin.MarginSoftmaxClassifierCV,
        sklmargin.KernelMarginSoftmaxClassifierCV,
        sklmargin.OpenSetClassifier,
        sklmargin.NystroemFeatures,
        sklmargin.RandomFourierFeatures,
    ],
    ids=lambda cls: cls.__name__,
)
def test_estimator_describes_every_parameter(cls):
    """``help(cls)`` documents every constructor argument."""
    import inspect

    # numpydoc comes with the docs extra, not with [test] alone.
    docscrape = pytest.importorskip(
        "numpydoc.docscrape", reason="numpydoc (the docs extra) parses the docstring"
    )
    ClassDoc = docscrape.ClassDoc
    documented = {
        name.strip(" \\"): " ".join(param.desc).strip()
        for param in ClassDoc(cls)["Parameters"]
        for name in param.name.split(",")  # "t, C, tol" shares one text
    }
    for name in inspect.signature(cls).parameters:
        assert documented.get(name), f"parameter {name!r} is not described"


@pytest.mark.parametrize(
    "cls",
    [
        sklmargin.MarginSoftmaxClassifier,
        sklmargin.KernelMarginSoftmaxClassifier,
        sklmargin.MarginSoftmaxClassifierCV,
        sklmargin.KernelMarginSoftmaxClassifierCV,
        sklmargin.OpenSetClassifier,
        sklmargin.NystroemFeatures,
        sklmargin.RandomFourierFeatures,
    ],
    ids=lambda cls: cls.__name__,
)
def test_every_default_is_stated(cls):
    """A parameter with a default says which (``default=...``) in ``help(cls)``.

    The CV estimators' parameters passed on to the plain estimator unchanged
    are described once, as "Passed to" it, whose documentation states them.
    """
    import inspect

    docscrape = pytest.importorskip(
        "numpydoc.docscrape", reason="numpydoc (the docs extra) parses the docstring"
    )
    documented = {}
    for param in docscrape.ClassDoc(cls)["Parameters"]:
        for name in param.name.split(","):
            documented[name.strip(" \\")] = (param.type, " ".join(param.desc))
    for name, parameter in inspect.signature(cls).parameters.items():
        if parameter.default is inspect.Parameter.empty:
            continue
        kind, text = documented[name]
        assert "default=" in kind or text.startswith("Passed to"), (name, kind)


PACKAGE = sorted((ROOT / "sklmargin").rglob("*.py"))
#: Lab notes that belong in docs/ and benchmarks/, not in the package: a
#: results file, an issue number, a development round, a commit.
LAB_NOTES = re.compile(
    r"results_[a-z_]+\.md|\bissues? \d+\b|\b[Rr]ound[ -]\d|\bcommits? [0-9a-f]{7}"
)
#: A hexadecimal word of 7 to 40 characters with a letter and a digit: a
#: commit hash (plain numbers and ``0x`` constants are not matched).
HASH = re.compile(r"(?<![\w.])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")


def test_package_cites_no_results_files_issues_or_commits():
    """Docstrings and comments say what and why; history lives elsewhere.

    Numbers, results files and their commands are on the documentation's
    benchmarks page, history in the changelog and ``git log``; a saved model
    of an older release is recognised by its saved state, not by a commit.
    """
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in PACKAGE
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if LAB_NOTES.search(line) or HASH.search(line)
    ]
    assert not found, "\n".join(found)


def test_lab_note_patterns_match_what_they_are_for():
    for note in (
        "see benchmarks/results_kernel_default.md",
        "(issue 17)",
        "Round 8: each path",
        "commit d6c350a",
        "came with d6c350a, before",
    ):
        assert LAB_NOTES.search(note) or HASH.search(note), note
    for fine in ("0x5EED_C0DE", "1.959963984540054", "arXiv:2212.13881", "round(11)"):
        assert not (LAB_NOTES.search(fine) or HASH.search(fine)), fine


def test_package_points_to_benchmark_sections_that_exist():
    """Where a docstring or comment says 'the benchmarks page, "X"', X is there."""
    page = (DOCS / "benchmarks.rst").read_text()
    titles = {
        line.strip()
        for line, under in zip(page.splitlines(), page.splitlines()[1:], strict=False)
        if line.strip() and under.strip() and set(under.strip()) <= set("=-~")
    }
    cited = {
        (path.relative_to(ROOT), " ".join(match.group(1).split()))
        for path in PACKAGE
        for match in re.finditer(
            r'benchmarks\s+page,\s+"([^"]+)"',
            # comments and docstrings as prose: one line, no comment marks
            " ".join(re.sub(r"^\s*#:?", "", line) for line in path.open()),
        )
    }
    assert cited, "no pointer found: the pattern no longer matches the package"
    missing = [(str(path), title) for path, title in cited if title not in titles]
    assert not missing, missing


def _private_sklearn_imports(path):
    """``(line, name)`` of every private scikit-learn module or name imported."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "sklearn"
        ):
            private = [a.name for a in node.names if a.name.startswith("_")]
            if any(part.startswith("_") for part in node.module.split(".")):
                private.append(node.module)
            found += [(node.lineno, name) for name in private]
        elif isinstance(node, ast.Import):
            found += [
                (node.lineno, alias.name)
                for alias in node.names
                if alias.name.startswith("sklearn")
                and any(part.startswith("_") for part in alias.name.split("."))
            ]
    return found


def test_private_sklearn_imports_live_in_utils():
    """The README's promise: every private scikit-learn import is in _utils/.

    Private modules move between releases; ``_utils/compat.py`` imports each
    one once, with a fallback, and the package imports it from there.
    """
    utils = ROOT / "sklmargin" / "_utils"
    outside = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in PACKAGE
        if utils not in path.parents
        for line, name in _private_sklearn_imports(path)
    ]
    assert not outside, outside
    inside = [name for _, name in _private_sklearn_imports(utils / "compat.py")]
    assert "_safe_indexing" in inside and "sklearn.utils._param_validation" in inside
