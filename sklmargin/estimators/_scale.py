r"""The linear estimator's ``s=None``: a logit scale the training rows decide.

A cosine head ``z_ij = s cos(theta_ij) + b_j`` with a fixed ``s`` caps how
confident, and so how discriminative, the model can be. A small scale is a
strong regulariser: the prototypes stay near the class means ("weight
imprinting"), which is what a few thousand rows support. Many rows of a nearly
separable problem (frozen embeddings of 10^5-10^6 rows) support a sharper
model than that, and a constant ``s`` then underfits: its held-out
probabilities are *under*-confident.

:func:`resolve_scale` reads that from the data. It holds out a fixed slice of
the training rows (:data:`HOLD_OUT`), fits the loss's default scale ``s_0`` on
the rest, and fits one temperature ``T`` to the held-out margin-free logits
(weighted cross-entropy, ``T`` in ``[1/20, 20]``). ``T < RAISE_AT`` means
the held-out rows do not ask for a sharper model: the scale stays (the usual
case for small data, where ``T`` is near or below 1). Otherwise the scale
becomes ``s T``; only a ``T`` above ``MAX_STEP`` is cut to that factor and
the pilot refitted at the new scale to ask again, at most ``MAX_RAISES``
pilots in all. When the user left ``m`` at its default, the margin follows
the scale (:func:`margin_at_scale`: ``s m`` kept in logits), in the pilots
and in the final model. The final model is then fitted, cold, on all the rows
at the scale and margin found, so that
``MarginSoftmaxClassifier(s=clf.s_, m=clf.m_)`` refits the same model. Above
the default scale, at the default's margin in logits or less, the solver's
stop test stays at the default's (:func:`gradient_tol`), so that a raised
head is fitted, not left at its start.

The slice is chosen by the rows' content (a hash of each unit row's
projection on a fixed direction), not by their position: a permutation of the
training rows holds out the same rows.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from .._utils.array_api import NUMPY, get_namespace, to_device, to_numpy
from ..objective._linear import LinearMarginObjective, margin_free_logits
from ..objective._rows import PreparedRows
from ..solver._lbfgs import fit_continuation
from ..solver._start import start_params, weighted_class_sums

#: Fraction of the training rows the pilot holds out.
HOLD_OUT = 0.2
#: Held-out temperature from which the scale is raised.
RAISE_AT = 1.5
#: Largest factor of one raise, and the number of raises.
MAX_STEP = 8.0
MAX_RAISES = 3
#: Below this many held-out rows (or 5 per class) the pilot is not run: too
#: few to tell a temperature from noise, and the default scale is the
#: measured choice for small data.
MIN_HELD_OUT = 200


def held_out_mask(X, xp=NUMPY, device="cpu"):
    """Boolean host mask of the held-out rows, from each row's content.

    ``X`` are the prepared (unit, lifted) rows in any namespace or CSR. The
    key is the fractional part of ``2^16`` times the row's projection on a
    fixed Gaussian direction (seeded by the width): the same rows are held out
    in any order of the data.
    """
    direction = np.random.default_rng([0x5CA1E, X.shape[1]]).standard_normal(X.shape[1])
    if xp is NUMPY:
        key = np.asarray(X @ direction.astype(X.dtype)).ravel()
    else:
        key = to_numpy(X @ to_device(direction, xp, device, X.dtype))
    key = np.asarray(key, dtype=np.float64) * 65536.0
    return (key - np.floor(key)) < HOLD_OUT


def _rows_at(rows, index, xp, device):
    """Return the :class:`PreparedRows` at host integer ``index``."""
    if xp is NUMPY:
        X = rows.X[index]
        norms = None if rows.norms is None else rows.norms[index]
    else:
        take = to_device(index.astype(np.int64), xp, device)
        X = xp.take(rows.X, take, axis=0)
        norms = None if rows.norms is None else xp.take(rows.norms, take, axis=0)
    return PreparedRows(X, norms, rows.constant)


def _labels_at(y_encoded, index, xp, device):
    labels = y_encoded[index]
    return labels if xp is NUMPY else to_device(labels.astype(np.int64), xp, device)


def held_out_temperature(logits, y, sample_weight):
    """Return the ``T`` minimising the weighted cross-entropy of ``T z``."""
    logits = np.asarray(logits, dtype=np.float64)
    weights = sample_weight / sample_weight.sum()
    target = logits[np.arange(len(y)), y]

    def loss(log_t):
        t = np.exp(log_t)
        return float(weights @ (logsumexp(t * logits, axis=1) - t * target))

    result = minimize_scalar(
        loss, bounds=(np.log(1 / 20), np.log(20)), method="bounded"
    )
    return float(np.exp(result.x))


def gradient_tol(estimator, margin, m, s):
    """Return the solver's gradient tolerance: ``tol * s``, or ``tol * s_0``.

    The gradient of the cosine losses is proportional to ``s``, so ``tol * s``
    keeps the meaning of ``tol`` where it was measured, at the loss's default
    ``(m_0, s_0)``. A fit above the default scale whose margin in logits is
    no more than the default's, ``s m <= s_0 m_0`` (the resolved default's
    fits, ``m = 0``, NormFace), is stopped at ``tol * s_0`` instead (for the
    estimators that resolve ``s``, the losses that normalise the rows): on
    wide unit rows its gradient at the class-mean start is already below
    ``tol * s``, so the sharper head a raised scale stands for was never
    fitted. A larger margin keeps the start's gradient large, and those fits
    (a search's path at the default margin) keep ``tol * s``.
    """
    if s is None:
        return estimator.tol
    if (
        estimator._scale_from_data
        and margin.normalizes_X
        and margin.uses_s
        and s > margin.default_s
        and s * m <= margin.default_s * margin.default_m * (1 + 1e-9)
    ):
        return estimator.tol * margin.default_s
    return estimator.tol * s


def margin_at_scale(m, s_0, s):
    """Return the default margin at scale ``s``: ``m s_0 / s``, equal in logits.

    ``s m`` is the margin the target logit must win by. The loss's default
    ``(m, s_0)`` is the measured choice for small data; at a raised scale the
    margin keeps ``s m`` there, since a constant ``m`` (a cosine offset) grows
    with ``s`` into a margin the data no longer support.
    """
    return m if s == s_0 else m * (s_0 / s)


def resolve_scale(
    estimator, rows, y_encoded, sample_weight, n_classes, margin, m, s, follow=False
):
    """Return the scale ``s`` the held-out rows support, and the margin there.

    Parameters
    ----------
    estimator : BaseMarginSoftmax
        Its ``C``, ``fit_intercept``, ``max_iter``, ``tol`` and
        ``random_state`` set the pilot fits.
    rows : PreparedRows
        The prepared training rows (any namespace).
    y_encoded, sample_weight : ndarray of shape (n_samples,)
        Host labels and weights.
    n_classes : int
    margin : Margin
    m, s : float
        The resolved margin and the loss's default scale.
    follow : bool, default=False
        Whether the margin follows the scale (:func:`margin_at_scale`: the
        user left ``m`` at its default), in the pilots and in the result;
        else ``m`` is used as given.

    Returns
    -------
    s, m : float
        ``s`` itself or the raised scale, and the margin to fit at it.
    """
    m0, s0 = m, s
    xp, device = get_namespace(rows.X)
    hold = held_out_mask(rows.X, xp, device)
    n_hold = int(hold.sum())
    if n_hold < max(MIN_HELD_OUT, 5 * n_classes) or hold.all():
        return s, m
    train, test = np.flatnonzero(~hold), np.flatnonzero(hold)
    train_rows = _rows_at(rows, train, xp, device)
    test_rows = _rows_at(rows, test, xp, device)
    y_train = _labels_at(y_encoded, train, xp, device)
    sw_train, sw_test = sample_weight[train], sample_weight[test]
    if sw_test.sum() <= 0 or sw_train.sum() <= 0:
        return s, m
    totals = np.bincount(y_encoded[train], sw_train, minlength=n_classes)
    sums = weighted_class_sums(train_rows.X, y_train, sw_train, n_classes)
    for _ in range(MAX_RAISES):
        if follow:
            m = margin_at_scale(m0, s0, s)
        objective = LinearMarginObjective(
            train_rows, y_train, n_classes, sw_train, margin, m, s,
            estimator.C, estimator.fit_intercept,
        )  # fmt: skip
        # The class-mean start with log-prior biases, without the bias-only
        # solve of a full fit: the pilot only reads a temperature, and the
        # solve was a third of its cost.
        x0 = start_params(objective, totals, sums, estimator.random_state)
        result = fit_continuation(
            objective, x0, max_iter=estimator.max_iter,
            tol=gradient_tol(estimator, margin, m, s),
            sphere=estimator._sphere_scaled_solver,
        )  # fmt: skip
        coef, intercept = objective.unpack(result.params)
        if intercept is None:
            intercept = np.zeros(n_classes)
        logits = margin_free_logits(margin, test_rows.X, coef, intercept, s=s)
        t = held_out_temperature(to_numpy(logits), y_encoded[test], sw_test)
        if not t >= RAISE_AT:  # NaN too: a pilot in trouble changes nothing
            return s, m
        s = s * min(t, MAX_STEP)
        if t <= MAX_STEP:  # the held-out temperature, taken in one step
            break
    return s, (margin_at_scale(m0, s0, s) if follow else m0)
