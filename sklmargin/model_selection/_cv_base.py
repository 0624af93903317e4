r"""Cross-validated margin-softmax classifiers with a calibrated temperature.

The shape follows :class:`~sklearn.linear_model.LogisticRegressionCV`: for each
fold, and each margin ``m`` (and kernel width ``gamma``), one warm-started
*path* over the logit scale ``s`` in ascending order -- descending
regularisation, as ``LogisticRegressionCV``'s path over ascending ``C``. Each
fit starts from the previous solution, so a long path costs little more than a
few cold fits. Each fold, at each kernel width, is one joblib job
(:mod:`sklmargin.model_selection._cv_path`).

The out-of-fold margin-free logits at the chosen point fit a temperature
:math:`T` (:mod:`sklmargin.model_selection._calibration`); where the paths
stopped at a looser tolerance than ``tol``, each fold's model at the chosen
point is first fitted on to ``tol``
(:func:`~sklmargin.model_selection._cv_path.finish_chosen_folds`), so that the
temperature is fitted on models of the kind the refit gives:
:meth:`predict_proba` is :math:`\mathrm{softmax}(z/T)`, while
:meth:`decision_function` and :meth:`predict` stay those of the model.

Array API rows (torch, CuPy, array-api-strict, under ``array_api_dispatch``)
run the same search: folds are cut and mapped on the device and every path
point is the base estimator's fit there; the held-out logits come to the host
(``n_test x K`` numbers), where the scores, the selection and the temperature
are this module's NumPy code on the same numbers. Predictions run in ``X``'s
namespace: the estimators' one predict
(:class:`~sklmargin.estimators._predict.MarginPredictMixin`) over the refit
model or the fold models.
"""

from __future__ import annotations

import copy
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import check_cv
from sklearn.utils.parallel import Parallel, delayed

from .._utils.array_api import get_namespace
from .._utils.compat import fit_context
from .._utils.doc_link import DocLinkMixin
from .._utils.legacy_state import LegacyStateMixin
from .._utils.validation import check_weights, encode_labels
from ..estimators._fit_path import fit_path, validate_training_data
from ..estimators._predict import MarginPredictMixin
from ..losses._registry import get_margin
from ._calibration import fit_temperature
from ._cv_grid import (
    _accepts,
    _check_positive,
    _grid_points,
    _valid_values,
    default_margins,
    default_path,
    search_points,
)
from ._cv_margin import MARGIN_PROBE_ITER, clearly_positive
from ._cv_path import (
    Head,
    PathGrid,
    check_folds,
    finish_chosen_folds,
    fit_fold,
    full_class_logits,
    mean_model,
)
from ._cv_results import (
    cv_results,
    first_best,
    on_device,
    search_scorer,
    searched,
    shaped,
)
from ._edges import fold_scores_near, warn_grid_edges


class _BaseMarginSoftmaxCV(
    LegacyStateMixin,
    DocLinkMixin,
    MarginPredictMixin,
    ClassifierMixin,
    BaseEstimator,
):
    """Path, folds, selection and temperature shared by the two CV estimators.

    Subclasses define ``_estimator_class`` and ``__init__``: the parameters
    the two share (:meth:`_shared_params`) are validated as the estimator
    validates them and passed to it. Grid axes before ``m`` come from
    ``_extra_grids``; those that change the feature map (mapped once per
    fold) are named in ``_map_params``.
    """

    _estimator_class: type
    #: Outer grid axes that change the feature map (mapped once per fold).
    _map_params: tuple = ()
    #: Outer grid axes fixed per job before the map (the kernel's metric,
    #: learned once per fold and value): they lead the grid.
    _job_params: tuple = ()
    #: ``grid.prepare`` of the jobs (:class:`PathGrid`): the kernel search's
    #: per-fold metric and width (a method there); none here.
    _prepare_fold = None
    #: Whether the folds' models live in the refit's feature space (the
    #: linear search): the refit walks their path warm, and a search over the
    #: default margins probes ``m = 0`` (:mod:`._cv_margin`). A kernel fold's
    #: model lives in its own fold's map: a cold refit, and no probe (tried
    #: on the kernel search, a probe at the chosen scale changed no choice).
    _warm_refit = True

    _parameter_constraints: dict = {
        "ss": ["array-like", None],
        "ms": ["array-like", None],
        "Cs": ["array-like", None],
        "cv": ["cv_object"],
        "scoring": [str, callable, None],
        "calibrate": ["boolean"],
        "n_jobs": [Integral, None],
        "refit": ["boolean"],
        "verbose": ["verbose"],
    }

    #: A search saved before the probe without a margin tried nothing.
    _legacy_fitted = {"margin_check_": lambda state: None}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # The parameters passed on to the estimator are validated as it
        # validates them, before the search starts (and named as the search's).
        inner = cls._estimator_class._parameter_constraints
        cls._parameter_constraints = {
            **{name: inner[name] for name in cls._shared_params()},
            **cls._parameter_constraints,
        }

    @classmethod
    def _shared_params(cls):
        """Names passed on to the estimator: those it shares, but ``verbose``.

        The search's ``verbose`` prints one line per fold and grid point.
        """
        shared = set(cls._get_param_names()) & set(
            cls._estimator_class._get_param_names()
        )
        return sorted(shared - {"verbose"})

    def _base_estimator(self):
        return self._estimator_class(
            **{name: getattr(self, name) for name in self._shared_params()}
        )

    def _losses(self):
        """Return the losses searched, and whether ``loss`` is a list."""
        if isinstance(self.loss, str) or not np.iterable(self.loss):
            return (self.loss,), False
        losses = tuple(dict.fromkeys(self.loss))
        if not losses:
            raise ValueError("loss must name at least one loss; got an empty list.")
        for loss in losses:
            get_margin(loss)  # an unknown name raises the registry's ValueError
        return losses, True

    def _resolve_heads(self):
        """Return one :class:`Head` per loss searched, with its margin.

        A single loss keeps the rules of one path: ``ss`` (or ``Cs``) and
        ``ms`` are its grids, the other path must be None, and invalid values
        are removed with a warning naming them. With several losses ``ss``
        applies to those tuned along ``s`` and ``Cs`` to those tuned along
        ``C``; ``ms`` to the losses whose domain holds its values (the others
        keep their default margin), so one grid can serve a margin loss and
        plain softmax. The inner points then carry their ``loss``.
        """
        losses, several = self._losses()
        heads = []
        for loss in losses:
            margin = get_margin(loss)
            path_name, default_values = self._default_path(margin)
            param, other = ("Cs", "ss") if path_name == "C" else ("ss", "Cs")
            if not several and getattr(self, other) is not None:
                raise ValueError(
                    f"loss={loss!r} is tuned along {path_name} (pass {param}); "
                    f"it takes no {other[0]} grid, got "
                    f"{other}={getattr(self, other)!r}."
                )
            given = getattr(self, param)
            values = (
                default_values if given is None else tuple(np.ravel(given).tolist())
            )
            check = margin.check_s if path_name == "s" else _check_positive
            path_values = _valid_values(values, check, path_name, loss)
            if self.ms is None:
                ms = default_margins(margin)
            elif several:
                valid = filter(_accepts(margin.check_m), np.ravel(self.ms).tolist())
                ms = tuple(sorted(set(valid))) or default_margins(margin)
            else:
                ms = _valid_values(
                    tuple(np.ravel(self.ms).tolist()), margin.check_m, "m", loss
                )
            tag = {"loss": loss} if several else {}
            inner = [{**tag, "m": float(m)} for m in ms]
            heads.append(Head(inner, path_name, path_values, margin))
        return heads

    def _default_path(self, margin):
        return default_path(margin)

    def _path_tol(self, tol):
        """``tol`` of the folds' paths and the refit's steps before the chosen point."""
        return tol

    def _extra_grids(self, X, sample_weight):
        """Grid axes before ``m``, the map's parameters first (none here)."""
        return {}

    def _scorer(self):
        """``score(estimator, rows, logits)`` of a fitted path point."""
        return search_scorer(self.scoring, self._base_estimator(), type(self).__name__)

    @fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None, groups=None):
        """Cross-validate the path, refit, and fit the temperature.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Used in training, scoring and the temperature fit. A test fold
            whose rows all have zero weight has no score: its entries of
            ``scores_`` are NaN (with a ``UserWarning``) and the mean score is
            taken over the other folds.
        groups : array-like of shape (n_samples,), default=None
            Group labels for a group-aware ``cv`` (``GroupKFold``,
            ``StratifiedGroupKFold``, ``LeaveOneGroupOut``, ...), passed to
            its ``split`` as in ``GridSearchCV.fit``; other splitters ignore
            them. Use them when the rows you will predict come from groups
            (subjects, videos, sites) that training did not see: random folds
            put rows of one group on both sides and reward a fit to
            group-specific detail.

        Returns
        -------
        self : object

        Warns
        -----
        GridEdgeWarning
            When a chosen ``s``, ``C``, ``m`` or ``gamma`` is the smallest or
            the largest value searched (not at an end of its domain, such as
            ``m = 0``) and its fold scores beat its neighbour's by more than
            the folds' noise: the message names the parameter to widen.
        """
        # Array API rows (torch, CuPy, ...) stay on their device: folds are
        # cut and mapped there, the held-out logits come to the host.
        namespace = get_namespace(X, user_input=True)
        X, y, sample_weight = validate_training_data(
            self, X, y, sample_weight, namespace[0]
        )
        classes, y_encoded = encode_labels(y)
        self.classes_ = classes
        if sample_weight is not None:
            sample_weight = check_weights(sample_weight, X.shape[0])
        for stale in ("s_", "C_", "loss_", "metric_"):  # set by _set_chosen
            self.__dict__.pop(stale, None)
        heads = self._resolve_heads()
        axes = self._extra_grids(X, sample_weight)
        folds = list(check_cv(self.cv, y, classifier=True).split(X, y, groups))
        name = type(self).__name__
        scored = check_folds(folds, y_encoded, classes, sample_weight, name)
        data = (X, y, y_encoded, sample_weight)
        grid_points, points = self._search(data, folds, scored, heads, axes, namespace)
        best, head, fold_best = self._select(grid_points, points, scored, heads, axes)
        best, chosen, finished = self._finish_search(
            best, head, fold_best, data, folds, points, scored
        )
        self.temperature_ = 1.0
        if self.calibrate:
            self.temperature_ = fit_temperature(
                np.concatenate([point.logits for point in chosen]),
                np.concatenate([y_encoded[test] for _, test in folds]),
                None
                if sample_weight is None
                else np.concatenate([sample_weight[test] for _, test in folds]),
            )
        if self.refit:
            self._finish_refit(best, head, data, namespace, finished)
        else:
            self._finish_folds([grid_points[b] for b in fold_best], chosen, head)
        return self

    def _search(self, data, folds, scored, heads, axes, namespace):
        """Fit every fold's paths; store the scores: ``(grid_points, points)``."""
        base = self._base_estimator()
        # With refit the folds only select, and may stop at a looser tolerance
        # (_path_tol); refit=False predicts with the fold models: full tol.
        grid_points, points = self._fit_folds(
            clone(base).set_params(tol=self._path_tol(base.tol))
            if self.refit
            else base,
            data, folds, scored, heads, axes,
            keep_models=self._finishes_chosen(base)
            or self._tries_no_margin(heads)
            or not self.refit,
            min_tol=base.tol if self.refit else None,
        )  # fmt: skip
        scores, n_iter, times = (
            np.array([[getattr(p, key) for p in fold] for fold in points], dtype)
            for key, dtype in (("score", float), ("n_iter", int), ("fit_time", float))
        )
        outer = [len(axes[name]) for name in self._shape_axes(axes)]
        self.scores_ = shaped(scores, grid_points, heads, outer, namespace)
        # n_iter_ stays one array (scikit-learn's checks compare it with 1):
        # with several losses, one column per point of cv_results_.
        self.n_iter_ = (
            shaped(n_iter, grid_points, heads, outer, namespace)
            if len(heads) == 1
            else on_device(n_iter, namespace)
        )
        self.cv_results_ = cv_results(grid_points, scores, times, n_iter, scored)
        return grid_points, points

    def _select(self, grid_points, points, scored, heads, axes):
        """Choose the best mean point: ``(point, its head, each fold's best)``.

        With ``refit`` every fold keeps the best mean point; without, each
        fold its own best (a fold without a score: the best mean point).
        """
        scores = np.array([[p.score for p in fold] for fold in points], float)
        best_mean = first_best(scores[scored].mean(axis=0))
        best = grid_points[best_mean]
        loss = best.get("loss")  # several heads may walk paths over s
        head = next(h for h in heads if h.inner_points[0].get("loss") == loss)
        self._warn_edges(type(self).__name__, best, head, axes)
        self.best_index_ = best_mean if self.refit else None
        if self.refit:
            return best, head, [best_mean] * len(points)
        return (
            best,
            head,
            [
                first_best(row) if ok else best_mean
                for row, ok in zip(scores, scored, strict=True)
            ],
        )

    def _tries_no_margin(self, heads):
        """Whether a refit search over its default margins probes ``m = 0``.

        Only for a head whose default margin is positive and whose loss
        takes ``m = 0`` (not softmax, NormFace, L- or A-Softmax).
        """
        return bool(self._warm_refit and self.refit and self.ms is None) and any(
            head.inner_points[0]["m"] > 0.0 and _accepts(head.margin.check_m)(0.0)
            for head in heads
        )

    def _finish_search(self, best, head, fold_best, data, folds, points, scored):
        """Finish the search: the chosen point and the models for the temperature.

        Returns ``(best, chosen, finished)``: the chosen grid point, each
        fold's :class:`PathPoint` at it, and those points again when they were
        fitted on to ``tol`` here (else None; the refit then walks the path).
        Where the search probes without a margin (:mod:`._cv_margin`) and the
        loss can drop the chosen one, a copy of each fold's model (fitted to
        ``tol``) is fitted on at ``m = 0`` for at most ``MARGIN_PROBE_ITER``
        iterations: never further than the model it is compared with. ``m =
        0`` wins on a clear paired gain (:func:`clearly_positive`); probes the
        cap stopped are then fitted on to ``tol``. ``margin_check_`` keeps
        both columns of held-out scores. The finish and the probe are two
        steps of one job per fold, on rows cut and prepared once.
        """
        base, finished, self.margin_check_ = self._base_estimator(), None, None
        chosen = [points[f][b] for f, b in enumerate(fold_best)]
        finishes = self._finishes_chosen(base)
        cap = min(MARGIN_PROBE_ITER, base.max_iter)
        probing = self._tries_no_margin([head])
        steps = [({"tol": base.tol}, False)] if finishes else []
        if probing:  # quiet: the probe is meant to stop at its cap
            steps.append(({"m": 0.0, "tol": base.tol, "max_iter": cap}, True))
        done = self._fit_on(chosen, data, folds, scored, steps) if steps else None
        if finishes:
            finished = chosen = done[0]
        if probing:
            probes = done[-1]
            scores = np.array([[p.score for p in chosen], [p.score for p in probes]]).T
            self.margin_check_ = {"m": (best["m"], 0.0), "scores": scores}
            if clearly_positive(np.diff(scores[scored], axis=1).ravel()):
                best, finished = {**best, "m": 0.0}, probes
                if any(point.n_iter >= cap for point in probes):
                    step = {"tol": base.tol, "max_iter": base.max_iter}
                    finished = self._fit_on(
                        probes, data, folds, scored, [(step, False)]
                    )[0]
                chosen = finished
        return best, chosen, finished

    def _fit_on(self, points, data, folds, scored, steps):
        """Each fold's model of ``points`` fitted on through ``steps``, one job a fold.

        :func:`~._cv_path.finish_chosen_folds` with this search's scorer,
        classes and jobs. Returns each step's points, one per fold.
        """
        done = finish_chosen_folds(
            [point.model for point in points], data, folds, self._scorer(),
            self.classes_, steps, scored, self.n_jobs, self.verbose,
        )  # fmt: skip
        return [list(step) for step in zip(*done, strict=True)]

    def _finishes_chosen(self, base):
        """Whether the folds' chosen models are fitted on to ``tol`` (path_tol).

        Only a refit search whose paths stop at a looser tolerance than
        ``tol``: its temperature must come from models of the refit's kind.
        """
        return bool(self.refit and self._path_tol(base.tol) > base.tol)

    def _finish_refit(self, best, head, data, namespace, finished=None):
        """Refit on all the rows at the chosen point (``refit=True``).

        ``finished`` are the folds' models at the chosen point fitted on to
        ``tol`` (:func:`~._cv_path.finish_chosen_folds`), or None: a warm
        refit starts from their mean, as ``LogisticRegressionCV`` does.
        """
        X, y, y_encoded, sample_weight = data
        point = searched(best)
        params, X_refit, transform = self._refit_rows(
            point, X, y_encoded, sample_weight, namespace
        )
        self._set_chosen({**point, **params}, head.path_name)
        # The linear refit walks the folds' warm path on all the data (the
        # kind of model they scored); the kernel refit is cold at the point.
        values = head.path_values
        steps = values[: values.index(point[head.path_name]) + 1]
        start = clone(self._base_estimator()).set_params(**params)
        if finished and self._warm_refit:
            mean = mean_model([p.model for p in finished], self.classes_)
            if mean is not None:  # (the search's settings, not a fold step's)
                settings = start.get_params(deep=False)
                start, steps = mean.set_params(**settings), steps[-1:]
        self.estimator_ = self._refit(
            start, X_refit, y, sample_weight,
            head.path_name, steps if self._warm_refit else (),
        )  # fmt: skip
        self.estimators_ = None
        if transform is not None:
            self._attach_metric(
                self.estimator_, point.get("metric"), transform, namespace
            )

    def _finish_folds(self, best_points, chosen, head):
        """Keep each fold's best model (``refit=False``); their mean settings."""
        chosen_points = [searched(point) for point in best_points]
        keys = dict.fromkeys(k for p in chosen_points for k in p)
        averaged = {}
        for key in keys:  # each key is in at least one chosen point
            values = [p[key] for p in chosen_points if key in p]
            same = len(values) == len(chosen_points)
            numeric = all(isinstance(v, float) for v in values)
            mean = same and numeric
            averaged[key] = float(np.mean(values)) if mean else values[0]
        self._set_chosen(averaged, head.path_name)
        self.estimator_ = None
        self.estimators_ = [point.model for point in chosen]
        self._fold_models_chosen()

    def _shape_axes(self, axes):
        """Return the outer axes that ``scores_`` has (all of them here)."""
        return list(axes)

    def _warn_edges(self, name, best, head, axes):
        """GridEdgeWarning for each chosen value on the edge of its grid."""
        ms = tuple(p["m"] for p in head.inner_points)
        grids = {head.path_name: head.path_values, **axes, "m": ms}
        warn_grid_edges(
            name, {k: best[k] for k in grids}, grids, head.margin, head.path_name,
            fold_scores=fold_scores_near(self.cv_results_, best),
        )  # fmt: skip

    def _refit_rows(self, point, X, y_encoded, sample_weight, namespace):
        """``(estimator params, rows, input transform)`` of the refit at ``point``."""
        return point, X, None

    def _fold_models_chosen(self):
        """Finish the fold models ``refit=False`` keeps (nothing to do here)."""

    def _fit_folds(
        self, base, data, folds, scored, heads, axes, keep_models=False, min_tol=None
    ):  # fmt: skip
        """Fit every fold at every grid point: ``(grid_points, points)``.

        ``points[f][b]`` is the :class:`PathPoint` of fold ``f`` at
        ``grid_points[b]`` (the order of ``cv_results_["params"]``). One job
        per fold and job point (the kernel's metric, learned on the fold's
        training rows); in it the rows are mapped once per map point (gamma)
        and every head (loss) and inner point (m) walks its path on them. The
        job and map axes lead, so the jobs' points in order are the grid's
        points in order. ``data`` is ``(X, y, y_encoded, sample_weight)``;
        ``keep_models`` keeps every point's model (``refit=False`` predicts
        with them, :func:`~._cv_path.finish_chosen_folds` continues them);
        ``min_tol`` the tolerance a path may tighten to
        (:func:`~._cv_path.path_tolerance`).
        """
        job_points = _grid_points(axes, self._job_params)
        map_points = _grid_points(axes, self._map_params)
        grid_points = search_points(job_points, map_points, heads)
        grid = PathGrid(
            heads, map_points, self._scorer(), self.classes_,
            keep_models, self.verbose, self._prepare_fold, min_tol,
        )  # fmt: skip
        name = type(self).__name__
        # scikit-learn's Parallel carries array API dispatch to the workers.
        jobs = [
            delayed(fit_fold)(
                clone(base),
                data,
                train,
                test,
                grid,
                f"{name} fold {f + 1}/{len(folds)}",
                scored[f],
                job_point,
            )
            for f, (train, test) in enumerate(folds)
            for job_point in job_points
        ]
        done = Parallel(n_jobs=self.n_jobs, verbose=self.verbose)(jobs)
        flat = [point for job in done for point in job]
        n_grid = len(grid_points)
        return grid_points, [flat[i : i + n_grid] for i in range(0, len(flat), n_grid)]

    def _set_chosen(self, point, path_name):
        for key, value in point.items():
            setattr(self, f"{key}_", value)
        if path_name == "C":
            self.s_ = None

    def _refit(self, start, X, y, sample_weight, path_name, steps):
        """Refit on all the data at the chosen point.

        With ``_warm_refit``, along the folds' warm-started path (``steps``:
        the path up to the chosen value; the steps before it at
        :meth:`_path_tol`, the chosen point at ``tol``): where the data are
        nearly separable a model fitted at large ``s`` from another start is
        a different model, and on frozen embeddings it can score a point
        below the path's (the embeddings page measures it). Where the folds'
        chosen models were fitted on to ``tol``, ``start`` is their mean and
        ``steps`` the chosen value alone, as
        :class:`~sklearn.linear_model.LogisticRegressionCV` refits from the
        folds' mean coefficients. The kernel search refits cold (``steps``
        empty): a fold's coefficients live in its own feature space.
        """
        estimator = copy.deepcopy(start).set_params(warm_start=bool(steps))
        values = steps or (None,)  # the last step is the chosen point
        path = [
            # The steps before the chosen point only carry the warm start.
            {
                **({} if value is None else {path_name: value}),
                "tol": start.tol if i == len(values) - 1 else self._path_tol(start.tol),
            }
            for i, value in enumerate(values)
        ]
        for _ in fit_path(estimator, X, y, sample_weight, path):
            pass
        return estimator.set_params(warm_start=False)

    # -- prediction (the public methods: MarginPredictMixin) ------------------
    def _predicting_models(self):
        """Return the models that predict: the refit one, or each fold's best."""
        if self.estimator_ is not None:
            return [self.estimator_]
        return self.estimators_

    def _combined_logits(self, pairs, method, xp):
        """Return the models' mean logits over ``classes_`` (calibrated: probabilities).

        ``predict_proba`` and ``predict_log_proba`` read the logits the
        temperature was fitted on, divided by it: those of
        :meth:`decision_function`, as ``[0, z_1 - z_0]`` for two classes.
        """
        logits = [
            full_class_logits(z, model.classes_, self.classes_, xp)
            for model, z in pairs
        ]
        logits = logits[0] if len(logits) == 1 else xp.mean(xp.stack(logits), axis=0)
        if method not in ("predict_proba", "predict_log_proba"):
            return logits
        if logits.shape[1] == 2:
            decision = logits[:, 1] - logits[:, 0]
            logits = xp.stack([xp.zeros_like(decision), decision], axis=1)
        return logits / float(self.temperature_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        # Fit and predict in the input's namespace under array_api_dispatch
        # (torch, CuPy, array-api-strict).
        tags.array_api_support = True
        return tags
