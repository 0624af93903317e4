"""Output of ``compare``: the text tables, JSON/CSV result files and the plot."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_info

from .datasets import Dataset
from .models import ModelSpec, grid_size_note, grid_sizes
from .settings import (
    ROW_FIELDS,
    CompareError,
    CompareSettings,
    format_number,
    plain,
)

_SHORT_REFERENCE_NAMES = {"LinearSVC": "LinSVC", "LogisticRegression": "LogReg"}


def _format_percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def _format_interval(row: Mapping[str, Any]) -> str:
    if row.get("accuracy_ci_low") is None:
        return "-"
    return f"{100 * row['accuracy_ci_low']:.1f}-{100 * row['accuracy_ci_high']:.1f}"


def _format_params(params: Mapping[str, Any] | None) -> str:
    if not params:
        return "-"
    return ", ".join(
        f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}"
        for key, value in params.items()
    )


def align_columns(header: Sequence[str], lines: Sequence[Sequence[str]]) -> list:
    """Align text cells: first column left, the others right.

    Parameters
    ----------
    header : sequence of str
        Column titles.
    lines : sequence of sequence of str
        Cells, one sequence per line.

    Returns
    -------
    list of str
        The header, a rule and the lines.
    """
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]

    def render(cells):
        parts = [cells[0].ljust(widths[0])]
        parts += [
            cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return [render(header), rule] + [render(cells) for cells in lines]


def format_table(
    dataset: Dataset, rows: Sequence[Mapping[str, Any]], tuned: bool
) -> str:
    """Return the text block of one dataset: sizes, a table, then notes.

    Parameters
    ----------
    dataset : Dataset
        The dataset (for its sizes).
    rows : sequence of dict
        Its result rows.
    tuned : bool
        Whether to show the tuning columns (CV accuracy, tuning time, best
        parameters).

    Returns
    -------
    str
        The block.
    """
    header = ["model", "acc %", "95% CI", "fit s", "predict s"]
    for kind in ("fit", "pred"):
        header += [f"{kind}/{short}" for short in _SHORT_REFERENCE_NAMES.values()]
    if tuned:
        header += ["cv acc %", "tune s", "best params"]
    lines = []
    for row in rows:
        accuracy = _format_percent(row["accuracy"]) if row["status"] == "ok" else None
        cells = [
            row["model"],
            accuracy or row["status"],
            _format_interval(row),
            format_number(row["fit_time"]),
            format_number(row["predict_time"]),
        ]
        for kind in ("fit", "predict"):
            cells += [
                format_number(row[f"{kind}_ratio_vs_{reference}"])
                for reference in _SHORT_REFERENCE_NAMES
            ]
        if tuned:
            cells += [
                _format_percent(row["cv_accuracy"]),
                format_number(row["tune_time"]),
                _format_params(row["best_params"]),
            ]
        lines.append(cells)
    title = (
        f"== {dataset.name}: n_train={dataset.n_train}, n_test={dataset.n_test}, "
        f"n_features={dataset.n_features}, n_classes={dataset.n_classes}"
    )
    notes = [f"  * {row['model']}: {note}" for row in rows for note in row["notes"]]
    return "\n".join([title, *align_columns(header, lines), *notes])


def _describe_threads(limit: int | None) -> str:
    if limit is not None:
        return f"{limit} (--threads; LinearSVC and SVC are single-threaded)"
    counts = sorted({pool["num_threads"] for pool in threadpool_info()})
    return f"library defaults ({'/'.join(map(str, counts)) or 'none found'})"


def format_preamble(
    datasets: Sequence[Dataset],
    specs: Sequence[ModelSpec],
    settings: CompareSettings,
) -> str:
    """Return the lines printed before the tables: the protocol of this run."""
    n_runs = f"median of {settings.repeats} runs" if settings.repeats > 1 else "1 run"
    lines = [
        f"sklmargin compare: {len(datasets)} dataset(s) x {len(specs)} model(s); "
        "each model is Pipeline(StandardScaler, model) fitted on the training "
        "split, scored once on the test split",
        f"times in seconds ({n_runs}); ratios = time / time of LinearSVC (LinSVC) "
        "or LogisticRegression (LogReg) on the same dataset in this run",
        f"tolerance: LogisticRegression (lbfgs) and sklmargin estimators both use "
        f"tol={settings.tol:g} (L-BFGS gradient tolerance) and "
        f"max_iter={settings.max_iter}; LinearSVC (dual='auto') and SVC use "
        "scikit-learn's defaults",
        f"kernel features: n_components={settings.n_components} for "
        "RBFSampler/Nystroem+LogisticRegression and kernel:*, RBF gamma='scale'; "
        f"random_state={settings.random_state} everywhere; "
        f"BLAS/OpenMP threads: {_describe_threads(settings.threads)}",
        "accuracy: on the test split, with its 95% confidence interval (Wilson "
        "score interval for n_test rows; overlapping intervals = no clear winner)",
    ]
    if settings.tune:
        sizes = set(grid_sizes(specs).values())
        points = f"{sizes.pop()} grid points per model" if len(sizes) == 1 else ""
        lines.append(
            f"tuning: GridSearchCV, {settings.cv}-fold stratified CV on the "
            f"training split, {points or 'grids of different sizes'} (peers: C, "
            "SVC: C x gamma, HGB: learning_rate x max_leaf_nodes; ours: the "
            "loss's grid, kernel:* gamma x s; gamma as multiples of the 'scale' "
            "value); best params refitted on the whole training split, then timed"
        )
        note = grid_size_note(specs)
        if note is not None:
            lines.append(f"WARNING: {note}")
    else:
        lines.append("tuning: off (default hyper-parameters; --tune to tune)")
    return "\n".join(lines)


def environment_info() -> dict[str, Any]:
    """Return versions and machine facts that make timings interpretable."""
    import scipy
    import sklearn

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "thread_pools": [
            {key: pool.get(key) for key in ("user_api", "internal_api", "num_threads")}
            for pool in threadpool_info()
        ],
    }


def check_output_path(
    path: str | os.PathLike, suffixes: Sequence[str], option: str = "--output"
) -> None:
    """Fail early (before a long run) if results could not be written to ``path``.

    Raises
    ------
    CompareError
        If the suffix is not one of ``suffixes`` or the folder does not exist;
        the message starts with ``option``.
    """
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise CompareError(
            f"{option}: cannot tell the format of {str(path)!r}: use one of "
            f"{', '.join(suffixes)}."
        )
    if not path.parent.is_dir():
        raise CompareError(f"{option}: folder {str(path.parent)!r} does not exist.")


def write_results(
    path: str | os.PathLike,
    rows: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """Write result rows as JSON or CSV, by the file's extension.

    JSON: ``{"metadata": ..., "results": [row, ...]}``. CSV: one line per row
    with the columns of :data:`ROW_FIELDS`; ``best_params`` as a JSON object and
    ``notes`` joined by ``" | "``.

    Parameters
    ----------
    path : path-like
        Ends in ``.json`` or ``.csv``.
    rows : sequence of dict
        From :func:`run_comparison`.
    metadata : mapping, default=None
        Settings and environment (JSON only).
    """
    path = Path(path)
    check_output_path(path, (".json", ".csv"))
    plain_rows = [plain({key: row.get(key) for key in ROW_FIELDS}) for row in rows]
    if path.suffix.lower() == ".json":
        document = {"metadata": plain(dict(metadata or {})), "results": plain_rows}
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        return
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=ROW_FIELDS)
        writer.writeheader()
        for row in plain_rows:
            writer.writerow(
                {
                    **row,
                    "best_params": json.dumps(row["best_params"])
                    if row["best_params"] is not None
                    else "",
                    "notes": " | ".join(row["notes"] or []),
                }
            )


def check_plotting() -> None:
    """Raise a :class:`CompareError` telling how to install matplotlib if missing."""
    if importlib.util.find_spec("matplotlib") is None:
        raise CompareError(
            "--plot needs matplotlib: pip install sklmargin[plot] "
            "(or pip install matplotlib)."
        )


def check_plot_path(path: str | os.PathLike) -> None:
    """Fail before the run if the plot could not be saved to ``path``.

    Raises
    ------
    CompareError
        If matplotlib is missing, the extension is not an image format
        matplotlib can write, or the folder does not exist.
    """
    check_plotting()
    from matplotlib.figure import Figure

    formats = sorted(Figure().canvas.get_supported_filetypes())
    check_output_path(path, [f".{fmt}" for fmt in formats], option="--plot")


def plot_results(
    path: str | os.PathLike, rows: Sequence[Mapping[str, Any]], tuned: bool = False
) -> None:
    """Save test accuracy (95% interval as error bars) against time, per dataset.

    The time axis (log scale) is the tuning time when ``tuned`` -- what a grid
    search costs -- else the fit time. Every point is labelled with its model;
    the legend sits below the panels, clear of titles and data.

    Parameters
    ----------
    path : path-like
        Image file; its extension picks the format (png, pdf, svg, ...).
    rows : sequence of dict
        From :func:`run_comparison`; rows that did not run are left out.
    tuned : bool, default=False
        Plot the tuning time instead of the fit time.
    """
    check_plotting()
    # Figure without pyplot: no GUI backend, no global state, safe in scripts.
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    time_key = "tune_time" if tuned else "fit_time"
    ran = [row for row in rows if row["status"] == "ok" and row.get(time_key)]
    datasets = list(dict.fromkeys(row["dataset"] for row in rows))
    models = list(dict.fromkeys(row["model"] for row in ran))
    # One colour and marker per model across all panels.
    style = {
        model: {
            "color": f"C{i % 10}",
            "marker": "o" if model.startswith(("margin:", "kernel:")) else "s",
        }
        for i, model in enumerate(models)
    }
    n_cols = min(3, max(1, len(datasets)))
    n_rows = math.ceil(len(datasets) / n_cols)
    fig = Figure(figsize=(5.2 * n_cols, 4.2 * n_rows + 1.2), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False).ravel()
    for ax, dataset in zip(axes[: len(datasets)], datasets, strict=True):
        for row in (r for r in ran if r["dataset"] == dataset):
            accuracy = 100 * row["accuracy"]
            low = 100 * (row.get("accuracy_ci_low") or row["accuracy"])
            high = 100 * (row.get("accuracy_ci_high") or row["accuracy"])
            ax.errorbar(
                row[time_key],
                accuracy,
                # clipped: rounding can put the interval a hair inside the point
                yerr=[[max(0.0, accuracy - low)], [max(0.0, high - accuracy)]],
                linestyle="none",
                markersize=6,
                capsize=2,
                elinewidth=0.8,
                alpha=0.85,
                **style[row["model"]],
            )
            ax.annotate(
                _short_model_name(row["model"]),
                (row[time_key], accuracy),
                xytext=(4, 3),
                textcoords="offset points",
                fontsize=7,
                color=style[row["model"]]["color"],
            )
        ax.set_xscale("log")
        # Ticks at 1, 2, 5 x 10^k in plain numbers: runs often span < 1 decade.
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(dataset)
        ax.set_xlabel("tuning time [s]" if tuned else "fit time [s]")
        ax.set_ylabel("test accuracy [%] (95% interval)")
        ax.grid(True, which="major", alpha=0.3)
        ax.margins(x=0.15)  # room for the labels of the right-most points
    for ax in axes[len(datasets) :]:
        ax.set_visible(False)
    handles = [
        axes[0].errorbar([], [], linestyle="none", label=model, **style[model])
        for model in models
    ]
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=min(4, max(1, len(models))),
        fontsize="small",
        frameon=False,
    )
    what = "grid-search time" if tuned else "fit time"
    fig.suptitle(
        f"test accuracy vs {what} (squares: scikit-learn, circles: sklmargin; "
        "bars: Wilson 95% interval)"
    )
    fig.savefig(path, dpi=120)


def _short_model_name(model: str) -> str:
    """Point labels: shorter than the legend's names, still unambiguous."""
    return (
        model.replace("+LogisticRegression", "+LR")
        .replace("LogisticRegression", "LogReg")
        .replace("HistGradientBoosting", "HGB")
    )
