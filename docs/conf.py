"""Sphinx configuration of the sklmargin documentation.

Build with ``python -m sphinx -W --keep-going -b html docs docs/_build/html``
from the repository root: warnings are errors and the gallery in ``examples/``
is executed. Nothing is fetched from the network, at build time (intersphinx
is off) or when reading: MathJax comes from the ``sphinx-mathjax-offline``
package (a docs dependency) and is copied into ``_static/mathjax``, and every
built page is checked for remote scripts, stylesheets and CDN names
(``check_offline.py``; a finding is a warning, so an error under ``-W``).
"""

import importlib.util
import os
import re
import shutil
import sys
from datetime import date
from pathlib import Path

# One BLAS/OpenMP thread for the gallery's many small fits. Set before NumPy is
# first imported (by sklmargin below): on a busy 2-core machine two OpenBLAS
# threads made a 4 x 4 grid search on digits 30x slower (85 s, not 2.7 s).
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
# Headless rendering for the gallery, whatever the environment says.
os.environ["MPLBACKEND"] = "Agg"
# The "?" link of an estimator's HTML repr on a gallery page (one level below
# the root) opens our own API page on this site: sklmargin/_utils/doc_link.py.
os.environ["SKLMARGIN_DOC_URL"] = "../"

from threadpoolctl import threadpool_limits  # noqa: E402

import sklmargin  # noqa: E402
from sklmargin.losses._registry import _REGISTRY, ALIASES  # noqa: E402

# ... and for libraries already loaded (the limit stays for the whole build).
threadpool_limits(limits=1)

project = "sklmargin"
author = "the sklmargin developers"
copyright = f"{date.today().year}, {author}"
release = sklmargin.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

root_doc = "index"
exclude_patterns = ["_build", "_generated", "**.ipynb_checkpoints"]
templates_path = ["_templates"]
default_role = "literal"
nitpicky = False

# -- autodoc / autosummary / numpydoc ---------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": True}
autodoc_typehints = "none"
# numpydoc writes the member tables itself when asked; autosummary's class
# template lists methods instead, so numpydoc's would be a duplicate.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False  # its default aliases need intersphinx

# A type such as ``ndarray of shape (n_features_in_,)`` is RST text, where a
# name ending in "_" is a hyperlink reference ("Unknown target name"). Quote
# such names inside "of shape (...)" (scikit-learn writes them in backticks).
_SHAPE = re.compile(r"of shape \(([^)]*)\)")
_TRAILING_UNDERSCORE = re.compile(r"(?<![`\w])([A-Za-z]\w*_)(?![`\w])")


def _quote_shape_names(app, what, name, obj, options, lines):
    for index, line in enumerate(lines):
        lines[index] = _SHAPE.sub(
            lambda match: (
                "of shape (" + _TRAILING_UNDERSCORE.sub(r"``\1``", match.group(1)) + ")"
            ),
            line,
        )


def _skip_sklearn_members(app, what, name, obj, skip, options):
    """Document our own members; skip what scikit-learn's mixins add.

    ``set_fit_request``, ``set_output``, ``get_params``, ``score``, ... are
    scikit-learn's API, documented there; their docstrings refer to labels of
    scikit-learn's documentation that do not exist here.
    """
    module = getattr(obj, "__module__", None) or ""
    if module.startswith("sklearn."):
        return True
    return None


# Module-level constants carry no docstring of their own (autodoc would show
# the docstring of ``tuple`` or ``str``): describe them here.
_DATA_DOCS = {
    "sklmargin.LOSS_NAMES": [
        "Every accepted value of ``loss=``: the registered losses (see",
        ':func:`registered_margins`), then the aliases ``"cosface"`` (of',
        '``"am-softmax"``) and ``"sphereface"`` (of ``"a-softmax"``).',
    ],
    "sklmargin.__version__": [
        "The installed version of sklmargin, read from the package metadata",
        '(``"0.0.0"`` when running from a source tree that is not installed).',
    ],
}


def _describe_data(app, what, name, obj, options, lines):
    if what == "data" and name in _DATA_DOCS:
        lines[:] = list(_DATA_DOCS[name])


def setup(app):
    app.connect("build-finished", _copy_mathjax)
    app.connect("build-finished", _check_offline)
    app.connect("autodoc-process-docstring", _describe_data)
    app.connect("autodoc-skip-member", _skip_sklearn_members)
    # Before numpydoc (priority 500) turns the sections into RST.
    app.connect("autodoc-process-docstring", _quote_shape_names, priority=100)


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # for gallery_order and check_offline

# -- maths without network -----------------------------------------------------
# MathJax 3.2.2 as shipped by the PyPI package ``sphinx-mathjax-offline`` (its
# import name has hyphens, hence find_spec). We use it as a data package only:
# its own setup() would copy all 24 MB of MathJax, including six alternative
# combined builds we never load. We copy the one entry point (TeX input, HTML
# output) and what it loads on demand: TeX extensions, fonts, the menu and the
# accessibility modules (about 9 MB).
_MATHJAX_SPEC = importlib.util.find_spec("sphinx-mathjax-offline")
if _MATHJAX_SPEC is None:
    raise RuntimeError(
        "The documentation bundles MathJax from the 'sphinx-mathjax-offline' "
        "package: pip install -e '.[docs]'."
    )
_MATHJAX_SOURCE = Path(_MATHJAX_SPEC.origin).parent / "static" / "mathjax"
_MATHJAX_ENTRY = "tex-chtml.js"
_MATHJAX_PARTS = ("input", "output/chtml", "ui", "a11y", "sre", "adaptors")
mathjax_path = f"mathjax/{_MATHJAX_ENTRY}"  # relative to _static


def _copy_mathjax(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "mathjax"
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(_MATHJAX_SOURCE / _MATHJAX_ENTRY, target / _MATHJAX_ENTRY)
    for part in _MATHJAX_PARTS:
        shutil.copytree(_MATHJAX_SOURCE / part, target / part, dirs_exist_ok=True)


def _check_offline(app, exception):
    """Warn (an error under -W) for each remote asset in the built pages."""
    if exception is not None or app.builder.format != "html":
        return
    from check_offline import check_site
    from sphinx.util import logging

    logger = logging.getLogger("sklmargin.check_offline")
    for problem in check_site(app.outdir):
        logger.warning("remote asset (docs must work offline): %s", problem)


# -- a table generated from the code, so the defaults shown are never stale --
def _write_list_table(name, header, rows, widths=None):
    """Write ``_generated/NAME`` as an RST list-table (only when it changed)."""
    lines = [".. list-table::", "   :header-rows: 1"]
    if widths:
        lines.append(f"   :widths: {widths}")
    lines.append("")
    for row in (header, *rows):
        lines.append(f"   * - {row[0]}")
        lines.extend(f"     - {cell}" for cell in row[1:])
    out = HERE / "_generated"
    out.mkdir(exist_ok=True)
    text = "\n".join(lines) + "\n"
    target = out / name
    if not target.exists() or target.read_text() != text:
        target.write_text(text)


def _write_defaults_table():
    """Write ``_generated/defaults.inc``: each loss's defaults and geometry."""
    aliases = {target: alias for alias, target in ALIASES.items()}
    rows = []
    for name, margin in _REGISTRY.items():
        normalised = {
            (True, True): "x and W",
            (False, True): "W",
            (True, False): "x",
            (False, False): "nothing",
        }[(margin.normalizes_X, margin.normalizes_W)]
        label = f"``{name!r}``".replace("'", '"')
        if name in aliases:
            label += f' (``"{aliases[name]}"``)'
        no_margin = margin.m_domain == (0.0, 0.0)
        m = "--" if no_margin else f"{margin.default_m:g}"
        s = "--" if margin.default_s is None else f"{margin.default_s:g}"
        kernel_s = margin.default_s_kernel or margin.default_s
        s_kernel = "--" if kernel_s is None else f"{kernel_s:g}"
        lam = f"{margin.default_lambda:g}" if margin.uses_lambda else "--"
        penalty = "yes" if margin.penalized else "no"
        rows.append((label, normalised, m, s, s_kernel, lam, penalty))
    header = (
        "``loss=``",
        "normalises",
        "default m",
        "default s",
        "default s (kernel estimator)",
        "default lambda_min",
        "L2 penalty ``C``",
    )
    _write_list_table("defaults.inc", header, rows)


_write_defaults_table()


def _write_losses_table():
    """Write ``_generated/losses.inc``: each loss's logits and paper."""
    aliases = {}
    for alias, target in ALIASES.items():
        aliases.setdefault(target, []).append(alias)
    header = ("``loss=``", "target logit :math:`z_{iy}`", "other logits :math:`z_{ij}`")
    rows = []
    for name, margin in _REGISTRY.items():
        label = ", ".join(f'``"{n}"``' for n in (name, *aliases.get(name, ())))
        target, other = margin.logits_latex
        rows.append(
            (label, f":math:`{target} + b_y`", f":math:`{other} + b_j`", margin.paper)
        )
    _write_list_table("losses.inc", header + ("paper",), rows, widths="18 26 22 34")


_write_losses_table()


def _write_links():
    """Write ``_generated/links.inc``: the project's URLs from pyproject.toml.

    ``[project.urls]`` is the one place they are kept (pip and PyPI show them
    too); until it has entries the page says where to find the code instead
    of inventing an address.
    """
    try:
        import tomllib  # Python >= 3.11
    except ModuleNotFoundError:
        tomllib = None
    urls = {}
    if tomllib is not None:
        with open(HERE.parent / "pyproject.toml", "rb") as handle:
            urls = tomllib.load(handle).get("project", {}).get("urls", {})
    if urls:
        lines = [f"* {name}: `{url} <{url}>`__" for name, url in urls.items()]
    else:
        lines = [
            "The source code and the issue tracker live in the project's "
            "repository, the one this site and the package are built from "
            "(the sdist carries the same files). Its public address will be "
            "listed here, and by ``pip show sklmargin``, once the project "
            "declares it under ``[project.urls]`` in ``pyproject.toml``."
        ]
    out = HERE / "_generated"
    out.mkdir(exist_ok=True)
    text = "\n".join(lines) + "\n"
    target = out / "links.inc"
    if not target.exists() or target.read_text() != text:
        target.write_text(text)


_write_links()

# -- sphinx-gallery ----------------------------------------------------------

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "gallery_order.GalleryOrder",
    "image_scrapers": ("matplotlib",),
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "download_all_examples": False,
    "remove_config_comments": True,
    "doc_module": ("sklmargin",),
    "backreferences_dir": "gen_modules/backreferences",
    "show_memory": False,
    "min_reported_time": 0,
    "matplotlib_animations": False,
    # The computation-time pages load jQuery, DataTables and Bootstrap from
    # CDNs (sphinx-gallery 0.22): off, so that the site works offline.
    "write_computation_times": False,
}

# -- HTML --------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"sklmargin {release}"
html_theme_options = {
    "description": "margin-based softmax losses for scikit-learn",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "230px",
}
html_sidebars = {
    "**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]
}
