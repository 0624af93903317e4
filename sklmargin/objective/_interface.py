"""What the solver, the start and the estimators ask of a training objective.

Two objectives implement it: :class:`~sklmargin.objective.LinearMarginObjective`
(rows in memory, in any array API namespace: NumPy, or torch / CuPy /
array-api-strict on their device) and the Dask integration's
``DaskMarginObjective`` (a map-reduce of in-memory objectives over chunks).
The solver (:func:`~sklmargin.solver.fit_continuation`) and the start
(:mod:`sklmargin.solver._start`) drive each through this interface alone: the
softening ``lam`` of L-/A-Softmax and the non-target ``state`` of SV-Softmax
are *arguments* of each evaluation, never attributes the solver sets, so one
objective can be evaluated at several schedule points without being mutated.
Both derive from :class:`ObjectiveBase`, which holds what they share: the
hyper-parameters, the parameter vector's :class:`ParameterLayout`, the L2
penalty (added once, on the host).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class ParameterLayout:
    r"""The flat parameter vector ``[V.ravel(), b]`` of a margin classifier.

    ``V`` has shape ``(n_classes, n_features)`` (row ``j`` is class ``j``'s
    prototype); ``b`` is the per-class bias, absent without intercept.

    Parameters
    ----------
    n_classes : int
    n_features : int
        Columns of the prepared rows, the lift included.
    fit_intercept : bool
    """

    n_classes: int
    n_features: int
    fit_intercept: bool

    @property
    def n_params(self):
        """Length of the flat vector: ``K d`` (+ ``K`` with intercept)."""
        k, d = self.n_classes, self.n_features
        return k * d + (k if self.fit_intercept else 0)

    def unpack(self, params):
        """Split the flat vector into ``(V, b)`` views (``b`` None w/o intercept)."""
        k, d = self.n_classes, self.n_features
        coef = params[: k * d].reshape(k, d)
        intercept = params[k * d :] if self.fit_intercept else None
        return coef, intercept

    def penalty(self, params, l2_strength):
        r"""``l2_strength / 2 * |V|^2`` (the bias is not penalised)."""
        if not l2_strength:
            return 0.0
        coef, _ = self.unpack(params)
        return 0.5 * l2_strength * float(np.einsum("ij,ij->", coef, coef))

    def stationarity(self, params, grad, normalizes_W):
        r"""Largest gradient entry on the parameters' own scale.

        A loss that sees ``V`` only through ``V / |V|`` has a gradient
        orthogonal to each ``v_j`` and proportional to ``1 / |v_j|``; L-BFGS's
        steps change the norms (measured on ``make_circles``: 5e-6 for one
        prototype, 36 for the other), so the raw gradient overstates (or
        understates) how far a prototype's *direction* is from optimal. The
        gradient on the sphere, ``|v_j| dF/dv_j``, does not depend on the norm;
        the solver judges a stall by it.
        """
        if not normalizes_W:
            return float(np.max(np.abs(grad), initial=0.0))
        coef, _ = self.unpack(params)
        grad_coef, grad_intercept = self.unpack(grad)
        on_sphere = grad_coef * np.linalg.norm(coef, axis=1)[:, None]
        largest = float(np.max(np.abs(on_sphere), initial=0.0))
        if grad_intercept is not None:
            largest = max(largest, float(np.max(np.abs(grad_intercept), initial=0.0)))
        return largest


@runtime_checkable
class MarginObjective(Protocol):
    r"""A margin-softmax training objective ``F(V, b)`` the solver can minimise.

    .. math::

        F(V, b) = \frac{\sum_i w_i \ell_i(V, b)}{\sum_i w_i}
        + \frac{1}{2 C \sum_i w_i} \|V\|^2

    Attributes
    ----------
    margin : Margin or SupportVectorGuided
        The loss; the solver reads ``margin.stateful`` and ``margin.stateless``.
    m, s : float
        Resolved hyper-parameters (``s`` None where the loss has none).
    dtype : numpy.dtype
        The dtype the fitted attributes are stored in.
    constant : float
        The lift ``c`` appended to every row (0 without lift).
    layout : ParameterLayout
        The parameter vector's layout (``n_params``, ``unpack``).
    n_classes, n_features : int
        Prototypes and their coordinates (the lift's included).
    """

    margin: object
    m: float
    s: float | None
    dtype: np.dtype
    constant: float
    layout: ParameterLayout
    n_classes: int
    n_features: int

    def loss_gradient(self, params, *, lam=0.0, state=None):
        """Value and float64 gradient at ``params``.

        ``lam`` is the softening of L-/A-Softmax (0 is the exact loss);
        ``state`` the non-target state held fixed (None recomputes it, the
        exact, discontinuous SV-Softmax objective).
        """

    def value_and_state(self, params, *, lam=0.0):
        """Exact value at ``params`` and the non-target state there."""

    def stationarity(self, params, grad):
        """Largest gradient entry on the parameters' own scale (see layout)."""

    def with_margin(self, margin):
        """Return the same problem (rows, weights, labels) under another margin."""

    def intercept_problem(self, params):
        """``f(b) -> (value, gradient over b)``: the objective over the bias alone.

        The prototypes are those of ``params``; the margin is unsoftened and
        its state recomputed (the start's problem, see
        :func:`sklmargin.solver._start.optimal_intercept`).
        """


class ObjectiveBase:
    """What every :class:`MarginObjective` shares: the host side of ``F``.

    Holds the resolved hyper-parameters, the :class:`ParameterLayout`, the
    weight total ``S`` and the L2 strength ``1 / (C S)`` (0 for losses that do
    not depend on ``|v_j|``), and counts evaluations. Subclasses call
    :meth:`_setup` and implement ``loss_gradient``, ``value_and_state``,
    ``with_margin`` and ``intercept_problem`` (the start's bias-only problem;
    no default: through full evaluations it costs a pass per step and, in
    float32, stops on the objective's round-off).
    """

    def _setup(self, margin, m, s, C, n_classes, n_features, fit_intercept, sw_sum):
        self.margin, self.m, self.s, self.C = margin, m, s, C
        self.n_classes, self.n_features = n_classes, n_features
        self.fit_intercept = fit_intercept
        self.layout = ParameterLayout(n_classes, n_features, fit_intercept)
        self.sw_sum = float(sw_sum)
        # The bias is not rescaled: parametrised as b = s * beta (its gradient
        # would then scale with s like the prototypes', so tol * s would mean
        # the same for both) it cost several times the L-BFGS iterations at
        # s=100 on Nystroem features, for accuracy changes within noise.
        self.l2_strength = 1.0 / (C * self.sw_sum) if margin.penalized else 0.0
        #: Objective evaluations (each one forward GEMM; with a gradient, two).
        self.n_evaluations = 0

    @property
    def n_params(self):
        """Length of the flat parameter vector (:class:`ParameterLayout`)."""
        return self.layout.n_params

    def unpack(self, params):
        """Split the flat vector into ``(V, b)`` views (``b`` None w/o intercept)."""
        return self.layout.unpack(params)

    def penalty(self, params):
        """Return the L2 term ``|V|^2 / (2 C S)`` (zero for unpenalised losses)."""
        return self.layout.penalty(params, self.l2_strength)

    def stationarity(self, params, grad):
        """Largest gradient entry on the parameters' own scale.

        See :meth:`ParameterLayout.stationarity`: for normalised prototypes,
        the gradient on the sphere ``|v_j| dF/dv_j``.
        """
        return self.layout.stationarity(params, grad, self.margin.normalizes_W)

    def _penalised(self, params, value, grad):
        """Add the L2 term and its gradient ``V / (C S)`` to ``(value, grad)``."""
        if self.l2_strength:
            value += self.penalty(params)
            self.unpack(grad)[0][...] += self.l2_strength * self.unpack(params)[0]
        return value, grad
