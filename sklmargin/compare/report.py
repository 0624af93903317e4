"""Output of ``compare``: the text tables, JSON/CSV result files and the plot."""

from __future__ import annotations

import csv
import json
import os
import platform
import tempfile
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

    The file is opened for appending (and removed again if it did not exist)
    and a scratch file is created beside it, as the atomic rewrites of
    :func:`write_results` do: a read-only folder or a directory in the way is
    found now, not after hours of fitting.

    Raises
    ------
    CompareError
        If the suffix is not one of ``suffixes``, the folder does not exist or
        the file cannot be written; the message starts with ``option``.
    """
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise CompareError(
            f"{option}: cannot tell the format of {str(path)!r}: use one of "
            f"{', '.join(suffixes)}."
        )
    if not path.parent.is_dir():
        raise CompareError(f"{option}: folder {str(path.parent)!r} does not exist.")
    existed = path.exists()
    try:
        with open(path, "a", encoding="utf-8"):
            pass
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}."):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise CompareError(f"{option}: cannot write {str(path)!r}: {reason}.") from exc
    finally:
        if not existed and path.is_file():
            path.unlink()


def _replace_atomically(path: Path, write) -> None:
    """Write a new file beside ``path`` with ``write(handle)``, then rename it.

    A reader, or a run interrupted mid-write, sees the old file or the new one,
    never half of one.
    """
    handle = tempfile.NamedTemporaryFile(
        "w",
        dir=path.parent,
        prefix=f".{path.name}.",
        suffix=".tmp",
        delete=False,
        newline="",
        encoding="utf-8",
    )
    try:
        with handle:
            write(handle)
        # A scratch file is private (0600); the result gets the mode a plain
        # open() would have given it.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(handle.name, 0o666 & ~umask)
        os.replace(handle.name, path)
    except BaseException:  # KeyboardInterrupt too: leave no scratch file behind
        Path(handle.name).unlink(missing_ok=True)
        raise


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
    if path.suffix.lower() not in (".json", ".csv"):
        raise CompareError(f"cannot tell the format of {str(path)!r}: .json or .csv")
    plain_rows = [plain({key: row.get(key) for key in ROW_FIELDS}) for row in rows]
    if path.suffix.lower() == ".json":
        document = {"metadata": plain(dict(metadata or {})), "results": plain_rows}
        text = json.dumps(document, indent=2) + "\n"
        _replace_atomically(path, lambda handle: handle.write(text))
        return

    def write_csv(handle):
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

    _replace_atomically(path, write_csv)
