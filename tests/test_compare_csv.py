"""``compare --csv``: what a first CSV file brings, and what the user is told.

Every bad file must give exit code 2 and a message naming the column or the
problem and, where one exists, the option that helps; never a traceback.
"""

import json

import numpy as np
import pytest
from sklearn.datasets import make_classification

from sklmargin.__main__ import main
from sklmargin.compare import CompareError, load_csv

FAST = ["--threads", "1", "-q", "--models", "LinearSVC,LogisticRegression"]


def _write(path, header, rows, delimiter=","):
    lines = [delimiter.join(header)]
    lines += [delimiter.join(str(cell) for cell in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _table(n=60, seed=0):
    """Three informative numeric features and a string label."""
    X, y = make_classification(
        n_samples=n, n_features=3, n_informative=3, n_redundant=0, random_state=seed
    )
    labels = np.array(["cat", "dog"])[y]
    return [
        [f"{a:.4f}", f"{b:.4f}", f"{c:.4f}", lab]
        for (a, b, c), lab in zip(X, labels, strict=True)
    ]


HEADER = ["f0", "f1", "f2", "species"]


def _run(capsys, path, *extra, target="species"):
    code = main(["compare", "--csv", str(path), "--target", target, *FAST, *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_delimiter_is_sniffed(tmp_path, delimiter, capsys):
    path = _write(tmp_path / "pets.csv", HEADER, _table(), delimiter)
    output = tmp_path / "out.json"
    code, out, _ = _run(capsys, path, "--output", str(output))
    assert code == 0
    assert f"delimiter {delimiter!r} (sniffed)" in out
    rows = json.loads(output.read_text())["results"]
    # 60 rows, --test-size 0.25, stratified; 3 features, 2 classes
    sizes = {(r["n_train"], r["n_test"], r["n_features"], r["n_classes"]) for r in rows}
    assert sizes == {(45, 15, 3, 2)}


def test_integer_id_column_is_dropped_with_a_note(tmp_path, capsys):
    rows = [[1000 + i, *row] for i, row in enumerate(_table())]
    path = _write(tmp_path / "ids.csv", ["rownum", *HEADER], rows, ";")
    code, out, _ = _run(capsys, path)
    assert code == 0
    assert "dropped column 'rownum': an integer and unique per row" in out
    assert "--keep rownum" in out and "n_features=3" in out
    code, out, _ = _run(capsys, path, "--keep", "rownum")
    assert code == 0 and "n_features=4" in out and "dropped column" not in out


def test_named_id_columns(tmp_path):
    table = _table()
    rows = [[f"A{i:03d}", i % 4, *row] for i, row in enumerate(table)]
    path = _write(tmp_path / "named.csv", ["ID", "store_id", *HEADER], rows)
    dataset = load_csv(path, "species")
    assert dataset.n_features == 4  # ID dropped, store_id kept (it repeats)
    notes = " ".join(dataset.notes)
    assert "dropped column 'ID'" in notes
    assert "'store_id' is named like an identifier but repeats" in notes


def test_drop_option(tmp_path, capsys):
    path = _write(tmp_path / "d.csv", HEADER, _table())
    code, out, _ = _run(capsys, path, "--drop", "f1,f2")
    assert code == 0 and "n_features=1" in out and "dropped 'f1', 'f2' (--drop)" in out
    code, _, err = _run(capsys, path, "--drop", "f9")
    assert code == 2 and "--drop: no column 'f9'" in err and "'f0'" in err


def test_text_column_is_an_error_naming_it_unless_one_hot(tmp_path, capsys):
    colours = ["red", "green", "blue"]
    rows = [[*row[:3], colours[i % 3], row[3]] for i, row in enumerate(_table())]
    path = _write(tmp_path / "t.csv", ["f0", "f1", "f2", "colour", "species"], rows)
    code, _, err = _run(capsys, path)
    assert code == 2
    assert "'colour' (e.g. 'red')" in err and "--one-hot" in err
    assert "--drop colour" in err
    code, out, _ = _run(capsys, path, "--one-hot")
    assert code == 0 and "n_features=6" in out  # 3 numbers + 3 colours
    assert "one-hot encoded 'colour'" in out


def test_one_hot_refuses_a_free_text_column(tmp_path):
    rows = [[*row[:3], f"note {i % 55}", row[3]] for i, row in enumerate(_table(120))]
    path = _write(tmp_path / "t.csv", ["f0", "f1", "f2", "remark", "species"], rows)
    with pytest.raises(CompareError, match="'remark' has 55 distinct values"):
        load_csv(path, "species", one_hot=True)


@pytest.mark.parametrize("bad", ["inf", "-inf", "Infinity"])
def test_infinite_value_names_the_column(tmp_path, bad, capsys):
    rows = _table()
    rows[7][1] = bad
    path = _write(tmp_path / "inf.csv", HEADER, rows)
    code, _, err = _run(capsys, path)
    assert code == 2
    assert "infinite values: 'f1' (1 row, first data row 8" in err
    assert "--drop f1" in err
    # --impute fills gaps, not infinities
    code, _, err = _run(capsys, path, "--impute", "median")
    assert code == 2 and "'f1'" in err


@pytest.mark.parametrize("missing", ["", "NA", "?"])
def test_missing_value_names_the_column(tmp_path, missing):
    rows = _table()
    rows[3][2] = missing
    path = _write(tmp_path / "m.csv", HEADER, rows)
    with pytest.raises(CompareError, match="'f2' \\(1 row, first data row 4"):
        load_csv(path, "species")


def test_every_column_with_gaps_is_named_at_once_with_the_option(tmp_path, capsys):
    rows = _table()
    for row, column in [(3, 0), (5, 0), (9, 2), (11, 1)]:
        rows[row][column] = "NA"
    path = _write(tmp_path / "gaps.csv", HEADER, rows)
    code, _, err = _run(capsys, path)
    assert code == 2
    message = err.strip().splitlines()[-1]
    assert "3 feature column(s) have missing values" in message
    assert "'f0' (2 rows, first data row 4: 'NA')" in message
    assert "'f1' (1 row, first data row 12" in message
    assert "'f2' (1 row, first data row 10" in message
    assert "--impute median" in message and "--drop f0,f1,f2" in message


def test_gaps_and_text_columns_are_reported_together(tmp_path, capsys):
    rows = [
        [*row[:3], ["red", "blue"][i % 2], row[3]] for i, row in enumerate(_table())
    ]
    rows[2][0] = ""
    path = _write(tmp_path / "both.csv", ["f0", "f1", "f2", "colour", "species"], rows)
    code, _, err = _run(capsys, path)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert "--impute median" in line and "Text column 'colour'" in line
    assert "--one-hot" in line


@pytest.mark.parametrize("strategy", ["median", "mean", "most_frequent"])
def test_impute_fills_gaps_inside_every_pipeline(tmp_path, strategy, capsys):
    rows = _table(120)
    rng = np.random.default_rng(0)
    for row in rng.choice(120, size=30, replace=False):
        rows[row][int(rng.integers(3))] = "NA"
    path = _write(tmp_path / "gaps.csv", HEADER, rows)
    output = tmp_path / "out.json"
    code, out, _ = _run(capsys, path, "--impute", strategy, "--output", str(output))
    assert code == 0, out
    assert "missing values (--impute fills them): 'f0'" in out
    words = " ".join(out.split())  # the preamble is wrapped to the terminal
    assert f"Pipeline(SimpleImputer('{strategy}', add_indicator=True), " in words
    document = json.loads(output.read_text())
    assert document["metadata"]["settings"]["impute"] == strategy
    assert {row["status"] for row in document["results"]} == {"ok"}
    # the imputer is fitted inside the pipeline: on the training split only
    from sklmargin.compare import CompareSettings, build_pipeline, model_registry

    settings = CompareSettings(impute=strategy)
    pipeline = build_pipeline(model_registry()["margin:am-softmax"], settings)
    assert [name for name, _ in pipeline.steps] == ["impute", "standardscaler", "model"]
    imputer = pipeline.named_steps["impute"]
    assert imputer.strategy == strategy and imputer.add_indicator
    dataset = load_csv(path, "species", allow_missing=True)
    pipeline.fit(dataset.X_train, dataset.y_train)
    train_median = np.nanmedian(dataset.X_train, axis=0)
    if strategy == "median":
        np.testing.assert_allclose(imputer.statistics_, train_median)


def test_impute_makes_a_missing_text_value_a_category(tmp_path):
    colours = ["red", "green", "NA", "blue"]
    rows = [[*row[:3], colours[i % 4], row[3]] for i, row in enumerate(_table(80))]
    header = ["f0", "f1", "f2", "colour", "species"]
    path = _write(tmp_path / "c.csv", header, rows)
    with pytest.raises(CompareError, match="--impute makes them a category"):
        load_csv(path, "species", one_hot=True)
    dataset = load_csv(path, "species", one_hot=True, allow_missing=True)
    assert dataset.n_features == 3 + 4  # blue, green, red and <missing>


def test_nan_in_npz_data_names_the_columns_and_the_option(tmp_path, capsys):
    X, y = make_classification(n_samples=80, n_features=5, random_state=0)
    X[3, 1] = X[40, 4] = np.nan
    np.savez(tmp_path / "gappy.npz", X_train=X[:60], y_train=y[:60],
             X_test=X[60:], y_test=y[60:])  # fmt: skip
    args = ["compare", "--data", str(tmp_path), *FAST]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "gappy: 2 feature column(s) have missing values (NaN): columns 1, 4" in err
    assert "--impute median" in err
    assert main([*args, "--impute", "mean"]) == 0


def test_header_only_file_says_no_data_rows(tmp_path, capsys):
    path = tmp_path / "h.csv"
    path.write_text("f0,f1,species\n")
    code, _, err = _run(capsys, path)
    assert code == 2 and "no data rows" in err and "two classes" not in err
    path.write_text("")
    code, _, err = _run(capsys, path)
    assert code == 2 and "empty" in err


def test_continuous_target_looks_like_regression(tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = [[f"{a:.3f}", f"{3 * a + rng.normal():.3f}"] for a in rng.normal(size=84)]
    path = _write(tmp_path / "price.csv", ["size", "price"], rows)
    code, _, err = _run(capsys, path, target="price")
    assert code == 2
    assert "84 distinct non-integer values" in err and "regression" in err


def test_integer_and_string_labels(tmp_path):
    rows = [[*row[:3], 1 if row[3] == "cat" else 2] for row in _table()]
    dataset = load_csv(_write(tmp_path / "i.csv", HEADER, rows), "species")
    assert set(np.unique(dataset.y_train)) == {1, 2}
    dataset = load_csv(_write(tmp_path / "s.csv", HEADER, _table()), "species")
    assert set(np.unique(dataset.y_train)) == {"cat", "dog"}


def test_ragged_row_and_unknown_target(tmp_path, capsys):
    rows = _table()
    rows[4] = rows[4][:3]
    path = _write(tmp_path / "r.csv", HEADER, rows)
    code, _, err = _run(capsys, path)
    assert code == 2 and "data row 5 has 3 fields, the header 4" in err
    path = _write(tmp_path / "ok.csv", HEADER, _table())
    code, _, err = _run(capsys, path, target="kind")
    assert code == 2 and "--target: no column 'kind'" in err and "'species'" in err


def test_csv_options_need_csv(capsys):
    for option in (["--drop", "a"], ["--keep", "a"], ["--one-hot"]):
        assert main(["compare", *option, *FAST]) == 2
        assert f"{option[0]} only applies to --csv" in capsys.readouterr().err


def test_decimal_commas_are_read_as_numbers_with_a_note(tmp_path, capsys):
    table = _table()
    rows = [[cell.replace(".", ",") for cell in row] for row in table]
    rows[3][1] = "NA"  # a missing value does not stop the detection
    rows[4][1] = "7"  # nor does an integer without a comma
    path = _write(tmp_path / "eu.csv", HEADER, rows, ";")
    with pytest.raises(CompareError, match="missing values: 'f1'"):
        load_csv(path, "species")
    rows[3][1] = "0,5"
    path = _write(tmp_path / "eu.csv", HEADER, rows, ";")
    dataset = load_csv(path, "species", test_size=0.5, random_state=0)
    assert dataset.n_features == 3  # no column dropped as "a row ID"
    notes = " ".join(dataset.notes)
    assert "decimal commas read as decimal points in 'f0', 'f1', 'f2'" in notes
    assert "dropped" not in notes
    expected = np.array([[float(cell) for cell in row[:3]] for row in table])
    expected[3, 1], expected[4, 1] = 0.5, 7.0
    X = np.vstack([dataset.X_train, dataset.X_test])
    assert sorted(map(tuple, X)) == sorted(map(tuple, expected))
    code, out, _ = _run(capsys, path)
    assert code == 0 and "n_features=3" in out and "decimal commas" in out
