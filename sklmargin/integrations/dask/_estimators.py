"""Fit and predict on Dask arrays: statistics in passes, L-BFGS on the client.

``fit(X, y)`` with a ``dask.array`` ``X`` comes here (the one dispatch line at
the top of :meth:`BaseMarginSoftmax._fit`). It runs the in-memory fit's steps
with every step that touches all rows turned into a pass over row chunks on
the workers, the results reduced on the client and fed to the in-memory
fit's own functions (:func:`~sklmargin.estimators._base.encode_labels`,
:meth:`BaseMarginSoftmax._solve`):

1. labels, weight totals per class and input checks (one pass);
2. for the kernel estimator with ``gamma="scale"``, the weighted variance of
   all entries (two passes, centred as in the in-memory fit); the feature map
   is then fitted on the client (:mod:`sklmargin.integrations.dask._features`);
3. the lift's weighted RMS of the feature rows (one pass, if lifted);
4. the prepared chunks (feature map, lift, unit rows), persisted on the
   workers when they fit in half their memory, else recomputed per
   evaluation (:mod:`sklmargin.integrations.dask._objective`);
5. :meth:`BaseMarginSoftmax._solve` on a
   :class:`~sklmargin.integrations.dask._objective.DaskMarginObjective`: its
   cold start asks for the class sums of the unit rows (one pass) or, for
   L-Softmax, the plain-softmax problem over the raw feature chunks, itself
   distributed; the bias problem and the continuation are the in-memory ones.

Only small things come back to the client: class labels and totals, a few
scalars, ``K x M`` class sums and one ``K x M`` gradient per evaluation.
Nothing in the core imports Dask: this module imports it only for Dask input.
"""

from __future__ import annotations

import os

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..._utils.array_api import is_dask
from ..._utils.validation import (
    _check_weight_values,
    class_weight_factors,
)
from ...estimators._base import encode_labels
from ...estimators._metric import apply_input_transform
from ...losses._additive import Softmax
from ._cluster import _client, share
from ._features import fit_feature_map_dask
from ._objective import (
    DaskMarginObjective,
    chunk_lift_statistics,
    chunk_start_statistics,
    map_chunks,
    prepare_chunk,
)

#: Whether prepared chunks are persisted on the workers: None decides by size
#: (persist when they take at most half the workers' memory), True/False force
#: it (the benchmark compares both).
persist_chunks = None


# -- worker-side helpers -----------------------------------------------------
def _chunk_labels(X, y, sample_weight):
    """Check one chunk; its distinct labels and their weight totals."""
    if not np.all(np.isfinite(X)):
        raise ValueError("Input X contains NaN or infinity.")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must be 1-D with one label per row; got {y.shape}.")
    if sample_weight is None:
        sample_weight = np.ones(X.shape[0])
    elif not np.all(np.isfinite(sample_weight)):
        raise ValueError("sample_weight must be finite; it contains NaN or infinity.")
    elif np.any(sample_weight < 0):
        raise ValueError("Negative values in data passed to sample_weight.")
    labels, inverse = np.unique(y, return_inverse=True)
    return labels, np.bincount(inverse.ravel(), sample_weight, len(labels))


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


def _lift(X, encoded, mapper):
    return chunk_lift_statistics(X, encoded[1], mapper)


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

    def lift_statistics(self, mapper):
        import dask

        columns = (self.x_blocks, self.encoded)
        return dask.compute(*_delayed_map(_lift, columns, mapper))

    def chunks(self, keep, mapper, normalize, constant, n_features):
        import dask

        columns = (self.x_blocks, self.encoded)
        tasks = _delayed_map(_prepare, columns, mapper, normalize, constant)
        chunks = [task for task, k in zip(tasks, keep, strict=True) if k]
        if _should_persist(self.n_samples, n_features, self.dtype.itemsize):
            chunks = list(dask.persist(*chunks))
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
    """Classes, ``class_weight`` factors, effective class and chunk totals."""
    labels = [labels for labels, _ in source.chunk_totals]
    classes = encode_labels(np.concatenate(labels))[0]
    per_chunk = np.zeros((len(labels), len(classes)))
    for row, (chunk_labels, totals) in enumerate(source.chunk_totals):
        per_chunk[row, np.searchsorted(classes, chunk_labels)] = totals
    totals = per_chunk.sum(axis=0)
    # The classes as pseudo-samples weighted by their totals: "balanced" then
    # reads the same weighted totals as the in-memory fit.
    factors = class_weight_factors(
        class_weight, classes, np.arange(len(classes)), totals
    )
    if factors is not None:
        per_chunk = per_chunk * factors
    chunk_sums = per_chunk.sum(axis=1)
    name = "sample_weight" if factors is None else "sample_weight * class_weight"
    _check_weight_values(chunk_sums, name)  # a positive total (the rest per chunk)
    return classes, factors, per_chunk.sum(axis=0), chunk_sums


def _lift_constant(source, mapper, n_features, sw_total, constant_feature):
    """:func:`~sklmargin.objective._rows.lift_constant` from per-chunk statistics."""
    if not constant_feature:
        return 0.0
    stats = np.array(source.lift_statistics(mapper), dtype=np.float64).reshape(-1, 2)
    peak = float(stats[:, 0].max(initial=0.0))
    if not peak > 0:
        return float(constant_feature)
    mean_square = float(stats[:, 1] @ (stats[:, 0] / peak) ** 2) / (
        sw_total * max(n_features, 1)
    )
    return float(constant_feature) * peak * float(np.sqrt(mean_square))


def _class_sums(objective):
    import dask

    parts = dask.compute(
        *map_chunks(chunk_start_statistics, objective.chunks, objective.n_classes)
    )
    sums = np.zeros((objective.n_classes, objective.n_features))
    for chunk_sums, _ in parts:  # in chunk order: reproducible
        sums += chunk_sums
    return sums


def fit_dask(estimator, X, y, sample_weight=None):
    """Fit ``estimator`` (a BaseMarginSoftmax) on Dask arrays; see module doc."""
    margin, m, s, lambda_min = estimator._validate_hyperparameters()
    X = _check_X(X)
    y = _aligned(y, X, "y")
    sample_weight = _aligned(sample_weight, X, "sample_weight")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"Found array with shape {X.shape}; need at least 1x1.")
    source = _Source(X, y, sample_weight)
    classes, factors, totals, chunk_sums = _classes_and_weights(
        source, estimator.class_weight
    )
    sw_total = float(chunk_sums.sum())
    keep = chunk_sums > 0
    source.encode(classes, factors)
    estimator.classes_ = classes
    transform = _fit_input_transform(estimator, X, y, sample_weight, classes, factors)
    if transform is not None:  # the kernel's learned metric: lazy, per chunk
        source.replace_rows(apply_input_transform(X, transform))
    estimator.n_features_in_ = X.shape[1]
    if hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_
    n_features = fit_feature_map_dask(estimator, source, sw_total)
    mapper = share(estimator._map_features)

    constant = (
        _lift_constant(source, mapper, n_features, sw_total, estimator.constant_feature)
        if margin.normalizes_X
        else 0.0
    )
    n_rows = n_features + (constant > 0)
    chunks = source.chunks(keep, mapper, margin.uses_angle, constant, n_rows)
    objective = DaskMarginObjective(
        chunks, sw_total, n_rows, constant, len(classes), margin, m, s,
        estimator.C, estimator.fit_intercept,
        np.dtype(getattr(estimator, "compute_dtype_", source.dtype)),
    )  # fmt: skip

    def softmax_problem():  # plain softmax over the raw feature chunks
        return DaskMarginObjective(
            source.chunks(keep, mapper, False, 0.0, n_features), sw_total,
            n_features, 0.0, len(classes), Softmax(), 0.0, 1.0, estimator.C,
            estimator.fit_intercept,
        )  # fmt: skip

    return estimator._solve(
        objective, lambda_min, totals, lambda: _class_sums(objective), softmax_problem
    )


def predict_dask(estimator, method, X):
    """``estimator.method`` applied per row chunk: a lazy dask array.

    Each chunk runs the in-memory method on its worker, so the results are the
    in-memory ones, chunk by chunk.
    """
    import dask
    import dask.array as da

    check_is_fitted(estimator)
    X = _check_X(X)
    if X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(estimator).__name__} is "
            f"expecting {estimator.n_features_in_} features as input."
        )
    n_classes = len(estimator.classes_)
    one_column = method in ("predict", "score_samples") or (
        method == "decision_function" and n_classes == 2
    )
    dtype = {"predict": estimator.classes_.dtype, "score_samples": np.float64}
    dtype = dtype.get(method, X.dtype)
    shared = share(estimator)
    task = dask.delayed(_call, pure=False)
    parts = [
        da.from_delayed(
            task(shared, method, block),
            shape=(size,) if one_column else (size, n_classes),
            dtype=dtype,
        )
        for block, size in zip(X.to_delayed().ravel(), X.chunks[0], strict=True)
    ]
    return da.concatenate(parts, axis=0)
