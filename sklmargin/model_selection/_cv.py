"""The public cross-validated estimators: their signatures and docs.

Each class declares its ``__init__`` (scikit-learn reads the parameters from
the signature; :func:`~sklmargin.model_selection._cv_grid.store_params`
stores them verbatim) and its estimator class. Every parameter it shares with
that estimator is validated by the estimator's own constraints and passed on
(:meth:`_BaseMarginSoftmaxCV._shared_params`). The parameter descriptions the
two classes share are written once (:mod:`._cv_docs`); the grids' default
values and checks are in :mod:`._cv_grid`. The kernel search adds the
``metric`` axis (learned per fold, :meth:`_prepare_fold`), the ``gamma`` axis
(mapped once per fold and metric), optionally the ``loss`` axis, and its own
default ``s`` and ``C`` paths. The search itself is
:mod:`sklmargin.model_selection._cv_base`.
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np

from .._utils.array_api import NUMPY, get_namespace
from .._utils.compat import Interval, StrOptions
from .._utils.legacy_state import fitted_dtype_name
from .._utils.validation import FeatureScaleWarning, check_feature_scales
from ..estimators._kernel import KernelMarginSoftmaxClassifier
from ..estimators._linear import MarginSoftmaxClassifier
from ..features._gamma import scale_gamma
from ..features._input_transform import apply_input_transform
from ..features._kernel_features import gamma_factor, resolve_gamma
from ..losses._base import Margin
from ..losses._registry import LOSS_NAMES
from ._cv_base import _BaseMarginSoftmaxCV
from ._cv_docs import KERNEL_PARAMS_DOC, SHARED_PARAMS_DOC, fill_docs
from ._cv_grid import (
    _DEFAULT_GAMMAS,
    _KERNEL_CS,
    _S_FACTORS,
    _check_gamma,
    _valid_values,
    _write_factor,
    store_params,
)
from ._edges import fold_scores_near, warn_grid_edges


class MarginSoftmaxClassifierCV(_BaseMarginSoftmaxCV):
    r"""Margin-softmax classifier with built-in cross-validation of ``s`` and ``m``.

    The counterpart of :class:`~sklearn.linear_model.LogisticRegressionCV` for
    :class:`MarginSoftmaxClassifier`: for each fold and each margin ``m`` one
    warm-started path over ascending ``s`` (ascending ``C`` for the penalised
    losses), the point of best mean held-out score, a refit, and a
    temperature :math:`T` fitted on the out-of-fold logits at that point, so
    that

    .. math:: \hat p(x) = \mathrm{softmax}\big(z(x) / T\big)

    is calibrated while :meth:`decision_function` (the margin-free logits
    :math:`z`) and :meth:`predict` are the model's own. The temperature is the
    minimiser of the held-out log loss, a convex problem in :math:`1/T`.

    Parameters
    ----------
    loss : str, default="am-softmax"
        As in :class:`MarginSoftmaxClassifier`.
    SHARED_PARAMETERS
    t, C, lambda_min, constant_feature, fit_intercept, class_weight, max_iter, tol
        Passed to :class:`MarginSoftmaxClassifier` (``C`` is the fixed value of
        the losses tuned along ``s``).
    path_tol : float or None, default=1e-3
        The tolerance (read as ``tol`` is: its stop test at ``path_tol * s``)
        of the fits that only select: every point of the folds' paths. The
        looser of ``tol`` and ``path_tol`` is used; None fits everything at
        ``tol``. That test is absolute, and where every gradient entry is
        small (many classes, many features, noisy labels: a linear probe on
        embeddings) the start would already pass it and the path would
        score the same start at every ``s``; so each fold's path measures
        its cold start's gradient and stops where it is ten times smaller,
        when that is tighter than ``path_tol`` (never tighter than ``tol``).
        A model stopped at ``path_tol`` is less sharp than one fitted
        to ``tol``, and a temperature fitted on its held-out logits would
        over-sharpen the final model. So once the paths have chosen the
        point, each fold's model there is fitted on to ``tol``
        (warm-started), the temperature is fitted on those models' held-out
        logits, and the refit starts from their mean (as
        ``LogisticRegressionCV`` refits from the folds' mean coefficients)
        and is fitted to ``tol``. With ``refit=False`` the fold models
        predict, and are fitted at ``tol``. The default makes the search
        much cheaper than None at about the same accuracy and calibration
        (the model-selection page has the measurements).
    RUN_PARAMETERS

    Attributes
    ----------
    SEARCH_ATTRIBUTES

    See Also
    --------
    MarginSoftmaxClassifier : One fit at given ``m`` and ``s``.
    KernelMarginSoftmaxClassifierCV : The same over kernel (Nyström) features.
    sklearn.linear_model.LogisticRegressionCV : The model this one mirrors.
    sklearn.calibration.CalibratedClassifierCV : Post-hoc calibration of any
        fitted classifier.

    References
    ----------
    .. [1] Wang et al., "CosFace", arXiv:1801.09414.
    .. [2] Guo et al., "On Calibration of Modern Neural Networks", ICML 2017,
       arXiv:1706.04599.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklmargin import MarginSoftmaxClassifierCV
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = MarginSoftmaxClassifierCV(ss=[5.0, 10.0, 20.0], ms=[0.0, 0.1], cv=3)
    >>> clf = make_pipeline(StandardScaler(), clf).fit(X, y)
    >>> clf[-1].scores_.shape  # (folds, ms, ss)
    (3, 2, 3)
    >>> clf.score(X, y) > 0.9
    True
    """

    _estimator_class = MarginSoftmaxClassifier
    _parameter_constraints: dict = {
        **_BaseMarginSoftmaxCV._parameter_constraints,
        "path_tol": [Interval(Real, 0, None, closed="neither"), None],
    }
    # A search whose saved state has no path_tol (saved before the parameter
    # existed) fitted every path point at the full tol.
    _legacy_params = {"path_tol": lambda state: None}

    def __init__(
        self,
        loss="am-softmax",
        ss=None,
        ms=None,
        Cs=None,
        cv=5,
        scoring=None,
        calibrate=True,
        t=1.0,
        C=1.0,
        lambda_min=None,
        constant_feature=1.0,
        fit_intercept=True,
        class_weight=None,
        max_iter=1000,
        tol=1e-4,
        path_tol=1e-3,
        n_jobs=None,
        refit=True,
        random_state=None,
        verbose=0,
    ):
        store_params(self, locals())

    def _path_tol(self, tol):
        # The fits that only select stop at the looser of the two.
        return tol if self.path_tol is None else max(tol, float(self.path_tol))


fill_docs(MarginSoftmaxClassifierCV, SHARED_PARAMS_DOC)


class KernelMarginSoftmaxClassifierCV(_BaseMarginSoftmaxCV):
    """Kernel margin-softmax classifier with cross-validated metric, gamma, m and s.

    :class:`MarginSoftmaxClassifierCV` over the Nyström (or random Fourier)
    features of :class:`KernelMarginSoftmaxClassifier`, with more grid axes:
    the learned input ``metric``, the RBF width ``gamma`` and, optionally,
    the head (``loss``: e.g. AM-Softmax against plain softmax). For each fold
    and metric the metric is learned on the fold's training rows only (its
    pilot fit; the held-out rows are moved by a transform learned without
    them); on those rows each fold is mapped once per ``gamma``, and on the
    mapped rows every loss and ``m`` runs its warm-started path (over ``s``,
    or ``C`` for the penalised losses), each point scored from one pass of
    held-out logits. The selection is the best mean held-out score over every
    (metric, gamma, loss, m, path point). The temperature is fitted on the
    out-of-fold logits as in the linear estimator. The final model learns the
    chosen metric on all rows and is fitted cold at the chosen point (a
    fold's coefficients live in that fold's feature space). A chosen ``s``,
    ``C``, ``m`` or ``gamma`` at the end of its grid, where it beats its
    neighbour by more than the folds' noise, raises a
    :class:`~sklmargin.GridEdgeWarning` that names a wider grid.

    At the defaults it is level with a grid-searched RBF ``SVC`` in
    accuracy, at a fraction of its CPU time, and a little ahead of the plain
    :class:`KernelMarginSoftmaxClassifier` at its defaults (the benchmarks
    page, "The search with the metric against the tuned SVC", has the
    measurements and their command).

    Parameters
    ----------
    loss : str or list of str, default="am-softmax"
        As in :class:`KernelMarginSoftmaxClassifier`, or a list of losses
        searched as one more axis (the head), each along its own path: ``ss``
        for the losses tuned along ``s``, ``Cs`` for those tuned along ``C``
        (plain ``"softmax"``: default ``C`` path 1, 10, 100). ``scores_`` is
        then a dict keyed by loss. The default searches AM-Softmax only: a
        second head costs CPU, and where the search chose plain softmax the
        test accuracy did not gain on average (the model-selection page).
    gammas : array-like of {"scale", "<factor>*scale", float}, default=None
        RBF widths: multiples of "scale" (``1 / (n_features Var(X))``,
        sample-weighted), resolved on each fold's training rows after its
        metric and, for the final model, on all the (transformed) rows; or
        fixed floats. None means ``("0.5*scale", "scale", "2*scale")``:
        tuned RBF SVCs often choose a width other than "scale". Each
        fold is mapped once per width and metric. ``cv_results_["param_gamma"]``
        holds the entries as given; ``gamma_`` is always the float the final
        model used.
    metric : {"diagonal", "full"}, None or list of them, default=(None, "diagonal")
        The input metric of :class:`KernelMarginSoftmaxClassifier` (its pilot
        fit, default settings), or a list of candidates searched as an axis.
        Each is learned per fold from the fold's training rows only, so no
        held-out label reaches the scores; the final model learns the chosen
        one on all rows (its ``input_transform_``). A single value (one
        search, no metric axis in ``scores_``) or a list (an axis after the
        fold axis). The default searches both no metric and the diagonal
        metric: where the metric does not help (a metric learned from a pilot
        fit can also hurt), the search can choose none.
    metric_steps : int, default=2
        Metric steps, as in :class:`KernelMarginSoftmaxClassifier`.
    n_components : int or "auto", default="auto"
        Kernel features, as in :class:`KernelMarginSoftmaxClassifier`; with
        "auto" each fold takes its width from its own training rows and the
        refit from all rows, so that large sets get the wider map they need
        (measured on the benchmarks page).
    SHARED_PARAMETERS
    t, C, lambda_min, kernel_approximation, centres, compute_dtype, \
constant_feature, fit_intercept, class_weight, max_iter, tol
        Passed to :class:`KernelMarginSoftmaxClassifier`.
    RUN_PARAMETERS

    Attributes
    ----------
    gamma_ : float
        The chosen RBF width, resolved on all the (transformed) rows; with
        ``refit=False`` the mean of the fold models' widths.
    metric_ : {"diagonal", "full"} or None
        The chosen metric.
    loss_ : str
        The chosen loss (only when ``loss`` is a list).
    SEARCH_ATTRIBUTES

    See Also
    --------
    KernelMarginSoftmaxClassifier : One fit at given ``gamma``, ``m``, ``s``.
    MarginSoftmaxClassifierCV : The linear counterpart.

    References
    ----------
    .. [1] Rahimi and Recht, "Random Features for Large-Scale Kernel Machines",
       NeurIPS 2007.
    .. [2] Guo et al., "On Calibration of Modern Neural Networks", ICML 2017,
       arXiv:1706.04599.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sklmargin import KernelMarginSoftmaxClassifierCV
    >>> X, y = make_moons(n_samples=200, noise=0.2, random_state=0)
    >>> clf = KernelMarginSoftmaxClassifierCV(
    ...     gammas=[0.5, 2.0], ms=[0.05], ss=[10.0, 30.0], n_components=100,
    ...     cv=3, random_state=0,
    ... ).fit(X, y)
    >>> clf.scores_.shape  # (folds, metrics, gammas, ms, ss)
    (3, 2, 2, 1, 2)
    >>> clf.metric_ in (None, "diagonal")
    True
    >>> clf.score(X, y) > 0.9
    True
    """

    _estimator_class = KernelMarginSoftmaxClassifier
    _job_params = ("metric",)
    _map_params = ("gamma",)
    _warm_refit = False
    _parameter_constraints: dict = {
        **_BaseMarginSoftmaxCV._parameter_constraints,
        "gammas": ["array-like", None],
        # One value (one search, as before) or a list of candidates.
        "loss": [StrOptions(set(LOSS_NAMES)), Margin, "array-like"],
        "metric": [StrOptions({"diagonal", "full"}), None, "array-like"],
    }
    # A saved search whose state lacks ``compute_dtype`` and ``centres``
    # (saved before they existed; sklmargin._utils.legacy_state) takes centres'
    # default and the dtype the refitted model ran in, as
    # KernelMarginSoftmaxClassifier's. One whose state lacks ``metric`` (saved
    # before the learned metric) searched without one.
    _legacy_params = {
        "compute_dtype": lambda state: fitted_dtype_name(state) or "auto",
        "metric": lambda state: None,
        "metric_steps": lambda state: 2,
    }

    def __init__(
        self,
        loss="am-softmax",
        gammas=None,
        ss=None,
        ms=None,
        Cs=None,
        cv=3,
        scoring=None,
        calibrate=True,
        t=1.0,
        C=1.0,
        lambda_min=None,
        n_components="auto",
        kernel_approximation="nystroem",
        centres="uniform",
        metric=(None, "diagonal"),
        metric_steps=2,
        compute_dtype="auto",
        constant_feature=None,
        fit_intercept=True,
        class_weight=None,
        max_iter=1000,
        tol=1e-4,
        n_jobs=None,
        refit=True,
        random_state=None,
        verbose=0,
    ):
        store_params(self, locals())

    def _base_estimator(self):
        # The folds and the refit see rows the metric already transformed
        # (_learn_metric): they learn none of their own. With several losses
        # the first one is the base (each inner point sets its own loss).
        losses, _ = self._losses()
        return super()._base_estimator().set_params(loss=losses[0], metric=None)

    def _metrics(self):
        """Return the metrics searched, and whether ``metric`` is a list."""
        if self.metric is None or isinstance(self.metric, str):
            return (self.metric,), False
        metrics = tuple(dict.fromkeys(self.metric))
        if not metrics:
            raise ValueError("metric must hold at least one value; got an empty list.")
        for metric in metrics:
            if metric not in (None, "diagonal", "full"):
                raise ValueError(
                    'metric must be "diagonal", "full", None or a list of them; '
                    f"got {metric!r} in metric={self.metric!r}."
                )
        return metrics, True

    def _learn_metric(self, metric, X, y_encoded, classes, sample_weight, namespace):
        """``(rows, transform)``: learn ``metric`` on these rows, and apply it."""
        learner = self._base_estimator().set_params(metric=metric)
        return learner._metric_rows(X, y_encoded, classes, sample_weight, namespace)

    def _prepare_fold(self, job_point, rows):
        """Learn a job's metric on its fold's training rows only; resolve gamma.

        The held-out rows are moved by the transform learned without them, as
        the refit's test rows will be. "scale" (and its multiples) is
        resolved on the fold's (transformed) training rows, as the refit
        resolves it on all of them.
        """
        metric = job_point["metric"]
        namespace = get_namespace(rows.X_train, user_input=True)
        transform = None
        if metric is not None:
            classes, y_encoded = np.unique(rows.y_train, return_inverse=True)
            X_train, transform = self._learn_metric(
                metric, rows.X_train, y_encoded, classes, rows.sw_train, namespace
            )
            X_test = apply_input_transform(rows.X_test, transform)
            rows = rows._replace(X_train=X_train, X_test=X_test)
        scale = scale_gamma(rows.X_train, rows.sw_train)

        def map_params(point):
            return {"gamma": resolve_gamma(point["gamma"], scale)}

        def attach(model):
            self._attach_metric(model, metric, transform, namespace)

        return rows, map_params, None if transform is None else attach

    def _refit_rows(self, point, X, y_encoded, sample_weight, namespace):
        # The user's rows are checked here, before the metric: the refit sees
        # the metric's rows, whose columns are scaled by their learned
        # relevance on purpose (a few columns dominate after a StandardScaler,
        # and that is no sign of mixed units); _refit skips its own check.
        if namespace[0] is NUMPY:
            weights = np.ones(X.shape[0]) if sample_weight is None else sample_weight
            check_feature_scales(X, weights, self)
        metric, transform = point["metric"], None
        if metric is not None:
            X, transform = self._learn_metric(
                metric, X, y_encoded, self.classes_, sample_weight, namespace
            )
        params = {key: value for key, value in point.items() if key != "metric"}
        params["gamma"] = resolve_gamma(point["gamma"], scale_gamma(X, sample_weight))
        return params, X, transform

    def _refit(self, start, X, y, sample_weight, path_name, steps):
        # The FeatureScaleWarning was decided on the user's rows (_refit_rows).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FeatureScaleWarning)
            return super()._refit(start, X, y, sample_weight, path_name, steps)

    def _attach_metric(self, model, metric, transform, namespace):
        """Give a fitted model (refit or fold) the transform its rows had."""
        model.set_params(metric=metric)
        model._set_input_transform(transform)
        if namespace[0] is not NUMPY:
            from ..estimators._device import move_fitted_to_device

            move_fitted_to_device(model, *namespace)

    def _fold_models_chosen(self):
        # gamma_ is a width used: the mean of the fold models' (each resolved
        # "scale" on its fold's rows).
        self.gamma_ = float(np.mean([model.gamma for model in self.estimators_]))

    def _shape_axes(self, axes):
        # A single metric given as a value adds no axis to scores_.
        return [a for a in axes if a != "metric" or self._metrics()[1]]

    def _warn_edges(self, name, best, head, axes):
        ms = tuple(p["m"] for p in head.inner_points)
        grids = {head.path_name: head.path_values, "m": ms}
        chosen = {head.path_name: best[head.path_name], "m": best["m"]}
        formats, values = {}, {}
        factors = [gamma_factor(g) for g in axes["gamma"]]
        if all(f is not None for f in factors):  # multiples of "scale"
            grids["gamma"] = tuple(factors)
            chosen["gamma"] = gamma_factor(best["gamma"])
            formats["gamma"] = _write_factor
            values["gamma"] = dict(zip(factors, axes["gamma"], strict=True))
        elif not any(f is not None for f in factors):  # widths
            grids["gamma"], chosen["gamma"] = axes["gamma"], best["gamma"]
        scores = fold_scores_near(self.cv_results_, best, values)
        warn_grid_edges(
            name, chosen, grids, head.margin, head.path_name, formats, scores
        )

    def _default_path(self, margin):
        if margin.penalized:
            return "C", _KERNEL_CS
        if not margin.uses_s:
            return super()._default_path(margin)
        s = margin.default_s_kernel or margin.default_s
        return "s", tuple(float(s * f) for f in _S_FACTORS)

    def _extra_grids(self, X, sample_weight):
        metrics, _ = self._metrics()
        if self.gammas is None:
            return {"metric": metrics, "gamma": _DEFAULT_GAMMAS}
        losses, _ = self._losses()
        gammas = _valid_values(
            tuple(self.gammas),
            _check_gamma,
            "gamma",
            losses[0] if len(losses) == 1 else list(losses),
            sort=False,
            domain='RBF widths ("scale", "<factor>*scale" or finite positive floats)',
        )
        return {"metric": metrics, "gamma": gammas}


fill_docs(KernelMarginSoftmaxClassifierCV, KERNEL_PARAMS_DOC)
