r"""The device leaves of fit and predict: what array API inputs do differently.

With ``sklearn.set_config(array_api_dispatch=True)`` a torch tensor, CuPy or
array-api-strict ``X`` runs the one fit and predict of
:class:`~sklmargin.estimators._base.BaseMarginSoftmax` in its own namespace
``xp`` on its own device (NumPy input runs the same steps with NumPy leaves).
This module holds the leaves that differ on a device:

* the logits kernel (:func:`device_logits`): the operations of
  :func:`~sklmargin.objective._linear.margin_free_logits` in ``xp``, without
  its in-place NumPy writes;
* the softmax and the labels lookup in ``xp`` (the other prediction steps,
  the open-set score among them, are written once against the namespace:
  :mod:`._predict`);
* the end of a fit: the fitted arrays move to ``X``'s device
  (:func:`move_fitted_to_device`).

What crosses between host and device: once per fit the labels and the sample
weights (``n`` numbers each) come to the host to be validated and encoded by
the NumPy code, and the encoded labels go to the device; per L-BFGS
evaluation the parameters and the gradient (``K d + K`` numbers, see
:class:`~sklmargin.objective._linear.LinearMarginObjective`); at the end of
fit ``coef_``, ``intercept_``, ``constant_coef_`` and the map's arrays move
to the device, where scikit-learn keeps them (``classes_`` stays NumPy: labels may be
strings). Predictions are returned in ``X``'s namespace, on its device.
"""

from __future__ import annotations

import numpy as np

from .._utils.array_api import numpy_dtype, to_device, to_numpy, wide_dtype
from ..objective._pointwise import checked_logit_scale
from ..objective._rows import TINY_NORM, lift_norms, row_norms

#: The fitted arrays that live on the fit's device (the learned metric's too).
_DEVICE_ATTRIBUTES = (
    "coef_",
    "intercept_",
    "constant_coef_",
    "input_transform_",
    "feature_relevance_",
    "metric_",
)


def move_fitted_to_device(estimator, xp, device):
    """Move the fitted arrays (and the learned metric's, if any) to ``device``."""
    for name in _DEVICE_ATTRIBUTES:
        if getattr(estimator, name, None) is not None:
            setattr(estimator, name, to_device(getattr(estimator, name), xp, device))


def device_logits(estimator, X, xp, device):
    """Margin-free logits of the fitted model on mapped rows ``X`` in ``xp``.

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
    norms = lift_norms(row_norms(X), constant)
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


def device_probabilities(logits, xp):
    """Softmax of ``logits`` in ``xp``, floored as ``predicted_probabilities``."""
    shifted = logits - xp.max(logits, axis=1, keepdims=True)
    exp = xp.exp(shifted)
    proba = exp / xp.sum(exp, axis=1, keepdims=True)
    floor = float(np.finfo(numpy_dtype(logits.dtype)).smallest_subnormal)
    return xp.clip(proba, min=floor)


def device_labels(classes, indices, xp, device):
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
