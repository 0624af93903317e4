"""One job of a CV search: a fold's rows, mapped once, and warm-started paths.

A job is one fold at one *map point* (the kernel width ``gamma``; nothing for
the linear estimator). The fold's training rows are mapped once and its
held-out rows once (:meth:`BaseMarginSoftmax._fold_features`), then every inner
grid point (the margin ``m``) runs its warm-started path over ``s`` (or ``C``)
on those mapped rows. Each path point is scored from one pass of margin-free
logits over the held-out rows, which are kept for the temperature fit.

Before this, the kernel search refitted the feature map at every path point
(same seed, so the same map): on a small profile 31 map fits and 91 transforms
produced 4 distinct maps, 45% of the search's time.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np
from sklearn.base import clone


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
    """Cut one fold and map its rows once (``estimator._fold_features``)."""
    sw_train = None if sample_weight is None else sample_weight[train]
    X_train, X_test = X[train], X[test]
    feature_map, features_train, features_test = estimator._fold_features(
        X_train, sw_train, X_test
    )
    return FoldRows(
        X_train,
        y[train],
        sw_train,
        X_test,
        y_encoded[test],
        None if sample_weight is None else sample_weight[test],
        y[test],
        feature_map,
        features_train,
        features_test,
    )


def full_class_logits(logits, estimator_classes, classes):
    """``logits`` over ``estimator_classes`` as an array over all ``classes``.

    A fold may miss a rare class in training; its column gets the row's
    smallest logit (as unlikely as the least likely class seen), which keeps
    the held-out logits finite for the temperature and the fold models'
    logits comparable for averaging.
    """
    if len(estimator_classes) == len(classes):
        return logits
    full = np.repeat(logits.min(axis=1, keepdims=True), len(classes), axis=1)
    full[:, np.searchsorted(classes, estimator_classes)] = logits
    return full


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
    fit_kwargs = {} if rows.sw_train is None else {"sample_weight": rows.sw_train}
    n_path = len(path_values)
    scores, n_iter, fit_time = np.empty(n_path), np.empty(n_path, int), np.empty(n_path)
    logits, models = [], []
    for k, value in enumerate(path_values):
        start = time.perf_counter()
        estimator.set_params(**{path_name: value})
        estimator._fit_on_features(
            rows.X_train, rows.y_train, rows.feature_map, rows.features_train,
            **fit_kwargs,
        )  # fmt: skip
        fit_time[k] = time.perf_counter() - start
        n_iter[k] = estimator.n_iter_
        point_logits = full_class_logits(
            estimator._logits_of_features(rows.features_test),
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
