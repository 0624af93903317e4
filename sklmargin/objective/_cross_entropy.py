"""The softmax cross-entropy at the end of every loss, from one fused pass.

``softmax_cross_entropy(z, y, sw)`` returns the weighted cross-entropy of the
logits ``z`` and its gradient ``dloss/dz`` (written over ``z``); the labels
``y`` may be integers or, cast once by the caller, floats of ``z``'s dtype
(what the compiled loss takes: no cast per call). scikit-learn's
compiled multinomial loss does it in one pass (in place) when it is importable
and agrees with :func:`array_cross_entropy` on a probe; otherwise that one,
written for any array namespace (the device path's), is used.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.extmath import softmax

from .._utils.array_api import NUMPY
from .._utils.compat import HalfMultinomialLoss


def array_cross_entropy(z, target_indicator, sw, xp):
    r"""Weighted softmax cross-entropy of logits ``z`` and its gradient, any namespace.

    .. math::

        L = \sum_i w_i \big(\log \textstyle\sum_j e^{z_{ij} - \max_j z_{ij}}
        - (z_{iy_i} - \max_j z_{ij})\big), \qquad
        \frac{\partial L}{\partial z_{ij}} = w_i\,(p_{ij} - 1[j = y_i])

    with the row maximum subtracted first (large ``s`` never overflows).
    ``target_indicator`` is the one-hot label matrix in ``z``'s dtype; ``sw``
    the weights summing to one, in whose dtype the loss is accumulated.
    """
    shifted = z - xp.max(z, axis=1, keepdims=True)
    exp = xp.exp(shifted)
    sum_exp = xp.sum(exp, axis=1)
    # Only one non-zero term per row: the sum is the target entry, exactly.
    shifted_y = xp.sum(shifted * target_indicator, axis=1)
    per_sample = xp.log(sum_exp) - shifted_y
    loss = float(xp.sum(sw * xp.astype(per_sample, sw.dtype)))
    weights = xp.astype(sw, z.dtype, copy=False)
    grad = (exp / sum_exp[:, None] - target_indicator) * weights[:, None]
    return loss, grad


def _numpy_softmax_cross_entropy(z, y, sw):
    """:func:`array_cross_entropy` of NumPy logits (the fallback)."""
    xp = NUMPY
    indicator = (y[:, None] == np.arange(z.shape[1])[None, :]).astype(z.dtype)
    return array_cross_entropy(z, indicator, sw, xp)


def _sklearn_softmax_cross_entropy(z, y, sw):
    """Compute the same with scikit-learn's fused, compiled multinomial loss."""
    loss_fn = HalfMultinomialLoss(n_classes=z.shape[1])
    dtype = z.dtype
    loss_out = np.empty(z.shape[0], dtype=dtype)
    loss_fn.loss_gradient(
        y_true=y.astype(dtype, copy=False),
        raw_prediction=z,
        sample_weight=sw.astype(dtype, copy=False),
        loss_out=loss_out,
        gradient_out=z,  # row-wise: each row is read before it is written
    )
    return float(loss_out.sum(dtype=np.float64)), z


def _select_cross_entropy():
    """Use scikit-learn's compiled loss if it exists and agrees with numpy.

    ``sklearn._loss`` is private (imported, guarded, in :mod:`sklmargin._utils.compat`):
    it is probed once, on a small problem, and a missing class, an exception or
    a disagreement falls back to the numpy version, so a future scikit-learn
    that moves or changes it costs speed, not results.
    """
    if HalfMultinomialLoss is None:
        return _numpy_softmax_cross_entropy
    try:
        rng = np.random.default_rng(0)
        z = rng.standard_normal((7, 3)) * 10
        y = np.arange(7) % 3
        sw = np.full(7, 1 / 7)
        loss, grad = _sklearn_softmax_cross_entropy(z.copy(), y, sw)
        ref_loss, ref_grad = _numpy_softmax_cross_entropy(z.copy(), y, sw)
        if np.isclose(loss, ref_loss, rtol=1e-10) and np.allclose(grad, ref_grad):
            return _sklearn_softmax_cross_entropy
    except Exception:  # noqa: BLE001 - any failure means: do not use it
        pass
    return _numpy_softmax_cross_entropy


softmax_cross_entropy = _select_cross_entropy()


def predicted_probabilities(logits):
    """Softmax of ``logits`` (row-wise), floored at the dtype's smallest number.

    At a large logit scale a logit gap beyond ~104 (float32) or ~745 (float64)
    underflows a probability to 0, and ``log`` of it to ``-inf`` with a
    RuntimeWarning. The floor (``smallest_subnormal``: 1.4e-45 in float32,
    5e-324 in float64) keeps every probability positive, invisibly to their
    sums, so that ``predict_log_proba`` can be exactly ``log(predict_proba)``
    -- what scikit-learn's ``check_classifiers_train`` compares, ``-inf``
    included -- and finite (at worst -103.3 in float32, -744.4 in float64).
    """
    proba = softmax(np.array(logits, copy=True), copy=False)
    return np.maximum(proba, np.finfo(proba.dtype).smallest_subnormal, out=proba)
