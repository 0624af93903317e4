r"""The CV estimators on array API inputs: folds on the device, scores on the host.

With ``sklearn.set_config(array_api_dispatch=True)``, ``fit(X, y)`` with a
torch tensor, CuPy or array-api-strict ``X`` runs the search of
:mod:`sklmargin.model_selection._cv_base` with these pieces in place of the
NumPy ones:

* a fold's rows are cut on the device (``xp.take``) and, for the kernel
  estimator, mapped there once per fold and ``gamma``
  (:meth:`KernelMarginSoftmaxClassifier._fold_features_namespace`); every path
  point is fitted by the base estimator's namespace fit
  (:mod:`sklmargin.estimators._namespace`);
* the held-out margin-free logits of each path point are computed on the
  device and brought to the host (``n_test x K`` numbers): the scores, the
  selection and the temperature fit stay NumPy, as in the NumPy search, so
  they are exactly its code;
* the labels and sample weights are validated and encoded on the host, as
  the base estimators' namespace fit does; ``gamma="scale"`` is computed on
  the device;
* ``predict``, ``predict_proba``, ``predict_log_proba``,
  ``decision_function`` and ``score_samples`` run in ``X``'s namespace on its
  device, the temperature applied there.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from .._utils.array_api import (
    fitted_on_device,
    input_namespace,
    namespace_name,
    to_device,
    to_numpy,
    wide_dtype,
)


def fit_inputs(estimator, X, y, sample_weight, xp):
    """Validate an array API ``X``; bring ``y`` and the weights to the host.

    The labels and weights come to the host (``n`` numbers each) to be
    checked and encoded by the NumPy search's own code ("everything follows
    ``X``": they may be in any namespace or on any device).
    """
    X = validate_data(estimator, X, dtype=[xp.float64, xp.float32])
    y = column_or_1d(to_numpy(y), warn=True)
    if y.shape[0] != X.shape[0]:
        raise ValueError(
            "Found input variables with inconsistent numbers of samples: "
            f"[{X.shape[0]}, {y.shape[0]}]"
        )
    return X, y, None if sample_weight is None else to_numpy(sample_weight)


def take_rows(X, indices, xp, device):
    """Rows ``indices`` (host integers) of ``X``, cut on its device.

    ``xp.take`` rather than ``X[indices]``: the array API standard indexes
    with arrays of its own namespace only (array-api-strict enforces it).
    """
    indices = to_device(np.asarray(indices, dtype=np.int64), xp, device)
    return xp.take(X, indices, axis=0)


def fold_y_test(y_test, xp, device):
    """Held-out labels for a user's ``scoring``: on the device when numeric.

    The scorer compares them with the fold model's ``predict``, which returns
    numeric labels on the device (string labels stay NumPy on both sides).
    """
    if y_test.dtype.kind in "biuf":
        return to_device(y_test, xp, device)
    return y_test


def held_out_logits(estimator, features):
    """Margin-free logits of a fold's held-out rows, as a NumPy array.

    Computed where the rows are; a namespace's come to the host (``n_test x
    K`` numbers), where the scores and the temperature fit use them.
    """
    namespace = input_namespace(features)
    if namespace is None:
        return estimator._logits_of_features(features)
    from ..estimators._namespace import namespace_logits

    return to_numpy(namespace_logits(estimator, features, *namespace))


def named_scoring_failure(score, scoring, name):
    """Wrap a user's ``scoring`` so that its failure on array API rows is named.

    Some of scikit-learn's metrics do not take array API inputs yet (in 1.9,
    ``"roc_auc_ovr"`` fails inside torch with a ``TypeError`` about ``diff``;
    ``GridSearchCV`` fails the same way): the error then says which scoring
    failed, on what, and what to do. NumPy rows call ``score`` unchanged.
    """

    def score_rows(estimator, rows, logits):
        if input_namespace(rows.X_test) is None:
            return score(estimator, rows, logits)
        try:
            return score(estimator, rows, logits)
        except (TypeError, AttributeError, ValueError) as exc:
            raise ValueError(
                f"{name}: scoring={scoring!r} failed on the held-out rows "
                f"({namespace_name(rows.X_test)} input, array_api_dispatch on; "
                f"{type(exc).__name__}: {exc}). Not every scikit-learn metric "
                "supports array API inputs: use one that does (the default "
                "scoring=None, accuracy, or 'neg_log_loss'), or fit on NumPy "
                "arrays (X.cpu().numpy() for a torch tensor)."
            ) from exc

    return score_rows


def scale_gamma_namespace(X, sample_weight, xp):
    """``gamma="scale"`` of an array API ``X``, computed on its device."""
    from ..features._gamma import gamma_from_variance
    from ..features._namespace import weighted_variance

    weights = np.ones(X.shape[0]) if sample_weight is None else sample_weight
    return gamma_from_variance(weighted_variance(X, weights, xp), X.shape[1])


def to_namespace_attributes(cv_estimator, xp, device):
    """Move ``scores_`` and ``n_iter_`` to the fit's namespace and device.

    scikit-learn keeps a fit's array attributes in ``X``'s namespace (its
    array API checks require it); ``cv_results_`` stays a dict of NumPy
    arrays, as :class:`~sklearn.model_selection.GridSearchCV`'s.
    """
    wide = wide_dtype(xp, device)
    cv_estimator.scores_ = to_device(cv_estimator.scores_, xp, device, dtype=wide)
    cv_estimator.n_iter_ = to_device(cv_estimator.n_iter_.astype(np.int64), xp, device)


def fitted_models(cv_estimator):
    """Return the models that predict: the refit one, or each fold's best."""
    if cv_estimator.estimator_ is not None:
        return [cv_estimator.estimator_]
    return cv_estimator.estimators_


def routed_namespace(cv_estimator, X):
    """``(xp, device)`` of ``X`` when the namespace code predicts, else False.

    False for NumPy input to a model fitted on NumPy (the NumPy code runs);
    None for host input to a model fitted on a device (which is refused).
    """
    check_is_fitted(cv_estimator)
    namespace = input_namespace(X)
    if namespace is None and not fitted_on_device(fitted_models(cv_estimator)[0]):
        return False
    return namespace


def _full_class_logits(logits, estimator_classes, classes, xp):
    """:func:`~sklmargin.model_selection._cv_path.full_class_logits` in ``xp``.

    Column by column (``K`` of them): the standard has no scatter into
    columns.
    """
    if len(estimator_classes) == len(classes):
        return logits
    floor = xp.min(logits, axis=1)
    position = {label: j for j, label in enumerate(estimator_classes.tolist())}
    columns = [
        logits[:, position[label]] if label in position else floor
        for label in classes.tolist()
    ]
    return xp.stack(columns, axis=1)


def predict_cv_array_api(cv_estimator, method, X, namespace):
    """``cv_estimator.<method>(X)`` in ``X``'s namespace and on its device.

    The operations of the NumPy methods of
    :class:`~sklmargin.model_selection._cv_base._BaseMarginSoftmaxCV`: the
    models' logits (averaged over the folds' models when not refit), for two
    classes the difference ``z_1 - z_0`` and ``[0, z_1 - z_0]``, and the
    calibrated ``softmax(z / T)``.
    """
    # Loaded on first use, as the base estimators load it: importing
    # sklmargin loads no array API module.
    from ..estimators._namespace import (
        _check_same_namespace,
        namespace_labels,
        namespace_model_logits,
        namespace_probabilities,
        predict_array_api,
    )

    xp, device = namespace if namespace is not None else (None, None)
    models = fitted_models(cv_estimator)
    _check_same_namespace(models[0], X, method, xp, device, owner=cv_estimator)
    X = validate_data(cv_estimator, X, dtype=[xp.float64, xp.float32], reset=False)
    if method == "score_samples":
        scores = [predict_array_api(m, method, X, namespace) for m in models]
        return scores[0] if len(scores) == 1 else xp.mean(xp.stack(scores), axis=0)
    logits = [
        _full_class_logits(
            namespace_model_logits(m, X, xp, device),
            m.classes_,
            cv_estimator.classes_,
            xp,
        )  # fmt: skip
        for m in models
    ]
    logits = logits[0] if len(logits) == 1 else xp.mean(xp.stack(logits), axis=0)
    if logits.shape[1] == 2:
        decision = logits[:, 1] - logits[:, 0]
        if method == "decision_function":
            return decision
        logits = xp.stack([xp.zeros_like(decision), decision], axis=1)
    elif method == "decision_function":
        return logits
    if method == "predict":
        return namespace_labels(
            cv_estimator.classes_, xp.argmax(logits, axis=1), xp, device
        )
    proba = namespace_probabilities(logits / float(cv_estimator.temperature_), xp)
    return xp.log(proba) if method == "predict_log_proba" else proba
