"""``compare`` as a tool people leave running (issue 19).

Outputs checked before the run and saved after every model, Ctrl-C, grids
validated before any fit, progress of long fits and of the whole run, tables
that fit a terminal, notes printed once, the plot's layout.
"""

import json

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from sklmargin.__main__ import main
from sklmargin.compare import ModelSpec, model_registry
from sklmargin.compare import cli as compare_cli

FAST = ["--threads", "1", "--n-components", "20", "-q"]
PEERS = "LinearSVC,LogisticRegression"


@pytest.fixture(scope="module")
def npz_dir(tmp_path_factory):
    """Two tiny datasets, alpha and beta (60 training rows, 3 classes)."""
    folder = tmp_path_factory.mktemp("data")
    for seed, name in [(0, "alpha"), (1, "beta")]:
        X, y = make_classification(
            n_samples=90, n_features=6, n_informative=4, n_redundant=0,
            n_classes=3, random_state=seed,
        )  # fmt: skip
        np.savez(
            folder / f"{name}.npz",
            X_train=X[:60], y_train=y[:60], X_test=X[60:], y_test=y[60:],
        )  # fmt: skip
    return folder


def _with_models(monkeypatch, *specs):
    """Make extra models known to ``--models`` for one test."""
    registry = {**model_registry(), **{spec.name: spec for spec in specs}}
    monkeypatch.setattr(compare_cli, "model_registry", lambda: registry)


# ---- outputs: checked up front, written as the run goes, kept on Ctrl-C --------


@pytest.mark.parametrize("option", ["--output", "--plot"])
def test_unwritable_output_fails_before_the_run(option, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    # A directory where the file should go: unwritable even for root.
    blocked = tmp_path / ("results.json" if option == "--output" else "acc.png")
    blocked.mkdir()
    code = main(["compare", option, str(blocked), "--models", PEERS, *FAST])
    captured = capsys.readouterr()
    assert code == 2
    assert f"{option}: cannot write" in captured.err
    assert "Traceback" not in captured.err
    assert "==" not in captured.out  # nothing ran


def test_writability_check_leaves_no_file(tmp_path, capsys):
    output = tmp_path / "r.json"
    assert main(["compare", "--output", str(output), "--datasets", "nope"]) == 2
    capsys.readouterr()
    assert list(tmp_path.iterdir()) == []


class _CtrlC(LogisticRegression):
    """Stands for the user pressing Ctrl-C during a fit."""

    def fit(self, X, y, sample_weight=None):
        raise KeyboardInterrupt


def test_ctrl_c_keeps_every_finished_model(npz_dir, tmp_path, monkeypatch, capsys):
    _with_models(monkeypatch, ModelSpec("CtrlC", "", lambda s: _CtrlC(), {"C": [1]}))
    output = tmp_path / "partial.json"
    args = ["compare", "--data", str(npz_dir), "--datasets", "alpha", "--tune"]
    models = f"{PEERS},CtrlC"
    code = main([*args, "--models", models, "--output", str(output), *FAST])
    captured = capsys.readouterr()
    assert code == 130
    assert "interrupted" in captured.err and "Traceback" not in captured.err
    assert "2 finished result(s) kept in" in captured.err
    document = json.loads(output.read_text())  # readable, complete JSON
    assert document["metadata"]["status"] == "interrupted"
    assert document["metadata"]["models_done"] == 2
    rows = document["results"]
    assert [row["model"] for row in rows] == ["LinearSVC", "LogisticRegression"]
    assert all(row["status"] == "ok" and row["best_params"] for row in rows)
    assert not list(tmp_path.glob(".*.tmp"))  # no scratch file left behind


def test_results_file_is_rewritten_after_each_model(npz_dir, tmp_path, monkeypatch):
    output = tmp_path / "r.csv"
    seen = []
    write = compare_cli.write_results

    def spy(path, rows, metadata=None):
        seen.append((metadata["status"], len(rows)))
        write(path, rows, metadata)

    monkeypatch.setattr(compare_cli, "write_results", spy)
    args = ["compare", "--data", str(npz_dir), "--output", str(output)]
    assert main([*args, "--models", PEERS, *FAST]) == 0
    # at the start, after each of 2 x 2 models, at the end
    assert seen == [("running", 0), *(("running", n) for n in range(1, 5))] + [
        ("complete", 4)
    ]
    assert len(output.read_text().splitlines()) == 1 + 4


# ---- --grid: every value checked before any fit ----------------------------------


@pytest.mark.parametrize(
    "models, grid, expected",
    [
        (
            "margin:am-softmax",
            "margin:am-softmax.s=0,-1",
            "margin:am-softmax refuses m=0.0, s=0: s must be > 0",
        ),
        ("margin:arcface", "margin:*.m=0.1,4", "refuses m=4, s=15.0: m must be in"),
        ("SVC", "SVC.C=0,1", "SVC refuses C=0, gamma/scale=0.25: The 'C' parameter"),
        ("kernel:normface", "kernel:*.s=-3,30", "kernel:normface refuses"),
    ],
)
def test_invalid_grid_values_are_refused_before_any_fit(
    models, grid, expected, monkeypatch, capsys
):
    fits = []
    monkeypatch.setattr(
        compare_cli, "run_comparison", lambda *args, **kw: fits.append(1) or []
    )
    args = ["compare", "--datasets", "iris", "--tune", "--grid", grid]
    assert main([*args, "--models", models, *FAST]) == 2
    captured = capsys.readouterr()
    assert fits == []
    assert expected in captured.err
    (line,) = captured.err.strip().splitlines()  # one line, no traceback
    assert line.startswith("sklmargin compare: error: --grid:")
