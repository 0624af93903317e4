"""Settings, constants and the user-error type shared by the ``compare`` modules."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Every model gets this many tuning grid points (a fair comparison).
GRID_POINTS = 9

#: Every ratio is a time divided by the time of one of these, on the same
#: dataset in the same run; they are added to any model selection.
REFERENCE_MODELS = ("LinearSVC", "LogisticRegression")

#: Columns of one result row, in the order of the CSV output.
ROW_FIELDS = (
    "dataset",
    "model",
    "status",
    "accuracy",
    "accuracy_ci_low",
    "accuracy_ci_high",
    "p_value_vs_best",
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


class CompareError(Exception):
    """A user error (bad argument, missing file or column): reported, not raised."""


@dataclass(frozen=True)
class CompareSettings:
    """Settings shared by every model and dataset of one comparison.

    Parameters
    ----------
    n_components : int or "auto", default="auto"
        Feature width of ``kernel:*`` and of RBFSampler/Nystroem +
        LogisticRegression. "auto" is KernelMarginSoftmaxClassifier's own
        ``n_components="auto"``: ``kernel:*`` resolves it on the rows of each
        fit, the two peers take the width it gives the training split
        (:mod:`~sklmargin.compare.rbf`).
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
    linear_svc_max_iter : int, default=1000
        ``max_iter`` of LinearSVC (liblinear's iteration limit; 1000 is
        scikit-learn's default). On wide data that does not converge, LinearSVC
        runs to this limit in every fit of a grid search: a lower value caps
        its time (its rows then note a ConvergenceWarning).
    threads : int or None, default=1
        Limit of the BLAS/OpenMP thread pools during the run; ``None`` keeps the
        libraries' defaults. One thread by default: LinearSVC and SVC
        (liblinear, libsvm) are single-threaded, so ratios against them compare
        like with like, and timings do not collapse when other processes
        compete for the cores (BLAS threads then wait on each other).
    impute : {"median", "mean", "most_frequent"} or None, default=None
        Strategy of the ``SimpleImputer(add_indicator=True)`` that starts every
        model's pipeline (``--impute``); None: no imputer, missing values are an
        error when the data is loaded.
    """

    n_components: int | str = "auto"
    random_state: int = 0
    tol: float = 1e-4
    max_iter: int = 1000
    tune: bool = False
    cv: int = 3
    n_jobs: int | None = 1
    repeats: int = 1
    svc_max_samples: int = 20000
    linear_svc_max_iter: int = 1000
    threads: int | None = 1
    impute: str | None = None


def split_list(text: str) -> list[str]:
    """Split a comma-separated option value; blanks and duplicates removed."""
    return list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


def plain(value: Any) -> Any:
    """Return ``value`` as a JSON-ready Python object (NaN becomes None)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def format_number(value: float | None) -> str:
    """Three significant digits, never an exponent: one rule for every time.

    ``0.00439``, ``0.0439``, ``4.39``, ``43.9``, ``439``; values of 1000 and
    more are rounded to integers (``4391``); ``None`` and NaN print as ``-``.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:.0f}"
    decimals = 2 - math.floor(math.log10(abs(value)))
    text = f"{value:.{decimals}f}"
    # rounding can gain a digit (9.996 -> "10.00"): redo at the new magnitude
    if len(text.replace("-", "").replace(".", "").lstrip("0")) > 3 and decimals > 0:
        text = f"{value:.{decimals - 1}f}"
    return text
