"""Turn the JSON of ``python -m sklmargin compare --output FILE`` into RST tables.

Used to make ``docs/benchmark_default.inc`` from a real run::

    python -m sklmargin compare --output results.json
    python docs/compare_to_rst.py results.json --date "2026-11-22 02:00 UTC" \\
        --machine "2 cores, x86_64 Linux" \\
        --command "python -m sklmargin compare --output results.json" \\
        > docs/benchmark_default.inc

One table per quantity: rows are models, columns data sets. Accuracy is the
test accuracy in percent with its 95% Wilson interval (when the JSON has it);
times are the fit time relative to LogisticRegression on the same data set in
the same run (the absolute times of one run on a shared machine mean little,
their ratios more).
"""

from __future__ import annotations

import argparse
import json
import sys


def _cell(value, fmt):
    if value is None:
        return "--"
    if isinstance(value, tuple):  # (accuracy, low, high) in percent
        return f"{value[0]:.1f} ({value[1]:.1f}-{value[2]:.1f})"
    return format(value, fmt)


def list_table(title, models, datasets, values, fmt):
    """Return an RST list-table with one row per model, one column per data set."""
    lines = [f".. list-table:: {title}", "   :header-rows: 1", ""]
    lines.append("   * - model")
    lines.extend(f"     - {name}" for name in datasets)
    for model in models:
        lines.append(f"   * - ``{model}``")
        lines.extend(
            f"     - {_cell(values.get((model, name)), fmt)}" for name in datasets
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="JSON written by `sklmargin compare`")
    parser.add_argument("--date", required=True, help="when the run was made")
    parser.add_argument("--machine", required=True, help="what it ran on")
    parser.add_argument("--command", help="the command line that made the run")
    parser.add_argument("--code", help="which sklmargin (version, commit)")
    args = parser.parse_args(argv)

    with open(args.results) as handle:
        data = json.load(handle)
    metadata, rows = data["metadata"], data["results"]
    env = metadata["environment"]
    datasets = metadata["datasets"]
    models = metadata["models"]
    accuracy, fit_ratio, shapes = {}, {}, {}
    for row in rows:
        if row["status"] != "ok":
            continue
        key = (row["model"], row["dataset"])
        accuracy[key] = 100 * row["accuracy"]
        if row.get("accuracy_ci_low") is not None:
            accuracy[key] = (
                accuracy[key],
                100 * row["accuracy_ci_low"],
                100 * row["accuracy_ci_high"],
            )
        fit_ratio[key] = row.get("fit_ratio_vs_LogisticRegression")
        shapes[row["dataset"]] = (
            row["n_train"],
            row["n_test"],
            row["n_features"],
            row["n_classes"],
        )

    settings = metadata["settings"]
    widths = metadata.get("n_components") or {}  # per data set, "auto" resolved
    width = str(settings["n_components"])
    if widths and settings["n_components"] == "auto":
        width += " (" + ", ".join(f"{name} {n}" for name, n in widths.items()) + ")"
    out = [
        f"- date: {args.date}",
        f"- machine: {args.machine}, {settings['threads']} BLAS thread(s)",
        f"- command: ``{args.command or metadata['command']}``",
        *([f"- code: {args.code}"] if args.code else []),
        f"- versions: Python {env['python']}, NumPy {env['numpy']}, "
        f"SciPy {env['scipy']}, scikit-learn {env['scikit-learn']}",
        f"- settings: tol={settings['tol']}, max_iter={settings['max_iter']}, "
        f"n_components={width}, "
        f"random_state={settings['random_state']}, "
        f"tuning {'on' if settings['tune'] else 'off'}, "
        f"{settings['repeats']} timing run(s)",
        "- data (train / test rows, features, classes): "
        + "; ".join(
            f"{name} {n_train} / {n_test}, {d}, {k}"
            for name, (n_train, n_test, d, k) in shapes.items()
        ),
        "",
        list_table(
            "Test accuracy (%), with its 95% Wilson interval where recorded",
            models,
            datasets,
            accuracy,
            ".2f",
        ),
        list_table(
            "Fit time / LogisticRegression's fit time (same data, same run)",
            models,
            datasets,
            fit_ratio,
            ".2g",
        ),
    ]
    sys.stdout.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
