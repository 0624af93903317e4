r"""A Nyström width the data choose: nested centres, a warm path, a memory budget.

``n_components="path"`` of the kernel estimator grows its Nyström map along a
*path* of widths and keeps the width where held-out rows stop gaining:

* **Nested centres.** The candidate centres are the training rows in the order
  of the uniform selector's race (:func:`~sklmargin.features._centres.race_order`:
  keyed by the rows' stable hashes, so that the order does not depend on the
  order of the rows nor, but for about one row in 25,000, on their round-off);
  the first ``M`` of them are the ``M``-centre machine.
* **Nested features.** The map is the Cholesky form of Nyström,
  :math:`z_M(x) = L_M^{-1} k_M(x)` with :math:`K_{MM} = L_M L_M^\top`: the same
  kernel approximation :math:`z_M(x)^\top z_M(x') = k_M(x)^\top K_{MM}^{-1}
  k_M(x')` as the eigenvector form, but the features of a larger width extend
  those of a smaller one without changing them. A step from ``M`` to ``M'``
  appends the block :math:`(k_B(x) - C^\top z_M(x))` whitened by the Cholesky
  factor of the block's Schur complement (pivoted, so centres that add nothing
  numerically are dropped): the map's cost over the whole path is that of
  mapping once at the final width.
* **A warm path.** The model of width ``M`` is fitted on the training part;
  its coefficients padded with zeros start the fit at ``M'`` (the same raw
  logits; for the losses that normalise the rows, the same scores up to the
  rows' norms, which grow with the width: a close start, not an exact one).
  The path stops when the next step's held-out accuracy gain is below
  :data:`MIN_GAIN` or not larger than its paired standard error; the width
  kept is the last one that gained.
* **A memory budget.** :data:`PATH_COPIES` copies of the mapped rows and
  the path's dense copies of the rows must fit the kernel fit's budget
  (:mod:`sklmargin.features._memory`), read once by :func:`path_map`: the
  path's widest step is capped by it.

The entry point is :func:`choose_width`; it returns a :class:`WidthChoice`:
the fitted map at the chosen width, the mapped training rows, the start of the
final fit and the path's record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
from scipy.linalg import solve_triangular
from scipy.linalg.lapack import dpstrf

from .._utils.array_api import NUMPY, row_blocks
from ._centres import race_order
from ._kernel_block import rbf_kernel_block
from ._kernel_features import auto_n_components
from ._row_keys import distinct_row_hashes, keyed_priority

#: The path's first width (all distinct training rows when there are fewer).
START_WIDTH = 500
#: The narrowest width the path may keep (fewer centres only when there are
#: fewer distinct rows). A held-out slice of the training rows saturates
#: where the test rows differ from them (other writers, other speakers), and
#: a narrower map then looks as good as a wider one on it, not on the test.
#: The floor is the rule's width (``n_components="auto"``,
#: :func:`~sklmargin.features._kernel_features.auto_n_components`) where
#: that is above this, the path then starting at half of it: the path keeps
#: at least what the rule would, and a held-out slice decides only whether
#: to go wider.
MIN_WIDTH = 1000
#: Each step of the path multiplies the width by this.
GROWTH = 2.0
#: Share of the training rows held out to score the path, and its bounds.
HELD_OUT_FRACTION = 0.1
HELD_OUT_ROWS = (500, 20000)
#: The path takes the next step only when its extrapolated held-out
#: accuracy gain (a fraction) is at least this: a doubling of the fit's cost
#: for less is not worth it.
MIN_GAIN = 0.005
#: The ratio of one step's gain to the previous one's, assumed before two
#: gains are measured (0.2: a first gain under 2.5 points stops the path).
DECAY = 0.2
#: The path's fits stop at this multiple of the estimator's ``tol``. The
#: stopping test is on the largest gradient entry: from the narrower model's
#: padded coefficients the new features' gradient entries start small (the
#: objective is an average over the rows) and at the estimator's ``tol`` a
#: wider fit may stop before its first step.
PATH_TOL_FACTOR = 0.1
#: Copies of the mapped rows the path holds at its peak (the rows, their
#: training part's normalised copy, the next step's wider array).
PATH_COPIES = 3
# Salt of the held-out draw (keys are hashed with it; hex digits of e).
_HELD_OUT_SALT = np.uint64(0xB7E151628AED2A6A)


def held_out_rows(keys, n_held):
    """Return the indices of ``n_held`` rows drawn by their stable keys."""
    priority = keyed_priority(keys, _HELD_OUT_SALT)
    return np.sort(np.argsort(priority, kind="stable")[:n_held])


class NestedNystroem:
    r"""The Cholesky form of the Nyström map over nested centres, grown in steps.

    Parameters
    ----------
    candidates : ndarray of shape (n_candidates, n_features)
        Candidate centres in the order they are taken.
    gamma : float
        Kernel coefficient.
    dtype : numpy dtype
        Precision of the features.
    """

    def __init__(self, candidates, gamma, dtype):
        self.candidates = np.asarray(candidates, dtype=np.float64)
        self.gamma = float(gamma)
        self.dtype = np.dtype(dtype)
        self.offset = self.candidates.mean(axis=0)
        self.centred = self.candidates - self.offset  # (the map's own centring)
        self.kept = np.zeros(0, dtype=np.intp)  # candidate indices, in order
        self.lower = np.zeros((0, 0))  # L of the kept centres (float64)
        self.taken = 0  # candidates examined
        # A pivot (Schur complement diagonal, k(x, x) = 1) below this is
        # round-off of the features' dtype: the centre adds nothing.
        self.tol = max(10.0 * np.finfo(self.dtype).eps, 1e-12)

    @property
    def width(self):
        return int(self.kept.shape[0])

    def grow(self, width, rows, features):
        """Add centres up to ``width``; return ``features`` extended on ``rows``.

        ``rows`` are the rows being mapped (centred by nothing: as given, in
        the features' dtype), ``features`` their current ``n x self.width``
        features. Returns the ``n x new_width`` array (a new one).
        """
        old = self.width
        start = self.taken
        stop = min(self.candidates.shape[0], start + max(0, width - old))
        if stop <= start:
            return features
        self.taken = stop
        block = np.arange(start, stop)
        new = self.centred[block]
        inner = rbf_kernel_block(new, new, self.gamma)
        if old:
            cross = rbf_kernel_block(self.centred[self.kept], new, self.gamma)
            coupling = solve_triangular(self.lower, cross, lower=True)
            inner -= coupling.T @ coupling
        else:
            coupling = np.zeros((0, block.shape[0]))
        inner = (inner + inner.T) / 2.0
        factor, pivots, rank, _ = dpstrf(inner, tol=self.tol, lower=1)
        rank = int(rank)
        if rank == 0:
            return features
        pivots = pivots[:rank] - 1
        block_lower = np.tril(factor[:rank, :rank])
        coupling = coupling[:, pivots]
        lower = np.zeros((old + rank, old + rank))
        lower[:old, :old] = self.lower
        lower[old:, :old] = coupling.T
        lower[old:, old:] = block_lower
        self.lower = lower
        self.kept = np.concatenate([self.kept, block[pivots]])
        # Rows: (k_B(x) - C^T z(x)) L_B^{-T}, by row blocks.
        whiten = solve_triangular(block_lower, np.eye(rank), lower=True).T
        whiten = whiten.astype(self.dtype)
        coupling = coupling.astype(self.dtype)
        centres = new[pivots].astype(self.dtype)
        offset = self.offset.astype(self.dtype)
        out = np.empty((rows.shape[0], old + rank), dtype=self.dtype)
        out[:, :old] = features
        row_bytes = self.dtype.itemsize * (2 * rank + rows.shape[1])
        for part in row_blocks(rows, row_bytes):
            kernel = rbf_kernel_block(rows[part] - offset, centres, self.gamma)
            if old:
                kernel -= features[part] @ coupling
            np.matmul(kernel, whiten, out=out[part, old:])
        return out

    def feature_map(self, width, template):
        r"""Fill ``template``, a NystroemFeatures, with the first ``width`` centres.

        Its ``normalization_`` is :math:`L^{-\top}` (``transform`` computes
        :math:`k_C(x)^\top L^{-\top}`, the features the path trained on) and
        its ``eigenvalues_`` the Cholesky pivots :math:`L_{jj}^2`, the
        residual kernel diagonal each centre removed (not the eigenvalues of
        :math:`K_{CC}`). ``template`` is the unfitted map whose parameters
        it takes.
        """
        lower = self.lower[:width, :width]
        fmap = template.set_params(n_components=int(width))
        fmap.components_ = np.ascontiguousarray(
            self.candidates[self.kept[:width]], dtype=self.dtype
        )
        fmap.gamma_ = self.gamma
        inverse = solve_triangular(lower, np.eye(width), lower=True)
        fmap.normalization_ = np.ascontiguousarray(inverse.T, dtype=self.dtype)
        fmap.eigenvalues_ = np.diag(lower) ** 2
        fmap.n_components_ = int(width)
        fmap.n_features_in_ = self.candidates.shape[1]
        return fmap


@dataclass
class WidthChoice:
    """What :func:`choose_width` returns.

    Attributes
    ----------
    feature_map : NystroemFeatures
        The fitted map at the chosen width.
    features : array of shape (n_samples, width)
        The training rows mapped by it (in their given order; a new array the
        caller may overwrite): NumPy from :func:`choose_width`, on the rows'
        device after :func:`path_map`.
    start : object or None
        The path's model at the chosen width, whose coefficients start the
        final fit; None when there was no path.
    path : dict
        ``{"widths": [...], "scores": [...], "n_iter": [...], "chosen": M,
        "held_out": n_held, "cap": M_max, "stop": reason}``.
    """

    feature_map: object
    features: np.ndarray
    start: object = None
    path: dict = field(default_factory=dict)


def fit_path_model(estimator, features, y, sample_weight, start):
    """Fit ``estimator``'s model of one width on mapped rows, from ``start``.

    A clone without metric, class weights (already in ``sample_weight``) or
    output, at the path's tolerance (:data:`PATH_TOL_FACTOR`), fitted on the
    premapped rows; ``start`` (a narrower model, or None for a cold fit)
    gives its coefficients padded with zeros for the new features (the same
    raw logits; the cosine losses' rows are normalised at the new width, so
    there a close start).
    """
    from sklearn.base import clone

    model = clone(estimator).set_params(
        metric=None, n_components=int(features.shape[1]), class_weight=None,
        warm_start=start is not None, tol=estimator.tol * PATH_TOL_FACTOR,
        verbose=0,
    )  # fmt: skip
    if start is not None:
        coef = np.zeros((start.coef_.shape[0], features.shape[1]))
        coef[:, : start.coef_.shape[1]] = start.coef_
        model.coef_ = coef.astype(start.coef_.dtype)
        for name in (
            "intercept_", "constant_coef_", "constant_feature_", "margin_", "m_",
            "s_", "_prototype_norms",
        ):  # fmt: skip
            if hasattr(start, name):
                setattr(model, name, getattr(start, name))
    from ..estimators._fit_path import fit_path

    # The map of a fit on premapped rows: the fit reads its width only.
    mapped = (SimpleNamespace(n_components=features.shape[1]), features)
    steps = fit_path(model, features, y, sample_weight, mapped=mapped, warn_scale=False)
    for _ in steps:
        pass
    model.warm_start = True  # (it starts the next width, and the final fit)
    return model


def _weighted_accuracy(model, features, y, weights):
    """``model``'s weighted accuracy on mapped rows, and which rows it gets right."""
    logits = np.asarray(model._logits_of_features(features))
    correct = np.asarray(model.classes_)[np.argmax(logits, axis=1)] == y
    return float(np.sum(weights * correct) / np.sum(weights)), correct


def choose_width(X, y, sample_weight, hashes, gamma, rng, fit_path, template, widest):
    """Choose the Nyström width by a warm path scored on held-out training rows.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Training rows as the map takes them (NumPy, dense, compute dtype).
    y : ndarray of shape (n_samples,)
        Encoded labels ``0 .. K-1``.
    sample_weight : ndarray of shape (n_samples,)
        Non-negative weights with a positive sum.
    hashes : ndarray of shape (n_samples,) and dtype ``HASH_DTYPE``
        The rows' hashes (:func:`~sklmargin.features._row_keys.row_hashes`):
        their stable keys draw the held-out rows, and they identify the
        distinct rows among which the centres race.
    gamma : float
        Kernel coefficient (resolved).
    rng : numpy.random.RandomState
        Draws the salt of the centres' race.
    fit_path : callable
        ``fit_path(features, y, sample_weight, start) -> model``: fits the
        classifier on mapped rows from ``start`` (a model of a narrower width,
        or None for a cold fit); ``model.classes_`` and
        ``model._logits_of_features`` score it. The kernel estimator passes
        :func:`fit_path_model` bound to itself.
    template : NystroemFeatures
        The unfitted map to fill at the chosen width.
    widest : int or float
        The widest step the memory budget holds (at least 1; ``math.inf``
        without a budget): :func:`path_map` reads it.

    Returns
    -------
    WidthChoice or None
        None when there is no path to walk: at most the floor's number of
        distinct rows (all of them are centres: the exact kernel machine), a
        class missing from the training part, or held-out rows of zero weight.
    """
    n_samples = X.shape[0]
    dtype = X.dtype
    floor = max(MIN_WIDTH, auto_n_components(n_samples))
    start = max(START_WIDTH, int(round(floor / GROWTH)))
    n_held = int(np.clip(round(HELD_OUT_FRACTION * n_samples), *HELD_OUT_ROWS))
    held = held_out_rows(hashes["order"], min(n_held, n_samples // 5))
    train = np.setdiff1d(np.arange(n_samples), held, assume_unique=True)
    # Centres come from the training part only: a held-out row that is a
    # centre is mapped exactly and would favour wide maps.
    weights = np.where(np.isin(np.arange(n_samples), held), 0.0, sample_weight)
    hashes, distinct_weights, index = distinct_row_hashes(X, weights, hashes)
    n_classes = int(np.max(y)) + 1
    usable = (
        len(held) > 0
        and len(index) > floor
        and np.unique(y[train]).shape[0] == n_classes
        and np.sum(sample_weight[held]) > 0
    )
    if not usable:
        # Every row a centre (the exact machine), or too few rows or classes
        # to hold some out: the caller's own width.
        return None
    order = index[race_order(distinct_weights, rng, hashes["order"])]
    cap = int(min(len(order), widest))
    path = {"widths": [], "scores": [], "n_iter": [], "held_out": int(len(held))}
    nested = NestedNystroem(X[order[:cap]], gamma, dtype)
    # Rows in the order [training part, held-out part] (a copy of the rows).
    perm = np.concatenate([train, held])
    rows = X[perm]
    n_train = train.shape[0]
    features = np.empty((n_samples, 0), dtype=dtype)
    y_train, y_held = y[perm[:n_train]], y[perm[n_train:]]
    sw_train, sw_held = sample_weight[perm[:n_train]], sample_weight[perm[n_train:]]
    best, best_correct, best_score = None, None, -np.inf
    width, stop, last_gain = min(start, cap), "cap", None
    while True:
        features = nested.grow(width, rows, features)
        model = fit_path(features[:n_train], y_train, sw_train, best)
        score, correct = _weighted_accuracy(model, features[n_train:], y_held, sw_held)
        path["widths"].append(nested.width)
        path["scores"].append(score)
        path["n_iter"].append(int(model.n_iter_))
        gain = None
        if best is not None:
            gain = score - best_score
            changed = (correct != best_correct).astype(float)
            share = sw_held / np.sum(sw_held)
            error = float(np.sqrt(np.sum(share**2 * changed)))
            if gain <= error:  # no gain beyond the held-out rows' noise
                stop = f"gain {gain:+.4f} <= s.e. {error:.4f}"
                break
        best, best_correct, best_score = model, correct, score
        chosen_width = nested.width
        following = int(round(GROWTH * nested.width))
        if following > cap or nested.taken >= len(order) or nested.width < width:
            break
        if gain is not None:
            # Gains shrink about geometrically along the path: the next step
            # would buy about gain * ratio; not worth a wider fit below
            # MIN_GAIN.
            ratio = DECAY if last_gain is None else min(1.0, gain / last_gain)
            if gain * ratio < MIN_GAIN:
                stop = f"next gain ~{gain * ratio:+.4f} < {MIN_GAIN}"
                break
            last_gain = gain
        width = following
    if chosen_width < min(floor, cap):
        # Below MIN_WIDTH a saturated held-out slice says little (see there):
        # the floor, fitted cold (the path's narrower model would be a stale
        # start: its padded coefficients already meet the tolerance).
        features = nested.grow(min(floor, cap), rows, features)
        chosen_width, best = nested.width, None
        stop += f"; raised to the floor of {floor}"
    path.update(cap=cap, chosen=chosen_width, stop=stop)
    return _finish(nested, features[:, :chosen_width], perm, best, path, template)


def _finish(nested, features, perm, start, path, template):
    width = features.shape[1]
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(perm.shape[0])
    # Back to the rows' given order, a new array at the chosen width.
    ordered = np.ascontiguousarray(features[inverse])
    return WidthChoice(nested.feature_map(width, template), ordered, start, path)


def path_map(estimator, X, y_encoded, sample_weight, xp=NUMPY, device="cpu"):
    """Walk the kernel ``estimator``'s path on rows ``X``: a WidthChoice or None.

    :func:`choose_width` on a host copy of the rows in the compute dtype,
    with ``gamma`` resolved as the estimator's own map resolves it, capped
    by the memory budget (read once, here: the host's, and the device's for
    rows on one), refused before any copy when not one feature fits. Array
    API rows get the fitted map and the features on their device.
    """
    from functools import partial

    from sklearn.utils import check_random_state

    from .._utils.array_api import move_fitted_arrays, numpy_dtype, to_device, to_numpy
    from ._gamma import scale_gamma
    from ._memory import FitSize, check_fit_memory, memory_budget, widest_width
    from ._nystroem import _FITTED_ARRAYS
    from ._row_keys import row_hashes

    kernel = estimator._kernel_features()
    n_samples = X.shape[0]
    dtype = kernel.dtype(n_samples, numpy_dtype(X.dtype))
    # Beside PATH_COPIES mapped rows, the path holds the rows' host copy in
    # the compute dtype (NumPy rows of that dtype are their own) and its
    # permuted copy (choose_width).
    # All of that is on the host; a device holds the chosen width's features.
    copied = not isinstance(X, np.ndarray) or X.dtype != dtype
    host = memory_budget()
    size = FitSize(dense_columns=(1 + copied) * X.shape[1], copies=PATH_COPIES)
    widest = widest_width(n_samples, dtype.itemsize, size, budget=host)
    device_budget = None if xp is NUMPY else memory_budget(X)
    if device_budget is not None:
        widest = min(
            widest, widest_width(n_samples, dtype.itemsize, budget=device_budget)
        )
    if widest < 1:  # refused before any copy, naming the sizes (the host's first)
        check_fit_memory(n_samples, 1, dtype.itemsize, size, budget=host)
        check_fit_memory(n_samples, 1, dtype.itemsize, X=X, budget=device_budget)
    rows = kernel.rows(X, dtype, xp)
    hashes = row_hashes(rows)  # (where the rows live: on a device, there)
    rows = np.ascontiguousarray(to_numpy(rows))
    weights = np.asarray(to_numpy(sample_weight), dtype=np.float64)
    reported, gamma = kernel.map_gammas(lambda: scale_gamma(rows, weights))
    template = kernel.new_map(n_samples, reported)
    choice = choose_width(
        rows, np.asarray(to_numpy(y_encoded)), weights, hashes,
        gamma, check_random_state(estimator.random_state),
        partial(fit_path_model, estimator), template, widest,
    )  # fmt: skip
    if choice is not None and xp is not NUMPY:
        move_fitted_arrays(choice.feature_map, _FITTED_ARRAYS, xp, device)
        choice.features = to_device(choice.features, xp, device)
    return choice
