"""Margins: everything one loss of the family knows, in one small class each.

Every loss shares one pipeline (cosine matrix -> margin transforms -> logit
scale -> softmax cross-entropy, see :mod:`sklmargin._objective`). A loss
differs from another only by what its :class:`Margin` says:

* the *target transform* ``f(cos)`` applied to the cosine of the true class,
  and its derivative (:meth:`Margin.target`);
* the *non-target transform* of the other cosines, with the state it holds
  fixed during one L-BFGS run (:meth:`Margin.non_target`; SV-Softmax is a
  modifier built on it, :class:`sklmargin._modifiers.SupportVectorGuided`);
* the per-entry *logit scale*, used by training and prediction alike
  (:meth:`Margin.logit_scale`): a constant ``s``, ``s |x_i|`` or
  ``|w_j| |x_i|``;
* what it normalises, whether the L2 penalty applies, how a fit starts, the
  domain and defaults of ``m`` and ``s``, and a tuning grid.

A new margin is one small subclass of :class:`Margin` plus one line in
``_REGISTRY`` (or an instance passed as ``loss=``). Nothing outside this module
tests a loss's name or knows its formula.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

# Cosines are clipped this far inside [-1, 1] before anything divides by
# sin(theta) = sqrt(1 - c**2): the derivative of arccos is infinite at +-1, and a
# sample exactly parallel to its prototype must give a finite (if large) slope,
# never inf * 0 = NaN in the chain rule.
_COS_CLIP = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 1e-6}


def _clip_cos(cos):
    eps = _COS_CLIP.get(cos.dtype, 1e-12)
    return np.clip(cos, -1.0 + eps, 1.0 - eps)


def _sin_from_cos(cos_clipped):
    return np.sqrt((1.0 - cos_clipped) * (1.0 + cos_clipped))


def multiplicative_angular_margin(theta, m):
    r"""Evaluate the monotone multiplicative margin :math:`\psi` of L-/A-Softmax.

    .. math::

        \psi(\theta) = (-1)^k \cos(m\theta) - 2k, \qquad
        k = \lfloor m\theta/\pi \rfloor \in [0, \lceil m \rceil - 1]

    :math:`\psi` is continuous and decreasing on :math:`[0, \pi]`, equals
    :math:`\cos\theta` for ``m = 1`` and lies below it for ``m > 1``. A real ``m``
    keeps both properties.

    Parameters
    ----------
    theta : ndarray
        Angles in radians, in ``[0, pi]``.
    m : float
        Multiplicative margin, ``m >= 1``.

    Returns
    -------
    psi : ndarray
        :math:`\psi(\theta)`.
    dpsi_dtheta : ndarray
        Its derivative with respect to ``theta``.

    References
    ----------
    Liu et al., "Large-Margin Softmax Loss for Convolutional Neural Networks",
    ICML 2016, arXiv:1612.02295.
    """
    m_theta = m * theta
    k = np.minimum(np.floor(m_theta / math.pi), math.ceil(m) - 1)
    sign = 1.0 - 2.0 * np.mod(k, 2.0)
    psi = sign * np.cos(m_theta) - 2.0 * k
    dpsi = -sign * m * np.sin(m_theta)
    return psi, dpsi


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
        The closed interval of ``m`` :meth:`check_m` accepts (``inf``: unbounded).
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
    m_domain = (0.0, 0.0)
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
        """Return ``m`` as a float, or raise ValueError if outside the domain."""
        return _real(m, "m")

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


class _NoMargin(Margin):
    def check_m(self, m):
        m = _real(m, "m")
        if m != 0.0:
            raise ValueError(
                f"loss={self.name!r} has no margin: m must be None or 0 (got m={m!r}); "
                "use loss='am-softmax' or 'arcface' for a margin."
            )
        return m

    def target(self, cos_y, m, lam=0.0):
        return cos_y.copy(), np.ones_like(cos_y)


class Softmax(_NoMargin):
    r"""Multinomial logistic regression: :math:`z_j = s\,\langle w_j, x\rangle + b_j`.

    Nothing is normalised; ``s`` (default 1) is an inverse temperature and ``C`` the
    inverse L2 strength, exactly as in :class:`sklearn.linear_model.LogisticRegression`.
    """

    name = "softmax"
    normalizes_X = False
    normalizes_W = False
    default_s = 1.0
    penalized = True
    uses_angle = False
    start = "zeros"
    # Neither a margin nor a useful scale: the L2 strength is the knob.
    search_grid = {"C": tuple(float(c) for c in np.logspace(-2, 2, 9))}
    logits_latex = (r"s\langle w_y, x\rangle", r"s\langle w_j, x\rangle")
    logits_text = ("s <w_y, x>", "s <w_j, x>")
    paper = "multinomial logistic regression"


class NormFace(_NoMargin):
    r"""NormFace: :math:`z_j = s \cos\theta_j`, features and prototypes normalised.

    References
    ----------
    Wang et al., "NormFace: L2 Hypersphere Embedding for Face Verification",
    ACM MM 2017, arXiv:1704.06369.
    """

    name = "normface"
    default_s = 20.0
    default_s_kernel = 100.0  # as AM-Softmax's (same logits but the margin)
    # No margin: the scale s is the only knob; 5 to 80 in factors of sqrt(2).
    search_grid = {"s": tuple(float(s) for s in np.geomspace(5.0, 80.0, 9))}
    logits_latex = (r"s\cos\theta_y", r"s\cos\theta_j")
    logits_text = ("s cos(theta_y)", "s cos(theta_j)")
    paper = "Wang et al. 2017, NormFace, arXiv:1704.06369"


class AMSoftmax(Margin):
    r"""Additive cosine margin (AM-Softmax, CosFace).

    .. math:: f(\cos\theta_y) = \cos\theta_y - m, \qquad 0 \le m \le 1

    References
    ----------
    Wang et al., "Additive Margin Softmax for Face Verification", arXiv:1801.05599;
    Wang et al., "CosFace: Large Margin Cosine Loss", CVPR 2018, arXiv:1801.09414.
    """

    name = "am-softmax"
    default_m = 0.05
    default_s = 30.0
    # Nyström features have small cosines: 3-fold CV over 7 datasets 94.9% at
    # s=30, 95.6% at s=100-600, best test mean at 100
    # (benchmarks/studies/results_kernel_study.md).
    default_s_kernel = 100.0
    # Centred on the measured defaults (benchmarks/studies/results_defaults.md): the
    # scale matters most, margins above 0.1 cost accuracy in this regime.
    search_grid = {"m": (0.0, 0.05, 0.1), "s": (15.0, 30.0, 60.0)}
    m_domain = (0.0, 1.0)
    edge_settings = {"m": 1.0, "s": 100.0}
    logits_latex = (r"s(\cos\theta_y - m)", r"s\cos\theta_j")
    logits_text = ("s (cos(theta_y) - m)", "s cos(theta_j)")
    paper = "Wang et al. 2018, AM-Softmax arXiv:1801.05599, CosFace arXiv:1801.09414"

    def check_m(self, m):
        m = _real(m, "m")
        if not 0.0 <= m <= 1.0:
            raise ValueError(
                f"m must be in [0, 1] for loss='am-softmax' (an additive cosine "
                f"margin; cosines live in [-1, 1]); got m={m!r}."
            )
        return m

    def target(self, cos_y, m, lam=0.0):
        return cos_y - m, np.ones_like(cos_y)


class ArcFace(Margin):
    r"""Additive angular margin (ArcFace), ``m`` in radians.

    .. math::

        f(\cos\theta_y) = (-1)^k \cos(\theta_y + m) - 2k, \qquad
        k = 1[\theta_y + m > \pi]

    For :math:`\theta_y + m \le \pi` this is the paper's :math:`\cos(\theta_y + m)`.
    Beyond, where :math:`\cos(\theta + m)` would start to *increase* again, the
    paper's implementations switch to :math:`\cos\theta - m \sin m`, which jumps at
    :math:`\theta = \pi - m`. We continue with the reflection used by the monotone
    :math:`\psi` of SphereFace instead: continuous, differentiable (slope 0 at the
    junction) and strictly decreasing, which keeps L-BFGS's line search on a smooth
    objective. It is computed without ``arccos``:
    :math:`\cos(\theta + m) = c \cos m - \sqrt{1 - c^2} \sin m`.

    References
    ----------
    Deng et al., "ArcFace: Additive Angular Margin Loss for Deep Face Recognition",
    CVPR 2019, arXiv:1801.07698.
    """

    name = "arcface"
    default_m = 0.05
    default_s = 30.0
    default_s_kernel = 100.0  # as AM-Softmax's (measured there)
    search_grid = {"m": (0.0, 0.05, 0.1), "s": (15.0, 30.0, 60.0)}
    m_domain = (0.0, math.pi / 2)
    edge_settings = {"m": math.pi / 2, "s": 100.0}
    logits_latex = (r"s\cos(\theta_y + m)", r"s\cos\theta_j")
    logits_text = ("s cos(theta_y + m)", "s cos(theta_j)")
    paper = "Deng et al. 2019, ArcFace, arXiv:1801.07698"

    def kink_angles(self, m):
        """Return the junction with the reflection, ``theta = pi - m``."""
        return (math.pi - m,)

    def check_m(self, m):
        m = _real(m, "m")
        if not 0.0 <= m <= math.pi / 2:
            raise ValueError(
                "m must be in [0, pi/2] radians for loss='arcface' (an angle added "
                f"to theta_y; 0.5 rad is the paper's value); got m={m!r}."
            )
        return m

    def target(self, cos_y, m, lam=0.0):
        c = np.clip(cos_y, -1.0, 1.0)
        sin_theta = _sin_from_cos(c)
        cos_m, sin_m = math.cos(m), math.sin(m)
        f = c * cos_m - sin_theta * sin_m
        c_clip = _clip_cos(cos_y)
        df = cos_m + c_clip * (sin_m / _sin_from_cos(c_clip))
        # theta + m > pi  <=>  c < cos(pi - m) = -cos(m): reflect (k = 1).
        beyond = c < -cos_m
        if np.any(beyond):
            f = np.where(beyond, -2.0 - f, f)
            df = np.where(beyond, -df, df)
        return f, df


class _MultiplicativeMargin(Margin):
    r"""Shared part of L-Softmax and A-Softmax: the softened :math:`\psi`.

    .. math::

        f_\lambda(\cos\theta_y) = \frac{\lambda \cos\theta_y + \psi(\theta_y)}
        {1 + \lambda}

    where ``lambda`` is lowered from a large value (plain softmax) to its final
    value by continuation (see :mod:`sklmargin._solver`); ``target`` receives the
    current value as ``lam``.
    """

    default_m = 2.0
    default_s = None
    uses_s = False
    scale_from_norms = True
    uses_lambda = True
    default_lambda = 1.0
    m_domain = (1.0, math.inf)
    edge_settings = {"m": 6.0, "lambda_min": 0.0}

    def kink_angles(self, m):
        """Return where ``m theta`` crosses a multiple of ``pi`` (``psi``'s pieces)."""
        return tuple(k * math.pi / m for k in range(math.floor(m) + 1))

    def check_m(self, m):
        m = _real(m, "m")
        if not m >= 1.0:
            raise ValueError(
                f"m must be >= 1 for loss={self.name!r} (a multiplicative angular "
                f"margin; m=1 is no margin, the papers use integers 2-4); got m={m!r}."
            )
        return m

    def target(self, cos_y, m, lam=0.0):
        c_clip = _clip_cos(cos_y)
        theta = np.arccos(c_clip)
        psi, dpsi_dtheta = multiplicative_angular_margin(theta, m)
        dpsi_dc = dpsi_dtheta / -_sin_from_cos(c_clip)
        c = np.clip(cos_y, -1.0, 1.0)
        f = (lam * c + psi) / (1.0 + lam)
        df = (lam + dpsi_dc) / (1.0 + lam)
        return f, df


class LSoftmax(_MultiplicativeMargin):
    r"""Large-margin softmax: target logit :math:`|w_y||x|\,\psi(\theta_y)`.

    Nothing is normalised; other logits are :math:`\langle w_j, x\rangle`. The L2
    penalty ``C`` applies as in multinomial logistic regression.

    References
    ----------
    Liu et al., "Large-Margin Softmax Loss for Convolutional Neural Networks",
    ICML 2016, arXiv:1612.02295.
    """

    name = "l-softmax"
    normalizes_X = False
    normalizes_W = False
    penalized = True
    scale_depends_on_w = True
    start = "softmax-solution"
    # With lambda -> 0 a linear L-Softmax lets prototypes collapse to w_j = 0
    # (digits, m=2: 29% test accuracy at lambda 0, 79% at 1, 96% at 5-20); m=1.5,
    # lambda=20 ranks best over 12 datasets (benchmarks/studies/results_defaults.md).
    default_m = 1.5
    default_lambda = 20.0
    # No s: the logit scale is |w||x|, which the L2 penalty C bounds.
    search_grid = {"m": (1.5, 2.0, 3.0), "C": (0.1, 1.0, 10.0)}
    logits_latex = (r"\|w_y\|\|x\|\,\psi(\theta_y)", r"\langle w_j, x\rangle")
    logits_text = ("|w_y| |x| psi(theta_y)", "<w_j, x>")
    paper = "Liu et al. 2016, Large-Margin Softmax, arXiv:1612.02295"

    def logit_scale(self, s, norms, w_norm):
        """``|x_i| |w_j|``: the logits are the raw inner products."""
        return norms[:, None] * w_norm.astype(norms.dtype)[None, :]


class ASoftmax(_MultiplicativeMargin):
    r"""Angular softmax (SphereFace): target logit :math:`s|x|\,\psi(\theta_y)`.

    Prototypes are normalised, samples are not: other logits are
    :math:`s|x| \cos\theta_j`. The paper has ``s = 1``: in a deep net ``|x|`` is
    learned and large, while after StandardScaler ``|x|`` is about
    ``sqrt(n_features)``, too small a scale for low-dimensional data, so ``s``
    multiplies it here.

    References
    ----------
    Liu et al., "SphereFace: Deep Hypersphere Embedding for Face Recognition",
    CVPR 2017, arXiv:1704.08063.
    """

    name = "a-softmax"
    normalizes_X = False
    normalizes_W = True
    uses_s = True
    # 3-fold CV over 11 datasets, m=2, lambda=20: mean 85.5% at s=1 (the
    # paper's), 87.7 at 2, 89.0 at 4, 89.8 at 8 (wide inputs such as usps and
    # dna prefer smaller s; see benchmarks/studies/results_defaults.md).
    default_s = 8.0
    default_lambda = 20.0  # SphereFace ends at 5; 20 ranks best here
    # Kernel features have |z| ~ 1, not ~sqrt(n_features): 3-fold CV over 12
    # datasets, 93.4% at s=30 against 90.3% at s=8
    # (benchmarks/studies/results_kernel_defaults.md).
    default_s_kernel = 30.0
    search_grid = {"m": (1.5, 2.0, 3.0), "s": (2.0, 8.0, 30.0)}
    logits_latex = (r"s\|x\|\,\psi(\theta_y)", r"s\|x\|\cos\theta_j")
    logits_text = ("s |x| psi(theta_y)", "s |x| cos(theta_j)")
    paper = "Liu et al. 2017, SphereFace, arXiv:1704.08063"

    def logit_scale(self, s, norms, w_norm):
        """``s |x_i|``: prototypes are unit, samples keep their norm."""
        return (norms * norms.dtype.type(s))[:, None]


_REGISTRY: dict[str, Margin] = {
    margin.name: margin
    for margin in (
        Softmax(),
        NormFace(),
        AMSoftmax(),
        ArcFace(),
        LSoftmax(),
        ASoftmax(),
    )
}
ALIASES = {"cosface": "am-softmax", "sphereface": "a-softmax"}
LOSS_NAMES = tuple(_REGISTRY) + tuple(ALIASES)


def registered_margins():
    """Return every registered :class:`Margin`, in registration order.

    Tests, ``compare`` and the documentation iterate over this instead of
    keeping their own list of loss names.

    Returns
    -------
    tuple of Margin
        One instance per ``loss=`` name (aliases excluded).
    """
    return tuple(_REGISTRY.values())


def get_margin(loss):
    """Return the :class:`Margin` registered under ``loss`` (or an alias).

    Parameters
    ----------
    loss : str or Margin
        A name from :data:`~sklmargin.LOSS_NAMES`, or a margin (returned as is).

    Returns
    -------
    Margin
        The registered instance.

    Raises
    ------
    ValueError
        If ``loss`` is unknown; the message lists the valid names.
    """
    if isinstance(loss, Margin):
        return loss
    key = ALIASES.get(loss, loss) if isinstance(loss, str) else None
    if key not in _REGISTRY:
        raise ValueError(
            f"Unknown loss {loss!r}; valid names are "
            f"{', '.join(map(repr, LOSS_NAMES))}."
        )
    return _REGISTRY[key]
