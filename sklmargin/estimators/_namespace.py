r"""Fit and predict on array API inputs: the data stay on their device.

With ``sklearn.set_config(array_api_dispatch=True)``, ``fit(X, y)`` with a
torch tensor, CuPy or array-api-strict ``X`` comes here (one dispatch line at
the top of :meth:`BaseMarginSoftmax.fit`, after the Dask one), as
scikit-learn's ``LogisticRegression(solver="lbfgs")`` does since 1.9: the
rows, the feature map, the row preparation, the margins and the cross-entropy
run in ``X``'s namespace on ``X``'s device; scipy's L-BFGS, the continuation
and the SV rounds run on the host (:mod:`sklmargin.solver`, unchanged) on a
:class:`~sklmargin.objective.LinearMarginObjective` on the device's rows.

What crosses between host and device:

* once per fit: the labels ``y`` and the sample weights (``n`` numbers each)
  come to the host to be validated and encoded exactly as the NumPy fit does
  (so ``class_weight`` and the weighted statistics are identical), and the
  encoded labels go to the device; ``y`` and ``sample_weight`` may be in any
  namespace or on any device ("everything follows X", as scikit-learn). The
  Nyström map copies ``X`` to the host once to choose its centres
  (:mod:`sklmargin.features._namespace`);
* per L-BFGS evaluation: the ``K d + K`` parameters and the gradient, and a
  few ``K``-vectors (:class:`sklmargin.objective.LinearMarginObjective`);
* at the end of fit: the fitted arrays (``coef_``, ``intercept_``,
  ``constant_coef_``, the map's arrays) move to ``X``'s device, where
  scikit-learn keeps them; ``classes_`` stays a NumPy array (labels may be
  strings).

Predictions are computed and returned in ``X``'s namespace and on its device;
predicting on inputs of another namespace or device than the fit's raises.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from .._utils.array_api import (
    _is_host,
    check_same_namespace,
    numpy_dtype,
    row_slices,
    to_device,
    to_numpy,
    wide_dtype,
)
from .._utils.validation import check_sample_and_class_weight, check_two_classes
from ..losses._additive import Softmax
from ..objective import LinearMarginObjective
from ..objective._pointwise import checked_logit_scale
from ..objective._rows import TINY_NORM, PreparedRows
from ..objective._rows import lift_constant as namespace_lift_constant
from ..objective._rows import lift_norms as _lifted
from ..objective._rows import prepare_rows as namespace_prepare_rows
from ..objective._rows import row_norms as namespace_row_norms
from ..solver._start import solve_softmax_start, start_params
from ..solver._start import weighted_class_sums as namespace_class_sums

#: The fitted arrays that live on the fit's device.
_DEVICE_ATTRIBUTES = ("coef_", "intercept_", "constant_coef_")
#: The learned metric's arrays (learned on the host, from a row sample).
_METRIC_ATTRIBUTES = ("input_transform_", "feature_relevance_", "metric_")


# -- fit ---------------------------------------------------------------------------
def _host_labels_and_weights(estimator, X, y, sample_weight):
    """Labels and weights on the host, validated and encoded as the NumPy fit."""
    y = column_or_1d(to_numpy(y), warn=True)
    if y.shape[0] != X.shape[0]:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: "
            f"[{X.shape[0]}, {y.shape[0]}]"
        )
    check_classification_targets(y)
    classes, y_encoded = np.unique(y, return_inverse=True)
    check_two_classes(classes)
    if sample_weight is not None and not _is_host(sample_weight):
        sample_weight = to_numpy(sample_weight)
    sample_weight = check_sample_and_class_weight(
        sample_weight, estimator.class_weight, classes, y_encoded.ravel(), X.shape[0]
    )
    return classes, y_encoded.ravel(), sample_weight


def fit_array_api(estimator, X, y, sample_weight, xp, device):
    """Fit ``estimator`` on an array API ``X``; see the module docstring."""
    margin, m, s, lambda_min = estimator._validate_hyperparameters()
    X = validate_data(estimator, X, dtype=[xp.float64, xp.float32])
    classes, y_encoded, sample_weight = _host_labels_and_weights(
        estimator, X, y, sample_weight
    )
    estimator.classes_ = classes
    X = estimator._fit_input_transform(X, y_encoded, sample_weight, xp, device)
    y_device = to_device(y_encoded.astype(np.int64), xp, device)
    # Rows the map made in this call are ours to normalise in place, as the
    # NumPy fit does; a CV fold's premapped rows serve every point of its path.
    premapped = "_premapped" in vars(estimator)
    features = estimator._fit_feature_map_namespace(X, sample_weight, xp, device)
    # L-Softmax's softmax start works on the raw rows: kept until the start.
    raw_start = margin.start == "softmax-solution"
    norms = namespace_row_norms(features, xp) if margin.uses_angle else None
    constant = (
        namespace_lift_constant(
            norms, features.shape[1], sample_weight, estimator.constant_feature, xp
        )
        if margin.normalizes_X
        else 0.0
    )
    rows = namespace_prepare_rows(
        features, xp, normalize=margin.uses_angle, constant=constant, norms=norms,
        overwrite=features is not X and not premapped and not raw_start,
    )  # fmt: skip
    # Only the start may need the raw rows: the solve holds the prepared ones.
    raw = [features] if raw_start else []
    del features, norms
    dtype = numpy_dtype(rows.X.dtype)
    largest = None if rows.norms is None else np.array([float(xp.max(rows.norms))])
    checked_logit_scale(
        margin, s, largest, np.ones(len(classes)), dtype,
        "lower s, or scale the data (e.g. StandardScaler)",
    )  # fmt: skip
    settings = (estimator.C, estimator.fit_intercept)
    objective = LinearMarginObjective(
        rows, y_device, len(classes), sample_weight, margin, m, s, *settings
    )
    totals = np.bincount(y_encoded, sample_weight, minlength=len(classes))

    def cold_start():
        if raw_start:
            # The raw rows are released once the start is solved (a warm
            # start never calls this and keeps them to the end of fit).
            start = LinearMarginObjective(
                PreparedRows(raw.pop(), None, 0.0), y_device, len(classes),
                sample_weight, Softmax(), 0.0, 1.0, *settings,
            )  # fmt: skip
            x0 = start_params(start, totals, None, estimator.random_state)
            return solve_softmax_start(
                start,
                x0,
                {
                    "max_iter": estimator.max_iter,
                    "tol": estimator.tol,
                    "random_state": estimator.random_state,
                },
            )
        sums = None
        if margin.start == "class-means":
            sw_device = to_device(
                sample_weight, xp, device, dtype=wide_dtype(xp, device)
            )
            sums = namespace_class_sums(rows.X, y_device, sw_device, len(classes), xp)
        return start_params(objective, totals, sums, estimator.random_state), 0

    # A warm start reads the previous solution through to_numpy
    # (solver._start.warm_start_params); _store_solution writes NumPy arrays.
    estimator._solve(objective, lambda_min, cold_start)
    for name in _DEVICE_ATTRIBUTES:
        setattr(estimator, name, to_device(getattr(estimator, name), xp, device))
    for name in _METRIC_ATTRIBUTES:  # the kernel's learned metric, if any
        if getattr(estimator, name, None) is not None:
            setattr(estimator, name, to_device(getattr(estimator, name), xp, device))
    estimator._array_api_stats = {
        "transfer_seconds": objective.transfer_seconds,
        "n_evaluations": objective.n_evaluations,
    }
    return estimator


# -- predict -----------------------------------------------------------------------
def _check_same_namespace(estimator, X, method, xp, device, owner=None):
    """Refuse ``X`` from another namespace or device than the fit's.

    ``owner`` is the estimator the user called, when it is not ``estimator``
    (a CV estimator predicting with its fitted model): the error names it.
    The check itself is :func:`sklmargin._utils.array_api.check_same_namespace`,
    shared with the feature maps' ``transform``.
    """
    name = f"{type(estimator if owner is None else owner).__name__}.{method}()"
    check_same_namespace(estimator.coef_, X, name, method, xp, device)


def namespace_logits(estimator, X, xp, device):
    """Margin-free logits of the fitted model in the namespace.

    The operations of :func:`sklmargin.objective._linear.margin_free_logits`
    and :func:`sklmargin.objective._rows.lifted_cosines`, in their order:
    prototypes (and their lift coordinate) normalised in float64, one GEMM in
    ``X``'s dtype, the lift added, rows divided by ``|[x, c]|``, times the
    training scale, plus the bias.
    """
    margin = estimator.margin_
    dtype = X.dtype
    np_dtype = numpy_dtype(dtype)
    wide = wide_dtype(xp, device)
    remedy = "predict with float64 input, or refit with a smaller s"
    coef = to_device(estimator.coef_, xp, device)
    intercept = xp.astype(to_device(estimator.intercept_, xp, device), dtype)
    if not margin.uses_angle:
        raw = X @ xp.astype(coef, dtype).T
        scale = checked_logit_scale(margin, estimator.s_, None, None, np_dtype, remedy)
        return raw * float(scale) + intercept
    coef = xp.astype(coef, wide)
    squared = xp.sum(coef * coef, axis=1)
    constant = estimator.constant_feature_
    lift = None
    if constant:
        lift = xp.astype(to_device(estimator.constant_coef_, xp, device), wide)
        squared = squared + lift * lift
    w_norm = xp.clip(xp.sqrt(squared), min=TINY_NORM)
    cos = X @ xp.astype(coef / w_norm[:, None], dtype).T
    if lift is not None:
        cos = cos + xp.astype(constant * (lift / w_norm), dtype)
    norms = _lifted(namespace_row_norms(X, xp), constant, xp)
    cos = cos * xp.astype(1.0 / xp.clip(norms, min=TINY_NORM), dtype)[:, None]
    norms = xp.astype(norms, dtype)
    checked_logit_scale(
        margin, estimator.s_, np.array([float(xp.max(xp.astype(norms, wide)))]),
        np.asarray(to_numpy(w_norm), dtype=np.float64), np_dtype, remedy,
    )  # fmt: skip
    scale = margin.logit_scale(estimator.s_, norms, w_norm)
    if not isinstance(scale, (int, float)):
        scale = xp.astype(scale, dtype)
    return cos * scale + intercept


def namespace_probabilities(logits, xp):
    """Softmax of ``logits`` floored as :func:`predicted_probabilities`."""
    shifted = logits - xp.max(logits, axis=1, keepdims=True)
    exp = xp.exp(shifted)
    proba = exp / xp.sum(exp, axis=1, keepdims=True)
    floor = float(np.finfo(numpy_dtype(logits.dtype)).smallest_subnormal)
    return xp.clip(proba, min=floor)


def _namespace_open_set_score(estimator, X, logits, xp, device):
    """:meth:`score_samples` in the namespace (float64 where the device has it).

    ``log max softmax(z / T)`` plus, for a Nyström map, ``-gamma`` times the
    squared distance to the nearest centre, as
    :func:`sklmargin.openset._scores.margin_softmax_score_samples`.
    """
    from ..features._nystroem import NystroemFeatures
    from ..openset._scores import open_set_temperature

    wide = wide_dtype(xp, device)
    scaled = xp.astype(logits, wide) / open_set_temperature(estimator.s_)
    shifted = scaled - xp.max(scaled, axis=1, keepdims=True)
    score = -xp.log(xp.sum(xp.exp(shifted), axis=1))
    feature_map = getattr(estimator, "feature_map_", None)
    if not isinstance(feature_map, NystroemFeatures):
        return score
    X = estimator._transform_input(X, xp, device)  # the rows the map sees
    centres = xp.astype(to_device(feature_map.components_, xp, device), wide)
    offset = xp.mean(centres, axis=0)
    centres = (centres - offset) * float(np.sqrt(feature_map.gamma_))
    nearest = []
    for rows in row_slices(X.shape[0], 8 * max(centres.shape[0], X.shape[1])):
        part = (xp.astype(X[rows, :], wide) - offset) * float(
            np.sqrt(feature_map.gamma_)
        )
        distances = (
            (part @ centres.T) * -2.0
            + xp.sum(part * part, axis=1)[:, None]
            + xp.sum(centres * centres, axis=1)[None, :]
        )
        nearest.append(xp.min(xp.clip(distances, min=0.0), axis=1))
    return score - (xp.concat(nearest) if len(nearest) != 1 else nearest[0])


def namespace_model_logits(estimator, X, xp, device):
    """Margin-free logits of a fitted model on a validated array API ``X``.

    In ``X``'s dtype whatever precision a kernel map computed in (as the NumPy
    path's ``logits_in_dtype``), refused where that dtype cannot hold them.
    """
    features = estimator._map_features_namespace(
        estimator._transform_input(X, xp, device), xp, device
    )
    logits = namespace_logits(estimator, features, xp, device)
    if logits.dtype != X.dtype:  # a float64 kernel map asked about float32 rows
        limit = float(np.finfo(numpy_dtype(X.dtype)).max) / 64.0
        largest = float(xp.max(xp.abs(logits)))
        if not largest < limit:
            raise ValueError(
                f"The logit scale reaches {largest:.3g}, beyond what "
                f"{numpy_dtype(X.dtype)} logits can hold (about {limit:.3g}): "
                "predict on float64 rows, or refit with a lower s."
            )
        logits = xp.astype(logits, X.dtype)
    return logits


def namespace_labels(classes, indices, xp, device):
    """``classes[indices]`` on the device; NumPy for labels with no array API dtype."""
    if classes.dtype.kind in "biuf":
        try:
            return xp.take(to_device(classes, xp, device), indices)
        except (NotImplementedError, RuntimeError, TypeError):
            # torch cannot index uint64 tensors (index_select): the labels are
            # looked up on the host and moved to the device (n numbers).
            return to_device(classes[to_numpy(indices)], xp, device)
    # String labels have no array API dtype: NumPy, as scikit-learn.
    return classes[to_numpy(indices)]


def predict_array_api(estimator, method, X, namespace):
    """``estimator.<method>(X)`` for an array API ``X`` (or a device-fitted model).

    ``namespace`` is ``(xp, device)`` of ``X``, or None for host input (which
    a model fitted on a device refuses).
    """
    check_is_fitted(estimator)
    xp, device = namespace if namespace is not None else (None, None)
    _check_same_namespace(estimator, X, method, xp, device)
    X = validate_data(estimator, X, dtype=[xp.float64, xp.float32], reset=False)
    logits = namespace_model_logits(estimator, X, xp, device)
    if method == "score_samples":
        return _namespace_open_set_score(estimator, X, logits, xp, device)
    if method == "decision_function":
        return logits[:, 1] - logits[:, 0] if logits.shape[1] == 2 else logits
    if method == "predict":
        return namespace_labels(
            estimator.classes_, xp.argmax(logits, axis=1), xp, device
        )
    proba = namespace_probabilities(logits, xp)
    return xp.log(proba) if method == "predict_log_proba" else proba
