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
from .rbf import AUTO, describe_gamma_bases
from .settings import ROW_FIELDS, CompareError, CompareSettings, format_number, plain
from .verdict import add_verdict

_SHORT_REFERENCE_NAMES = {"LinearSVC": "LSVC", "LogisticRegression": "LR"}

#: Time ratios of fits or predicts faster than this (seconds, either side) are
#: not printed ("-"): such a call is mostly fixed cost that does not grow with
#: the data (input validation, the pipeline, Python calls). The fixed cost of
#: a fit on a few rows is a few milliseconds (the benchmarks page, "Fixed cost
#: of a fit"), so from 10 ms on it is at most about a third of the time. The
#: times themselves are printed, and every ratio is in ``--output``.
MIN_RATIO_TIME = 0.010

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


def _ratio(row: Mapping[str, Any], kind: str, reference: Mapping | None) -> str:
    """Return a time ratio for the table: "-" when either time is under the floor."""
    if reference is None:
        return "-"
    value = row.get(f"{kind}_ratio_vs_{reference['model']}")
    if value is None:
        return "-"
    if min(row[f"{kind}_time"], reference[f"{kind}_time"]) < MIN_RATIO_TIME:
        return "-"
    return format_number(value)


def _table_cells(rows, tuned, references, short_names, params_in_table):
    """Header, optional column groups (least needed first) and cells."""
    header = ["model", "acc %", "95% CI"]
    if tuned:
        header += ["cv acc %", "tune s"]
    header += ["fit s", "pred s"]
    start = len(header)
    header += [f"fit/{_SHORT_REFERENCE_NAMES[ref]}" for ref in references]
    header += [f"pred/{_SHORT_REFERENCE_NAMES[ref]}" for ref in references]
    middle = start + len(references)
    groups = [list(range(middle, len(header))), list(range(start, middle))]
    if tuned and params_in_table:
        header.append("best params")
    by_model = {row["model"]: row for row in rows if row["status"] == "ok"}
    lines = []
    for row in rows:
        ok = row["status"] == "ok"
        cells = [
            short_model_name(row["model"]) if short_names else row["model"],
            _format_percent(row["accuracy"]) if ok else row["status"],
            _format_interval(row),
        ]
        if tuned:
            cells += [
                _format_percent(row["cv_accuracy"]),
                format_number(row["tune_time"]),
            ]
        cells += [format_number(row["fit_time"]), format_number(row["predict_time"])]
        for kind in ("fit", "predict"):
            cells += [
                _ratio(row, kind, by_model.get(ref)) if ok else "-"
                for ref in references
            ]
        if tuned and params_in_table:
            cells.append(_format_params(row["best_params"]))
        lines.append(cells)
    return header, groups, lines


def _layout(rows, tuned, references, width):
    """Return the table lines that fit ``width`` and what was changed to fit.

    In this order, until the table fits: model names are shortened, the best
    parameters move to notes under the table, the predict-time ratios and then
    the fit-time ratios are left out. The table is never split in two: an
    80-column or piped output reads like a wide one.

    A ratio column with no value at all (every time under
    :data:`MIN_RATIO_TIME`) is left out first, whatever the width.

    Returns
    -------
    table : list of str
    left_out : list of str
        Headers of the columns left out to fit the width.
    empty : list of str
        Headers of the ratio columns left out for having no value.
    params_in_table : bool
        Whether the best parameters are a column.
    short_names : bool
        Whether the model names are shortened.
    """
    for short_names, params_in_table, n_dropped in (
        (False, True, 0), (True, True, 0), (True, False, 0), (True, False, 1),
        (True, False, 2),
    ):  # fmt: skip
        header, groups, lines = _table_cells(
            rows, tuned, references, short_names, params_in_table
        )
        ratios = {i for group in groups for i in group}
        empty = [i for i in sorted(ratios) if all(line[i] == "-" for line in lines)]
        dropped = [i for group in groups[:n_dropped] for i in group if i not in empty]
        keep = [i for i in range(len(header)) if i not in dropped and i not in empty]
        table = align_columns(
            [header[i] for i in keep], [[line[i] for i in keep] for line in lines]
        )
        if max(map(len, table)) <= width:
            break
    left_out = [header[i] for i in dropped]
    empty_names = [header[i] for i in empty]
    return table, left_out, empty_names, params_in_table, short_names


def format_table(
    dataset: Dataset,
    rows: Sequence[Mapping[str, Any]],
    tuned: bool,
    width: int | None = None,
    seen_notes: dict[str, str] | None = None,
    n_components: int | None = None,
) -> str:
    """Return the text block of one dataset: sizes, a table, a verdict, notes.

    The block fits ``width`` columns without splitting the table (see
    :func:`_layout`): model names are shortened (:func:`short_model_name`),
    best parameters move under the table and time-ratio columns are left out,
    with a note, as far as needed. The verdict line says whether the most
    accurate model is ahead of every other (:func:`~.verdict.add_verdict`).
    Notes are wrapped; a note shared by several models is printed once,
    naming them.

    Parameters
    ----------
    dataset : Dataset
        The dataset (for its sizes).
    rows : sequence of dict
        Its result rows (their ``p_value_vs_best`` is filled in).
    tuned : bool
        Whether to show the tuning columns (CV accuracy, tuning time, best
        parameters).
    width : int, default=None
        Line width; ``None`` for the terminal's (:func:`terminal_width`).
    seen_notes : dict, default=None
        Notes printed for earlier datasets of the run, text to dataset name;
        updated. A note printed before is only referred to, so a warning that
        every model and every dataset raises is printed once per run.
    n_components : int, default=None
        The feature width of the models that have one, on this dataset's
        training split (``--n-components`` resolved); stated in the title.

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
    table, left_out, empty, params_in_table, short = _layout(
        rows, tuned, references, width
    )
    title = (
        f"== {dataset.name}: n_train={dataset.n_train}, n_test={dataset.n_test}, "
        f"n_features={dataset.n_features}, n_classes={dataset.n_classes}"
    )
    if n_components is not None:
        title += f", n_components={n_components}"
    verdict = add_verdict(rows, short_model_name if short else str)
    notes = []
    if empty:
        notes.append(
            f"no {', '.join(empty)}: each would involve a time under "
            f"{MIN_RATIO_TIME * 1000:g} ms, mostly fixed cost (the ratios are in "
            "--output)"
        )
    if left_out:
        notes.append(
            f"left out to fit {width} columns: {', '.join(left_out)} (in --output; "
            "a wider terminal shows them)"
        )
    if tuned and not params_in_table:
        notes += [
            f"{row['model']}: best params {_format_params(row['best_params'])}"
            for row in rows
            if row["best_params"]
        ]
    notes += _grouped_notes(rows, dataset.name, seen_notes)
    wrapper = textwrap.TextWrapper(
        width=width,
        initial_indent="  * ",
        subsequent_indent="    ",
        # keep --grid 'model.param=values' hints whole, ready to copy
        break_long_words=False,
        break_on_hyphens=False,
    )
    wrapped = [line for note in notes for line in _wrap(wrapper, note)]
    verdict_lines = wrap_lines([verdict], width) if verdict else []
    return "\n".join([*textwrap.wrap(title, width), *table, *verdict_lines, *wrapped])


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


def _describe_width(n_components: int | str) -> str:
    if n_components != AUTO:
        return f"{n_components} (--n-components)"
    return (
        "'auto' (KernelMarginSoftmaxClassifier's width for the training rows, in "
        "each table's title; kernel:* resolves it per fit, CV folds included)"
    )


def format_preamble(
    datasets: Sequence[Dataset],
    specs: Sequence[ModelSpec],
    settings: CompareSettings,
    width: int | None = None,
) -> str:
    """Return the lines printed before the tables: the protocol and the legend.

    Each statement is wrapped to ``width`` columns (the terminal's by default).
    """
    n_runs = f"median of {settings.repeats} runs" if settings.repeats > 1 else "1 run"
    imputer = (
        f"SimpleImputer({settings.impute!r}, add_indicator=True), "
        if settings.impute
        else ""
    )
    tuning = "tuning: off (default hyper-parameters; --tune to tune)"
    if settings.tune:
        sizes = set(grid_sizes(specs).values())
        points = f"{sizes.pop()} grid points per model" if len(sizes) == 1 else ""
        tuning = (
            f"tuning: GridSearchCV, {settings.cv}-fold stratified CV on the "
            f"training split, {points or 'grids of different sizes'} (peers: C, "
            "SVC: C x gamma, HGB: learning_rate x max_leaf_nodes; ours: the "
            f"loss's grid, kernel:* gamma x s; {describe_gamma_bases()}); best "
            "params refitted on the whole training split, then timed"
        )
    lines = [
        f"sklmargin compare: {len(datasets)} dataset(s) x {len(specs)} model(s), "
        f"each Pipeline({imputer}StandardScaler, model) fitted on the training "
        "split, scored once on the test split",
        "acc %: test accuracy with its 95% Wilson interval; under each table, "
        "whether the most accurate model is ahead of every other (exact McNemar "
        "test on the same test rows, p < 0.05 against each)",
        f"times: seconds ({n_runs}); fit/LSVC, fit/LR, pred/LSVC, pred/LR = time "
        "/ time of LinearSVC or LogisticRegression in this run, '-' where either "
        f"is under {MIN_RATIO_TIME * 1000:g} ms (mostly fixed cost, not the "
        "algorithm); narrow tables say HGB for HistGradientBoosting, +LR for "
        "+LogisticRegression",
        f"settings: tol={settings.tol:g} (L-BFGS gradient tolerance) and "
        f"max_iter={settings.max_iter} for LogisticRegression (lbfgs) and "
        f"sklmargin; LinearSVC dual='auto', max_iter={settings.linear_svc_max_iter}"
        "; SVC scikit-learn's defaults; RBFSampler/Nystroem gamma='scale'; kernel:* "
        "KernelMarginSoftmaxClassifier's defaults (gamma='auto', learned metric); "
        f"n_components={_describe_width(settings.n_components)}; "
        f"random_state={settings.random_state}; BLAS/OpenMP "
        f"threads: {_describe_threads(settings.threads)}",
        tuning,
    ]
    if settings.tune:
        note = grid_size_note(specs)
        if note is not None:
            lines.append(f"WARNING: {note}")
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
