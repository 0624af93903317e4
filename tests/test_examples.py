"""The gallery scripts run (headless) and finish.

In CI the documentation build executes them (sphinx-gallery, with warnings as
errors) right after the tests; ``.ci/run`` sets ``SKLMARGIN_GALLERY_IN_DOCS``
so that they are not executed twice.
"""

import os
import runpy
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("plot_*.py"))


@pytest.mark.skipif(
    bool(os.environ.get("SKLMARGIN_GALLERY_IN_DOCS")),
    reason="the documentation build of .ci/run executes the gallery",
)
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib", reason="examples need matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *a, **k: None)
    runpy.run_path(str(path), run_name="__main__")
    plt.close("all")
