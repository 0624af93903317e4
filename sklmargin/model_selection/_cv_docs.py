"""The parameter and attribute descriptions the two CV estimators share.

Written once and filled into each class's docstring by :func:`fill_docs`
(the placeholders ``SHARED_PARAMETERS``, ``RUN_PARAMETERS`` and
``SEARCH_ATTRIBUTES``), so that ``help()`` shows every parameter in full.
"""

from .._utils.docstrings import fill_docstring

SHARED_PARAMS_DOC = """\
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
        registry's grid, ``get_margin(loss).search_grid["m"]``, crosses
        three). With None the linear search (``refit=True``) then probes
        ``m = 0`` at the chosen scale, where a loss allows it: each fold's
        model there is fitted on without its margin for at most 10
        iterations, and ``m = 0`` replaces the margin only when its held-out
        gain, paired by fold, passes a one-sided t-test at 5 %
        (``margin_check_``). A margin helps where classes separate with room
        to spare and costs accuracy on noisy labels; the probe costs at most
        10 iterations per fold (plus, where ``m = 0`` wins and a probe stopped
        at that cap, its fit on to ``tol``), crossing ``ms=(0.0, 0.05)`` with
        the path twice the search.
        Values outside the loss's domain (e.g. a
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

KERNEL_PARAMS_DOC = SHARED_PARAMS_DOC.replace(
    """default=5
        As in""",
    """default=3
        Three folds, as the tuned-SVC protocol of the benchmarks: each fold is
        mapped once per (metric, ``gamma``) and five folds cost about twice
        as much. As
        in""",
)

RUN_PARAMS_DOC = """\
    n_jobs : int, default=None
        Parallel jobs over (fold, grid row) pairs (joblib); results do not
        depend on it.
    refit : bool, default=True
        Refit on all the data at the best mean score (the linear estimator
        from the mean of the folds' models at the chosen point, fitted to
        ``tol``, or along the same warm path up to the chosen ``s`` when the
        paths were fitted at ``tol``; the kernel estimator cold at the chosen
        point). If False, as in ``LogisticRegressionCV``: each
        fold's own best model is kept, predictions average their logits, and
        ``s_``/``m_`` are the averages of the folds' best values.
    random_state : int, RandomState instance or None, default=None
        Passed to the inner estimator (it does not shuffle the folds).
    verbose : int, default=0
        One line per fold and grid point (score, iterations, time).
"""

ATTRIBUTES_DOC = """\
    classes_ : ndarray of shape (n_classes,)
    s_, m_ : float
        The chosen scale and margin (``s_`` is None for the losses tuned along
        ``C``, which then have ``C_``).
    temperature_ : float
        The calibration temperature ``T`` (1.0 when ``calibrate=False``).
    scores_ : ndarray
        Held-out score of every fold and grid point, of shape
        ``(n_folds, *grid_shape, n_path)`` (see ``cv_results_["params"]`` for
        the order). The kernel search's ``grid_shape`` is ``(n_metrics,
        n_gammas, n_ms)``, without the metric axis when ``metric`` is a single
        value. When ``loss`` is a list (kernel search): a dict keyed by loss
        of such arrays, each over its own ``ms`` and path, as
        :class:`~sklearn.linear_model.LogisticRegressionCV` keys its
        ``scores_`` by class.
    n_iter_ : ndarray of int, same shape as ``scores_``
        L-BFGS iterations of each warm-started fit; when ``loss`` is a list,
        one array of shape ``(n_folds, n_points)`` in the order of
        ``cv_results_["params"]``. Both are in ``X``'s
        namespace and on its device after a fit on array API inputs
        (:ref:`array_api`).
    cv_results_ : dict of ndarray
        As :class:`~sklearn.model_selection.GridSearchCV`'s: ``params``,
        ``param_<name>``, ``split<k>_test_score``, ``mean_test_score``,
        ``std_test_score``, ``rank_test_score``, ``mean_fit_time`` and
        ``mean_n_iter``, one entry per grid point. The kernel search adds
        ``param_metric`` (and ``param_loss`` for a list of losses; a point of
        a loss tuned along ``C`` has ``param_s`` masked, and the reverse).
    margin_check_ : dict or None
        Where the linear search tried its chosen scale without a margin (see
        ``ms``): ``{"m": (m, 0.0), "scores": ...}``, a NumPy array of shape
        ``(n_folds, 2)``: each fold's held-out score of its model at the
        chosen point (fitted to ``tol``), and of that model fitted on without
        a margin for at most 10 iterations. ``m_`` is 0 where the second
        column's paired gain passes a one-sided t-test at 5 %, else the
        searched margin. None where nothing was tried.
    best_index_ : int or None
        Index of the chosen point in ``cv_results_`` (None if ``refit=False``);
        its ``m`` is the searched one, which ``margin_check_`` may have
        replaced by 0.
    estimator_ : estimator or None
        The model refit on all the data (None if ``refit=False``).
    estimators_ : list of estimators or None
        Each fold's best model (None if ``refit=True``).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
"""


def fill_docs(cls, params_doc):
    """Write the descriptions the two searches share into ``cls.__doc__``."""
    return fill_docstring(
        cls,
        SHARED_PARAMETERS=params_doc,
        RUN_PARAMETERS=RUN_PARAMS_DOC,
        SEARCH_ATTRIBUTES=ATTRIBUTES_DOC,
    )
