r"""Open-set scores: how typical of the known classes a row is (higher: more).

The estimators' ``score_samples`` is the logarithm of a product of two factors,

.. math::

    \operatorname{score}(x) = \underbrace{-\gamma \min_{c \in C}
    \lVert x - c \rVert^2}_{\log \max_c k(x, c)}
    \; + \; \underbrace{\log \max_j \operatorname{softmax}\big(z(x) / T\big)_j
    }_{\log \hat p_{\max}(x)},

*near the training data* times *confident about one class*. The first term is
the RBF kernel value between ``x`` and its nearest Nyström centre (the centres
are training rows of the known classes, so this is a 1-nearest-neighbour
similarity on up to ``n_components`` of them); it is 0 for the linear estimator
and for the random Fourier maps, which have no centres. The second is the
maximum softmax probability (Hendrycks and Gimpel 2017) of the margin-free
logits :math:`z(x)` at the temperature :math:`T = \max(1, s / 30)`.

Why these (``benchmarks/openset.py``, ``benchmarks/results_openset.md``: 7
shared data sets x 5 random splits, 60% of the classes known, mean AUROC of
known against unknown test rows, kernel default): the sum 0.818; the
nearest-centre term alone 0.809; the Nyström norm :math:`\log \lVert z(x)
\rVert^2 = \log k_C(x)^\top K_{CC}^{-1} k_C(x)` 0.781; the maximum probability
alone 0.753 (0.754 at :math:`T = s/30`); the maximum logit 0.723; the energy
:math:`\log\sum_j e^{z_j}` (Liu et al. 2020) 0.722. In an earlier screening
(training splits subsampled to 8000 rows): a class-conditional Mahalanobis
distance in the mapped space 0.77, the maximum cosine without the bias 0.69.
The best baseline, SVC's Platt probability, reaches 0.805. Distance wins on
the low-dimensional sets (pendigits, satimage, segment, letter), confidence on
the wide ones (usps, dna: distances concentrate); the sum keeps most of both.

The temperature: at the kernel default ``s=100`` most rows have
:math:`\hat p_{\max} \approx 1`. Fitted on held-out rows, the calibrating
temperature of the kernel default is 1.5-2.6 (:math:`s/T` = 38-65) and that of
the linear default 1.0-1.4 (:math:`s/T` = 21-31): :math:`T = s/30` reads the
probabilities near the calibrated scale. It was not tuned for AUROC, which
is flat in it (screening: 0.812 at :math:`T = 1`, 0.817 at :math:`s/T = 33`).

References
----------
.. [1] D. Hendrycks and K. Gimpel, "A Baseline for Detecting Misclassified and
   Out-of-Distribution Examples in Neural Networks", ICLR 2017,
   arXiv:1610.02136.
.. [2] W. Liu, X. Wang, J. Owens and Y. Li, "Energy-based Out-of-distribution
   Detection", NeurIPS 2020, arXiv:2010.03759.
.. [3] Y. Sun, Y. Ming, X. Zhu and Y. Li, "Out-of-Distribution Detection with
   Deep Nearest Neighbors", ICML 2022, arXiv:2204.06507.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp
from sklearn.utils import gen_batches
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils.blocks import rows_per_block
from ..features._kernel_block import scaled_squared_distances
from ..features._nystroem import NystroemFeatures

#: Logit scale at which the maximum probability is read: ``T = max(1, s / 30)``.
OPEN_SET_SCALE = 30.0


def open_set_temperature(s):
    """Temperature ``T = max(1, s / 30)`` of the open-set probability.

    Losses without a logit scale (``s`` None: L-Softmax) and small scales keep
    ``T = 1``: their probabilities are not saturated by the scale.
    """
    return 1.0 if s is None else max(1.0, float(s) / OPEN_SET_SCALE)


def log_max_probability(logits, temperature=1.0):
    r"""Return :math:`\log \max_j \operatorname{softmax}(z / T)_j` row by row.

    Computed as :math:`\max_j z_j / T - \log\sum_j e^{z_j / T}` in float64, so a
    row far from every class keeps a finite, ordered value instead of a
    probability that underflows.

    Parameters
    ----------
    logits : ndarray of shape (n_samples, n_classes)
    temperature : float, default=1.0

    Returns
    -------
    ndarray of shape (n_samples,), values in :math:`[-\log K, 0]`.
    """
    scaled = np.asarray(logits, dtype=np.float64) / float(temperature)
    return scaled.max(axis=1) - logsumexp(scaled, axis=1)


def nearest_centre_log_similarity(feature_map, X):
    r"""Log-kernel to the nearest centre, :math:`-\gamma \min_c \lVert x - c \rVert^2`.

    The centres are those of a fitted :class:`NystroemFeatures`; any other map
    (random Fourier features, or none) has no centres and gives zeros. Squared
    distances come from :math:`\lVert a \rVert^2 + \lVert c \rVert^2 - 2 a^\top c`
    in float64 after subtracting the centres' mean (as the map's ``transform``
    does), clipped at 0, by row blocks of bounded memory. Kept as a distance,
    not as :math:`\exp(\cdot)`: far rows stay ordered instead of underflowing
    to a tie at 0.

    Parameters
    ----------
    feature_map : NystroemFeatures, RandomFourierFeatures or None
    X : {ndarray, csr_matrix} of shape (n_samples, n_features)
        Validated input of the estimator.

    Returns
    -------
    ndarray of shape (n_samples,), values :math:`\le 0`.
    """
    n_samples = X.shape[0]
    if not isinstance(feature_map, NystroemFeatures):
        return np.zeros(n_samples)
    centres = feature_map.components_.astype(np.float64)
    offset = centres.mean(axis=0)
    centres = centres - offset
    block = rows_per_block(8 * max(centres.shape[0], X.shape[1]))
    nearest = np.empty(n_samples)
    for rows in gen_batches(n_samples, block):
        part = X[rows].toarray() if hasattr(X, "toarray") else X[rows]
        part = np.asarray(part, dtype=np.float64) - offset
        distances = scaled_squared_distances(part, centres, feature_map.gamma_)
        nearest[rows] = distances.min(axis=1)
    return -nearest


class OpenSetScoreMixin:
    """``score_samples`` of MarginSoftmax and KernelMarginSoftmax classifiers."""

    def score_samples(self, X):
        r"""Open-set score: higher means more typical of the known classes.

        .. math::

            -\gamma \min_c \lVert x - c \rVert^2
            + \log \max_j \operatorname{softmax}\big(z(x) / T\big)_j,
            \qquad T = \max(1, s / 30):

        the log-kernel to the nearest Nyström centre (0 without centres: the
        linear estimator, random Fourier maps) plus the log of the maximum
        probability (Hendrycks and Gimpel 2017) of the margin-free logits
        :math:`z(x)`. Chosen by measurement among the usual scores (module
        ``sklmargin.openset._scores``); :class:`OpenSetClassifier` thresholds
        it.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
            In float64, at most 0.
        """
        if (routed := self._routed(X, "score_samples")) is not None:
            return routed
        if (on_device := self._array_api_predict(X)) is not None:
            return on_device
        return margin_softmax_score_samples(self, X)

    def _predict_with_score(self, X):
        """``(predict(X), score_samples(X))`` from one pass (NumPy rows).

        What :meth:`OpenSetClassifier.predict` needs: the rows are validated,
        and mapped to logits, once instead of once per method.
        """
        return margin_softmax_score_samples(self, X, with_labels=True)


class CVOpenSetScoreMixin:
    """``score_samples`` of the cross-validated classifiers."""

    def score_samples(self, X):
        """Open-set score of the chosen model (the folds' mean if not refit).

        As :meth:`MarginSoftmaxClassifier.score_samples`: higher means more
        typical of the known classes.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return cv_score_samples(self, X)


def margin_softmax_score_samples(estimator, X, with_labels=False):
    r"""``score_samples`` of a fitted MarginSoftmax or KernelMarginSoftmax classifier.

    Parameters
    ----------
    estimator : BaseMarginSoftmax
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
    with_labels : bool, default=False
        Also return ``predict(X)``, the class of the largest of the same logits.

    Returns
    -------
    labels : ndarray of shape (n_samples,)
        Only with ``with_labels``.
    score : ndarray of shape (n_samples,)
        :math:`\log \max_c k(x, c) + \log \hat p_{\max}(x)` in float64.
    """
    check_is_fitted(estimator)
    X = validate_data(
        estimator, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False
    )
    logits = estimator._logits(X)
    score = log_max_probability(logits, open_set_temperature(estimator.s_))
    feature_map = getattr(estimator, "feature_map_", None)
    score = score + nearest_centre_log_similarity(
        feature_map, estimator._transform_input(X)
    )
    if with_labels:
        return estimator.classes_[np.argmax(logits, axis=1)], score
    return score


def cv_score_samples(cv_model, X):
    """``score_samples`` of a CV estimator: the refit model's, else the folds' mean.

    With ``refit=False`` each fold's best model scores the rows and the scores
    are averaged, as ``decision_function`` averages their logits.
    """
    check_is_fitted(cv_model)
    if (routed := cv_model._array_api_predict(X, "score_samples")) is not None:
        return routed
    X = validate_data(
        cv_model, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False
    )
    if cv_model.estimator_ is not None:
        return cv_model.estimator_.score_samples(X)
    return np.mean([est.score_samples(X) for est in cv_model.estimators_], axis=0)
