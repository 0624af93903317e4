"""The benchmark tools: objective_scaling.py's output and usage errors, the
helpers of _common.py, fuzz.py's --array-api check.

Sizes are tiny; no timing is asserted (timings are the scripts' business).
"""

import json
import math

import numpy as np
import pytest


def _benchmark_script(name):
    """A script of ``benchmarks/``, imported the way the scripts import it."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_bench = _benchmark_script("objective_scaling")
main = _bench.main


def test_objective_json_rows_have_the_documented_fields(tmp_path, capsys):
    out = tmp_path / "objective.json"
    argv = ["bench-objective", "--n", "300", "--d", "4", "7", "--k", "2"]
    assert main([*argv, "--loss", "arcface", "--output", str(out)]) == 0
    rows = json.loads(out.read_text())
    # one row per dtype x d x k, each with exactly the documented fields
    assert len(rows) == 2 * 2 * 1
    assert all(tuple(row) == _bench.OBJECTIVE_FIELDS for row in rows)
    assert {(r["dtype"], r["d"], r["k"]) for r in rows} == {
        (dtype, d, 2) for dtype in ("float64", "float32") for d in (4, 7)
    }
    assert {r["loss"] for r in rows} == {"arcface"}
    assert all(math.isfinite(r["ratio"]) and r["ratio"] > 0 for r in rows)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == len(rows) and all("ratio" in line for line in printed)


def test_scale_json_rows_have_the_documented_fields(tmp_path, capsys):
    out = tmp_path / "scale.json"
    argv = ["bench-scale", "--n", "800", "--d", "5", "--k", "3"]
    assert main([*argv, "--output", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["n"] for r in rows] == [800]  # one process per size
    for row in rows:
        assert tuple(row) == _bench.SCALE_FIELDS
        assert (row["d"], row["k"], row["dtype"]) == (5, 3, "float32")
        # 5 float32 columns: the data's size is known exactly
        assert row["data_mib"] == pytest.approx(row["n"] * 5 * 4 / 2**20)
        assert 0 <= row["train_accuracy"] <= 1 and row["n_iter"] >= 1
        assert row["peak_rss_mib"] >= row["rss_before_fit_mib"] > 0
    assert "RSS before fit" in capsys.readouterr().out


def test_peak_memory_is_unavailable_without_resource(monkeypatch):
    """Windows has no ``resource`` module: the row says so instead of failing."""
    monkeypatch.setattr(_bench, "resource", None)
    row = _bench.fit_scaling(200, d=3, k=2)
    assert row["peak_rss_mib"] is None and row["rss_before_fit_mib"] is None
    assert _bench._mib(None) == "unavailable"


@pytest.mark.parametrize(
    "argv",
    [
        ["bench-objective", "--n", "0"],
        ["bench-objective", "--k", "1"],
        ["bench-objective", "--d", "-3"],
        ["bench-objective", "--loss", "hinge"],
        ["bench-objective", "--threads", "-1"],
        ["bench-objective", "--output", "/no/such/dir/rows.json"],
        ["bench-scale", "--n", "100", "0"],
        ["bench-scale", "--dtype", "float16"],
    ],
)
def test_bad_arguments_are_usage_errors(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error" in err and "Traceback" not in err


def _benchmarks_common():
    return _benchmark_script("_common")


def test_benchmark_helper_ranks_failures_last_and_shares_ties():
    common = _benchmarks_common()
    acc = np.array([[0.9, 0.5], [np.nan, 0.7], [0.9, 0.6]])
    ranks = common.rank_columns(acc)
    assert ranks.tolist() == [[1.5, 3.0], [3.0, 1.0], [1.5, 2.0]]
    assert common.pct(0.9123) == "91.2" and common.pct(np.nan) == "fail"


def test_benchmark_helper_expected_calibration_error_against_a_loop():
    common = _benchmarks_common()
    rng = np.random.default_rng(0)
    proba = rng.dirichlet(np.ones(3), size=500)
    y = rng.integers(0, 3, 500)
    n_bins = 15
    conf, pred = proba.max(axis=1), proba.argmax(axis=1)
    total = 0.0
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        inside = (conf >= lo) & ((conf < hi) if b < n_bins - 1 else (conf <= hi))
        if inside.any():
            gap = abs(np.mean(pred[inside] == y[inside]) - conf[inside].mean())
            total += inside.mean() * gap
    assert common.expected_calibration_error(proba, y, n_bins) == pytest.approx(total)


def test_benchmark_helper_loads_data_and_says_what_is_missing(tmp_path, capsys):
    common = _benchmarks_common()
    shared = common.REPO.parent / "shared" / "data"
    expected_default = shared if shared.is_dir() else common.SHIPPED_DATA
    assert common.DEFAULT_DATA == expected_default
    X, y, n_original = common.load_training_split("iris", tmp_path, 60, seed=0)
    assert X.shape == (60, 4) and n_original == 150
    assert np.bincount(y).tolist() == [20, 20, 20]  # stratified subsample
    rng = np.random.default_rng(0)
    np.savez(
        tmp_path / "toy.npz",
        X_train=rng.normal(size=(8, 2)),
        y_train=np.arange(8) % 2,
        X_test=rng.normal(size=(4, 2)),
        y_test=np.arange(4) % 2,
    )
    assert [a.shape for a in common.load_split(tmp_path, "toy")] == [
        (8, 2),
        (8,),
        (4, 2),
        (4,),
    ]
    # compare's loader reads the file: its checks hold, as a usage error.
    np.savez(tmp_path / "bad.npz", X_train=np.zeros((3, 2)), y_train=np.zeros(3))
    with pytest.raises(SystemExit, match="lacks X_test, y_test"):
        common.load_split(tmp_path, "bad")
    # A project set missing from --data comes from the shipped folder ...
    X, y, n_original = common.load_training_split("letter", tmp_path, 100, 0)
    assert X.shape == (100, 16) and n_original == 15000
    assert "using the shipped" in capsys.readouterr().err
    # ... except usps, which is not shipped: the message says how to get it,
    # and a default list of sets leaves it out with that note.
    with pytest.raises(SystemExit, match="usps.npz is not in .* not shipped"):
        common.load_split(tmp_path, "usps")
    assert common.available(tmp_path, ["toy", "usps", "vowel"]) == ["toy", "vowel"]
    assert "leaving out usps" in capsys.readouterr().err
    # A copy whose arrays differ from the measured ones is loaded, with a warning.
    np.savez(
        tmp_path / "vowel.npz",
        X_train=np.zeros((3, 10)),
        y_train=np.zeros(3, dtype=np.int64),
        X_test=np.zeros((2, 10)),
        y_test=np.zeros(2, dtype=np.int64),
    )
    assert common.load_split(tmp_path, "vowel")[0].shape == (3, 10)
    assert "is not the vowel the results" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="not one of the project's"):
        common.load_split(tmp_path, "nonexistent")
    with common.pinned_blas(1):
        pass
    assert "pinned to 1" in capsys.readouterr().out


def test_benchmark_helper_writes_numpy_values_as_json(tmp_path):
    common = _benchmarks_common()
    path = tmp_path / "deep" / "raw.json"
    common.write_json(path, {"acc": np.array([0.5, 1.0]), "n": np.int64(3)})
    assert json.loads(path.read_text()) == {"acc": [0.5, 1.0], "n": 3}


def test_benchmark_command_line_is_one_a_user_can_run(monkeypatch):
    """Results files record ``python benchmarks/NAME.py ...``, no machine path."""
    common = _benchmarks_common()
    script = common.REPO / "benchmarks" / "embeddings.py"
    monkeypatch.setattr("sys.argv", [str(script), "--data", "DIR"])
    assert common.command_line() == "python benchmarks/embeddings.py --data DIR"


def _fuzz_tool(monkeypatch):
    """benchmarks/fuzz.py as a module; the thread variables it sets are undone."""
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "1")
    return _benchmark_script("fuzz")


_SPEC = {
    "seed": 0, "counts": [6, 6, 6], "n_features": 3, "dtype": "float64",
    "sparse": False, "magnitude": 1.0, "integer": False, "constant_columns": 0,
    "zero_rows": 0, "duplicates": 0, "string_labels": False, "outlier": False,
    "separation": 3.0, "weights": None,
}  # fmt: skip


def test_fuzz_array_api_check_compares_the_two_paths(monkeypatch):
    """NumPy itself under dispatch fits alike; a crash or a rejection is caught."""
    import os

    if os.environ.get("SCIPY_ARRAY_API") != "1":
        pytest.skip("scikit-learn's array_api_dispatch needs SCIPY_ARRAY_API=1")
    fuzz = _fuzz_tool(monkeypatch)
    case = ("MarginSoftmaxClassifier", {"loss": "arcface", "random_state": 0}, _SPEC)
    assert fuzz.check_array_api_case(*case, {"numpy": np}) == "array-api: both fitted"
    sparse_spec = {**_SPEC, "sparse": True}
    assert (
        fuzz.check_array_api_case(case[0], case[1], sparse_spec, {"numpy": np})
        == "array-api: sparse, skipped"
    )

    class Crashing:
        def asarray(self, value):
            raise RuntimeError("no device")

    class Rejecting:
        def asarray(self, value):
            raise ValueError("not this")

    with pytest.raises(fuzz.FuzzFailure, match=r"array-api-crash.*no device"):
        fuzz.check_array_api_case(*case, {"broken": Crashing()})
    with pytest.raises(fuzz.FuzzFailure, match=r"array-api-rejects.*not this"):
        fuzz.check_array_api_case(*case, {"picky": Rejecting()})
    # A case NumPy rejects (one class) and the other path fits is a failure too.
    one_class = (case[0], case[1], {**_SPEC, "counts": [6]})
    assert (
        fuzz.check_array_api_case(*one_class, {"numpy": np})
        == "array-api: both rejected"
    )

    class Relabelling:  # gives the labels a second class
        def asarray(self, value):
            value = np.asarray(value)
            return np.arange(len(value)) % 2 if value.ndim == 1 else value

    with pytest.raises(fuzz.FuzzFailure, match="array-api-accepts"):
        fuzz.check_array_api_case(*one_class, {"relabelling": Relabelling()})


def test_fuzz_tool_records_the_array_api_run(tmp_path, monkeypatch, capsys):
    import os

    if os.environ.get("SCIPY_ARRAY_API") != "1":
        pytest.skip("scikit-learn's array_api_dispatch needs SCIPY_ARRAY_API=1")
    fuzz = _fuzz_tool(monkeypatch)
    monkeypatch.setattr(fuzz, "_namespaces", lambda: {"numpy": np})
    out = tmp_path / "fuzz.json"
    argv = ["--array-api", "--examples", "4", "--seed", "1", "--out", str(out)]
    fuzz.main([*argv, "--estimator", "MarginSoftmaxClassifier"])
    record = json.loads(out.read_text())
    assert record["settings"]["array_api"] is True
    assert sum(record["outcomes"].values()) == 4
    assert all(key.startswith(("array-api:", "failure:")) for key in record["outcomes"])
    assert "4 fits" in capsys.readouterr().out


def test_the_device_benchmark_reports_its_stages_on_torch_cpu(
    tmp_path, capsys, monkeypatch
):
    from pathlib import Path

    pytest.importorskip("torch")
    # The script imports its siblings' _common, as when run from benchmarks/.
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = _benchmark_script("kernel_device")
    out = tmp_path / "device.jsonl"
    argv = ["--device", "cpu", "--sizes", "600", "--models", "40", "--warmup", "0"]
    assert bench.main([*argv, "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (row["n"], row["model"], row["n_components"]) == (600, "40", 40)
    assert 0 < row["accuracy"] <= 100 and row["evaluations"] >= row["n_iter"] >= 1
    assert row["floor_s"] == pytest.approx(
        row["two_gemm_s"] * row["evaluations"], rel=0.01, abs=2e-3
    )
    # The stages the fit went through were found in the profile.
    for stage in ("metric (pilot fits, AGOP)", "row hashes", "solve (L-BFGS)"):
        assert row["stages_s"][stage] > 0, stage
    header, printed = capsys.readouterr().out.splitlines()
    assert header.startswith("# ") and "host" in header  # when, where, versions
    assert json.loads(printed) == row


def test_every_tool_is_in_the_benchmarks_readme():
    """benchmarks/README.md's table lists exactly the tools in the folder."""
    import re
    from pathlib import Path

    folder = Path(__file__).resolve().parent.parent / "benchmarks"
    readme = (folder / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `(\w+\.py)` \|", readme, flags=re.MULTILINE))
    tools = {path.name for path in folder.glob("*.py")} - {"_common.py"}
    assert listed == tools
    for name in tools:  # each row names its command
        assert f"python benchmarks/{name}" in readme, name
