"""The offline check of the built docs flags remote assets, and only those."""

import importlib.util
from pathlib import Path

import pytest

CHECKER = Path(__file__).resolve().parent.parent / "docs" / "check_offline.py"
_spec = importlib.util.spec_from_file_location("check_offline", CHECKER)
check_offline = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_offline)


@pytest.mark.parametrize(
    "html",
    [
        '<script src="https://cdn.jsdelivr.net/npm/mathjax@4/tex-mml-chtml.js">',
        "<script defer src=//unpkg.com/x.js></script>",
        '<script src="http://example.org/a.js"></script>',
        '<link rel="stylesheet" href="https://cdnjs.cloudflare.com/b.css" />',
        '<link href="https://fonts.googleapis.com/css?f=x" rel="stylesheet">',
        "<style>@import 'https://example.org/c.css';</style>",
        "<style>body { background: url(https://example.org/i.png) }</style>",
        '<img src="https://example.org/logo.png">',
        "<script>s.src = 'https://' + 'cdn.jsdelivr.net/npm/x';</script>",
        '<script type="module">import x from "https://esm.sh/x";</script>',
    ],
)
def test_remote_assets_are_found(html):
    assert check_offline.find_remote_assets(f"<html>{html}</html>")


@pytest.mark.parametrize(
    "html",
    [
        '<script defer="defer" src="_static/mathjax/tex-chtml.js"></script>',
        '<script src="../_static/doctools.js?v=9a2dae69"></script>',
        '<link rel="stylesheet" href="_static/alabaster.css" />',
        '<a href="https://arxiv.org/abs/1801.07698">ArcFace</a>',
        '<link rel="canonical" href="https://example.org/page.html" />',
        "<p>see https://scikit-learn.org for more</p>",
    ],
)
def test_local_assets_and_plain_links_are_fine(html):
    assert check_offline.find_remote_assets(f"<html>{html}</html>") == []


def test_site_check_and_command_line(tmp_path, capsys):
    (tmp_path / "index.html").write_text('<script src="_static/a.js"></script>')
    assert check_offline.check_site(tmp_path) == []
    assert check_offline.main([str(tmp_path)]) == 0
    sub = tmp_path / "auto_examples"
    sub.mkdir()
    (sub / "times.html").write_text(
        '<script src="https://code.jquery.com/jquery-3.7.0.js"></script>'
    )
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "theme.css").write_text(
        "@import url('https://fonts.googleapis.com/css?family=X');"
    )
    problems = check_offline.check_site(tmp_path)
    assert len(problems) == 2
    assert problems[0].startswith("auto_examples/times.html: ")
    assert problems[1].startswith("_static/theme.css: ")
    assert check_offline.main([str(tmp_path)]) == 1
    assert "2 remote asset(s)" in capsys.readouterr().err
    assert check_offline.main([str(tmp_path / "missing")]) == 2
