"""Tests of ``python -m sklmargin compare``: arguments, data loading, outputs.

Everything runs on tiny data with small feature widths and one BLAS thread, so
the whole file takes seconds.
"""

import csv
import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier, compare
from sklmargin.__main__ import main
from sklmargin.compare import (
    C_GRID,
    GRID_POINTS,
    ROW_FIELDS,
    CompareError,
    CompareSettings,
    Dataset,
    ModelSpec,
    evaluate_model,
    grid_size,
    grid_size_note,
    grid_sizes,
    model_registry,
    resolve_models,
)
from sklmargin.compare import models as compare_models
from sklmargin.compare import protocol as compare_protocol
from sklmargin.compare import rbf as compare_rbf

# Fast and steady: one thread, tiny random-feature width, no progress lines.
FAST = ["--threads", "1", "--n-components", "20", "-q"]
PEERS = "LinearSVC,LogisticRegression"


def _tiny_split(seed, n_classes=3, n_samples=90, n_features=6):
    X, y = make_classification(
        n_samples=n_samples,
        n_features=n_features,
        n_informative=4,
        n_redundant=0,
        n_classes=n_classes,
        random_state=seed,
    )
    n_train = 2 * n_samples // 3
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


@pytest.fixture(scope="module")
def npz_dir(tmp_path_factory):
    """A folder with two tiny datasets, deliberately written out of order."""
    tmp_path = tmp_path_factory.mktemp("data")
    for seed, name in [(1, "beta"), (0, "alpha")]:
        X_train, y_train, X_test, y_test = _tiny_split(seed)
        np.savez(
            tmp_path / f"{name}.npz",
            X_train=X_train,
            y_train=y_train,
            X_test=X_test,
            y_test=y_test,
        )
    (tmp_path / "notes.txt").write_text("not a dataset")
    return tmp_path


def _json_rows(path):
    document = json.loads(path.read_text())
    return document["metadata"], document["results"]


# ---- command-line basics -------------------------------------------------------


def test_models_list_prints_every_name(capsys):
    assert main(["compare", "--models", "list"]) == 0
    out = capsys.readouterr().out
    for name in model_registry():
        assert name in out
    assert main(["compare", "--list-models"]) == 0
    assert "RBFSampler+LogisticRegression" in capsys.readouterr().out


@pytest.mark.parametrize(
    "models, expected",
    [
        ("LinearSVC,NoSuchModel", "'NoSuchModel'"),
        ("LinearSCV", "Did you mean 'LinearSVC'"),
        ("margin:hinge", "margin:am-softmax"),
        (" , ", "no model names"),
    ],
)
def test_unknown_model_is_a_clear_error(models, expected, capsys):
    assert main(["compare", "--models", models, *FAST]) == 2
    err = capsys.readouterr().err
    assert "error" in err and expected in err
    assert "Traceback" not in err


def test_model_names_are_case_insensitive_and_references_are_added():
    specs, notes = resolve_models("svc,logisticregression,SVC", model_registry())
    assert [spec.name for spec in specs] == ["LinearSVC", "LogisticRegression", "SVC"]
    assert any("LinearSVC" in note and "ratio" in note for note in notes)


def test_model_globs():
    specs, _ = resolve_models("*Regression", model_registry())
    assert [spec.name for spec in specs] == [
        "LinearSVC",
        "LogisticRegression",
        "RBFSampler+LogisticRegression",
        "Nystroem+LogisticRegression",
    ]
    with pytest.raises(CompareError, match="unknown model 'forest:\\*'"):
        resolve_models("forest:*", model_registry())


def test_usage_errors_return_non_zero(capsys):
    assert main([]) == 2
    assert main(["compare", "--repeats", "0"]) == 2
    assert main(["compare", "--test-size", "1.5"]) == 2
    assert main(["compare", "--threads", "-1"]) == 2
    assert main(["compare", "--help"]) == 0
    assert "--svc-max-samples" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--csv", "missing.csv", "--target", "y"], "file not found"),
        (["--csv", "missing.csv"], "--target"),
        (["--target", "y"], "--target only applies to --csv"),
        (["--data", "no/such/dir"], "not a directory"),
        (["--output", "results.txt"], ".json, .csv"),
        (["--datasets", "digits,mnist"], "'mnist'"),
    ],
)
def test_input_errors_are_messages_not_tracebacks(args, expected, capsys):
    assert main(["compare", *args, "--models", PEERS, *FAST]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert "Traceback" not in err


def test_missing_matplotlib_is_reported_before_the_run(monkeypatch, capsys):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "matplotlib" else real_find_spec(name, *a),
    )
    assert main(["compare", "--plot", "acc.png", "--models", PEERS, *FAST]) == 2
    captured = capsys.readouterr()
    assert (
        'pip install ".[plot]"' in captured.err
        and "pip install matplotlib" in captured.err
    )
    assert "==" not in captured.out  # nothing ran


def test_python_dash_m_entry_point_imports_no_integration():
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sklmargin", "compare"]
        + ["--models", "list"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "LinearSVC" in result.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()}
    assert "sklmargin.compare.cli" in imported
    # the CLI loads no optional integration (Dask, ONNX, skops) to list models
    assert not any(name.startswith("sklmargin.integrations") for name in imported)


# ---- data sources --------------------------------------------------------------


def test_data_dir_runs_every_npz_sorted(npz_dir, capsys):
    assert main(["compare", "--data", str(npz_dir), "--models", PEERS, *FAST]) == 0
    out = capsys.readouterr().out
    assert out.index("== alpha") < out.index("== beta")
    for name in ("alpha", "beta", "LinearSVC", "LogisticRegression"):
        assert name in out
    assert "n_train=60, n_test=30, n_features=6, n_classes=3" in out


def test_datasets_selects_by_name(npz_dir, capsys):
    args = ["compare", "--data", str(npz_dir), "--datasets", "beta", *FAST]
    assert main([*args, "--models", PEERS]) == 0
    out = capsys.readouterr().out
    assert "== beta" in out and "== alpha" not in out
    assert main(["compare", "--data", str(npz_dir), "--datasets", "list"]) == 0
    assert capsys.readouterr().out.split() == ["alpha", "beta"]


def test_npz_without_the_expected_arrays_is_an_error(tmp_path, capsys):
    np.savez(tmp_path / "bad.npz", X=np.zeros((4, 2)))
    assert main(["compare", "--data", str(tmp_path), "--models", PEERS, *FAST]) == 2
    assert "lacks X_train" in capsys.readouterr().err


# ---- results and outputs -------------------------------------------------------


@pytest.fixture(scope="module")
def json_run(npz_dir, tmp_path_factory):
    output = tmp_path_factory.mktemp("out") / "results.json"
    args = ["compare", "--data", str(npz_dir), "--output", str(output)]
    models = f"{PEERS},RBFSampler+LogisticRegression"
    assert main([*args, "--models", models, "--repeats", "2", *FAST]) == 0
    return output


def test_json_output_round_trip(json_run):
    metadata, rows = _json_rows(json_run)
    assert len(rows) == 2 * 3
    for row in rows:
        assert tuple(row) == ROW_FIELDS
        assert row["status"] == "ok"
        assert 0 <= row["accuracy"] <= 1
        assert row["fit_time"] > 0 and row["predict_time"] > 0
        assert row["repeats"] == 2
    references = [row for row in rows if row["model"] == "LinearSVC"]
    assert all(row["fit_ratio_vs_LinearSVC"] == 1 for row in references)
    assert metadata["settings"]["tol"] == 1e-4
    assert "scikit-learn" in metadata["environment"]


def test_csv_output_round_trip(npz_dir, tmp_path):
    output = tmp_path / "results.csv"
    args = ["compare", "--data", str(npz_dir), "--output", str(output)]
    assert main([*args, "--models", PEERS, *FAST]) == 0
    with open(output, newline="") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
    assert tuple(reader.fieldnames) == ROW_FIELDS
    assert len(rows) == 4
    assert {row["dataset"] for row in rows} == {"alpha", "beta"}
    assert all(0 <= float(row["accuracy"]) <= 1 for row in rows)


def test_runs_are_deterministic(npz_dir, json_run, tmp_path):
    output = tmp_path / "again.json"
    args = ["compare", "--data", str(npz_dir), "--output", str(output)]
    models = f"{PEERS},RBFSampler+LogisticRegression"
    assert main([*args, "--models", models, *FAST]) == 0
    first = {(r["dataset"], r["model"]): r["accuracy"] for r in _json_rows(json_run)[1]}
    second = {(r["dataset"], r["model"]): r["accuracy"] for r in _json_rows(output)[1]}
    assert first == second


def test_table_and_progress(npz_dir, capsys):
    args = ["compare", "--data", str(npz_dir), "--models", PEERS, "--threads", "1"]
    assert main([*args, "--n-components", "20"]) == 0
    captured = capsys.readouterr()
    assert "[1/4] alpha / LinearSVC ..." in captured.err
    assert "tol=0.0001" in captured.out  # the shared tolerance is stated
    table = captured.out[captured.out.index("== alpha") :]
    header = table.splitlines()[1]
    assert header.split()[:6] == ["model", "acc", "%", "95%", "CI", "fit"]
    # each ratio column is shown, or named in the note that says why not (on
    # tiny data every time is usually under 10 ms)
    note = next((line for line in table.splitlines() if "  * no " in line), "")
    for column in ("fit/LSVC", "fit/LR", "pred/LSVC", "pred/LR"):
        named = note.replace(",", " ").replace(":", " ").split()
        assert (column in header.split()) != (column in named)


def test_svc_is_skipped_above_the_limit(npz_dir, tmp_path, capsys):
    output = tmp_path / "r.json"

    def args(limit):
        return ["compare", "--data", str(npz_dir), "--datasets", "alpha", *FAST] + [
            "--models",
            "SVC",
            "--svc-max-samples",
            limit,
            "--output",
            str(output),
        ]

    assert main(args("59")) == 0
    out = capsys.readouterr().out
    svc_line = next(line for line in out.splitlines() if line.startswith("SVC "))
    assert "skipped" in svc_line
    assert "--svc-max-samples=59" in out
    rows = {row["model"]: row for row in _json_rows(output)[1]}
    assert rows["SVC"]["status"] == "skipped"
    assert rows["SVC"]["accuracy"] is None
    assert rows["LinearSVC"]["status"] == "ok"

    assert main(args("60")) == 0  # n_train == limit: runs
    rows = {row["model"]: row for row in _json_rows(output)[1]}
    assert rows["SVC"]["status"] == "ok"


def test_failing_model_is_reported_and_run_continues():
    class Broken(LogisticRegression):
        def fit(self, X, y):
            raise RuntimeError("solver exploded")

    X_train, y_train, X_test, y_test = _tiny_split(0)
    dataset = Dataset("tiny", X_train, y_train, X_test, y_test)
    spec = ModelSpec("Broken", "always fails", lambda settings: Broken(), {"C": [1]})
    row = evaluate_model(spec, dataset, CompareSettings())
    assert row["status"] == "error"
    assert "solver exploded" in row["notes"][0]


@pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is None, reason="matplotlib not installed"
)
def test_plot_is_written(npz_dir, tmp_path):
    plot = tmp_path / "acc.png"
    args = ["compare", "--data", str(npz_dir), "--plot", str(plot)]
    assert main([*args, "--models", PEERS, *FAST]) == 0
    assert plot.stat().st_size > 0


# ---- tuning --------------------------------------------------------------------


def test_every_grid_has_the_same_number_of_points():
    registry = model_registry()
    assert set(grid_sizes(registry.values()).values()) == {GRID_POINTS}
    assert grid_size_note(registry.values()) is None
    for spec in registry.values():
        assert grid_size(spec.grid) == GRID_POINTS, spec.name


def test_unequal_grids_are_reported():
    specs = [
        ModelSpec("a", "", LogisticRegression, {"C": [1, 2]}),
        ModelSpec("b", "", LogisticRegression, {"C": [1, 2]}),
        ModelSpec("c", "", LogisticRegression, {"C": [1, 2, 3]}),
    ]
    note = grid_size_note(specs)
    assert "differ in size" in note and "c 3" in note and "a 2" not in note


def test_tune_reports_best_params(npz_dir, tmp_path, capsys):
    output = tmp_path / "tuned.json"
    args = ["compare", "--data", str(npz_dir), "--datasets", "alpha", "--tune"]
    assert main([*args, "--models", PEERS, "--output", str(output), *FAST]) == 0
    out = capsys.readouterr().out
    assert "9 grid points per model" in out and "best params" in out
    metadata, rows = _json_rows(output)
    for row in rows:
        assert set(row["best_params"]) == {"C"}
        assert row["best_params"]["C"] in C_GRID
        assert 0 <= row["cv_accuracy"] <= 1 and row["tune_time"] > 0
    grids = metadata["grids"]
    assert {grid_size(grid) for grid in grids.values()} == {GRID_POINTS}


def test_without_tune_there_are_no_best_params(json_run):
    _, rows = _json_rows(json_run)
    assert all(row["best_params"] is None for row in rows)


# ---- our estimators ------------------------------------------------------------


# compare's documented settings (CompareSettings) with FAST's --n-components.
COMPARE_FIT = dict(tol=1e-4, max_iter=1000, random_state=0)


def _direct_accuracy(estimator, seed=0):
    """Test accuracy of ``StandardScaler + estimator`` fitted here, not by compare."""
    X_train, y_train, X_test, y_test = _tiny_split(seed)  # seed 0: "alpha"
    pipe = make_pipeline(StandardScaler(), estimator).fit(X_train, y_train)
    return pipe.score(X_test, y_test)


def test_our_linear_estimators_run(npz_dir, tmp_path):
    output = tmp_path / "ours.json"
    args = ["compare", "--data", str(npz_dir), "--datasets", "alpha"]
    losses = ["softmax", "am-softmax", "arcface"]
    models = ",".join(["LogisticRegression", *(f"margin:{loss}" for loss in losses)])
    assert main([*args, "--models", models, "--output", str(output), *FAST]) == 0
    rows = {row["model"]: row for row in _json_rows(output)[1]}
    for loss in losses:
        row = rows[f"margin:{loss}"]
        assert row["status"] == "ok", row["notes"]
        # The same model, split and score as a fit done here by hand.
        clf = MarginSoftmaxClassifier(loss=loss, **COMPARE_FIT)
        assert row["accuracy"] == pytest.approx(_direct_accuracy(clf))
    # loss="softmax" is multinomial logistic regression: the peer's predictions.
    assert rows["margin:softmax"]["accuracy"] == rows["LogisticRegression"]["accuracy"]


def test_our_kernel_estimator_runs(npz_dir, tmp_path):
    output = tmp_path / "kernel.json"
    args = ["compare", "--data", str(npz_dir), "--datasets", "alpha"]
    losses = ["am-softmax", "softmax"]
    models = ",".join(f"kernel:{loss}" for loss in losses)
    assert main([*args, "--models", models, "--output", str(output), *FAST]) == 0
    rows = {row["model"]: row for row in _json_rows(output)[1]}
    for loss in losses:
        row = rows[f"kernel:{loss}"]
        assert row["status"] == "ok", row["notes"]
        # the estimator at its own defaults (gamma="auto"), FAST's width
        clf = KernelMarginSoftmaxClassifier(loss=loss, n_components=20, **COMPARE_FIT)
        assert row["accuracy"] == pytest.approx(_direct_accuracy(clf))


def test_our_estimators_tune_m_and_s(npz_dir, tmp_path):
    output = tmp_path / "ours.json"
    args = ["compare", "--data", str(npz_dir), "--datasets", "alpha", "--tune"]
    models = f"{PEERS},margin:am-softmax"
    assert main([*args, "--models", models, "--output", str(output), *FAST]) == 0
    rows = {row["model"]: row for row in _json_rows(output)[1]}
    assert set(rows["margin:am-softmax"]["best_params"]) == {"m", "s"}


def test_warnings_become_short_deduplicated_notes():
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n_iter in (1041, 1038):
            message = f"no convergence after {n_iter} iterations"
            warnings.warn(message, ConvergenceWarning, stacklevel=1)
        warnings.warn("something else", UserWarning, stacklevel=1)
    notes = compare.summarize_warnings(caught, "fit")
    assert notes == [
        "fit: ConvergenceWarning (x2): no convergence after 1041 iterations",
        "fit: UserWarning: something else",
    ]


def test_best_params_on_the_grid_edge_are_flagged_with_a_way_out():
    grid = {"m": [0.0, 0.05, 0.1], "s": [15.0, 30.0, 60.0]}
    edge_notes = compare_protocol.edge_notes
    assert edge_notes({"m": 0.05, "s": 30.0}, grid, "margin:am-softmax") == []
    (note,) = edge_notes({"m": 0.05, "s": 60.0}, grid, "margin:am-softmax")
    assert "s=60 in [15, 60]" in note and "m=" not in note
    # same size, shifted one geometric step past the edge
    assert "--grid 'margin:am-softmax.s=30,60,120'" in note
    # m=0 (no margin) ends the domain: not an edge to widen
    (note,) = edge_notes({"m": 0.0, "s": 15.0}, grid, "margin:am-softmax")
    assert "--grid 'margin:am-softmax.s=7.5,15,30'" in note and "m=" not in note
    (note,) = edge_notes({"C": 100.0}, {"C": [1.0, 10.0, 100.0]}, "SVC")
    assert "--grid 'SVC.C=10,100,1000'" in note
    (note,) = edge_notes({"x": 1.0}, {"x": [-1.0, 0.0, 1.0]}, "M")
    assert "--grid 'M.x=0,1,2'" in note
    # integer grids stay integer
    (note,) = edge_notes({"max_leaf_nodes": 63}, {"max_leaf_nodes": [15, 31, 63]})
    assert "max_leaf_nodes=31,63,128'" in note


def test_kernel_models_are_wired_to_the_kernel_estimator(npz_dir):
    settings = CompareSettings(n_components=17, tol=1e-3, max_iter=50, random_state=3)
    pipeline = compare.build_pipeline(model_registry()["kernel:arcface"], settings)
    model = pipeline.named_steps["model"]
    assert type(model).__name__ == "KernelMarginSoftmaxClassifier"
    params = model.get_params()
    assert (params["loss"], params["gamma"], params["n_components"]) == (
        "arcface",
        KernelMarginSoftmaxClassifier().gamma,  # the estimator's default
        17,
    )
    assert (params["tol"], params["max_iter"], params["random_state"]) == (1e-3, 50, 3)

    dataset = compare.load_npz_dir(npz_dir, "alpha")[0]
    spec = model_registry()["kernel:am-softmax"]
    row = evaluate_model(spec, dataset, CompareSettings(n_components=20, tune=True))
    assert row["status"] == "ok", row["notes"]
    assert set(row["best_params"]) == {"gamma/scale", "s"} == set(spec.grid)


def test_every_registered_loss_is_a_model(monkeypatch, capsys):
    """A loss added to the registry shows up in ``--models list`` unedited."""
    from sklmargin import losses

    class Toy(losses.Margin):
        name = "toy-loss"
        search_grid = {"s": tuple(float(s) for s in range(1, 10))}

    registered = losses.registered_margins()
    monkeypatch.setattr(
        compare_models, "registered_margins", lambda: (*registered, Toy())
    )
    assert main(["compare", "--models", "list"]) == 0
    out = capsys.readouterr().out
    for margin in (*registered, Toy()):
        assert f"margin:{margin.name}" in out and f"kernel:{margin.name}" in out
    spec = model_registry()["margin:toy-loss"]
    assert spec.grid == {"s": [float(s) for s in range(1, 10)]}


# ---- Part of the first hour: plot checks, grids, progress, intervals -----------


@pytest.mark.parametrize(
    "plot, expected",
    [
        ("/no/such/dir/p.png", "--plot: folder '/no/such/dir' does not exist"),
        ("p.txt", "--plot: cannot tell the format of 'p.txt': use one of"),
    ],
)
def test_bad_plot_path_fails_before_the_run(plot, expected, capsys):
    pytest.importorskip("matplotlib")
    assert main(["compare", "--plot", plot, "--models", PEERS, *FAST]) == 2
    captured = capsys.readouterr()
    assert expected in captured.err
    assert "Traceback" not in captured.err
    assert "==" not in captured.out  # nothing ran


def test_tuned_plot_is_written(npz_dir, tmp_path):
    pytest.importorskip("matplotlib")
    plot = tmp_path / "acc.svg"
    args = ["compare", "--data", str(npz_dir), "--tune", "--plot", str(plot)]
    assert main([*args, "--datasets", "alpha", "--models", PEERS, *FAST]) == 0
    text = plot.read_text()
    assert "tuning time" in text and "grid-search time" in text
    # point labels and error bars: both model names appear twice (label, legend)
    assert text.count("LinearSVC") >= 2


def test_grid_option_widens_a_grid_and_the_size_difference_is_reported(
    npz_dir, tmp_path, capsys
):
    output = tmp_path / "wide.json"
    args = ["compare", "--data", str(npz_dir), "--datasets", "alpha", "--tune"]
    grid = ["--grid", "LinearSVC.C=0.001,0.1,10,1000"]
    assert main([*args, *grid, "--models", PEERS, "--output", str(output), *FAST]) == 0
    out = capsys.readouterr().out
    assert "--grid: LinearSVC C in [0.001, 0.1, 10, 1000] (4 grid points)" in out
    assert "WARNING: grids differ in size" in out and "LinearSVC 4" in out
    metadata, rows = _json_rows(output)
    assert metadata["grids"]["LinearSVC"] == {"C": [0.001, 0.1, 10, 1000]}
    assert "LinearSVC 4" in metadata["grid_size_warning"]
    best = {row["model"]: row["best_params"] for row in rows}
    assert best["LinearSVC"]["C"] in (0.001, 0.1, 10, 1000)
    assert best["LogisticRegression"]["C"] in C_GRID


@pytest.mark.parametrize(
    "grid, expected",
    [
        ("LinearSVC.C=1,10", "--grid only applies with --tune"),
        ("LinearSVC.C", "expected MODEL.PARAM=V1,V2"),
        ("LinearSVC=1,2", "expected MODEL.PARAM=V1,V2"),
        ("LinearSVC.Cee=1,2", "LinearSVC has no parameter 'Cee'; its grid: C"),
        ("SVC.C=1,2", "--grid: unknown model 'SVC'"),  # not in this run
    ],
)
def test_bad_grid_options_are_clear_errors(grid, expected, capsys):
    tune = [] if "only applies" in expected else ["--tune"]
    assert main(["compare", *tune, "--grid", grid, "--models", PEERS, *FAST]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def test_svc_and_kernel_grids_take_the_same_gamma_steps_from_their_defaults():
    registry = model_registry()
    svc, kernel = registry["SVC"], registry["kernel:am-softmax"]
    assert svc.grid == {"C": [1.0, 10.0, 100.0], "gamma/scale": [0.25, 1.0, 4.0]}
    # kernel:* multiples of "scale" after its metric, centred on gamma="auto"
    factor = compare_rbf.AUTO_GAMMA_FACTOR
    assert compare_rbf.KERNEL_GAMMA_MULTIPLIERS == [0.25 * factor, factor, 4 * factor]
    assert kernel.grid == {
        "gamma/scale": compare_rbf.KERNEL_GAMMA_MULTIPLIERS,
        "s": compare_models.KERNEL_S_GRID,
    }
    assert set(registry["kernel:softmax"].grid) == {"gamma/scale", "C"}
    grid = svc.param_grid(0.25)
    assert grid["model__gamma"] == pytest.approx([0.0625, 0.25, 1.0])
    best = {"model__C": 10.0, "model__gamma": 1.0}
    assert svc.reported_params(best, 0.25) == {"C": 10.0, "gamma/scale": 4.0}
    with pytest.raises(ValueError, match="needs its base"):
        svc.param_grid()


def test_hist_gradient_boosting_is_a_default_peer():
    spec = model_registry()["HistGradientBoosting"]
    assert "HistGradientBoosting" in compare.DEFAULT_MODELS
    assert set(spec.grid) == {"learning_rate", "max_leaf_nodes"}
    assert grid_size(spec.grid) == GRID_POINTS
    dataset = Dataset("tiny", *_tiny_split(0))
    row = evaluate_model(spec, dataset, CompareSettings())
    expected = _direct_accuracy(HistGradientBoostingClassifier(random_state=0))
    assert row["status"] == "ok" and row["accuracy"] == pytest.approx(expected)


def test_tuning_progress_counts_every_cv_fit():
    import io

    stream = io.StringIO()
    progress = compare.Progress(1, stream, interval=0.0)
    dataset = Dataset("tiny", *_tiny_split(0))
    spec = model_registry()["LogisticRegression"]
    progress.start("tiny", spec.name)
    row = evaluate_model(spec, dataset, CompareSettings(tune=True), progress)
    progress.done(row)
    lines = stream.getvalue().splitlines()
    tuning = [line for line in lines if "tuning:" in line]
    assert len(tuning) == 27  # 9 grid points x 3 folds, one line each
    assert "tuning: 27/27 CV fits (9 grid points x 3 folds)" in tuning[-1]
    assert "elapsed, ETA 0 s" in tuning[-1]
    assert lines[-1].strip().startswith("done:") and "acc" in lines[-1]


def test_progress_rewrites_the_line_on_a_terminal():
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    progress = compare.Progress(2, stream, interval=0.0)
    progress.start("d", "m")
    progress.tuning(1, 2)
    progress.tuning(2, 2)
    progress.done({"status": "ok", "accuracy": 0.5, "notes": []})
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.count("\r") == 3
    assert text.endswith("(acc 50.00%)\x1b[K\n")


@pytest.mark.parametrize("n", [10, 38, 450])
def test_wilson_interval(n):
    z2 = 1.959963984540054**2
    # closed forms at 0% and 100%, and the symmetry k <-> n - k
    assert compare.wilson_interval(n, n) == pytest.approx((1 / (1 + z2 / n), 1.0))
    assert compare.wilson_interval(0, n) == pytest.approx((0.0, z2 / n / (1 + z2 / n)))
    for k in (1, n // 3, n - 1):
        low, high = compare.wilson_interval(k, n)
        assert low < k / n < high
        mirrored = compare.wilson_interval(n - k, n)
        assert (low, high) == pytest.approx((1 - mirrored[1], 1 - mirrored[0]))


def test_wilson_interval_covers_95_percent():
    rng = np.random.default_rng(0)
    n, p = 120, 0.93
    draws = rng.binomial(n, p, size=4000)
    covered = [
        low <= p <= high
        for low, high in map(lambda k: compare.wilson_interval(int(k), n), draws)
    ]
    assert 0.93 <= np.mean(covered) <= 0.97


def test_accuracy_interval_in_json_and_table(json_run, npz_dir, capsys):
    _, rows = _json_rows(json_run)
    for row in rows:
        low, high = row["accuracy_ci_low"], row["accuracy_ci_high"]
        assert 0 <= low <= row["accuracy"] <= high <= 1
        assert (low, high) == pytest.approx(
            compare.wilson_interval(round(row["accuracy"] * 30), 30)
        )
    assert main(["compare", "--data", str(npz_dir), "--models", PEERS, *FAST]) == 0
    out = capsys.readouterr().out
    assert "95% CI" in out and "95% Wilson interval" in out


@pytest.mark.parametrize(
    "value, text",
    [
        (0.00439123, "0.00439"),
        (0.0439, "0.0439"),
        (4.3912, "4.39"),
        (43.91, "43.9"),
        (82.04, "82.0"),
        (439.1, "439"),
        (4391.2, "4391"),
        (9.996, "10.0"),
        (1.0, "1.00"),
        (None, "-"),
        (float("nan"), "-"),
    ],
)
def test_one_precision_rule_for_times(value, text):
    assert compare.format_number(value) == text


def test_models_list_shows_every_grid(capsys):
    assert main(["compare", "--models", "list"]) == 0
    out = capsys.readouterr().out
    assert "grid: C {1, 10, 100} x gamma/scale {0.25, 1, 4}" in out
    assert "grid: gamma/scale {0.5, 2, 8} x s {30, 100, 300}" in out
    assert out.count("grid: ") == len(model_registry())


def test_default_run_warms_up_each_model_once(monkeypatch, npz_dir):
    calls = []
    monkeypatch.setattr(
        compare_protocol, "_warm_up", lambda estimator, X, y: calls.append(1)
    )
    datasets = compare.load_npz_dir(npz_dir)
    specs, _ = resolve_models(PEERS, model_registry())
    compare.run_comparison(datasets, specs, CompareSettings(n_components=20))
    assert len(datasets) == 2 and len(calls) == len(specs)
