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

Why these: of the candidate scores measured (the nearest-centre term alone,
the Nyström norm, the maximum probability or logit, the energy
:math:`\log\sum_j e^{z_j}` of Liu et al. 2020, a Mahalanobis distance, the
maximum cosine), the sum separates known from unknown rows best on average.
Distance wins on low-dimensional inputs, confidence on wide ones (where
distances concentrate); the sum keeps most of both. The open-set page of the
documentation has the measurements and their command.

The temperature: at the kernel default ``s=100`` most rows have
:math:`\hat p_{\max} \approx 1`, which says nothing. :math:`T = s/30` reads
the probabilities near the scale that calibrates them on held-out rows; it
was not tuned for AUROC, which is flat in it.

The score is written once, against the rows' array namespace:
:func:`open_set_score` serves NumPy, sparse and array API rows (Dask rows
chunk by chunk), for one model or, averaged, for a CV estimator's fold
models (:mod:`sklmargin.estimators._predict`). Only the log-sum-exp has a
NumPy leaf (SciPy's); the distances are the Nyström map's own
(:meth:`~sklmargin.features.NystroemFeatures.nearest_centre_log_similarity`).

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

from .._utils.array_api import NUMPY, get_namespace, wide_dtype

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

    Computed as :math:`\max_j z_j / T - \log\sum_j e^{z_j / T}` in float64
    (the widest float of ``logits``' device), so a row far from every class
    keeps a finite, ordered value instead of a probability that underflows.
    NumPy logits go through :func:`scipy.special.logsumexp`, array API
    logits through the same shifted sum in their namespace.

    Parameters
    ----------
    logits : array of shape (n_samples, n_classes)
        NumPy, or an array API array (under ``array_api_dispatch``).
    temperature : float, default=1.0

    Returns
    -------
    array of shape (n_samples,), values in :math:`[-\log K, 0]`
        In the namespace and on the device of ``logits``.
    """
    xp, device = get_namespace(logits, user_input=True)
    if xp is NUMPY:
        scaled = np.asarray(logits, dtype=np.float64) / float(temperature)
        return scaled.max(axis=1) - logsumexp(scaled, axis=1)
    scaled = xp.astype(logits, wide_dtype(xp, device)) / float(temperature)
    shifted = scaled - xp.max(scaled, axis=1, keepdims=True)
    return -xp.log(xp.sum(xp.exp(shifted), axis=1))


def open_set_score(model, X, logits):
    """``score_samples`` of one fitted model from its logits of validated rows ``X``.

    The log maximum probability at the model's temperature plus, for a
    Nyström map, the log-kernel to the nearest centre of the rows the map
    sees; in float64 (the widest float of ``X``'s device), in ``X``'s
    namespace and on its device.
    """
    score = log_max_probability(logits, open_set_temperature(model.s_))
    # The Nyström map's own distance term; other maps have no centres.
    feature_map = getattr(model, "feature_map_", None)
    nearest = getattr(feature_map, "nearest_centre_log_similarity", None)
    if nearest is None:
        return score
    return score + nearest(model._transform_input(X))
