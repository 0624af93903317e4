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
    listed |= set(re.findall(r"^\.\. autodata:: (\w+)$", api, flags=re.MULTILINE))
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


def test_gallery_has_a_header():
    assert (ROOT / "examples" / "GALLERY_HEADER.rst").is_file()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_pages_reference_existing_examples(page):
    names = re.findall(r"sphx_glr_auto_examples_(\w+)\.py", page.read_text())
    for name in names:
        assert (ROOT / "examples" / f"{name}.py").is_file(), name
