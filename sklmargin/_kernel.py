"""Margin softmax over an approximate RBF feature map.

The RBF kernel's feature space lies on the unit sphere (``|z(x)|^2 = k(x, x) =
1``), exactly where cosine-margin losses work: the linear estimator's objective
and solver, run on random Fourier (or Nystroem) features, give a kernel machine
whose fit and predict cost grows linearly with the number of samples.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy import sparse
from sklearn.kernel_approximation import Nystroem

from ._compat import Interval, StrOptions
from ._estimators import BaseMarginSoftmax
from ._features import RandomFourierFeatures, _weighted_variance


def _distinct_weighted_rows(X, sample_weight):
    """Distinct rows of ``X`` that carry positive weight, in sorted order.

    Nystroem draws its basis from the rows it is given, so repeated rows would
    change the basis: drawing from the distinct positive-weight rows makes an
    integer weight equivalent to repeating a row, and the sort makes the basis
    independent of row order.
    """
    rows = X[sample_weight > 0]
    if sparse.issparse(rows):
        rows = rows.toarray()
    return np.unique(rows, axis=0)


class KernelMarginSoftmaxClassifier(BaseMarginSoftmax):
    r"""Margin-softmax classifier over random features of the RBF kernel.

    Fits a feature map approximating :math:`k(x, x') = \exp(-\gamma |x - x'|^2)`
    on the training data, then trains :class:`MarginSoftmaxClassifier`'s
    objective on the mapped rows :math:`z(x)`. Random Fourier features satisfy
    :math:`|z(x)|^2 \approx k(x, x) = 1`: they already live near the unit sphere,
    where the cosine losses (NormFace, AM-Softmax, ArcFace) are at home.

    Parameters
    ----------
    loss : str, default="am-softmax"
        As in :class:`MarginSoftmaxClassifier`.
    m : float, default=None
        Margin; None means the loss's default.
    s : float, default=None
        Logit scale; None means the loss's default (for A-Softmax 30 here, not
        the linear estimator's 8: random features have ``|z(x)| ~= 1``).
    t : float, default=1.0
        SV-Softmax parameter, ``t >= 1``; 1 is off.
    C : float, default=1.0
        Inverse L2 strength of the losses that depend on ``|w_j|`` (softmax,
        L-Softmax).
    lambda_min : float, default=None
        Final softening of L-/A-Softmax.
    gamma : "scale" or float, default="scale"
        RBF kernel width; "scale" is ``1 / (n_features * Var(X))`` with the
        sample-weighted variance, resolved in ``fit`` (see ``feature_map_``).
    n_components : int, default=1000
        Width of the feature map.
    kernel_approximation : {"orf", "rff", "nystroem"}, default="orf"
        Orthogonal random features, i.i.d. random Fourier features (both with
        [cos, sin] pairs, :class:`RandomFourierFeatures`), or scikit-learn's
        :class:`~sklearn.kernel_approximation.Nystroem` (basis drawn from the
        distinct rows with positive weight).
    constant_feature : float or None, default=None
        As in :class:`MarginSoftmaxClassifier`, on the mapped features. Off by
        default: random Fourier features already have ``|z(x)| ~= 1``.
    fit_intercept : bool, default=True
    class_weight : dict or "balanced", default=None
    max_iter : int, default=1000
    tol : float, default=1e-4
    warm_start : bool, default=False
    random_state : int, RandomState instance or None, default=None
        Seeds the feature map (and degenerate prototype starts).
    verbose : int, default=0

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_classes, n_components)
        Class prototypes in feature space.
    constant_coef_ : ndarray of shape (n_classes,)
    constant_feature_ : float
    intercept_ : ndarray of shape (n_classes,)
    feature_map_ : RandomFourierFeatures or Nystroem
        The fitted feature map.
    n_iter_ : int
    m_, s_ : float
        The margin and scale used.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)

    See Also
    --------
    MarginSoftmaxClassifier : The same losses on the raw features.
    RandomFourierFeatures : The feature map.
    sklearn.svm.SVC : Exact kernel machine, quadratic in the number of samples.

    References
    ----------
    .. [1] Rahimi and Recht, "Random Features for Large-Scale Kernel Machines",
       NeurIPS 2007.
    .. [2] Yu et al., "Orthogonal Random Features", NeurIPS 2016,
       arXiv:1610.09072.
    .. [3] Wang et al., "CosFace", arXiv:1801.09414.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sklmargin import KernelMarginSoftmaxClassifier
    >>> X, y = make_moons(n_samples=300, noise=0.1, random_state=0)
    >>> clf = KernelMarginSoftmaxClassifier(n_components=200, random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.95
    True
    """

    # Mapped rows have |z| ~ 1: losses whose scale involves |x| (A-Softmax)
    # take their kernel default s (Margin.default_s_kernel).
    _unit_norm_features = True

    _parameter_constraints: dict = {
        **BaseMarginSoftmax._parameter_constraints,
        "gamma": [StrOptions({"scale"}), Interval(Real, 0, None, closed="neither")],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "kernel_approximation": [StrOptions({"orf", "rff", "nystroem"})],
    }

    def __init__(
        self,
        loss="am-softmax",
        m=None,
        s=None,
        t=1.0,
        C=1.0,
        lambda_min=None,
        gamma="scale",
        n_components=1000,
        kernel_approximation="orf",
        constant_feature=None,
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
        self.gamma = gamma
        self.n_components = n_components
        self.kernel_approximation = kernel_approximation
        self.constant_feature = constant_feature
        self.fit_intercept = fit_intercept
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose

    def _fit_feature_map(self, X, sample_weight):
        if self.kernel_approximation == "nystroem":
            if self.gamma == "scale":
                variance = _weighted_variance(X, sample_weight)
                gamma = 1.0 / (X.shape[1] * variance) if variance > 0 else 1.0
            else:
                gamma = float(self.gamma)
            basis = _distinct_weighted_rows(X, sample_weight)
            feature_map = Nystroem(
                kernel="rbf",
                gamma=gamma,
                n_components=min(self.n_components, basis.shape[0]),
                random_state=self.random_state,
            ).fit(basis.astype(X.dtype, copy=False))
        else:
            feature_map = RandomFourierFeatures(
                gamma=self.gamma,
                n_components=self.n_components,
                orthogonal=self.kernel_approximation == "orf",
                random_state=self.random_state,
            ).fit(X, sample_weight=sample_weight)
        self.feature_map_ = feature_map
        return self._map_features(X)

    def _map_features(self, X):
        features = self.feature_map_.transform(X)
        # Nystroem returns float64 for float32 input: keep the caller's dtype.
        return np.asarray(features, dtype=X.dtype)
