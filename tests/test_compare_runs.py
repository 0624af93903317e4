"""``compare`` as a tool people leave running (issue 19).

Outputs checked before the run and saved after every model, Ctrl-C, grids
validated before any fit, progress of long fits and of the whole run, tables
that fit a terminal, notes printed once, the plot's layout.
"""

import io
import json
import time

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


# ---- what is printed: a 100-column terminal, each note once ----------------------


def _long_rows():
    """Result rows of every width the table has: tuned, long names, long notes."""
    hint = " ".join(
        f"--grid 'kernel:am-softmax.s={s},{2 * s},{4 * s}'" for s in (9, 30)
    )
    rows = []
    for model in ("LinearSVC", "LogisticRegression", "RBFSampler+LogisticRegression"):
        rows.append(
            {
                "model": model, "status": "ok", "accuracy": 0.9876,
                "accuracy_ci_low": 0.921, "accuracy_ci_high": 1.0,
                "fit_time": 0.0477, "predict_time": 0.0384,
                "fit_ratio_vs_LinearSVC": 20.9, "fit_ratio_vs_LogisticRegression": 14.3,
                "predict_ratio_vs_LinearSVC": 0.898,
                "predict_ratio_vs_LogisticRegression": 0.847,
                "cv_accuracy": 0.9773, "tune_time": 2.32,
                "best_params": {"learning_rate": 0.1, "max_leaf_nodes": 15},
                "notes": [f"tuning: best on the grid's edge: s=30 in [30, 300] {hint}"],
            }
        )  # fmt: skip
    return rows


def test_tables_and_notes_fit_a_100_column_terminal(npz_dir, monkeypatch, capsys):
    from sklmargin.compare import Dataset
    from sklmargin.compare.report import format_table

    dataset = Dataset("d", np.zeros((4, 2)), np.arange(4), np.zeros((2, 2)), [0, 1])
    rows = _long_rows()
    rows[0]["notes"].append("fit: ConvergenceWarning: " + "very long words " * 18)
    text = format_table(dataset, rows, tuned=True, width=100)
    assert max(map(len, text.splitlines())) <= 100
    assert "\n\n" not in text  # one table, never split into blocks
    for cell in ("98.76", "92.1-100.0", "20.9", "97.73", "max_leaf_nodes=15"):
        assert cell in text
    # what did not fit is named, not silently dropped
    assert "left out to fit 100 columns: pred/LSVC, pred/LR" in text
    assert "0.847" in format_table(dataset, rows, tuned=True, width=250)
    # a --grid hint stays whole on one line, ready to copy
    hint = "--grid 'kernel:am-softmax.s=30,60,120'"
    assert any(hint in line for line in text.splitlines())
    assert "RBFSampler+LR" in text  # shortened only because it did not fit
    wide = format_table(dataset, rows, tuned=True, width=250)
    assert "RBFSampler+LogisticRegression  " in wide and "\n\n" not in wide

    monkeypatch.setenv("COLUMNS", "100")  # what shutil.get_terminal_size reads
    models = f"{PEERS},RBFSampler+LogisticRegression"
    args = ["compare", "--data", str(npz_dir), "--tune", "--models", models, *FAST]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "== alpha" in out and "== beta" in out
    assert max(map(len, out.splitlines())) <= 100


@pytest.fixture(scope="module")
def rare_class_dir(tmp_path_factory):
    """Two datasets whose training split has a class of 2 rows (< 3 folds)."""
    folder = tmp_path_factory.mktemp("rare")
    for seed, name in [(0, "alpha"), (1, "beta")]:
        X, y = make_classification(n_samples=80, n_features=4, random_state=seed)
        y[:2] = 2
        np.savez(
            folder / f"{name}.npz",
            X_train=X[:60], y_train=y[:60], X_test=X[60:], y_test=y[60:],
        )  # fmt: skip
    return folder


def test_a_warning_every_model_raises_is_printed_once_per_run(rare_class_dir, capsys):
    args = ["compare", "--data", str(rare_class_dir), "--tune", "--models", PEERS]
    assert main([*args, *FAST]) == 0
    out = capsys.readouterr().out
    warning = "The least populated class in y has only 2 members"
    assert out.count(warning) == 1
    assert f"every model (2): tuning: UserWarning: {warning}" in out
    assert "every model (2): the same note as on alpha (tuning: UserWarning)" in out


# ---- slow models: a cap, a way out, a heartbeat ----------------------------------


def test_linear_svc_max_iter_caps_linear_svc(npz_dir, tmp_path, capsys):
    from sklmargin.compare import CompareSettings, build_pipeline

    settings = CompareSettings(linear_svc_max_iter=7)
    pipeline = build_pipeline(model_registry()["LinearSVC"], settings)
    assert pipeline.named_steps["model"].max_iter == 7
    output = tmp_path / "r.json"
    args = ["compare", "--data", str(npz_dir), "--datasets", "alpha"]
    args += ["--linear-svc-max-iter", "2", "--output", str(output)]
    assert main([*args, "--models", PEERS, *FAST]) == 0
    out = capsys.readouterr().out
    assert "LinearSVC dual='auto', max_iter=2" in out
    document = json.loads(output.read_text())
    assert document["metadata"]["settings"]["linear_svc_max_iter"] == 2
    (svc,) = [row for row in document["results"] if row["model"] == "LinearSVC"]
    assert any("ConvergenceWarning" in note for note in svc["notes"])


def test_skip_leaves_out_any_model_even_a_reference(npz_dir, tmp_path, capsys):
    output = tmp_path / "r.json"
    args = ["compare", "--data", str(npz_dir), "--datasets", "alpha"]
    args += ["--models", "margin:softmax,margin:normface", "--output", str(output)]
    assert main([*args, "--skip", "linearsvc,*normface", *FAST]) == 0
    out = capsys.readouterr().out
    assert "--skip: left out LinearSVC, margin:normface; no time ratios against" in out
    models = [row["model"] for row in json.loads(output.read_text())["results"]]
    assert models == ["LogisticRegression", "margin:softmax"]
    table = out[out.index("== alpha") :]
    assert "fit/LR" in table and "LSVC" not in table  # a column or the note
    assert main([*args, "--skip", "*", *FAST]) == 2
    assert "--skip leaves no model to run" in capsys.readouterr().err
    assert main([*args, "--skip", "LinearSCV", *FAST]) == 2
    assert "Did you mean 'LinearSVC'" in capsys.readouterr().err


class _Log(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


@pytest.mark.parametrize("tty", [False, True])
def test_heartbeat_during_a_long_fit(tty):
    from sklmargin.compare import Progress

    stream = _Log(tty)
    progress = Progress(1, stream, heartbeat=0.05)
    progress.start("usps", "LinearSVC")
    progress.stage("final fit")
    time.sleep(0.4)  # a fit that reports nothing
    progress.done({"status": "ok", "accuracy": 0.5, "notes": []})
    text = stream.getvalue()
    beats = text.count("final fit running for")
    assert beats >= 2  # again and again, not once
    assert "s on this model)" in text
    assert text.endswith("(acc 50.00%)\x1b[K\n" if tty else "(acc 50.00%)\n")
    time.sleep(0.15)
    assert stream.getvalue() == text  # nothing after the model finished


# ---- the whole run's ETA ---------------------------------------------------------


def test_run_clock_corrects_its_estimates():
    from sklmargin.compare.clock import RunClock

    clock = RunClock([1.0, 1.0, 2.0, None])  # None: the average of the others
    assert clock.total() == pytest.approx(1 + 1 + 2 + 4 / 3)
    clock.finish(2.0)  # twice as slow as estimated: the rest will be too
    assert clock.remaining() == pytest.approx(2 * (1 + 2 + 4 / 3))
    # 0.5 s into the second model, its own ETA unknown, then known (3 s)
    assert clock.remaining(0.5) == pytest.approx(2 * (2 + 4 / 3) + 1.5)
    assert clock.remaining(0.5, current_eta=3.0) == pytest.approx(2 * (2 + 4 / 3) + 3)


def test_tuned_run_prints_an_estimate_first_then_a_run_eta(
    npz_dir, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "100")
    output = tmp_path / "r.json"
    args = ["compare", "--data", str(npz_dir), "--tune", "--models", PEERS]
    assert main([*args, "--threads", "1", "--output", str(output)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("estimated run time: ~")
    assert err.index("estimated run time") < err.index("[1/4] alpha / LinearSVC")
    # the estimate is wrapped as the report is (a piped stderr has no soft wrap)
    estimate_lines = err[: err.index("[1/4]")].splitlines()
    assert len(estimate_lines) > 1 and max(map(len, estimate_lines)) <= 100
    done_lines = [line for line in err.splitlines() if line.startswith("[")]
    assert len(done_lines) == 4 and all("; run ETA " in line for line in done_lines)
    assert done_lines[-1].endswith("; run ETA 0.0 s)")
    estimate = json.loads(output.read_text())["metadata"]["estimated_seconds"]
    assert 0 < estimate < 60


# ---- the plot: nothing clipped, no label on another ------------------------------


def _crowded_rows(datasets=("wine",)):
    """Nine models at 100% within a factor 2 of time: the usual --csv crowd."""
    names = [
        "LinearSVC", "LogisticRegression", "SVC", "HistGradientBoosting",
        "RBFSampler+LogisticRegression", "margin:am-softmax", "margin:arcface",
        "margin:softmax", "kernel:am-softmax",
    ]  # fmt: skip
    times = [0.169, 0.227, 0.162, 2.32, 0.828, 0.194, 0.205, 0.195, 0.278]
    return [
        {
            "dataset": dataset,
            "model": name,
            "status": "ok",
            "accuracy": 1.0,
            "accuracy_ci_low": 0.921,
            "accuracy_ci_high": 1.0,
            "tune_time": time_ * (1 + index),
            "fit_time": time_ / 10,
        }  # fmt: skip
        for index, dataset in enumerate(datasets)
        for name, time_ in zip(names, times, strict=True)
    ]


@pytest.mark.parametrize("datasets", [("wine",), ("wine", "iris", "digits", "dna")])
def test_plot_keeps_title_legend_and_labels_inside_and_apart(
    datasets, tmp_path, monkeypatch
):
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    from sklmargin.compare import plot_results

    saved = []
    savefig = Figure.savefig

    def spy(figure, *args, **kwargs):
        saved.append(figure)
        return savefig(figure, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    plot_results(tmp_path / "acc.png", _crowded_rows(datasets), tuned=True)
    (figure,) = saved
    FigureCanvasAgg(figure).draw()  # the figure as saved, at its own size
    inside = figure.bbox.padded(1)

    def within(artist):
        box = artist.get_window_extent()
        return (
            inside.x0 <= box.x0
            and box.x1 <= inside.x1
            and (inside.y0 <= box.y0 and box.y1 <= inside.y1)
        )

    assert within(figure._suptitle)
    (legend,) = figure.legends
    assert within(legend)
    for ax in figure.axes:
        labels = [text for text in ax.texts if text.get_text()]
        if not ax.get_visible():
            continue
        assert within(ax.title) and len(labels) == 9
        # the text itself, without its leader line (Annotation's extent has it)
        boxes = [Text.get_window_extent(label) for label in labels]
        assert all(map(within, labels))
        for i, box in enumerate(boxes):
            for other in boxes[i + 1 :]:
                assert not box.overlaps(other), "two point labels overlap"


def test_run_eta_of_a_fit_past_its_estimate_says_so():
    from sklmargin.compare import Progress
    from sklmargin.compare.clock import RunClock

    stream = _Log(False)
    clock = RunClock([0.01, 5.0])
    progress = Progress(2, stream, heartbeat=0.05, clock=clock)
    progress.start("a9a", "SVC")
    time.sleep(0.2)  # 20 x its estimate, no news
    progress.done({"status": "ok", "accuracy": 0.5, "notes": []})
    text = stream.getvalue()
    assert "; run ETA this fit (over its estimate) + 5.0 s" in text
    assert text.endswith("(acc 50.00%; run ETA 2 min)\n")  # 5 s x 20, corrected
