r"""The RBF models' two widths: the kernel width ``gamma`` and the feature width.

Both follow :class:`~sklmargin.KernelMarginSoftmaxClassifier`'s own defaults,
so that a default ``compare`` run measures the library's default kernel model,
and its peers with a feature map are as wide as it is:

* **Feature width** (``--n-components``, resolved by
  :func:`~sklmargin.estimators._kernel.resolve_n_components`). ``"auto"``
  (the default) is the estimator's ``n_components="auto"``, resolved by the
  estimator itself on the rows of each fit (a CV fold's, the training
  split's). RBFSampler and Nystroem take an integer width, built before any
  fit: they get the width the same law gives the whole training split, the
  width of the timed final fit of ``kernel:*``.
* **Kernel width, tuned** (the grid key ``"gamma/scale"``,
  :func:`relative_gamma_base`). A multiple of the ``"scale"`` value
  :math:`\gamma_0 = 1 / (d\,\mathrm{Var}(X))` of the rows the RBF kernel
  sees: for SVC the standardised (and imputed) training split; for
  ``kernel:*`` those rows *after the learned metric* (``metric``), where the
  estimator's ``gamma="auto"`` is a multiple of the same value
  (:data:`KERNEL_GAMMA_MULTIPLIERS` is centred on it). The metric is learned
  once on the whole training split, as the default fit learns it; each CV
  fold learns its own, so a fold's value may differ a little.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.pipeline import Pipeline

from .. import KernelMarginSoftmaxClassifier
from .._utils.validation import encode_labels
from ..features._gamma import scale_gamma
from ..features._kernel_features import AUTO_GAMMA_FACTOR, AUTO_WIDTH_RANGE

#: Grid key of an RBF width given as a multiple of the "scale" value
#: ``1 / (n_features * Var(X))`` of the rows the kernel sees.
RELATIVE_GAMMA = "gamma/scale"

#: Multiples of "scale" tried by SVC: centred on its default, gamma="scale".
GAMMA_MULTIPLIERS = [0.25, 1.0, 4.0]

#: Multiples of "scale" (after the learned metric) tried by ``kernel:*``: the
#: same steps as SVC's, centred on the estimator's default gamma="auto".
KERNEL_GAMMA_MULTIPLIERS = [AUTO_GAMMA_FACTOR * f for f in GAMMA_MULTIPLIERS]

#: The word ``--n-components`` takes for the estimator's own width.
AUTO = "auto"


def auto_width_range() -> tuple[int, int]:
    """Return the smallest and largest width of ``n_components="auto"``.

    The estimator's own bounds (``auto_n_components`` clips to them), so
    the help text cannot drift from its law.
    """
    return AUTO_WIDTH_RANGE


def classifier_in(model: BaseEstimator, classifier_path: str) -> BaseEstimator:
    """Return the classifier inside a model step (``ModelSpec.build``'s result)."""
    if classifier_path:
        return model.get_params(deep=True)[classifier_path.rstrip("_")]
    return model


def relative_gamma_base(
    pipeline: Pipeline, classifier_path: str, X: np.ndarray, y: np.ndarray
) -> float:
    r"""Return the "scale" value the ``gamma/scale`` multiples of a model multiply.

    :math:`1 / (d\,\mathrm{Var})` of the rows the classifier's RBF kernel
    sees on the training split: the output of the pipeline's steps before the
    model (imputer, scaler), fitted on ``X``; for a kernel model with a
    learned metric, those rows after its metric, learned as its fit learns it
    (same rows, same seed: the "scale" its ``gamma="auto"`` doubles). The
    model is taken as built: a ``--grid`` over ``metric`` keeps the base of
    the default metric.

    Parameters
    ----------
    pipeline : Pipeline
        From :func:`~sklmargin.compare.models.build_pipeline` (unfitted).
    classifier_path : str
        Where the classifier sits in the model (``ModelSpec.classifier_path``).
    X, y : ndarray
        The training split.

    Returns
    -------
    float
    """
    rows = clone(pipeline[:-1]).fit_transform(X, y)  # the scaler (and imputer)
    rows = np.asarray(rows, dtype=np.float64)
    classifier = classifier_in(pipeline.named_steps["model"], classifier_path)
    if isinstance(classifier, KernelMarginSoftmaxClassifier) and (
        classifier.metric is not None
    ):
        # The estimator's own step (a private hook of the package, which the
        # CV search uses too): the same pilot fits, rows, class weights and
        # seed as its fit, not a copy of them.
        classes, y_encoded = encode_labels(np.asarray(y))
        rows, _ = clone(classifier)._metric_rows(rows, y_encoded, classes)
    return scale_gamma(rows)


def describe_gamma_bases() -> str:
    """Return what ``gamma/scale`` multiplies: the report's and ``--help``'s words."""
    return (
        "gamma as multiples of the 'scale' value 1/(d Var) of the rows the "
        "kernel sees: SVC the standardised training split, kernel:* those rows "
        "after its learned metric (its default gamma='auto' is "
        f"{AUTO_GAMMA_FACTOR:g} x that value)"
    )
