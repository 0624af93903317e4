"""Fit and predict on Dask arrays: statistics in passes, L-BFGS on the client.

``fit(X, y)`` with a ``dask.array`` ``X`` comes here (the one dispatch line at
the top of :meth:`BaseMarginSoftmax._fit`). It runs the in-memory fit's steps
with every step that touches all rows turned into a pass over row chunks on
the workers, the results reduced on the client and fed to the in-memory
fit's own functions (:func:`~sklmargin._utils.validation.encode_labels`,
:meth:`BaseMarginSoftmax._solve`):

1. labels, exact weight totals per class and the weights' extremes (one
   pass), checked and encoded on the client by the in-memory functions
   (labels, weights, ``class_weight``), so a bad input raises the in-memory
   message and "balanced" gets the in-memory factors whatever the chunking
   (with class weights, one more pass over the labels and weights, not
   ``X``, for the effective weights' exact totals);
2. for the kernel estimator with ``gamma="scale"``, the weighted variance of
   all entries (two passes, centred as in the in-memory fit); the feature map
   is then fitted on the client (:mod:`sklmargin.integrations.dask._features`);
3. the lift (one pass, if lifted): each chunk's
   :func:`~sklmargin.objective._rows.lift_statistics`, combined by the
   in-memory finisher :func:`~sklmargin.objective._rows.lift_from_statistics`;
4. the prepared chunks (feature map, lift, unit rows), persisted on the
   workers when they fit in half their memory, else recomputed per
   evaluation (:mod:`sklmargin.integrations.dask._objective`); for the
   angle losses their largest row norm (one pass) feeds the in-memory fit's
   check that the logit scale fits the dtype
   (:func:`~sklmargin.objective._pointwise.checked_logit_scale`);
5. :meth:`BaseMarginSoftmax._solve` on a
   :class:`~sklmargin.integrations.dask._objective.DaskMarginObjective`: its
   cold start asks for the class sums of the unit rows (one pass, the
   in-memory sums per chunk, added in chunk order) or, for
   L-Softmax, the plain-softmax problem over the raw feature chunks, itself
   distributed; the bias problem and the continuation are the in-memory ones.

Only small things come back to the client: class labels and totals, a few
scalars, ``K x M`` class sums and one ``K x M`` gradient per evaluation.
Nothing in the core imports Dask: this module imports it only for Dask input.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
from sklearn.utils.validation import assert_all_finite

from ..._utils.array_api import is_dask
from ..._utils.validation import (
    _check_weight_values,
    check_weight_total,
    class_weight_factors,
    encode_labels,
    exact_class_totals,
    rounded_totals,
)
from ...features._input_transform import apply_input_transform
from ...losses._additive import Softmax
from ...objective._pointwise import checked_logit_scale
from ...objective._rows import lift_from_statistics
from ._cluster import _client, share
from ._features import fit_feature_map_dask
from ._objective import (
    DaskMarginObjective,
    chunk_class_sums,
    chunk_largest_norm,
    chunk_lift_statistics,
    map_chunks,
    ordered_sum,
    persist_here,
    prepare_chunk,
)

#: Whether prepared chunks are persisted on the workers: None decides by size
#: (persist when they take at most half the workers' memory), True/False force
#: it (the benchmark compares both).
persist_chunks = None


# -- worker-side helpers -----------------------------------------------------
def _chunk_labels(X, y, sample_weight):
    """Check one chunk's rows; its labels, their exact weight totals, the extremes.

    The totals are :func:`~sklmargin._utils.validation.exact_class_totals`
    (None for weights that are not all finite: the client refuses them). The
    extremes (smallest and largest weight, NaN if any is NaN) let the
    client check every weight with the in-memory rule
    (:func:`~sklmargin._utils.validation.check_weights`): all are finite and
    non-negative exactly when the extremes are, and they sum to a positive
    number exactly when the largest extreme is positive.
    """
    assert_all_finite(X, input_name="X")
    weights = np.ones(len(y)) if sample_weight is None else sample_weight
    labels, inverse = np.unique(y, return_inverse=True)
    return labels, *_exact_totals(inverse.ravel(), weights, len(labels))


def _exact_totals(y_encoded, weights, n_classes):
    """Exact per-class totals of finite weights (else None), and their extremes."""
    weights = np.asarray(weights, dtype=np.float64)
    extremes = (np.min(weights), np.max(weights))
    if not np.all(np.isfinite(weights)):
        return None, extremes
    return exact_class_totals(y_encoded, weights, n_classes), extremes


def _effective_totals(encoded, n_classes):
    return _exact_totals(*encoded, n_classes)


def _encode(y, sample_weight, classes, factors):
    """Labels as indices into ``classes``; weights times ``class_weight``."""
    y_encoded = np.searchsorted(classes, y)
    weights = (
        np.ones(y.shape[0])
        if sample_weight is None
        else np.asarray(sample_weight, dtype=np.float64)
    )
    if factors is not None:
        weights = weights * factors[y_encoded]
    return y_encoded, weights


def _prepare(X, encoded, mapper, normalize, constant):
    return prepare_chunk(X, *encoded, mapper, normalize, constant)


def _on_chunk(X, encoded, function, *args):
    return function(X, encoded[1], *args)


def _call(estimator, method, X):
    return getattr(estimator, method)(X)


# -- client side ---------------------------------------------------------------
def _check_X(X):
    import dask.array as da

    if not isinstance(X, da.Array):
        raise TypeError(
            f"Dask input must be a dask.array.Array; got {type(X).__name__} "
            "(for a Dask DataFrame, pass df.to_dask_array(lengths=True))."
        )
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D dask array X; got {X.ndim} dimensions.")
    if any(np.isnan(size) for size in X.chunks[0]):
        raise ValueError(
            "X has unknown chunk sizes; call X.compute_chunk_sizes() first."
        )
    if not isinstance(X._meta, np.ndarray):
        raise TypeError("Dask arrays of sparse chunks are not supported; densify.")
    if X.dtype not in (np.float32, np.float64):
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must be numeric; got dtype {X.dtype}.")
        X = X.astype(np.float64)
    return X.rechunk({1: -1})


def _aligned(values, X, name):
    """``values`` (numpy, scalar or dask) as a dask array chunked like X's rows."""
    import dask.array as da

    n_samples = X.shape[0]
    if values is None:
        return None
    if np.isscalar(values):
        return da.full(n_samples, values, dtype=np.float64, chunks=(X.chunks[0],))
    if not is_dask(values):
        values = np.asarray(values)
        if name == "sample_weight":
            values = values.astype(np.float64)
        values = da.from_array(values, chunks=values.shape)
    if values.ndim != 1 or values.shape[0] != n_samples:
        raise ValueError(
            f"{name} must have shape ({n_samples},) to match X; got {values.shape}."
        )
    return values.rechunk((X.chunks[0],))


def _row_blocks(array):
    blocks = array.to_delayed().ravel().tolist()
    sizes = array.chunks[0]
    return (
        [block for block, size in zip(blocks, sizes, strict=True) if size]
        if sizes
        else []
    )


def _should_persist(n_rows, n_features, itemsize):
    if persist_chunks is not None:
        return bool(persist_chunks)
    size = n_rows * (n_features + 2) * itemsize
    client = _client()
    if client is not None:
        workers = client.scheduler_info()["workers"].values()
        memory = sum(worker.get("memory_limit") or 0 for worker in workers)
    else:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return not memory or size <= 0.5 * memory


def _keeps_cosines(source, n_features, n_classes):
    """Whether the start keeps each chunk's ``n_c x K`` float64 cosines.

    Only beside persisted chunks (the last :meth:`_Source.chunks`), and only
    where rows and cosines together meet the persist rule: with few features
    and many classes the cosines outweigh the rows many times over.
    """
    itemsize = source.dtype.itemsize
    columns = n_features + -(-8 * n_classes // itemsize)  # the cosines' share
    return source.persisted and _should_persist(source.n_samples, columns, itemsize)


def _delayed_map(function, columns, *args):
    """``function(*row_blocks, *args)`` per row chunk, as delayed tasks."""
    import dask

    task = dask.delayed(function, pure=False)
    return [task(*blocks, *args) for blocks in zip(*columns, strict=True)]


class _Source:
    """The row blocks of X and of the encoded labels/weights, as delayed objects."""

    def __init__(self, X, y, sample_weight):
        import dask

        self.dtype = X.dtype
        self.n_samples, self.n_features_in = X.shape
        self.x_blocks = _row_blocks(X)
        self.y_blocks = _row_blocks(y)
        self.w_blocks = (
            [None] * len(self.x_blocks)
            if sample_weight is None
            else _row_blocks(sample_weight)
        )
        columns = (self.x_blocks, self.y_blocks, self.w_blocks)
        self.chunk_totals = dask.compute(*_delayed_map(_chunk_labels, columns))

    def replace_rows(self, X):
        """Use the rows ``X`` (the learned metric's, lazily) from now on."""
        self.x_blocks = _row_blocks(X)

    def encode(self, classes, factors):
        columns = (self.y_blocks, self.w_blocks)
        self.encoded = _delayed_map(_encode, columns, share(classes), share(factors))

    def per_chunk(self, function, *args):
        """``function(rows, weights, *args)`` on every chunk, computed together."""
        import dask

        columns = (self.x_blocks, self.encoded)
        return dask.compute(*_delayed_map(_on_chunk, columns, function, *args))

    def chunks(self, keep, mapper, normalize, constant, n_features):
        columns = (self.x_blocks, self.encoded)
        tasks = _delayed_map(_prepare, columns, mapper, normalize, constant)
        chunks = [task for task, k in zip(tasks, keep, strict=True) if k]
        self.persisted = _should_persist(
            self.n_samples, n_features, self.dtype.itemsize
        )
        if self.persisted:
            chunks = list(persist_here(chunks))
        return chunks


def _fit_input_transform(estimator, X, y, sample_weight, classes, factors):
    """Learn the kernel estimator's metric from rows fetched to the client.

    The pilot sees the rows the in-memory fit's pilot sees (the same draw,
    :func:`sklmargin.estimators._metric.metric_sample`): only those rows, a
    few thousand, are computed and brought back.
    """

    def take(rows):
        y_rows = np.asarray(y[rows].compute())
        w_rows = None if sample_weight is None else sample_weight[rows].compute()
        y_encoded, weights = _encode(y_rows, w_rows, classes, factors)
        return np.asarray(X[rows].compute()), y_encoded, weights

    from ...estimators._metric import training_row_keys

    # Only a kernel estimator with a metric reads the keys (a pass over X).
    keys = training_row_keys(X) if getattr(estimator, "metric", None) else None
    return estimator._learn_input_transform(X.shape, X.dtype, take, keys)


def _classes_and_weights(source, class_weight):
    """Classes, ``class_weight`` factors, effective class, chunk and overall totals.

    The in-memory fit's label and weight checks, on what the chunks reported:
    :func:`~sklmargin._utils.validation.encode_labels` on their distinct
    labels, the weight rule on their weights' extremes, and
    :func:`~sklmargin._utils.validation.class_weight_factors` on the classes'
    exact totals (the chunks' integers added: the in-memory ones, whatever the
    chunking). With class weights, the effective weights' exact totals take a
    pass over the chunks' labels and weights (not ``X``), so that the class
    totals of the start are the in-memory ones too. Encodes ``source``.
    """
    labels, chunk_totals, extremes = zip(*source.chunk_totals, strict=True)
    classes = encode_labels(np.concatenate(labels))[0]
    extremes = np.asarray(extremes, dtype=np.float64)
    _check_weight_values(extremes, "sample_weight", total=False)
    per_chunk = [[0] * len(classes) for _ in labels]
    for row, chunk_labels in enumerate(labels):
        for index, total in zip(
            np.searchsorted(classes, chunk_labels), chunk_totals[row], strict=True
        ):
            per_chunk[row][index] = total
    raw = [sum(column) for column in zip(*per_chunk, strict=True)]
    check_weight_total(rounded_totals([sum(raw)])[0], "sample_weight")
    factors = class_weight_factors(class_weight, classes, raw)
    source.encode(classes, factors)
    if factors is not None:
        import dask

        tasks = _delayed_map(_effective_totals, (source.encoded,), len(classes))
        per_chunk, extremes = zip(*dask.compute(*tasks), strict=True)
        extremes = np.asarray(extremes, dtype=np.float64)
        _check_weight_values(extremes, "sample_weight * class_weight", total=False)
    chunk_sums = [sum(row) for row in per_chunk]
    sw_total = rounded_totals([sum(chunk_sums)])[0]
    if factors is not None:  # (without, it is the total checked above)
        check_weight_total(sw_total, "sample_weight * class_weight")
    totals = [sum(column) for column in zip(*per_chunk, strict=True)]
    return classes, factors, rounded_totals(totals), chunk_sums, float(sw_total)


def fit_dask(estimator, X, y, sample_weight=None):
    """Fit ``estimator`` (a BaseMarginSoftmax) on Dask arrays; see module doc."""
    margin, m, s, lambda_min = estimator._validate_hyperparameters()
    X = _check_X(X)
    y = _aligned(y, X, "y")
    sample_weight = _aligned(sample_weight, X, "sample_weight")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"Found array with shape {X.shape}; need at least 1x1.")
    source = _Source(X, y, sample_weight)
    classes, factors, totals, chunk_sums, sw_total = _classes_and_weights(
        source, estimator.class_weight
    )
    keep = [total > 0 for total in chunk_sums]
    estimator.classes_ = classes
    transform = _fit_input_transform(estimator, X, y, sample_weight, classes, factors)
    if transform is not None:  # the kernel's learned metric: lazy, per chunk
        source.replace_rows(apply_input_transform(X, transform))
    estimator.n_features_in_ = X.shape[1]
    if hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_
    n_features = fit_feature_map_dask(estimator, source)
    mapper = share(estimator._map_features)

    constant = 0.0
    if margin.normalizes_X and estimator.constant_feature:  # one pass: the lift
        statistics = source.per_chunk(chunk_lift_statistics, mapper)
        constant = lift_from_statistics(
            statistics, sw_total, n_features, estimator.constant_feature
        )
    n_rows = n_features + (constant > 0)
    chunks = source.chunks(keep, mapper, margin.uses_angle, constant, n_rows)
    dtype = np.dtype(getattr(estimator, "compute_dtype_", source.dtype))
    largest = None
    if margin.uses_angle:  # the in-memory fit's scale check, at the largest norm
        import dask

        largest = [max(dask.compute(*map_chunks(chunk_largest_norm, chunks)))]
    checked_logit_scale(
        margin, s, largest, np.ones(len(classes)), dtype,
        "lower s, or scale the data (e.g. StandardScaler)",
    )  # fmt: skip
    objective = DaskMarginObjective(
        chunks, sw_total, n_rows, constant, len(classes), margin, m, s,
        estimator.C, estimator.fit_intercept, dtype,
        _keeps_cosines(source, n_rows, len(classes)),
    )  # fmt: skip

    def softmax_problem():  # plain softmax over the raw feature chunks
        raw_chunks = source.chunks(keep, mapper, False, 0.0, n_features)
        return DaskMarginObjective(
            raw_chunks, sw_total, n_features, 0.0, len(classes), Softmax(), 0.0,
            1.0, estimator.C, estimator.fit_intercept,
            keep_cosines=_keeps_cosines(source, n_features, len(classes)),
        )  # fmt: skip

    def class_sums():  # the chunks' class sums, added in chunk order
        return ordered_sum(map_chunks(chunk_class_sums, chunks, len(classes)))

    return estimator._solve(objective, lambda_min, totals, class_sums, softmax_problem)


def predict_dask(estimator, method, X):
    """``estimator.method`` applied per row chunk: a lazy dask array.

    Each chunk runs the in-memory method on its worker, so the results are the
    in-memory ones, chunk by chunk. The method first runs on one row of zeros
    on the client: its own checks (fitted, number of features) raise there,
    and its result gives the chunks' trailing shape and dtype. Its warnings
    are dropped: the chunks run the same method and warn for their own rows
    (a warning about the row of zeros, or a feature-name warning more, would
    be one too many).
    """
    import dask
    import dask.array as da

    X = _check_X(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        probe = getattr(estimator, method)(np.zeros((1, X.shape[1]), X.dtype))
    shared = share(estimator)
    task = dask.delayed(_call, pure=False)
    parts = [
        da.from_delayed(
            task(shared, method, block),
            shape=(size, *probe.shape[1:]),
            dtype=probe.dtype,
        )
        for block, size in zip(X.to_delayed().ravel(), X.chunks[0], strict=True)
    ]
    return da.concatenate(parts, axis=0)
