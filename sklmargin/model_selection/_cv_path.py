"""One job of a CV search: a fold's rows, mapped once, and warm-started paths.

A job is one fold at one *map point* (the kernel width ``gamma``; nothing for
the linear estimator). The fold's training rows are mapped once and its
held-out rows once (:meth:`BaseMarginSoftmax._fold_features`), then every inner
grid point (the margin ``m``) runs its warm-started path over ``s`` (or ``C``)
on those mapped rows (:func:`~sklmargin.estimators._fit_path.fit_path`, which
prepares them once for the path). Each path point is scored from one pass of
margin-free logits over the held-out rows, which are kept for the temperature
fit. Array API rows are cut and mapped where they live; only the held-out
logits come to the host.

:func:`fit_fold` is the job: what every job of a search shares comes in one
:class:`PathGrid`, and each fitted point comes back as a :class:`PathPoint`
(score, iterations, time, held-out logits, and the model when ``refit=False``
keeps each fold's best).

:func:`check_folds` refuses, before any fit, the folds nothing can be fitted
on.

Mapping once per job matters: a map fit and a transform cost more than a
warm-started path point, and refitting the map at every point (same seed, so
the same map) would repeat them for nothing.
"""

from __future__ import annotations

import copy
import time
import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.parallel import Parallel, delayed

from .._utils.array_api import (
    NUMPY,
    get_namespace,
    take_rows,
    to_device,
    to_numpy,
)
from ..estimators._fit_path import fit_path
from ..losses._registry import loss_margin


class PathGrid(NamedTuple):
    """What every job of one search shares: the grid it walks and what it keeps."""

    heads: list  # one Head per loss searched: its inner points and its path
    map_points: list  # dicts over the axes that change the map (gamma)
    scorer: Callable  # score(estimator, rows, logits)
    classes: np.ndarray  # all classes of the search (a fold may miss one)
    # refit=False predicts with each fold's best model; a search that
    # finishes its chosen point at tol (finish_fold) starts from them.
    keep_models: bool
    verbose: int
    # prepare(job_point, rows) -> (rows, map_params, attach): the
    # kernel search's per-fold input metric (None: the rows as they are).
    prepare: Callable | None = None
    # The estimator's own tol when the paths stop at a looser one: each
    # path's tolerance then tightens towards it where the start's gradient
    # is small (path_tolerance); None keeps the base estimator's tol.
    min_tol: float | None = None


class Head(NamedTuple):
    """One loss of the search: its inner grid points (m) and warm path."""

    inner_points: list  # dicts over the axes that keep the map (loss, m)
    path_name: str  # "s" or "C"
    path_values: tuple  # ascending: each point starts from the previous one
    margin: object  # the loss's registered Margin (its domains and defaults)


class PathPoint(NamedTuple):
    """One fitted point of a fold's path."""

    score: float  # NaN on a test fold of zero weight
    n_iter: int
    fit_time: float
    logits: np.ndarray  # held-out margin-free logits over all classes, NumPy
    model: object  # the fitted point (None unless ``keep_models``)


class FoldRows(NamedTuple):
    """A fold's training and held-out rows, raw and as the estimator sees them."""

    X_train: object
    y_train: np.ndarray
    sw_train: np.ndarray | None
    premapped: tuple | None  # (feature_map, mapped training rows); None: no map
    X_test: object
    y_test: np.ndarray
    y_test_encoded: np.ndarray
    sw_test: np.ndarray | None
    features_test: object


def cut_fold(X, y, y_encoded, sample_weight, train, test):
    """Cut one fold's rows (unmapped): a :class:`FoldRows` without features.

    Array API rows are cut on their device; labels and weights stay on the
    host, except the held-out labels a user's ``scoring`` compares with the
    fold model's ``predict``: on the device when numeric (string labels stay
    NumPy on both sides).
    """
    xp, device = get_namespace(X, user_input=True)
    sw_train, sw_test = (
        (None, None)
        if sample_weight is None
        else (sample_weight[train], sample_weight[test])
    )
    X_train, X_test = (take_rows(X, rows, xp, device) for rows in (train, test))
    y_test = y[test]
    if xp is not NUMPY and y_test.dtype.kind in "biuf":
        y_test = to_device(y_test, xp, device)
    return FoldRows(
        X_train, y[train], sw_train, None,
        X_test, y_test, y_encoded[test], sw_test, None,
    )  # fmt: skip


def map_fold(estimator, rows):
    """Map a cut fold's rows once (``estimator._fold_features``)."""
    xp, device = get_namespace(rows.X_train, user_input=True)
    feature_map, features_train, features_test = estimator._fold_features(
        rows.X_train, rows.sw_train, rows.X_test, xp, device
    )
    premapped = None if feature_map is None else (feature_map, features_train)
    return rows._replace(premapped=premapped, features_test=features_test)


def full_class_logits(logits, estimator_classes, classes, xp=NUMPY):
    """``logits`` over ``estimator_classes`` as an array over all ``classes``.

    A fold may miss a rare class in training; its column gets the row's
    smallest logit (as unlikely as the least likely class seen), which keeps
    the held-out logits finite for the temperature and the fold models'
    logits comparable for averaging. In ``xp`` (array API logits) column by
    column: the standard has no scatter into columns.
    """
    if len(estimator_classes) == len(classes):
        return logits
    if xp is NUMPY:
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


def held_out_score(model, rows, scorer, classes, scored):
    """``(logits, score)`` of a fitted model on its fold's held-out rows.

    The margin-free logits over all ``classes``, as NumPy: computed where the
    mapped rows are, a device's come to the host (``n_test x K`` numbers),
    where the scores and the temperature fit use them. ``scored=False`` (a
    test fold of zero weight) leaves the score NaN.
    """
    logits = to_numpy(model._logits_of_features(rows.features_test))
    logits = full_class_logits(logits, model.classes_, classes)
    return logits, (scorer(model, rows, logits) if scored else np.nan)


def point_label(point):
    """``", m=0.05, ..."``: a grid point in a verbose line."""
    return "".join(f", {k}={v}" for k, v in point.items())


def fit_fold(estimator, data, train, test, grid, label, scored, job_point=None):
    """Cut one fold, then per map point map it once and walk every path on it.

    ``data`` is the search's ``(X, y, y_encoded, sample_weight)``;
    ``job_point`` the job's settings fixed before the map (the kernel
    search's ``metric``, learned here by ``grid.prepare`` from the fold's
    training rows only). For each of ``grid.map_points`` the rows are mapped
    once; on them every head (loss) walks, for each inner point (``m``), its
    path warm-started over ascending values; ``grid.scorer`` scores a fitted
    point from its held-out logits (or the raw held-out rows, for a user's
    scoring). ``scored=False`` (a test fold of zero weight) leaves the scores
    NaN.

    Returns
    -------
    list of PathPoint
        In the grid's order: map point, head, inner point, path value.
    """
    job_point = job_point or {}
    rows = cut_fold(*data, train, test)
    map_params, attach = (lambda point: point), None
    if grid.prepare is not None:
        rows, map_params, attach = grid.prepare(job_point, rows)
    points = []
    for map_point in grid.map_points:
        mapper = clone(estimator).set_params(**map_params(map_point))
        mapped = map_fold(mapper, rows)
        for head in grid.heads:
            for inner in head.inner_points:
                where = f"{label}{point_label({**job_point, **map_point, **inner})}"
                points += _walk_path(mapper, inner, head, mapped, grid, where, scored)
                if attach is not None and grid.keep_models:
                    for point in points[-len(head.path_values) :]:
                        attach(point.model)
    return points


#: A path's fits stop where the gradient is this fraction of its cold
#: start's, when that is tighter than ``path_tol`` (:func:`path_tolerance`).
PATH_REDUCTION = 0.1


#: The tolerance of the fit that only measures a path's start: no iteration.
_PROBE_TOL = 1e300


def probes_start(estimator, min_tol):
    """Whether a path measures its start's gradient first (:func:`path_tolerance`).

    Only where its tolerance (the search's ``path_tol``) is looser than
    ``min_tol`` (the estimator's ``tol``; None: never), and for the losses
    whose cold start is a plain start: the lambda schedule of L-/A-Softmax,
    SV-Softmax's state rounds and L-Softmax's softmax start are no measure
    of the problem, and a warm start would skip them.
    """
    if min_tol is None or estimator.tol <= min_tol:
        return False
    # The estimator's margin as its fit builds it: t > 1 makes any loss
    # SV-Softmax, whose state rounds the registry's margin does not have.
    margin = loss_margin(estimator.loss, estimator.t)
    return not (
        margin.uses_lambda or margin.stateful or margin.start == "softmax-solution"
    )


def path_tolerance(tol, probe, min_tol):
    """Return one fold's path tolerance: ``tol``, or tighter where it is blind.

    ``tol`` is the search's ``path_tol``, read as the estimator's ``tol`` is:
    the stop test holds where the largest gradient entry (on the stop
    test's scale) is below ``tol * s``. That test is absolute, and the size
    of a gradient entry depends on the problem: with many classes, many
    features and noisy labels (a linear probe on embeddings) the class-mean
    start's largest entry is already about ``1e-3 * s``, so at
    ``path_tol=1e-3`` a path's fits barely move, or not at all, and every
    ``s`` is scored on nearly the same start. ``probe`` is the path's
    estimator fitted at its first point without an iteration (its cold
    start, which the path's first fit continues): the path stops at
    :data:`PATH_REDUCTION` times its gradient where that is tighter than
    ``tol``, so every path reduces its start's gradient at least tenfold.
    Never tighter than ``min_tol`` (the estimator's ``tol``). Where the
    start's gradient is steep (most tabular sets: 1e-2 * s to 1e-1 * s)
    ``tol`` stays.
    """
    start = probe._gradient_size / (probe.s_ if probe.s_ is not None else 1.0)
    if not np.isfinite(start):
        return tol
    return max(min_tol, min(tol, PATH_REDUCTION * start))


def _walk_path(estimator, inner, head, rows, grid, label, scored):
    """Fit one warm-started path on a fold's mapped rows: its PathPoints."""
    path = clone(estimator).set_params(**inner, warm_start=True)
    probing, loose = probes_start(path, grid.min_tol), path.tol

    def steps():  # lazy: the path's tol is set once its start is measured
        tol = loose
        if probing:
            # No iteration: the stored model is the cold start, which the
            # first point's fit then continues (warm: the same start).
            yield {head.path_name: head.path_values[0], "tol": _PROBE_TOL}
            tol = path_tolerance(loose, path, grid.min_tol)
        for value in head.path_values:
            yield {head.path_name: value, "tol": tol}

    # The FeatureScaleWarning is left to the final refit on all the rows,
    # once, not once per fold and grid point.
    fits = fit_path(
        path, rows.X_train, rows.y_train, rows.sw_train, steps(),
        mapped=rows.premapped, warn_scale=False,
    )  # fmt: skip
    if probing:
        next(fits)
    points = []
    for value in head.path_values:
        start = time.perf_counter()
        next(fits)
        fit_time = time.perf_counter() - start
        logits, score = held_out_score(path, rows, grid.scorer, grid.classes, scored)
        if grid.verbose:
            print(
                f"[{label}] {head.path_name}={value:.4g}: score={score:.4f}, "
                f"n_iter={path.n_iter_}, {fit_time:.2f}s"
            )
        model = None
        if grid.keep_models:
            model = copy.deepcopy(path).set_params(warm_start=False)
        points.append(PathPoint(score, path.n_iter_, fit_time, logits, model))
    return points


def finish_fold(model, data, train, test, scorer, classes, steps, scored):
    """Fit a fold's chosen model on, warm-started, through ``steps``: their PathPoints.

    ``model`` is the fold's kept path model (``grid.keep_models``) at the
    chosen grid point; it is not changed (the steps fit a copy, as a
    parallel job's pickled model would be). The fold's rows are cut again
    and mapped by ``model`` (the linear estimator has no map) once, and
    prepared once for every step (:func:`fit_path`; L-Softmax's at each
    step). ``steps`` are ``(params, quiet)`` pairs; each
    step continues from the coefficients the previous one left with the
    parameters ``params`` sets: ``{"tol": tol}`` fits on until the stop test
    at ``tol`` holds, which costs a few iterations where the path had
    already come close; the held-out logits and score are then those of the
    model a fit at ``tol`` gives, the kind of model the refit ends with.
    ``quiet`` silences the ``ConvergenceWarning`` of a probe (another margin
    tried for a few iterations, ``max_iter`` in ``params``), which is
    expected. ``data`` is the search's ``(X, y, y_encoded, sample_weight)``;
    ``scorer`` and ``classes`` those of its :class:`PathGrid`.

    Returns
    -------
    list of PathPoint
        One per step, in order, each with its own copy of the model as that
        step left it.
    """
    model = copy.deepcopy(model)
    rows = map_fold(model, cut_fold(*data, train, test))
    fits = fit_path(
        model.set_params(warm_start=True), rows.X_train, rows.y_train,
        rows.sw_train, [params for params, _ in steps],
        mapped=rows.premapped, warn_scale=False,
    )  # fmt: skip
    points = []
    for i, (_, quiet) in enumerate(steps):
        start = time.perf_counter()
        with warnings.catch_warnings():
            if quiet:
                warnings.simplefilter("ignore", ConvergenceWarning)
            next(fits)
        fit_time = time.perf_counter() - start
        logits, score = held_out_score(model, rows, scorer, classes, scored)
        kept = model if i == len(steps) - 1 else copy.deepcopy(model)
        kept.set_params(warm_start=False)
        points.append(PathPoint(score, model.n_iter_, fit_time, logits, kept))
    return points


def finish_chosen_folds(
    models, data, folds, scorer, classes, steps, scored, n_jobs, verbose
):  # fmt: skip
    """Fit each fold's model at the chosen point on through ``steps``: one job a fold.

    The path's fits stop at the looser ``path_tol``; the refit's chosen
    point, the model the user gets, is fitted to ``tol``. The temperature
    must be fitted on held-out logits of models of that kind: the path's
    models are less sharp, and a temperature fitted on them
    over-sharpens the final model's probabilities. So each fold's model
    at the chosen point continues, warm-started, until its stop test at
    ``tol`` holds (the step ``{"tol": tol}``, :func:`finish_fold`), and its
    held-out logits replace the path's for the temperature; the refit
    starts from their mean. (Finishing the three best points and choosing
    again among them was measured and not kept: twice the cost, no better
    choice.) The probe of another margin at the chosen point is one more
    step of the same job, on the rows the fold's job cut and prepared once.

    Returns
    -------
    list of list of PathPoint
        Each fold's points, one per step (:func:`finish_fold`).
    """
    jobs = [
        delayed(finish_fold)(
            model, data, train, test, scorer, classes, steps, scored[f]
        )  # fmt: skip
        for f, ((train, test), model) in enumerate(zip(folds, models, strict=True))
    ]
    return Parallel(n_jobs=n_jobs, verbose=verbose)(jobs)


def mean_model(models, classes):
    """Average the folds' finished models: the refit's start, or None.

    As :class:`~sklearn.linear_model.LogisticRegressionCV` starts its refit
    from the folds' mean coefficients at the chosen point. Normalised
    prototypes (the cosine losses) are averaged and normalised again, with
    their lift coordinate. None when a fold missed a class (its prototypes
    do not line up with the others').
    """
    if any(len(model.classes_) != len(classes) for model in models):
        return None
    start = copy.deepcopy(models[0])

    def mean(name):  # host copies: a device fit's attributes live there
        return np.mean([to_numpy(getattr(model, name)) for model in models], axis=0)

    coef, constant, intercept = (
        mean(name) for name in ("coef_", "constant_coef_", "intercept_")
    )
    if start.margin_.normalizes_W:
        norms = np.sqrt(np.sum(coef**2, axis=1) + constant**2)
        coef, constant = coef / norms[:, None], constant / norms
    dtype = to_numpy(start.coef_).dtype  # the warm start reads host copies
    start.coef_ = np.ascontiguousarray(coef, dtype=dtype)
    start.constant_coef_ = np.asarray(constant, dtype=dtype)
    start.intercept_ = np.asarray(intercept, dtype=dtype)
    # A warm start rescales normalised prototypes by the norms a fit ended
    # with; the mean model's are the folds' mean (fold 0's copied ones
    # would belong to another model).
    norms = [getattr(model, "_prototype_norms", None) for model in models]
    start._prototype_norms = (
        None if any(n is None for n in norms) else tuple(np.mean(norms, axis=0))
    )
    return start


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
