r"""An input metric learned from a fitted kernel model (average gradient outer product).

Recursive Feature Machines (Radhakrishnan et al., Science 2024; xRFM,
Beaglehole et al. 2025) learn the metric of a kernel machine from the machine
itself: fit, take the average gradient outer product (AGOP) of the class
logits :math:`f_c` with respect to the *input*

.. math::

    M = \frac{1}{\sum_i w_i} \sum_i w_i \sum_c
        \nabla_x f_c(x_i)\, \nabla_x f_c(x_i)^\top,

and refit on :math:`x \mapsto M^{1/2} x` (normalised by the largest
eigenvalue of :math:`M`; the diagonal variant keeps only the per-feature
scales :math:`\sqrt{M_{jj} / \max_k M_{kk}}`). Directions the logits do not
move along shrink, so the RBF kernel stops spending its width on them.

The gradients are closed form, through the map (each map's description
gives its own: ``head_gradients`` of
:class:`~sklmargin.features._nystroem.NystroemDescription` and
:class:`~sklmargin.features._fourier.FourierDescription`) and the margin-free
logits:

* logits :math:`f_c = (z A + a)_c / \max(|[z, c_0]|, \epsilon) + b_c` for the
  losses that normalise the rows (the scale and ``1 / |w_c|`` folded into
  ``A``, the lift ``c_0`` into ``a``), :math:`f_c = (z A)_c + b_c` for the
  others (plain softmax, L-/A-Softmax, whose ``|x|`` cancels): the arrays of
  :func:`~sklmargin.objective._description._logit_description`, the one
  reader of a fitted model's attributes.

:func:`learn_input_transform` runs the whole step on a NumPy row sample (the
in-memory, array API and Dask fits all call it, on the same rows);
:func:`~sklmargin.features._input_transform.apply_input_transform` is the
one function every path calls to map rows by the learned transform.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import sparse
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .._utils.array_api import is_dask, row_blocks
from .._utils.validation import FeatureScaleWarning
from ..features._input_transform import apply_input_transform

#: Rows of the pilot fit (a uniform draw without replacement; all rows below).
PILOT_ROWS = 4000
#: Most centres (features) of the pilot map.
PILOT_COMPONENTS = 500
#: The pilot stops at this multiple of the estimator's ``tol``.
PILOT_TOL_FACTOR = 10.0
#: Rows of the pilot sample on which the gradients are averaged.
AGOP_ROWS = 2000


def metric_sample(keys, rng, take=None):
    """Row indices of the pilot fit and, among them, of the AGOP.

    Each row's place in the draw is a hash of its stable key
    (:func:`~sklmargin.features._row_keys.stable_row_keys`: the row's direction
    and length on a coarse grid) and of one salt drawn from ``rng``, and the
    rows are taken, and handed to the pilot, in that order: a permutation or a
    round-off change of the training rows gives the pilot the same rows in the
    same order, so the learned metric does not depend on either (a draw of
    row *positions* did, and a row permutation then changed some test
    labels). Every fit path (NumPy, array API, Dask) passes the keys of
    its rows, so all learn the same metric from the same rows.

    Distinct rows can share a stable key (rows that agree to the grid, and
    exact copies with other labels or weights). Such rows are put in the
    order of their content (:func:`_content_order`) where ``take`` is given,
    so that the pilot's rows and their order depend on the data alone: in
    input order, a permutation reordered them, the pilot's sums were rounded
    in another order and the learned metric moved (by about 1e-4), enough to
    move some test labels.

    Parameters
    ----------
    keys : ndarray of shape (n_samples,) and dtype uint64
        Stable keys of the training rows.
    rng : numpy.random.RandomState
        Source of the salt.
    take : callable, default=None
        ``take(rows) -> (X, y_encoded, sample_weight)`` (as
        :func:`learn_input_transform`'s): fetches the rows that share a key
        for the content order. None keeps them in input order.

    Returns
    -------
    rows : ndarray of shape (min(n_samples, PILOT_ROWS),)
        Indices of the pilot's rows, in draw order.
    agop : ndarray
        Positions, within ``rows``, of the rows the gradients are averaged on
        (the first ``AGOP_ROWS`` of the draw).
    """
    from ..features._row_keys import draw_salt, keyed_priority

    priority = keyed_priority(keys, draw_salt(rng))
    order = np.argsort(priority, kind="stable")
    if take is not None:
        order = _content_order(order, priority[order], take)
    rows = order[:PILOT_ROWS]
    return rows, np.arange(min(len(rows), AGOP_ROWS))


def _content_order(order, priority, take):
    """Return ``order`` with the runs of equal ``priority`` sorted by content.

    Only the runs that reach into the first ``PILOT_ROWS`` places are
    fetched (a few rows: a shared key is rare) and sorted by the exact hash
    of the row (:func:`~sklmargin.features._row_keys.row_hashes`), then the
    label, then the weight; rows equal in all three are interchangeable.
    """
    from ..features._row_keys import row_hashes

    shared = priority[1:] == priority[:-1]
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= shared
    tied[:-1] |= shared
    if len(order) > PILOT_ROWS:
        tied &= priority <= priority[PILOT_ROWS - 1]
    places = np.flatnonzero(tied)
    if places.size == 0:
        return order
    X, y_encoded, sample_weight = take(order[places])
    X = X.toarray() if sparse.issparse(X) else np.asarray(X)
    hashes = row_hashes(X)
    within = np.lexsort(
        (
            np.asarray(sample_weight, dtype=np.float64),
            np.asarray(y_encoded),
            hashes["low"],
            hashes["high"],
            priority[places],
        )
    )
    order = order.copy()
    order[places] = order[places][within]
    return order


def training_row_keys(X):
    """Stable keys of the rows of ``X`` (NumPy dense or CSR, Dask, array API).

    Computed in row blocks (a dense copy of a block at most): torch and CuPy
    blocks on their device (only the keys come to the host), others on the
    host.
    """
    from ..features._row_keys import stable_row_keys

    if is_dask(X):
        return np.asarray(
            X.rechunk({1: -1})
            .map_blocks(stable_row_keys, drop_axis=1, dtype=np.uint64)
            .compute()
        )
    keys = np.empty(X.shape[0], dtype=np.uint64)
    for rows in row_blocks(X, 8 * X.shape[1]):
        # Sparse blocks densified; the standard indexes every axis: (rows, ...).
        # Device blocks are hashed on their device (stable_row_keys decides).
        part = X[rows].toarray() if sparse.issparse(X) else X[rows, ...]
        keys[rows] = stable_row_keys(part)
    return keys


def _gradient_blocks(model, X):
    """Yield the logit input gradients of ``X`` by row blocks (bounded memory).

    A row whose gradient overflows the compute dtype (float32 inputs near
    1e19, far beyond any standardised data) counts as flat: its gradient is
    0 rather than inf or NaN, and the step stays finite.
    """
    from ..objective._description import _logit_description

    with np.errstate(all="ignore"):  # (as the blocks, below)
        description = _logit_description(model)
        dtype = X.dtype
        matrix = description.matrix.astype(dtype)  # (width, K)
        width, block = description.feature_map.head_gradients(matrix, dtype)

    def factors(features):
        return _feature_gradient_factors(description, features)

    row_bytes = dtype.itemsize * 3 * matrix.shape[1] * max(width, X.shape[1])
    for rows in row_blocks(X, row_bytes):
        # Computed under the error state, yielded outside it: the caller's
        # arithmetic keeps its own.
        with np.errstate(all="ignore"):
            grad = block(X[rows], factors).astype(dtype, copy=False)
            grad[~np.isfinite(grad).all(axis=(1, 2))] = 0.0
        yield grad


def _feature_gradient_factors(description, features):
    """``(alpha, beta)``: ``d logit_c / dz = alpha_c A[:, c] + beta_c z`` per row.

    Unnormalised logits ``z A + b``: alpha = 1, beta = None. Normalised ones
    ``(z A + a) / r + b`` with ``r = max(|[z, c]|, tiny)``: alpha = 1 / r,
    beta = -(z A + a) / r^3 (the derivative of ``1 / r`` is ``-z / r^3``;
    zero where the floor holds).
    """
    dtype = features.dtype
    n, n_classes = features.shape[0], description.matrix.shape[1]
    if not description.normalise:
        return np.ones((n, n_classes), dtype=dtype), None
    squared = np.einsum("ij,ij->i", features, features, dtype=np.float64)
    norms = np.sqrt(squared + description.lift**2)
    floored = norms <= description.tiny
    r = np.maximum(norms, description.tiny)
    raw = features @ description.matrix.astype(dtype) + description.inner_bias.astype(
        dtype
    )
    alpha = np.broadcast_to((1.0 / r)[:, None], (n, n_classes)).astype(dtype)
    beta = (-raw / (r**3)[:, None]).astype(dtype)
    beta[floored] = 0.0
    return alpha, beta


def average_gradient_outer_product(model, X, sample_weight, full):
    """Return the weighted AGOP of ``model``'s logits on rows ``X`` (float64).

    Returns its diagonal (``full=False``, shape ``(d,)``) or the whole
    ``(d, d)`` matrix.
    """
    d = X.shape[1]
    out = np.zeros((d, d) if full else d)
    start = 0
    for grad in _gradient_blocks(model, X):
        w = sample_weight[start : start + grad.shape[0]]
        start += grad.shape[0]
        flat = grad.reshape(-1, d)  # (n * K, d)
        w_rows = np.repeat(w, grad.shape[1]).astype(grad.dtype)
        if full:
            out += (flat * w_rows[:, None]).T.astype(np.float64) @ flat.astype(
                np.float64
            )
        else:
            out += w_rows.astype(np.float64) @ np.square(flat, dtype=np.float64)
    total = float(np.sum(sample_weight))
    return out / total if total > 0 else out


def metric_step(agop):
    """Return the transform of one step from an AGOP (diagonal or full), or None.

    Diagonal: per-feature scales ``sqrt(M_jj / max_k M_kk)``. Full:
    ``(M / lambda_max)^{1/2}`` (symmetric). None when ``M`` is zero or not
    finite (a model whose logits do not depend on the input): the step then
    leaves the inputs as they are.
    """
    if not np.all(np.isfinite(agop)):
        return None
    if agop.ndim == 1:
        top = float(np.max(agop, initial=0.0))
        return None if not top > 0 else np.sqrt(np.maximum(agop, 0.0) / top)
    eigenvalues, eigenvectors = np.linalg.eigh((agop + agop.T) / 2.0)
    top = float(eigenvalues[-1])
    if not top > 0:
        return None
    root = np.sqrt(np.maximum(eigenvalues, 0.0) / top)
    return (eigenvectors * root) @ eigenvectors.T


def compose(first, then):
    """Return the transform that applies ``first`` and then ``then`` to rows."""
    if first is None:
        return then
    if then is None:
        return first
    if first.ndim == 1 and then.ndim == 1:
        return first * then
    first = np.diag(first) if first.ndim == 1 else first
    then = np.diag(then) if then.ndim == 1 else then
    return first @ then


def learn_input_transform(estimator, keys, take, dtype):
    """Learn the input transform of ``estimator`` from its training rows.

    Parameters
    ----------
    estimator : KernelMarginSoftmaxClassifier
        Its ``metric``, ``metric_steps``, ``random_state`` and the settings the
        pilot copies.
    keys : ndarray of shape (n_samples,) and dtype uint64
        Stable keys of the training rows (:func:`training_row_keys`): they
        choose the pilot's rows (:func:`metric_sample`).
    take : callable
        ``take(rows) -> (X, y_encoded, sample_weight)`` of the training rows
        at the indices ``rows`` (in that order), as NumPy arrays (the weights including
        the class weights): the one thing the NumPy, array API and Dask fits
        do differently.
    dtype : numpy dtype
        The fit's compute dtype: the pilot and the gradients run in it.

    Returns
    -------
    ndarray of shape (d,) or (d, d), or None (no step changed anything).
    """
    rng = check_random_state(estimator.random_state)
    rows, agop_rows = metric_sample(keys, rng, take)
    seed = rng.randint(np.iinfo(np.int32).max)
    X, y_encoded, sample_weight = take(rows)
    X = (X.toarray() if sparse.issparse(X) else np.asarray(X)).astype(dtype, copy=False)
    y_encoded = np.asarray(y_encoded)
    sample_weight = np.asarray(sample_weight, dtype=np.float64)
    if np.unique(y_encoded[sample_weight > 0]).shape[0] < 2:
        return None  # the sample cannot train a classifier: no metric
    # The pilot reads the rows before (and between) the metric steps, whose
    # scales differ from the final map's: its width is always "scale" of the
    # rows it sees. A numeric ``gamma`` is the final map's width, in the space
    # of the transformed rows, and must not reach the pilot.
    pilot = clone(estimator).set_params(
        metric=None,
        gamma="scale",
        n_components=min(
            estimator._kernel_features().width(len(keys)), PILOT_COMPONENTS
        ),
        tol=estimator.tol * PILOT_TOL_FACTOR,
        class_weight=None,
        warm_start=False,
        compute_dtype=np.dtype(dtype).name,
        random_state=seed,
        verbose=0,
    )
    # The pilot runs L-BFGS with scipy's 10 curvature pairs, not the final
    # fit's 50: stopped at its loose tol, a pilot with 50 pairs gets further
    # along its path and carries a last-bit change of the rows into the metric,
    # hundreds of times further than with 10 (the benchmarks page, "Label
    # stability").
    pilot._solver_memory = None
    full = estimator.metric == "full"
    transform = None
    for _ in range(int(estimator.metric_steps)):
        current = apply_input_transform(X, transform)
        with warnings.catch_warnings():
            # A pilot stopped early still points the way; the user's fit warns,
            # and has warned of its rows' scales once (a pilot's rows are theirs,
            # or theirs after a metric step: a second warning, another number).
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", FeatureScaleWarning)
            pilot.fit(current, y_encoded, sample_weight=sample_weight)
        agop = average_gradient_outer_product(
            pilot, current[agop_rows], sample_weight[agop_rows], full
        )
        step = metric_step(agop)
        if step is None:
            break
        transform = compose(transform, step)
    return transform
