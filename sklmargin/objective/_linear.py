"""The chain rule to the parameters, and predict's margin-free logits.

:class:`LinearMarginObjective` (the in-memory
:class:`~sklmargin.objective.MarginObjective`): cosines
``C = X_hat W_hat^T`` from the coefficients, one GEMM forward and one GEMM
back, the projection that normalised prototypes need, the bias and the L2
penalty. :func:`margin_free_logits` is what predict computes from the fitted
attributes, with the same cosine function and logit scale as training. Both
take rows of any array namespace (see :class:`LinearMarginObjective`).
"""

from __future__ import annotations

import time
from functools import cached_property

import numpy as np
from scipy import sparse

from .._utils.array_api import (
    NUMPY,
    get_namespace,
    max_abs,
    numpy_dtype,
    to_device,
    to_numpy,
    wide_dtype,
)
from ._interface import ObjectiveBase
from ._pointwise import (
    TargetEntries,
    _scale_fits,
    checked_logit_scale,
    pointwise_loss_gradient,
)
from ._rows import PreparedRows, lifted_cosines, times_transposed


def margin_free_logits(
    margin, X, coef, intercept, *, s, constant=0.0, constant_coef=None
):
    """Prediction logits ``z = scale * cos + b``: the training scale, no margin.

    The cosines are :func:`~sklmargin.objective._rows.lifted_cosines` of the
    raw rows (no normalised copy of ``X`` at predict time), and the scale is the
    margin's :meth:`~sklmargin.losses._base.Margin.logit_scale`, the very function
    training used, so the two cannot disagree. Rows of any namespace: the
    logits come back in ``X``'s namespace, dtype and device (the fitted
    arrays may be on the host or on that device).

    Parameters
    ----------
    margin : Margin or SupportVectorGuided
    X : {ndarray, csr_matrix, array} of shape (n_samples, n_features)
    coef : array of shape (n_classes, n_features)
    intercept : array of shape (n_classes,)
    s : float or None
    constant : float, default=0.0
        The lift ``c``.
    constant_coef : array of shape (n_classes,) or None
        The prototypes' coordinate along the lift.

    Returns
    -------
    array of shape (n_samples, n_classes), in X's dtype.

    Raises
    ------
    ValueError
        Where ``X``'s dtype cannot hold the logits
        (:func:`~sklmargin.objective._pointwise.checked_logit_scale`).
    """
    xp, device = get_namespace(X)
    wide = wide_dtype(xp, device)
    dtype, np_dtype = X.dtype, numpy_dtype(X.dtype)
    remedy = "predict with float64 input, or refit with a smaller s"
    intercept = to_device(to_numpy(intercept), xp, device, dtype)
    if not margin.uses_angle:
        raw = times_transposed(X, to_numpy(coef), dtype)
        # Checked like the angle losses' scale: s = 1e39 cast to float32 is inf.
        scale = checked_logit_scale(margin, s, None, None, np_dtype, remedy)
        return raw * (scale.astype(dtype) if xp is NUMPY else float(scale)) + intercept
    cos, norms, w_norm = lifted_cosines(
        X, coef, constant=constant, constant_coef=constant_coef
    )
    if xp is NUMPY:
        norms = norms.astype(dtype)
        scale = checked_logit_scale(margin, s, norms, w_norm, dtype, remedy)
        cos *= scale.astype(dtype)
        return cos + intercept
    # On a device: checked at the largest norm on the host (the scale grows
    # with it), then computed there, in the rows' dtype.
    norms = xp.astype(norms, dtype)
    largest = np.array([float(xp.max(xp.astype(norms, wide)))])
    checked_logit_scale(margin, s, largest, w_norm, np_dtype, remedy)
    scale = margin.logit_scale(s, norms, to_device(w_norm, xp, device, wide))
    scale = xp.asarray(scale, dtype=dtype, device=device)
    return cos * scale + intercept


class DeviceState:
    """A non-target state (SV-Softmax's mask) held on the rows' device.

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


class LinearMarginObjective(ObjectiveBase):
    r"""Full training objective of a linear margin-softmax classifier.

    Parameters are one flat float64 vector ``[V.ravel(), b]`` with ``V`` of
    shape ``(n_classes, n_features)`` (row ``j`` is class ``j``'s prototype,
    normalised to ``W_hat = V / |V|`` row-wise by the angle losses) and ``b``
    the per-class bias (absent without intercept). The objective is

    .. math::

        F(V, b) = \frac{\sum_i w_i \ell_i(V, b)}{\sum_i w_i}
        + \frac{1}{2 C \sum_i w_i} \|V\|^2

    with the penalty only for losses that depend on ``|v_j|`` (softmax,
    L-Softmax). Cosines ``C = X_hat W_hat^T`` come from one GEMM
    (:func:`~sklmargin.objective._rows.lifted_cosines`); the gradient goes
    back through one GEMM ``G^T X_hat`` and, for normalised prototypes, the
    projection

    .. math::

        \frac{\partial F}{\partial v_j} = \frac{g_j - \langle g_j, \hat w_j
        \rangle \hat w_j}{|v_j|}

    which removes the radial part (``<dF/dv_j, v_j> = 0``). A logit scale that
    depends on ``|w_j|`` (L-Softmax) adds the radial term back. Rows are
    prepared once (:func:`sklmargin.objective._rows.prepare_rows`) and the
    sample weights normalised once, here, never per evaluation.

    One class for every array namespace, as scikit-learn's
    ``LinearModelLoss``: the rows may be NumPy or SciPy sparse, or torch /
    CuPy / array-api-strict arrays on their device (the array API fit). Then
    what is ``O(n)`` stays on the device, in the rows' dtype: the two GEMMs,
    the margin, the cross-entropy (:func:`pointwise_loss_gradient`); what is
    ``O(K d)`` runs on the host in float64, written once for every namespace:
    the parameters, the prototype norms, the radial projection, the L2 term
    (scipy's L-BFGS stays on the host, as scikit-learn's
    ``LogisticRegression(solver="lbfgs")`` since 1.9). Per evaluation ``W_hat``,
    ``|w|`` and ``b`` go to the device and ``G^T X_hat``, the loss, the bias
    gradient (and L-Softmax's scale gradient) come back; ``transfer_seconds``
    sums the time of those copies (on an asynchronous device it includes
    waiting for the computation).

    Parameters
    ----------
    rows : PreparedRows
        Unit rows and norms (raw rows for plain softmax), float32 or float64;
        the computation runs in their dtype, namespace and device.
    y : array of shape (n_samples,)
        Integer labels in ``0..n_classes-1``, in the rows' namespace.
    n_classes : int
    sample_weight : ndarray of shape (n_samples,)
        Validated host weights, non-negative, positive sum.
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
    dtype : numpy.dtype
        The rows' dtype as a NumPy dtype (that of the fitted attributes).
    transfer_seconds : float
        Wall time of the host/device copies, summed over evaluations (0 for
        NumPy rows).
    n_evaluations : int

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
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        sw_sum = sample_weight.sum()
        self._setup(margin, m, s, C, n_classes, rows.n_features, fit_intercept, sw_sum)
        self.rows, self.X, self.norms, self.y = rows, rows.X, rows.norms, y
        self.constant = rows.constant
        self.xp, self.device = get_namespace(rows.X)
        self.wide = wide_dtype(self.xp, self.device)
        self.dtype = numpy_dtype(rows.X.dtype)
        self.transfer_seconds = 0.0
        self.sw_host = sample_weight / self.sw_sum
        self.sw = self._to_device(self.sw_host, self.wide)
        self.targets = TargetEntries(y, n_classes)

    def with_margin(self, margin):
        """Return the same problem (rows, weights, labels) under another margin."""
        other = self._on(self.rows, self.y, margin)
        other.targets = self.targets
        return other

    def _on(self, rows, y, margin):
        """Return the problem with these weights and settings on ``rows``, ``y``."""
        return LinearMarginObjective(
            rows, y, self.n_classes, self.sw_host * self.sw_sum, margin, self.m,
            self.s, self.C, self.fit_intercept,
        )  # fmt: skip

    # -- host <-> device: the only copies, timed --------------------------------
    def _to_device(self, array, dtype):
        """Return a host array in the rows' namespace and device (NumPy: as is)."""
        if self.xp is NUMPY or array is None:
            return array
        start = time.perf_counter()
        array = to_device(np.ascontiguousarray(array), self.xp, self.device, dtype)
        self.transfer_seconds += time.perf_counter() - start
        return array

    def _to_host(self, array):
        """Return a float64 host array (NumPy: as is when float64)."""
        if self.xp is NUMPY:
            return np.asarray(array, dtype=np.float64)
        start = time.perf_counter()
        array = np.asarray(to_numpy(array), dtype=np.float64)
        self.transfer_seconds += time.perf_counter() - start
        return array

    def _state(self, state, to_device):
        """Return a state as the margin (``to_device=False``) or the solver sees it."""
        if self.xp is NUMPY or state is None:
            return state
        return DeviceState(state, self.xp) if to_device else state.mask

    # -- constants of the evaluation, made once on first use ----------------------
    @cached_property
    def largest_norm(self):
        """The largest row norm (None for raw rows), once, on the host.

        Only float32 rows read it (their overflow guard is judged on the host:
        a logit scale grows with the norms); float64 fits, and the Dask chunk
        objectives built per evaluation, never pay its pass or its sync.
        """
        if self.norms is None:
            return None
        return float(self.xp.max(self.xp.astype(self.norms, self.wide)))

    @cached_property
    def _unit_scale(self):
        """The logit scale at ``|w_j| = 1``, for a scale proportional to ``|w_j|``.

        A constant of the rows (L-Softmax's ``|x_i|`` per class), made on the
        first gradient rather than at every one, with its host-to-device copy.
        """
        ones = self._to_device(np.ones(self.n_classes), self.wide)
        return self.margin.logit_scale(self.s, self.norms, ones)

    # -- forward ------------------------------------------------------------------
    def _largest_scale(self, w_norm):
        """Return the largest logit scale, on the host (monotone in the norms)."""
        norms = self.largest_norm
        norms = None if norms is None else np.array([norms], dtype=self.dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            return self.margin.logit_scale(self.s, norms, w_norm)

    def _largest_logit(self, top, w_norm):
        """Bound on the logits' size: the largest scale (times ``top``).

        Cosines are bounded by 1, so the scale alone decides; the raw logits of
        the softmax family are not: float32 rows of 1e20 give finite raw logits
        near the dtype's top that the scale ``t`` then overflows (found by the
        fuzzer). ``top`` is their largest size (:meth:`_largest_raw_logit`).
        """
        largest = self._largest_scale(w_norm)
        if self.margin.uses_angle:
            return largest
        with np.errstate(over="ignore", invalid="ignore"):
            return np.max(np.abs(np.asarray(largest, dtype=np.float64))) * top

    def _largest_raw_logit(self, cos):
        """``max |cos|`` as a Python float: one pass over the ``n x K`` logits.

        NaN propagates through the maximum (NumPy's, and the array API
        standard's), so a non-finite result also says that some logit is inf
        or NaN: this one reduction serves both the overflow check of
        :meth:`_forward` and the bound of :meth:`_largest_logit` (they were
        two passes, an ``isfinite`` and a ``max``). One device breaks the
        standard: torch's ``max`` on Apple's MPS skipped NaN before macOS 15
        (pytorch#130295), and MPS is the device without float64 whose trials
        must go to the host; where the rows cannot be widened a NaN is
        therefore counted as inf before the maximum.
        """
        if not self._can_widen:
            xp = self.xp
            inf = xp.asarray(float("inf"), dtype=cos.dtype, device=self.device)
            cos = xp.where(xp.isnan(cos), inf, cos)
        with np.errstate(over="ignore", invalid="ignore"):  # as the old max was
            return max_abs(cos)

    def _forward(self, params):
        """Cosines (raw logits for softmax), logit scale, W_hat and |w|.

        None for a trial that would overflow float32 rows on a device without
        float64 (Apple's MPS), where they cannot be widened: the caller then
        evaluates it on the host (:meth:`_host_objective`).
        """
        coef, _ = self.unpack(params)
        # float32 rows are judged against their dtype; float64 ones pay no pass
        narrow = self.dtype != np.float64
        top = None  # the largest raw logit, for the softmax family only
        if self.margin.uses_angle:
            # the rows were lifted and normalised once (prepare_rows)
            cos, _, w_norm = lifted_cosines(self.X, coef, unit_rows=True)
            w_hat = coef / w_norm[:, None]
        else:
            w_hat, w_norm = coef, None
            # invalid too: where partial sums of both signs overflow, inf - inf
            # is NaN (OpenBLAS's Sandybridge kernels sum in such an order).
            with np.errstate(over="ignore", invalid="ignore"):
                cos = times_transposed(self.X, coef, self.X.dtype)
            top = self._largest_raw_logit(cos) if narrow else None
            if narrow and not np.isfinite(top):
                # Raw logits of float32 rows of 1e20 and a line-search trial's
                # coefficients overflow float32 (found by the fuzzer): in the
                # wide dtype they are a large finite objective L-BFGS
                # backtracks from.
                if not self._can_widen:
                    return None
                cos = times_transposed(self._widened(self.X), coef, self.wide)
                top = self._largest_raw_logit(cos)
        norms = self.norms
        if narrow and not _scale_fits(self._largest_logit(top, w_norm), self.dtype):
            # A line-search trial far out (L-Softmax's |x||w|, huge |w|, float32
            # rows of 1e20), or an s beyond float32 on tiny rows (A-Softmax's
            # s |x|), would overflow the dtype: evaluated in float64, it is a
            # large finite objective L-BFGS backtracks from, not inf/NaN.
            if not self._can_widen:
                return None
            cos, norms = self._widened(cos), self._widened(norms)
        with np.errstate(over="ignore", invalid="ignore"):  # 0 * inf: see above
            scale = self.margin.logit_scale(
                self.s, norms, self._to_device(w_norm, self.wide)
            )
        return cos, scale, w_hat, w_norm

    @property
    def _can_widen(self):
        """Whether the rows' device has a wider dtype than theirs (MPS: not)."""
        return self.wide != self.X.dtype

    def _widened(self, array):
        # copy=False: logits the raw-logit check already computed wide are
        # not copied a second time by the scale check
        return None if array is None else self.xp.astype(array, self.wide, copy=False)

    def _pointwise(self, cos, scale, intercept, *, lam=0.0, state=None, **kwargs):
        """Run the pointwise layer on ``cos`` (overwritten), ``intercept`` on host."""
        return pointwise_loss_gradient(
            cos, self.y, self.margin, self.m, scale, lam=lam,
            intercept=self._to_device(intercept, cos.dtype), sample_weight=self.sw,
            state=self._state(state, to_device=False), overwrite_cos=True,
            targets=self.targets, **kwargs,
        )  # fmt: skip

    def _host_objective(self):
        """Return the NumPy objective on host rows, for a trial the device cannot hold.

        Where :meth:`_forward` gives None: a trial whose logits overflow float32
        rows on a device without float64 (Apple's MPS), a large logit scale or,
        for the softmax family, large raw logits (float32 rows of 1e20, found
        by the fuzzer). It is evaluated as the NumPy fit evaluates it, in float64
        on the host: a large finite objective L-BFGS backtracks from, never NaN.
        The decision needs the device's raw logits, so that trial pays one
        wasted forward GEMM; the rows are copied to the host for that
        evaluation only (a rare copy, not kept: on unified memory it would
        double the rows).
        """
        norms = None if self.norms is None else to_numpy(self.norms)
        rows = PreparedRows(to_numpy(self.X), norms, self.constant)
        return self._on(rows, to_numpy(self.y), self.margin)

    # -- the solver's interface -----------------------------------------------------
    def value_and_state(self, params, *, lam=0.0):
        """Exact objective at ``params`` and the non-target state there.

        One forward pass (no backward GEMM): the solver judges each round of a
        stateful margin (SV-Softmax) on this value and starts the next round
        with this state.
        """
        self.n_evaluations += 1
        if (forward := self._forward(params)) is None:
            host = self._host_objective()
            value, state = host.value_and_state(params, lam=lam)
            state = None if state is None else to_device(state, self.xp, self.device)
            return value, self._state(state, to_device=True)
        cos, scale, _, _ = forward
        result = self._pointwise(cos, scale, self.unpack(params)[1], lam=lam)
        return result.loss + self.penalty(params), self._state(result.state, True)

    def loss_gradient(self, params, *, lam=0.0, state=None):
        """Objective value and gradient (float64, host) at ``params``, one pass.

        ``lam`` softens L-/A-Softmax (0: the exact loss); ``state`` holds the
        non-target state fixed (None recomputes it at this point).
        """
        self.n_evaluations += 1
        if (forward := self._forward(params)) is None:
            state = self._state(state, to_device=False)
            state = None if state is None else to_numpy(state)
            return self._host_objective().loss_gradient(params, lam=lam, state=state)
        depends_on_w = self.margin.scale_depends_on_w
        cos, scale, w_hat, w_norm = forward
        result = self._pointwise(
            cos, scale, self.unpack(params)[1], lam=lam, state=state,
            return_scale_grad=depends_on_w,
        )  # fmt: skip
        g = self._to_host(self._backward(result.grad_cos))
        if self.margin.uses_angle:
            # Every angle loss sees V only through W_hat = V / |V|: project.
            radial = np.einsum("ij,ij->i", g, w_hat)
            g -= radial[:, None] * w_hat
            g /= w_norm[:, None]
        if depends_on_w:
            # The scale is proportional to |w_j| (Margin.scale_depends_on_w):
            # dloss/d|w_j| = sum_i (dloss/dscale_ij) scale_ij / |w_j|, along w_hat.
            grad_norm = _column_dots(result.grad_scale, self._unit_scale)
            grad_norm = self._to_host(grad_norm)
            g += grad_norm[:, None] * w_hat
        grad = np.empty_like(params)
        grad_coef, grad_intercept = self.unpack(grad)
        grad_coef[:] = g
        if grad_intercept is not None:
            grad_intercept[:] = self._to_host(result.grad_intercept)
        return self._penalised(params, result.loss, grad)

    def _backward(self, grad_cos):
        """``G^T X_hat``, in ``G``'s dtype (NumPy: sparse products as they come)."""
        if sparse.issparse(self.X):
            return (self.X.T @ grad_cos).T
        X = self.X
        if self.xp is not NUMPY and grad_cos.dtype != X.dtype:
            X = self.xp.astype(X, grad_cos.dtype)
        return grad_cos.T @ X

    def intercept_problem(self, params):
        """``f(b) -> (value, gradient over b)`` on the cosines of one forward GEMM.

        Then ``O(n K)`` per step, in float64 whatever the rows' dtype: a
        float32 bias problem stops on its round-off, and float32 and float64
        fits would then start apart and end apart (iris ArcFace: 0.06 in
        ``coef_``). The margin is unsoftened and its state recomputed.
        """
        if (forward := self._forward(params)) is None:
            return self._host_objective().intercept_problem(params)
        cos, scale, _, _ = forward
        xp = self.xp
        cos = xp.astype(cos, self.wide)
        scale = xp.asarray(scale, dtype=self.wide, device=self.device)
        penalty = self.penalty(params)

        def on_fixed_cosines(intercept):
            # it writes its logits over the cosines it is given: a copy each
            result = self._pointwise(xp.asarray(cos, copy=True), scale, intercept)
            return result.loss + penalty, self._to_host(result.grad_intercept)

        return on_fixed_cosines


def _column_dots(a, b):
    """``sum_i a_ij b_ij`` per column (``b`` broadcast to ``a``'s shape)."""
    if isinstance(a, np.ndarray):
        return np.einsum("ij,ij->j", a, np.broadcast_to(b, a.shape))
    xp, _ = get_namespace(a)
    return xp.sum(a * xp.broadcast_to(b, a.shape), axis=0)
