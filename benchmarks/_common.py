"""What every benchmark script shares: data, BLAS pinning, CV scoring, ranks, JSON.

The scripts in this folder import it as ``from _common import ...`` (Python puts
the script's folder first on ``sys.path``). Each script takes ``--data`` (see
:func:`add_data_argument`), pins BLAS with :func:`pinned_blas` and prints the
line of :func:`blas_line` that says so.
"""

from __future__ import annotations

import argparse
import datetime
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
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

import sklmargin

REPO = Path(__file__).resolve().parent.parent
#: ``../shared/data`` relative to the repository root: the development setup.
DEFAULT_DATA = REPO.parent / "shared" / "data"

#: The ``.npz`` data sets of the benchmark protocol (DESIGN.md section 8).
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
#: scikit-learn's bundled data sets, used whole as a "training split".
BUILTIN_DATASETS = {
    "digits": load_digits,
    "wine": load_wine,
    "breast_cancer": load_breast_cancer,
    "iris": load_iris,
}
ALL_DATASETS = NPZ_DATASETS + tuple(BUILTIN_DATASETS)


# -- command line and environment ------------------------------------------------
def add_data_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--data DIR`` (default ``../shared/data`` relative to the repo root)."""
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        metavar="DIR",
        help=f"folder of NAME.npz files (X_train, y_train, X_test, y_test); "
        f"default: ../shared/data relative to the repository root ({DEFAULT_DATA})",
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
def npz_path(data_dir: Path, name: str) -> Path:
    """Path of ``NAME.npz`` in ``data_dir``; exits with a clear message if absent."""
    path = Path(data_dir) / f"{name}.npz"
    if not path.is_file():
        raise SystemExit(
            f"error: {path} not found; point --data at the folder of the .npz data sets"
        )
    return path


def npz_names(data_dir: Path, names: Sequence[str] | None = None) -> list[str]:
    """Stems of the ``.npz`` files in ``data_dir`` (sorted), or ``names`` checked."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise SystemExit(f"error: --data {data_dir} is not a directory")
    found = sorted(path.stem for path in data_dir.glob("*.npz"))
    if names is None:
        return found
    missing = [name for name in names if name not in found]
    if missing:
        raise SystemExit(
            f"error: no {', '.join(missing)} in {data_dir}; found: {', '.join(found)}"
        )
    return list(names)


def load_split(data_dir: Path, name: str):
    """``X_train, y_train, X_test, y_test`` of ``NAME.npz`` (no pickles allowed)."""
    with np.load(npz_path(data_dir, name), allow_pickle=False) as data:
        return tuple(data[key] for key in ("X_train", "y_train", "X_test", "y_test"))


def load_training_split(name: str, data_dir: Path, max_rows: int, seed: int):
    """Return the training split ``(X, y, n_original)`` of one data set.

    Parameters
    ----------
    name : str
        One of :data:`ALL_DATASETS` (or any ``NAME.npz`` in ``data_dir``).
    data_dir : Path
        Folder of the ``.npz`` files; the test split is never loaded.
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
        X, y = BUILTIN_DATASETS[name](return_X_y=True)
    else:
        with np.load(npz_path(data_dir, name), allow_pickle=False) as data:
            X, y = data["X_train"], data["y_train"]
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
