r"""The training objective in an array API namespace, on the input's device.

:class:`NamespaceMarginObjective` is
:class:`~sklmargin.objective.LinearMarginObjective` for rows that live in a
torch / CuPy / array-api-strict array, possibly on a GPU. It implements the same
interface, :class:`~sklmargin.objective.MarginObjective`, so the solver
(:mod:`sklmargin.solver`), its continuation and its state rounds run
unchanged, as scikit-learn's ``LogisticRegression(solver="lbfgs")`` does since
1.9: scipy's L-BFGS stays on the host and only small vectors cross.

What runs where, per evaluation (``n`` rows, ``d`` features, ``K`` classes):

* host, float64: the ``K d + K`` parameters, the prototype norms and unit
  prototypes :math:`\hat W = V / |V|`, the radial projection of the gradient
  and the L2 penalty (all ``O(K d)``, as the NumPy objective does them);
* host to device: :math:`\hat W` (``K d`` numbers in the rows' dtype), ``|w_j|``
  and the bias (``K`` each);
* device, in the rows' dtype: the cosines :math:`C = \hat X \hat W^\top` (one
  GEMM), the margin's target transform (in float64 on the ``n`` target
  cosines, as the NumPy path), the SV-Softmax mask, the logits, the softmax
  cross-entropy and :math:`G = \partial L / \partial C`, and the backward GEMM
  :math:`G^\top \hat X`;
* device to host: the loss (one scalar), :math:`G^\top \hat X` (``K d``), the
  bias gradient and, for L-Softmax, the radial scale gradient (``K`` each).

The time spent in those transfers is summed in ``transfer_seconds`` (on an
asynchronous device it includes waiting for the computation to finish).
"""

from __future__ import annotations

import time

import numpy as np

from .._utils.array_api import (
    numpy_dtype,
    row_slices,
    to_device,
    to_numpy,
    wide_dtype,
)
from .._utils.compat import array_api_compat
from ._interface import ParameterLayout
from ._linear import LinearMarginObjective
from ._pointwise import _scale_fits
from ._rows import TINY_NORM, PreparedRows


class DeviceState:
    """A non-target state (SV-Softmax's mask) held on the device.

    The solver compares states with ``np.array_equal``, which for this object
    calls :meth:`__eq__`: one reduction on the device, one bool to the host.
    """

    def __init__(self, mask, xp):
        self.mask, self.xp = mask, xp

    def __eq__(self, other):
        if not isinstance(other, DeviceState):
            return NotImplemented
        return bool(self.xp.all(self.mask == other.mask))

    __hash__ = None


def namespace_cross_entropy(z, target_indicator, sw, xp):
    r"""Weighted softmax cross-entropy of logits ``z``, and its gradient.

    .. math::

        L = \sum_i w_i \big(\log \textstyle\sum_j e^{z_{ij} - \max_j z_{ij}}
        - (z_{iy_i} - \max_j z_{ij})\big), \qquad
        \frac{\partial L}{\partial z_{ij}} = w_i\,(p_{ij} - 1[j = y_i])

    with the row maximum subtracted first (large ``s`` never overflows), as the
    NumPy path's fused loss. ``target_indicator`` is the one-hot label matrix in
    ``z``'s dtype; ``sw`` the weights summing to one (float64 where the device
    has it). The loss is accumulated in ``sw``'s dtype.
    """
    z_max = xp.max(z, axis=1, keepdims=True)
    shifted = z - z_max
    exp = xp.exp(shifted)
    sum_exp = xp.sum(exp, axis=1)
    # Only one non-zero term per row: the sum is the target entry, exactly.
    shifted_y = xp.sum(shifted * target_indicator, axis=1)
    per_sample = xp.log(sum_exp) - shifted_y
    loss = float(xp.sum(sw * xp.astype(per_sample, sw.dtype)))
    grad = (exp / sum_exp[:, None] - target_indicator) * xp.astype(sw, z.dtype)[:, None]
    return loss, grad


def _check_margin_output(margin, values, xp):
    # array_api_compat's NumPy namespace holds NumPy arrays: those are its own.
    if isinstance(values, np.ndarray) and not array_api_compat.is_numpy_namespace(xp):
        raise TypeError(
            f"The margin {margin!r} returned NumPy arrays for "
            f"{xp.__name__} input: a margin used with array API inputs must "
            "compute with the namespace of its argument (see sklmargin.losses)."
        )


class NamespaceMarginObjective:
    r"""Training objective of :class:`LinearMarginObjective` in an array namespace.

    The objective, its parameters (one flat float64 vector ``[V.ravel(), b]``)
    and its gradient are exactly those of
    :class:`~sklmargin.objective._linear.LinearMarginObjective`:

    .. math::

        F(V, b) = \frac{\sum_i w_i \ell_i(V, b)}{\sum_i w_i}
        + \frac{1}{2 C \sum_i w_i} \|V\|^2, \qquad
        \frac{\partial F}{\partial v_j} = \frac{g_j - \langle g_j, \hat w_j
        \rangle \hat w_j}{|v_j|}

    with :math:`g = G^\top \hat X` computed on the rows' device and everything
    of size ``K d`` on the host (module docstring: what crosses, when).

    Parameters
    ----------
    rows : PreparedRows
        Rows and norms as arrays of namespace ``xp`` on ``device``.
    y : array of shape (n_samples,)
        Integer labels ``0..n_classes-1``, ``xp`` array on ``device``.
    n_classes : int
    sample_weight : ndarray of shape (n_samples,)
        Validated host weights (float64).
    margin : Margin or SupportVectorGuided
    m, s, C : float
    fit_intercept : bool
    xp : namespace
    device : device

    Attributes
    ----------
    layout : ParameterLayout
        The parameter vector's layout (shared with the other objectives).
    constant : float
        The lift ``c`` of the prepared rows.
    transfer_seconds : float
        Wall time spent moving parameters and gradients between host and
        device, summed over evaluations.
    n_evaluations : int
        Objective evaluations (each one forward GEMM; with a gradient, two).
    """

    def __init__(
        self,
        rows,
        y,
        n_classes,
        sample_weight,
        margin,
        m,
        s,
        C,
        fit_intercept,
        *,
        xp,
        device,
    ):
        self.rows = rows
        self.X = rows.X
        self.norms = rows.norms
        self.xp, self.device = xp, device
        self.xp_dtype = rows.X.dtype
        # The solver and the fitted attributes see a NumPy dtype.
        self.dtype = numpy_dtype(self.xp_dtype)
        self.wide = wide_dtype(xp, device)
        self.margin = margin
        self.y = y
        self.n_classes = n_classes
        self.n_features = rows.X.shape[1]
        self.m, self.s, self.C = m, s, C
        self.fit_intercept = fit_intercept
        self.constant = rows.constant
        self.layout = ParameterLayout(n_classes, self.n_features, fit_intercept)
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        self.sample_weight = sample_weight
        self.sw_sum = float(sample_weight.sum())
        self.sw = to_device(sample_weight / self.sw_sum, xp, device, dtype=self.wide)
        classes = xp.arange(n_classes, device=device)
        self.is_target = y[:, None] == classes[None, :]
        self._indicators = {}
        self.l2_strength = 1.0 / (C * self.sw_sum) if margin.penalized else 0.0
        # The largest row norm, once: the float32 overflow guard is then judged
        # on the host (a logit scale grows with the norms) without a sync.
        self.largest_norm = (
            None
            if self.norms is None
            else float(xp.max(xp.astype(self.norms, self.wide)))
        )
        self.transfer_seconds = 0.0
        self.n_evaluations = 0

    def with_margin(self, margin):
        """Return the same problem (rows, weights, labels) under another margin."""
        other = NamespaceMarginObjective(
            self.rows, self.y, self.n_classes, self.sample_weight, margin,
            self.m, self.s, self.C, self.fit_intercept, xp=self.xp, device=self.device,
        )  # fmt: skip
        other._indicators = self._indicators
        return other

    @property
    def n_params(self):
        """Length of the flat parameter vector (:class:`ParameterLayout`)."""
        return self.layout.n_params

    def unpack(self, params):
        """Split the flat vector into ``(V, b)`` views (``b`` None w/o intercept)."""
        return self.layout.unpack(params)

    # -- host <-> device, timed ------------------------------------------------
    def _to_device(self, array, dtype):
        start = time.perf_counter()
        result = to_device(
            np.ascontiguousarray(array), self.xp, self.device, dtype=dtype
        )
        self.transfer_seconds += time.perf_counter() - start
        return result

    def _to_host(self, array):
        start = time.perf_counter()
        result = np.asarray(to_numpy(array), dtype=np.float64)
        self.transfer_seconds += time.perf_counter() - start
        return result

    def _indicator(self, dtype):
        """One-hot labels in ``dtype``, built once per dtype."""
        if dtype not in self._indicators:
            self._indicators[dtype] = self.xp.astype(self.is_target, dtype)
        return self._indicators[dtype]

    # -- forward and pointwise -------------------------------------------------
    def _host_scale(self, w_norm):
        """Return the largest logit scale, on the host (monotone in the norms)."""
        norms = None if self.norms is None else np.array([self.largest_norm])
        with np.errstate(over="ignore", invalid="ignore"):
            return self.margin.logit_scale(self.s, norms, w_norm)

    def _host_objective(self, params):
        """Return the NumPy objective on host rows for a trial the device cannot hold.

        None unless ``params`` is a trial whose logit scale overflows float32
        rows on a device without float64 (Apple's MPS), where the widening of
        :meth:`_forward` is impossible. Then the trial is evaluated as the NumPy
        fit evaluates it, in float64 on the host: a large finite objective
        L-BFGS backtracks from, never NaN. The rows are copied to the host for
        that evaluation only (a rare, documented copy, not kept: on unified
        memory it would double the rows).
        """
        if self.dtype == np.float64 or self.wide != self.xp_dtype:
            return None
        coef, _ = self.unpack(params)
        w_norm = None
        if self.margin.uses_angle:
            w_norm = np.maximum(np.sqrt(np.einsum("ij,ij->i", coef, coef)), TINY_NORM)
        if _scale_fits(self._host_scale(w_norm), self.dtype):
            return None
        norms = None if self.norms is None else to_numpy(self.norms)
        rows = PreparedRows(to_numpy(self.X), norms, self.constant)
        return LinearMarginObjective(
            rows, to_numpy(self.y), self.n_classes, self.sample_weight, self.margin,
            self.m, self.s, self.C, self.fit_intercept,
        )  # fmt: skip

    def _forward(self, params):
        """Cosines (raw logits for softmax) and logit scale on the device."""
        xp = self.xp
        coef, _ = self.unpack(params)
        if self.margin.uses_angle:
            w_norm = np.maximum(np.sqrt(np.einsum("ij,ij->i", coef, coef)), TINY_NORM)
            w_hat = coef / w_norm[:, None]
        else:
            w_hat, w_norm = coef, None
        w_device = self._to_device(w_hat.T.astype(self.dtype), self.xp_dtype)
        w_norm_device = None if w_norm is None else self._to_device(w_norm, self.wide)
        cos = self.X @ w_device
        norms = self.norms
        if self.dtype != np.float64 and not _scale_fits(
            self._host_scale(w_norm), self.dtype
        ):
            # As LinearMarginObjective: a line-search trial far out is
            # evaluated in float64 rather than overflowing float32.
            cos = xp.astype(cos, self.wide)
            norms = None if norms is None else xp.astype(norms, self.wide)
        scale = self.margin.logit_scale(self.s, norms, w_norm_device)
        return cos, scale, norms, w_hat, w_norm

    def _pointwise(self, cos, scale, intercept, *, lam, state, return_scale_grad=False):
        """Loss, ``dL/dcos``, bias gradient (device), scale gradient, state."""
        xp, y = self.xp, self.y
        dtype = cos.dtype
        indicator = self._indicator(dtype)
        # The target hook in float64 on the n target cosines, as the NumPy path.
        cos_y = xp.astype(xp.take_along_axis(cos, y[:, None], axis=1)[:, 0], self.wide)
        f_y, df_y = self.margin.target(cos_y, self.m, lam)
        _check_margin_output(self.margin, f_y, xp)
        if isinstance(scale, (int, float)):
            scale_y = scale
        else:
            full = xp.broadcast_to(scale, cos.shape)
            scale_y = xp.astype(
                xp.take_along_axis(full, y[:, None], axis=1)[:, 0], self.wide
            )
        if state is None:
            state = self.margin.non_target_state(cos, y, f_y)
            if state is not None:
                state = DeviceState(state, xp)
        if state is None:
            h, dh = cos, None
        else:
            h, dh = self.margin.non_target(cos, state.mask)
        target_logit = xp.astype(scale_y * f_y, dtype)[:, None]
        z = xp.where(self.is_target, target_logit, h * scale)
        if intercept is not None:
            z = z + intercept[None, :]
        loss, grad_logits = namespace_cross_entropy(z, indicator, self.sw, xp)
        grad_intercept = xp.sum(xp.astype(grad_logits, self.wide), axis=0)
        grad_logits_y = xp.sum(grad_logits * indicator, axis=1)
        grad_scale = None
        if return_scale_grad:  # dloss/dscale = dloss/dz * h (f_y on the target)
            target_part = xp.astype(grad_logits_y * f_y, dtype)[:, None]
            grad_scale = xp.where(self.is_target, target_part, h * grad_logits)
        grad_target = xp.astype(grad_logits_y * (scale_y * df_y), dtype)[:, None]
        grad_cos = grad_logits * scale
        if dh is not None:
            grad_cos = grad_cos * dh
        grad_cos = xp.where(self.is_target, grad_target, grad_cos)
        return loss, grad_cos, grad_intercept, grad_scale, state

    def penalty(self, params):
        """Return the L2 term ``|V|^2 / (2 C S)`` (zero for unpenalised losses)."""
        return self.layout.penalty(params, self.l2_strength)

    def _intercept_on_device(self, params, dtype):
        _, intercept = self.unpack(params)
        return None if intercept is None else self._to_device(intercept, dtype)

    # -- the solver's interface ------------------------------------------------
    def stationarity(self, params, grad):
        """Largest gradient entry on the parameters' own scale (host, as NumPy's)."""
        return self.layout.stationarity(params, grad, self.margin.normalizes_W)

    def value_and_state(self, params, *, lam=0.0):
        """Exact objective at ``params`` and the non-target state there."""
        self.n_evaluations += 1
        if (host := self._host_objective(params)) is not None:
            value, state = host.value_and_state(params, lam=lam)
            if state is not None:  # the mask lives on the device, as ours
                state = DeviceState(to_device(state, self.xp, self.device), self.xp)
            return value, state
        cos, scale, _, _, _ = self._forward(params)
        intercept = self._intercept_on_device(params, cos.dtype)
        loss, _, _, _, state = self._pointwise(
            cos, scale, intercept, lam=lam, state=None
        )
        return loss + self.penalty(params), state

    def loss_gradient(self, params, *, lam=0.0, state=None):
        """Objective value and gradient (float64, host) at ``params``, one pass."""
        self.n_evaluations += 1
        if (host := self._host_objective(params)) is not None:
            if state is not None:
                state = to_numpy(state.mask)
            return host.loss_gradient(params, lam=lam, state=state)
        xp = self.xp
        coef, _ = self.unpack(params)
        depends_on_w = self.margin.scale_depends_on_w
        cos, scale, norms, w_hat, w_norm = self._forward(params)
        intercept = self._intercept_on_device(params, cos.dtype)
        loss, grad_cos, grad_intercept, grad_scale, _ = self._pointwise(
            cos, scale, intercept, lam=lam, state=state, return_scale_grad=depends_on_w
        )
        X = (
            self.X
            if grad_cos.dtype == self.xp_dtype
            else xp.astype(self.X, grad_cos.dtype)
        )
        g = self._to_host(grad_cos.T @ X)
        grad = np.empty_like(params)
        grad_coef, grad_b = self.unpack(grad)
        if self.margin.uses_angle:
            radial = np.einsum("ij,ij->i", g, w_hat)
            g -= radial[:, None] * w_hat
            g /= w_norm[:, None]
        if depends_on_w:
            ones = xp.ones(self.n_classes, dtype=self.wide, device=self.device)
            unit_scale = xp.broadcast_to(
                self.margin.logit_scale(self.s, norms, ones), grad_cos.shape
            )
            grad_norm = self._to_host(xp.sum(grad_scale * unit_scale, axis=0))
            g += grad_norm[:, None] * w_hat
        grad_coef[:] = g
        if self.l2_strength:
            loss += self.penalty(params)
            grad_coef += self.l2_strength * coef
        if grad_b is not None:
            grad_b[:] = self._to_host(grad_intercept)
        return loss, grad

    def fixed_cosine_problem(self, params):
        """``f(b) -> (value, gradient)`` over the bias, prototypes fixed.

        The namespace twin of the NumPy bias problem of
        :func:`sklmargin.solver._start.optimal_intercept`: one forward GEMM, then the
        pointwise loss in float64 on the device per step, ``K`` numbers
        crossing each way.
        """
        xp = self.xp
        if (host := self._host_objective(params)) is not None:

            def on_host(intercept):
                # The full NumPy evaluation at these prototypes: rare, as above.
                trial = np.array(params, dtype=np.float64)
                self.unpack(trial)[1][:] = intercept
                value, grad = host.loss_gradient(trial)
                return value, np.array(self.unpack(grad)[1])

            return on_host
        cos, scale, _, _, _ = self._forward(params)
        cos = xp.astype(cos, self.wide)
        if not isinstance(scale, (int, float)):
            scale = xp.astype(scale, self.wide)
        penalty = self.penalty(params)

        def on_fixed_cosines(intercept):
            bias = self._to_device(intercept, self.wide)
            # As the NumPy bias problem: the start of a margin without
            # softening, no state (see sklmargin.solver._start).
            loss, _, grad_intercept, _, _ = self._pointwise(
                cos, scale, bias, lam=0.0, state=None
            )
            return loss + penalty, self._to_host(grad_intercept)

        return on_fixed_cosines


def namespace_class_sums(X, y, sample_weight, n_classes, xp):
    """``sum_{i: y_i = j} w_i x_i`` per class, float64 on the host (``K x d``).

    One GEMM of the weighted one-hot labels with the rows per row block, in
    float64 where the device has it (as the NumPy start's blocks).
    """
    device = array_api_compat.device(X)
    wide = wide_dtype(xp, device)
    classes = xp.arange(n_classes, device=device)
    sums = None
    for rows in row_slices(X.shape[0], 8 * max(X.shape[1], 1)):
        weighted = (
            xp.astype(y[rows][:, None] == classes[None, :], wide)
            * (sample_weight[rows][:, None])
        )
        part = weighted.T @ xp.astype(X[rows, :], wide)
        sums = part if sums is None else sums + part
    return np.asarray(to_numpy(sums), dtype=np.float64)
