"""The public cross-validated estimators: their signatures, grids and docs.

Each class declares its ``__init__`` (scikit-learn reads the parameters from
the signature; :func:`~sklmargin.model_selection._cv_base.store_params`
stores them verbatim) and its estimator class. Every parameter it shares with
that estimator is validated by the estimator's own constraints and passed on
(:meth:`_BaseMarginSoftmaxCV._shared_params`). The parameter descriptions the
two classes share are written once (``_SHARED_PARAMS_DOC``,
``_RUN_PARAMS_DOC``, ``_ATTRIBUTES_DOC``). The kernel search adds the
``gamma`` axis (mapped once per fold), its own default ``s`` path and the
input metric learned once before the search. The search itself is
:mod:`sklmargin.model_selection._cv_base`.
"""

from __future__ import annotations

from numbers import Real

from sklearn.utils._param_validation import Interval

from .._utils.legacy_state import fitted_dtype_name
from .._utils.validation import check_sample_and_class_weight
from ..estimators._kernel import KernelMarginSoftmaxClassifier
from ..estimators._linear import MarginSoftmaxClassifier
from ..features._gamma import scale_gamma
from ._cv_base import (
    _BaseMarginSoftmaxCV,
    _check_positive,
    _valid_values,
    store_params,
)

_SHARED_PARAMS_DOC = """\
    ss : array-like of float, default=None
        The path over the logit scale ``s``, fitted in ascending order with warm
        starts. None means 10 geometric steps over the loss's registry grid
        widened by 2/3 and 8/3 (AM-Softmax and ArcFace: 10 to 160; the kernel
        estimator: its default ``s`` times 1/2, 1, 2 and 4, i.e. 50 to 400). Values
        outside the loss's domain are skipped with a warning. Must be None for
        the losses tuned along ``C``.
    ms : array-like of float, default=None
        Margins; each gets its own path. None means the loss's default margin
        only (0.05 for AM-Softmax and ArcFace, 1.5 for L-Softmax, 2 for
        A-Softmax, none for softmax and NormFace; the scale matters most; the
        registry's grid,
        ``get_margin(loss).search_grid["m"]``, crosses three). Values outside
        the loss's domain (e.g. a
        margin for NormFace, ``m < 1`` for L-Softmax) are *skipped* with a
        ``UserWarning`` naming them, so one grid can be crossed with every
        loss; a grid with no valid value raises the loss's ValueError.
    Cs : array-like of float, default=None
        The path over the inverse L2 strength ``C`` of the penalised losses
        (``"softmax"``, ``"l-softmax"``), which have no useful ``s``; None
        means 10 geometric steps over the registry's range. Must be None for
        the other losses.
    cv : int, cross-validation generator or iterable, default=5
        As in :class:`~sklearn.linear_model.LogisticRegressionCV`: an int is a
        :class:`~sklearn.model_selection.StratifiedKFold` without shuffling.
    scoring : str or callable, default=None
        Selection criterion on the held-out folds; None is (sample-weighted)
        accuracy.
    calibrate : bool, default=True
        Fit the temperature ``T`` on the out-of-fold logits at the chosen
        point; False keeps ``T = 1``.
"""

_KERNEL_PARAMS_DOC = _SHARED_PARAMS_DOC.replace(
    """default=5
        As in""",
    """default=3
        Three folds, as the tuned-SVC protocol of the benchmarks: each fold is
        mapped once per ``gamma`` and five folds cost about twice as much. As
        in""",
)

_RUN_PARAMS_DOC = """\
    n_jobs : int, default=None
        Parallel jobs over (fold, grid row) pairs (joblib); results do not
        depend on it.
    refit : bool, default=True
        Refit on all the data at the best mean score (the linear estimator
        along the same warm path up to the chosen ``s``, the kernel estimator
        cold at the chosen point). If False, as in ``LogisticRegressionCV``: each
        fold's own best model is kept, predictions average their logits, and
        ``s_``/``m_`` are the averages of the folds' best values.
    random_state : int, RandomState instance or None, default=None
        Passed to the inner estimator (it does not shuffle the folds).
    verbose : int, default=0
        One line per fold and grid point (score, iterations, time).
"""

_ATTRIBUTES_DOC = """\
    classes_ : ndarray of shape (n_classes,)
    s_, m_ : float
        The chosen scale and margin (``s_`` is None for the losses tuned along
        ``C``, which then have ``C_``).
    temperature_ : float
        The calibration temperature ``T`` (1.0 when ``calibrate=False``).
    scores_ : ndarray
        Held-out score of every fold and grid point, of shape
        ``(n_folds, *grid_shape, n_path)`` (see ``cv_results_["params"]`` for
        the order).
    n_iter_ : ndarray of int, same shape as ``scores_``
        L-BFGS iterations of each warm-started fit. Both arrays are in ``X``'s
        namespace and on its device after a fit on array API inputs
        (:ref:`array_api`).
    cv_results_ : dict of ndarray
        As :class:`~sklearn.model_selection.GridSearchCV`'s: ``params``,
        ``param_<name>``, ``split<k>_test_score``, ``mean_test_score``,
        ``std_test_score``, ``rank_test_score``, ``mean_fit_time`` and
        ``mean_n_iter``, one entry per grid point.
    best_index_ : int or None
        Index of the chosen point in ``cv_results_`` (None if ``refit=False``).
    estimator_ : estimator or None
        The model refit on all the data (None if ``refit=False``).
    estimators_ : list of estimators or None
        Each fold's best model (None if ``refit=True``).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
"""


def _fill_docs(cls, params_doc):
    """Write the descriptions the two searches share into ``cls.__doc__``."""
    for key, text in (
        ("SHARED_PARAMETERS", params_doc),
        ("RUN_PARAMETERS", _RUN_PARAMS_DOC),
        ("SEARCH_ATTRIBUTES", _ATTRIBUTES_DOC),
    ):
        cls.__doc__ = cls.__doc__.replace(f"    {key}\n", text)


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
        The tolerance (as ``tol``: the largest absolute gradient entry below
        ``path_tol * s``) of the fits that only select: every point of the
        folds' paths and the refit's steps before the chosen ``s``. The
        refit's chosen point is then fitted on to ``tol``. The looser of
        ``tol`` and ``path_tol`` is used; None fits everything at ``tol`` (the
        default before). With ``refit=False`` the fold models predict, and are
        fitted at ``tol``. Measured on CLIP ViT-B/32 features of Caltech-101
        and UCF101 (100 and 101 classes, unit rows) against
        ``LogisticRegressionCV(Cs=10, cv=3)``: 0.27 and 0.47 times its CPU
        time (``path_tol=None``: 0.48 and 1.12) at test accuracy 0.9391 and
        0.7930 (None: 0.9383 and 0.7893; LogisticRegressionCV: 0.9351 and
        0.7920) and log loss 0.201 and 0.747 (None: 0.192 and 0.762;
        LogisticRegressionCV: 0.414 and 0.765). ``tol=1e-3`` for every fit,
        the chosen point's included, is as cheap but lost 0.5 and 0.8 points
        (0.9343 and 0.7851): the last fit at ``tol`` is what keeps the
        accuracy (``benchmarks/results_embeddings.md``). On the 8 CV
        benchmark sets (standardised; 5 folds of seeds 0, 1 and 2): 0.54 to
        0.61 times ``LogisticRegressionCV()``'s CPU time (None: 1.42 to
        1.52), mean test accuracy 0.8402 over the three seeds (None: 0.8391;
        seed 0 alone: 0.8386 against 0.8407; dna -1.1 and usps -0.5 points,
        vowel +1.6) and mean log loss 0.511 (None: 0.525). The temperature
        is fitted on the folds' logits, fitted at ``path_tol``, while the
        refit's chosen point is the sharper model fitted on to ``tol``:
        letter's log loss rose from 0.88 to 0.93-1.04, and more searches
        choose an end of the path (``GridEdgeWarning`` on 3 of the 8 sets
        against 2, seed 0; ``benchmarks/results_cv_defaults.md``).
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
    # Searches saved before path_tol (issue 28, round 5) fitted every path
    # point at the full tol.
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


_fill_docs(MarginSoftmaxClassifierCV, _SHARED_PARAMS_DOC)


class KernelMarginSoftmaxClassifierCV(_BaseMarginSoftmaxCV):
    """Kernel margin-softmax classifier with cross-validated gamma, m and s.

    :class:`MarginSoftmaxClassifierCV` over the Nyström (or random Fourier)
    features of :class:`KernelMarginSoftmaxClassifier`, with one more grid
    axis: the RBF width ``gamma``. Each fold's rows are mapped once per
    ``gamma``; on them every ``m`` runs its warm-started path over ``s``, each
    point scored from one pass of held-out logits. The temperature is fitted
    on the out-of-fold logits as in the linear estimator. The final model is
    fitted cold at the chosen point (a fold's coefficients live in that fold's
    feature space). A chosen ``s`` or ``gamma`` at the end of its grid raises
    a ``UserWarning`` that names a wider grid.

    Parameters
    ----------
    loss : str, default="am-softmax"
        As in :class:`KernelMarginSoftmaxClassifier`.
    gammas : array-like of {"scale", float}, default=None
        RBF widths. None means ``(0.5, 1, 2)`` times "scale" (``1 / (n_features
        Var(X))``, sample-weighted, on the training data): tuned SVCs chose a
        width other than "scale" on 4 of 6 data sets, and 2 x "scale" is worth
        +1.1 points on letter. Each fold is mapped once per width and every
        point of the ``s`` path is fitted on those rows, so a width costs one
        map and one path per fold. "scale" in the list is resolved the same
        way; ``gamma_`` is always the float used.
    metric : {"diagonal", "full"} or None, default="diagonal"
        The input metric of :class:`KernelMarginSoftmaxClassifier`, learned
        *once* from all the training rows (its pilot fit, default settings)
        before the search, as a scaler fitted before a search would be: every
        fold and grid point then sees the transformed rows (``gammas``'
        "scale" is resolved on them) and the final model applies the same
        transform (its ``input_transform_``). The metric has seen the held-out
        folds' labels, so the CV scores of all grid points are equally a
        little optimistic. None: the search and its model learn no metric.
        Measured at the defaults against ``SVC(C=10, gamma="scale")`` on seven
        data sets (vowel, segment, dna, satimage, usps, letter and a 20,000 x
        50 synthetic set; ``benchmarks/kernel_metric.py`` in the source
        repository): mean accuracy difference -0.36 points with the metric,
        -2.49 without; better on six sets, 2.1 points worse on satimage.
    metric_steps : int, default=2
        Metric steps, as in :class:`KernelMarginSoftmaxClassifier`.
    SHARED_PARAMETERS
    t, C, lambda_min, n_components, kernel_approximation, centres, \
compute_dtype, constant_feature, fit_intercept, class_weight, max_iter, tol
        Passed to :class:`KernelMarginSoftmaxClassifier`.
    RUN_PARAMETERS

    Attributes
    ----------
    gamma_ : float
        The chosen RBF width.
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
    >>> clf.scores_.shape  # (folds, gammas, ms, ss)
    (3, 2, 1, 2)
    >>> clf.score(X, y) > 0.9
    True
    """

    _estimator_class = KernelMarginSoftmaxClassifier
    _map_params = ("gamma",)
    _warm_refit = False
    _parameter_constraints: dict = {
        **_BaseMarginSoftmaxCV._parameter_constraints,
        "gammas": ["array-like", None],
    }
    # Searches saved before issue 17 (d6c350a) have no ``compute_dtype`` and
    # ``centres`` (sklmargin._utils.legacy_state): centres its default, and the
    # dtype the refitted model ran in, as KernelMarginSoftmaxClassifier's.
    # A search saved before the learned metric (issue 25) searched without one.
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
        n_components=1000,
        kernel_approximation="nystroem",
        centres="uniform",
        metric="diagonal",
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
        # (_metric_rows): they learn none of their own.
        return super()._base_estimator().set_params(metric=None)

    def _metric_rows(self, X, y_encoded, sample_weight, namespace):
        """Learn the input metric once on all rows; the search runs on them.

        As a scaler fitted on the training rows before a search: every fold
        and grid point sees the same transformed rows, ``gamma="scale"`` is
        resolved on them, and the final model applies the transform.
        """
        if self.metric is None:
            return X, None
        learner = super()._base_estimator()  # with this search's metric
        weights = check_sample_and_class_weight(
            sample_weight, self.class_weight, self.classes_, y_encoded, X.shape[0]
        )
        X = learner._fit_input_transform(
            X, y_encoded, weights, *(namespace or (None, None))
        )
        return X, learner.input_transform_

    def _attach_metric(self, model, transform, namespace):
        """Give a fitted model (refit or fold) the transform its rows had."""
        model.set_params(metric=self.metric)
        model._set_input_transform(transform)
        if namespace is not None:
            from ..estimators._device import move_fitted_to_device

            move_fitted_to_device(model, *namespace)

    def _default_path(self, margin):
        if margin.penalized or not margin.uses_s:
            return super()._default_path(margin)
        s = margin.default_s_kernel or margin.default_s
        return "s", tuple(float(s * f) for f in _S_FACTORS)

    def _extra_grids(self, X, sample_weight):
        scale = scale_gamma(X, sample_weight)
        if self.gammas is None:
            return {"gamma": tuple(float(f * scale) for f in _GAMMA_FACTORS)}
        gammas = _valid_values(
            tuple(self.gammas),
            _check_gamma,
            "gamma",
            self.loss,
            sort=False,
            domain='RBF widths ("scale" or finite positive floats)',
        )
        resolved = (scale if g == "scale" else g for g in gammas)
        return {"gamma": tuple(dict.fromkeys(float(g) for g in resolved))}


_fill_docs(KernelMarginSoftmaxClassifierCV, _KERNEL_PARAMS_DOC)


#: Default kernel width grid, multiples of gamma="scale" (see ``gammas``).
_GAMMA_FACTORS = (0.5, 1.0, 2.0)
#: Default s path of the kernel search, multiples of the loss's kernel default s.
_S_FACTORS = (0.5, 1.0, 2.0, 4.0)


def _check_gamma(gamma):
    """Return a valid RBF width of the ``gammas`` grid: "scale" or a float > 0."""
    if isinstance(gamma, str) and gamma == "scale":
        return gamma
    try:
        return _check_positive(gamma, "gamma")
    except (TypeError, ValueError):
        raise ValueError(
            'gammas must hold "scale" or finite positive floats (RBF widths); '
            f"got gamma={gamma!r}."
        ) from None
