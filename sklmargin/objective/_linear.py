"""The chain rule to the parameters, and predict's margin-free logits.

:class:`LinearMarginObjective` (the in-memory
:class:`~sklmargin.objective.MarginObjective`): cosines
``C = X_hat W_hat^T`` from the coefficients, one GEMM forward and one GEMM
back, the projection that normalised prototypes need, the bias and the L2
penalty. :func:`margin_free_logits` is what predict computes from the fitted
attributes, with the same cosine function and logit scale as training.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ._interface import ParameterLayout
from ._pointwise import _scale_fits, checked_logit_scale, pointwise_loss_gradient
from ._rows import PreparedRows, lifted_cosines


def margin_free_logits(
    margin, X, coef, intercept, *, s, constant=0.0, constant_coef=None
):
    """Prediction logits ``z = scale * cos + b``: the training scale, no margin.

    The cosines are :func:`~sklmargin.objective._rows.lifted_cosines` of the
    raw rows (no normalised copy of ``X`` at predict time), and the scale is the
    margin's :meth:`~sklmargin.losses._base.Margin.logit_scale`, the very function
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
    remedy = "predict with float64 input, or refit with a smaller s"
    if not margin.uses_angle:
        raw = np.asarray(X @ coef.T.astype(dtype, copy=False))
        # Checked like the angle losses' scale: s = 1e39 cast to float32 is inf.
        scale = checked_logit_scale(margin, s, None, None, dtype, remedy)
        return raw * scale.astype(dtype) + intercept.astype(dtype, copy=False)
    cos, norms, w_norm = lifted_cosines(
        X, coef, constant=constant, constant_coef=constant_coef
    )
    norms = norms.astype(dtype)
    scale = checked_logit_scale(margin, s, norms, w_norm, dtype, remedy)
    cos *= scale.astype(dtype)
    return cos + intercept.astype(dtype, copy=False)


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
    prepared once (:func:`sklmargin.objective._rows.prepare_rows`) and the
    sample weights normalised once, here, never per evaluation.

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
    layout : ParameterLayout
        The parameter vector's layout, shared with the Dask objective.
    constant : float
        The lift ``c`` of the prepared rows.

    Notes
    -----
    Implements :class:`~sklmargin.objective.MarginObjective`: the softening
    ``lam`` and the SV-Softmax ``state`` are arguments of each evaluation.
    """

    def __init__(
        self, rows, y, n_classes, sample_weight, margin, m, s, C, fit_intercept
    ):
        if not isinstance(rows, PreparedRows):
            raise TypeError(
                "rows must be PreparedRows (see sklmargin.objective._rows)."
            )
        self.rows = rows
        self.X = rows.X
        self.norms = rows.norms
        self.dtype = rows.dtype
        self.margin = margin
        self.y = y
        self.n_classes = n_classes
        self.n_features = rows.n_features
        self.constant = rows.constant
        self.m, self.s, self.C = m, s, C
        self.fit_intercept = fit_intercept
        self.layout = ParameterLayout(n_classes, rows.n_features, fit_intercept)
        # The bias is not rescaled: parametrised as b = s * beta (its gradient
        # would then scale with s like the prototypes', so tol * s would mean
        # the same for both) it cost 4-5x the L-BFGS iterations at s=100 on
        # Nyström features (segment 39 -> 207, letter 50 -> 207) for accuracy
        # changes within +-0.5 points.
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        self.sw_sum = float(sample_weight.sum())
        self.sw = sample_weight / self.sw_sum
        self.l2_strength = 1.0 / (C * self.sw_sum) if margin.penalized else 0.0

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
        """Length of the flat parameter vector (:class:`ParameterLayout`)."""
        return self.layout.n_params

    def unpack(self, params):
        """Split the flat vector into ``(V, b)`` views (``b`` None w/o intercept)."""
        return self.layout.unpack(params)

    def _forward(self, params):
        """Cosines (raw logits for softmax), logit scale, W_hat and |w|."""
        coef, _ = self.unpack(params)
        if self.margin.uses_angle:
            # the rows were lifted and normalised once (prepare_rows)
            cos, _, w_norm = lifted_cosines(self.X, coef, unit_rows=True)
            w_hat = coef / w_norm[:, None]
        else:
            w_hat, w_norm = coef, None
            # invalid too: where partial sums of both signs overflow, inf - inf
            # is NaN (OpenBLAS's Sandybridge kernels sum in such an order).
            with np.errstate(over="ignore", invalid="ignore"):
                cos = np.asarray(self.X @ coef.T.astype(self.dtype))
            if cos.dtype != np.float64 and not np.all(np.isfinite(cos)):
                # Raw logits of float32 rows of 1e20 and a line-search trial's
                # coefficients overflow float32 (found by the fuzzer): in float64
                # they are a large finite objective L-BFGS backtracks from.
                cos = np.asarray(self.X.astype(np.float64) @ coef.T)
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

    def _pointwise(self, params, *, lam, state, return_scale_grad=False):
        _, intercept = self.unpack(params)
        cos, scale, w_hat, w_norm = self._forward(params)
        result = pointwise_loss_gradient(
            cos,
            self.y,
            self.margin,
            self.m,
            scale,
            lam=lam,
            intercept=intercept,
            sample_weight=self.sw,
            state=state,
            return_scale_grad=return_scale_grad,
            overwrite_cos=True,
        )
        return result, w_hat, w_norm

    def penalty(self, params):
        """Return the L2 term ``|V|^2 / (2 C S)`` (zero for unpenalised losses)."""
        return self.layout.penalty(params, self.l2_strength)

    def stationarity(self, params, grad):
        """Largest gradient entry on the parameters' own scale.

        See :meth:`ParameterLayout.stationarity`: for normalised prototypes,
        the gradient on the sphere ``|v_j| dF/dv_j``.
        """
        return self.layout.stationarity(params, grad, self.margin.normalizes_W)

    def value_and_state(self, params, *, lam=0.0):
        """Exact objective at ``params`` and the non-target state there.

        One forward pass (no backward GEMM): the solver judges each round of a
        stateful margin (SV-Softmax) on this value and starts the next round
        with this state.
        """
        result, _, _ = self._pointwise(params, lam=lam, state=None)
        return result.loss + self.penalty(params), result.state

    def loss_gradient(self, params, *, lam=0.0, state=None):
        """Objective value and gradient (float64) at ``params``, one pass.

        ``lam`` softens L-/A-Softmax (0: the exact loss); ``state`` holds the
        non-target state fixed (None recomputes it at this point).
        """
        coef, _ = self.unpack(params)
        depends_on_w = self.margin.scale_depends_on_w
        result, w_hat, w_norm = self._pointwise(
            params, lam=lam, state=state, return_scale_grad=depends_on_w
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
            loss += self.penalty(params)
            grad_coef += self.l2_strength * coef
        if grad_intercept is not None:
            grad_intercept[:] = result.grad_intercept
        return loss, grad
