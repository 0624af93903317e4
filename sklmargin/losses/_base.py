"""The Margin base class: everything one loss of the family knows.

Every loss shares one pipeline (cosine matrix -> margin transforms -> logit
scale -> softmax cross-entropy, see :mod:`sklmargin.objective`). A loss
differs from another only by what its :class:`Margin` says:

* the *target transform* ``f(cos)`` applied to the cosine of the true class,
  and its derivative (:meth:`Margin.target`);
* the *non-target transform* of the other cosines, with the state it holds
  fixed during one L-BFGS run (:meth:`Margin.non_target`; SV-Softmax is a
  modifier built on it, :class:`sklmargin.losses._support_vectors.SupportVectorGuided`);
* the per-entry *logit scale*, used by training and prediction alike
  (:meth:`Margin.logit_scale`): a constant ``s``, ``s |x_i|`` or
  ``|w_j| |x_i|``;
* what it normalises, whether the L2 penalty applies, how a fit starts, the
  domain and defaults of ``m`` and ``s``, and a tuning grid.

A new margin is one small subclass of :class:`Margin` plus one entry in its
family module's ``MARGINS`` (or an instance passed as ``loss=``). Nothing
outside ``losses/`` tests a loss's name or knows its formula.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._utils.array_api import get_namespace


def _as_dtype(array, dtype):
    """``array`` cast to ``dtype`` (``astype`` for NumPy, ``xp.astype`` else)."""
    if isinstance(array, np.ndarray):
        return array.astype(dtype)
    return get_namespace(array)[0].astype(array, dtype)


def _clip_cos(cos):
    # Cosines are clipped this far inside [-1, 1] before anything divides by
    # sin(theta) = sqrt(1 - c**2): the derivative of arccos is infinite at +-1,
    # and a sample exactly parallel to its prototype must give a finite (if
    # large) slope, never inf * 0 = NaN in the chain rule.
    xp, _ = get_namespace(cos)
    eps = 1e-6 if cos.dtype == xp.float32 else 1e-12
    return xp.clip(cos, -1.0 + eps, 1.0 - eps)


def _sin_from_cos(cos_clipped):
    return get_namespace(cos_clipped)[0].sqrt((1.0 - cos_clipped) * (1.0 + cos_clipped))


class Margin:
    """Base class of a margin: the target transform of one loss.

    Subclasses set the class attributes and implement :meth:`target`.

    Attributes
    ----------
    name : str
        The ``loss=`` string.
    normalizes_X, normalizes_W : bool
        Whether samples / class prototypes are projected to the unit sphere.
    default_m : float
        Margin used when ``m=None``.
    default_s : float or None
        Scale used when ``s=None``; ``None`` where the scale is a norm (L-/A-Softmax).
    uses_lambda : bool
        Whether the loss is softened by the ``lambda`` continuation of
        L-/A-Softmax; ``default_lambda`` is then the final ``lambda``.
    uses_s : bool
        Whether the loss takes the hyper-parameter ``s``.
    scale_from_norms : bool
        Whether the logit scale involves feature norms (L-/A-Softmax), which
        :func:`~sklmargin.margin_softmax_loss` then needs as ``norms``.
    penalized : bool
        Whether the L2 penalty ``C`` applies (losses whose objective depends on
        ``|w_j|``); cosine losses are scale invariant in ``W`` and are regularised
        through ``s`` and ``m`` instead.
    uses_angle : bool
        Whether the loss works on unit rows and prototypes (cosines). False only
        for plain softmax, whose "cosines" are raw inner products.
    scale_depends_on_w : bool
        Whether :meth:`logit_scale` involves the prototype norms (L-Softmax);
        it must then be proportional to ``|w_j|``, and the objective adds the
        radial gradient.
    start : {"class-means", "zeros", "softmax-solution"}
        First point of a cold fit: prototypes at the weighted class means of the
        unit rows ("weight imprinting"), all zeros, or the plain-softmax solution
        (L-Softmax: its loss is not differentiable at ``w_j = 0``).
    default_s_kernel : float or None
        ``s`` used by the kernel estimator when ``s=None``, if it differs from
        ``default_s`` (kernel features have ``|z| ~ 1``, unlike standardised rows).
    search_grid : dict of str to tuple of float
        A 9-point tuning grid over the loss's own hyper-parameters (``m``, ``s``
        or ``C``), every point inside the loss's domain and the defaults among
        them. ``compare --tune`` and the CV estimators read it from here, so a
        new loss is tuned without editing a list elsewhere.
    m_domain : tuple of float
        The closed interval of ``m`` :meth:`check_m` accepts (``inf``: unbounded;
        ``(0, 0)``: no margin); ``m_meaning`` says what ``m`` is, in its message,
        and ``m_domain_text`` (if set) names the interval there.
    edge_settings : dict
        The most extreme valid settings a user may pass (stress and fuzz tests).
    logits_latex, logits_text, paper : tuple of str, tuple of str, str
        Target and other logits (no bias) in LaTeX and in plain text, and the
        paper: the documentation's loss tables are generated from them.
    """

    name = ""
    normalizes_X = True
    normalizes_W = True
    default_m = 0.0
    default_s: float | None = 10.0
    uses_lambda = False
    penalized = False
    uses_s = True
    scale_from_norms = False
    uses_angle = True
    scale_depends_on_w = False
    start = "class-means"
    default_s_kernel: float | None = None
    search_grid: dict = {}
    m_domain = (-math.inf, math.inf)
    m_meaning = "the margin"
    m_domain_text: str | None = None
    edge_settings: dict = {"s": 100.0}
    logits_latex = ("", "")
    logits_text = ("", "")
    paper = ""

    def __repr__(self):
        return f"{type(self).__name__}()"

    def logit_scale(self, s, norms, w_norm):
        """Per-entry logit scale, broadcastable to (n_samples, n_classes).

        Training and prediction both multiply the (modified) cosines by it.

        Parameters
        ----------
        s : float or None
            The resolved scale hyper-parameter.
        norms : ndarray of shape (n_samples,) or None
            ``|[x_i, c]|`` in the computation dtype (None for plain softmax).
        w_norm : ndarray of shape (n_classes,) or None
            Prototype norms (None for plain softmax).

        Returns
        -------
        float or ndarray
            ``s`` here (the cosine losses).
        """
        return s

    def kink_angles(self, m):
        """Return the angles (radians) where the target is not smooth at ``m``."""
        return ()

    #: Whether :meth:`non_target_state` returns a state (a piecewise objective).
    stateful = False

    def stateless(self):
        """Return the margin without its non-target state (the first problem)."""
        return self

    def non_target_state(self, cos, y, f_y):
        """State the non-target transform holds fixed during one L-BFGS run.

        None (the default) means the loss has no non-target transform. A
        modifier whose transform is piecewise (SV-Softmax's support-vector mask)
        returns the piece here; the solver recomputes it between runs.
        """
        return None

    def non_target(self, cos, state):
        """Transform of every cosine, ``h(cos)``, and ``dh/dcos``.

        Called with the state from :meth:`non_target_state` when that is not
        None; target entries are overwritten by :meth:`target` afterwards.

        Returns
        -------
        h, dh : ndarray of shape (n_samples, n_classes)
        """
        raise NotImplementedError

    def check_m(self, m):
        """Return ``m`` as a float, or raise ValueError if outside ``m_domain``."""
        m = _real(m, "m")
        low, high = self.m_domain
        if not low <= m <= high:
            allowed = self.m_domain_text or (
                f"None or {low:g}" if low == high
                else f">= {low:g}" if high == math.inf
                else f"in [{low:g}, {high:g}]"
            )  # fmt: skip
            raise ValueError(
                f"m must be {allowed} for loss={self.name!r} ({self.m_meaning}); "
                f"got m={m!r}."
            )
        return m

    def check_s(self, s):
        """Return ``s`` as a float, or raise ValueError if outside the domain."""
        s = _real(s, "s")
        if not s > 0:
            raise ValueError(f"s must be > 0 for loss={self.name!r}; got s={s!r}.")
        return s

    def resolve(self, m=None, s=None):
        """Validate ``m`` and ``s`` and replace ``None`` by the loss defaults."""
        m = self.default_m if m is None else self.check_m(m)
        if not self.uses_s:
            if s is not None:
                raise ValueError(
                    f"s is not used by loss={self.name!r}: its logit scale is the "
                    f"feature norm; leave s=None (got s={s!r})."
                )
            return m, None
        s = self.default_s if s is None else self.check_s(s)
        return m, s

    def target(self, cos_y, m, lam=0.0):
        """Target transform ``f(cos_y)`` and its derivative ``f'(cos_y)``.

        Parameters
        ----------
        cos_y : ndarray of shape (n_samples,)
            Cosine (or raw logit, for losses that need no angle) of each sample's
            true class.
        m : float
            The resolved margin.
        lam : float, default=0.0
            Softening of L-/A-Softmax (ignored by the other losses).

        Returns
        -------
        f, df : ndarray of shape (n_samples,)
        """
        raise NotImplementedError


def _real(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {value!r}.")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite; got {value!r}.")
    return value
