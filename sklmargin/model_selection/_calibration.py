r"""Temperature scaling of margin-free logits.

A margin loss trains at a fixed logit scale ``s`` (or with the feature norms as
the scale): a good scale for *accuracy*, but nothing makes ``softmax(z)`` a
calibrated probability. Temperature scaling (Guo et al. 2017) fits one scalar
:math:`T > 0` on held-out logits and predicts :math:`\mathrm{softmax}(z / T)`:
argmax and ranks are unchanged, only the confidence is rescaled.

With the inverse temperature :math:`\beta = 1/T` the weighted log loss

.. math::

    L(\beta) = \frac{1}{\sum_i w_i} \sum_i w_i \Big(
        \log \sum_j e^{\beta z_{ij}} - \beta z_{i y_i} \Big)

is *convex* in :math:`\beta` (a log-sum-exp of a linear function minus a
linear function), with

.. math::

    L'(\beta) = \frac{\sum_i w_i (\mathbb{E}_{p_i}[z_i] - z_{iy_i})}{\sum_i w_i},
    \qquad
    L''(\beta) = \frac{\sum_i w_i \mathrm{Var}_{p_i}[z_i]}{\sum_i w_i} \ge 0,

where :math:`p_i = \mathrm{softmax}(\beta z_i)`. So a safeguarded Newton
iteration on :math:`\beta` (geometric bisection on the sign of :math:`L'`
whenever a Newton step leaves the bracket) finds the minimiser to machine
precision in about ten evaluations. That
matters beyond speed: fits with integer sample weights and with repeated rows
then give the same ``T`` to the last bits, which a derivative-free bounded
search stopping at ``xatol`` would not.

References
----------
Guo, Pleiss, Sun and Weinberger, "On Calibration of Modern Neural Networks",
ICML 2017, arXiv:1706.04599.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

#: Bounds of the temperature: beyond them the held-out set is (numerically)
#: separable or uninformative and the value would only be noise.
T_MIN, T_MAX = 1e-2, 1e2


def _loss_derivatives(beta, z, z_true, weights):
    scaled = beta * z
    log_norm = logsumexp(scaled, axis=1)
    proba = np.exp(scaled - log_norm[:, None])
    mean_z = np.sum(proba * z, axis=1)
    var_z = np.maximum(np.sum(proba * z * z, axis=1) - mean_z**2, 0.0)
    value = weights @ (log_norm - beta * z_true)
    return value, weights @ (mean_z - z_true), weights @ var_z


def fit_temperature(logits, y_encoded, sample_weight=None, max_iter=100):
    r"""Temperature :math:`T` minimising the weighted log loss of softmax(z / T).

    Parameters
    ----------
    logits : ndarray of shape (n_samples, n_classes)
        Held-out margin-free logits.
    y_encoded : ndarray of shape (n_samples,)
        Column index of each sample's true class.
    sample_weight : ndarray of shape (n_samples,), default=None
        Non-negative weights.
    max_iter : int, default=100
        Budget of safeguarded Newton steps (about 10 are used in practice).

    Returns
    -------
    float
        The temperature, in ``[T_MIN, T_MAX]``; 1.0 when the logits carry no
        information (all rows constant) or all weights are zero.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([[4.0, 0.0], [0.0, 4.0], [4.0, 0.0], [4.0, 0.0]])
    >>> y = np.array([0, 1, 1, 0])  # one confident mistake in four
    >>> round(fit_temperature(z, y), 3)
    3.641
    """
    z = np.asarray(logits, dtype=np.float64)
    y_encoded = np.asarray(y_encoded)
    weights = np.ones(z.shape[0]) if sample_weight is None else sample_weight
    weights = np.asarray(weights, dtype=np.float64)
    total = weights.sum()
    if z.shape[0] == 0 or not total > 0:
        return 1.0
    weights = weights / total
    # Logits are defined up to a per-row shift; centring keeps exp() tame.
    z = z - z.mean(axis=1, keepdims=True)
    if not np.any(np.abs(z) > 0):
        return 1.0
    z_true = z[np.arange(z.shape[0]), y_encoded]

    lo, hi = 1.0 / T_MAX, 1.0 / T_MIN
    if _loss_derivatives(lo, z, z_true, weights)[1] >= 0:
        return T_MAX
    if _loss_derivatives(hi, z, z_true, weights)[1] <= 0:
        return T_MIN
    beta = 1.0
    for _ in range(max_iter):
        _, slope, curvature = _loss_derivatives(beta, z, z_true, weights)
        if slope > 0:
            hi = beta
        else:
            lo = beta
        step = slope / curvature if curvature > 0 else np.inf
        if abs(step) <= 4 * np.finfo(float).eps * beta:
            break  # Newton has converged to machine precision
        candidate = beta - step
        if not lo < candidate < hi:
            # Newton left the bracket: bisect, geometrically since the
            # bracket spans orders of magnitude.
            candidate = np.sqrt(lo * hi)
        if hi - lo <= 4 * np.finfo(float).eps * hi:
            break
        beta = candidate
    return float(1.0 / beta)
