"""The "?" link of the HTML repr points to our API pages, not scikit-learn's."""

import inspect
import re
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator
from sklearn.utils import estimator_html_repr

import sklmargin
from sklmargin._utils import doc_link as _doc_link
from sklmargin._utils.doc_link import DOC_URL_ENV, DocLinkMixin

API = Path(__file__).resolve().parent.parent / "docs" / "api.rst"
PUBLIC_ESTIMATORS = [
    getattr(sklmargin, name)
    for name in sklmargin.__all__
    if inspect.isclass(getattr(sklmargin, name))
    and issubclass(getattr(sklmargin, name), BaseEstimator)
]


def test_every_public_estimator_has_the_mixin():
    assert all(issubclass(cls, DocLinkMixin) for cls in PUBLIC_ESTIMATORS)


ESTIMATOR_PARAMS = [pytest.param(cls, id=cls.__name__) for cls in PUBLIC_ESTIMATORS]


def _instance(cls):
    """An instance with its required arguments (a meta-estimator's estimator)."""
    if cls is sklmargin.OpenSetClassifier:
        return cls(sklmargin.MarginSoftmaxClassifier())
    return cls()


def test_there_are_public_estimators():
    names = {cls.__name__ for cls in PUBLIC_ESTIMATORS}
    assert {
        "MarginSoftmaxClassifier",
        "KernelMarginSoftmaxClassifier",
        "RandomFourierFeatures",
    } <= names


@pytest.mark.parametrize("cls", ESTIMATOR_PARAMS)
def test_link_points_to_our_api_page(cls, monkeypatch):
    monkeypatch.setenv(DOC_URL_ENV, "https://docs.example.org/sklmargin")
    expected = (
        f"https://docs.example.org/sklmargin/generated/sklmargin.{cls.__name__}.html"
    )
    estimator = _instance(cls)
    assert estimator._get_doc_link() == expected
    assert f'href="{expected}"' in estimator_html_repr(estimator)
    assert "scikit-learn.org" not in estimator._get_doc_link()


@pytest.mark.parametrize("cls", ESTIMATOR_PARAMS)
def test_relative_root_as_in_the_gallery(cls, monkeypatch):
    monkeypatch.setenv(DOC_URL_ENV, "../")
    expected = f"../generated/sklmargin.{cls.__name__}.html"
    assert _instance(cls)._get_doc_link() == expected


@pytest.mark.parametrize("cls", ESTIMATOR_PARAMS)
def test_no_root_means_no_link(cls, monkeypatch):
    monkeypatch.delenv(DOC_URL_ENV, raising=False)
    monkeypatch.setattr(_doc_link, "_metadata_doc_url", lambda: "")
    estimator = _instance(cls)
    assert isinstance(estimator, DocLinkMixin)
    assert estimator._get_doc_link() == ""


def test_root_from_package_metadata(monkeypatch):
    monkeypatch.delenv(DOC_URL_ENV, raising=False)
    monkeypatch.setattr(_doc_link, "_metadata_doc_url", lambda: "https://a.b/docs/")
    link = sklmargin.RandomFourierFeatures()._get_doc_link()
    assert link == "https://a.b/docs/generated/sklmargin.RandomFourierFeatures.html"


def test_template_can_be_overridden_per_instance(monkeypatch):
    monkeypatch.setenv(DOC_URL_ENV, "https://x.org/")
    estimator = sklmargin.RandomFourierFeatures()
    estimator._doc_link_template = "https://mirror.org/{estimator_name}.html"
    assert estimator._get_doc_link() == "https://mirror.org/RandomFourierFeatures.html"
    assert sklmargin.RandomFourierFeatures()._get_doc_link().startswith("https://x.org")


def test_linked_pages_are_the_ones_autosummary_generates():
    # api.rst writes each public class to generated/sklmargin.<Name>.html.
    text = API.read_text()
    assert ".. currentmodule:: sklmargin" in text
    for cls in PUBLIC_ESTIMATORS:
        options = r"(?:   :[^\n]*\n)*"
        entries = r"(?:   \w+\n)*"
        pattern = rf":toctree: generated/\n{options}\n{entries}   {cls.__name__}\n"
        block = re.search(pattern, text)
        assert block, f"{cls.__name__} is not under an autosummary toctree generated/"
