"""The benchmark subcommands run and report what they claim, on tiny sizes."""

import json

from sklmargin.__main__ import main
from sklmargin._bench import objective_vs_gemm


def test_objective_vs_gemm_row():
    row = objective_vs_gemm(500, 8, 3, "float32")
    assert row["eval_ms"] > 0 and row["gemm_ms"] > 0
    assert row["ratio"] == row["eval_ms"] / row["gemm_ms"]


def test_bench_commands_write_json(tmp_path, capsys):
    out = tmp_path / "objective.json"
    assert (
        main(
            [
                "bench-objective",
                "--n",
                "300",
                "--d",
                "4",
                "--k",
                "2",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    rows = json.loads(out.read_text())
    assert {(r["dtype"], r["d"], r["k"]) for r in rows} == {
        ("float64", 4, 2),
        ("float32", 4, 2),
    }
    scale = tmp_path / "scale.json"
    assert (
        main(
            [
                "bench-scale",
                "--n",
                "500",
                "1000",
                "--d",
                "5",
                "--k",
                "3",
                "--output",
                str(scale),
            ]
        )
        == 0
    )
    rows = json.loads(scale.read_text())
    assert [r["n"] for r in rows] == [500, 1000]
    assert all(r["peak_rss_mib"] > 0 and r["fit_s"] > 0 for r in rows)
    assert "RSS before fit" in capsys.readouterr().out
