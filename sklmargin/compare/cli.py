"""Command line of ``compare``: arguments, up-front checks, the run, the output."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from ..estimators._kernel import resolve_n_components
from .clock import RunClock
from .csvfile import load_csv
from .datasets import (
    BUILTIN_DATASETS,
    Dataset,
    builtin_datasets,
    check_no_missing,
    load_npz_dir,
)
from .estimate import describe_estimate, probe_estimates, wants_estimate
from .grids import apply_grid_options
from .models import format_model_list, grid_size_note, model_registry, resolve_models
from .plot import check_plot_path, plot_results
from .progress import Progress
from .protocol import run_comparison
from .rbf import AUTO, auto_width_range, describe_gamma_bases
from .report import (
    check_output_path,
    environment_info,
    format_preamble,
    format_table,
    wrap_lines,
    write_results,
)
from .settings import CompareError, CompareSettings, format_number, split_list
from .verdict import add_verdict

#: ``--impute`` strategies (those of SimpleImputer that need no fill value).
IMPUTE_STRATEGIES = ("median", "mean", "most_frequent")

_EPILOG = """\
examples:
  sklmargin compare                                  # bundled datasets, seconds
  sklmargin compare --models list                    # the model names
  sklmargin compare --csv my.csv --target label      # your own data
  sklmargin compare --csv my.csv --target label --one-hot --drop name,notes
  sklmargin compare --tune --plot acc.png            # tuned; accuracy vs tuning time
  sklmargin compare --tune --grid 'margin:am-softmax.s=30,100,300'
  sklmargin compare --data DIR --repeats 5 --output results.json
"""


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _thread_limit(text: str) -> int | None:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value or None  # 0: no limit


def _width(text: str) -> int | str:
    """``--n-components``: a positive integer or ``auto``."""
    if text.strip().lower() == AUTO:
        return AUTO
    try:
        return _positive_int(text)
    except (ValueError, argparse.ArgumentTypeError) as exc:
        raise argparse.ArgumentTypeError(
            f"must be an integer >= 1 or 'auto', got {text}"
        ) from exc


def _width_help() -> str:
    low, high = auto_width_range()
    return (
        "feature width of kernel:* and of RBFSampler/Nystroem+LogisticRegression: "
        f"an integer, or {AUTO!r} (default): KernelMarginSoftmaxClassifier's own "
        f"n_components='auto', {low} to {high} centres growing with the training "
        "rows (its docstring gives the rule); kernel:* resolves it on the rows "
        "of each fit, the two peers take the width it gives the training split, "
        "so the timed fits are equally wide; each table states the width"
    )


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text}")
    return value


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``compare`` subcommand to a CLI's subparsers.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        From ``ArgumentParser.add_subparsers``.

    Returns
    -------
    argparse.ArgumentParser
        The subcommand's parser; its ``func`` default is :func:`run_compare`.
    """
    parser = subparsers.add_parser(
        "compare",
        help="accuracy and fit/predict time of sklmargin vs scikit-learn",
        description=(
            "Compare sklmargin's classifiers with LinearSVC, LogisticRegression,\n"
            "SVC, HistGradientBoosting and kernel approximations: test accuracy\n"
            "with its 95% Wilson interval, fit and predict time, and time ratios\n"
            "against LinearSVC and LogisticRegression measured in the same run\n"
            "('-' where either time is under 10 ms: mostly fixed cost).\n"
            "Under each table one line says whether the most accurate model is\n"
            "ahead of every other ('best here: ...') or not ('no clear winner:\n"
            "...'): an exact McNemar test against each other model on the same\n"
            "test rows, p < 0.05 each (a paired test: sharper than comparing the\n"
            "intervals). Without --data/--csv: scikit-learn's bundled digits,\n"
            "wine, breast_cancer and iris, each with a stratified split."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    data = parser.add_argument_group("data")
    source = data.add_mutually_exclusive_group()
    source.add_argument(
        "--data", metavar="DIR", help="every NAME.npz in DIR (X_train, y_train, "
        "X_test, y_test), sorted by name",
    )  # fmt: skip
    source.add_argument(
        "--csv", metavar="FILE", help="a CSV file with a header row (needs "
        "--target; delimiter sniffed)",
    )  # fmt: skip
    data.add_argument("--target", metavar="COLUMN", help="label column of --csv")
    data.add_argument(
        "--drop", metavar="COLS", help="comma-separated columns of --csv to leave out"
    )
    data.add_argument(
        "--keep", metavar="COLS", help="columns of --csv to keep although they look "
        "like row IDs (by default a column unique per row and integer, or named "
        "like 'id', is dropped with a note)",
    )  # fmt: skip
    data.add_argument(
        "--one-hot", action="store_true", help="one-hot encode the text columns "
        "of --csv (default: a text column is an error that names it)",
    )  # fmt: skip
    data.add_argument(
        "--impute", choices=IMPUTE_STRATEGIES, metavar="STRATEGY",
        help="fill missing feature values with SimpleImputer(strategy=STRATEGY, "
        "add_indicator=True) as the first step of every model's pipeline, fitted "
        "on the training split only: median, mean or most_frequent (default: "
        "missing values are an error naming every column that has them)",
    )  # fmt: skip
    data.add_argument(
        "--datasets", metavar="NAMES", help="comma-separated subset of the datasets "
        "(default: all; 'list' shows them)",
    )  # fmt: skip
    data.add_argument(
        "--test-size", type=_fraction, default=0.25, metavar="FRACTION",
        help="test fraction of the stratified split of --csv and the bundled "
        "datasets (default: 0.25)",
    )  # fmt: skip
    data.add_argument(
        "--random-state", type=int, default=0, metavar="SEED",
        help="seed of the splits, the CV folds and every model (default: 0)",
    )  # fmt: skip

    models = parser.add_argument_group("models")
    models.add_argument(
        "--models", metavar="NAMES", help="comma-separated model names or globs "
        "('margin:*'), or 'list' (default: the set marked * in the list)",
    )  # fmt: skip
    # One way to list the models: --models list. This older spelling still
    # works but is not advertised, so that --help shows one.
    models.add_argument("--list-models", action="store_true", help=argparse.SUPPRESS)
    models.add_argument(
        "--n-components", type=_width, default=AUTO, metavar="N|auto",
        help=_width_help(),
    )  # fmt: skip
    models.add_argument(
        "--tol", type=_positive_float, default=1e-4,
        help="tol of LogisticRegression and of sklmargin's estimators (default: 1e-4)",
    )  # fmt: skip
    models.add_argument(
        "--max-iter", type=_positive_int, default=1000, metavar="N",
        help="max_iter of LogisticRegression and of sklmargin's estimators "
        "(default: 1000)",
    )  # fmt: skip
    models.add_argument(
        "--skip", metavar="NAMES", help="comma-separated model names or globs to "
        "leave out, even LinearSVC or LogisticRegression (their time-ratio "
        "columns are then left out)",
    )  # fmt: skip
    models.add_argument(
        "--svc-max-samples", type=_positive_int, default=20000, metavar="N",
        help="skip SVC (superlinear cost) above N training samples (default: 20000)",
    )  # fmt: skip
    models.add_argument(
        "--linear-svc-max-iter", type=_positive_int, default=1000, metavar="N",
        help="max_iter of LinearSVC: caps its time on data where it does not "
        "converge (default: 1000, scikit-learn's)",
    )  # fmt: skip

    protocol = parser.add_argument_group("protocol")
    protocol.add_argument(
        "--tune", action="store_true", help="GridSearchCV (3-fold, training split "
        "only, same grid size for every model) instead of defaults",
    )  # fmt: skip
    protocol.add_argument(
        "--grid", action="append", default=[], metavar="MODEL.PARAM=VALUES",
        help="with --tune: replace one grid, e.g. 'margin:am-softmax.s=30,100,300' "
        # what gamma/scale multiplies: the report's sentence, written once
        f"or 'SVC.gamma/scale=1,4,16' ({describe_gamma_bases()}; "
        "'kernel:*.gamma=0.1,1' sets plain values); MODEL may be a glob; "
        "repeatable. Grids of different sizes are reported",
    )  # fmt: skip
    protocol.add_argument(
        "--n-jobs", type=int, default=1, metavar="N",
        help="n_jobs of GridSearchCV (default: 1)",
    )  # fmt: skip
    protocol.add_argument(
        "--threads", type=_thread_limit, default=1, metavar="N",
        help="BLAS/OpenMP threads during the run; 0 keeps the libraries' "
        "defaults (default: 1, like the single-threaded LinearSVC and SVC)",
    )  # fmt: skip
    protocol.add_argument(
        "--repeats", type=_positive_int, default=1, metavar="R",
        help="time R fits/predicts and report medians (default: 1)",
    )  # fmt: skip

    output = parser.add_argument_group("output")
    output.add_argument(
        "--output", metavar="FILE", help="write results to FILE (.json or .csv); "
        "rewritten after each model, so an interrupted run keeps what it did",
    )  # fmt: skip
    output.add_argument(
        "--plot", metavar="FILE", help="save test accuracy (95%% interval) vs fit "
        "time, or vs tuning time with --tune (.png, .pdf, .svg, ...; needs "
        "matplotlib)",
    )  # fmt: skip
    output.add_argument(
        "-q", "--quiet", action="store_true", help="no progress lines on stderr"
    )
    parser.set_defaults(func=run_compare)
    return parser


def settings_from_args(args: argparse.Namespace) -> CompareSettings:
    """Build the :class:`CompareSettings` of parsed command-line arguments."""
    return CompareSettings(
        n_components=args.n_components,
        random_state=args.random_state,
        tol=args.tol,
        max_iter=args.max_iter,
        tune=args.tune,
        n_jobs=args.n_jobs,
        repeats=args.repeats,
        svc_max_samples=args.svc_max_samples,
        linear_svc_max_iter=args.linear_svc_max_iter,
        threads=args.threads,
        impute=args.impute,
    )


def datasets_from_args(args: argparse.Namespace) -> list[Dataset]:
    """Load the datasets selected by ``--data``, ``--csv`` or the default."""
    csv_only = {
        "--target": args.target is not None,
        "--drop": args.drop is not None,
        "--keep": args.keep is not None,
        "--one-hot": args.one_hot,
    }
    for option, given in csv_only.items():
        if given and args.csv is None:
            raise CompareError(f"{option} only applies to --csv.")
    if args.csv is not None:
        if args.target is None:
            raise CompareError("--csv needs --target COLUMN (the label column).")
        if args.datasets is not None:
            raise CompareError("--datasets does not apply to --csv.")
        dataset = load_csv(
            args.csv,
            args.target,
            args.test_size,
            args.random_state,
            drop=split_list(args.drop or ""),
            keep=split_list(args.keep or ""),
            one_hot=args.one_hot,
            allow_missing=args.impute is not None,
        )
        return [dataset]
    if args.data is not None:
        datasets = load_npz_dir(args.data, args.datasets)
    else:
        datasets = builtin_datasets(args.datasets, args.test_size, args.random_state)
    if args.impute is None:
        for dataset in datasets:
            check_no_missing(dataset)
    return datasets


def _dataset_names(args: argparse.Namespace) -> list[str]:
    if args.data is not None:
        folder = Path(args.data)
        if not folder.is_dir():
            raise CompareError(f"--data: {str(folder)!r} is not a directory.")
        return sorted(path.stem for path in folder.glob("*.npz"))
    if args.csv is not None:
        return [Path(args.csv).stem]
    return list(BUILTIN_DATASETS)


def run_compare(args: argparse.Namespace, stdout: TextIO | None = None) -> int:
    """Run ``compare`` for parsed arguments; print tables; return the exit code.

    Parameters
    ----------
    args : argparse.Namespace
        From the parser built by :func:`register`.
    stdout : file-like, default=None
        Where the tables go; ``sys.stdout`` by default. Progress goes to
        ``sys.stderr`` unless ``args.quiet``.

    Returns
    -------
    int
        0 on success, 1 if a model failed on some dataset or the plot could not
        be saved, 2 for a user error (message on stderr), 130 if interrupted
        (Ctrl-C; the results of every finished model are kept in ``--output``).
    """
    out = sys.stdout if stdout is None else stdout
    results = None
    try:
        prepared = _prepare(args, out)
        if isinstance(prepared, int):
            return prepared
        datasets, specs, settings, notes = prepared
        results = _ResultFile(args, datasets, specs, settings, notes)
        return _run_and_report(args, out, datasets, specs, settings, notes, results)
    except CompareError as exc:
        print(f"sklmargin compare: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C is how people stop a long run: a clear line, not a traceback.
        kept = ""
        if results is not None and results.path is not None:
            results.finish("interrupted")
            kept = f"; {len(results.rows)} finished result(s) kept in {results.path}"
        print(f"\nsklmargin compare: interrupted{kept}", file=sys.stderr)
        return 130


def _prepare(args: argparse.Namespace, out: TextIO):
    """Check every argument and load the data: the exit code, or what to run."""
    registry = model_registry()
    if args.list_models or (args.models or "").strip().lower() == "list":
        print(format_model_list(registry), file=out)
        return 0
    if (args.datasets or "").strip().lower() == "list":
        print("\n".join(_dataset_names(args)), file=out)
        return 0
    settings = settings_from_args(args)
    # Check everything that can fail before a run that may take hours.
    if args.output is not None:
        check_output_path(args.output, (".json", ".csv"))
    if args.plot is not None:
        check_plot_path(args.plot)
    specs, notes = resolve_models(args.models, registry, args.skip)
    if args.grid:
        if not args.tune:
            raise CompareError("--grid only applies with --tune.")
        specs, grid_notes = apply_grid_options(specs, args.grid, settings)
        notes += grid_notes
    datasets = datasets_from_args(args)
    for dataset in datasets:
        notes += [f"{dataset.name}: {note}" for note in dataset.notes]
    return datasets, specs, settings, notes


class _ResultFile:
    """The rows finished so far and ``--output``, rewritten after each model.

    The file's ``metadata.status`` says whether the run is ``"running"``,
    ``"interrupted"`` or ``"complete"``, and ``metadata.models_done`` how many
    of the (dataset, model) pairs it holds.
    """

    def __init__(self, args, datasets, specs, settings, notes):
        self.path = args.output
        self.rows: list[dict[str, Any]] = []
        self.metadata = {
            "command": "sklmargin compare",
            "status": "running",
            "models_done": 0,
            "models_total": len(datasets) * len(specs),
            "arguments": {
                key: value for key, value in vars(args).items() if not callable(value)
            },
            "settings": asdict(settings),
            "models": [spec.name for spec in specs],
            "datasets": [dataset.name for dataset in datasets],
            "notes": notes,
            "grids": {spec.name: dict(spec.grid) for spec in specs}
            if args.tune
            else None,
            "grid_size_warning": grid_size_note(specs) if args.tune else None,
            "verdicts": {},
            # the feature width of each dataset's final fits (--n-components)
            "n_components": {},
            "environment": environment_info(),
        }
        self._write()  # a file from the start: even the first model's ^C keeps one

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        self._write()

    def finish(self, status: str) -> None:
        self.metadata["status"] = status
        self._write()

    def _write(self) -> None:
        self.metadata["models_done"] = len(self.rows)
        if self.path is not None:
            write_results(self.path, self.rows, self.metadata)


def _run_clock(datasets, specs, settings, stream, results) -> RunClock | None:
    """Estimate the run before it starts (stderr, metadata); None if not worth it."""
    if stream is None or not wants_estimate(datasets, settings):
        return None  # quiet (nobody would see it), or a run of seconds
    estimates, probe_time = probe_estimates(datasets, specs, settings)
    clock = RunClock(estimates)
    results.metadata["estimated_seconds"] = clock.total()
    line = describe_estimate(clock.total(), probe_time)
    print("\n".join(wrap_lines([line])), file=stream, flush=True)
    return clock


def _run_and_report(args, out, datasets, specs, settings, notes, results) -> int:
    print(format_preamble(datasets, specs, settings), file=out)
    for line in wrap_lines([f"note: {note}" for note in notes]):
        print(line, file=out)
    seen_notes: dict[str, str] = {}  # a note is printed once per run

    with_width = any(spec.uses_width for spec in specs)

    def report(dataset: Dataset, rows: list) -> None:
        width = None
        if with_width:  # the width of the final fits, stated with the table
            width = resolve_n_components(settings.n_components, dataset.n_train)
            results.metadata["n_components"][dataset.name] = width
        table = format_table(
            dataset, rows, settings.tune, seen_notes=seen_notes, n_components=width
        )
        print("\n" + table, file=out, flush=True)
        # the verdict line, full names, in the file too (saved with the next row)
        results.metadata["verdicts"][dataset.name] = add_verdict(rows)

    stream = None if args.quiet else sys.stderr
    clock = _run_clock(datasets, specs, settings, stream, results)
    progress = Progress(len(datasets) * len(specs), stream, clock=clock)
    start = time.perf_counter()
    try:
        rows = run_comparison(datasets, specs, settings, progress, report, results.add)
    finally:  # Ctrl-C included: no heartbeat after the run
        progress.close()
    results.finish("complete")
    print(f"\ndone in {format_number(time.perf_counter() - start)} s", file=out)
    if args.output is not None:
        print(f"results written to {args.output}", file=out)
    code = 0
    if args.plot is not None:
        try:
            plot_results(args.plot, rows, tuned=settings.tune)
            print(f"plot written to {args.plot}", file=out)
        except (OSError, ValueError) as exc:  # checked up front; the disk may fill
            print(f"sklmargin compare: cannot save the plot: {exc}", file=sys.stderr)
            code = 1
    failed = sorted({row["model"] for row in rows if row["status"] == "error"})
    if failed:
        print(f"sklmargin compare: failed: {', '.join(failed)}", file=sys.stderr)
        code = 1
    return code
