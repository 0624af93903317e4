"""The margin-softmax objective in two layers, as scikit-learn's ``_loss`` does.

1. *Pointwise* (:func:`margin_softmax_loss`): from the (n, K) matrix of cosines
   (raw logits for ``loss="softmax"``) to the weighted mean cross-entropy of the
   margin logits and its gradient with respect to the cosines.
2. *Chain rule to parameters* (:class:`LinearMarginObjective`): cosines
   ``C = X_hat W_hat^T`` from the coefficients, one GEMM forward and one GEMM back,
   the projection that normalised prototypes need, the bias and the L2 penalty.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ._margins import get_margin

# Norms below this are treated as this: an all-zero sample or a collapsed
# prototype then has cosine 0 with everything instead of 0/0 = NaN.
_TINY_NORM = 1e-30


def _row_norms(X):
    if sparse.issparse(X):
        return np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def _scale_rows(X, factors):
    """Return ``diag(factors) @ X`` as a new array of X's kind and dtype."""
    factors = factors.astype(X.dtype, copy=False)
    if sparse.issparse(X):
        return sparse.csr_matrix(sparse.diags(factors) @ X)
    return X * factors[:, None]


def _lift_and_scale_rows(X, factors, constant):
    """Return ``diag(factors) @ [X, constant]`` (no constant column if 0)."""
    if not constant:
        return _scale_rows(X, factors)
    factors = factors.astype(X.dtype, copy=False)
    if sparse.issparse(X):
        column = sparse.csr_matrix(np.full((X.shape[0], 1), constant, dtype=X.dtype))
        return _scale_rows(sparse.hstack([X, column], format="csr"), factors)
    lifted = np.empty((X.shape[0], X.shape[1] + 1), dtype=X.dtype)
    np.multiply(X, factors[:, None], out=lifted[:, :-1])
    lifted[:, -1] = constant * factors
    return lifted


def pointwise_loss_gradient(
    cos,
    y,
    margin,
    m,
    scale,
    *,
    t=1.0,
    lam=0.0,
    intercept=None,
    sample_weight=None,
    sv_mask=None,
    return_scale_grad=False,
    overwrite_cos=False,
):
    """Weighted mean margin cross-entropy and its gradients (internal layer).

    Parameters
    ----------
    cos : ndarray of shape (n_samples, n_classes)
        Cosines (raw logits for softmax).
    y : ndarray of shape (n_samples,)
        Integer labels in ``0..n_classes-1``.
    margin : Margin
    m : float
    scale : float or ndarray broadcastable to (n_samples, n_classes)
        The logit scale ``s`` or the norms.
    t : float
        SV-Softmax ``t`` (1 is off).
    lam : float
        Softening of L-/A-Softmax.
    intercept : ndarray of shape (n_classes,) or None
        Added to every logit.
    sample_weight : ndarray of shape (n_samples,) or None
        Need not be normalised.
    sv_mask : ndarray of bool of shape (n_samples, n_classes) or None
        SV-Softmax support-vector indicator to hold fixed; computed from ``cos``
        when None.
    return_scale_grad : bool
        Also return the gradient with respect to ``scale`` (entrywise).
    overwrite_cos : bool
        Reuse ``cos``'s memory for the logits when nothing else needs it (saves
        an (n_samples, n_classes) allocation and a pass per evaluation).

    Returns
    -------
    loss : float
    grad_cos : ndarray of shape (n_samples, n_classes)
    grad_intercept : ndarray of shape (n_classes,)
        Column sums of ``dloss/dz``.
    grad_scale : ndarray of shape (n_samples, n_classes) or None
        ``dloss/dscale`` entrywise, only when ``return_scale_grad``.
    """
    n_samples, n_classes = cos.shape
    dtype = cos.dtype
    rows = np.arange(n_samples)
    if sample_weight is None:
        sw = np.full(n_samples, 1.0 / n_samples)
    else:
        sw = np.asarray(sample_weight, dtype=np.float64)
        sw = sw / sw.sum()

    cos_y = cos[rows, y]
    f_y, df_y = margin.target(cos_y, m, lam)
    scale = np.asarray(scale, dtype=dtype)
    scale_y = scale if scale.ndim == 0 else np.broadcast_to(scale, cos.shape)[rows, y]

    # Logits z = scale * h, where h is cos with f on the target and, under
    # SV-Softmax, cos + (t - 1)(cos + 1) on the support vectors (boost = t - 1).
    boost = None
    if t != 1.0:
        if sv_mask is None:
            sv_mask = support_vector_mask(cos, y, f_y)
        boost = sv_mask.astype(dtype) * dtype.type(t - 1.0)
        z = cos * (1.0 + boost)
        z += boost
        z *= scale
    elif overwrite_cos and not return_scale_grad:
        z = cos
        z *= scale
    else:
        z = cos * scale
    z[rows, y] = scale_y * f_y
    if intercept is not None:
        z += intercept.astype(dtype, copy=False)

    loss, grad_logits = softmax_cross_entropy(z, y, sw)
    grad_intercept = grad_logits.sum(axis=0, dtype=np.float64)
    grad_scale = None
    if return_scale_grad:  # dloss/dscale = dloss/dz * h, with h = (z - b)/scale
        grad_scale = cos * grad_logits if boost is None else (cos + boost * (cos + 1))
        if boost is not None:
            grad_scale *= grad_logits
        grad_scale[rows, y] = grad_logits[rows, y] * f_y

    # dz/dcos: scale on non-targets (times 1 + boost on support vectors),
    # scale * f'(cos_y) on the target. Reuses the gradient buffer.
    grad_target = grad_logits[rows, y] * (scale_y * df_y)
    grad_cos = grad_logits
    grad_cos *= scale
    if boost is not None:
        boost += 1.0
        grad_cos *= boost
    grad_cos[rows, y] = grad_target
    return loss, grad_cos, grad_intercept, grad_scale


def _numpy_softmax_cross_entropy(z, y, sw):
    """Weighted cross-entropy and ``dloss/dz``; overwrites ``z``."""
    rows = np.arange(z.shape[0])
    z_y = z[rows, y]
    # log-sum-exp with the row max subtracted: large s never overflows.
    z_max = z.max(axis=1)
    z -= z_max[:, None]
    np.exp(z, out=z)
    sum_exp = z.sum(axis=1)
    loss = float(sw @ (np.log(sum_exp) + z_max - z_y))
    z /= sum_exp[:, None]
    z[rows, y] -= 1.0
    z *= sw.astype(z.dtype)[:, None]
    return loss, z


def _sklearn_softmax_cross_entropy(z, y, sw):
    """Compute the same with scikit-learn's fused, compiled multinomial loss."""
    loss_fn = _HalfMultinomialLoss(n_classes=z.shape[1])
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

    ``sklearn._loss`` is private: it is probed once, on a small problem, and any
    import error, exception or disagreement falls back to the numpy version, so
    a future scikit-learn that moves or changes it costs speed, not results.
    """
    global _HalfMultinomialLoss
    try:
        from sklearn._loss.loss import HalfMultinomialLoss as _HalfMultinomialLoss

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


_HalfMultinomialLoss = None
softmax_cross_entropy = _select_cross_entropy()


def support_vector_mask(cos, y, f_y):
    r"""SV-Softmax indicator ``I_ik = 1[f(cos_iy) - cos_ik < 0]`` for ``k != y_i``.

    Parameters
    ----------
    cos : ndarray of shape (n_samples, n_classes)
    y : ndarray of shape (n_samples,)
    f_y : ndarray of shape (n_samples,)
        The target's margin function of each sample.

    Returns
    -------
    mask : ndarray of bool of shape (n_samples, n_classes)
    """
    mask = cos > f_y[:, None]
    mask[np.arange(cos.shape[0]), y] = False
    return mask


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
    KernelMarginSoftmaxClassifier : The same over random Fourier features.

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
    margin = get_margin(loss)
    cos = np.asarray(cos)
    if cos.dtype not in (np.float32, np.float64):
        cos = cos.astype(np.float64)
    if cos.ndim != 2:
        raise ValueError(f"cos must be 2-D (n_samples, n_classes); got {cos.shape}.")
    y = np.asarray(y)
    if y.shape != (cos.shape[0],):
        raise ValueError(
            f"y must have shape ({cos.shape[0]},) to match cos; got {y.shape}."
        )
    if not np.issubdtype(y.dtype, np.integer) or (
        y.size and (y.min() < 0 or y.max() >= cos.shape[1])
    ):
        raise ValueError(f"y must hold integer labels in 0..{cos.shape[1] - 1}.")
    t = check_t(t)
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
        scale = np.asarray(norms, dtype=cos.dtype)
    lam = float(lam)
    if not (np.isfinite(lam) and lam >= 0):
        raise ValueError(f"lam must be a finite number >= 0; got {lam!r}.")
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        if sample_weight.shape != (cos.shape[0],):
            raise ValueError("sample_weight must have shape (n_samples,).")
    value, grad, _, _ = pointwise_loss_gradient(
        cos, y, margin, m, scale, t=t, lam=lam, sample_weight=sample_weight
    )
    return value, grad


def check_t(t):
    """Validate the SV-Softmax parameter ``t >= 1``."""
    if isinstance(t, bool) or not isinstance(t, (int, float, np.number)):
        raise TypeError(f"t must be a real number; got {t!r}.")
    t = float(t)
    if not (np.isfinite(t) and t >= 1.0):
        raise ValueError(
            f"t must be a finite number >= 1 (SV-Softmax; t=1 is off); got t={t!r}."
        )
    return t


class LinearMarginObjective:
    r"""Full training objective of a linear margin-softmax classifier.

    Parameters are one flat vector ``[V.ravel(), b]`` with ``V`` of shape
    ``(n_classes, n_features)`` (row ``j`` is class ``j``'s prototype, normalised
    to ``W_hat = V / |V|`` row-wise by the losses that normalise ``W``) and ``b``
    the per-class bias (absent without intercept). The objective is

    .. math::

        F(V, b) = \frac{\sum_i w_i \ell_i(V, b)}{\sum_i w_i}
        + \frac{1}{2 C \sum_i w_i} \|V\|^2

    with the penalty only for losses that depend on ``|v_j|`` (softmax,
    L-Softmax). Cosines ``C = X_hat W_hat^T`` come from one GEMM; the gradient
    goes back through one GEMM ``G^T X_hat`` and, for normalised prototypes, the
    projection

    .. math::

        \frac{\partial F}{\partial v_j} = \frac{g_j - \langle g_j, \hat w_j\rangle
        \hat w_j}{|v_j|}

    which removes the radial part (``<dF/dv_j, v_j> = 0``). L-Softmax adds the
    radial term from its logit scale ``|w_j||x_i|``. ``X`` is normalised once,
    here, never per evaluation.

    Parameters
    ----------
    X : {ndarray, csr_matrix} of shape (n_samples, n_features)
        float32 or float64; the computation runs in this dtype.
    y : ndarray of shape (n_samples,)
        Integer labels in ``0..n_classes-1``.
    n_classes : int
    sample_weight : ndarray of shape (n_samples,)
    margin : Margin
    m, s, t, C : float
        Resolved hyper-parameters (``s`` None for L-/A-Softmax).
    fit_intercept : bool
    constant : float, default=0.0
        When positive, every row is lifted to ``[x, constant]`` before it is
        normalised (one more feature, built in the same allocation as X_hat).
    """

    def __init__(
        self,
        X,
        y,
        n_classes,
        sample_weight,
        margin,
        m,
        s,
        t,
        C,
        fit_intercept,
        constant=0.0,
    ):
        self.margin = margin
        self.y = y
        self.n_classes = n_classes
        self.n_features = X.shape[1]
        self.m, self.s, self.t = m, s, t
        self.fit_intercept = fit_intercept
        self.sample_weight = np.asarray(sample_weight, dtype=np.float64)
        sw_sum = self.sample_weight.sum()
        self.l2_strength = 1.0 / (C * sw_sum) if margin.penalized else 0.0
        self.dtype = X.dtype
        # The angle-based losses need |x| and X_hat; softmax works on raw X.
        self.uses_angle = margin.name != "softmax"
        if self.uses_angle:
            x_norm = _row_norms(X)
            if constant:
                x_norm = np.sqrt(x_norm**2 + constant**2)
            self.x_norm = x_norm.astype(self.dtype)
            inverse = 1.0 / np.maximum(x_norm, _TINY_NORM)
            self.X = _lift_and_scale_rows(X, inverse, constant)
            self.n_features = self.X.shape[1]
        else:
            self.x_norm = None
            self.X = X
        self.lam = 0.0
        self.sv_mask = None

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

    def _prototypes(self, coef):
        """Return (W_hat, |w|) for the angle losses, (coef, None) for softmax."""
        if not self.uses_angle:
            return coef, None
        w_norm = np.maximum(np.sqrt(np.einsum("ij,ij->i", coef, coef)), _TINY_NORM)
        return coef / w_norm[:, None], w_norm

    def _scale(self, w_norm):
        name = self.margin.name
        if name == "l-softmax":
            return self.x_norm[:, None] * w_norm.astype(self.dtype)[None, :]
        if name == "a-softmax":
            return self.dtype.type(self.s) * self.x_norm[:, None]
        return self.s

    def _forward(self, params):
        """Cosines (raw logits for softmax), logit scale, W_hat and |w|."""
        coef, _ = self.unpack(params)
        w_hat, w_norm = self._prototypes(coef)
        cos = np.asarray(self.X @ w_hat.T.astype(self.dtype))
        return cos, self._scale(w_norm), w_hat, w_norm

    def compute_sv_mask(self, params):
        """SV-Softmax support-vector mask at ``params`` (None when ``t == 1``)."""
        if self.t == 1.0:
            return None
        cos = self._forward(params)[0]
        f_y, _ = self.margin.target(
            cos[np.arange(cos.shape[0]), self.y], self.m, self.lam
        )
        return support_vector_mask(cos, self.y, f_y)

    def loss_gradient(self, params):
        """Objective value and gradient (float64) at ``params``, one pass."""
        coef, intercept = self.unpack(params)
        cos, scale, w_hat, w_norm = self._forward(params)
        is_l_softmax = self.margin.name == "l-softmax"
        out = pointwise_loss_gradient(
            cos,
            self.y,
            self.margin,
            self.m,
            scale,
            t=self.t,
            lam=self.lam,
            intercept=intercept,
            sample_weight=self.sample_weight,
            sv_mask=self.sv_mask,
            return_scale_grad=is_l_softmax,
            overwrite_cos=True,
        )
        loss, grad_cos, grad_b, grad_scale = out

        grad = np.empty_like(params)
        grad_coef, grad_intercept = self.unpack(grad)
        if sparse.issparse(self.X):
            g = np.asarray((self.X.T @ grad_cos).T, dtype=np.float64)
        else:
            g = (grad_cos.T @ self.X).astype(np.float64, copy=False)
        if self.uses_angle:
            # Every angle loss sees V only through W_hat = V / |V|: project.
            radial = np.einsum("ij,ij->i", g, w_hat)
            g -= radial[:, None] * w_hat
            g /= w_norm[:, None]
        if is_l_softmax:
            # d loss / d |w_j| = sum_i (dloss/dz_ij) h_ij |x_i|, along w_hat_j.
            grad_norm = grad_scale.T @ self.x_norm
            g += grad_norm.astype(np.float64)[:, None] * w_hat
        grad_coef[:] = g
        if self.l2_strength:
            loss += 0.5 * self.l2_strength * float(np.einsum("ij,ij->", coef, coef))
            grad_coef += self.l2_strength * coef
        if grad_intercept is not None:
            grad_intercept[:] = grad_b
        return loss, grad
