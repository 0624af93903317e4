"""Margin softmax over an approximate RBF feature map.

The RBF kernel's feature space lies on the unit sphere (``|z(x)|^2 = k(x, x) =
1``), exactly where cosine-margin losses work: the linear estimator's objective
and solver, run on Nyström or random Fourier features, give a kernel machine
whose fit and predict cost grows linearly with the number of samples.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from .._utils.array_api import (
    NUMPY,
    get_namespace,
    numpy_dtype,
    take_rows,
    to_numpy,
)
from .._utils.compat import Interval, StrOptions
from .._utils.legacy_state import NOT_FITTED, fitted_dtype_name
from .._utils.validation import check_sample_and_class_weight
from ..features._centres import CENTRE_SELECTORS
from ..features._kernel_features import (  # noqa: F401 (the width's law, for callers)
    KernelFeatures,
    auto_n_components,
    resolve_n_components,
)
from ._base import BaseMarginSoftmax
from ._docs import fill_shared_docs

#: The parameters the learned input transform and the feature map depend on
#: besides the rows: a warm refit keeps both while these are unchanged.
_MAP_PARAMS = (
    "metric", "metric_steps", "gamma", "n_components", "kernel_approximation",
    "centres", "compute_dtype", "random_state",
)  # fmt: skip


@fill_shared_docs
class KernelMarginSoftmaxClassifier(BaseMarginSoftmax):
    r"""Margin-softmax classifier over RBF kernel features, with a learned metric.

    Fits a feature map approximating ``k(x, x') = exp(-gamma |x - x'|^2)``
    on the training data -- by default the Nyström map on 1000 to 1500 centres drawn
    among the training rows (:class:`NystroemFeatures`) -- then trains
    :class:`MarginSoftmaxClassifier`'s objective on the mapped rows
    ``z(x)``. Kernel features satisfy ``|z(x)|^2 ~= k(x, x) = 1``:
    they already live near the unit sphere, where the cosine losses (NormFace,
    AM-Softmax, ArcFace) are at home. With ``n_components`` at least the number
    of distinct training rows every row is a centre: the exact kernel machine.

    **Learned metric** (``metric``). An RBF kernel weighs every input
    direction alike, so columns that do not matter dilute the distances. As
    Recursive Feature Machines do [6]_ [7]_, the estimator first fits a cheap
    *pilot* model (at most 4000 rows drawn uniformly, at most 500 centres, a
    tolerance ten times looser), then takes the average gradient outer
    product of its margin-free class logits :math:`f_c` with respect to the
    input, over at most 2000 of those rows (weighted by ``sample_weight``):

    .. math::

        M = \frac{1}{\sum_i w_i} \sum_i w_i \sum_c
            \nabla_x f_c(x_i)\, \nabla_x f_c(x_i)^\top .

    The gradients are exact and closed form, through the map
    (Nyström: :math:`\partial k(x, c_i) / \partial x = -2 \gamma k(x, c_i)
    (x - c_i)`; random Fourier features: :math:`\partial \cos(\omega^\top x
    + b) / \partial x = -\sin(\omega^\top x + b)\, \omega`), the row
    normalisation and the lift, computed in the fit's precision by row blocks.
    With ``metric="diagonal"`` each input column is then scaled by
    :math:`\sqrt{M_{jj} / \max_k M_{kk}}`; with ``metric="full"`` the rows
    are mapped by :math:`(M / \lambda_{\max}(M))^{1/2}`. ``metric_steps``
    repeats the step on the transformed rows, composing the transforms. The
    final model is then fitted on the transformed rows (``gamma="scale"`` is
    resolved on them) and every prediction, ``score_samples``, the Dask and
    array API paths and the ONNX export apply the same transform
    (``input_transform_``) first. ``feature_relevance_`` is the diagonal of
    the learned metric, a feature importance.

    Parameters
    ----------
    loss : str, default="am-softmax"
        As in :class:`MarginSoftmaxClassifier`.
    m : float, default=None
        Margin; None means the loss's default, as in
        :class:`MarginSoftmaxClassifier` (0.05 for AM-Softmax and ArcFace).
    s : float, default=None
        Logit scale; None means the loss's kernel default: 100 for NormFace,
        AM-Softmax and ArcFace (kernel features have small cosines, and the
        linear estimator's s=30 under-fits them), 30 for A-Softmax (not the
        linear estimator's 8: ``|z(x)| ~= 1`` here).
    t : float, default=1.0
        SV-Softmax parameter, ``t >= 1``; 1 is off.
    C : float, default=1.0
        Inverse L2 strength of the losses that depend on ``|w_j|`` (softmax,
        L-Softmax).
    lambda_min : float, default=None
        Final softening of L-/A-Softmax; None means 20.
    gamma : {"auto", "scale"} or float, default="auto"
        RBF kernel width; "scale" is ``1 / (n_features * Var(X))`` with the
        sample-weighted variance of the rows the map sees (after the learned
        metric), resolved in ``fit`` (see ``feature_map_``). "auto" is a
        narrower kernel than "scale" when a metric is learned, and "scale"
        without one (``metric=None``, the model of earlier releases); the
        metric's pilot fits always use "scale". Why: the learned metric
        shrinks the columns it finds irrelevant, which leaves the relevant
        distances short for "scale", and the narrower kernel gains accuracy
        on average against an RBF SVC (the benchmarks page, "Where the
        defaults come from", has the measurements).
    n_components : int or "auto", default="auto"
        Width of the feature map (number of centres for Nyström). "auto"
        grows with the number of training rows ``n`` as :math:`\sqrt n`
        between a floor and a cap (:func:`auto_n_components`; the width used
        is ``n_components_``): the order of centres that keeps the learning
        rate of Nyström kernel methods [8]_, capped for the fit's cost, which
        is linear in the width (and the predict's, quadratic), and lowered to
        the widest map the memory budget holds
        (:mod:`sklmargin.features._memory`: half the free memory, or
        ``SKLMARGIN_MEMORY_BUDGET``). The gain over a fixed width shows on the
        larger sets (the benchmarks page, "Where the defaults come from").
        "path" lets the data choose (Nyström with uniform centres only; the
        others take "auto"): a warm path of maps over 500, 1000, 2000, ...
        nested centres, scored on a held-out tenth of the training rows and
        stopped where it stops gaining (:mod:`sklmargin.features._width`;
        the path in ``width_path_``). It is an option, not the default: it
        costs more fit time where it keeps 1000 centres, and the predict
        cost grows with the square of the width it picks. The Dask fit walks
        it on the gathered rows when they fit the budget; a CV search's
        folds take "auto" (its refit walks the path). An integer width whose
        fit would exceed the memory budget is refused with a ValueError
        naming the sizes; predict maps its rows in blocks of bounded memory.
    kernel_approximation : {"nystroem", "orf", "rff"}, default="nystroem"
        :class:`NystroemFeatures` (centres chosen among the training rows,
        float32 end to end), orthogonal random features or i.i.d. random
        Fourier features (both :class:`RandomFourierFeatures`). Nyström is the
        most accurate at equal width on every dataset measured.
    centres : {"uniform", "kmeans", "rpcholesky"}, default="uniform"
        How Nyström picks its centres (weighted, among distinct rows): uniform
        draws, weighted k-means, or randomly pivoted Cholesky. Uniform is the
        default because the three are equal within noise on average, and it is
        the cheapest; k-means gained a little on one large set of those
        measured (the benchmarks page, "Where the defaults come from").
        Ignored by the random Fourier maps.
    constant_feature : float or None, default=None
        As in :class:`MarginSoftmaxClassifier`, on the mapped features. Off by
        default: kernel features already have ``|z(x)| ~= 1``.
    metric : {"diagonal", "full"} or None, default="diagonal"
        The learned input metric (see above): per-column scales, a full
        matrix, or None (the plain RBF kernel on the given columns, the
        model of earlier releases). "diagonal" is the default because it
        discounts noise columns at the cost of a pilot fit, and closes most of
        the gap to an RBF SVC; a full matrix estimated from a pilot fit can
        also mix noise columns into the signal, and loses accuracy where there
        are many (the benchmarks page, "Where the defaults come from", has the
        measurements).
    metric_steps : int, default=2
        Number of metric steps, each a pilot fit on the rows the previous
        steps transformed (see ``metric``).
    fit_intercept : bool, default=True
        Add a per-class bias to every logit. It carries class priors (a pure
        cosine classifier's regions are cones through the origin) and makes
        ``class_weight`` effective.
    class_weight : dict or "balanced", default=None
        Weights of classes, multiplied into ``sample_weight``; "balanced" uses
        ``sum(sample_weight) / (n_classes * class_total)`` with weighted totals.
    MAX_ITER
    tol : float, default=1e-4
        Stop when the largest absolute gradient entry is below ``tol * s``
        (``tol`` for L-Softmax): the gradient is proportional to the logit
        scale ``s``, so the tolerance keeps its meaning when ``s`` changes.
        The metric's pilot stops at ``10 * tol``.
    warm_start : bool, default=False
        Reuse the solution of the previous call to ``fit``: when the rows
        have the shape, dtype and classes of the previous call's and the
        parameters of the map (``metric``, ``metric_steps``, ``gamma``,
        ``n_components``, ``kernel_approximation``, ``centres``,
        ``compute_dtype``, ``random_state``) are unchanged, the fitted
        ``input_transform_`` and ``feature_map_`` are kept as they are and
        L-BFGS starts from the previous ``coef_`` and ``intercept_`` (at the
        prototype norms the solver ended with; the lambda schedule is
        skipped). The coefficients then live in the feature space they were
        fitted in, so a warm refit on the same data never raises the training
        objective, and after a converged fit it takes no iteration. Loss
        parameters (``loss``, ``m``, ``s``, ``t``, ``C``, ``tol``,
        ``max_iter``, ``class_weight``) may change between the calls: the
        refit solves the new problem in the kept feature space. Otherwise
        the metric and the map are learned again and the solver starts
        cold, as does a refit on other rows of the same shape that should
        get its own metric and map (use ``warm_start=False`` or a clone).
        Default False: each fit learns its own metric and map.
    compute_dtype : {"auto", "float32", "float64"}, default="auto"
        Precision of the feature map and of the training objective, whatever
        the input's dtype. The fit is two GEMMs of the ``n x M`` mapped rows per
        L-BFGS evaluation, and float32 halves their cost and memory; the L-BFGS
        state, the target-logit hook and the Nyström factorisation stay in
        float64, and accuracy does not change measurably (the benchmarks page,
        "Precision of the kernel fit"). "auto"
        computes in float32 when the mapped training rows have at least
        2**20 entries (``n_samples * n_components``), and in the input's
        dtype below: there the GEMMs take about a millisecond and float64's
        digits come free -- sample weights then equal repeated rows to
        float64 round-off, where float32 gives ~1e-6 in probabilities.
        Predictions are computed in the dtype chosen (``compute_dtype_``) and
        returned in the input's.
    random_state : int, RandomState instance or None, default=None
        Seeds the feature map, the metric's row sample and pilot (and
        degenerate prototype starts).
    verbose : int, default=0
        Print one line per L-BFGS run of the final fit (>1 also one line per
        iteration, with its objective); the pilot is silent.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_classes, n_components)
        Class prototypes in feature space.
    constant_coef_ : ndarray of shape (n_classes,)
    constant_feature_ : float
    intercept_ : ndarray of shape (n_classes,)
    feature_map_ : NystroemFeatures or RandomFourierFeatures
        The fitted feature map (of the transformed rows).
    input_transform_ : ndarray of shape (d,) or (d, d), or None
        The learned transform the model applies to its input rows before the
        map (``d = n_features_in_``): per-column scales
        (``X * input_transform_``, ``metric="diagonal"``) or a matrix
        (``X @ input_transform_``, ``metric="full"``); None without a metric.
    feature_relevance_ : ndarray of shape (n_features_in_,)
        Relevance of each input column: the diagonal of the learned metric
        ``T T^T`` (``T = input_transform_``), divided by its largest entry
        (the most relevant column has 1). Only with a metric.
    metric_ : ndarray of shape (n_features_in_, n_features_in_)
        The learned metric ``T T^T`` divided by its largest eigenvalue. Only
        with ``metric="full"``.
    compute_dtype_ : {"float32", "float64"}
        The precision of the map and the fit (``compute_dtype`` resolved).
    n_components_ : int
        The width asked of the feature map (``n_components`` resolved; the
        Nyström map may keep fewer, ``feature_map_.n_components_``).
    width_path_ : dict
        Only when ``n_components="path"`` walked its path: the ``widths``
        tried, their held-out accuracies ``scores``, the L-BFGS iterations
        ``n_iter`` of each, the ``held_out`` rows, the memory ``cap``, the
        ``chosen`` width and why the path stopped (``stop``).
    n_iter_ : int
    m_ : float
        The margin used (default resolved).
    s_ : float or None
        The logit scale used (default resolved); None for L-Softmax, whose
        logits take their scale from the norms.
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
    .. [6] Radhakrishnan, Beaglehole, Pandit and Belkin, "Mechanism for feature
       learning in neural networks and backpropagation-free machine learning
       models", Science 383, 2024. arXiv:2212.13881.
    .. [7] Beaglehole, Holzmüller, Radhakrishnan and Belkin, "xRFM: Accurate,
       scalable, and interpretable feature learning models for tabular data",
       2025.
    .. [8] Rudi, Camoriano and Rosasco, "Less is More: Nyström Computational
       Regularization", NeurIPS 2015. arXiv:1507.04717.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sklmargin import KernelMarginSoftmaxClassifier
    >>> X, y = make_moons(n_samples=300, noise=0.1, random_state=0)
    >>> clf = KernelMarginSoftmaxClassifier(n_components=200, random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.95
    True
    >>> clf.feature_relevance_.shape  # one relevance per input column
    (2,)
    """

    # Mapped rows have |z| ~ 1: losses whose scale involves |x| (A-Softmax)
    # take their kernel default s (Margin.default_s_kernel).
    _unit_norm_features = True
    # The plain run: no variant of the sphere-scaled run made the kernel fit's
    # labels stable under a last-bit change of the rows at a comparable cost
    # (the benchmarks page, "Label stability").
    _sphere_scaled_solver = False
    # The plain run (not SV-Softmax's state rounds) keeps 50 curvature pairs
    # (scipy's default is 10). Over
    # 1000-1500 kernel features the objective is flat along many directions;
    # with 10 pairs L-BFGS stopped, at tol, somewhere along them that a
    # last-bit change of the rows decided, and test labels moved with it even
    # with the metric, gamma and centres held fixed. With 50 it reaches the
    # same tol in fewer iterations, at a point the data decide. The two loops
    # over 50 pairs cost far less than an evaluation (two GEMMs over the
    # mapped rows). The metric's pilot keeps 10 (see
    # :func:`~sklmargin.estimators._metric.learn_input_transform`). The
    # benchmarks page, "Label stability", has the measurements.
    _solver_memory = 50

    _parameter_constraints: dict = {
        **BaseMarginSoftmax._parameter_constraints,
        "gamma": [
            StrOptions({"auto", "scale"}),
            Interval(Real, 0, None, closed="neither"),
        ],
        "n_components": [
            StrOptions({"auto", "path"}),
            Interval(Integral, 1, None, closed="left"),
        ],
        "kernel_approximation": [StrOptions({"nystroem", "orf", "rff"})],
        "centres": [StrOptions(set(CENTRE_SELECTORS))],
        "compute_dtype": [StrOptions({"auto", "float32", "float64"})],
        "metric": [StrOptions({"diagonal", "full"}), None],
        "metric_steps": [Interval(Integral, 1, None, closed="left")],
    }

    # Models saved before these parameters existed, recognised by the saved
    # state lacking them (sklmargin._utils.legacy_state): a state without
    # ``compute_dtype`` ran the map and the fit in the training rows' dtype
    # (coef_'s), and a refit of such a model does so again; one without
    # ``centres`` takes its __init__ default, "uniform" (the Nyström map's).
    # A state without ``metric`` was fitted without a learned metric, and its
    # clone must refit the same model.
    # ``gamma="auto"`` and ``n_components="auto"`` became the defaults after
    # both parameters were saved, so an older model keeps its values.
    _legacy_params = {
        "compute_dtype": lambda state: fitted_dtype_name(state) or "auto",
        "metric": lambda state: None,
        "metric_steps": lambda state: 1,
    }
    _legacy_fitted = {
        **BaseMarginSoftmax._legacy_fitted,
        "compute_dtype_": lambda state: fitted_dtype_name(state) or NOT_FITTED,
        # the fitted map's width (every fitted kernel model has its map)
        "n_components_": lambda state: (
            int(state["feature_map_"].n_components)
            if "feature_map_" in state
            else NOT_FITTED
        ),
    }

    def __init__(
        self,
        loss="am-softmax",
        m=None,
        s=None,
        t=1.0,
        C=1.0,
        lambda_min=None,
        gamma="auto",
        n_components="auto",
        kernel_approximation="nystroem",
        centres="uniform",
        metric="diagonal",
        metric_steps=2,
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
        self.metric = metric
        self.metric_steps = metric_steps
        self.constant_feature = constant_feature
        self.fit_intercept = fit_intercept
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.compute_dtype = compute_dtype
        self.random_state = random_state
        self.verbose = verbose

    def _kernel_features(self):
        """Return the feature pipeline of this model's settings and fitted map."""
        features = KernelFeatures(
            gamma=self.gamma,
            n_components=self.n_components,
            kernel_approximation=self.kernel_approximation,
            centres=self.centres,
            compute_dtype=self.compute_dtype,
            metric=self.metric is not None,
            random_state=self.random_state,
        )
        if hasattr(self, "feature_map_"):
            features.map_ = self.feature_map_
            features.dtype_ = np.dtype(self.compute_dtype_)
        return features

    def _fit_input_transform(
        self, X, y_encoded, sample_weight, xp=NUMPY, device="cpu", learn=True
    ):
        """Learn the input metric (``metric``) and return the transformed ``X``.

        NumPy rows are sliced for the pilot, array API rows copied to the host
        (a few thousand rows); the Dask fit calls
        :meth:`_learn_input_transform` with its own row fetcher.
        """
        from ..features._input_transform import apply_input_transform
        from ._metric import training_row_keys

        if self.metric is None or not learn:  # (not learn: a CV fold's rows)
            self._set_input_transform(None)
            return X
        if self._keeps_fitted_map(X, xp):  # warm_start: the previous transform
            return apply_input_transform(X, self.input_transform_)
        keys = training_row_keys(X)

        def take(rows):
            part = X[rows] if xp is NUMPY else to_numpy(take_rows(X, rows, xp, device))
            return part, y_encoded[rows], sample_weight[rows]

        transform = self._learn_input_transform(
            X.shape, numpy_dtype(X.dtype), take, keys
        )
        return apply_input_transform(X, transform)

    def _metric_rows(
        self, X, y_encoded, classes, sample_weight=None, namespace=(NUMPY, "cpu")
    ):
        """``(rows, transform)``: learn the metric on ``X`` as :meth:`fit` does.

        The steps of a fit before its feature map (``class_weight`` folded
        into the sample weights, the metric learned and applied), for callers
        that need the rows the kernel sees without the rest of the fit: the
        CV search (per fold and at the refit) and ``compare``'s ``gamma/scale``
        base. ``namespace`` is ``(xp, device)`` of the rows.
        """
        weights = check_sample_and_class_weight(
            sample_weight, self.class_weight, classes, y_encoded, X.shape[0]
        )
        X = self._fit_input_transform(X, y_encoded, weights, *namespace)
        return X, self.input_transform_

    def _learn_input_transform(self, shape, input_dtype, take, keys):
        """Learn, store and return ``input_transform_`` (None without a metric).

        ``take(rows) -> (X, y_encoded, sample_weight)`` gives NumPy training
        rows at the indices ``rows``: the one part the NumPy, array API and
        Dask fits do differently; ``keys`` are the rows' stable keys.
        """
        from ._metric import learn_input_transform

        transform = None
        if self.metric is not None:
            dtype = self._kernel_features().dtype(shape[0], input_dtype)
            transform = learn_input_transform(self, keys, take, dtype)
            if transform is None:  # no step learned anything: the identity
                d = shape[1]
                transform = np.ones(d) if self.metric == "diagonal" else np.eye(d)
        self._set_input_transform(transform)
        return transform

    def _set_input_transform(self, transform):
        """Store ``input_transform_`` and the relevance it implies."""
        self.input_transform_ = transform
        for name in ("feature_relevance_", "metric_"):
            self.__dict__.pop(name, None)
        if transform is None:
            return
        if transform.ndim == 1:
            relevance = transform**2
        else:
            metric = transform @ transform.T
            self.metric_ = metric / np.max(np.linalg.eigvalsh(metric))
            relevance = np.diag(metric).copy()
        self.feature_relevance_ = relevance / np.max(relevance)

    def _map_key(self, X, xp):
        """Return what the fitted transform and map were learned for (warm_start).

        The rows' shape, dtype and namespace (as the user's fit received them:
        the learned transform keeps the dtype), the classes and the map's
        parameters (:data:`_MAP_PARAMS`; a random state instance by identity).
        """
        values = (getattr(self, name) for name in _MAP_PARAMS)
        params = tuple(
            value
            if value is None or isinstance(value, (str, int, float))
            else id(value)
            for value in values
        )
        namespace = None if xp is NUMPY else xp.__name__  # None: keys of old fits
        space = (tuple(X.shape), numpy_dtype(X.dtype).str, namespace)
        return space, params, tuple(np.asarray(self.classes_).tolist())

    def _keeps_fitted_map(self, X, xp=NUMPY):
        """Whether this fit keeps the fitted transform and map (``warm_start``)."""
        previous = getattr(self, "_fitted_map_key", None)
        return bool(
            self.warm_start
            and previous is not None
            and hasattr(self, "feature_map_")
            and previous == self._map_key(X, xp)
        )

    def _fit_feature_map(
        self, X, y_encoded, sample_weight, xp=NUMPY, device="cpu", mapped=None
    ):
        # A start left by a fit that failed after its path: not this map's.
        self.__dict__.pop("_path_start", None)
        if mapped is not None:  # a CV fold's map and rows, used as they are
            self.feature_map_, features = mapped
            self._fitted_map_key = None
        elif self._keeps_fitted_map(X, xp):  # warm_start: the previous map
            features = self._map_features(X)
        else:
            # The key of the rows as received (before the compute dtype), as
            # _fit_input_transform compares it.
            key = self._map_key(X, xp)
            self.__dict__.pop("width_path_", None)
            choice = self._path_map(X, y_encoded, sample_weight, xp, device)
            if choice is not None:
                self.feature_map_, features = choice.feature_map, choice.features
                # (the final fit's start: _solve takes it)
                self.width_path_, self._path_start = choice.path, choice.start
            else:
                kernel = self._kernel_features()
                features = kernel.fit_transform(X, sample_weight, xp)
                self.feature_map_ = kernel.map_
            self._fitted_map_key = key
        # Read off the map the model keeps (as the Dask fit does): a CV fold's
        # map is made by another estimator (_fold_features) and its path
        # models, fitted on the mapped rows, need the width too.
        self.n_components_ = int(self.feature_map_.n_components)
        self.compute_dtype_ = numpy_dtype(features.dtype).name
        return features

    def _walks_path(self):
        """Whether ``n_components="path"`` walks its path (see there)."""
        return (
            self.n_components == "path"
            and self.kernel_approximation == "nystroem"
            and self.centres == "uniform"
        )

    def _path_map(self, X, y_encoded, sample_weight, xp=NUMPY, device="cpu"):
        """Return the width the data choose (a ``WidthChoice``), or None.

        ``n_components="path"`` (:func:`~sklmargin.features._width.path_map`);
        None (the rule's width) for another map or selector, or where the
        path has nothing to walk.
        """
        if not self._walks_path():
            return None
        from ..features._width import path_map

        return path_map(self, X, y_encoded, sample_weight, xp, device)

    def _map_features(self, X):
        return self._kernel_features().transform(X, get_namespace(X)[0])

    def _model_logits(self, X):
        """Logits of ``X``, mapped by row blocks of bounded memory."""
        from ..features._memory import in_row_blocks

        width = int(self.feature_map_._n_features_out)
        itemsize = np.dtype(self.compute_dtype_).itemsize
        return in_row_blocks(super()._model_logits, X, width, itemsize)

    def _fold_features(self, X_train, sample_weight, X_test, xp=NUMPY, device="cpu"):
        kernel = self._kernel_features()
        features = kernel.fit_transform(X_train, sample_weight, xp)
        return kernel.map_, features, kernel.transform(X_test, xp)
