"""The pointwise layer of the objective, as scikit-learn's ``_loss`` does it.

:func:`margin_softmax_loss` (public) and :func:`pointwise_loss_gradient` go
from the ``(n, K)`` matrix of cosines (raw logits for ``loss="softmax"``) to
the weighted mean cross-entropy of the margin logits and its gradient with
respect to the cosines (and the bias, and the logit scale where it depends on
``|w|``); :func:`checked_logit_scale` refuses a scale the dtype cannot hold.
The chain rule to the parameters is :mod:`sklmargin.objective._linear`'s.

:func:`pointwise_loss_gradient` is written once for every array namespace
(the cosines' own, on their device): :class:`TargetEntries` holds its only
namespace-specific kernels, NumPy's in-place fancy indexing and compiled
cross-entropy against a one-hot mask and ``where`` elsewhere.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._utils.array_api import NUMPY, get_namespace, wide_dtype
from .._utils.validation import check_logit_range, check_weights
from ..losses._base import _real
from ..losses._registry import loss_margin
from ._cross_entropy import array_cross_entropy, softmax_cross_entropy

# Room left by a logit scale for |f|, |f'| (~1e3 at the float32 cosine clip).
_SCALE_HEADROOM = 2.0**16


class PointwiseResult(NamedTuple):
    """What :func:`pointwise_loss_gradient` returns."""

    loss: float
    grad_cos: np.ndarray
    grad_intercept: np.ndarray
    grad_scale: np.ndarray | None
    state: object


class TargetEntries:
    """The target entries ``(i, y_i)`` of ``(n, K)`` arrays, and the cross-entropy.

    The pointwise layer's only namespace branch, built once per objective.
    NumPy labels: fancy indexing, written in place, and the compiled fused
    cross-entropy (:mod:`._cross_entropy`). Labels of another array API
    namespace (on their device): ``take_along_axis``, a one-hot mask for
    ``where`` (the standard has no fancy-index assignment) and the namespace
    cross-entropy.

    Parameters
    ----------
    y : array of shape (n_samples,)
        Integer labels ``0..n_classes-1``.
    n_classes : int

    Attributes
    ----------
    wide : dtype
        float64, or float32 on a device without it: sums and the target
        transform run in it.
    """

    def __init__(self, y, n_classes):
        self.y = y
        self.xp, device = get_namespace(y)
        self.wide = wide_dtype(self.xp, device)
        # The labels as the cross-entropy takes them, per logits' dtype, made
        # once: floats for NumPy's compiled loss, the one-hot mask elsewhere.
        self._labels = {}
        if self.xp is NUMPY:
            self.rows = np.arange(y.shape[0])
        else:
            classes = self.xp.arange(n_classes, device=device)
            self.mask = y[:, None] == classes[None, :]

    def take(self, a):
        """Return ``a[i, y_i]`` for every row."""
        if self.xp is NUMPY:
            return a[self.rows, self.y]
        return self.xp.take_along_axis(a, self.y[:, None], axis=1)[:, 0]

    def put(self, a, values):
        """Return ``a`` with ``a[i, y_i] = values[i]`` (in place for NumPy)."""
        if self.xp is NUMPY:
            a[self.rows, self.y] = values
            return a
        return self.xp.where(self.mask, self.xp.astype(values, a.dtype)[:, None], a)

    def cross_entropy(self, z, sw):
        """Weighted softmax cross-entropy of ``z`` and its gradient (over ``z``)."""
        if z.dtype not in self._labels:
            self._labels[z.dtype] = (
                self.y.astype(z.dtype)
                if self.xp is NUMPY
                else self.xp.astype(self.mask, z.dtype)
            )
        if self.xp is NUMPY:
            return softmax_cross_entropy(z, self._labels[z.dtype], sw)
        return array_cross_entropy(z, self._labels[z.dtype], sw, self.xp)


def _check_margin_output(margin, values):
    # A margin must compute in its argument's namespace (torch in, torch out).
    if isinstance(values, np.ndarray):
        raise TypeError(
            f"The margin {margin!r} returned NumPy arrays for array API input: "
            "a margin used with array API inputs must compute with the namespace "
            "of its argument (see sklmargin.losses)."
        )


def pointwise_loss_gradient(
    cos,
    y,
    margin,
    m,
    scale,
    *,
    lam=0.0,
    intercept=None,
    sample_weight=None,
    state=None,
    return_scale_grad=False,
    overwrite_cos=False,
    targets=None,
):
    """Weighted mean margin cross-entropy and its gradients (internal layer).

    Logits are ``z = scale * h + b`` with ``h_iy = f(cos_iy)`` on the target
    (:meth:`Margin.target`) and ``h_ik`` the margin's non-target transform of
    the other cosines (identity unless the margin has one, e.g. SV-Softmax).
    Written once for every array namespace: ``cos`` and everything it meets
    live in one namespace, on one device; :class:`TargetEntries` holds the
    only namespace-specific kernels.

    Parameters
    ----------
    cos : array of shape (n_samples, n_classes)
        Cosines (raw logits for softmax).
    y : array of shape (n_samples,)
        Integer labels in ``0..n_classes-1``.
    margin : Margin or SupportVectorGuided
    m : float
    scale : float or array broadcastable to (n_samples, n_classes)
        The margin's :meth:`~Margin.logit_scale`.
    lam : float
        Softening of L-/A-Softmax.
    intercept : array of shape (n_classes,) or None
        Added to every logit.
    sample_weight : array of shape (n_samples,) or None
        Weights that already sum to one (the objective normalises them once),
        float64 where the device has it; None means uniform.
    state : object or None
        Non-target state to hold fixed (SV-Softmax's mask); computed from
        ``cos`` when None and the margin has one.
    return_scale_grad : bool
        Also return the gradient with respect to ``scale`` (entrywise).
    overwrite_cos : bool
        Reuse ``cos``'s memory for the logits when nothing else needs it (saves
        an (n_samples, n_classes) allocation and a pass per evaluation).
    targets : TargetEntries, default=None
        Built from ``y`` when None (the objective builds it once).

    Returns
    -------
    PointwiseResult
        ``loss``; ``grad_cos`` (the state held constant); ``grad_intercept``,
        the column sums of ``dloss/dz`` in float64 (where the device has it);
        ``grad_scale`` (only with ``return_scale_grad``); the ``state`` used.
    """
    targets = TargetEntries(y, cos.shape[1]) if targets is None else targets
    xp, device = get_namespace(cos)
    wide = targets.wide
    n_samples, dtype = cos.shape[0], cos.dtype
    if sample_weight is None:
        sample_weight = xp.full(
            (n_samples,), 1.0 / n_samples, dtype=wide, device=device
        )

    # The target hook runs in float64 on the n target cosines (cheap): near an
    # anti-parallel target, 1/sin(theta) in float32 is several percent off.
    cos_y = xp.astype(targets.take(cos), wide)
    f_y, df_y = margin.target(cos_y, m, lam)
    if targets.xp is not NUMPY:
        _check_margin_output(margin, f_y)
    scale = xp.asarray(scale, dtype=dtype, device=device)
    scale_y = (
        scale if scale.ndim == 0 else targets.take(xp.broadcast_to(scale, cos.shape))
    )

    if state is None:
        state = margin.non_target_state(cos, y, f_y)
    if state is None:  # identity on non-targets: h = cos, dh = 1
        h, dh = cos, None
    else:
        h, dh = margin.non_target(cos, state)
    if h is cos and overwrite_cos and not return_scale_grad:
        z = h
        z *= scale
    else:
        z = h * scale
    z = targets.put(z, scale_y * f_y)
    if intercept is not None:
        z += xp.astype(intercept, dtype, copy=False)

    loss, grad_logits = targets.cross_entropy(z, sample_weight)
    grad_intercept = xp.sum(grad_logits, axis=0, dtype=wide)
    grad_y = targets.take(grad_logits)  # a copy: read before the writes below
    grad_scale = None
    if return_scale_grad:  # dloss/dscale = dloss/dz * h (f_y on the target)
        grad_scale = targets.put(h * grad_logits, grad_y * f_y)

    # dz/dcos = scale * dh on non-targets, scale * f'(cos_y) on the target.
    grad_target = grad_y * (scale_y * df_y)
    grad_cos = grad_logits
    grad_cos *= scale
    if dh is not None:
        grad_cos *= dh
    grad_cos = targets.put(grad_cos, grad_target)
    return PointwiseResult(loss, grad_cos, grad_intercept, grad_scale, state)


def margin_softmax_loss(
    cos,
    y,
    *,
    loss="am-softmax",
    m=None,
    s=None,
    t=1.0,
    norms=None,
    sample_weight=None,
    lam=0.0,
):
    r"""Margin-softmax cross-entropy of a cosine matrix, and its gradient.

    With logits :math:`z_{ij} = s \cos_{ij}` for :math:`j \ne y_i` (scaled by the
    SV-Softmax factor on support vectors) and :math:`z_{iy} = s\, f(\cos_{iy})`
    on the target,

    .. math::

        L = \frac{\sum_i w_i\, \ell_i}{\sum_i w_i}, \qquad
        \ell_i = -\log \frac{e^{z_{iy_i}}}{\sum_j e^{z_{ij}}}

    where :math:`f` is the loss's target transform (``cos - m`` for AM-Softmax,
    ``cos(theta + m)`` for ArcFace, :math:`\psi(\theta)` for L-/A-Softmax,
    identity for softmax and NormFace). With ``t > 1`` (SV-Softmax), a
    non-target :math:`k` with :math:`f(\cos_{iy}) < \cos_{ik}` gets
    :math:`z_{ik} \mathrel{+}= s (t - 1)(\cos_{ik} + 1)`.

    Parameters
    ----------
    cos : array-like of shape (n_samples, n_classes)
        Cosine similarities between samples and class prototypes (raw logits for
        ``loss="softmax"``; values outside [-1, 1] are used as given by the losses
        that need no angle, and clipped by the angular ones).
    y : array-like of shape (n_samples,)
        Integer labels in ``0..n_classes-1``.
    loss : str, default="am-softmax"
        One of ``"softmax"``, ``"normface"``, ``"am-softmax"`` (``"cosface"``),
        ``"arcface"``, ``"l-softmax"``, ``"a-softmax"`` (``"sphereface"``).
    m : float, default=None
        Margin; None means the loss's default.
    s : float, default=None
        Logit scale; None means the loss's default (L-/A-Softmax take their scale
        from ``norms``).
    t : float, default=1.0
        SV-Softmax parameter, ``t >= 1`` (1 is off).
    norms : array-like broadcastable to (n_samples, n_classes), default=None
        When given, replaces ``s`` as the per-entry logit scale: ``|w_j||x_i|``
        for L-Softmax, ``s |x_i|`` for A-Softmax (whose estimator multiplies the
        norm by ``s``). Required by those two losses; pass either ``s`` or
        ``norms``, not both.
    sample_weight : array-like of shape (n_samples,), default=None
    lam : float, default=0.0
        Softening of L-/A-Softmax, :math:`f_\lambda = (\lambda \cos + \psi) /
        (1 + \lambda)`; 0 is the papers' loss. Ignored by the other losses.

    Returns
    -------
    value : float
        The weighted mean cross-entropy.
    grad : ndarray of shape (n_samples, n_classes)
        :math:`\partial L / \partial \cos` (the SV mask held constant).

    See Also
    --------
    MarginSoftmaxClassifier : Trains a linear classifier on this loss.
    KernelMarginSoftmaxClassifier : The same over kernel (Nyström) features.

    References
    ----------
    .. [1] Wang et al., "NormFace", arXiv:1704.06369.
    .. [2] Wang et al., "Additive Margin Softmax for Face Verification",
       arXiv:1801.05599; "CosFace", arXiv:1801.09414.
    .. [3] Deng et al., "ArcFace", arXiv:1801.07698.
    .. [4] Liu et al., "Large-Margin Softmax Loss", arXiv:1612.02295.
    .. [5] Liu et al., "SphereFace", arXiv:1704.08063.
    .. [6] Wang et al., "Support Vector Guided Softmax Loss", arXiv:1812.11317.

    Examples
    --------
    >>> import numpy as np
    >>> from sklmargin import margin_softmax_loss
    >>> cos = np.array([[0.9, 0.1], [0.2, 0.7]])
    >>> value, grad = margin_softmax_loss(cos, [0, 1], loss="am-softmax", m=0.2, s=10)
    >>> round(value, 4)
    0.0255
    >>> grad.shape
    (2, 2)
    """
    cos, y, margin, m, scale, sample_weight = _check_pointwise_inputs(
        cos, y, loss, m, s, t, norms, sample_weight
    )
    if not (lam := _real(lam, "lam")) >= 0:
        raise ValueError(f"lam must be a finite number >= 0; got {lam!r}.")
    sw = check_weights(sample_weight, cos.shape[0])
    try:
        with np.errstate(over="raise", invalid="raise"):
            result = pointwise_loss_gradient(
                cos, y, margin, m, scale, lam=lam, sample_weight=sw / sw.sum()
            )
    except FloatingPointError as exc:
        raise ValueError(
            "The logits overflow: the scale (s or norms) times the cosines is "
            f"beyond the range of {cos.dtype}; lower s or the norms."
        ) from exc
    return result.loss, result.grad_cos


def _check_pointwise_inputs(cos, y, loss, m, s, t, norms, sample_weight):
    """Validate :func:`margin_softmax_loss`'s inputs; clear errors, never NaN."""
    margin = loss_margin(loss, t)
    cos = np.asarray(cos)
    if cos.dtype not in (np.float32, np.float64):
        try:
            cos = cos.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"cos must be numeric; got dtype {cos.dtype}.") from exc
    if cos.ndim != 2:
        raise ValueError(f"cos must be 2-D (n_samples, n_classes); got {cos.shape}.")
    if cos.shape[0] == 0 or cos.shape[1] < 2:
        raise ValueError(
            f"cos must hold at least one sample and two classes; got shape {cos.shape}."
        )
    if not np.all(np.isfinite(cos)):
        raise ValueError("cos must be finite; it contains NaN or infinity.")
    y = np.asarray(y)
    if y.shape != (cos.shape[0],):
        raise ValueError(
            f"y must have shape ({cos.shape[0]},) to match cos; got {y.shape}."
        )
    if not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() >= cos.shape[1]:
        raise ValueError(f"y must hold integer labels in 0..{cos.shape[1] - 1}.")
    if norms is None:
        if margin.scale_from_norms:
            raise ValueError(
                f"loss={margin.name!r} takes its logit scale from norms; pass norms."
            )
        m, scale = margin.resolve(m, s)
    else:
        if s is not None:
            raise ValueError("Pass either s or norms (norms replace s), not both.")
        m, _ = margin.resolve(m, None)
        try:
            norms = np.broadcast_to(np.asarray(norms, dtype=np.float64), cos.shape)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"norms must be numeric and broadcast to cos's shape {cos.shape}; "
                f"got {np.shape(norms)}."
            ) from exc
        # Checked in float64, before the cast to cos's dtype could overflow.
        if not (np.all(np.isfinite(norms)) and np.all(norms >= 0)):
            raise ValueError("norms must be finite and non-negative.")
        if np.any(norms > np.finfo(cos.dtype).max):
            raise ValueError(
                f"norms must be representable in cos's dtype {cos.dtype} "
                f"(at most {np.finfo(cos.dtype).max:.3g})."
            )
        scale = norms.astype(cos.dtype)
    return cos, y, margin, m, scale, sample_weight


def checked_logit_scale(margin, s, norms, w_norm, dtype, remedy):
    """Return the margin's logit scale in float64, refused if ``dtype`` cannot hold it.

    Cosines and margin targets are bounded (``|h| <= 2 m + 1``), so the logits
    are bounded by the scale times that; a scale near the dtype's limit (a
    float32 row of norm 1e37 under A-Softmax's ``s |x|``, or ``s=1e39``) would
    overflow to inf and give NaN probabilities. Used by fit and predict.

    Raises
    ------
    ValueError
        Naming the largest scale, the dtype and ``remedy``.
    """
    norms = None if norms is None else np.asarray(norms, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        scale = np.asarray(margin.logit_scale(s, norms, w_norm), dtype=np.float64)
    check_logit_range(float(np.max(np.abs(scale), initial=0.0)), dtype, remedy)
    return scale


def _scale_fits(scale, dtype):
    """Whether logits and gradients at ``scale`` stay well inside ``dtype``."""
    with np.errstate(invalid="ignore"):
        largest = np.max(np.abs(np.asarray(scale, dtype=np.float64)), initial=0.0)
    return bool(largest < np.finfo(dtype).max / _SCALE_HEADROOM)
