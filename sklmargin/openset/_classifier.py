r"""Open-set recognition: a classifier that can answer "none of the classes I know".

:class:`OpenSetClassifier` thresholds any estimator's ``score_samples`` at the
value below which a chosen share of the known classes' rows fall, measured on
out-of-fold scores so that the training rows do not judge themselves.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.model_selection import check_cv
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import (
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    has_fit_parameter,
    validate_data,
)

from .._utils.array_api import NUMPY, get_namespace
from .._utils.compat import Interval, fit_context, safe_indexing
from .._utils.doc_link import DocLinkMixin
from .._utils.legacy_state import LegacyStateMixin
from .._utils.validation import check_weights, encode_labels

__all__ = ["OpenSetClassifier", "weighted_lower_quantile"]


def weighted_lower_quantile(values, weights, q):
    r"""Smallest value whose weighted cumulative share reaches ``q``.

    The inverted-CDF quantile :math:`\min\{v : \sum_{v_i \le v} w_i \ge q \sum_i
    w_i\}`: no interpolation, so integer weights give exactly the quantile of
    the repeated values (and zero weights that of the values left out).

    Parameters
    ----------
    values : ndarray of shape (n,)
    weights : ndarray of shape (n,)
        Non-negative, positive sum.
    q : float
        In (0, 1).

    Returns
    -------
    float
    """
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    # Relative tolerance: q * total summed in another order must not miss the
    # row that reaches it exactly.
    target = q * cumulative[-1] * (1.0 - 1e-12)
    return float(values[order][np.searchsorted(cumulative, target, side="left")])


def resolved_unknown_label(label, classes):
    """Return the label :meth:`OpenSetClassifier.predict` gives a rejected row.

    ``None`` chooses one that no class has: ``-1`` for numeric classes (``min -
    1`` when ``-1`` is a class), ``"unknown"`` for string classes (with leading
    underscores while it is a class). An explicit ``label`` must have the
    classes' kind (a string for string classes, a number otherwise:
    predictions keep one type) and must not be a class.

    Parameters
    ----------
    label : int, float, str or None
    classes : ndarray of shape (n_classes,)
        The sorted known classes.

    Returns
    -------
    int, float or str
    """
    values = classes.tolist()
    strings = all(isinstance(c, str) for c in values)
    if label is None:
        label = "unknown" if strings else (-1 if -1 not in values else min(values) - 1)
        while strings and label in values:
            label = "_" + label
    if strings != isinstance(label, str):  # predictions keep one type
        raise ValueError(
            f"unknown_label={label!r} is {'not ' * strings}a string but the classes "
            f"are {'' if strings else 'not '}strings ({values[0]!r}, ...); pass None "
            "to let fit choose one, or a label of the classes' kind."
        )
    if label in values:
        raise ValueError(
            f"unknown_label={label!r} is one of the classes; pass a label that "
            "no training row has, or None to let fit choose one."
        )
    return label


class OpenSetClassifier(
    LegacyStateMixin, DocLinkMixin, MetaEstimatorMixin, ClassifierMixin, BaseEstimator
):
    r"""Classifier that rejects rows unlike every known class.

    Fits ``estimator`` on the known classes and sets the threshold
    :math:`\tau` at the ``target_rejection`` quantile of out-of-fold scores,

    .. math::

        \tau = \min\Big\{ t : \frac{\sum_i w_i \, 1[\operatorname{score}_{-f(i)}
        (x_i) \le t]}{\sum_i w_i} \ge \rho \Big\},

    where :math:`\operatorname{score}_{-f(i)}` is ``score_samples`` of a clone
    fitted without row :math:`i`'s fold, :math:`w_i` the sample weights and
    :math:`\rho` = ``target_rejection``; then refits the estimator on all rows.
    :meth:`predict` returns the estimator's class where
    :math:`\operatorname{score}(x) \ge \tau` and ``unknown_label_`` below it,
    so about a share :math:`\rho` of new rows of the known classes is rejected.
    Out-of-fold scores matter: a model scores its own training rows as more
    typical than new ones (its Nyström centres are some of them), and a
    threshold set on them would reject too few.

    Parameters
    ----------
    estimator : estimator object
        A classifier with ``fit``, ``predict`` and ``score_samples`` (higher:
        more typical of the known classes), such as every sklmargin classifier,
        or a :class:`~sklearn.pipeline.Pipeline` ending in one. The kernel
        estimator's learned input metric (its default) rescales the inputs to
        what separates the *known* classes, and so changes which rows look
        unfamiliar: measured, it rejects more unseen classes on some data and
        fewer on other (the open-set page of the documentation). Where
        rejection matters, compare it with ``metric=None`` on classes held
        out of your own training data.
    target_rejection : float, default=0.05
        Share of known rows to reject, in (0, 1).
    unknown_label : int, float, str or None, default=None
        What :meth:`predict` returns for a rejected row. None lets ``fit``
        choose a value that is not a class: ``-1`` for numeric classes (the
        smallest class minus one when ``-1`` is a class, as for labels ``[-1,
        1]``), ``"unknown"`` for string classes (``"_unknown"`` when that is a
        class); ``unknown_label_`` holds the choice. A given value must not be
        one of the classes (``fit`` raises ValueError), and must be a string
        when the classes are strings, a number otherwise: predictions keep one
        type.
    cv : int, cross-validation generator or iterable, default=5
        Folds of the out-of-fold scores; an int is a
        :class:`~sklearn.model_selection.StratifiedKFold` without shuffling.
    n_jobs : int, default=None
        Parallel jobs (joblib) over the ``cv + 1`` fits of the estimator: one
        per fold and the refit on all rows, which are independent. None means
        1 unless in a :func:`joblib.parallel_backend` context, -1 all
        processors. The fits do not depend on it: a seeded estimator gives
        the same model and threshold with any ``n_jobs``.

    Attributes
    ----------
    estimator_ : estimator object
        The estimator refitted on all rows.
    threshold_ : float
        :math:`\tau`: rows scoring below it are rejected.
    oof_scores_ : ndarray of shape (n_samples,)
        The out-of-fold scores of the training rows :math:`\tau` was read from.
    classes_ : ndarray of shape (n_classes,)
        The known classes (``unknown_label_`` is not one of them).
    unknown_label_ : int, float or str
        What :meth:`predict` returns for a rejected row: ``unknown_label``, or
        the value ``fit`` chose for None.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined when ``X`` has string feature names.

    See Also
    --------
    KernelMarginSoftmaxClassifier.score_samples : The score this is measured with.
    sklearn.model_selection.FixedThresholdClassifier : Binary threshold of one
        class's score, no reject option.

    Notes
    -----
    Two questions, two sets of methods. *Which known class?*
    :meth:`decision_function`, :meth:`predict_proba` and
    :meth:`predict_log_proba` are the estimator's, over ``classes_``, as any
    classifier's. *Known at all?* :meth:`score_samples` is the estimator's
    open-set score and :meth:`open_set_margin` is :math:`\operatorname{score}(x)
    - \tau` (negative: rejected). :meth:`predict` answers both: the class of
    the largest decision where the margin is non-negative, ``unknown_label_``
    where it is negative.

    scikit-learn's ``check_estimator`` passes but for one check, by the
    nature of a reject option: ``check_classifiers_train`` predicts its own
    training rows and asserts, of every one of them,

    .. code-block:: python

        assert_array_equal(np.argmax(decision, axis=1), y_pred)
        assert_array_equal(np.argmax(y_prob, axis=1), y_pred)

    (``decision_function`` and ``predict_proba``; the sign of the decision for
    two classes): a prediction must be a class. The threshold rejects about a
    share ``target_rejection`` of the known classes' rows, and the training
    rows are such rows: those it rejects are predicted ``unknown_label_``,
    which no decision names. The test suite shows that the check's other
    assertions hold, and these on the rows that are not rejected.

    Fit cost: ``cv + 1`` fits of the estimator, in parallel with ``n_jobs``.

    References
    ----------
    .. [1] D. Hendrycks and K. Gimpel, "A Baseline for Detecting Misclassified and
       Out-of-Distribution Examples in Neural Networks", ICLR 2017,
       arXiv:1610.02136.
    .. [2] A. R. Dhamija, M. Günther and T. E. Boult, "Reducing Network
       Agnostophobia", NeurIPS 2018, arXiv:1811.04110.
    .. [3] W. J. Scheirer, A. de Rezende Rocha, A. Sapkota and T. E. Boult,
       "Toward Open Set Recognition", IEEE TPAMI 35(7), 2013.

    Examples
    --------
    Fitted on half of the digits 0-5, asked about the digits 6-9 it never saw:

    >>> import numpy as np
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklmargin import KernelMarginSoftmaxClassifier, OpenSetClassifier
    >>> X, y = load_digits(return_X_y=True)
    >>> known = y < 6
    >>> def fitted(metric):
    ...     model = KernelMarginSoftmaxClassifier(
    ...         n_components=300, metric=metric, random_state=0
    ...     )
    ...     return make_pipeline(StandardScaler(), OpenSetClassifier(model)).fit(
    ...         X[known][::2], y[known][::2]
    ...     )
    >>> clf = fitted(metric="diagonal")  # the kernel estimator's default
    >>> clf[-1].classes_
    array([0, 1, 2, 3, 4, 5])
    >>> clf[-1].unknown_label_
    -1
    >>> rejected = float(np.mean(clf.predict(X[~known]) == -1))
    >>> rejected > 0.7
    True

    Without the learned metric fewer of the unseen digits are rejected here
    (on other data it can be the other way round):

    >>> without = fitted(metric=None).predict(X[~known])
    >>> float(np.mean(without == -1)) < rejected
    True
    """

    _parameter_constraints: dict = {
        "estimator": [object],
        "target_rejection": [Interval(Real, 0, 1, closed="neither")],
        "unknown_label": [Integral, Real, str, None],
        "cv": ["cv_object"],
        "n_jobs": [Integral, None],
    }
    # A saved state without unknown_label_ (saved before it existed) predicted
    # unknown_label itself.
    _legacy_fitted = {
        "unknown_label_": lambda state: resolved_unknown_label(
            state["unknown_label"], state["classes_"]
        )
    }

    def __init__(
        self, estimator, *, target_rejection=0.05, unknown_label=None, cv=5,
        n_jobs=None,
    ):  # fmt: skip
        self.estimator = estimator
        self.target_rejection = target_rejection
        self.unknown_label = unknown_label
        self.cv = cv
        self.n_jobs = n_jobs

    def _check_params(self):
        """Check what must hold whatever scikit-learn's parameter validation does."""
        share = self.target_rejection
        if not (isinstance(share, Real) and 0.0 < share < 1.0):
            raise ValueError(f"target_rejection must be in (0, 1); got {share!r}.")
        needed = ("fit", "predict", "score_samples")
        missing = [name for name in needed if not hasattr(self.estimator, name)]
        if missing:
            raise TypeError(
                f"estimator must have fit, predict and score_samples (higher: more "
                f"typical of the known classes); {type(self.estimator).__name__} "
                f"has no {', '.join(missing)}. Every sklmargin classifier has "
                "score_samples."
            )

    def _validated(self, X, *, reset):
        """Check ``X`` (2-D, rows, width, sparse format) and return what to pass on.

        A DataFrame is passed to the estimator as given (a Pipeline may select
        its columns by name); anything else as the checked array. Values are
        the estimator's business (NaN, dtype), so they are not checked here.
        A model not fitted raises NotFittedError (``reset=False``). Array API
        input under dispatch (torch, CuPy) is refused by name: the
        threshold and the labels are NumPy here, and a silent host copy of
        device rows is what the array API path promises never to make.
        """
        if not reset:
            check_is_fitted(self)
        if get_namespace(X, user_input=True)[0] is not NUMPY:
            raise ValueError(
                f"{type(self).__name__} takes NumPy arrays only, but X is of type "
                f"{type(X).__module__}.{type(X).__name__} under "
                "array_api_dispatch: pass a NumPy copy (X.cpu().numpy() for "
                "torch). Its estimator alone fits and predicts on the device; "
                "see the array API page of the documentation."
            )
        csr = "csr" if self.__sklearn_tags__().input_tags.sparse else False
        checked = validate_data(
            self, X, reset=reset, accept_sparse=csr, dtype=None, ensure_all_finite=False
        )
        return X if hasattr(X, "columns") else checked

    def _delegate(self, method, X):
        """Call the fitted estimator's ``method`` on the validated ``X``."""
        X = self._validated(X, reset=False)
        return getattr(self.estimator_, method)(X)

    @fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None):
        """Set the threshold from out-of-fold scores, then refit on all rows.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows of the known classes (passed to the estimator as
            given: a DataFrame stays a DataFrame).
        y : array-like of shape (n_samples,)
            Their classes.
        sample_weight : array-like of shape (n_samples,), default=None
            Passed to every fit of the estimator (which must accept it) and
            weighting the quantile: integer weights equal repeated rows.

        Returns
        -------
        self : OpenSetClassifier
            The fitted classifier.
        """
        self._check_params()
        X = self._validated(X, reset=True)
        y = column_or_1d(y, warn=True)
        check_consistent_length(X, y)
        who = "OpenSetClassifier (its estimator is a classifier)"
        classes = encode_labels(y, who)[0]
        unknown_label = resolved_unknown_label(self.unknown_label, classes)
        weighted = sample_weight is not None
        if weighted and not has_fit_parameter(self.estimator, "sample_weight"):
            raise TypeError(
                f"sample_weight was given but {type(self.estimator).__name__}"
                ".fit does not accept it; put OpenSetClassifier inside the "
                "Pipeline instead of the Pipeline inside it."
            )
        weights = check_weights(sample_weight, len(y))
        fit_params = {"sample_weight": weights} if weighted else {}

        folds = list(check_cv(self.cv, y, classifier=True).split(X, y))
        # The cv + 1 fits are independent: the folds' (test rows, scores) and
        # the refit on all rows (test None) run as one batch of jobs.
        # scikit-learn's Parallel carries its configuration to the workers.
        done = Parallel(n_jobs=self.n_jobs)(
            delayed(_fit_and_score)(clone(self.estimator), X, y, fit_params, split)
            for split in [*folds, None]
        )
        oof = np.full(len(y), np.nan)
        for test, scores in done[:-1]:
            oof[test] = scores
        scored = ~np.isnan(oof)
        if not np.any(scored & (weights > 0)):
            raise ValueError(
                "cv left no row out of every fold: the threshold needs "
                "out-of-fold scores of the training rows."
            )
        self.oof_scores_ = oof
        self.threshold_ = weighted_lower_quantile(
            oof[scored], weights[scored], self.target_rejection
        )
        self.estimator_ = done[-1]
        self.classes_ = self.estimator_.classes_
        self.unknown_label_ = unknown_label
        return self

    def score_samples(self, X):
        """Return the estimator's open-set score (higher: more typical).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return np.asarray(self._delegate("score_samples", X), dtype=np.float64)

    def open_set_margin(self, X):
        """Open-set margin ``score_samples(X) - threshold_``; negative is rejected.

        How known a row is, measured from the threshold: :meth:`predict`
        answers ``unknown_label_`` exactly where it is negative.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self.score_samples(X) - self.threshold_

    def predict(self, X):
        """Predict the estimator's class, or ``unknown_label_`` below the threshold.

        The class and the score come from one pass of the estimator where it
        offers one (every sklmargin classifier, also inside a Pipeline): the
        rows are validated and mapped once.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
            Values of ``classes_`` and ``unknown_label_``.
        """
        X = self._validated(X, reset=False)
        labels, score = _predict_with_score(self.estimator_, X)
        rejected = np.asarray(score, dtype=np.float64) - self.threshold_ < 0
        label = self.unknown_label_
        labels = labels.astype(np.result_type(labels.dtype, np.asarray(label).dtype))
        labels[rejected] = label
        return labels

    @available_if(lambda self: _estimator_has(self, "decision_function"))
    def decision_function(self, X):
        """Return the estimator's per-class decision over the known classes.

        As a classifier's: its largest column (its sign for two classes) is
        the class :meth:`predict` answers where the row is not rejected. How
        known a row is, is :meth:`open_set_margin`'s question.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        return self._delegate("decision_function", X)

    @available_if(lambda self: _estimator_has(self, "predict_proba"))
    def predict_proba(self, X):
        """Return the estimator's probabilities of the known classes.

        They sum to one over ``classes_``: whether a row is known at all is
        :meth:`open_set_margin`'s question, not theirs.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        return self._delegate("predict_proba", X)

    @available_if(lambda self: _estimator_has(self, "predict_log_proba"))
    def predict_log_proba(self, X):
        """Return the estimator's log-probabilities of the known classes.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        return self._delegate("predict_log_proba", X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator).input_tags
        tags.input_tags.sparse = inner.sparse
        tags.input_tags.allow_nan = inner.allow_nan
        return tags


def _fit_and_score(estimator, X, y, fit_params, split):
    """Fit ``estimator`` on a fold's training rows and score its test rows.

    ``split`` is ``(train, test)``; returns ``(test, score_samples of the test
    rows)``. With ``split=None`` the estimator is fitted on all rows and
    returned.
    """
    if split is None:
        return estimator.fit(X, y, **fit_params)
    train, test = split
    fold = {key: value[train] for key, value in fit_params.items()}
    estimator.fit(safe_indexing(X, train), y[train], **fold)
    return test, estimator.score_samples(safe_indexing(X, test))


def _predict_with_score(estimator, X):
    """``(predict(X), score_samples(X))``, passing the rows through ``estimator`` once.

    A :class:`~sklearn.pipeline.Pipeline` transforms them once for both (as
    its ``predict`` and ``score_samples`` would each do); an estimator with
    ``_labels_and_score`` (every sklmargin classifier) validates them once
    and maps them to logits once for both.
    """
    if hasattr(estimator, "steps"):
        X, estimator = estimator[:-1].transform(X), estimator[-1]
    if (joint := getattr(estimator, "_labels_and_score", None)) is not None:
        return joint(X)
    return np.asarray(estimator.predict(X)), estimator.score_samples(X)


def _estimator_has(meta, name):
    """Whether the fitted (else the given) estimator has method ``name``."""
    return hasattr(getattr(meta, "estimator_", meta.estimator), name)
