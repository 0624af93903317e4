r"""The device leaves of fit and predict: what array API inputs do differently.

With ``sklearn.set_config(array_api_dispatch=True)`` a torch tensor, CuPy or
array-api-strict ``X`` runs the one fit and predict of
:class:`~sklmargin.estimators._base.BaseMarginSoftmax` in its own namespace
``xp`` on its own device (NumPy input runs the same steps with NumPy leaves:
the logits, :func:`~sklmargin.objective._linear.margin_free_logits`, and the
open-set score, :mod:`sklmargin.openset._scores`, branch inside). This module
holds the leaves that differ on a device:

* the softmax and the labels lookup in ``xp`` (their NumPy twins write in
  place, or look up labels that may be strings: :mod:`._predict`);
* the end of a fit: the fitted arrays move to ``X``'s device
  (:func:`move_fitted_to_device`).

What crosses between host and device: once per fit the labels and the sample
weights (``n`` numbers each) come to the host to be validated and encoded by
the NumPy code, and the encoded labels go to the device; per L-BFGS
evaluation the parameters and the gradient (``K d + K`` numbers, see
:class:`~sklmargin.objective._linear.LinearMarginObjective`); at the end of
fit ``coef_``, ``intercept_``, ``constant_coef_`` and the map's arrays move
to the device, where scikit-learn keeps them (``classes_`` stays NumPy:
labels may be strings). Per prediction the prototypes are normalised on the
host (``K d`` numbers each way). Predictions are returned in ``X``'s
namespace, on its device.
"""

from __future__ import annotations

import numpy as np

from .._utils.array_api import move_fitted_arrays, numpy_dtype, to_device, to_numpy

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
    move_fitted_arrays(estimator, _DEVICE_ATTRIBUTES, xp, device)


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
