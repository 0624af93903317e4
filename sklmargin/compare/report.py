"""Output of ``compare``: the text tables, JSON/CSV result files and the plot."""

from __future__ import annotations

import csv
import json
import os
import platform
import re
import shutil
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_info

from .datasets import Dataset
from .models import ModelSpec, grid_size_note, grid_sizes
from .settings import ROW_FIELDS, CompareError, CompareSettings, format_number, plain

_SHORT_REFERENCE_NAMES = {"LinearSVC": "LinSVC", "LogisticRegression": "LogReg"}

#: Line width when the output is not a terminal.
DEFAULT_WIDTH = 100

#: How :func:`short_model_name` shortens, in order.
_SHORT_NAME_PARTS = (
    ("+LogisticRegression", "+LR"),
    ("LogisticRegression", "LogReg"),
    ("HistGradientBoosting", "HGB"),
)


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


def terminal_width() -> int:
    """Columns of the terminal (``COLUMNS`` first); 100 when there is none."""
    return max(60, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def short_model_name(model: str) -> str:
    """Return a model's short name for tables and point labels (never ambiguous)."""
    for long, short in _SHORT_NAME_PARTS:
        model = model.replace(long, short)
    return model


def _fit_columns(
    header: Sequence[str],
    lines: Sequence[Sequence[str]],
    groups: Sequence[Sequence[int]],
    width: int,
) -> list[str]:
    """Align the columns; split them into blocks of whole groups if too wide.

    Every block repeats the first column (the model). A group (e.g. the two
    fit ratios) stays together unless it alone is wider than ``width``.
    """
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    blocks: list[list[int]] = [[0]]
    used = widths[0]
    for group in groups:
        extra = sum(2 + widths[i] for i in group)
        if len(blocks[-1]) > 1 and used + extra > width:
            blocks.append([0])
            used = widths[0]
        for i in group:  # a group wider than a line is split column by column
            if len(blocks[-1]) > 1 and used + 2 + widths[i] > width:
                blocks.append([0])
                used = widths[0]
            blocks[-1].append(i)
            used += 2 + widths[i]
    text: list[str] = []
    for block in blocks:
        if text:
            text.append("")
        text += align_columns(
            [header[i] for i in block], [[line[i] for i in block] for line in lines]
        )
    return text


def _table_cells(rows, tuned, references, short_names):
    header = ["model", "acc %", "95% CI", "fit s", "predict s"]
    groups = [[1, 2], [3, 4]]
    for kind in ("fit", "pred"):
        groups.append(list(range(len(header), len(header) + len(references))))
        header += [f"{kind}/{_SHORT_REFERENCE_NAMES[ref]}" for ref in references]
    if tuned:
        groups += [[len(header), len(header) + 1], [len(header) + 2]]
        header += ["cv acc %", "tune s", "best params"]
    lines = []
    for row in rows:
        accuracy = _format_percent(row["accuracy"]) if row["status"] == "ok" else None
        cells = [
            short_model_name(row["model"]) if short_names else row["model"],
            accuracy or row["status"],
            _format_interval(row),
            format_number(row["fit_time"]),
            format_number(row["predict_time"]),
        ]
        for kind in ("fit", "predict"):
            cells += [
                format_number(row[f"{kind}_ratio_vs_{reference}"])
                for reference in references
            ]
        if tuned:
            cells += [
                _format_percent(row["cv_accuracy"]),
                format_number(row["tune_time"]),
                _format_params(row["best_params"]),
            ]
        lines.append(cells)
    return header, groups, lines


def format_table(
    dataset: Dataset,
    rows: Sequence[Mapping[str, Any]],
    tuned: bool,
    width: int | None = None,
    seen_notes: dict[str, str] | None = None,
) -> str:
    """Return the text block of one dataset: sizes, a table, then notes.

    The block fits ``width`` columns: model names are shortened
    (:func:`short_model_name`) if the full ones do not fit, then the columns
    are split into several tables, each starting with the model; notes are
    wrapped. A note shared by several models is printed once, naming them.

    Parameters
    ----------
    dataset : Dataset
        The dataset (for its sizes).
    rows : sequence of dict
        Its result rows.
    tuned : bool
        Whether to show the tuning columns (CV accuracy, tuning time, best
        parameters).
    width : int, default=None
        Line width; ``None`` for the terminal's (:func:`terminal_width`).
    seen_notes : dict, default=None
        Notes printed for earlier datasets of the run, text to dataset name;
        updated. A note printed before is only referred to, so a warning that
        every model and every dataset raises is printed once per run.

    Returns
    -------
    str
        The block.
    """
    width = terminal_width() if width is None else width
    # Time ratios against a reference that is not in the run (--skip) are
    # empty columns: left out.
    present = {row["model"] for row in rows}
    references = [ref for ref in _SHORT_REFERENCE_NAMES if ref in present]
    header, groups, lines = _table_cells(rows, tuned, references, short_names=False)
    if max(map(len, align_columns(header, lines))) > width:
        header, groups, lines = _table_cells(rows, tuned, references, short_names=True)
    table = _fit_columns(header, lines, groups, width)
    title = (
        f"== {dataset.name}: n_train={dataset.n_train}, n_test={dataset.n_test}, "
        f"n_features={dataset.n_features}, n_classes={dataset.n_classes}"
    )
    notes = _grouped_notes(rows, dataset.name, seen_notes)
    wrapper = textwrap.TextWrapper(
        width=width,
        initial_indent="  * ",
        subsequent_indent="    ",
        # keep --grid 'model.param=values' hints whole, ready to copy
        break_long_words=False,
        break_on_hyphens=False,
    )
    wrapped = [line for note in notes for line in _wrap(wrapper, note)]
    return "\n".join([*textwrap.wrap(title, width), *table, *wrapped])


def _grouped_notes(rows, dataset: str, seen: dict[str, str] | None) -> list[str]:
    """One line per distinct note, naming the models that share it."""
    models: dict[str, list[str]] = {}
    for row in rows:
        for note in row["notes"]:
            models.setdefault(note, []).append(row["model"])
    seen = {} if seen is None else seen
    lines = []
    for note, names in models.items():
        if len(names) == len(rows) > 1:
            who = f"every model ({len(names)})"
        else:
            who = ", ".join(names)
        if note in seen:  # "tuning: UserWarning (x3)", not the whole message again
            kind = ": ".join(note.split(": ")[:2])
            kind = kind if len(kind) <= 60 else kind[:57].rstrip() + "..."
            lines.append(f"{who}: the same note as on {seen[note]} ({kind})")
        else:
            seen[note] = dataset
            lines.append(f"{who}: {note}")
    return lines


def _describe_threads(limit: int | None) -> str:
    if limit is not None:
        return f"{limit} (--threads; LinearSVC and SVC are single-threaded)"
    counts = sorted({pool["num_threads"] for pool in threadpool_info()})
    return f"library defaults ({'/'.join(map(str, counts)) or 'none found'})"


def format_preamble(
    datasets: Sequence[Dataset],
    specs: Sequence[ModelSpec],
    settings: CompareSettings,
    width: int | None = None,
) -> str:
    """Return the lines printed before the tables: the protocol of this run.

    Each statement is wrapped to ``width`` columns (the terminal's by default).
    """
    n_runs = f"median of {settings.repeats} runs" if settings.repeats > 1 else "1 run"
    lines = [
        f"sklmargin compare: {len(datasets)} dataset(s) x {len(specs)} model(s); "
        "each model is Pipeline(StandardScaler, model) fitted on the training "
        "split, scored once on the test split",
        f"times in seconds ({n_runs}); ratios = time / time of LinearSVC (LinSVC) "
        "or LogisticRegression (LogReg) on the same dataset in this run; tables "
        "too wide for the terminal shorten names (HGB = HistGradientBoosting, "
        "+LR = +LogisticRegression)",
        f"tolerance: LogisticRegression (lbfgs) and sklmargin estimators both use "
        f"tol={settings.tol:g} (L-BFGS gradient tolerance) and "
        f"max_iter={settings.max_iter}; LinearSVC (dual='auto', "
        f"max_iter={settings.linear_svc_max_iter}) and SVC use scikit-learn's "
        "default tolerances",
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
    return "\n".join(wrap_lines(lines, width))


def wrap_lines(lines: Sequence[str], width: int | None = None) -> list[str]:
    """Wrap each line to ``width`` columns, continuations indented by two."""
    width = terminal_width() if width is None else width
    wrapper = textwrap.TextWrapper(
        width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
    )
    return [part for line in lines for part in _wrap(wrapper, line)]


#: An option and its value ("--keep rownum", "--grid 'm.s=1,2'"): one word
#: for the wrapper, so that a hint is never split across lines.
_OPTION_AND_VALUE = re.compile(r"(?<![\w-])(--[\w-]+) (?=\S)")


def _wrap(wrapper: textwrap.TextWrapper, text: str) -> list[str]:
    glued = _OPTION_AND_VALUE.sub(lambda match: match.group(1) + "\0", text)
    return [line.replace("\0", " ") for line in wrapper.wrap(glued)]


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
