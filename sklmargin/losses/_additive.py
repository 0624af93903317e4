r"""Margins that add to the angle or the cosine, and the margin-free ones.

.. math::

    \text{softmax: } s\langle w_y, x\rangle, \quad
    \text{NormFace: } s\cos\theta_y, \quad
    \text{AM-Softmax: } s(\cos\theta_y - m), \quad
    \text{ArcFace: } s\cos(\theta_y + m)

with the other logits :math:`s\cos\theta_j` (softmax: :math:`s\langle w_j,
x\rangle`). ``MARGINS`` at the end lists the registered instances.
"""

from __future__ import annotations

import math

import numpy as np

from .._utils.array_api import get_namespace
from ._base import Margin, _clip_cos, _sin_from_cos


class _NoMargin(Margin):
    m_domain = (0.0, 0.0)
    m_meaning = "it has no margin: use loss='am-softmax' or 'arcface' for one"

    def target(self, cos_y, m, lam=0.0):
        xp, _ = get_namespace(cos_y)
        copy = cos_y.copy() if xp is np else xp.asarray(cos_y, copy=True)
        return copy, xp.ones_like(cos_y)


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
    # Nyström features have small cosines: s=30 under-fits them, and CV
    # accuracy is flat from s=100 up (the benchmarks page, "Where the defaults
    # come from").
    default_s_kernel = 100.0
    # Centred on the measured defaults: the scale matters most, margins above
    # 0.1 cost accuracy in this regime.
    search_grid = {"m": (0.0, 0.05, 0.1), "s": (15.0, 30.0, 60.0)}
    m_domain = (0.0, 1.0)
    m_meaning = "an additive cosine margin; cosines live in [-1, 1]"
    edge_settings = {"m": 1.0, "s": 100.0}
    logits_latex = (r"s(\cos\theta_y - m)", r"s\cos\theta_j")
    logits_text = ("s (cos(theta_y) - m)", "s cos(theta_j)")
    paper = "Wang et al. 2018, AM-Softmax arXiv:1801.05599, CosFace arXiv:1801.09414"

    def target(self, cos_y, m, lam=0.0):
        return cos_y - m, get_namespace(cos_y)[0].ones_like(cos_y)


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
    m_domain_text = "in [0, pi/2] radians"
    m_meaning = "an angle added to theta_y; 0.5 rad is the paper's value"
    edge_settings = {"m": math.pi / 2, "s": 100.0}
    logits_latex = (r"s\cos(\theta_y + m)", r"s\cos\theta_j")
    logits_text = ("s cos(theta_y + m)", "s cos(theta_j)")
    paper = "Deng et al. 2019, ArcFace, arXiv:1801.07698"

    def kink_angles(self, m):
        """Return the junction with the reflection, ``theta = pi - m``."""
        return (math.pi - m,)

    def target(self, cos_y, m, lam=0.0):
        xp, _ = get_namespace(cos_y)
        c = xp.clip(cos_y, -1.0, 1.0)
        sin_theta = _sin_from_cos(c)
        cos_m, sin_m = math.cos(m), math.sin(m)
        f = c * cos_m - sin_theta * sin_m
        c_clip = _clip_cos(cos_y)
        df = cos_m + c_clip * (sin_m / _sin_from_cos(c_clip))
        # theta + m > pi  <=>  c < cos(pi - m) = -cos(m): reflect (k = 1).
        beyond = c < -cos_m
        if xp.any(beyond):
            f = xp.where(beyond, -2.0 - f, f)
            df = xp.where(beyond, -df, df)
        return f, df


#: Registered under their ``loss=`` names, in this order (see ``_registry``).
MARGINS = (Softmax(), NormFace(), AMSoftmax(), ArcFace())
