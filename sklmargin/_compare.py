"""Compare sklmargin classifiers with scikit-learn peers: accuracy and time.

This module is the logic behind ``python -m sklmargin compare`` (the command line
lives in :mod:`sklmargin.__main__`). It follows the benchmark protocol of the
design notes (section 8):

* every model is ``Pipeline([StandardScaler(), model])`` fitted on the training
  split only; the test split is used once, to score the final fit;
* tuning, when asked for, is fair: ``GridSearchCV`` with 3-fold stratified CV on
  the training split and the same number of grid points for every model (the
  grids are :data:`PEER_GRIDS` and :data:`LOSS_GRIDS`);
* fit and predict times are medians over ``repeats`` runs, also reported as
  ratios against LinearSVC and LogisticRegression measured in the same run.

Each concern is a small function usable from Python without the command line:
data loading (:func:`builtin_datasets`, :func:`load_npz_dir`, :func:`load_csv`),
the model registry (:func:`model_registry`), tuning (:func:`tune`), timing
(:func:`time_fit_predict`), one comparison (:func:`evaluate_model`,
:func:`run_comparison`), table formatting (:func:`format_table`) and output
(:func:`write_results`, :func:`plot_results`).

Our estimators are imported lazily, inside their factories, so the peers-only
comparison works even while (or if) they cannot be imported.
"""

from __future__ import annotations

import argparse
import csv
import functools
import gc
import importlib
import importlib.util
import json
import math
import os
import platform
import re
import statistics
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.kernel_approximation import Nystroem, RBFSampler
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC
from threadpoolctl import threadpool_info, threadpool_limits

# --------------------------------------------------------------------------------
# Tuning grids (the one place to adjust them).
#
# Fairness (DESIGN.md section 8) means every model gets the same number of grid
# points, GRID_POINTS; `check_grid_sizes` enforces it. Keys are parameter names of
# the classifier itself; the registry knows where that classifier sits in a
# composite model (e.g. the LogisticRegression after an RBFSampler).
# --------------------------------------------------------------------------------

GRID_POINTS = 9

#: C values of every peer, and of our ``softmax`` (the only loss of ours with an
#: L2 penalty and neither a margin nor a useful scale): 9 points, 0.01 to 100.
C_GRID = [float(c) for c in np.logspace(-2, 2, GRID_POINTS)]

#: Grids of the scikit-learn peers, by model name.
PEER_GRIDS: dict[str, dict[str, list[float]]] = {
    "LinearSVC": {"C": C_GRID},
    "LogisticRegression": {"C": C_GRID},
    "SVC": {"C": C_GRID},
    "RBFSampler+LogisticRegression": {"C": C_GRID},
    "Nystroem+LogisticRegression": {"C": C_GRID},
}

#: Grids of our estimators, by loss; shared by ``margin:<loss>`` and
#: ``kernel:<loss>``. Each grid contains the loss's defaults (m=0.1, s=10 for the
#: cosine losses; m=2 for L-/A-Softmax), so tuning can only improve the CV score
#: over the untuned run.
LOSS_GRIDS: dict[str, dict[str, list[float]]] = {
    "softmax": {"C": C_GRID},
    # Grids centred on the measured defaults (benchmarks/results_defaults.md):
    # the scale s matters most, margins above 0.1 cost accuracy in this regime.
    # No margin: the scale s is the only knob; 5 to 80 in factors of sqrt(2).
    "normface": {"s": [float(s) for s in np.geomspace(5.0, 80.0, GRID_POINTS)]},
    "am-softmax": {"m": [0.0, 0.05, 0.1], "s": [15.0, 30.0, 60.0]},
    "arcface": {"m": [0.0, 0.05, 0.1], "s": [15.0, 30.0, 60.0]},
    # L-Softmax normalises nothing, so it has no s: its logit scale is |w||x|,
    # which the L2 penalty C bounds (DESIGN.md 3.5). Real m >= 1 is allowed.
    "l-softmax": {"m": [1.5, 2.0, 3.0], "C": [0.1, 1.0, 10.0]},
    # A-Softmax normalises W only; s multiplies its |x| scale.
    "a-softmax": {"m": [1.5, 2.0, 3.0], "s": [2.0, 8.0, 30.0]},
}

# --------------------------------------------------------------------------------
# Constants of the comparison.
# --------------------------------------------------------------------------------

#: Losses of our estimators, in the order ``--models list`` shows them.
LOSSES = ("softmax", "normface", "am-softmax", "arcface", "l-softmax", "a-softmax")

#: Every ratio is a time divided by the time of one of these, on the same
#: dataset in the same run; they are added to any model selection.
REFERENCE_MODELS = ("LinearSVC", "LogisticRegression")

DEFAULT_MODELS = (
    "LinearSVC",
    "LogisticRegression",
    "SVC",
    "RBFSampler+LogisticRegression",
    "margin:am-softmax",
    "margin:arcface",
    "margin:softmax",
    "kernel:am-softmax",
)

#: Datasets bundled with scikit-learn: the default run needs no files.
BUILTIN_DATASETS = ("digits", "wine", "breast_cancer", "iris")

#: Columns of one result row, in the order of the CSV output.
ROW_FIELDS = (
    "dataset",
    "model",
    "status",
    "accuracy",
    "fit_time",
    "predict_time",
    "fit_ratio_vs_LinearSVC",
    "fit_ratio_vs_LogisticRegression",
    "predict_ratio_vs_LinearSVC",
    "predict_ratio_vs_LogisticRegression",
    "cv_accuracy",
    "tune_time",
    "best_params",
    "n_train",
    "n_test",
    "n_features",
    "n_classes",
    "repeats",
    "notes",
)

_SHORT_REFERENCE_NAMES = {"LinearSVC": "LinSVC", "LogisticRegression": "LogReg"}


class CompareError(Exception):
    """A user error (bad argument, missing file or column): reported, not raised."""


class ModelUnavailableError(CompareError):
    """One of our estimators cannot be imported (yet)."""


# --------------------------------------------------------------------------------
# Data.
# --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    """A named train/test split.

    Parameters
    ----------
    name : str
        Name shown in the table and the output files.
    X_train, y_train, X_test, y_test : ndarray
        The split; features are float, labels of any type.
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray

    @property
    def n_train(self) -> int:
        """Number of training samples."""
        return int(self.X_train.shape[0])

    @property
    def n_test(self) -> int:
        """Number of test samples."""
        return int(self.X_test.shape[0])

    @property
    def n_features(self) -> int:
        """Number of features."""
        return int(self.X_train.shape[1])

    @property
    def n_classes(self) -> int:
        """Number of classes in the training split."""
        return int(np.unique(self.y_train).size)

    def describe(self) -> dict[str, int]:
        """Return the sizes reported with every result row."""
        return {
            "n_train": self.n_train,
            "n_test": self.n_test,
            "n_features": self.n_features,
            "n_classes": self.n_classes,
        }


def split_train_test(
    name: str, X: np.ndarray, y: np.ndarray, test_size: float, random_state: int
) -> Dataset:
    """Split ``X, y`` into a stratified train/test :class:`Dataset`.

    Parameters
    ----------
    name : str
        Dataset name.
    X : ndarray of shape (n_samples, n_features)
        Features.
    y : ndarray of shape (n_samples,)
        Labels.
    test_size : float
        Fraction of samples in the test split, in (0, 1).
    random_state : int
        Seed of the split.

    Returns
    -------
    Dataset
        The split.

    Raises
    ------
    CompareError
        If the data has fewer than two classes or a class is too small to appear
        in both splits.
    """
    if np.unique(y).size < 2:
        raise CompareError(f"{name}: the target has fewer than two classes.")
    try:
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=test_size, random_state=random_state, stratify=y
        )
    except ValueError as exc:
        raise CompareError(f"{name}: cannot make a stratified split: {exc}") from exc
    return Dataset(name, X_train, y_train, X_test, y_test)


def select_names(available: Sequence[str], requested: str | None, what: str) -> list:
    """Return the names of ``requested`` (comma-separated) found in ``available``.

    Parameters
    ----------
    available : sequence of str
        Names that exist, in the order to keep when nothing is requested.
    requested : str or None
        Comma-separated selection; ``None`` selects everything.
    what : str
        What the names are ("dataset", ...), for the error message.

    Returns
    -------
    list of str
        The selection, in the requested order, without duplicates.

    Raises
    ------
    CompareError
        If a requested name does not exist; the message lists the valid names.
    """
    if requested is None:
        return list(available)
    wanted = _split_list(requested)
    if not wanted:
        raise CompareError(f"no {what} names given.")
    unknown = [name for name in wanted if name not in available]
    if unknown:
        raise CompareError(
            f"unknown {what}(s) {', '.join(map(repr, unknown))}; "
            f"available: {', '.join(available)}."
        )
    return wanted


def builtin_datasets(
    names: str | None = None, test_size: float = 0.25, random_state: int = 0
) -> list[Dataset]:
    """Load scikit-learn's bundled datasets with a fixed stratified split.

    Parameters
    ----------
    names : str, default=None
        Comma-separated subset of :data:`BUILTIN_DATASETS`; ``None`` for all.
    test_size : float, default=0.25
        Fraction of samples in the test split.
    random_state : int, default=0
        Seed of the split.

    Returns
    -------
    list of Dataset
        One split per dataset.
    """
    from sklearn import datasets as sk_datasets

    selected = select_names(BUILTIN_DATASETS, names, "dataset")
    result = []
    for name in selected:
        X, y = getattr(sk_datasets, f"load_{name}")(return_X_y=True)
        result.append(split_train_test(name, X, y, test_size, random_state))
    return result


def load_npz_dir(directory: str | os.PathLike, names: str | None = None) -> list:
    """Load every ``NAME.npz`` in a folder, sorted by name.

    Each file holds ``X_train``, ``y_train``, ``X_test`` and ``y_test``; the split
    is used as given.

    Parameters
    ----------
    directory : path-like
        The folder.
    names : str, default=None
        Comma-separated subset of the file stems; ``None`` for all.

    Returns
    -------
    list of Dataset
        One per selected file.

    Raises
    ------
    CompareError
        If the folder does not exist, holds no ``.npz`` file, a requested name is
        missing or a file lacks one of the four arrays.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise CompareError(f"--data: {str(directory)!r} is not a directory.")
    files = {path.stem: path for path in sorted(directory.glob("*.npz"))}
    if not files:
        raise CompareError(f"--data: no .npz files in {str(directory)!r}.")
    return [
        _load_npz(name, files[name]) for name in select_names(files, names, "dataset")
    ]


def _load_npz(name: str, path: Path) -> Dataset:
    keys = ("X_train", "y_train", "X_test", "y_test")
    try:
        # allow_pickle=False: a data file must never be able to run code.
        with np.load(path, allow_pickle=False) as data:
            missing = [key for key in keys if key not in data.files]
            if missing:
                raise CompareError(
                    f"{str(path)!r} lacks {', '.join(missing)} (expected arrays: "
                    f"{', '.join(keys)})."
                )
            X_train, y_train, X_test, y_test = (data[key] for key in keys)
    except (OSError, ValueError) as exc:
        raise CompareError(f"cannot read {str(path)!r}: {exc}") from exc
    if X_train.ndim != 2 or X_test.ndim != 2 or X_train.shape[1] != X_test.shape[1]:
        raise CompareError(
            f"{str(path)!r}: X_train and X_test must be 2-D with the same number "
            f"of columns; got shapes {X_train.shape} and {X_test.shape}."
        )
    if len(y_train) != len(X_train) or len(y_test) != len(X_test):
        raise CompareError(f"{str(path)!r}: X and y lengths differ.")
    return Dataset(name, X_train, y_train.ravel(), X_test, y_test.ravel())


def load_csv(
    path: str | os.PathLike,
    target: str,
    test_size: float = 0.25,
    random_state: int = 0,
) -> Dataset:
    """Load a CSV file (header row, numeric features) and split it.

    pandas is used when it is installed; otherwise the ``csv`` module.

    Parameters
    ----------
    path : path-like
        The CSV file; its stem names the dataset.
    target : str
        Name of the label column (labels may be strings).
    test_size : float, default=0.25
        Fraction of samples in the stratified test split.
    random_state : int, default=0
        Seed of the split.

    Returns
    -------
    Dataset
        The split.

    Raises
    ------
    CompareError
        If the file or the target column is missing, a feature column is not
        numeric or has missing values (the message names the column), or the
        split is impossible.
    """
    path = Path(path)
    if not path.is_file():
        raise CompareError(f"--csv: file not found: {str(path)!r}.")
    try:
        columns = _read_csv_columns(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise CompareError(f"cannot read {str(path)!r}: {exc}") from exc
    if target not in columns:
        raise CompareError(
            f"--target: no column {target!r} in {str(path)!r}; columns: "
            f"{', '.join(map(repr, columns))}."
        )
    y = columns.pop(target)
    if not columns:
        raise CompareError(f"{str(path)!r} has no feature column besides {target!r}.")
    if _missing_mask(y).any():
        raise CompareError(f"target column {target!r} has missing values.")
    X = np.column_stack(
        [_numeric_column(name, values) for name, values in columns.items()]
    )
    return split_train_test(path.stem, X, y, test_size, random_state)


def _pandas_or_none() -> Any:
    """Return the pandas module, or None: pandas is optional at runtime."""
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _read_csv_columns(path: Path) -> dict[str, np.ndarray]:
    """Read a CSV into ``{column: values}``; pandas parses numbers, else strings."""
    pandas = _pandas_or_none()
    if pandas is not None:
        frame = pandas.read_csv(path)
        return {str(name): frame[name].to_numpy() for name in frame.columns}
    with open(path, newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.reader(handle) if row]  # skip blank lines
    if not rows:
        raise ValueError("the file is empty")
    header, body = rows[0], rows[1:]
    bad = [i + 2 for i, row in enumerate(body) if len(row) != len(header)]
    if bad:
        raise ValueError(
            f"line {bad[0]} has a different number of fields than the header"
        )
    # Values stay strings; _numeric_column converts them (and names what fails).
    return {
        name: np.array([row[j] for row in body], dtype=object)
        for j, name in enumerate(header)
    }


def _missing_mask(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind == "f":
        return np.isnan(values)
    return np.array([_is_missing(value) for value in values], dtype=bool)


def _is_missing(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip() in {"", "NA", "NaN", "nan"}
    return value is None or (isinstance(value, float) and math.isnan(value))


def _numeric_column(name: str, values: np.ndarray) -> np.ndarray:
    """Return ``values`` as floats or raise a :class:`CompareError` naming ``name``."""
    if values.dtype.kind in "biuf":
        numbers = values.astype(np.float64)
    else:
        numbers = np.empty(len(values))
        for row, value in enumerate(values):
            try:
                numbers[row] = (
                    np.nan if _missing_mask(np.array([value])) else float(value)
                )
            except (TypeError, ValueError):
                raise CompareError(
                    f"feature column {name!r} is not numeric (value {value!r} in data "
                    f"row {row + 1}); compare needs numeric features: encode or drop "
                    "that column."
                ) from None
    if np.isnan(numbers).any():
        first = int(np.flatnonzero(np.isnan(numbers))[0])
        raise CompareError(
            f"feature column {name!r} has missing values (first in data row "
            f"{first + 1}); impute or drop them first."
        )
    return numbers


# --------------------------------------------------------------------------------
# Models.
# --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompareSettings:
    """Settings shared by every model and dataset of one comparison.

    Parameters
    ----------
    n_components : int, default=2000
        Feature width of RBFSampler/Nystroem + LogisticRegression and ``kernel:*``.
    random_state : int, default=0
        Seed of every model that takes one, of the splits and of the CV folds.
    tol : float, default=1e-4
        Tolerance of LogisticRegression (lbfgs) and of our estimators (both stop
        on the L-BFGS projected-gradient norm), so their fit times compare.
    max_iter : int, default=1000
        Iteration limit of LogisticRegression and of our estimators.
    tune : bool, default=False
        Tune by ``GridSearchCV`` on the training split; else use defaults.
    cv : int, default=3
        Folds of the tuning CV.
    n_jobs : int or None, default=1
        ``n_jobs`` of ``GridSearchCV``.
    repeats : int, default=1
        Number of timed fits/predicts; times are medians.
    svc_max_samples : int, default=20000
        Models whose cost grows superlinearly with ``n_train`` (SVC) are skipped
        above this many training samples.
    threads : int or None, default=1
        Limit of the BLAS/OpenMP thread pools during the run; ``None`` keeps the
        libraries' defaults. One thread by default: LinearSVC and SVC
        (liblinear, libsvm) are single-threaded, so ratios against them compare
        like with like, and timings do not collapse when other processes
        compete for the cores (BLAS threads then wait on each other).
    """

    n_components: int = 2000
    random_state: int = 0
    tol: float = 1e-4
    max_iter: int = 1000
    tune: bool = False
    cv: int = 3
    n_jobs: int | None = 1
    repeats: int = 1
    svc_max_samples: int = 20000
    threads: int | None = 1


@dataclass(frozen=True)
class ModelSpec:
    """One entry of the model registry.

    Parameters
    ----------
    name : str
        Name used by ``--models`` and in the outputs.
    description : str
        One line for ``--models list``.
    build : callable
        ``build(settings) -> estimator``: the model without the scaler.
    grid : mapping
        Tuning grid, keyed by parameter names of the classifier.
    classifier_path : str, default=""
        Where the classifier sits in the result of ``build`` as a
        ``get_params`` prefix (``"clf__"`` inside a feature pipeline).
    superlinear : bool, default=False
        Whether the fit cost grows superlinearly with ``n_train``.
    requires : str or None, default=None
        Name of the sklmargin class the model needs (ours only).
    """

    name: str
    description: str
    build: Callable[[CompareSettings], BaseEstimator]
    grid: Mapping[str, Sequence[Any]]
    classifier_path: str = ""
    superlinear: bool = False
    requires: str | None = None

    @property
    def ours(self) -> bool:
        """Whether this is one of sklmargin's estimators."""
        return self.requires is not None

    def param_grid(self) -> dict[str, list]:
        """Return the grid with the full parameter paths of :func:`build_pipeline`."""
        return {
            f"model__{self.classifier_path}{key}": list(values)
            for key, values in self.grid.items()
        }


def grid_size(grid: Mapping[str, Sequence[Any]]) -> int:
    """Return the number of points of a ``GridSearchCV`` grid."""
    return math.prod(len(values) for values in grid.values())


def check_grid_sizes(specs: Iterable[ModelSpec]) -> int:
    """Check that every model has the same number of grid points and return it.

    Raises
    ------
    ValueError
        If the grids differ in size (tuning would not be fair).
    """
    sizes = {spec.name: grid_size(spec.grid) for spec in specs}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"tuning grids differ in size (unfair comparison): {sizes}")
    return next(iter(sizes.values()), 0)


def _logistic_regression(settings: CompareSettings) -> LogisticRegression:
    return LogisticRegression(
        tol=settings.tol, max_iter=settings.max_iter, random_state=settings.random_state
    )


def _build_linear_svc(settings: CompareSettings) -> LinearSVC:
    return LinearSVC(dual="auto", random_state=settings.random_state)


def _build_svc(settings: CompareSettings) -> SVC:
    return SVC(kernel="rbf", gamma="scale", random_state=settings.random_state)


def _build_rbf_sampler_lr(settings: CompareSettings) -> Pipeline:
    features = RBFSampler(
        gamma="scale",
        n_components=settings.n_components,
        random_state=settings.random_state,
    )
    return Pipeline([("features", features), ("clf", _logistic_regression(settings))])


def _build_nystroem_lr(settings: CompareSettings) -> Pipeline:
    # gamma=None is 1/n_features, which equals gamma="scale" after StandardScaler.
    features = Nystroem(
        kernel="rbf",
        gamma=None,
        n_components=settings.n_components,
        random_state=settings.random_state,
    )
    return Pipeline([("features", features), ("clf", _logistic_regression(settings))])


def sklmargin_class(class_name: str) -> type:
    """Import one of our estimator classes from :mod:`sklmargin`, lazily.

    Parameters
    ----------
    class_name : str
        ``"MarginSoftmaxClassifier"`` or ``"KernelMarginSoftmaxClassifier"``.

    Returns
    -------
    type
        The class.

    Raises
    ------
    ModelUnavailableError
        If the package cannot be imported or does not define the class.
    """
    try:
        package = importlib.import_module("sklmargin")
    except Exception as exc:  # a broken package must not break the peers' run
        raise ModelUnavailableError(f"import sklmargin failed: {exc!r}") from exc
    cls = getattr(package, class_name, None)
    if cls is None:
        raise ModelUnavailableError(f"sklmargin.{class_name} is not importable")
    return cls


def _build_margin(loss: str, settings: CompareSettings) -> BaseEstimator:
    cls = sklmargin_class("MarginSoftmaxClassifier")
    return cls(
        loss=loss,
        tol=settings.tol,
        max_iter=settings.max_iter,
        random_state=settings.random_state,
    )


def _build_kernel(loss: str, settings: CompareSettings) -> BaseEstimator:
    cls = sklmargin_class("KernelMarginSoftmaxClassifier")
    return cls(
        loss=loss,
        gamma="scale",
        n_components=settings.n_components,
        tol=settings.tol,
        max_iter=settings.max_iter,
        random_state=settings.random_state,
    )


def model_registry() -> dict[str, ModelSpec]:
    """Return every model ``compare`` knows, by name.

    Peers are scikit-learn estimators; ours are ``margin:<loss>``
    (``MarginSoftmaxClassifier``) and ``kernel:<loss>``
    (``KernelMarginSoftmaxClassifier``) for every loss of :data:`LOSSES`.

    Returns
    -------
    dict of str to ModelSpec
        The registry, peers first.
    """
    specs = [
        ModelSpec(
            "LinearSVC",
            'LinearSVC(dual="auto"): linear, squared hinge, one-vs-rest',
            _build_linear_svc,
            PEER_GRIDS["LinearSVC"],
        ),
        ModelSpec(
            "LogisticRegression",
            "LogisticRegression(lbfgs): linear, multinomial",
            _logistic_regression,
            PEER_GRIDS["LogisticRegression"],
        ),
        ModelSpec(
            "SVC",
            'SVC(kernel="rbf", gamma="scale"): exact kernel, superlinear in n_train',
            _build_svc,
            PEER_GRIDS["SVC"],
            superlinear=True,
        ),
        ModelSpec(
            "RBFSampler+LogisticRegression",
            "random Fourier features (n_components) + LogisticRegression",
            _build_rbf_sampler_lr,
            PEER_GRIDS["RBFSampler+LogisticRegression"],
            classifier_path="clf__",
        ),
        ModelSpec(
            "Nystroem+LogisticRegression",
            "Nystroem RBF features (n_components) + LogisticRegression",
            _build_nystroem_lr,
            PEER_GRIDS["Nystroem+LogisticRegression"],
            classifier_path="clf__",
        ),
    ]
    for loss in LOSSES:
        specs.append(
            ModelSpec(
                f"margin:{loss}",
                f'MarginSoftmaxClassifier(loss="{loss}"): linear',
                functools.partial(_build_margin, loss),
                LOSS_GRIDS[loss],
                requires="MarginSoftmaxClassifier",
            )
        )
    for loss in LOSSES:
        specs.append(
            ModelSpec(
                f"kernel:{loss}",
                f'KernelMarginSoftmaxClassifier(loss="{loss}"): random features '
                "(n_components)",
                functools.partial(_build_kernel, loss),
                LOSS_GRIDS[loss],
                requires="KernelMarginSoftmaxClassifier",
            )
        )
    return {spec.name: spec for spec in specs}


def unavailable_reason(spec: ModelSpec) -> str | None:
    """Return why ``spec`` cannot run here, or ``None`` if it can."""
    if spec.requires is None:
        return None
    try:
        sklmargin_class(spec.requires)
    except ModelUnavailableError as exc:
        return str(exc)
    return None


def resolve_models(
    requested: str | None, registry: Mapping[str, ModelSpec]
) -> tuple[list[ModelSpec], list[str]]:
    """Turn a ``--models`` value into registry entries.

    Names are matched case-insensitively and may be glob patterns
    (``margin:*``). The reference models of the time ratios are added when
    missing and always come first. Our estimators that cannot be imported are
    skipped with a note when they come from the default selection (``None``) or
    a pattern; an explicit request for one is an error.

    Parameters
    ----------
    requested : str or None
        Comma-separated model names; ``None`` for :data:`DEFAULT_MODELS`.
    registry : mapping of str to ModelSpec
        From :func:`model_registry`.

    Returns
    -------
    specs : list of ModelSpec
        The models to run, in order.
    notes : list of str
        What was added or skipped, to print.

    Raises
    ------
    CompareError
        If a name is unknown (the message lists the valid names and the closest
        match) or an explicitly requested model is unavailable.
    """
    names = list(DEFAULT_MODELS) if requested is None else _split_list(requested)
    if not names:
        raise CompareError("--models: no model names given.")
    resolved: list[str] = []
    optional: set[str] = set(names) if requested is None else set()
    for name in names:
        matches = _match_model_name(name, registry)
        if "*" in name or "?" in name:
            optional.update(matches)  # a pattern asks for what can run
        resolved += [match for match in matches if match not in resolved]

    notes = []
    added = [name for name in REFERENCE_MODELS if name not in resolved]
    if added:
        notes.append(
            f"added {', '.join(added)}: the time ratios are measured against them "
            "in the same run."
        )
    # References first, in a fixed order: every table then starts the same way.
    resolved = [*REFERENCE_MODELS, *(n for n in resolved if n not in REFERENCE_MODELS)]
    specs = []
    for name in resolved:
        reason = unavailable_reason(registry[name])
        if reason is None:
            specs.append(registry[name])
        elif name in optional:
            notes.append(f"skipping {name}: {reason}.")
        else:
            raise CompareError(f"--models: {name} is unavailable: {reason}.")
    return specs, notes


def _match_model_name(name: str, registry: Mapping[str, ModelSpec]) -> list[str]:
    """Return the registry names ``name`` matches: case-insensitive, globs allowed."""
    import difflib
    import fnmatch

    matches = [
        known for known in registry if fnmatch.fnmatchcase(known.lower(), name.lower())
    ]
    if not matches:
        close = difflib.get_close_matches(name, list(registry), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise CompareError(
            f"--models: unknown model {name!r}.{hint} Available: "
            f"{', '.join(registry)} (see --models list)."
        )
    return matches


def build_pipeline(spec: ModelSpec, settings: CompareSettings) -> Pipeline:
    """Return ``Pipeline([StandardScaler(), model])`` for one registry entry.

    The scaler is part of the pipeline so that it is fitted on the training
    split (or the training folds when tuning) only.
    """
    return Pipeline(
        [("standardscaler", StandardScaler()), ("model", spec.build(settings))]
    )


def format_model_list(registry: Mapping[str, ModelSpec]) -> str:
    """Return the text of ``--models list``: names, descriptions, availability."""
    width = max(map(len, registry))
    lines = ["available models (* = default set):"]
    for name, spec in registry.items():
        mark = "*" if name in DEFAULT_MODELS else " "
        reason = unavailable_reason(spec)
        status = f"  [unavailable: {reason}]" if reason else ""
        lines.append(f" {mark} {name:<{width}}  {spec.description}{status}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------
# Tuning and timing.
# --------------------------------------------------------------------------------


@contextmanager
def _recorded_warnings():
    """Record every warning instead of printing it: they become result notes."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def summarize_warnings(caught: Iterable[warnings.WarningMessage], where: str) -> list:
    """Condense recorded warnings into short, de-duplicated notes.

    Parameters
    ----------
    caught : iterable of warnings.WarningMessage
        As recorded by ``warnings.catch_warnings(record=True)``.
    where : str
        Prefix of each note ("fit", "tuning").

    Returns
    -------
    list of str
        One note per kind of warning (category and first message line, numbers
        ignored: "after 1041 iterations" and "after 1038 iterations" are the
        same warning), showing the first message and a count.
    """
    first: dict[tuple[str, str], str] = {}
    counts: Counter = Counter()
    for caught_warning in caught:
        lines = str(caught_warning.message).strip().splitlines()
        if not lines:
            continue
        key = (caught_warning.category.__name__, re.sub(r"\d+", "#", lines[0]))
        first.setdefault(key, _shorten(lines[0], 150))
        counts[key] += 1
    return [
        f"{where}: {key[0]}{f' (x{n})' if n > 1 else ''}: {first[key]}"
        for key, n in counts.items()
    ]


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


@dataclass
class TuneResult:
    """Outcome of :func:`tune`.

    Parameters
    ----------
    best_params : dict
        Best parameters with full pipeline paths, for ``set_params``.
    reported_params : dict
        The same with the classifier's own parameter names, for the outputs.
    cv_accuracy : float
        Mean CV accuracy of the best parameters.
    tune_time : float
        Wall time of the whole search, in seconds.
    notes : list of str
        Warnings raised during the search.
    """

    best_params: dict
    reported_params: dict
    cv_accuracy: float
    tune_time: float
    notes: list = field(default_factory=list)


def tune(
    pipeline: Pipeline,
    spec: ModelSpec,
    X: np.ndarray,
    y: np.ndarray,
    settings: CompareSettings,
) -> TuneResult:
    """Grid-search the parameters of ``spec`` on the training data only.

    ``GridSearchCV`` with stratified ``settings.cv``-fold CV; no refit (the
    caller refits the best parameters and times that fit separately). A grid
    point whose fit fails scores NaN and is reported in the notes.

    Parameters
    ----------
    pipeline : Pipeline
        From :func:`build_pipeline`.
    spec : ModelSpec
        Provides the grid.
    X, y : ndarray
        The training split.
    settings : CompareSettings
        Provides ``cv``, ``n_jobs`` and ``random_state``.

    Returns
    -------
    TuneResult
        Best parameters, their CV accuracy and the search time.
    """
    # Shuffled folds with a fixed seed: deterministic, and safe on files whose
    # rows are sorted by class (plain cv=3 would not shuffle).
    folds = StratifiedKFold(
        n_splits=settings.cv, shuffle=True, random_state=settings.random_state
    )
    search = GridSearchCV(
        pipeline,
        spec.param_grid(),
        scoring="accuracy",
        cv=folds,
        n_jobs=settings.n_jobs,
        refit=False,
        error_score=np.nan,
    )
    with _recorded_warnings() as caught:
        start = time.perf_counter()
        search.fit(X, y)
        elapsed = time.perf_counter() - start
    best = dict(search.best_params_)
    reported = {key.rsplit("__", 1)[-1]: _plain(value) for key, value in best.items()}
    notes = summarize_warnings(caught, "tuning") + _edge_notes(reported, spec.grid)
    return TuneResult(
        best_params=best,
        reported_params=reported,
        cv_accuracy=float(search.best_score_),
        tune_time=elapsed,
        notes=notes,
    )


def _edge_notes(best: Mapping[str, Any], grid: Mapping[str, Sequence[Any]]) -> list:
    """Flag best values on the edge of their grid: the optimum may lie outside."""
    edges = [
        f"{key}={best[key]:g} in [{min(values):g}, {max(values):g}]"
        for key, values in grid.items()
        if len(values) > 1 and best[key] in (min(values), max(values))
    ]
    return [f"tuning: best on the grid's edge: {', '.join(edges)}"] if edges else []


def _warm_up(estimator: BaseEstimator, X: np.ndarray, y: np.ndarray) -> None:
    """Fit and predict once, untimed, on a few rows of each class.

    The first fit of a model in a process pays for lazy imports, caches and
    thread-pool start-up; without a warm-up that cost lands on whichever model
    happens to run first.
    """
    rows = np.concatenate([np.flatnonzero(y == label)[:5] for label in np.unique(y)])
    with _recorded_warnings():
        try:
            clone(estimator).fit(X[rows], y[rows]).predict(X[rows])
        except Exception:  # the timed fit reports any real failure
            pass


def time_fit_predict(
    estimator: BaseEstimator,
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_test: np.ndarray,
    repeats: int = 1,
) -> tuple[np.ndarray, float, float]:
    """Time ``repeats`` fits and predicts of fresh clones of ``estimator``.

    An untimed warm-up fit on a few rows per class comes first.

    Parameters
    ----------
    estimator : estimator
        Unfitted; cloned for every repeat so each fit starts from scratch.
    X_train, y_train : ndarray
        Training data.
    X_test : ndarray
        Data to predict.
    repeats : int, default=1
        Number of fit/predict pairs.

    Returns
    -------
    prediction : ndarray
        Prediction of the first fit (the one that is scored).
    fit_time : float
        Median fit time in seconds.
    predict_time : float
        Median predict time in seconds.
    """
    _warm_up(estimator, X_train, y_train)
    fit_times, predict_times, first_prediction = [], [], None
    for _ in range(repeats):
        model = clone(estimator)
        # Collect before, not during, each timing: the previous repeat's garbage
        # should not be charged to this one.
        gc.collect()
        start = time.perf_counter()
        model.fit(X_train, y_train)
        fit_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        prediction = model.predict(X_test)
        predict_times.append(time.perf_counter() - start)
        if first_prediction is None:
            first_prediction = prediction
    return (
        first_prediction,
        statistics.median(fit_times),
        statistics.median(predict_times),
    )


# --------------------------------------------------------------------------------
# Running a comparison.
# --------------------------------------------------------------------------------


def skip_reason(spec: ModelSpec, dataset: Dataset, settings: CompareSettings) -> str:
    """Return why ``spec`` is skipped on ``dataset`` ("" if it runs)."""
    if spec.superlinear and dataset.n_train > settings.svc_max_samples:
        return (
            f"skipped: n_train={dataset.n_train} > --svc-max-samples="
            f"{settings.svc_max_samples} (fit cost grows superlinearly with "
            "n_train; raise the limit to run it)"
        )
    return ""


def empty_row(spec: ModelSpec, dataset: Dataset, settings: CompareSettings) -> dict:
    """Return a result row with every field of :data:`ROW_FIELDS`, values unset."""
    row: dict[str, Any] = dict.fromkeys(ROW_FIELDS)
    row.update(dataset=dataset.name, model=spec.name, repeats=settings.repeats)
    row.update(dataset.describe())
    row["notes"] = []
    return row


def evaluate_model(
    spec: ModelSpec, dataset: Dataset, settings: CompareSettings
) -> dict[str, Any]:
    """Tune (optionally), fit, time and score one model on one dataset.

    Never raises for a model failure: the row then has ``status="error"`` and
    the exception in ``notes``, so one broken model does not end a long run.

    Parameters
    ----------
    spec : ModelSpec
        The model.
    dataset : Dataset
        The split; its test part is predicted, and scored once.
    settings : CompareSettings
        Shared settings.

    Returns
    -------
    dict
        A row with the keys of :data:`ROW_FIELDS` (ratios still unset; see
        :func:`add_ratios`).
    """
    row = empty_row(spec, dataset, settings)
    reason = skip_reason(spec, dataset, settings)
    if reason:
        row.update(status="skipped", notes=[reason])
        return row
    try:
        pipeline = build_pipeline(spec, settings)
        if settings.tune:
            tuned = tune(pipeline, spec, dataset.X_train, dataset.y_train, settings)
            pipeline.set_params(**tuned.best_params)
            row.update(
                best_params=tuned.reported_params,
                cv_accuracy=tuned.cv_accuracy,
                tune_time=tuned.tune_time,
            )
            row["notes"].extend(tuned.notes)
        with _recorded_warnings() as caught:
            prediction, fit_time, predict_time = time_fit_predict(
                pipeline,
                dataset.X_train,
                dataset.y_train,
                dataset.X_test,
                settings.repeats,
            )
        row["notes"].extend(summarize_warnings(caught, "fit"))
        row.update(
            status="ok",
            accuracy=float(accuracy_score(dataset.y_test, prediction)),
            fit_time=fit_time,
            predict_time=predict_time,
        )
    except Exception as exc:  # reported in the row; the run goes on
        row.update(status="error")
        row["notes"].append(f"error: {type(exc).__name__}: {exc}")
    return row


def add_ratios(rows: Sequence[dict[str, Any]]) -> None:
    """Fill the time-ratio fields of the rows of one dataset, in place.

    A ratio is the model's time divided by the reference model's time on the same
    dataset; it stays ``None`` when either did not run.
    """
    references = {
        row["model"]: row
        for row in rows
        if row["model"] in REFERENCE_MODELS and row["status"] == "ok"
    }
    for row in rows:
        for reference in REFERENCE_MODELS:
            for kind in ("fit", "predict"):
                ref_row = references.get(reference)
                ratio = None
                if row["status"] == "ok" and ref_row and ref_row[f"{kind}_time"] > 0:
                    ratio = row[f"{kind}_time"] / ref_row[f"{kind}_time"]
                row[f"{kind}_ratio_vs_{reference}"] = ratio


class Progress:
    """One progress line per fit on a stream (stderr), or nothing when quiet.

    Parameters
    ----------
    total : int
        Number of (dataset, model) pairs.
    stream : file-like or None
        Where to write; ``None`` silences the progress.
    """

    def __init__(self, total: int, stream: TextIO | None):
        self.total = total
        self.stream = stream
        self.count = 0
        self.start_time = 0.0

    def start(self, dataset: str, model: str) -> None:
        """Announce the next fit before it starts (long fits show what runs)."""
        self.count += 1
        self.start_time = time.perf_counter()
        self._write(f"[{self.count}/{self.total}] {dataset} / {model} ...")

    def done(self, row: Mapping[str, Any]) -> None:
        """Finish the line with the outcome and the elapsed time."""
        elapsed = time.perf_counter() - self.start_time
        if row["status"] == "ok":
            outcome = f"acc {100 * row['accuracy']:.2f}%"
        else:  # skipped or error: say why right away, not only in the table
            outcome = row["notes"][0] if row["notes"] else row["status"]
        self._write(f" {elapsed:.1f} s ({outcome})\n")

    def _write(self, text: str) -> None:
        if self.stream is not None:
            self.stream.write(text)
            self.stream.flush()


def run_comparison(
    datasets: Sequence[Dataset],
    specs: Sequence[ModelSpec],
    settings: CompareSettings,
    progress: Progress | None = None,
    on_dataset_done: Callable[[Dataset, list], None] | None = None,
) -> list[dict[str, Any]]:
    """Evaluate every model on every dataset.

    Parameters
    ----------
    datasets : sequence of Dataset
        The splits.
    specs : sequence of ModelSpec
        The models; include :data:`REFERENCE_MODELS` to get the time ratios.
    settings : CompareSettings
        Shared settings.
    progress : Progress, default=None
        Progress reporter; ``None`` for silence.
    on_dataset_done : callable, default=None
        Called as ``on_dataset_done(dataset, rows)`` after each dataset, e.g. to
        print its table and save partial results of a long run.

    Returns
    -------
    list of dict
        One row per (dataset, model), see :data:`ROW_FIELDS`.
    """
    all_rows: list[dict[str, Any]] = []
    # limits=None leaves every thread pool as it is.
    with threadpool_limits(limits=settings.threads):
        for dataset in datasets:
            rows = []
            for spec in specs:
                if progress is not None:
                    progress.start(dataset.name, spec.name)
                row = evaluate_model(spec, dataset, settings)
                if progress is not None:
                    progress.done(row)
                rows.append(row)
            add_ratios(rows)
            all_rows.extend(rows)
            if on_dataset_done is not None:
                on_dataset_done(dataset, rows)
    return all_rows


# --------------------------------------------------------------------------------
# Text output.
# --------------------------------------------------------------------------------


def _format_number(value: float | None) -> str:
    """Three significant digits, without exponent below 1000."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if abs(value) >= 1000:
        return f"{value:.0f}"
    return f"{value:.3g}"


def _format_percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


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
    header = ["model", "acc %", "fit s", "predict s"]
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
            _format_number(row["fit_time"]),
            _format_number(row["predict_time"]),
        ]
        for kind in ("fit", "predict"):
            cells += [
                _format_number(row[f"{kind}_ratio_vs_{reference}"])
                for reference in _SHORT_REFERENCE_NAMES
            ]
        if tuned:
            cells += [
                _format_percent(row["cv_accuracy"]),
                _format_number(row["tune_time"]),
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
    ]
    if settings.tune:
        points = check_grid_sizes(specs)
        lines.append(
            f"tuning: GridSearchCV, {settings.cv}-fold stratified CV on the "
            f"training split, {points} grid points per model (peers: C; ours: "
            "(m, s), or C for softmax, s for normface); best params refitted on "
            "the whole training split, then timed"
        )
    else:
        lines.append("tuning: off (default hyper-parameters; --tune to tune)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------
# File output.
# --------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Return ``value`` as a JSON-ready Python object (NaN becomes None)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


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


def check_output_path(path: str | os.PathLike, suffixes: Sequence[str]) -> None:
    """Fail early (before a long run) if results could not be written to ``path``.

    Raises
    ------
    CompareError
        If the suffix is not one of ``suffixes`` or the folder does not exist.
    """
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise CompareError(
            f"cannot tell the format of {str(path)!r}: use one of "
            f"{', '.join(suffixes)}."
        )
    if not path.parent.is_dir():
        raise CompareError(f"folder {str(path.parent)!r} does not exist.")


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
    plain_rows = [_plain({key: row.get(key) for key in ROW_FIELDS}) for row in rows]
    if path.suffix.lower() == ".json":
        document = {"metadata": _plain(dict(metadata or {})), "results": plain_rows}
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


def plot_results(path: str | os.PathLike, rows: Sequence[Mapping[str, Any]]) -> None:
    """Save accuracy against fit time, one subplot per dataset (log-x).

    Parameters
    ----------
    path : path-like
        Image file; its extension picks the format (png, pdf, svg, ...).
    rows : sequence of dict
        From :func:`run_comparison`; rows that did not run are left out.
    """
    check_plotting()
    # Figure without pyplot: no GUI backend, no global state, safe in scripts.
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ran = [row for row in rows if row["status"] == "ok"]
    datasets = list(dict.fromkeys(row["dataset"] for row in rows))
    models = list(dict.fromkeys(row["model"] for row in ran))
    # One colour and marker per model across all subplots, explained by a single
    # legend: labels next to points collide when models have similar times.
    style = {
        model: {
            "color": f"C{i % 10}",
            "marker": "o" if model.startswith(("margin:", "kernel:")) else "s",
        }
        for i, model in enumerate(models)
    }
    n_cols = min(3, max(1, len(datasets)))
    n_rows = math.ceil(len(datasets) / n_cols)
    fig = Figure(figsize=(4.5 * n_cols + 2.5, 3.6 * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False).ravel()
    for ax, dataset in zip(axes[: len(datasets)], datasets, strict=True):
        for row in (r for r in ran if r["dataset"] == dataset):
            ax.scatter(
                row["fit_time"],
                100 * row["accuracy"],
                label=row["model"],
                s=40,
                alpha=0.85,
                **style[row["model"]],
            )
        ax.set_xscale("log")
        # Ticks at 1, 2, 5 x 10^k in plain numbers: runs often span < 1 decade.
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(dataset)
        ax.set_xlabel("fit time [s]")
        ax.set_ylabel("test accuracy [%]")
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes[len(datasets) :]:
        ax.set_visible(False)
    handles = [axes[0].scatter([], [], label=model, **style[model]) for model in models]
    fig.legend(handles=handles, loc="outside right upper", fontsize="small")
    fig.suptitle("accuracy vs fit time (squares: scikit-learn, circles: sklmargin)")
    fig.savefig(path, dpi=120)


# --------------------------------------------------------------------------------
# Command line.
# --------------------------------------------------------------------------------

_EPILOG = """\
examples:
  sklmargin compare                                  # bundled datasets, seconds
  sklmargin compare --models list                    # the model names
  sklmargin compare --data ../shared/data --datasets letter,usps --tune
  sklmargin compare --csv my.csv --target label --models LinearSVC,margin:arcface
  sklmargin compare --data DIR --repeats 5 --output results.json --plot acc.png
"""


def _split_list(text: str) -> list[str]:
    return list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


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
            "SVC and kernel approximations: test accuracy, fit and predict time,\n"
            "and time ratios against LinearSVC and LogisticRegression measured in\n"
            "the same run. Without --data/--csv: scikit-learn's bundled digits,\n"
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
        "--csv", metavar="FILE", help="a CSV file with a header row and numeric "
        "features (needs --target)",
    )  # fmt: skip
    data.add_argument("--target", metavar="COLUMN", help="label column of --csv")
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
    models.add_argument(
        "--list-models", action="store_true", help="print the model names and exit"
    )
    models.add_argument(
        "--n-components", type=_positive_int, default=2000, metavar="N",
        help="feature width of RBFSampler/Nystroem+LogisticRegression and "
        "kernel:* (default: 2000)",
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
        "--svc-max-samples", type=_positive_int, default=20000, metavar="N",
        help="skip SVC (superlinear cost) above N training samples (default: 20000)",
    )  # fmt: skip

    protocol = parser.add_argument_group("protocol")
    protocol.add_argument(
        "--tune", action="store_true", help="GridSearchCV (3-fold, training split "
        "only, same grid size for every model) instead of defaults",
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
        "rewritten after each dataset",
    )  # fmt: skip
    output.add_argument(
        "--plot", metavar="FILE", help="save accuracy vs fit time (needs matplotlib)"
    )
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
        threads=args.threads,
    )


def datasets_from_args(args: argparse.Namespace) -> list[Dataset]:
    """Load the datasets selected by ``--data``, ``--csv`` or the default."""
    if args.target is not None and args.csv is None:
        raise CompareError("--target only applies to --csv.")
    if args.csv is not None:
        if args.target is None:
            raise CompareError("--csv needs --target COLUMN (the label column).")
        if args.datasets is not None:
            raise CompareError("--datasets does not apply to --csv.")
        return [load_csv(args.csv, args.target, args.test_size, args.random_state)]
    if args.data is not None:
        return load_npz_dir(args.data, args.datasets)
    return builtin_datasets(args.datasets, args.test_size, args.random_state)


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
        0 on success, 1 if a model failed on some dataset, 2 for a user error
        (message on stderr), 130 if interrupted.
    """
    out = sys.stdout if stdout is None else stdout
    try:
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
            check_plotting()
        specs, notes = resolve_models(args.models, registry)
        datasets = datasets_from_args(args)
    except CompareError as exc:
        print(f"sklmargin compare: error: {exc}", file=sys.stderr)
        return 2

    print(format_preamble(datasets, specs, settings), file=out)
    for note in notes:
        print(f"note: {note}", file=out)
    metadata = {
        "command": "sklmargin compare",
        "arguments": {
            key: value for key, value in vars(args).items() if not callable(value)
        },
        "settings": asdict(settings),
        "models": [spec.name for spec in specs],
        "datasets": [dataset.name for dataset in datasets],
        "notes": notes,
        "grids": {spec.name: dict(spec.grid) for spec in specs} if args.tune else None,
        "environment": environment_info(),
    }
    done_rows: list[dict[str, Any]] = []

    def report(dataset: Dataset, rows: list) -> None:
        print("\n" + format_table(dataset, rows, settings.tune), file=out, flush=True)
        done_rows.extend(rows)
        if args.output is not None:  # partial results survive a crash or ^C
            write_results(args.output, done_rows, metadata)

    progress = Progress(len(datasets) * len(specs), None if args.quiet else sys.stderr)
    start = time.perf_counter()
    try:
        rows = run_comparison(datasets, specs, settings, progress, report)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    print(f"\ndone in {time.perf_counter() - start:.1f} s", file=out)
    if args.output is not None:
        print(f"results written to {args.output}", file=out)
    if args.plot is not None:
        plot_results(args.plot, rows)
        print(f"plot written to {args.plot}", file=out)
    failed = sorted({row["model"] for row in rows if row["status"] == "error"})
    if failed:
        print(f"sklmargin compare: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
