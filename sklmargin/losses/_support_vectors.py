"""Margin modifiers: transforms that apply on top of any loss.

SV-Softmax is the one so far: it re-weights the hard non-target logits of
whatever margin it wraps, through the non-target hooks of
:class:`~sklmargin.losses._base.Margin`, and delegates everything else to it.
"""

from __future__ import annotations

import numpy as np

from .._utils.array_api import get_namespace
from ._base import _real


def check_t(t):
    """Validate the SV-Softmax parameter ``t >= 1`` and return it as a float."""
    t = _real(t, "t")  # a real, finite number
    if not t >= 1.0:
        raise ValueError(f"t must be >= 1 (SV-Softmax; t=1 is off); got t={t!r}.")
    return t


class SupportVectorGuided:
    r"""SV-Softmax: any margin, with hard non-targets re-weighted by ``t``.

    A non-target ``k`` is a *support vector* of sample ``i`` when it beats the
    margin-adjusted target, :math:`I_{ik} = 1[f(\cos_{iy}) < \cos_{ik}]`; its
    cosine becomes

    .. math:: h(\cos_{ik}) = \cos_{ik} + (t - 1)(\cos_{ik} + 1)\, I_{ik}

    so its logit grows by :math:`s (t-1)(\cos_{ik} + 1)` — hard negatives weigh
    more. The mask :math:`I` is piecewise constant in the parameters: it is this
    modifier's non-target *state*, held fixed during an L-BFGS run and
    recomputed between runs (:mod:`sklmargin.solver._lbfgs`). Everything else
    (target transform, logit scale, defaults) is the base margin's.

    Parameters
    ----------
    base : Margin
        The loss being modified.
    t : float
        ``t >= 1``; 1 is the base loss.

    References
    ----------
    Wang et al., "Support Vector Guided Softmax Loss for Face Recognition",
    arXiv:1812.11317.
    """

    stateful = True

    def __init__(self, base, t):
        self.base = base
        self.t = check_t(t)

    def stateless(self):
        """Return the base margin (an all-False mask gives exactly the base loss)."""
        return self.base.stateless()

    def __getattr__(self, attribute):
        # Everything but the non-target hooks is the base margin's.
        if attribute == "base":  # not set yet (unpickling): avoid recursion
            raise AttributeError(attribute)
        return getattr(self.base, attribute)

    def __repr__(self):
        return f"SupportVectorGuided({self.base!r}, t={self.t!r})"

    def non_target_state(self, cos, y, f_y):
        """Support-vector mask ``cos_ik > f(cos_iy)`` off the target column."""
        if isinstance(cos, np.ndarray):
            mask = cos > f_y.astype(cos.dtype)[:, None]
            mask[np.arange(cos.shape[0]), y] = False
        else:  # an array API namespace: no fancy-index assignment
            xp, device = get_namespace(cos)
            mask = cos > xp.astype(f_y, cos.dtype)[:, None]
            classes = xp.arange(cos.shape[1], device=device)
            mask = mask & (y[:, None] != classes[None, :])
        base_state = self.base.non_target_state(cos, y, f_y)
        return mask if base_state is None else (mask, base_state)

    def non_target(self, cos, state):
        """``h = h0 (1 + b) + b`` with ``b = (t - 1) I``, ``h0`` the base's."""
        if isinstance(state, tuple):
            mask, base_state = state
            h0, dh0 = self.base.non_target(cos, base_state)
        else:
            mask, h0, dh0 = state, cos, None
        if not isinstance(cos, np.ndarray):  # array API: no in-place updates
            xp, _ = get_namespace(cos)
            boost = xp.astype(mask, cos.dtype) * (self.t - 1.0)
            h = h0 * (1.0 + boost) + boost
            dh = boost + 1.0 if dh0 is None else (boost + 1.0) * dh0
            return h, dh
        boost = mask.astype(cos.dtype)
        boost *= cos.dtype.type(self.t - 1.0)
        h = h0 * (1.0 + boost)
        h += boost
        boost += 1.0  # now dh/dh0
        dh = boost if dh0 is None else boost * dh0
        return h, dh


def with_support_vectors(margin, t):
    """Return ``margin`` modified by SV-Softmax's ``t`` (itself when t = 1)."""
    t = check_t(t)
    return margin if t == 1.0 else SupportVectorGuided(margin, t)
