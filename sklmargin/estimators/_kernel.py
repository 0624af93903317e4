"""Margin softmax over an approximate RBF feature map.

The RBF kernel's feature space lies on the unit sphere (``|z(x)|^2 = k(x, x) =
1``), exactly where cosine-margin losses work: the linear estimator's objective
and solver, run on Nyström or random Fourier features, give a kernel machine
whose fit and predict cost grows linearly with the number of samples.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy import sparse

from .._utils.compat import Interval, StrOptions
from .._utils.legacy_state import fitted_dtype_name
from ..features._centres import CENTRE_SELECTORS
from ..features._fourier import RandomFourierFeatures
from ..features._nystroem import NystroemFeatures
from ._base import BaseMarginSoftmax

#: compute_dtype="auto" computes in float32 from this many mapped entries on.
_FLOAT32_ENTRIES = 2**20


class KernelMarginSoftmaxClassifier(BaseMarginSoftmax):
    r"""Margin-softmax classifier over features of the RBF kernel.

    Fits a feature map approximating ``k(x, x') = exp(-gamma |x - x'|^2)``
    on the training data -- by default the Nyström map on 1000 centres drawn
    among the training rows (:class:`NystroemFeatures`) -- then trains
    :class:`MarginSoftmaxClassifier`'s objective on the mapped rows
    ``z(x)``. Kernel features satisfy ``|z(x)|^2 ~= k(x, x) = 1``:
    they already live near the unit sphere, where the cosine losses (NormFace,
    AM-Softmax, ArcFace) are at home. With ``n_components`` at least the number
    of distinct training rows every row is a centre: the exact kernel machine.

    Parameters
    ----------
    loss : str, default="am-softmax"
        As in :class:`MarginSoftmaxClassifier`.
    m : float, default=None
        Margin; None means the loss's default, as in
        :class:`MarginSoftmaxClassifier` (0.05 for AM-Softmax and ArcFace).
    s : float, default=None
        Logit scale; None means the loss's kernel default: 100 for NormFace,
        AM-Softmax and ArcFace (kernel features have small cosines: s=30
        under-fits, 3-fold CV 94.9% vs 95.6% over 7 datasets,
        ``benchmarks/studies/results_kernel_study.md``), 30 for A-Softmax (not the
        linear estimator's 8: ``|z(x)| ~= 1`` here).
    t : float, default=1.0
        SV-Softmax parameter, ``t >= 1``; 1 is off.
    C : float, default=1.0
        Inverse L2 strength of the losses that depend on ``|w_j|`` (softmax,
        L-Softmax).
    lambda_min : float, default=None
        Final softening of L-/A-Softmax; None means 20.
    gamma : "scale" or float, default="scale"
        RBF kernel width; "scale" is ``1 / (n_features * Var(X))`` with the
        sample-weighted variance, resolved in ``fit`` (see ``feature_map_``).
        Measured: "scale" ties 2 x "scale" and beats a median-distance rule.
    n_components : int, default=1000
        Width of the feature map (number of centres for Nyström). 2000 gains
        0.2 points of CV accuracy on average for 3.4 times the fit.
    kernel_approximation : {"nystroem", "orf", "rff"}, default="nystroem"
        :class:`NystroemFeatures` (centres chosen among the training rows,
        float32 end to end), orthogonal random features or i.i.d. random
        Fourier features (both :class:`RandomFourierFeatures`). Nyström is the
        most accurate at equal width on every dataset measured.
    centres : {"uniform", "kmeans", "rpcholesky"}, default="uniform"
        How Nyström picks its centres (weighted, among distinct rows): uniform
        draws, weighted k-means, or randomly pivoted Cholesky. Equal within
        noise at 1000 centres on average; k-means is +0.4-0.6 points on letter.
        Ignored by the random Fourier maps.
    constant_feature : float or None, default=None
        As in :class:`MarginSoftmaxClassifier`, on the mapped features. Off by
        default: kernel features already have ``|z(x)| ~= 1``.
    fit_intercept : bool, default=True
    class_weight : dict or "balanced", default=None
    max_iter : int, default=1000
    tol : float, default=1e-4
    warm_start : bool, default=False
    compute_dtype : {"auto", "float32", "float64"}, default="auto"
        Precision of the feature map and of the training objective, whatever
        the input's dtype. The fit is two GEMMs of the ``n x M`` mapped rows per
        L-BFGS evaluation, and float32 halves their cost and memory; the L-BFGS
        state, the target-logit hook and the Nyström factorisation stay in
        float64. Measured on letter (15,000 rows, 1000 centres, one thread):
        fit 3.6 s -> 2.1 s CPU at the same accuracy (94.88% -> 94.92%). "auto"
        computes in float32 when the mapped training rows have at least
        2**20 entries (``n_samples * n_components``), and in the input's
        dtype below: there the GEMMs take about a millisecond and float64's
        digits come free -- sample weights then equal repeated rows to
        float64 round-off, where float32 gives ~1e-6 in probabilities.
        Predictions are computed in the dtype chosen (``compute_dtype_``) and
        returned in the input's.
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
    feature_map_ : NystroemFeatures or RandomFourierFeatures
        The fitted feature map.
    compute_dtype_ : {"float32", "float64"}
        The precision of the map and the fit (``compute_dtype`` resolved).
    n_iter_ : int
    m_, s_ : float
        The margin and scale used.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)

    See Also
    --------
    MarginSoftmaxClassifier : The same losses on the raw features.
    NystroemFeatures : The default feature map.
    RandomFourierFeatures : The random Fourier feature maps.
    sklearn.svm.SVC : Exact kernel machine, quadratic in the number of samples.

    References
    ----------
    .. [1] Rahimi and Recht, "Random Features for Large-Scale Kernel Machines",
       NeurIPS 2007.
    .. [2] Yu et al., "Orthogonal Random Features", NeurIPS 2016,
       arXiv:1610.09072.
    .. [3] Wang et al., "CosFace", arXiv:1801.09414.
    .. [4] Williams and Seeger, "Using the Nyström Method to Speed Up Kernel
       Machines", NeurIPS 2001.
    .. [5] Chen, Epperly, Tropp and Webber, "Randomly pivoted Cholesky",
       arXiv:2207.06503.

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
        "kernel_approximation": [StrOptions({"nystroem", "orf", "rff"})],
        "centres": [StrOptions(set(CENTRE_SELECTORS))],
        "compute_dtype": [StrOptions({"auto", "float32", "float64"})],
    }

    # Models saved before these existed (sklmargin._utils.legacy_state):
    # ``compute_dtype``/``compute_dtype_`` came with issue 17 (d6c350a), before
    # which the map and the fit ran in the training rows' dtype (coef_'s), and
    # a refit of such a model does so again; ``centres`` (its __init__
    # default, "uniform") with the Nyström map.
    _legacy_params = {"compute_dtype": lambda state: fitted_dtype_name(state) or "auto"}
    _legacy_fitted = {"compute_dtype_": fitted_dtype_name}

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
        kernel_approximation="nystroem",
        centres="uniform",
        constant_feature=None,
        fit_intercept=True,
        class_weight=None,
        max_iter=1000,
        tol=1e-4,
        warm_start=False,
        compute_dtype="auto",
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
        self.centres = centres
        self.constant_feature = constant_feature
        self.fit_intercept = fit_intercept
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.compute_dtype = compute_dtype
        self.random_state = random_state
        self.verbose = verbose

    def _resolve_compute_dtype(self, n_samples, input_dtype):
        """Return the dtype the map and the fit run in (see ``compute_dtype``)."""
        if self.compute_dtype != "auto":
            return np.dtype(self.compute_dtype)
        if n_samples * self.n_components >= _FLOAT32_ENTRIES:
            return np.dtype(np.float32)
        return np.dtype(input_dtype)

    def _map_input(self, X, dtype):
        """``X`` as the feature map takes it: ``dtype``, dense for Nyström."""
        X = X.astype(dtype, copy=False)
        if sparse.issparse(X) and self.kernel_approximation == "nystroem":
            # The Nyström map works on dense rows (centres are rows of X).
            X = X.toarray()
        return X

    def _new_feature_map(self):
        if self.kernel_approximation == "nystroem":
            return NystroemFeatures(
                n_components=self.n_components,
                gamma=self.gamma,
                centres=self.centres,
                random_state=self.random_state,
            )
        return RandomFourierFeatures(
            gamma=self.gamma,
            n_components=self.n_components,
            orthogonal=self.kernel_approximation == "orf",
            random_state=self.random_state,
        )

    def _fitted_map(self, X, sample_weight):
        """Fit a new map on ``X``: ``(map, dtype, X as the map takes it)``."""
        dtype = self._resolve_compute_dtype(X.shape[0], X.dtype)
        X = self._map_input(X, dtype)
        feature_map = self._new_feature_map().fit(X, sample_weight=sample_weight)
        return feature_map, dtype, X

    def _fit_feature_map(self, X, sample_weight):
        premapped = self.__dict__.pop("_premapped", None)
        if premapped is not None:  # a CV fold's map and rows (_fit_on_features)
            self.feature_map_, features = premapped
            self.compute_dtype_ = features.dtype.name
            # fit normalises its rows in place; the fold's rows serve every
            # point of the path.
            return features.copy()
        self.feature_map_, dtype, X = self._fitted_map(X, sample_weight)
        self.compute_dtype_ = dtype.name
        return self.feature_map_.transform(X)

    def _map_features(self, X):
        return self.feature_map_.transform(self._map_input(X, self.compute_dtype_))

    def _fit_feature_map_namespace(self, X, sample_weight, xp, device):
        from .._utils.array_api import numpy_dtype
        from ..features._namespace import transform_namespace

        premapped = self.__dict__.pop("_premapped", None)
        if premapped is not None:  # a CV fold's map and rows (_fit_on_features)
            self.feature_map_, features = premapped
            self.compute_dtype_ = numpy_dtype(features.dtype).name
            # No copy, unlike the NumPy path: the namespace fit prepares its
            # rows into new arrays and leaves these as they are.
            return features
        self.feature_map_, X = self._fitted_map_namespace(X, sample_weight, xp, device)
        self.compute_dtype_ = numpy_dtype(X.dtype).name
        return transform_namespace(self.feature_map_, X, xp, device)

    def _fitted_map_namespace(self, X, sample_weight, xp, device):
        """:meth:`_fitted_map` on array API rows: ``(map, X in its dtype)``."""
        from .._utils.array_api import numpy_dtype
        from ..features._namespace import fit_map_namespace

        dtype = self._resolve_compute_dtype(X.shape[0], numpy_dtype(X.dtype))
        # No copy when X has the dtype already (the standard's astype copies).
        X = xp.astype(X, getattr(xp, dtype.name), copy=False)
        feature_map = fit_map_namespace(
            self._new_feature_map(), X, sample_weight, xp, device
        )
        return feature_map, X

    def _map_features_namespace(self, X, xp, device):
        from ..features._namespace import transform_namespace

        X = xp.astype(X, getattr(xp, self.compute_dtype_), copy=False)
        return transform_namespace(self.feature_map_, X, xp, device)

    def _fold_features(self, X_train, sample_weight, X_test):
        feature_map, dtype, X_train = self._fitted_map(X_train, sample_weight)
        return (
            feature_map,
            feature_map.transform(X_train),
            feature_map.transform(self._map_input(X_test, dtype)),
        )

    def _fold_features_namespace(self, X_train, sample_weight, X_test, xp, device):
        """:meth:`_fold_features` on array API rows, mapped on their device."""
        from ..features._namespace import transform_namespace

        feature_map, X_train = self._fitted_map_namespace(
            X_train, sample_weight, xp, device
        )
        X_test = xp.astype(X_test, X_train.dtype)
        return (
            feature_map,
            transform_namespace(feature_map, X_train, xp, device),
            transform_namespace(feature_map, X_test, xp, device),
        )
