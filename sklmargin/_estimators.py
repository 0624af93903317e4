"""The estimators: validation, optional feature map, solver call, prediction.

They know no loss formula: :mod:`sklmargin._margins` holds those,
:mod:`sklmargin._objective` the chain rule and :mod:`sklmargin._solver` the
L-BFGS runs.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._compat import Interval, StrOptions, fit_context
from ._cross_entropy import predicted_probabilities
from ._doc_link import DocLinkMixin
from ._margins import LOSS_NAMES, Margin, get_margin
from ._modifiers import with_support_vectors
from ._objective import (
    LinearMarginObjective,
    checked_logit_scale,
    margin_free_logits,
)
from ._openset_scores import OpenSetScoreMixin
from ._rows import lift_constant, prepare_rows, row_norms
from ._solver import fit_continuation, lambda_schedule, warn_if_not_converged
from ._start import (
    initial_params,
    optimal_intercept,
    softmax_start,
    warm_start_params,
)
from ._validation import check_sample_and_class_weight, logits_in_dtype


def _dask_integration(X):
    """Return the Dask integration module for a Dask collection, else None.

    Told from the type's module name: a NumPy fit imports neither Dask nor
    sklmargin's Dask code (a test checks ``sys.modules``).
    """
    if not type(X).__module__.startswith("dask."):
        return None
    from . import _dask

    return _dask


# Prototypes whose norm falls this far below the largest have collapsed onto
# the cone point w_j = 0 (L-Softmax with a small lambda_min).
_COLLAPSE_RATIO = 1e-8


class BaseMarginSoftmax(
    DocLinkMixin, OpenSetScoreMixin, ClassifierMixin, BaseEstimator
):
    """Shared fit/predict of the linear and the kernel estimator.

    Subclasses override :meth:`_fit_feature_map` and :meth:`_map_features` to
    train on transformed inputs; everything else is common. Nothing here knows
    a loss: the margin object (:mod:`sklmargin._margins`) answers every
    per-loss question.
    """

    _parameter_constraints: dict = {
        "loss": [StrOptions(set(LOSS_NAMES)), Margin],
        "m": [Real, None],
        "s": [Real, None],
        "t": [Real],
        "C": [Interval(Real, 0, None, closed="neither")],
        "lambda_min": [Interval(Real, 0, None, closed="left"), None],
        "constant_feature": [Interval(Real, 0, None, closed="left"), None],
        "fit_intercept": ["boolean"],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "warm_start": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    #: Whether the rows are kernel features with |z| ~ 1 (the margin's
    #: ``default_s_kernel`` then replaces ``default_s``).
    _unit_norm_features = False

    # -- feature map hooks (identity for the linear estimator) ---------------
    def _fit_feature_map(self, X, sample_weight):
        return X

    def _map_features(self, X):
        return X

    def _fold_features(self, X_train, sample_weight, X_test):
        """``(feature_map, training features, held-out features)`` of a CV fold.

        The CV estimators map a fold once and fit every grid point on the
        result (:mod:`sklmargin._cv_path`); the linear estimator has no map
        (None: ``fit`` validates the raw rows itself).
        """
        return None, None, X_test

    def _fit_on_features(self, X, y, feature_map, features, sample_weight=None):
        """``fit`` with the feature map and mapped rows of ``_fold_features``."""
        if feature_map is None:
            return self.fit(X, y, sample_weight=sample_weight)
        self._premapped = (feature_map, features)
        try:
            return self.fit(X, y, sample_weight=sample_weight)
        finally:
            self.__dict__.pop("_premapped", None)

    # -- fit ------------------------------------------------------------------
    def _validate_hyperparameters(self):
        margin = get_margin(self.loss)
        s_param = self.s
        if s_param is None and self._unit_norm_features and margin.uses_s:
            s_param = margin.default_s_kernel
        m, s = margin.resolve(self.m, s_param)
        margin = with_support_vectors(margin, self.t)
        if not margin.uses_lambda and self.lambda_min is not None:
            raise ValueError(
                f"lambda_min only applies to the losses softened by a lambda "
                f"schedule ('l-softmax', 'a-softmax'); leave it None for "
                f"loss={margin.name!r}."
            )
        if not np.isfinite(self.C):
            raise ValueError(f"C must be finite; got C={self.C!r}.")
        lambda_min = (
            (margin.default_lambda if self.lambda_min is None else self.lambda_min)
            if margin.uses_lambda
            else 0.0
        )
        if not np.isfinite(lambda_min):
            raise ValueError(f"lambda_min must be finite; got {self.lambda_min!r}.")
        return margin, m, s, float(lambda_min)

    def _check_training_data(self, X, y, sample_weight):
        X, y = validate_data(
            self,
            X,
            y,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            order="C",
        )
        check_classification_targets(y)
        classes, y_encoded = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(
                "This classifier needs samples of at least 2 classes in the data, "
                f"but the data contains only one class: {classes[0]!r}."
            )
        sample_weight = check_sample_and_class_weight(
            sample_weight, self.class_weight, classes, y_encoded, X.shape[0]
        )
        return X, classes, y_encoded, sample_weight

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the classifier by L-BFGS.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (float32 stays float32).
        y : array-like of shape (n_samples,)
            Class labels, of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; integer weights are equivalent to repeating rows.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        if (dask := _dask_integration(X)) is not None:  # Dask input (_dask.py)
            return dask.fit_dask(self, X, y, sample_weight)
        margin, m, s, lambda_min = self._validate_hyperparameters()
        X, classes, y_encoded, sample_weight = self._check_training_data(
            X, y, sample_weight
        )
        self.classes_ = classes
        features = self._fit_feature_map(X, sample_weight)
        # Row norms once: for the lift's RMS and for the unit rows.
        norms = row_norms(features) if margin.uses_angle else None
        constant = (
            lift_constant(
                norms, features.shape[1], sample_weight, self.constant_feature
            )
            if margin.normalizes_X
            else 0.0
        )
        rows = prepare_rows(
            features,
            normalize=margin.uses_angle,
            constant=constant,
            norms=norms,
            # Mapped rows are ours and needed no more, except by the softmax
            # start of L-Softmax, which works on the raw rows.
            overwrite=features is not X and margin.start != "softmax-solution",
        )
        checked_logit_scale(
            margin, s, rows.norms, np.ones(len(classes)), rows.dtype,
            "lower s, or scale the data (e.g. StandardScaler)",
        )  # fmt: skip
        objective = LinearMarginObjective(
            rows,
            y_encoded,
            len(classes),
            sample_weight,
            margin,
            m,
            s,
            self.C,
            self.fit_intercept,
        )
        settings = {
            "max_iter": self.max_iter,
            "tol": self.tol,
            "random_state": self.random_state,
        }

        def cold_start():
            if margin.start == "softmax-solution":
                return softmax_start(
                    objective, features, y_encoded, sample_weight, settings=settings
                )
            return initial_params(
                objective, y_encoded, sample_weight, self.random_state
            ), 0

        return self._solve(objective, margin, m, s, lambda_min, cold_start)

    def _solve(self, objective, margin, m, s, lambda_min, cold_start):
        """Solve from a warm or cold start and store the solution (every path).

        ``cold_start() -> (x0, n_iter)`` gives the first point of a cold fit;
        the in-memory fit and the Dask fit differ only in it and in the
        objective they pass.
        """
        x0 = warm_start_params(self, objective)
        warm, n_iter = x0 is not None, 0
        if warm:
            lambdas = [lambda_min]
        else:
            lambdas = lambda_schedule(lambda_min) if margin.uses_lambda else [0.0]
            x0, n_iter = cold_start()
            if margin.start == "class-means" and not margin.uses_lambda:
                x0 = optimal_intercept(objective, x0)
        result = fit_continuation(
            objective,
            x0,
            lambdas=lambdas,
            max_iter=self.max_iter,
            # dloss/dcos = s (p - y): the gradient is proportional to the logit
            # scale, so the tolerance is too; tol then means the same at every s
            # (measured: at s=30, tol*s stops where accuracy has saturated).
            tol=self.tol * (s if s is not None else 1.0),
            warm=warm,
            verbose=self.verbose,
        )
        if not np.all(np.isfinite(result.params)):
            raise FloatingPointError(
                f"{type(self).__name__} diverged to non-finite coefficients with "
                f"loss={margin.name!r}; scale the data (StandardScaler) or lower s."
            )
        self._store_solution(objective, result.params, margin, m, s, objective.dtype)
        warn_if_not_converged(
            result,
            self.max_iter,
            self.tol,
            type(self).__name__,
            hint=self._collapse_hint(margin),
        )
        self.n_iter_ = n_iter + result.n_iter
        return self

    def _store_solution(self, objective, params, margin, m, s, dtype):
        """Fitted attributes in the training parametrisation (nothing folded)."""
        coef, intercept = objective.unpack(params)
        if margin.normalizes_W:
            coef = coef / np.linalg.norm(coef, axis=1, keepdims=True)
        constant = objective.rows.constant
        if constant > 0:
            self.constant_coef_ = np.asarray(coef[:, -1], dtype=dtype).copy()
            coef = coef[:, :-1]
        else:
            self.constant_coef_ = np.zeros(objective.n_classes, dtype=dtype)
        self.constant_feature_ = constant
        self.coef_ = np.ascontiguousarray(coef, dtype=dtype)
        self.intercept_ = (
            np.asarray(intercept, dtype=dtype).copy()
            if intercept is not None
            else np.zeros(objective.n_classes, dtype=dtype)
        )
        self.margin_, self.m_, self.s_ = margin, m, s

    def _collapse_hint(self, margin):
        """Name the cone point when a prototype collapsed (L-Softmax, small lambda)."""
        if margin.normalizes_W:
            return ""
        norms = np.linalg.norm(self.coef_, axis=1)
        if not np.any(norms < _COLLAPSE_RATIO * max(norms.max(), 1e-300)):
            return ""
        return (
            "A prototype collapsed to w_j = 0, the cone point where the loss "
            "is not differentiable (L-Softmax with a small lambda_min): raise "
            "lambda_min (default 20). "
        )

    # -- prediction -----------------------------------------------------------
    def _logits(self, X):
        """Margin-free logits of the fitted model (n_samples, n_classes)."""
        check_is_fitted(self)
        X = validate_data(
            self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False
        )
        # In the input's dtype, whatever precision a kernel map computed in.
        logits = self._logits_of_features(self._map_features(X))
        return logits_in_dtype(logits, X.dtype)

    def _logits_of_features(self, features):
        """Margin-free logits of rows already mapped by ``feature_map_``."""
        return margin_free_logits(
            self.margin_,
            features,
            self.coef_,
            self.intercept_,
            s=self.s_,
            constant=self.constant_feature_,
            constant_coef=self.constant_coef_,
        )

    def decision_function(self, X):
        """Margin-free logits; for two classes, ``z_1 - z_0`` (1-D).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        if (dask := _dask_integration(X)) is not None:  # Dask input (_dask.py)
            return dask.predict_dask(self, "decision_function", X)
        logits = self._logits(X)
        if logits.shape[1] == 2:
            return logits[:, 1] - logits[:, 0]
        return logits

    def predict(self, X):
        """Class of the largest logit.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        if (dask := _dask_integration(X)) is not None:  # Dask input (_dask.py)
            return dask.predict_dask(self, "predict", X)
        logits = self._logits(X)
        return self.classes_[np.argmax(logits, axis=1)]

    def predict_proba(self, X):
        """Softmax of the margin-free logits.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        if (dask := _dask_integration(X)) is not None:  # Dask input (_dask.py)
            return dask.predict_dask(self, "predict_proba", X)
        return predicted_probabilities(self._logits(X))

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Taken as ``log(predict_proba)`` rather than a separate log-softmax so that
        both agree to the last bit in float32 at large ``s``. Probabilities are
        floored at the dtype's smallest positive number, so the logarithm is
        finite (at least -103.3 in float32, -744.4 in float64).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        if (dask := _dask_integration(X)) is not None:  # Dask input (_dask.py)
            return dask.predict_dask(self, "predict_log_proba", X)
        logits = self._logits(X)
        return np.log(predicted_probabilities(logits))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class MarginSoftmaxClassifier(BaseMarginSoftmax):
    r"""Linear classifier trained with a margin-based softmax loss by L-BFGS.

    Each class ``j`` has a prototype ``w_j`` and a bias ``b_j``. Training
    minimises the weighted mean cross-entropy of *margin* logits ``z``, in
    which the true class must win by a margin:
    ``sum_i sw_i * l_i / sum_i sw_i`` with ``l_i = -log softmax(z_i)[y_i]``,

    .. math::

        \min_{W, b}\; \frac{\sum_i w_i\, \ell_i}{\sum_i w_i}, \qquad
        \ell_i = -\log \frac{e^{z_{iy_i}}}{\sum_j e^{z_{ij}}}

    where ``theta_j`` is the angle between ``x`` and ``w_j``:

    ================  ===========================  ======================
    ``loss``          target logit ``z_iy``        other logits ``z_ij``
    ================  ===========================  ======================
    ``"softmax"``     ``s * <w_y, x>``             ``s * <w_j, x>``
    ``"normface"``    ``s * cos(theta_y)``         ``s * cos(theta_j)``
    ``"am-softmax"``  ``s * (cos(theta_y) - m)``   ``s * cos(theta_j)``
    ``"arcface"``     ``s * cos(theta_y + m)``     ``s * cos(theta_j)``
    ``"l-softmax"``   ``|w_y| |x| psi(theta_y)``   ``<w_j, x>``
    ``"a-softmax"``   ``s |x| psi(theta_y)``       ``s |x| cos(theta_j)``
    ================  ===========================  ======================

    (plus ``b_j`` on every logit when ``fit_intercept``), with
    ``psi(theta) = (-1)^k cos(m theta) - 2k``, ``k = floor(m theta / pi)``.
    ``t > 1`` turns any loss into its SV-Softmax variant: a non-target whose
    cosine beats the margin-adjusted target gets
    ``z_ik += s (t - 1) (cos(theta_ik) + 1)``.

    The margin is used for training only: :meth:`decision_function` returns the
    margin-free logits (``s cos(theta_j) + b_j``, ``s |x| cos(theta_j) + b_j``
    or ``<w_j, x> + b_j``), :meth:`predict` their argmax and
    :meth:`predict_proba` their softmax, so all three agree.

    Parameters
    ----------
    loss : str, default="am-softmax"
        ``"softmax"``, ``"normface"``, ``"am-softmax"`` (alias ``"cosface"``),
        ``"arcface"``, ``"l-softmax"`` or ``"a-softmax"`` (alias
        ``"sphereface"``).
    m : float, default=None
        Margin; None means the loss's default: 0.05 for AM-Softmax and ArcFace,
        1.5 for L-Softmax, 2 for A-Softmax (the user guide's table of defaults,
        "What each loss normalises"). AM-Softmax: additive cosine margin
        in [0, 1]; ArcFace: additive angle in radians, in [0, pi/2];
        L-/A-Softmax: multiplicative angular margin, a real >= 1 (the papers use
        integers); softmax and NormFace: must be None or 0.
    s : float, default=None
        Logit scale (> 0) of the losses that normalise the features; None means
        the loss's default: 20 for NormFace, 30 for AM-Softmax and ArcFace.
        For softmax it is an inverse temperature (default 1);
        for A-Softmax it multiplies the sample norm ``|x|`` (default 8; the
        paper's is 1). L-Softmax takes its scale from the norms and requires None.
    t : float, default=1.0
        SV-Softmax parameter, ``t >= 1``; 1 is off.
    C : float, default=1.0
        Inverse L2 strength, ``1 / (2 C sum(sample_weight)) |W|^2`` as in
        :class:`~sklearn.linear_model.LogisticRegression`. Applies to the losses
        whose logits depend on ``|w_j|`` (softmax, L-Softmax); the cosine losses
        are scale-invariant in ``W`` and are regularised through ``s`` and ``m``.
    lambda_min : float, default=None
        Final softening of L-/A-Softmax,
        ``f = (lambda cos(theta_y) + psi(theta_y)) / (1 + lambda)``.
        Training lowers ``lambda`` from 1000 to ``lambda_min`` through a sequence
        of warm-started problems. None means the loss's default, 20 for both;
        must be None for the other losses.
    constant_feature : float or None, default=1.0
        For the losses that normalise the samples (NormFace, AM-Softmax,
        ArcFace): a synthetic feature of value ``c`` is appended to every sample
        before normalisation, ``x -> [x, c] / |[x, c]|``, with ``c`` this value
        times the (weighted) root-mean-square feature. The map is one-to-one (the
        inverse gnomonic projection onto a hemisphere), so the classifier keeps
        the information in ``|x|`` that plain normalisation discards: on iris
        (4 features, 3-fold CV) AM-Softmax goes from 87.3% to 97.3%. The
        prototypes gain one coordinate, stored in ``constant_coef_``. None or 0
        turns it off. Ignored by the other losses.
    fit_intercept : bool, default=True
        Add a per-class bias to every logit. It carries class priors (a pure
        cosine classifier's regions are cones through the origin) and makes
        ``class_weight`` effective.
    class_weight : dict or "balanced", default=None
        Weights of classes, multiplied into ``sample_weight``; "balanced" uses
        ``sum(sample_weight) / (n_classes * class_total)`` with weighted totals.
    max_iter : int, default=1000
        L-BFGS iteration budget of each run (each lambda stage and SV round).
    tol : float, default=1e-4
        Stop when the largest absolute gradient entry is below ``tol * s``
        (``tol`` for L-Softmax). The gradient is proportional to the logit scale
        ``s``, so scaling the tolerance with it keeps its meaning when ``s`` is
        tuned.
    warm_start : bool, default=False
        Start from the previous solution (skips the lambda schedule).
    random_state : int, RandomState instance or None, default=None
        Used only to give a random starting direction to a prototype whose class
        mean is zero (and to nudge a collapsed L-Softmax prototype).
    verbose : int, default=0
        Print one line per L-BFGS run (>1 also scipy's iteration log).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_classes, n_features)
        Class prototypes; for the losses that normalise ``W`` the rows of
        ``[coef_, constant_coef_]`` have unit norm.
    constant_coef_ : ndarray of shape (n_classes,)
        The prototypes' coordinate along the constant feature (zeros when it is
        not used).
    constant_feature_ : float
        The value ``c`` of the constant feature (0.0 when not used).
    intercept_ : ndarray of shape (n_classes,)
    n_iter_ : int
        L-BFGS iterations over all runs.
    m_ : float
        The margin used (default resolved).
    s_ : float or None
        The logit scale used (None for L-/A-Softmax).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined when ``X`` has string feature names.

    See Also
    --------
    KernelMarginSoftmaxClassifier : The same losses over kernel features
        (Nyström by default, or random Fourier features).
    sklearn.linear_model.LogisticRegression : ``loss="softmax"`` without margin.
    sklearn.svm.LinearSVC : Hinge-loss linear classifier.

    References
    ----------
    .. [1] Wang et al., "NormFace", arXiv:1704.06369.
    .. [2] Wang et al., "Additive Margin Softmax for Face Verification",
       arXiv:1801.05599; "CosFace", arXiv:1801.09414.
    .. [3] Deng et al., "ArcFace", arXiv:1801.07698.
    .. [4] Liu et al., "Large-Margin Softmax Loss", arXiv:1612.02295.
    .. [5] Liu et al., "SphereFace", arXiv:1704.08063.
    .. [6] Wang et al., "Support Vector Guided Softmax Loss", arXiv:1812.11317.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklmargin import MarginSoftmaxClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = make_pipeline(StandardScaler(), MarginSoftmaxClassifier(loss="arcface"))
    >>> clf.fit(X, y).score(X, y) > 0.9
    True
    """

    def __init__(
        self,
        loss="am-softmax",
        m=None,
        s=None,
        t=1.0,
        C=1.0,
        lambda_min=None,
        constant_feature=1.0,
        fit_intercept=True,
        class_weight=None,
        max_iter=1000,
        tol=1e-4,
        warm_start=False,
        random_state=None,
        verbose=0,
    ):
        self.loss = loss
        self.m = m
        self.s = s
        self.t = t
        self.C = C
        self.lambda_min = lambda_min
        self.constant_feature = constant_feature
        self.fit_intercept = fit_intercept
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose
