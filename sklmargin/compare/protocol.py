"""The protocol of ``compare``: tune, time, score, for every model and dataset.

* every model is ``Pipeline([StandardScaler(), model])`` fitted on the training
  split only; the test split is used once, to score the final fit;
* tuning, when asked for, is fair: ``GridSearchCV`` with 3-fold stratified CV on
  the training split and the same number of grid points for every model;
* fit and predict times are medians over ``repeats`` runs, also reported as
  ratios against LinearSVC and LogisticRegression measured in the same run.
"""

from __future__ import annotations

import gc
import re
import statistics
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.metrics import accuracy_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline
from threadpoolctl import threadpool_limits

from .._utils.grid_edges import grid_edges
from .datasets import Dataset
from .models import ModelSpec, build_pipeline, grid_size
from .progress import Progress
from .rbf import RELATIVE_GAMMA, relative_gamma_base
from .settings import REFERENCE_MODELS, ROW_FIELDS, CompareSettings, plain
from .verdict import add_verdict

#: Normal quantile of a two-sided 95% interval.
_Z95 = 1.959963984540054


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
        Wall time of the whole search, in seconds (the ``gamma/scale`` base
        included).
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
    on_fit: Callable[[int, int], None] | None = None,
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
    on_fit : callable, default=None
        Called as ``on_fit(done, total)`` after each CV fit is scored (grid
        points x folds in all), for progress. Only with ``n_jobs=1``: parallel
        workers cannot call back.

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
    total = grid_size(spec.grid) * settings.cv
    scoring: Any = "accuracy"
    if on_fit is not None and settings.n_jobs in (1, None):
        scoring = _CountingAccuracy(lambda done: on_fit(done, total))
    with _recorded_warnings() as caught:
        start = time.perf_counter()
        # Part of the tuning time: for kernel:* it learns the metric once.
        base = None
        if RELATIVE_GAMMA in spec.grid:
            base = relative_gamma_base(pipeline, spec.classifier_path, X, y)
        search = GridSearchCV(
            pipeline,
            spec.param_grid(base),
            scoring=scoring,
            cv=folds,
            n_jobs=settings.n_jobs,
            refit=False,
            error_score=np.nan,
        )
        search.fit(X, y)
        elapsed = time.perf_counter() - start
    best = dict(search.best_params_)
    reported = plain(spec.reported_params(best, base))
    notes = summarize_warnings(caught, "tuning") + edge_notes(
        reported, spec.grid, spec.name
    )
    return TuneResult(
        best_params=best,
        reported_params=reported,
        cv_accuracy=float(search.best_score_),
        tune_time=elapsed,
        notes=notes,
    )


class _CountingAccuracy:
    """Accuracy scorer that counts its calls: one call per CV fit scored."""

    def __init__(self, callback: Callable[[int], None]):
        self.callback = callback
        self.calls = 0

    def __call__(self, estimator: BaseEstimator, X: np.ndarray, y: np.ndarray):
        score = float(accuracy_score(y, estimator.predict(X)))
        self.calls += 1
        self.callback(self.calls)
        return score


def edge_notes(
    best: Mapping[str, Any], grid: Mapping[str, Sequence[Any]], model: str = "MODEL"
) -> list:
    """Flag best values on the edge of their grid, and say how to widen it.

    The optimum may lie outside the grid. The rule is
    :func:`sklmargin._utils.grid_edges.grid_edges`, shared with the CV
    estimators' :class:`~sklmargin.GridEdgeWarning`. The note suggests a
    ``--grid`` value of the same size shifted one step past the edge
    (geometric steps for positive grids), so that the comparison stays fair.
    """
    edges = grid_edges(best, grid)
    if not edges:
        return []
    where = ", ".join(f"{e.key}={e.value:g} in [{e.low:g}, {e.high:g}]" for e in edges)
    hints = " ".join(
        f"--grid '{model}.{e.key}="
        + (",".join(map(_grid_text, e.widened)) if e.widened else "VALUES")
        + "'"
        for e in edges
    )
    return [
        f"tuning: best on the grid's edge: {where}; the optimum may lie "
        f"outside: widen or shift the grid with {hints}"
    ]


def _grid_text(value: Any) -> str:
    """Return a grid value for the command line: 3 digits, no exponent."""
    if isinstance(value, int) or abs(value) >= 1000:
        return f"{value:.0f}"
    return f"{value:.3g}" if "e" not in f"{value:.3g}" else f"{value:.6f}".rstrip("0")


def wilson_interval(correct: int, total: int, z: float = _Z95) -> tuple[float, float]:
    r"""Wilson score interval of a binomial proportion (95% by default).

    For :math:`k` successes in :math:`n` trials, :math:`\hat p = k / n`:

    .. math::

        \frac{\hat p + z^2/(2n) \pm z \sqrt{\hat p (1 - \hat p)/n + z^2/(4n^2)}}
             {1 + z^2/n}

    Unlike the normal approximation it stays inside [0, 1] and is not empty
    at 0% or 100% accuracy (Wilson 1927, JASA 22:209; Brown, Cai & DasGupta
    2001, Statistical Science 16:101).

    Parameters
    ----------
    correct : int
        Correct predictions.
    total : int
        Test samples, > 0.
    z : float, default=1.96
        Normal quantile of the confidence level.

    Returns
    -------
    low, high : float
        The interval, as proportions.
    """
    if total <= 0:
        raise ValueError(f"total must be > 0, got {total}")
    p = correct / total
    denominator = 1.0 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * np.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return max(0.0, float(centre - half)), min(1.0, float(centre + half))


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
    warm_up: bool = True,
) -> tuple[np.ndarray, float, float]:
    """Time ``repeats`` fits and predicts of fresh clones of ``estimator``.

    An untimed warm-up fit on a few rows per class comes first (``warm_up``).

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
    warm_up : bool, default=True
        Whether to warm up first; once per model and process is enough.

    Returns
    -------
    prediction : ndarray
        Prediction of the first fit (the one that is scored).
    fit_time : float
        Median fit time in seconds.
    predict_time : float
        Median predict time in seconds.
    """
    if warm_up:
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
    spec: ModelSpec,
    dataset: Dataset,
    settings: CompareSettings,
    progress: Progress | None = None,
    warm_up: bool = True,
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
    progress : Progress, default=None
        Told about every CV fit of the grid search.
    warm_up : bool, default=True
        Fit once, untimed, on a few rows first (see :func:`time_fit_predict`);
        a run does it on its first dataset only.

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
        pipeline = build_pipeline(spec, settings, dataset.n_train)
        if settings.tune:
            on_fit = None
            if progress is not None:
                # Parallel workers report nothing until the search ends.
                serial = settings.n_jobs in (1, None)
                progress.stage("CV fit" if serial else "parallel grid search")
                detail = f" ({grid_size(spec.grid)} grid points x {settings.cv} folds)"

                def on_fit(done, total):
                    progress.tuning(done, total, detail)

            tuned = tune(
                pipeline, spec, dataset.X_train, dataset.y_train, settings, on_fit
            )
            pipeline.set_params(**tuned.best_params)
            row.update(
                best_params=tuned.reported_params,
                cv_accuracy=tuned.cv_accuracy,
                tune_time=tuned.tune_time,
            )
            row["notes"].extend(tuned.notes)
        if progress is not None:
            progress.stage("final fit" if settings.tune else "fit")
        with _recorded_warnings() as caught:
            prediction, fit_time, predict_time = time_fit_predict(
                pipeline,
                dataset.X_train,
                dataset.y_train,
                dataset.X_test,
                settings.repeats,
                warm_up,
            )
        row["notes"].extend(summarize_warnings(caught, "fit"))
        hits = np.asarray(prediction) == np.asarray(dataset.y_test)
        correct = int(np.sum(hits))
        low, high = wilson_interval(correct, dataset.n_test)
        row.update(
            status="ok",
            # per test row, for the paired test of the verdict (not written out)
            test_correct=hits,
            accuracy=correct / dataset.n_test,
            accuracy_ci_low=low,
            accuracy_ci_high=high,
            fit_time=fit_time,
            predict_time=predict_time,
        )
    except Exception as exc:  # reported in the row; the run goes on
        row.update(status="error")
        # First line only: GridSearchCV's "All the fits failed" carries every
        # traceback, which would fill the table.
        message = next((line for line in str(exc).splitlines() if line.strip()), "")
        row["notes"].append(f"error: {type(exc).__name__}: {_shorten(message, 200)}")
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


def run_comparison(
    datasets: Sequence[Dataset],
    specs: Sequence[ModelSpec],
    settings: CompareSettings,
    progress: Progress | None = None,
    on_dataset_done: Callable[[Dataset, list], None] | None = None,
    on_model_done: Callable[[dict], None] | None = None,
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
        print its table.
    on_model_done : callable, default=None
        Called as ``on_model_done(row)`` after each model, its time ratios
        filled in (the reference models run first), e.g. to save the results
        so far: an interrupted run keeps every model it finished.

    Returns
    -------
    list of dict
        One row per (dataset, model), see :data:`ROW_FIELDS`.
    """
    all_rows: list[dict[str, Any]] = []
    # Objects alive now (modules, data) move to the permanent generation: the
    # collection before each timed fit then scans only what the run creates
    # (measured: 0.18 s per collection without this, 36 of them by default).
    gc.collect()
    gc.freeze()
    try:
        _run(datasets, specs, settings, progress, all_rows, on_dataset_done,
             on_model_done)  # fmt: skip
    finally:
        gc.unfreeze()
    return all_rows


def _run(
    datasets, specs, settings, progress, all_rows, on_dataset_done, on_model_done
) -> None:
    # limits=None leaves every thread pool as it is.
    with threadpool_limits(limits=settings.threads):
        for index, dataset in enumerate(datasets):
            rows = []
            for spec in specs:
                if progress is not None:
                    progress.start(dataset.name, spec.name)
                row = evaluate_model(
                    spec, dataset, settings, progress, warm_up=index == 0
                )
                if progress is not None:
                    progress.done(row)
                rows.append(row)
                all_rows.append(row)
                add_ratios(rows)
                if on_model_done is not None:
                    on_model_done(row)
            add_verdict(rows)  # p_value_vs_best, written with the next save
            if on_dataset_done is not None:
                on_dataset_done(dataset, rows)
