"""The margin-softmax objective in two layers, as scikit-learn's ``_loss`` does.

1. *Pointwise* (:func:`margin_softmax_loss`): from the (n, K) matrix of cosines
   (raw logits for ``loss="softmax"``) to the weighted mean cross-entropy of the
   margin logits and its gradient with respect to the cosines.
2. *Chain rule to parameters* (:class:`LinearMarginObjective`): cosines
   ``C = X_hat W_hat^T`` from the coefficients, one GEMM forward and one GEMM back,
   the projection that normalised prototypes need, the bias and the L2 penalty.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import sparse

from ._cross_entropy import softmax_cross_entropy
from ._margins import get_margin
from ._modifiers import with_support_vectors
from ._rows import TINY_NORM, PreparedRows, lifted_norms
from ._validation import check_weights

# Room left by a logit scale for |f|, |f'| (~1e3 at the float32 cosine clip).
_SCALE_HEADROOM = 2.0**16


class PointwiseResult(NamedTuple):
    """What :func:`pointwise_loss_gradient` returns."""

    loss: float
    grad_cos: np.ndarray
    grad_intercept: np.ndarray
    grad_scale: np.ndarray | None
    state: object


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
):
    """Weighted mean margin cross-entropy and its gradients (internal layer).

    Logits are ``z = scale * h + b`` with ``h_iy = f(cos_iy)`` on the target
    (:meth:`Margin.target`) and ``h_ik`` the margin's non-target transform of
    the other cosines (identity unless the margin has one, e.g. SV-Softmax).

    Parameters
    ----------
    cos : ndarray of shape (n_samples, n_classes)
        Cosines (raw logits for softmax).
    y : ndarray of shape (n_samples,)
        Integer labels in ``0..n_classes-1``.
    margin : Margin or SupportVectorGuided
    m : float
    scale : float or ndarray broadcastable to (n_samples, n_classes)
        The margin's :meth:`~Margin.logit_scale`.
    lam : float
        Softening of L-/A-Softmax.
    intercept : ndarray of shape (n_classes,) or None
        Added to every logit.
    sample_weight : ndarray of shape (n_samples,) or None
        Weights that already sum to one (the objective normalises them once);
        None means uniform.
    state : object or None
        Non-target state to hold fixed (SV-Softmax's mask); computed from
        ``cos`` when None and the margin has one.
    return_scale_grad : bool
        Also return the gradient with respect to ``scale`` (entrywise).
    overwrite_cos : bool
        Reuse ``cos``'s memory for the logits when nothing else needs it (saves
        an (n_samples, n_classes) allocation and a pass per evaluation).

    Returns
    -------
    PointwiseResult
        ``loss``; ``grad_cos`` (the state held constant); ``grad_intercept``,
        the column sums of ``dloss/dz``; ``grad_scale`` (only with
        ``return_scale_grad``); the ``state`` used.
    """
    n_samples = cos.shape[0]
    dtype = cos.dtype
    rows = np.arange(n_samples)
    sw = np.full(n_samples, 1.0 / n_samples) if sample_weight is None else sample_weight

    # The target hook runs in float64 on the n target cosines (cheap): near an
    # anti-parallel target, 1/sin(theta) in float32 is several percent off.
    cos_y = cos[rows, y].astype(np.float64)
    f_y, df_y = margin.target(cos_y, m, lam)
    scale = np.asarray(scale, dtype=dtype)
    scale_y = scale if scale.ndim == 0 else np.broadcast_to(scale, cos.shape)[rows, y]

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
    z[rows, y] = scale_y * f_y
    if intercept is not None:
        z += intercept.astype(dtype, copy=False)

    loss, grad_logits = softmax_cross_entropy(z, y, sw)
    grad_intercept = grad_logits.sum(axis=0, dtype=np.float64)
    grad_scale = None
    if return_scale_grad:  # dloss/dscale = dloss/dz * h
        grad_scale = h * grad_logits
        grad_scale[rows, y] = grad_logits[rows, y] * f_y

    # dz/dcos = scale * dh on non-targets, scale * f'(cos_y) on the target.
    grad_target = grad_logits[rows, y] * (scale_y * df_y)
    grad_cos = grad_logits
    grad_cos *= scale
    if dh is not None:
        grad_cos *= dh
    grad_cos[rows, y] = grad_target
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
    lam = float(lam)
    if not (np.isfinite(lam) and lam >= 0):
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
    margin = with_support_vectors(get_margin(loss), t)
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
    largest = float(np.max(np.abs(scale), initial=0.0))
    limit = float(np.finfo(dtype).max) / 64.0
    if not largest < limit:
        raise ValueError(
            f"The logit scale reaches {largest:.3g}, beyond what {np.dtype(dtype)} "
            f"logits can hold (about {limit:.3g}): {remedy}."
        )
    return scale


def _scale_fits(scale, dtype):
    """Whether logits and gradients at ``scale`` stay well inside ``dtype``."""
    with np.errstate(invalid="ignore"):
        largest = np.max(np.abs(np.asarray(scale, dtype=np.float64)), initial=0.0)
    return bool(largest < np.finfo(dtype).max / _SCALE_HEADROOM)


def margin_free_logits(
    margin, X, coef, intercept, *, s, constant=0.0, constant_coef=None
):
    """Prediction logits ``z = scale * cos + b``: the training scale, no margin.

    The cosines are computed as ``(<x, w> + c w_c) / (|[x, c]| |w|)`` from the
    raw rows (no normalised copy of ``X`` at predict time), and the scale is the
    margin's :meth:`~sklmargin._margins.Margin.logit_scale`, the very function
    training used, so the two cannot disagree.

    Parameters
    ----------
    margin : Margin or SupportVectorGuided
    X : {ndarray, csr_matrix} of shape (n_samples, n_features)
    coef : ndarray of shape (n_classes, n_features)
    intercept : ndarray of shape (n_classes,)
    s : float or None
    constant : float, default=0.0
        The lift ``c``.
    constant_coef : ndarray of shape (n_classes,) or None
        The prototypes' coordinate along the lift.

    Returns
    -------
    ndarray of shape (n_samples, n_classes), in X's dtype.
    """
    dtype = X.dtype
    raw = np.asarray(X @ coef.T.astype(dtype, copy=False))
    remedy = "predict with float64 input, or refit with a smaller s"
    if not margin.uses_angle:
        # Checked like the angle losses' scale: s = 1e39 cast to float32 is inf.
        scale = checked_logit_scale(margin, s, None, None, dtype, remedy)
        return raw * scale.astype(dtype) + intercept.astype(dtype, copy=False)
    squared_w = np.einsum("ij,ij->i", coef, coef, dtype=np.float64)
    if constant:
        raw += (constant * constant_coef).astype(dtype)
        squared_w += np.asarray(constant_coef, dtype=np.float64) ** 2
    w_norm = np.maximum(np.sqrt(squared_w), TINY_NORM)
    with np.errstate(over="ignore"):
        norms = lifted_norms(X, constant).astype(dtype)
    inverse = 1.0 / np.maximum(norms.astype(np.float64), TINY_NORM)
    raw *= inverse.astype(dtype)[:, None]
    raw *= (1.0 / w_norm).astype(dtype)[None, :]
    scale = checked_logit_scale(margin, s, norms, w_norm, dtype, remedy)
    raw *= scale.astype(dtype)
    return raw + intercept.astype(dtype, copy=False)


class LinearMarginObjective:
    r"""Full training objective of a linear margin-softmax classifier.

    Parameters are one flat vector ``[V.ravel(), b]`` with ``V`` of shape
    ``(n_classes, n_features)`` (row ``j`` is class ``j``'s prototype, normalised
    to ``W_hat = V / |V|`` row-wise by the angle losses) and ``b`` the per-class
    bias (absent without intercept). The objective is

    .. math::

        F(V, b) = \frac{\sum_i w_i \ell_i(V, b)}{\sum_i w_i}
        + \frac{1}{2 C \sum_i w_i} \|V\|^2

    with the penalty only for losses that depend on ``|v_j|`` (softmax,
    L-Softmax). Cosines ``C = X_hat W_hat^T`` come from one GEMM; the gradient
    goes back through one GEMM ``G^T X_hat`` and, for normalised prototypes, the
    projection

    .. math::

        \frac{\partial F}{\partial v_j} = \frac{g_j - \langle g_j, \hat w_j
        \rangle \hat w_j}{|v_j|}

    which removes the radial part (``<dF/dv_j, v_j> = 0``). A logit scale that
    depends on ``|w_j|`` (L-Softmax) adds the radial term back. Rows are
    prepared once (:func:`sklmargin._rows.prepare_rows`) and the sample weights
    normalised once, here, never per evaluation.

    Parameters
    ----------
    rows : PreparedRows
        Unit rows and norms (raw rows for plain softmax), float32 or float64;
        the computation runs in their dtype.
    y : ndarray of shape (n_samples,)
        Integer labels in ``0..n_classes-1``.
    n_classes : int
    sample_weight : ndarray of shape (n_samples,)
        Validated, non-negative, positive sum.
    margin : Margin or SupportVectorGuided
    m, s, C : float
        Resolved hyper-parameters (``s`` None where the loss has none).
    fit_intercept : bool

    Attributes
    ----------
    lam : float
        Current softening of L-/A-Softmax (set by the solver's continuation).
    state : object or None
        Non-target state held fixed (SV-Softmax's mask); None recomputes it at
        every evaluation, which is the exact (discontinuous) objective.
    """

    def __init__(
        self, rows, y, n_classes, sample_weight, margin, m, s, C, fit_intercept
    ):
        if not isinstance(rows, PreparedRows):
            raise TypeError("rows must be PreparedRows (see sklmargin._rows).")
        self.rows = rows
        self.X = rows.X
        self.norms = rows.norms
        self.dtype = rows.dtype
        self.margin = margin
        self.y = y
        self.n_classes = n_classes
        self.n_features = rows.n_features
        self.m, self.s, self.C = m, s, C
        self.fit_intercept = fit_intercept
        # The bias is not rescaled: parametrised as b = s * beta (its gradient
        # would then scale with s like the prototypes', so tol * s would mean
        # the same for both) it cost 4-5x the L-BFGS iterations at s=100 on
        # Nyström features (segment 39 -> 207, letter 50 -> 207) for accuracy
        # changes within +-0.5 points.
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        self.sw_sum = float(sample_weight.sum())
        self.sw = sample_weight / self.sw_sum
        self.l2_strength = 1.0 / (C * self.sw_sum) if margin.penalized else 0.0
        self.lam = 0.0
        self.state = None

    def with_margin(self, margin):
        """Return the same problem (rows, weights, labels) under another margin."""
        return LinearMarginObjective(
            self.rows,
            self.y,
            self.n_classes,
            self.sw * self.sw_sum,
            margin,
            self.m,
            self.s,
            self.C,
            self.fit_intercept,
        )

    @property
    def n_params(self):
        """Length of the flat parameter vector."""
        k, d = self.n_classes, self.n_features
        return k * d + (k if self.fit_intercept else 0)

    def unpack(self, params):
        """Split the flat vector into ``(V, b)`` views (``b`` None w/o intercept)."""
        k, d = self.n_classes, self.n_features
        coef = params[: k * d].reshape(k, d)
        intercept = params[k * d :] if self.fit_intercept else None
        return coef, intercept

    def _forward(self, params):
        """Cosines (raw logits for softmax), logit scale, W_hat and |w|."""
        coef, _ = self.unpack(params)
        if self.margin.uses_angle:
            w_norm = np.maximum(np.sqrt(np.einsum("ij,ij->i", coef, coef)), TINY_NORM)
            w_hat = coef / w_norm[:, None]
        else:
            w_hat, w_norm = coef, None
        cos = np.asarray(self.X @ w_hat.T.astype(self.dtype))
        with np.errstate(over="ignore", invalid="ignore"):  # 0 * inf: see below
            scale = self.margin.logit_scale(self.s, self.norms, w_norm)
        if cos.dtype != np.float64 and not _scale_fits(scale, cos.dtype):
            # A line-search trial far out (L-Softmax's |x||w|, huge |w|, float32
            # rows of 1e20), or an s beyond float32 on tiny rows (A-Softmax's
            # s |x|), would overflow the dtype: evaluated in float64, it is a
            # large finite objective L-BFGS backtracks from, not inf/NaN.
            cos = cos.astype(np.float64)
            norms = None if self.norms is None else self.norms.astype(np.float64)
            scale = self.margin.logit_scale(self.s, norms, w_norm)
        return cos, scale, w_hat, w_norm

    def _pointwise(self, params, *, state, return_scale_grad=False):
        _, intercept = self.unpack(params)
        cos, scale, w_hat, w_norm = self._forward(params)
        result = pointwise_loss_gradient(
            cos,
            self.y,
            self.margin,
            self.m,
            scale,
            lam=self.lam,
            intercept=intercept,
            sample_weight=self.sw,
            state=state,
            return_scale_grad=return_scale_grad,
            overwrite_cos=True,
        )
        return result, w_hat, w_norm

    def _penalty(self, params):
        if not self.l2_strength:
            return 0.0
        coef, _ = self.unpack(params)
        return 0.5 * self.l2_strength * float(np.einsum("ij,ij->", coef, coef))

    def stationarity(self, params, grad):
        """Largest gradient entry on the parameters' own scale.

        A loss that sees ``V`` only through ``V / |V|`` has a gradient
        orthogonal to each ``v_j`` and proportional to ``1 / |v_j|``; L-BFGS's
        steps change the norms (measured on ``make_circles``: 5e-6 for one
        prototype, 36 for the other), so the raw gradient overstates (or
        understates) how far a prototype's *direction* is from optimal. The
        gradient on the sphere, ``|v_j| dF/dv_j``, does not depend on the norm;
        the solver judges a stall by it.
        """
        if not self.margin.normalizes_W:
            return float(np.max(np.abs(grad), initial=0.0))
        coef, _ = self.unpack(params)
        grad_coef, grad_intercept = self.unpack(grad)
        on_sphere = grad_coef * np.linalg.norm(coef, axis=1)[:, None]
        largest = float(np.max(np.abs(on_sphere), initial=0.0))
        if grad_intercept is not None:
            largest = max(largest, float(np.max(np.abs(grad_intercept), initial=0.0)))
        return largest

    def value_and_state(self, params):
        """Exact objective at ``params`` and the non-target state there.

        One forward pass (no backward GEMM): the solver judges each round of a
        stateful margin (SV-Softmax) on this value and starts the next round
        with this state.
        """
        result, _, _ = self._pointwise(params, state=None)
        return result.loss + self._penalty(params), result.state

    def loss_gradient(self, params):
        """Objective value and gradient (float64) at ``params``, one pass."""
        coef, _ = self.unpack(params)
        depends_on_w = self.margin.scale_depends_on_w
        result, w_hat, w_norm = self._pointwise(
            params, state=self.state, return_scale_grad=depends_on_w
        )
        grad_cos = result.grad_cos

        grad = np.empty_like(params)
        grad_coef, grad_intercept = self.unpack(grad)
        if sparse.issparse(self.X):
            g = np.asarray((self.X.T @ grad_cos).T, dtype=np.float64)
        else:
            g = (grad_cos.T @ self.X).astype(np.float64, copy=False)
        if self.margin.uses_angle:
            # Every angle loss sees V only through W_hat = V / |V|: project.
            radial = np.einsum("ij,ij->i", g, w_hat)
            g -= radial[:, None] * w_hat
            g /= w_norm[:, None]
        if depends_on_w:
            # The scale is proportional to |w_j| (Margin.scale_depends_on_w):
            # dloss/d|w_j| = sum_i (dloss/dscale_ij) scale_ij / |w_j|, along w_hat.
            unit_scale = np.broadcast_to(
                self.margin.logit_scale(self.s, self.norms, np.ones(self.n_classes)),
                grad_cos.shape,
            )
            grad_norm = np.einsum("ij,ij->j", result.grad_scale, unit_scale)
            g += grad_norm.astype(np.float64)[:, None] * w_hat
        grad_coef[:] = g
        loss = result.loss
        if self.l2_strength:
            loss += self._penalty(params)
            grad_coef += self.l2_strength * coef
        if grad_intercept is not None:
            grad_intercept[:] = result.grad_intercept
        return loss, grad
