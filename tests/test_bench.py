"""The benchmark subcommands: what they write, and that they refuse bad input.

Sizes are tiny; no timing is asserted (timings are the scripts' business).
"""

import json
import math

import pytest

from sklmargin import _bench
from sklmargin.__main__ import main


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
    argv = ["bench-scale", "--n", "500", "1000", "--d", "5", "--k", "3"]
    assert main([*argv, "--output", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["n"] for r in rows] == [500, 1000]
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
