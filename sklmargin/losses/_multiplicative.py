r"""Multiplicative angular margins: L-Softmax and A-Softmax (SphereFace).

The target logit uses :math:`\psi(\theta) = (-1)^k\cos(m\theta) - 2k`,
:math:`k = \lfloor m\theta/\pi\rfloor` (monotone on :math:`[0, \pi]`),
softened by the papers' :math:`\lambda` schedule:
:math:`f_\lambda = (\lambda\cos\theta + \psi(\theta)) / (1 + \lambda)`.
L-Softmax's scale is :math:`|w_j||x|`, A-Softmax's :math:`s|x|` with unit
prototypes. ``MARGINS`` at the end lists the registered instances.
"""

from __future__ import annotations

import math

import numpy as np

from .._utils.array_api import get_namespace
from ._base import Margin, _as_dtype, _clip_cos, _sin_from_cos


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
    xp, _ = get_namespace(theta)
    m_theta = m * theta
    # clip and ``%`` take a Python float in every array API standard version
    # and namespace (``minimum``/``remainder`` need arrays before 2024.12, and
    # torch.minimum refuses a float); the same values as np.minimum/np.mod.
    k = xp.clip(xp.floor(m_theta / math.pi), None, float(math.ceil(m) - 1))
    sign = 1.0 - 2.0 * (k % 2.0)
    psi = sign * xp.cos(m_theta) - 2.0 * k
    dpsi = -sign * m * xp.sin(m_theta)
    return psi, dpsi


class _MultiplicativeMargin(Margin):
    r"""Shared part of L-Softmax and A-Softmax: the softened :math:`\psi`.

    .. math::

        f_\lambda(\cos\theta_y) = \frac{\lambda \cos\theta_y + \psi(\theta_y)}
        {1 + \lambda}

    where ``lambda`` is lowered from a large value (plain softmax) to its final
    value by continuation (see :mod:`sklmargin.solver._lbfgs`); ``target`` receives the
    current value as ``lam``.
    """

    default_m = 2.0
    default_s = None
    uses_s = False
    scale_from_norms = True
    uses_lambda = True
    default_lambda = 1.0
    m_domain = (1.0, math.inf)
    m_meaning = (
        "a multiplicative angular margin; m=1 is no margin, the papers use integers 2-4"
    )
    edge_settings = {"m": 6.0, "lambda_min": 0.0}

    def kink_angles(self, m):
        """Return where ``m theta`` crosses a multiple of ``pi`` (``psi``'s pieces)."""
        return tuple(k * math.pi / m for k in range(math.floor(m) + 1))

    def target(self, cos_y, m, lam=0.0):
        xp, _ = get_namespace(cos_y)
        c_clip = _clip_cos(cos_y)
        # NumPy < 2 has no np.acos.
        theta = np.arccos(c_clip) if xp is np else xp.acos(c_clip)
        psi, dpsi_dtheta = multiplicative_angular_margin(theta, m)
        dpsi_dc = dpsi_dtheta / -_sin_from_cos(c_clip)
        c = xp.clip(cos_y, -1.0, 1.0)
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
    # With lambda -> 0 a linear L-Softmax lets prototypes collapse to w_j = 0,
    # so the schedule stops at a softening that keeps them apart; m=1.5,
    # lambda=20 ranks best in the measurements that chose the linear defaults
    # (the benchmarks page, "Where the defaults come from").
    default_m = 1.5
    default_lambda = 20.0
    # No s: the logit scale is |w||x|, which the L2 penalty C bounds.
    search_grid = {"m": (1.5, 2.0, 3.0), "C": (0.1, 1.0, 10.0)}
    logits_latex = (r"\|w_y\|\|x\|\,\psi(\theta_y)", r"\langle w_j, x\rangle")
    logits_text = ("|w_y| |x| psi(theta_y)", "<w_j, x>")
    paper = "Liu et al. 2016, Large-Margin Softmax, arXiv:1612.02295"

    def logit_scale(self, s, norms, w_norm):
        """``|x_i| |w_j|``: the logits are the raw inner products."""
        return norms[:, None] * _as_dtype(w_norm, norms.dtype)[None, :]


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
    # CV accuracy grows with s up to 8 on standardised rows (the paper's s=1
    # is far too small there; wide inputs prefer a smaller s): the benchmarks
    # page, "Where the defaults come from".
    default_s = 8.0
    default_lambda = 20.0  # SphereFace ends at 5; 20 ranks best here
    # Kernel features have |z| ~ 1, not ~sqrt(n_features), so the kernel
    # default is larger (same page).
    default_s_kernel = 30.0
    search_grid = {"m": (1.5, 2.0, 3.0), "s": (2.0, 8.0, 30.0)}
    logits_latex = (r"s\|x\|\,\psi(\theta_y)", r"s\|x\|\cos\theta_j")
    logits_text = ("s |x| psi(theta_y)", "s |x| cos(theta_j)")
    paper = "Liu et al. 2017, SphereFace, arXiv:1704.08063"

    def logit_scale(self, s, norms, w_norm):
        """``s |x_i|``: prototypes are unit, samples keep their norm."""
        if isinstance(norms, np.ndarray):
            return (norms * norms.dtype.type(s))[:, None]
        return (norms * float(s))[:, None]  # a Python float keeps the dtype


#: Registered under their ``loss=`` names, in this order (see ``_registry``).
MARGINS = (LSoftmax(), ASoftmax())
