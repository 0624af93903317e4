"""BaseMarginSoftmax: one fit and one predict for NumPy, array API and Dask input.

Fit runs the same steps for every in-memory input, written once against the
input's array namespace ``xp`` (``NUMPY`` for NumPy and SciPy sparse rows):
validation, with labels and weights encoded on the host; the learned input
transform and the feature map (the subclasses' hooks); row norms, the lift
constant and the unit rows; the objective; a warm or cold start and the L-BFGS
continuation (:meth:`BaseMarginSoftmax._solve`). Only leaf kernels differ
between NumPy and a device (:mod:`._device`; :mod:`sklmargin.objective._rows`);
on a device the fitted arrays then move to ``X``'s device. A Dask fit is a
reduction over row chunks that feeds the same :meth:`_solve`
(:mod:`sklmargin.integrations.dask._estimators`).

Predict validates once, maps once and computes the margin-free logits
(:meth:`BaseMarginSoftmax._model_logits`); the decision, labels,
probabilities and the open-set score are read from them by the methods every
margin classifier shares (:mod:`._predict`).

Nothing here knows a loss formula: :mod:`sklmargin.losses` holds those,
:mod:`sklmargin.objective` the chain rule and :mod:`sklmargin.solver` the
L-BFGS runs. The linear and kernel classifiers differ only in the feature map.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from .._utils.array_api import (
    NUMPY,
    get_namespace,
    is_dask,
    max_abs,
    numpy_dtype,
    to_device,
    to_numpy,
)
from .._utils.compat import Interval, StrOptions, fit_context
from .._utils.doc_link import DocLinkMixin
from .._utils.legacy_state import LegacyStateMixin
from .._utils.validation import (
    check_feature_scales,
    check_logit_range,
    check_sample_and_class_weight,
    encode_labels,
    exact_class_totals,
    rounded_totals,
)
from ..features._input_transform import apply_input_transform
from ..losses._additive import Softmax
from ..losses._base import Margin
from ..losses._registry import LOSS_NAMES, loss_margin
from ..objective._linear import LinearMarginObjective, margin_free_logits
from ..objective._pointwise import checked_logit_scale
from ..objective._rows import PreparedRows, lift_constant, prepare_rows, row_norms
from ..solver._lbfgs import fit_continuation, lambda_schedule, warn_if_not_converged
from ..solver._start import (
    optimal_intercept,
    solve_softmax_start,
    start_params,
    warm_start_params,
    weighted_class_sums,
)
from ._device import move_fitted_to_device
from ._fit_path import fit_path, validate_training_data
from ._predict import MarginPredictMixin
from ._scale import gradient_tol, resolve_scale

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
    # Summed where the rows live (NumPy, sparse or a device): K x d numbers
    # come to the host, as for the class-mean start.
    weights = np.asarray(objective.sw_host, dtype=np.float64)
    totals = np.bincount(to_numpy(y), weights, minlength=n_classes)
    if np.any(totals <= 0):
        return None
    norms = getattr(objective, "norms", None)
    if norms is not None:
        weights = weights * np.asarray(to_numpy(norms), dtype=np.float64).ravel()
    sums = weighted_class_sums(rows, y, weights, n_classes)
    sizes = np.linalg.norm(sums / totals[:, None], axis=1)
    others = np.array([np.median(np.delete(sizes, j)) for j in range(n_classes)])
    # A class mean far beyond the others' (rows of 1e30, the others' means
    # near 0) is an infinite ratio: "not close", which the hint reads as such.
    with np.errstate(over="ignore"):
        return sizes / np.maximum(others, 1e-300)


class BaseMarginSoftmax(
    LegacyStateMixin, DocLinkMixin, MarginPredictMixin, ClassifierMixin, BaseEstimator
):
    """Shared fit/predict of the linear and the kernel estimator.

    Subclasses override the hooks :meth:`_fit_input_transform`,
    :meth:`_fit_feature_map`, :meth:`_map_features` and
    :meth:`_fold_features` to train on transformed inputs; everything else is
    common. Nothing here knows a loss: the margin object
    (:mod:`sklmargin.losses`) answers every per-loss question.
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
    #: Whether the smooth cosine losses run sphere-scaled L-BFGS
    #: (:func:`~sklmargin.solver._sphere.sphere_scaling`): fits decided by the data,
    #: not by round-off (measured on the benchmarks page, "Label stability").
    _sphere_scaled_solver = True
    #: Curvature pairs of the plain L-BFGS runs of the lambda stages and the
    #: final run (None: scipy's 10); SV-Softmax's state rounds keep 10.
    _solver_memory = None
    #: Whether ``s=None`` is resolved from the training rows
    #: (:func:`~sklmargin.estimators._scale.resolve_scale`) for the losses
    #: that normalise the rows; else it is the loss's constant default.
    _scale_from_data = False

    # Models saved when the Dask fit named its evaluation count on its own
    # (n_evaluations_dask_) read it from the one record of fit statistics.
    _legacy_fitted = {
        "_fit_stats": lambda state: (
            {"n_evaluations": state["n_evaluations_dask_"]}
            if "n_evaluations_dask_" in state
            else {}
        )
    }

    # -- hooks (identity for the linear estimator) ---------------------------
    # ``xp``/``device``: the rows' namespace and device (NUMPY, "cpu" for NumPy).
    def _fit_input_transform(
        self, X, y_encoded, sample_weight, xp=NUMPY, device="cpu", learn=True
    ):
        """Learn the input transform (if any) and return the transformed ``X``.

        ``learn=False``: a CV fold's mapped rows, mapped without one.
        """
        return X

    def _learn_input_transform(self, shape, input_dtype, take, keys):
        """Learn the input transform from rows ``take(rows)`` (None: none)."""
        return None

    def _transform_input(self, X):
        """Map validated rows by the fitted ``input_transform_`` (if any).

        Every prediction path calls it before the feature map (the Dask chunks
        through the NumPy methods); a model without the attribute (the linear
        estimator, pickles from before the metric) maps nothing.
        """
        return apply_input_transform(X, getattr(self, "input_transform_", None))

    def _fit_feature_map(
        self, X, y_encoded, sample_weight, xp=NUMPY, device="cpu", mapped=None
    ):
        """Fit the feature map (if any) and return the mapped training rows.

        ``y_encoded`` are the encoded labels (a width the data choose is
        scored on them); ``mapped`` is a CV fold's ``(feature_map, mapped
        rows)`` (:meth:`_fold_features`), used as they are.
        """
        return X

    def _map_features(self, X):
        """Map validated (and transformed) rows by the fitted feature map."""
        return X

    def _fold_features(self, X_train, sample_weight, X_test, xp=NUMPY, device="cpu"):
        """``(feature_map, training features, held-out features)`` of a CV fold.

        The CV estimators map a fold once and fit every grid point on the
        result (:mod:`sklmargin.model_selection._cv_path`); the linear
        estimator has no map (None: ``fit`` validates the raw rows itself).
        """
        return None, None, X_test

    # -- fit ------------------------------------------------------------------
    def _validate_hyperparameters(self):
        margin = loss_margin(self.loss, self.t)  # the rest is its base margin's
        s_param = self.s
        if s_param is None and self._unit_norm_features and margin.uses_s:
            s_param = margin.default_s_kernel
        m, s = margin.resolve(self.m, s_param)
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

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the classifier by L-BFGS.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (float32 stays float32). A Dask array is fitted by
            passes over its row chunks; an array API array (torch, CuPy, ...)
            under ``array_api_dispatch`` on its device.
        y : array-like of shape (n_samples,)
            Class labels, of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; integer weights are equivalent to repeating rows.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        if is_dask(X):  # by passes over its chunks; Dask imported only here
            from ..integrations.dask._estimators import fit_dask

            return fit_dask(self, X, y, sample_weight)
        for _ in fit_path(self, X, y, sample_weight):
            pass
        return self

    @fit_context(prefer_skip_nested_validation=True)
    def _fit_rows(self, training_rows, xp, device):
        """Fit on the rows ``training_rows(margin)`` prepares (one point of a path).

        The rows depend on the margin (angles, lift) but not on ``s``, ``C``
        or ``tol``: :func:`fit_path` prepares them once for a whole path.
        """
        margin, m, s, lambda_min = self._validate_hyperparameters()
        classes, y_encoded, sample_weight, rows, features = training_rows(margin)
        self.classes_ = classes
        if self._resolves_scale(margin):
            last = getattr(self, "margin_", None)
            if self.warm_start and last is not None and last.name == margin.name:
                s = self.s_  # a warm start continues at the fitted scale
                m = self.m_ if self.m is None else m
            else:
                s, m = resolve_scale(
                    self, rows, y_encoded, sample_weight, len(classes), margin, m, s,
                    follow=self.m is None,
                )  # fmt: skip
        largest = None
        if rows.norms is not None:
            largest = np.array([float(xp.max(rows.norms))])
        checked_logit_scale(
            margin, s, largest, np.ones(len(classes)), numpy_dtype(rows.X.dtype),
            "lower s, or scale the data (e.g. StandardScaler)",
        )  # fmt: skip
        # The labels live where the rows do (the objective indexes with them).
        y_rows = y_encoded
        if xp is not NUMPY:
            y_rows = to_device(y_encoded.astype(np.int64), xp, device)

        def objective_of(rows, margin, m, s):
            return LinearMarginObjective(
                rows, y_rows, len(classes), sample_weight, margin, m, s,
                self.C, self.fit_intercept,
            )  # fmt: skip

        objective = objective_of(rows, margin, m, s)
        # L-Softmax's start reads the mapped rows before normalisation.
        raw = [] if features is None else [features]

        def softmax_problem():
            # The raw rows are released once the start is built (a warm start
            # never calls this and keeps them to the end of fit).
            return objective_of(PreparedRows(raw.pop(), None, 0.0), Softmax(), 0.0, 1.0)

        self._solve(
            objective,
            lambda_min,
            # exact (in any row order or chunking, as the Dask fit's)
            rounded_totals(exact_class_totals(y_encoded, sample_weight, len(classes))),
            lambda: weighted_class_sums(rows.X, y_rows, sample_weight, len(classes)),
            softmax_problem,
        )
        if xp is not NUMPY:
            move_fitted_to_device(self, xp, device)
        return self

    def _resolves_scale(self, margin):
        """Whether this fit resolves ``s=None`` from its rows (or reuses ``s_``).

        Only for the estimators that opt in (``_scale_from_data``), the losses
        that normalise the rows and take ``s`` without SV-Softmax rounds. A CV
        search's path sets ``s`` at every step, so its fits never resolve it.
        A warm start keeps the previous fit's scale (no pilot runs).
        """
        return bool(
            self._scale_from_data
            and self.s is None
            and margin.normalizes_X
            and margin.uses_s
            and not margin.stateful
        )

    def _check_training_data(self, X, y, sample_weight, xp=NUMPY, warn_scale=True):
        """Return validated rows, classes, encoded labels and host weights."""
        X, y, sample_weight = validate_training_data(self, X, y, sample_weight, xp)
        classes, y_encoded = encode_labels(y)
        sample_weight = check_sample_and_class_weight(
            sample_weight, self.class_weight, classes, y_encoded, X.shape[0]
        )
        if warn_scale and xp is NUMPY:
            check_feature_scales(X, sample_weight, self)
        return X, classes, y_encoded, sample_weight

    def _training_rows(
        self, X, y, sample_weight, xp, device, margin, mapped, warn_scale,
        keep_features,
    ):  # fmt: skip
        """Validate, transform, map, lift and normalise the training rows.

        Returns ``(classes, y_encoded, sample_weight, rows, features)``:
        ``rows`` are the :class:`PreparedRows` the objective reads;
        ``features`` the mapped rows before normalisation when
        ``keep_features`` (L-Softmax's softmax start needs them), else None.
        ``mapped`` and ``warn_scale`` as in :func:`fit_path`.
        """
        X, classes, y_encoded, sample_weight = self._check_training_data(
            X, y, sample_weight, xp, warn_scale
        )
        self.classes_ = classes
        X = self._fit_input_transform(
            X, y_encoded, sample_weight, xp, device, learn=mapped is None
        )
        features = self._fit_feature_map(
            X, y_encoded, sample_weight, xp, device, mapped
        )
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
            features, normalize=margin.uses_angle, constant=constant, norms=norms,
            # Rows the map made in this call are ours and needed no more: the
            # unit rows overwrite them (a fold's serve every grid point).
            overwrite=features is not X and mapped is None and not keep_features,
        )  # fmt: skip
        return (
            classes,
            y_encoded,
            sample_weight,
            rows,
            (features if keep_features else None),
        )

    def _cold_start(self, objective, class_totals, class_sums, softmax_problem):
        """``(x0, n_iter)`` of a cold fit, as the margin's ``start`` asks.

        ``class_sums()`` gives the weighted class sums of the unit rows and
        ``softmax_problem()`` the plain-softmax objective on the raw rows
        (in memory, on a device, or reduced over Dask chunks); each is called
        only by the start that needs it.
        """
        margin = objective.margin
        if margin.start == "softmax-solution":
            # L-Softmax's logits at lambda -> infinity are the raw inner
            # products: the softmax prototypes on the raw rows carry over.
            start = softmax_problem()
            x0 = start_params(start, class_totals, None, self.random_state)
            settings = {
                "max_iter": self.max_iter,
                "tol": self.tol,
                "random_state": self.random_state,
            }
            return solve_softmax_start(start, x0, settings)
        sums = class_sums() if margin.start == "class-means" else None
        return start_params(objective, class_totals, sums, self.random_state), 0

    def _solve(self, objective, lambda_min, class_totals, class_sums, softmax_problem):
        """Solve from a warm or cold start and store the solution (every path).

        ``objective`` is a :class:`~sklmargin.objective.MarginObjective`: the
        loss and its resolved ``m`` and ``s`` are read from it. The other
        arguments feed :meth:`_cold_start`. Its evaluation count (and, on a
        device, its transfer time) are kept in ``_fit_stats``.
        """
        margin, s = objective.margin, objective.s
        # A data-chosen width's path model (the kernel estimator's
        # _fit_feature_map): fitted on this fit's map, so it comes before the
        # previous call's solution.
        start = self.__dict__.pop("_path_start", None)
        x0 = None if start is None else warm_start_params(start, objective)
        if x0 is None:
            x0 = warm_start_params(self, objective)
        warm, n_iter = x0 is not None, 0
        if warm:
            lambdas = [lambda_min]
        else:
            lambdas = lambda_schedule(lambda_min) if margin.uses_lambda else [0.0]
            x0, n_iter = self._cold_start(
                objective, class_totals, class_sums, softmax_problem
            )
            if margin.start == "class-means" and not margin.uses_lambda:
                x0 = optimal_intercept(objective, x0)
        result = fit_continuation(
            objective,
            x0,
            lambdas=lambdas,
            max_iter=self.max_iter,
            # dloss/dcos = s (p - y): the gradient is proportional to the logit
            # scale, so the tolerance is too (gradient_tol: tol * s, or
            # tol * s_0 for a raised scale whose margin follows it).
            tol=gradient_tol(self, margin, objective.m, s),
            warm=warm,
            verbose=self.verbose,
            sphere=self._sphere_scaled_solver,
            memory=self._solver_memory,
            stalled_at=getattr(self, "_stalled_at", None) if warm else None,
            spent=n_iter,  # (a softmax start's share of the preparing budget)
        )
        if not np.all(np.isfinite(result.params)):
            raise FloatingPointError(
                f"{type(self).__name__} diverged to non-finite coefficients with "
                f"loss={margin.name!r}; scale the data (StandardScaler) or lower s."
            )
        self._store_solution(objective, result.params)
        self._stalled_at = result.stalled_at  # (the next warm refit's)
        # The gradient size the stop test read (on its scale, tol * s): a CV
        # path sets its tolerance from its start's (_cv_path.path_tolerance).
        self._gradient_size = float(result.max_abs_grad)
        warn_if_not_converged(
            result,
            self.max_iter,
            self.tol,
            type(self).__name__,
            hint=self._collapse_hint(objective),
        )
        self.n_iter_ = n_iter + result.n_iter
        self._fit_stats = {
            key: getattr(objective, key)
            for key in ("n_evaluations", "transfer_seconds")
            if hasattr(objective, key)
        }
        return self

    def _store_solution(self, objective, params):
        """Fitted attributes in the training parametrisation (nothing folded)."""
        margin, dtype = objective.margin, objective.dtype
        coef, intercept = objective.unpack(params)
        # The solver's own prototype norms (the loss sees only directions):
        # a warm refit of the same problem starts where this one ended, with
        # the gradient scale its stopping test saw (warm_start_params).
        self._prototype_norms = None
        if margin.normalizes_W:
            norms = np.linalg.norm(coef, axis=1, keepdims=True)
            # A tuple, not an array: fitted arrays live in the input's
            # namespace (a device fit's too), these are host numbers.
            self._prototype_norms = tuple(norms.ravel().tolist())
            coef = coef / norms
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

    def _collapse_hint(self, objective):
        """Name the cone point when a prototype collapsed, and why it did.

        Two causes, told apart by where the class's rows sit. A class whose
        mean row is near the origin (the middle class of three along a line,
        once StandardScaler centred them) is best decided by its bias alone:
        ``w_j = 0`` is its optimum, where L-Softmax's target logit
        ``|w_j| |x| psi(theta)`` has a kink that L-BFGS cannot resolve -- the
        fit stalls there although the model is fine. Any other class collapsed
        because the margin was too hard for it (a small ``lambda_min``).
        """
        if objective.margin.normalizes_W:
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

    # -- prediction (the public methods: MarginPredictMixin) ------------------
    def _model_logits(self, X):
        """Margin-free logits of validated rows, in their dtype and namespace.

        In ``X``'s dtype whatever precision a kernel map computed in: a
        float64 model asked about float32 rows casts its logits, refused
        (ValueError) where float32 cannot hold them.
        """
        features = self._map_features(self._transform_input(X))
        logits = self._logits_of_features(features)
        if logits.dtype == X.dtype:
            return logits
        check_logit_range(
            max_abs(logits), numpy_dtype(X.dtype),
            f"predict on {numpy_dtype(logits.dtype)} rows, or refit with a lower s",
        )  # fmt: skip
        return get_namespace(logits)[0].astype(logits, X.dtype)

    def _logits_of_features(self, features):
        """Margin-free logits of rows (any namespace) mapped by ``feature_map_``."""
        return margin_free_logits(
            self.margin_,
            features,
            self.coef_,
            self.intercept_,
            s=self.s_,
            constant=self.constant_feature_,
            constant_coef=self.constant_coef_,
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        # Fit and predict in the input's namespace under array_api_dispatch
        # (torch, CuPy, array-api-strict; the device leaves in ._device).
        tags.array_api_support = True
        return tags
