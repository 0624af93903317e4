"""One job of a CV search: a fold's rows, mapped once, and warm-started paths.

A job is one fold at one *map point* (the kernel width ``gamma``; nothing for
the linear estimator). The fold's training rows are mapped once and its
held-out rows once (:meth:`BaseMarginSoftmax._fold_features`), then every inner
grid point (the margin ``m``) runs its warm-started path over ``s`` (or ``C``)
on those mapped rows, handed to the fit as its explicit private argument
``premapped``. Each path point is scored from one pass of margin-free logits
over the held-out rows, which are kept for the temperature fit. Array API
rows are cut and mapped where they live; only the held-out logits come to
the host.

:func:`check_folds` refuses, before any fit, the folds nothing can be fitted
on.

Before this, the kernel search refitted the feature map at every path point
(same seed, so the same map): on a small profile 31 map fits and 91 transforms
produced 4 distinct maps, 45% of the search's time.
"""

from __future__ import annotations

import copy
import time
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.base import clone

from .._utils.array_api import input_namespace, take_rows, to_device, to_numpy


@dataclass
class FoldRows:
    """A fold's training and held-out rows, raw and as the estimator sees them."""

    X_train: object
    y_train: np.ndarray
    sw_train: np.ndarray | None
    X_test: object
    y_test_encoded: np.ndarray
    sw_test: np.ndarray | None
    y_test: np.ndarray
    feature_map: object
    features_train: object
    features_test: object


def fold_rows(estimator, X, y, y_encoded, sample_weight, train, test):
    """Cut one fold and map its rows once (``estimator._fold_features``).

    Array API rows are cut and mapped on their device; labels and weights
    stay on the host, except the held-out labels a user's ``scoring``
    compares with the fold model's ``predict``: on the device when numeric
    (string labels stay NumPy on both sides).
    """
    xp, device = input_namespace(X) or (None, None)
    sw_train = None if sample_weight is None else sample_weight[train]
    X_train, X_test = (take_rows(X, rows, xp, device) for rows in (train, test))
    feature_map, features_train, features_test = estimator._fold_features(
        X_train, sw_train, X_test, xp, device
    )
    y_test = y[test]
    if xp is not None and y_test.dtype.kind in "biuf":
        y_test = to_device(y_test, xp, device)
    return FoldRows(
        X_train,
        y[train],
        sw_train,
        X_test,
        y_encoded[test],
        None if sample_weight is None else sample_weight[test],
        y_test,
        feature_map,
        features_train,
        features_test,
    )


def full_class_logits(logits, estimator_classes, classes, xp=None):
    """``logits`` over ``estimator_classes`` as an array over all ``classes``.

    A fold may miss a rare class in training; its column gets the row's
    smallest logit (as unlikely as the least likely class seen), which keeps
    the held-out logits finite for the temperature and the fold models'
    logits comparable for averaging. In ``xp`` (array API logits) column by
    column: the standard has no scatter into columns.
    """
    if len(estimator_classes) == len(classes):
        return logits
    if xp is None:
        full = np.repeat(logits.min(axis=1, keepdims=True), len(classes), axis=1)
        full[:, np.searchsorted(classes, estimator_classes)] = logits
        return full
    floor = xp.min(logits, axis=1)
    position = {label: j for j, label in enumerate(estimator_classes.tolist())}
    columns = [
        logits[:, position[label]] if label in position else floor
        for label in classes.tolist()
    ]
    return xp.stack(columns, axis=1)


def held_out_logits(estimator, features):
    """Margin-free logits of a fold's held-out (mapped) rows, as NumPy.

    Computed where the rows are; a device's come to the host (``n_test x K``
    numbers), where the scores and the temperature fit use them.
    """
    return to_numpy(estimator._logits_of_features(features))


def fit_fold(
    estimator,
    X,
    y,
    y_encoded,
    sample_weight,
    train,
    test,
    inner_points,
    path_name,
    path_values,
    scorer,
    keep_models,
    verbose,
    label,
    classes,
    scored=True,
):
    """Map one fold once, then run the path of every inner grid point on it.

    Returns
    -------
    list of tuple
        Per inner point, ``(scores, n_iter, fit_time, logits, models)`` as
        :func:`fit_path` returns them.
    """
    rows = fold_rows(estimator, X, y, y_encoded, sample_weight, train, test)
    return [
        fit_path(
            clone(estimator).set_params(**point),
            rows,
            path_name,
            path_values,
            scorer,
            keep_models,
            verbose,
            label + "".join(f", {k}={v}" for k, v in point.items()),
            classes,
            scored,
        )
        for point in inner_points
    ]


def fit_path(
    estimator,
    rows,
    path_name,
    path_values,
    scorer,
    keep_models,
    verbose,
    label,
    classes,
    scored=True,
):
    """Warm-started path over one fold: scores, iterations, held-out logits.

    ``scorer(estimator, rows, logits)`` scores a fitted point from the
    held-out logits (or the raw held-out rows, for a user's scoring);
    ``scored=False`` (a test fold of zero weight) leaves the scores NaN.
    """
    estimator = clone(estimator).set_params(warm_start=True)
    premapped = None
    if rows.feature_map is not None:
        premapped = (rows.feature_map, rows.features_train)
    n_path = len(path_values)
    scores, n_iter, fit_time = np.empty(n_path), np.empty(n_path, int), np.empty(n_path)
    logits, models = [], []
    for k, value in enumerate(path_values):
        start = time.perf_counter()
        estimator.set_params(**{path_name: value})
        # The FeatureScaleWarning is left to the final refit on all the rows,
        # once, not once per fold and grid point.
        estimator._fit(
            rows.X_train, rows.y_train, rows.sw_train, premapped=premapped,
            check_scale=False,
        )  # fmt: skip
        fit_time[k] = time.perf_counter() - start
        n_iter[k] = estimator.n_iter_
        point_logits = full_class_logits(
            held_out_logits(estimator, rows.features_test),
            estimator.classes_,
            classes,
        )
        scores[k] = scorer(estimator, rows, point_logits) if scored else np.nan
        logits.append(point_logits)
        if keep_models:
            models.append(copy.deepcopy(estimator).set_params(warm_start=False))
        if verbose:
            print(
                f"[{label}] {path_name}={value:.4g}: score={scores[k]:.4f}, "
                f"n_iter={n_iter[k]}, {fit_time[k]:.2f}s"
            )
    return scores, n_iter, fit_time, logits, models


def check_folds(folds, y_encoded, classes, sample_weight, name):
    """Refuse folds nothing can be fitted on; return which folds can be scored.

    Checked before any fit, so the error names the fold instead of surfacing
    from an inner fit as if the whole data were at fault. A test fold whose
    rows all have zero weight has no weighted score (0/0): it is left out of
    the mean score with a warning rather than failing the search, as the
    other folds still measure every grid point.

    Returns
    -------
    ndarray of bool of shape (n_folds,)
        True for the folds that have a score.
    """
    n_folds = len(folds)
    for f, (train, _) in enumerate(folds):
        present = np.unique(y_encoded[train])
        if len(present) < 2:
            raise ValueError(
                f"The training rows of CV fold {f + 1}/{n_folds} contain only one "
                f"class, {classes[present].tolist()[0]!r}, although the data has "
                f"{len(classes)} classes, {classes.tolist()}. Use fewer folds or a "
                "stratified splitter (an int cv is StratifiedKFold; shuffle "
                "rows that are sorted by class)."
            )
        if sample_weight is not None and not sample_weight[train].sum() > 0:
            raise ValueError(
                f"The training rows of CV fold {f + 1}/{n_folds} have zero total "
                "sample_weight: there is nothing to fit on that fold."
            )
    if sample_weight is None:
        return np.ones(n_folds, dtype=bool)
    scored = np.array([sample_weight[test].sum() > 0 for _, test in folds])
    if not scored.any():
        raise ValueError(
            "sample_weight is zero on the held-out rows of every test fold: "
            "there is no weighted score to select by."
        )
    for f in np.flatnonzero(~scored):
        warnings.warn(
            f"{name}: the held-out rows of CV fold {f + 1}/{n_folds} have zero "
            "total sample_weight, so that fold has no weighted score; its scores "
            "are NaN and the mean score is over the other folds.",
            UserWarning,
            stacklevel=3,
        )
    return scored
