"""Link the HTML representation of our estimators to sklmargin's API pages.

scikit-learn's ``BaseEstimator`` draws a "?" icon in an estimator's HTML
representation (Jupyter, the gallery) that opens the class's documentation; by
default it knows only scikit-learn's own site. :class:`DocLinkMixin` points it
to our API pages, which ``docs/api.rst`` generates with autosummary as
``generated/sklmargin.<ClassName>.html`` under the site's root.

Where the site lives is configuration, not code, because sklmargin's docs are
built from the source tree and not (yet) published at a fixed address. The
root is, in order:

1. the environment variable ``SKLMARGIN_DOC_URL`` (for example
   ``file:///path/to/sklmargin/docs/_build/html/`` for a local build, or the
   address of a published site); ``docs/conf.py`` sets it to ``../`` while the
   gallery runs, so the reprs on the gallery pages link to the API pages of
   the same (offline) site;
2. the ``Documentation`` project URL of the installed package metadata
   (``[project.urls]`` in ``pyproject.toml``), once one is published;
3. otherwise no link: an empty link makes scikit-learn leave the icon out,
   which is better than a link to a page that does not exist.
"""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, metadata

DOC_URL_ENV = "SKLMARGIN_DOC_URL"
#: The API page of a class, relative to the documentation root (autosummary's
#: ``:toctree: generated/`` in docs/api.rst).
API_PAGE = "generated/{estimator_module}.{estimator_name}.html"


def _metadata_doc_url() -> str:
    """Return the installed package's ``Documentation`` project URL, or ""."""
    try:
        urls = metadata("sklmargin").get_all("Project-URL") or []
    except PackageNotFoundError:
        return ""
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("documentation", "docs") and url.strip():
            return url.strip()
    return ""


def doc_root_url() -> str:
    """Return the documentation root (ending in "/"), or "" when unknown."""
    root = os.environ.get(DOC_URL_ENV, "").strip() or _metadata_doc_url()
    if root and not root.endswith("/"):
        root += "/"
    return root


class DocLinkMixin:
    """Point the "?" link of the HTML repr to sklmargin's API pages.

    Put it first among the bases of a public estimator, before
    :class:`~sklearn.base.BaseEstimator`, whose ``_doc_link_template`` it
    overrides. ``_get_doc_link`` (scikit-learn's) then returns
    ``<root>generated/sklmargin.<ClassName>.html``, with the root given by
    :func:`doc_root_url`, or "" (no link) when no root is configured.
    """

    _doc_link_module = "sklmargin"

    def _doc_link_url_param_generator(self):
        # Every public class is documented at the top level (the API page's
        # ``sklmargin.<ClassName>``), whichever subpackage defines it;
        # scikit-learn's default would name the subpackage.
        return {"estimator_module": "sklmargin", "estimator_name": type(self).__name__}

    @property
    def _doc_link_template(self):
        override = self.__dict__.get("_doc_link_template_override")
        if override is not None:
            return override
        root = doc_root_url()
        return root + API_PAGE if root else ""

    @_doc_link_template.setter
    def _doc_link_template(self, value):
        # scikit-learn's property has a setter too: keep the same interface.
        self.__dict__["_doc_link_template_override"] = value
