"""What the solver, the start and the estimators ask of a training objective.

Three objectives implement it: :class:`~sklmargin.objective.LinearMarginObjective`
(rows in memory), the Dask integration's ``DaskMarginObjective`` (a map-reduce
over chunks) and ``objective._namespace.NamespaceMarginObjective`` (rows in a
torch / CuPy array on their device). The solver
(:func:`~sklmargin.solver.fit_continuation`) drives each through this
interface alone: the softening ``lam`` of L-/A-Softmax and
the non-target ``state`` of SV-Softmax are *arguments* of each evaluation, never
attributes the solver sets, so one objective can be evaluated at several
schedule points without being mutated. All share the parameter vector's layout,
:class:`ParameterLayout`, by holding one (composition, not borrowed methods).
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
    """

    margin: object
    m: float
    s: float | None
    dtype: np.dtype
    constant: float
    layout: ParameterLayout

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
