"""The gallery scripts run (headless) and finish."""

import runpy
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("plot_*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib", reason="examples need matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *a, **k: None)
    runpy.run_path(str(path), run_name="__main__")
    plt.close("all")
