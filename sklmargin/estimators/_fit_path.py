"""What a fit does before its solver: checked inputs and the explicit path.

:func:`validate_training_data` checks the rows in their namespace and brings
labels and weights to the host; :func:`fit_path` prepares the rows once and
fits an estimator at each step of a path (one step is ``fit``), as
scikit-learn's ``_logistic_regression_path`` does: the CV searches walk it
per fold and at the refit.
"""

from __future__ import annotations

from sklearn.utils.validation import (
    check_consistent_length,
    column_or_1d,
    validate_data,
)

from .._utils.array_api import NUMPY, get_namespace, host_inputs
from .._utils.validation import accepted_rows


def validate_training_data(estimator, X, y, sample_weight, xp):
    """``(X, y, sample_weight)``: ``X`` checked in its namespace, the rest on the host.

    Labels and weights follow ``X`` ("everything follows X", as scikit-learn):
    array API ones come to the host (``n`` numbers each), where the NumPy code
    checks and encodes them, so ``class_weight`` and every weighted statistic
    are the NumPy fit's.
    """
    y, sample_weight = host_inputs(y, sample_weight)
    if xp is NUMPY:
        X, y = validate_data(estimator, X, y, order="C", **accepted_rows(NUMPY))
        return X, y, sample_weight
    X = validate_data(estimator, X, **accepted_rows(xp))
    y = column_or_1d(y, warn=True)
    check_consistent_length(X, y)
    return X, y, sample_weight


def fit_path(
    estimator, X, y, sample_weight=None, steps=({},), *, mapped=None,
    warn_scale=True,
):  # fmt: skip
    """Fit ``estimator`` at each of ``steps`` in turn; yield it after each fit.

    The explicit path, as scikit-learn's ``_logistic_regression_path``: the
    rows are validated, transformed, mapped, lifted and normalised once, and
    every step (a dict of parameters set before its fit: the path's ``s`` or
    ``C``, and ``tol``) is fitted on them, from the previous solution when
    ``warm_start`` is set. A loss whose start reads the mapped rows before
    normalisation (L-Softmax) prepares them at every step.

    Parameters
    ----------
    estimator : BaseMarginSoftmax
    X, y, sample_weight
        The training rows, as ``fit`` takes them (in memory).
    steps : sequence of dict, default=({},)
        The parameters of each point, in order; one empty step is ``fit``.
    mapped : tuple, default=None
        A CV fold's ``(feature_map, mapped rows of X)``
        (:meth:`BaseMarginSoftmax._fold_features`): used as they are, with
        no input transform of their own.
    warn_scale : bool, default=True
        Whether to warn about the feature scales (FeatureScaleWarning); a
        search warns once, at its refit, not per fold and grid point.

    Yields
    ------
    estimator
        Fitted at the step just taken.
    """
    xp, device = get_namespace(X, user_input=True)
    kept = []

    def training_rows(margin):
        keep_features = margin.start == "softmax-solution"
        if not kept or keep_features:
            kept[:] = [
                estimator._training_rows(
                    X,
                    y,
                    sample_weight,
                    xp,
                    device,
                    margin,
                    mapped,
                    warn_scale,
                    keep_features,
                )  # fmt: skip
            ]
        return kept[0]

    for step in steps:
        estimator.set_params(**step)
        yield estimator._fit_rows(training_rows, xp, device)
