"""What every benchmark script shares: data, BLAS pinning, CV scoring, ranks, JSON.

The data are read by :mod:`sklmargin.compare.datasets` (the loader of
``python -m sklmargin compare``); this module adds what only the benchmarks
need: the default folder, the shipped sets as a fallback, and the check of a
set against the checksums the results were measured on.

The scripts in this folder import it as ``from _common import ...`` (Python puts
the script's folder first on ``sys.path``). Each script takes ``--data`` (see
:func:`add_data_argument`), pins BLAS with :func:`pinned_blas` and prints the
line of :func:`blas_line` that says so.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import scipy
import sklearn
from scipy.stats import rankdata
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

import sklmargin
from sklmargin.compare.datasets import BUILTIN_DATASETS, load_builtin, load_npz
from sklmargin.compare.settings import CompareError

REPO = Path(__file__).resolve().parent.parent
#: The sets shipped with the repository (licence and citation per set in its
#: README.md; ``manifest.json`` has the checksums of every set's arrays).
SHIPPED_DATA = REPO / "benchmarks" / "data"
#: ``../shared/data`` relative to the repository root (the development setup,
#: which also holds usps) when it exists, else the shipped sets.
DEFAULT_DATA = (
    REPO.parent / "shared" / "data"
    if (REPO.parent / "shared" / "data").is_dir()
    else SHIPPED_DATA
)

#: The ``.npz`` data sets of the benchmark protocol (benchmarks/data/README.md).
NPZ_DATASETS = (
    "letter",
    "satimage",
    "pendigits",
    "usps",
    "vowel",
    "dna",
    "a9a",
    "segment",
)
#: With scikit-learn's bundled data sets (``BUILTIN_DATASETS``, compare's), used
#: whole as a "training split".
ALL_DATASETS = NPZ_DATASETS + BUILTIN_DATASETS


# -- command line and environment ------------------------------------------------
def add_data_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--data DIR`` (default ``../shared/data`` relative to the repo root)."""
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        metavar="DIR",
        help="folder of NAME.npz files (X_train, y_train, X_test, y_test); a set "
        "not found there is taken from benchmarks/data (shipped) when it is there; "
        f"default: ../shared/data if it exists, else benchmarks/data ({DEFAULT_DATA})",
    )


def command_line() -> str:
    """The command that runs this process, for reports: one a user can rerun.

    ``python`` and the script's path relative to the repository root, never
    this machine's interpreter path (a virtual environment's ``bin/python``
    means nothing on another machine).
    """
    script = Path(sys.argv[0]).resolve()
    try:
        script_text = script.relative_to(REPO).as_posix()
    except ValueError:
        script_text = sys.argv[0]
    return " ".join(["python", script_text, *sys.argv[1:]])


def now() -> str:
    """Local date and time with the zone, e.g. ``2026-11-23 14:00 UTC``."""
    return f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}"


def machine() -> str:
    """Cores, architecture and system."""
    return f"{os.cpu_count()} cores ({platform.machine()}, {platform.system()})"


def versions() -> str:
    """Package versions and the commit of the working tree."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = ""
    return (
        f"sklmargin {sklmargin.__version__} (commit {commit or '?'}, working tree), "
        f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, scipy "
        f"{scipy.__version__}, Python {platform.python_version()}"
    )


def study_cells(path: str, column: str):
    """A study's JSON lines as ``(sets, names, cell)`` for its summary table.

    ``sets`` and ``names`` are the data sets and the values of ``column`` in
    the order they first appear; ``cell[(name, set)]`` is that line.
    """
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    sets = list(dict.fromkeys(r["dataset"] for r in rows))
    names = list(dict.fromkeys(r[column] for r in rows))
    return sets, names, {(r[column], r["dataset"]): r for r in rows}


def summarised_or_started(args: argparse.Namespace, summary: Callable) -> bool:
    """Print ``--summary FILE``'s tables (True), or a run's header line (False)."""
    if args.summary:
        summary(args.summary)
        return True
    print(f"# {now()}; {machine()}; {versions()}", flush=True)
    return False


def blas_line(threads: int | None) -> str:
    """The line every script prints: how many BLAS/OpenMP threads it runs with."""
    if not threads:
        return "BLAS/OpenMP threads: library defaults (not pinned)"
    return (
        f"BLAS/OpenMP threads: pinned to {threads} (threadpoolctl), n_jobs=1: "
        "the machine is shared, and liblinear/libsvm are single-threaded"
    )


@contextmanager
def pinned_blas(threads: int | None, announce: bool = True):
    """Limit BLAS/OpenMP to ``threads`` (0/None: no limit) and say so on stdout."""
    if announce:
        print(blas_line(threads), flush=True)
    with threadpool_limits(threads or None):
        yield


# -- data --------------------------------------------------------------------------
def manifest() -> dict:
    """The benchmark sets' sources, licences and array checksums (by name)."""
    with open(SHIPPED_DATA / "manifest.json", encoding="utf-8") as handle:
        return json.load(handle)["datasets"]


def how_to_get(name: str) -> str:
    """What a user can do to obtain ``NAME.npz`` (for error messages)."""
    entry = manifest().get(name)
    if entry is None:
        return "it is not one of the project's benchmark sets"
    if entry["shipped"]:
        return f"the repository ships it as benchmarks/data/{entry['file']}"
    return (
        f"it is not shipped ({entry['licence']}); original: {entry['original']}; "
        f"build {entry['file']} (X_train, y_train, X_test, y_test; {entry['n_train']}"
        f" / {entry['n_test']} rows, {entry['n_features']} features) and check it "
        "with 'python benchmarks/datasets.py verify --data DIR'; see "
        "benchmarks/data/README.md"
    )


def npz_path(data_dir: Path, name: str) -> Path:
    """Path of ``NAME.npz`` in ``data_dir``, else in ``benchmarks/data``.

    Exits with a message that says how to obtain the set when it is in neither.
    """
    path = Path(data_dir) / f"{name}.npz"
    if path.is_file():
        return path
    shipped = SHIPPED_DATA / f"{name}.npz"
    if shipped.is_file():
        print(f"note: {path} not found; using the shipped {shipped}", file=sys.stderr)
        return shipped
    raise SystemExit(
        f"error: {name}.npz is not in {data_dir} (--data) nor in {SHIPPED_DATA}: "
        f"{how_to_get(name)}. Leave it out with --datasets."
    )


def available(data_dir: Path, names: Sequence[str]) -> list[str]:
    """``names`` that ``npz_path`` finds; a note on stderr for each one it does not.

    For a script's default list of sets: a fresh clone has seven of the eight
    (usps is not shipped), and the run goes on without the missing ones.
    """
    found = []
    for name in names:
        if (Path(data_dir) / f"{name}.npz").is_file() or (
            SHIPPED_DATA / f"{name}.npz"
        ).is_file():
            found.append(name)
        else:
            print(f"note: leaving out {name}: {how_to_get(name)}", file=sys.stderr)
    return found


def array_sha256(array: np.ndarray) -> str:
    """SHA-256 of an array's bytes in C order (what ``manifest.json`` records)."""
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def differences(name: str, arrays: dict) -> list[str]:
    """Which of ``arrays`` differ from the ones the results were measured on."""
    entry = manifest().get(name)
    if entry is None:
        return []
    problems = []
    for key, expected in entry["arrays"].items():
        array = arrays.get(key)
        if array is None:
            problems.append(f"{key} missing")
        elif (array.dtype.str, list(array.shape)) != (
            expected["dtype"],
            expected["shape"],
        ):
            problems.append(
                f"{key} is {array.dtype.str} {list(array.shape)}, expected "
                f"{expected['dtype']} {expected['shape']}"
            )
        elif array_sha256(array) != expected["sha256"]:
            problems.append(f"{key} has other values (SHA-256 differs)")
    return problems


def load_split(data_dir: Path, name: str):
    """``X_train, y_train, X_test, y_test`` of ``NAME.npz`` (no pickles allowed).

    A set of the project whose arrays differ from those the results files were
    measured on (``benchmarks/data/manifest.json``) gets a warning on stderr.
    """
    path = npz_path(data_dir, name)
    dataset = _read_npz(name, path)
    keys = ("X_train", "y_train", "X_test", "y_test")
    arrays = {key: getattr(dataset, key) for key in keys}
    problems = differences(name, arrays)
    if problems:
        print(
            f"warning: {path} is not the {name} the results in benchmarks/ were "
            f"measured on: {'; '.join(problems)}",
            file=sys.stderr,
        )
    return tuple(arrays[key] for key in keys)


def generated_split(n: int, dtype=np.float32, flip_y=0.01):
    """The kernel scale benchmarks' rows: ``X_train, y_train, X_test, y_test``.

    ``make_classification(n_samples=n + 10000, n_features=50,
    n_informative=30, n_classes=10, random_state=0)``: the first ``n`` rows
    train, the last 10,000 test, standardised on the training rows (in
    float64), then cast to ``dtype`` (float32 by default, as the device runs).
    ``flip_y`` is the generator's share of randomly relabelled rows (its
    default, 0.01, in every benchmark unless a study varies it).
    """
    X, y = make_classification(
        n_samples=n + 10_000, n_features=50, n_informative=30, n_classes=10,
        random_state=0, flip_y=flip_y,
    )  # fmt: skip
    X = StandardScaler().fit(X[:n]).transform(X).astype(dtype)
    return X[:n], y[:n], X[n:], y[n:]


def device_timed(call: Callable, torch=None, device="cpu"):
    """``(result, wall s, CPU s)`` of ``call()``, a cuda queue drained on both ends.

    Device work is queued asynchronously: without the drains a cuda fit's
    clock stops before its last kernels ran (and starts while the previous
    call's still run). ``torch`` None or a host ``device``: no drain.
    """
    cuda = torch is not None and str(device).startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    if cuda:
        torch.cuda.synchronize()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def _read_npz(name: str, path: Path):
    """compare's :func:`~sklmargin.compare.datasets.load_npz`; errors exit."""
    try:
        return load_npz(name, path)
    except CompareError as exc:
        raise SystemExit(f"error: {exc}") from exc


def load_training_split(name: str, data_dir: Path, max_rows: int, seed: int):
    """Return the training split ``(X, y, n_original)`` of one data set.

    Parameters
    ----------
    name : str
        One of :data:`ALL_DATASETS` (or any ``NAME.npz`` in ``data_dir``).
    data_dir : Path
        Folder of the ``.npz`` files; the test split is never used.
    max_rows : int
        Training splits with more rows are subsampled (stratified, ``seed``).
    seed : int
        Seed of the subsample.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    n_original : int
        Rows before subsampling.
    """
    if name in BUILTIN_DATASETS:
        X, y = load_builtin(name)
    else:
        dataset = _read_npz(name, npz_path(data_dir, name))
        X, y = dataset.X_train, dataset.y_train
    n_original = len(y)
    if n_original > max_rows:
        X, _, y, _ = train_test_split(
            X, y, train_size=max_rows, stratify=y, random_state=seed
        )
    return np.asarray(X, dtype=np.float64), np.asarray(y), n_original


# -- cross-validation and ranking ---------------------------------------------------
def cv_scores(
    make_model: Callable[[], object],
    X: np.ndarray,
    y: np.ndarray,
    folds: Sequence,
    inspect: Callable[[object, dict], None] | None = None,
) -> dict:
    """Fit and score one model on every fold; a failed fit is a result, not a crash.

    Parameters
    ----------
    make_model : callable
        Returns a fresh (unfitted) model for each fold.
    X, y : ndarray
        The data the folds index.
    folds : sequence of (train, test) index arrays
    inspect : callable, default=None
        ``inspect(fitted_model, record)`` after each successful fit, to add
        script-specific fields (iterations, the scale a rule chose, ...).

    Returns
    -------
    dict
        ``acc`` (fold accuracies, NaN where the fit failed), ``fit_time``
        (seconds per fold), ``n_iter``, ``warnings`` (count), ``warning_kinds``
        (category names) and ``errors`` (messages), plus what ``inspect`` adds.
    """
    record = {
        "acc": [],
        "fit_time": [],
        "n_iter": [],
        "warnings": 0,
        "warning_kinds": [],
        "errors": [],
    }
    for train, test in folds:
        model = make_model()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            try:
                model.fit(X[train], y[train])
            except Exception as exc:  # a failed fit is a result
                record["fit_time"].append(time.perf_counter() - start)
                record["acc"].append(math.nan)
                record["errors"].append(f"{type(exc).__name__}: {exc}")
                continue
            record["fit_time"].append(time.perf_counter() - start)
            record["acc"].append(float(model.score(X[test], y[test])))
        record["warnings"] += len(caught)
        for item in caught:
            kind = item.category.__name__
            if kind not in record["warning_kinds"]:
                record["warning_kinds"].append(kind)
        if inspect is not None:
            inspect(model, record)
    return record


def rank_columns(acc: np.ndarray) -> np.ndarray:
    """Rank the rows of ``acc`` (settings x data sets) within each column.

    Rank 1 is the best accuracy of a data set, ties share the average rank and
    a failed fit (NaN) ranks last.
    """
    acc = np.asarray(acc, dtype=float)
    return np.column_stack(
        [
            rankdata(-np.nan_to_num(acc[:, j], nan=-np.inf), method="average")
            for j in range(acc.shape[1])
        ]
    )


def pct(value: float) -> str:
    """Accuracy as a percentage with one decimal ("fail" for NaN)."""
    return "fail" if not np.isfinite(value) else f"{100 * value:.1f}"


# -- JSON ------------------------------------------------------------------------
def jsonable(obj):
    """Convert numpy scalars and arrays (nested in dicts/lists) for ``json.dump``."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def write_json(path: Path, obj, indent: int | None = 1) -> None:
    """Write ``obj`` as JSON (numpy values converted), creating the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(jsonable(obj), indent=indent) + "\n", encoding="utf-8")


def logits_from_decision(decision):
    """Turn a ``decision_function`` output into an (n_samples, n_classes) array.

    For two classes scikit-learn's convention is the 1-D difference
    ``z_1 - z_0``; ``[0, z_1 - z_0]`` has the same softmax.
    """
    decision = np.asarray(decision)
    if decision.ndim == 1:
        return np.column_stack([np.zeros_like(decision), decision])
    return decision


def class_logits(clf, X):
    """A fitted sklmargin classifier's margin-free logits, (n_samples, n_classes).

    Its ``decision_function`` without the two-class difference (the logits
    themselves, not only their softmax).
    """
    X, xp, _, pairs = clf._fitted_logits(X, "decision_function")
    return clf._combined_logits(pairs, "decision_function", xp)


def expected_calibration_error(proba, y_encoded, n_bins=15, sample_weight=None):
    r"""Compute the expected calibration error of the top-class confidence.

    Equal-width bins of the predicted top-class probability on [0, 1];

    .. math::

        \mathrm{ECE} = \sum_b \frac{W_b}{W} \,
            \big|\mathrm{acc}_b - \mathrm{conf}_b\big|

    with weighted bin mass :math:`W_b`, accuracy and mean confidence.

    Parameters
    ----------
    proba : ndarray of shape (n_samples, n_classes)
    y_encoded : ndarray of shape (n_samples,)
        Column index of each sample's true class.
    n_bins : int, default=15
    sample_weight : ndarray of shape (n_samples,), default=None

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> proba = np.array([[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]])
    >>> round(expected_calibration_error(proba, np.array([0, 1, 1, 1])), 3)
    0.3
    """
    proba = np.asarray(proba, dtype=np.float64)
    weights = np.ones(proba.shape[0]) if sample_weight is None else sample_weight
    weights = np.asarray(weights, dtype=np.float64)
    confidence = proba.max(axis=1)
    correct = (proba.argmax(axis=1) == np.asarray(y_encoded)).astype(float)
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    hits = np.bincount(bins, weights * correct, minlength=n_bins)
    conf = np.bincount(bins, weights * confidence, minlength=n_bins)
    return float(np.abs(hits - conf).sum() / weights.sum())
