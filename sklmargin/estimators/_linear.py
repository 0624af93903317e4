"""MarginSoftmaxClassifier: the margin softmax on the raw features."""

from __future__ import annotations

import textwrap

from .._utils.docstrings import fill_docstring
from ..losses._registry import loss_table_text
from ._base import BaseMarginSoftmax
from ._docs import fill_shared_docs


@fill_shared_docs
class MarginSoftmaxClassifier(BaseMarginSoftmax):
    r"""Linear classifier trained with a margin-based softmax loss by L-BFGS.

    Each class ``j`` has a prototype ``w_j`` and a bias ``b_j``. Training
    minimises the weighted mean cross-entropy of *margin* logits ``z``, in
    which the true class must win by a margin:
    ``sum_i sw_i * l_i / sum_i sw_i`` with ``l_i = -log softmax(z_i)[y_i]``,

    .. math::

        \min_{W, b}\; \frac{\sum_i w_i\, \ell_i}{\sum_i w_i}, \qquad
        \ell_i = -\log \frac{e^{z_{iy_i}}}{\sum_j e^{z_{ij}}}

    where ``theta_j`` is the angle between ``x`` and ``w_j``:

    LOSS_TABLE

    (plus ``b_j`` on every logit when ``fit_intercept``), with
    ``psi(theta) = (-1)^k cos(m theta) - 2k``, ``k = floor(m theta / pi)``.
    ``t > 1`` turns any loss into its SV-Softmax variant: a non-target whose
    cosine beats the margin-adjusted target gets
    ``z_ik += s (t - 1) (cos(theta_ik) + 1)``.

    The margin is used for training only: :meth:`decision_function` returns the
    margin-free logits (``s cos(theta_j) + b_j``, ``s |x| cos(theta_j) + b_j``
    or ``<w_j, x> + b_j``), :meth:`predict` their argmax and
    :meth:`predict_proba` their softmax, so all three agree.

    Parameters
    ----------
    loss : str, default="am-softmax"
        ``"softmax"``, ``"normface"``, ``"am-softmax"`` (alias ``"cosface"``),
        ``"arcface"``, ``"l-softmax"`` or ``"a-softmax"`` (alias
        ``"sphereface"``).
    m : float, default=None
        Margin; None means the loss's default: 0.05 for AM-Softmax and ArcFace, 1.5
        for L-Softmax, 2 for A-Softmax (the user guide's table of defaults, "What
        each loss normalises"). When ``s=None`` raises the scale above the loss's
        default ``s_0`` (see ``s``), the default margin follows it as ``m s_0 / s``,
        so that ``s m``, the margin in logits, stays the default's. Why: a cosine
        margin held constant while ``s`` grows becomes a margin of many logits that
        large data do not support, and the raised head then fits worse than without
        it. A margin given as a number is used as given at every scale. AM-Softmax:
        additive cosine margin in [0, 1]; ArcFace: additive angle in radians, in [0,
        pi/2]; L-/A-Softmax: multiplicative angular margin, a real >= 1 (the papers
        use integers); softmax and NormFace: must be None or 0.
    s : float, default=None
        Logit scale (> 0) of the losses that normalise the features. None
        resolves it from the training rows, starting at the loss's default
        (20 for NormFace, 30 for AM-Softmax and ArcFace, the measured choice
        on small data): a pilot fit on 80 % of the rows (the held-out fifth
        chosen by the rows' content, so independent of their order) is scored
        on the rest, and if its held-out probabilities are under-confident
        (the temperature that fits them is ``T >= 1.5``) the scale becomes
        ``s T`` (``T`` cut at 8, then asked again, at most 3 pilots). Why: a
        fixed scale caps how sharp the cosine head can be, which is right for
        a few thousand rows but underfits 10^5-10^6 rows of a nearly separable
        problem (frozen embeddings), where ``s`` then grows with the rows.
        Below 200 held-out rows (or 5 per class), with SV-Softmax (``t > 1``),
        with ``warm_start`` (which keeps the fitted ``s_``) and for Dask input
        the default is used as is. The final model is fitted on all rows at
        the resolved scale and margin (see ``m``), reported in ``s_`` and
        ``m_``: ``s=clf.s_, m=clf.m_`` refits it.
        For softmax it is an inverse temperature (default 1);
        for A-Softmax it multiplies the sample norm ``|x|`` (default 8; the
        paper's is 1). L-Softmax takes its scale from the norms and requires None.
    t : float, default=1.0
        SV-Softmax parameter, ``t >= 1``; 1 is off.
    C : float, default=1.0
        Inverse L2 strength, ``1 / (2 C sum(sample_weight)) |W|^2`` as in
        :class:`~sklearn.linear_model.LogisticRegression`. Applies to the losses
        whose logits depend on ``|w_j|`` (softmax, L-Softmax); the cosine losses
        are scale-invariant in ``W`` and are regularised through ``s`` and ``m``.
    lambda_min : float, default=None
        Final softening of L-/A-Softmax,
        ``f = (lambda cos(theta_y) + psi(theta_y)) / (1 + lambda)``.
        Training lowers ``lambda`` from 1000 to ``lambda_min`` through a sequence
        of warm-started problems. None means the loss's default, 20 for both;
        must be None for the other losses.
    constant_feature : float or None, default=1.0
        For the losses that normalise the samples (NormFace, AM-Softmax,
        ArcFace): a synthetic feature of value ``c`` is appended to every sample
        before normalisation, ``x -> [x, c] / |[x, c]|``, with ``c`` this value
        times the (weighted) root-mean-square feature. The map is one-to-one (the
        inverse gnomonic projection onto a hemisphere), so the classifier keeps
        the information in ``|x|`` that plain normalisation discards; on by
        default because that information often separates classes (the user
        guide's section on the lift shows it on iris). The prototypes gain one
        coordinate, stored in ``constant_coef_``. None or 0 turns it off.
        Ignored by the other losses.
    fit_intercept : bool, default=True
        Add a per-class bias to every logit. It carries class priors (a pure
        cosine classifier's regions are cones through the origin) and makes
        ``class_weight`` effective.
    class_weight : dict or "balanced", default=None
        Weights of classes, multiplied into ``sample_weight``; "balanced" uses
        ``sum(sample_weight) / (n_classes * class_total)`` with weighted totals.
    MAX_ITER
    tol : float, default=1e-4
        Stop when the largest absolute gradient entry is below ``tol * s`` (``tol``
        for L-Softmax). The gradient is proportional to the logit scale ``s``, so
        scaling the tolerance with it keeps its meaning when ``s`` is tuned. For the
        losses that normalise the rows, a fit above the loss's default scale
        ``s_0`` whose margin in logits is at most the default's
        (``s m <= s_0 m_0``: the raised default, ``m=0``, NormFace) stops at
        ``tol * s_0``. Why:
        on wide unit rows (embeddings) its gradient at the class-mean start is
        already below ``tol * s``, so the sharper model a large scale stands for was
        not fitted; a larger margin keeps that gradient large. For the smooth cosine
        losses (AM-Softmax, NormFace: prototypes normalised, no kink, no
        support-vector rounds) L-BFGS runs with the biases scaled by ``s / sqrt(d)``
        and stops when ``|w_j| dF/dw_j`` and ``s / sqrt(d) dF/db`` are below that
        test: a fit that the data decides rather than round-off, so that a last-bit
        change of ``X`` or a row permutation leaves the labels alone (measured on
        the benchmarks page, "Label stability").
    warm_start : bool, default=False
        Start from the previous solution (skips the lambda schedule).
    random_state : int, RandomState instance or None, default=None
        Used only to give a random starting direction to a prototype whose class
        mean is zero (and to nudge a collapsed L-Softmax prototype).
    verbose : int, default=0
        Print one line per L-BFGS run (>1 also one line per iteration, with
        its objective).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_classes, n_features)
        Class prototypes; for the losses that normalise ``W`` the rows of
        ``[coef_, constant_coef_]`` have unit norm.
    constant_coef_ : ndarray of shape (n_classes,)
        The prototypes' coordinate along the constant feature (zeros when it is
        not used).
    constant_feature_ : float
        The value ``c`` of the constant feature (0.0 when not used).
    intercept_ : ndarray of shape (n_classes,)
    n_iter_ : int
        L-BFGS iterations over all runs.
    m_ : float
        The margin used: ``m``, or with ``m=None`` the loss's default, which
        for the cosine losses follows a raised ``s_`` (see ``m``).
    s_ : float or None
        The logit scale used: ``s``, or with ``s=None`` the loss's default,
        for the cosine losses resolved from the training rows (see ``s``);
        None for L-Softmax, whose logits take their scale from the norms. For
        A-Softmax it is the factor on the sample norm.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined when ``X`` has string feature names.

    See Also
    --------
    KernelMarginSoftmaxClassifier : The same losses over kernel features
        (Nyström by default, or random Fourier features).
    sklearn.linear_model.LogisticRegression : ``loss="softmax"`` without margin.
    sklearn.svm.LinearSVC : Hinge-loss linear classifier.

    References
    ----------
    .. [1] Wang et al., "NormFace", arXiv:1704.06369.
    .. [2] Wang et al., "Additive Margin Softmax for Face Verification",
       arXiv:1801.05599; "CosFace", arXiv:1801.09414.
    .. [3] Deng et al., "ArcFace", arXiv:1801.07698.
    .. [4] Liu et al., "Large-Margin Softmax Loss", arXiv:1612.02295.
    .. [5] Liu et al., "SphereFace", arXiv:1704.08063.
    .. [6] Wang et al., "Support Vector Guided Softmax Loss", arXiv:1812.11317.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklmargin import MarginSoftmaxClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = make_pipeline(StandardScaler(), MarginSoftmaxClassifier(loss="arcface"))
    >>> clf.fit(X, y).score(X, y) > 0.9
    True
    """

    _scale_from_data = True

    def __init__(
        self,
        loss="am-softmax",
        m=None,
        s=None,
        t=1.0,
        C=1.0,
        lambda_min=None,
        constant_feature=1.0,
        fit_intercept=True,
        class_weight=None,
        max_iter=1000,
        tol=1e-4,
        warm_start=False,
        random_state=None,
        verbose=0,
    ):
        self.loss = loss
        self.m = m
        self.s = s
        self.t = t
        self.C = C
        self.lambda_min = lambda_min
        self.constant_feature = constant_feature
        self.fit_intercept = fit_intercept
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose


# The table of losses in the docstring is the registry's (one row per loss).
fill_docstring(
    MarginSoftmaxClassifier,
    LOSS_TABLE=textwrap.indent(loss_table_text(), "    ") + "\n",
)
