"""BaseMarginSoftmax: validation, optional feature map, solver call, prediction.

It knows no loss formula: :mod:`sklmargin.losses` holds those,
:mod:`sklmargin.objective` the chain rule and :mod:`sklmargin.solver` the
L-BFGS runs. The linear and kernel classifiers differ only in the feature map.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils.array_api import fitted_on_device, host_inputs, input_namespace
from .._utils.compat import Interval, StrOptions, fit_context
from .._utils.doc_link import DocLinkMixin
from .._utils.legacy_state import LegacyStateMixin
from .._utils.validation import (
    check_feature_scales,
    check_sample_and_class_weight,
    check_two_classes,
    logits_in_dtype,
)
from ..losses._base import Margin
from ..losses._registry import LOSS_NAMES, get_margin
from ..losses._support_vectors import with_support_vectors
from ..objective._cross_entropy import predicted_probabilities
from ..objective._linear import LinearMarginObjective, margin_free_logits
from ..objective._pointwise import checked_logit_scale
from ..objective._rows import lift_constant, prepare_rows, row_norms
from ..openset._scores import OpenSetScoreMixin
from ..solver._lbfgs import fit_continuation, lambda_schedule, warn_if_not_converged
from ..solver._start import (
    initial_params,
    optimal_intercept,
    softmax_start,
    warm_start_params,
)
from ._metric import apply_input_transform


def _dask_integration(X):
    """Return the Dask integration module for a Dask collection, else None.

    Told from the type's module name: a NumPy fit imports neither Dask nor
    sklmargin's Dask code (a test checks ``sys.modules``).
    """
    if not type(X).__module__.startswith("dask."):
        return None
    from ..integrations.dask import _estimators as _dask

    return _dask


# Prototypes whose norm falls this far below the largest have collapsed onto
# the cone point w_j = 0 (L-Softmax with a small lambda_min).
_COLLAPSE_RATIO = 1e-8

# A class whose (weighted) mean row is closer to the origin than this fraction
# of the median distance of the other classes' means sits at the centre.
_CENTRE_RATIO = 0.25


def _class_mean_closeness(objective, n_classes):
    """Each class's mean-row norm over the median of the others'; None if unknown.

    Read from the objective's rows (unit rows times their norms for the
    angular losses); None for objectives without in-memory rows (Dask).
    """
    rows, y = getattr(objective, "X", None), getattr(objective, "y", None)
    if rows is None or y is None or n_classes < 3:
        return None
    norms = getattr(objective, "norms", None)
    weights = np.asarray(objective.sw, dtype=np.float64)
    if norms is not None:
        weights = weights * np.asarray(norms, dtype=np.float64).ravel()
    means = []
    for j in range(n_classes):
        mask = y == j
        total = objective.sw[mask].sum()
        if total <= 0:
            return None
        means.append(np.asarray(weights[mask] @ rows[mask]).ravel() / total)
    sizes = np.linalg.norm(np.vstack(means), axis=1)
    return np.array(
        [
            sizes[j] / max(np.median(np.delete(sizes, j)), 1e-300)
            for j in range(n_classes)
        ]
    )


class BaseMarginSoftmax(
    LegacyStateMixin, DocLinkMixin, OpenSetScoreMixin, ClassifierMixin, BaseEstimator
):
    """Shared fit/predict of the linear and the kernel estimator.

    Subclasses override :meth:`_fit_feature_map` and :meth:`_map_features` to
    train on transformed inputs; everything else is common. Nothing here knows
    a loss: the margin object (:mod:`sklmargin.losses`) answers every
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

    def _fit_feature_map_namespace(self, X, sample_weight, xp, device):
        """:meth:`_fit_feature_map` for array API rows (:mod:`._namespace`)."""
        return X

    # -- learned input transform (kernel metric; identity for the linear one) --
    def _fit_input_transform(self, X, y_encoded, sample_weight, xp=None, device=None):
        """Learn the input transform (if any) and return the transformed ``X``."""
        return X

    def _learn_input_transform(self, shape, input_dtype, take, keys):
        """Learn the input transform from rows ``take(rows)`` (None: none)."""
        return None

    def _transform_input(self, X, xp=None, device=None):
        """Map validated rows by the fitted ``input_transform_`` (if any).

        Every prediction path calls it before the feature map (NumPy, the array
        API path with ``xp``, the Dask chunks through the NumPy methods); a model
        without the attribute (the linear estimator, pickles from before the
        metric) maps nothing.
        """
        return apply_input_transform(
            X, getattr(self, "input_transform_", None), xp, device
        )

    def _map_features_namespace(self, X, xp, device):
        """:meth:`_map_features` for array API rows."""
        return X

    def _routed(self, X, method):
        """``method(X)`` by the Dask or the array API path, or None for NumPy."""
        if (dask := _dask_integration(X)) is not None:  # integrations/dask
            return dask.predict_dask(self, method, X)
        return self._array_api_predict(X, method)

    def _array_api_predict(self, X, method):
        """``method(X)`` on array API input (or a model fitted on a device).

        None for NumPy input to a NumPy model: the caller's NumPy code runs.
        """
        namespace = input_namespace(X)
        if namespace is None and not fitted_on_device(self):
            return None
        from ._namespace import predict_array_api

        return predict_array_api(self, method, X, namespace)

    def _fold_features(self, X_train, sample_weight, X_test):
        """``(feature_map, training features, held-out features)`` of a CV fold.

        The CV estimators map a fold once and fit every grid point on the
        result (:mod:`sklmargin.model_selection._cv_path`); the linear
        estimator has no map (None: ``fit`` validates the raw rows itself).
        """
        return None, None, X_test

    def _fold_features_namespace(self, X_train, sample_weight, X_test, xp, device):
        """:meth:`_fold_features` on array API rows (in namespace ``xp``)."""
        return None, None, X_test

    def _fit_on_features(self, X, y, feature_map, features, sample_weight=None):
        """``fit`` with the feature map and mapped rows of ``_fold_features``.

        The CV path's fold fits: the FeatureScaleWarning is left to the final
        refit on all the rows, once, not once per fold and grid point
        (scikit-learn's parallel helper resets the warning registry per task).
        """
        self._no_scale_check = True
        if feature_map is not None:
            self._premapped = (feature_map, features)
        try:
            return self.fit(X, y, sample_weight=sample_weight)
        finally:
            self.__dict__.pop("_premapped", None)
            self.__dict__.pop("_no_scale_check", None)

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
        check_two_classes(classes)
        sample_weight = check_sample_and_class_weight(
            sample_weight, self.class_weight, classes, y_encoded, X.shape[0]
        )
        if not self.__dict__.get("_no_scale_check"):
            check_feature_scales(
                X,
                sample_weight,
                type(self).__name__,
                getattr(self, "feature_names_in_", None),
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
        if (namespace := input_namespace(X)) is not None:  # torch, CuPy, ...
            from ._namespace import fit_array_api

            return fit_array_api(self, X, y, sample_weight, *namespace)
        # Labels and weights follow a NumPy X (array API ones under dispatch).
        y, sample_weight = host_inputs(y, sample_weight)
        margin, m, s, lambda_min = self._validate_hyperparameters()
        X, classes, y_encoded, sample_weight = self._check_training_data(
            X, y, sample_weight
        )
        self.classes_ = classes
        X = self._fit_input_transform(X, y_encoded, sample_weight)
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

        return self._solve(objective, lambda_min, cold_start)

    def _solve(self, objective, lambda_min, cold_start):
        """Solve from a warm or cold start and store the solution (every path).

        ``objective`` is a :class:`~sklmargin.objective.MarginObjective`: the
        loss and its resolved ``m`` and ``s`` are read from it.
        ``cold_start() -> (x0, n_iter)`` gives the first point of a cold fit;
        the in-memory fit and the Dask fit differ only in it and in the
        objective they pass.
        """
        margin, s = objective.margin, objective.s
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
        self._store_solution(objective, result.params)
        warn_if_not_converged(
            result,
            self.max_iter,
            self.tol,
            type(self).__name__,
            hint=self._collapse_hint(margin, objective),
        )
        self.n_iter_ = n_iter + result.n_iter
        return self

    def _store_solution(self, objective, params):
        """Fitted attributes in the training parametrisation (nothing folded)."""
        margin, dtype = objective.margin, objective.dtype
        coef, intercept = objective.unpack(params)
        if margin.normalizes_W:
            coef = coef / np.linalg.norm(coef, axis=1, keepdims=True)
        constant = objective.constant
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
        self.margin_, self.m_, self.s_ = margin, objective.m, objective.s

    def _collapse_hint(self, margin, objective=None):
        """Name the cone point when a prototype collapsed, and why it did.

        Two causes, told apart by where the class's rows sit. A class whose
        mean row is near the origin (the middle class of three along a line,
        once StandardScaler centred them) is best decided by its bias alone:
        ``w_j = 0`` is its optimum, where L-Softmax's target logit
        ``|w_j| |x| psi(theta)`` has a kink that L-BFGS cannot resolve -- the
        fit stalls there although the model is fine. Any other class collapsed
        because the margin was too hard for it (a small ``lambda_min``).
        """
        if margin.normalizes_W:
            return ""
        norms = np.linalg.norm(self.coef_, axis=1)
        collapsed = np.flatnonzero(norms < _COLLAPSE_RATIO * max(norms.max(), 1e-300))
        if collapsed.size == 0:
            return ""
        closeness = _class_mean_closeness(objective, len(norms))
        if closeness is not None and np.all(closeness[collapsed] < _CENTRE_RATIO):
            # tolist: numpy scalars as plain Python values (1, 'b'), not np.int64(1)
            names = ", ".join(map(repr, np.asarray(self.classes_)[collapsed].tolist()))
            return (
                f"The prototype of class {names} is w_j = 0: its rows sit at the "
                "centre of the data (class mean within "
                f"{_CENTRE_RATIO:g} of the other classes' distance from the "
                "origin), where its bias alone decides it and the L-Softmax "
                "target logit |w_j| |x| psi(theta) has a kink L-BFGS stops at. "
                "The model is usually fine there (check its score); a loss "
                "without the kink ('softmax', 'am-softmax') converges. "
            )
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
        logits = self._logits_of_features(self._map_features(self._transform_input(X)))
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
        if (routed := self._routed(X, "decision_function")) is not None:
            return routed
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
        if (routed := self._routed(X, "predict")) is not None:
            return routed
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
        if (routed := self._routed(X, "predict_proba")) is not None:
            return routed
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
        if (routed := self._routed(X, "predict_log_proba")) is not None:
            return routed
        logits = self._logits(X)
        return np.log(predicted_probabilities(logits))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        # Fit and predict in the input's namespace under array_api_dispatch
        # (torch, CuPy, array-api-strict; sklmargin.estimators._namespace).
        tags.array_api_support = True
        return tags
