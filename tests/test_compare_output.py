"""``compare``: the one-line verdict per dataset and the table a newcomer reads.

The verdict is an exact McNemar test of the most accurate model against each
other one on the same test rows; "best here" needs every test to reject.
"""

import json

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.datasets import make_classification

from sklmargin.__main__ import main
from sklmargin.compare import Dataset
from sklmargin.compare.report import MIN_RATIO_TIME, format_table
from sklmargin.compare.verdict import ALPHA, add_verdict, mcnemar_p_value

FAST = ["--threads", "1", "--n-components", "20", "-q"]


def _correct(n, wrong_rows):
    correct = np.ones(n, dtype=bool)
    correct[list(wrong_rows)] = False
    return correct


@pytest.mark.parametrize("only_a, only_b", [(0, 0), (10, 0), (7, 3), (12, 4), (5, 5)])
def test_mcnemar_p_value_is_the_exact_binomial_test(only_a, only_b):
    n = 100
    # a is right where b is wrong on `only_a` rows, and the other way round
    a = _correct(n, range(only_a, only_a + only_b))
    b = _correct(n, range(only_a))
    expected = (
        1.0 if only_a + only_b == 0 else binomtest(only_a, only_a + only_b).pvalue
    )
    assert mcnemar_p_value(a, b) == pytest.approx(expected, rel=1e-12)
    assert mcnemar_p_value(b, a) == pytest.approx(expected, rel=1e-12)
    if (only_a, only_b) == (10, 0):
        assert mcnemar_p_value(a, b) == pytest.approx(2 * 0.5**10)


def test_mcnemar_refuses_different_test_rows():
    with pytest.raises(ValueError, match="different rows"):
        mcnemar_p_value(np.ones(5, bool), np.ones(6, bool))


def _rows(correct_by_model):
    return [
        {"model": name, "status": "ok", "accuracy": c.mean(), "test_correct": c}
        for name, c in correct_by_model.items()
    ]


def test_a_clear_winner_is_named():
    n = 300
    rows = _rows(
        {
            "A": _correct(n, range(10)),
            "B": _correct(n, range(40)),
            "C": _correct(n, range(5, 60)),
        }
    )
    line = add_verdict(rows)
    assert line.startswith("best here: A (96.67%), ahead of every other model")
    assert "300 test rows" in line
    assert rows[0]["p_value_vs_best"] is None
    assert all(row["p_value_vs_best"] < ALPHA for row in rows[1:])


def test_no_clear_winner_names_who_is_within_chance():
    n = 300
    rows = _rows(
        {
            "A": _correct(n, range(10)),
            "B": _correct(n, range(13)),  # 3 more errors: within chance
            "C": _correct(n, range(60)),
        }
    )
    line = add_verdict(rows)
    assert line.startswith("no clear winner: A has the best accuracy (96.67%)")
    assert line.endswith("p >= 0.05): B")
    assert rows[1]["p_value_vs_best"] >= ALPHA > rows[2]["p_value_vs_best"]


def test_ties_and_single_models():
    n = 50
    rows = _rows({"A": _correct(n, [1]), "B": _correct(n, [2]), "C": _correct(n, [])})
    rows.append({"model": "D", "status": "error", "accuracy": None})
    line = add_verdict(rows)
    assert line.startswith("no clear winner: C has the best accuracy")
    rows = _rows({"A": _correct(n, []), "B": _correct(n, [])})
    assert add_verdict(rows) == (
        "no clear winner: 2 models tie at the best accuracy (100.00%: A, B)"
    )
    assert add_verdict(_rows({"A": _correct(n, [])})) == ""


def test_the_verdict_keeps_its_level_for_equal_models():
    """Two equally accurate models: "best here" in at most ~5% of the splits."""
    rng = np.random.default_rng(0)
    n, trials, winners = 200, 2000, 0
    for _ in range(trials):
        rows = _rows({"A": rng.random(n) < 0.8, "B": rng.random(n) < 0.8})
        winners += add_verdict(rows).startswith("best here")
    assert winners / trials <= ALPHA + 0.01  # exact test: at most alpha


@pytest.fixture(scope="module")
def two_sets(tmp_path_factory):
    folder = tmp_path_factory.mktemp("verdict")
    for seed, name in [(0, "alpha"), (1, "beta")]:
        X, y = make_classification(n_samples=120, n_features=6, random_state=seed)
        np.savez(folder / f"{name}.npz", X_train=X[:80], y_train=y[:80],
                 X_test=X[80:], y_test=y[80:])  # fmt: skip
    return folder


def test_every_dataset_gets_a_verdict_line_and_the_file_its_p_values(
    two_sets, tmp_path, capsys
):
    output = tmp_path / "r.json"
    args = ["compare", "--data", str(two_sets), "--output", str(output)]
    assert main([*args, "--models", "margin:softmax", *FAST]) == 0
    out = capsys.readouterr().out
    for name in ("alpha", "beta"):
        block = out[out.index(f"== {name}") :].split("\n\n")[0]
        verdicts = [
            line
            for line in block.splitlines()
            if line.startswith(("best here:", "no clear winner:"))
        ]
        assert len(verdicts) == 1
    document = json.loads(output.read_text())
    rows = document["results"]
    verdicts = document["metadata"]["verdicts"]
    assert set(verdicts) == {"alpha", "beta"}
    assert all(
        v.startswith(("best here:", "no clear winner:")) for v in verdicts.values()
    )
    for name in ("alpha", "beta"):
        p_values = [row["p_value_vs_best"] for row in rows if row["dataset"] == name]
        assert p_values.count(None) == 1  # the best model's own
        assert all(p is None or 0 <= p <= 1 for p in p_values)


def _row(model, fit_time, ratio):
    return {
        "model": model, "status": "ok", "accuracy": 0.9,
        "accuracy_ci_low": 0.8, "accuracy_ci_high": 0.95,
        "fit_time": fit_time, "predict_time": 0.5,
        "fit_ratio_vs_LinearSVC": ratio, "fit_ratio_vs_LogisticRegression": ratio,
        "predict_ratio_vs_LinearSVC": 1.0, "predict_ratio_vs_LogisticRegression": 1.0,
        "cv_accuracy": None, "tune_time": None, "best_params": None, "notes": [],
    }  # fmt: skip


def test_no_time_ratio_for_fits_under_the_floor():
    dataset = Dataset("d", np.zeros((4, 2)), np.arange(4), np.zeros((2, 2)), [0, 1])
    fast = MIN_RATIO_TIME / 3
    rows = [
        _row("LinearSVC", fast, 1.0),
        _row("LogisticRegression", fast, 1.0),
        _row("margin:softmax", 2 * fast, 2.0),
    ]
    rows[2]["fit_time"] = 10 * MIN_RATIO_TIME  # the references are still fast
    text = format_table(dataset, rows, tuned=False, width=120)
    table = text.splitlines()
    # a column without a single value is left out, and the note says why
    assert table[1].split()[-2:] == ["pred/LSVC", "pred/LR"]
    assert "fit/LSVC" not in table[1] and "no fit/LSVC, fit/LR: each would" in text
    for line in table[3:6]:
        assert line.split()[-2:] == ["1.00", "1.00"]  # predicts: 0.5 s
    for row in rows:
        row["fit_time"] = 10 * MIN_RATIO_TIME
    rows[2]["fit_time"] = 20 * MIN_RATIO_TIME
    table = format_table(dataset, rows, tuned=False, width=120).splitlines()
    assert table[1].split()[-4:] == ["fit/LSVC", "fit/LR", "pred/LSVC", "pred/LR"]
    assert table[5].split()[-4:] == ["2.00", "2.00", "1.00", "1.00"]


@pytest.mark.parametrize("width", [80, 100])
def test_the_table_is_never_split_and_fits_the_width(two_sets, width, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(width))
    from sklmargin.compare import CompareSettings, model_registry, resolve_models
    from sklmargin.compare.datasets import load_npz_dir
    from sklmargin.compare.protocol import run_comparison

    specs, _ = resolve_models(None, model_registry())
    settings = CompareSettings(n_components=20)
    (dataset,) = load_npz_dir(two_sets, "alpha")
    rows = run_comparison([dataset], specs, settings)
    text = format_table(dataset, rows, tuned=False)
    lines = text.splitlines()
    assert max(map(len, lines)) <= width
    assert "\n\n" not in text
    assert sum(line.startswith("model ") for line in lines) == 1  # one header
    assert len([line for line in lines if line.startswith("---")]) == 1


@pytest.mark.parametrize("span", [(0.02, 0.3), (0.001, 30.0), (1e-4, 1e4)])
@pytest.mark.parametrize("panel_width", [5.2, 8.0])
def test_time_tick_labels_never_overlap(span, panel_width):
    """One-dataset plots of runs from 1 ms to 30 s had colliding tick labels."""
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, NullFormatter

    from sklmargin.compare.plot import _time_locator

    fig = Figure(figsize=(panel_width, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.set_xscale("log")
    ax.plot(span, [90, 95], "o")
    ax.margins(x=0.2)
    ax.xaxis.set_major_locator(_time_locator(ax, panel_width))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    low, high = ax.get_xlim()
    boxes = sorted(
        (label.get_window_extent(renderer) for label in ax.get_xticklabels()
         if label.get_text() and low <= label.get_position()[0] <= high),
        key=lambda box: box.x0,
    )  # fmt: skip
    assert len(boxes) >= 2  # the axis keeps at least two labelled ticks
    for left, right in zip(boxes, boxes[1:], strict=False):
        assert left.x1 < right.x0, "tick labels overlap"


def test_help_states_the_rule_and_one_way_to_list_models(capsys):
    try:
        main(["compare", "--help"])
    except SystemExit:  # argparse's way out, caught by main or not
        pass
    text = " ".join(capsys.readouterr().out.split())
    assert "exact McNemar test" in text and "same test rows" in text
    assert "--models NAMES" in text and "--list-models" not in text
    assert main(["compare", "--list-models"]) == 0  # still works, unadvertised
    assert "margin:am-softmax" in capsys.readouterr().out
