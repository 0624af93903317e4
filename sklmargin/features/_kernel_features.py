"""The kernel estimator's feature pipeline, one owner: gamma, width, dtype, map.

:class:`KernelFeatures` resolves a kernel model's settings on the rows it is
fitted on (after the learned input metric, which the estimator applies
first) and fits the map:

* the width (:meth:`KernelFeatures.width`: ``n_components``, ``"auto"``
  growing with the number of rows, within the memory budget of
  :mod:`sklmargin.features._memory`; a width beyond it is refused before
  the map is fitted);
* the precision (:meth:`KernelFeatures.dtype`: ``compute_dtype``, ``"auto"``
  float32 from a size on);
* the RBF width ``gamma``, in one grammar (:func:`gamma_factor`): a float,
  ``"scale"``, ``"<f>*scale"`` or ``"auto"`` (twice ``"scale"`` after a
  learned metric, ``"scale"`` without one);
* the map itself (:class:`~sklmargin.features.NystroemFeatures` or
  :class:`~sklmargin.features.RandomFourierFeatures`), fitted on rows in
  memory (:meth:`KernelFeatures.fit_transform`) or from statistics of rows
  it does not hold (:meth:`KernelFeatures.fit_statistics`: the Dask fit's
  per-chunk sums and chosen centres).

Its users: the estimator's fit and predict, a CV fold (one per metric and
gamma) and the Dask fit. The map's own formulas (forward, input gradients,
description) live in the map's class.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import sparse
from sklearn.utils import check_random_state

from .._utils.array_api import NUMPY, numpy_dtype
from ._fourier import RandomFourierFeatures
from ._gamma import scale_gamma
from ._memory import FitSize, check_fit_memory, memory_budget, widest_width
from ._nystroem import NystroemFeatures

#: compute_dtype="auto" computes in float32 from this many mapped entries on.
FLOAT32_ENTRIES = 2**20
#: n_components="auto": round(11 sqrt(n)) centres, clipped to [1000, 1500].
AUTO_WIDTH_PER_ROOT = 11.0
AUTO_WIDTH_RANGE = (1000, 1500)
#: gamma="auto" after a learned metric: this multiple of "scale".
AUTO_GAMMA_FACTOR = 2.0


def auto_n_components(n_samples):
    r"""Return the width ``n_components="auto"`` gives ``n_samples`` training rows.

    :math:`M = \min(1500, \max(1000, \operatorname{round}(11 \sqrt{n})))`:
    1000 up to 8,272 rows, growing as :math:`\sqrt n` (the order of centres
    that keeps the learning rate of Nyström kernel methods: Rudi, Camoriano
    and Rosasco, "Less is More: Nyström Computational Regularization",
    NeurIPS 2015) up to 1500 from 18,583 rows.
    """
    low, high = AUTO_WIDTH_RANGE
    width = round(AUTO_WIDTH_PER_ROOT * math.sqrt(int(n_samples)))
    return int(min(high, max(low, width)))


def resolve_n_components(n_components, n_samples):
    """Return the width an ``n_components`` setting gives ``n_samples`` rows.

    ``"auto"`` is :func:`auto_n_components`, and so is ``"path"`` where no
    path is walked (the Dask, CV-fold and pilot maps); an integer is itself.
    """
    if n_components in ("auto", "path"):
        return auto_n_components(n_samples)
    return int(n_components)


def gamma_factor(gamma, metric=False):
    """Return the multiple of ``"scale"`` that ``gamma`` is; None for a width.

    The one grammar of an RBF width: a positive float is itself (None here);
    ``"scale"`` is 1, ``"<f>*scale"`` is ``f`` (finite, positive) and
    ``"auto"`` is :data:`AUTO_GAMMA_FACTOR` after a learned ``metric``, 1
    without one. Anything else raises ValueError.
    """
    if not isinstance(gamma, str):
        return None
    if gamma == "auto":
        return AUTO_GAMMA_FACTOR if metric else 1.0
    if gamma == "scale":
        return 1.0
    factor, _, tail = gamma.partition("*")
    factor = float(factor) if tail.strip() == "scale" else math.nan
    if not (math.isfinite(factor) and factor > 0):
        raise ValueError(
            'gamma must be "auto", "scale", "<factor>*scale" with a finite '
            f"positive factor, or a finite positive float; got {gamma!r}."
        )
    return factor


def resolve_gamma(gamma, scale, metric=False):
    """Return the RBF width ``gamma`` gives rows whose ``"scale"`` is ``scale``."""
    factor = gamma_factor(gamma, metric)
    return float(gamma) if factor is None else float(factor * scale)


class KernelFeatures:
    """The kernel feature pipeline of one fit: width, dtype, gamma and map.

    Parameters
    ----------
    gamma, n_components, kernel_approximation, centres, compute_dtype, \
random_state
        The kernel estimator's settings of the same names.
    metric : bool, default=False
        Whether a learned metric moved the rows first (it decides ``"auto"``).

    Attributes
    ----------
    map_ : NystroemFeatures or RandomFourierFeatures
        The fitted map (after a fit).
    dtype_ : numpy.dtype
        The precision the map and the fit run in (after a fit).
    """

    def __init__(
        self, gamma="auto", n_components="auto", kernel_approximation="nystroem",
        centres="uniform", compute_dtype="auto", metric=False, random_state=None,
    ):  # fmt: skip
        self.gamma = gamma
        self.n_components = n_components
        self.kernel_approximation = kernel_approximation
        self.centres = centres
        self.compute_dtype = compute_dtype
        self.metric = metric
        self.random_state = random_state

    def width(self, n_samples, input_dtype=np.float64, X=None, budget=None):
        """Return the map's width for ``n_samples`` rows (``n_components``).

        An integer is itself. ``"auto"`` is :func:`auto_n_components`, lowered
        to the widest map whose fit holds in the memory budget
        (:func:`~sklmargin.features._memory.widest_width`, in the compute
        dtype of ``input_dtype`` rows; ``X``, the rows when at hand, says
        whether the host's memory or an accelerator's): the rule binds
        until the mapped rows of 1,500 centres fill half the free memory
        (about 2 million rows per 24 GiB in float32), the budget beyond.
        ``budget``: bytes, read by the caller (None: read here).
        """
        rule = resolve_n_components(self.n_components, n_samples)
        if self.n_components not in ("auto", "path"):
            return rule
        itemsize = self.dtype(n_samples, input_dtype).itemsize
        widest = widest_width(n_samples, itemsize, self._fit_size(X), budget, X)
        return int(max(1, min(rule, widest)))

    def _fit_size(self, X=None):
        """Return what this map's fit on ``X`` holds beside its mapped rows.

        A :class:`~sklmargin.features._memory.FitSize`: sparse rows are
        densified for the Nyström map (:meth:`rows`), a copy of ``n x d``
        entries beside the mapped rows.
        """
        nystroem = self.kernel_approximation == "nystroem"
        dense_columns = X.shape[1] if nystroem and sparse.issparse(X) else 0
        rpcholesky = nystroem and self.centres == "rpcholesky"
        return FitSize(nystroem, rpcholesky, dense_columns)

    def dtype(self, n_samples, input_dtype):
        """Return the dtype the map and the fit run in (``compute_dtype``).

        "auto" computes in float32 when the mapped rows have at least
        :data:`FLOAT32_ENTRIES` entries (at the width ``n_components`` asks,
        before the memory budget), and in the input's dtype below.
        """
        if self.compute_dtype != "auto":
            return np.dtype(self.compute_dtype)
        width = resolve_n_components(self.n_components, n_samples)
        if n_samples * width >= FLOAT32_ENTRIES:
            return np.dtype(np.float32)
        return np.dtype(input_dtype)

    def map_gamma(self, scale):
        """Return ``gamma`` as the map takes it: ``"scale"`` or a float.

        ``scale()`` computes the value of ``"scale"`` on the map's rows (in
        memory, or from the Dask chunks' exact sums); a plain ``"scale"`` is left to the
        map, which resolves it itself.
        """
        if self.gamma == "scale" or (self.gamma == "auto" and not self.metric):
            return "scale"
        factor = gamma_factor(self.gamma, self.metric)
        return float(self.gamma) if factor is None else float(factor * scale())

    def map_gammas(self, scale):
        """Return ``gamma`` as the map reports it and the float it computes with.

        :meth:`map_gamma`, and its value: ``scale()`` where that is
        ``"scale"``, for a map that cannot resolve it on the rows itself (fitted
        from the Dask chunks' statistics, or at each width of the path).
        """
        gamma = self.map_gamma(scale)
        return gamma, scale() if gamma == "scale" else gamma

    def new_map(self, width, gamma):
        """Return an unfitted map of ``width`` and ``gamma`` (resolved)."""
        if self.kernel_approximation == "nystroem":
            return NystroemFeatures(
                n_components=width,
                gamma=gamma,
                centres=self.centres,
                random_state=self.random_state,
            )
        return RandomFourierFeatures(
            gamma=gamma,
            n_components=width,
            orthogonal=self.kernel_approximation == "orf",
            random_state=self.random_state,
        )

    def rows(self, X, dtype, xp=NUMPY):
        """``X`` as the map takes it: ``dtype``, dense for Nyström."""
        dtype = np.dtype(dtype)
        if xp is not NUMPY:  # no copy when X has the dtype already
            return xp.astype(X, getattr(xp, dtype.name), copy=False)
        X = X.astype(dtype, copy=False)
        if sparse.issparse(X) and self.kernel_approximation == "nystroem":
            # The Nyström map works on dense rows (centres are rows of X).
            X = X.toarray()
        return X

    def fit_transform(self, X, sample_weight, xp=NUMPY):
        """Fit the map on rows ``X`` (any namespace); return them mapped.

        The width and dtype come from the number of rows and their dtype,
        ``gamma`` from their weighted variance; the maps' ``fit`` and
        ``transform`` run in ``X``'s namespace.
        """
        n_samples = X.shape[0]
        self.dtype_ = self.dtype(n_samples, numpy_dtype(X.dtype))
        # The free memory read once: the width "auto" chooses in it is the
        # width the check below accepts.
        budget = memory_budget(X)
        width = self.width(n_samples, numpy_dtype(X.dtype), X, budget)
        # Refused before anything n x M is allocated (a ValueError naming
        # the sizes), not an out-of-memory crash.
        size = self._fit_size(X)
        check_fit_memory(n_samples, width, self.dtype_.itemsize, size, X, budget)
        X = self.rows(X, self.dtype_, xp)
        gamma = self.map_gamma(lambda: scale_gamma(X, sample_weight))
        self.map_ = self.new_map(width, gamma)
        return self.map_.fit(X, sample_weight=sample_weight).transform(X)

    def fit_statistics(self, n_samples, n_features, input_dtype, scale, centres):
        """Fit the map from statistics of rows it does not hold (the Dask fit).

        ``scale(dtype)`` is ``"scale"`` of the rows cast to ``dtype`` (their
        weighted sums, added);
        ``centres(width, gamma, rng)`` chooses the Nyström centres as the
        in-memory fit would, with its generator. The random Fourier
        frequencies depend on the width, ``d`` and the seed only: one row of
        zeros draws the in-memory fit's.
        """
        width = self.width(n_samples, input_dtype)
        # "scale" of the rows in the dtype the map runs in, as in memory
        # (fit_transform casts the rows before the map reads their variance).
        self.dtype_ = self.dtype(n_samples, input_dtype)
        gamma, value = self.map_gammas(lambda: scale(self.dtype_))
        self.map_ = self.new_map(width, value)
        if self.kernel_approximation == "nystroem":
            rng = check_random_state(self.random_state)
            chosen = centres(width, value, rng)
            self.map_.n_features_in_, self.map_.gamma_ = n_features, value
            self.map_._fit_centres(chosen, np.dtype(input_dtype))
        else:
            self.map_.fit(np.zeros((1, n_features), dtype=self.dtype_))
        # Report gamma as the in-memory fit does ("scale", or the float used).
        self.map_.set_params(gamma=gamma)
        return self

    def transform(self, X, xp=NUMPY):
        """Map rows (any namespace) by the fitted map, in the fit's dtype."""
        return self.map_.transform(self.rows(X, self.dtype_, xp))
