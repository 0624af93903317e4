r"""The kernel estimator's feature map, fitted on the client from chunk statistics.

The map itself is small (frequencies or a Nystroem basis); only what it needs
from the data is reduced over the chunks:

* ``gamma="scale"``: the sample-weighted variance of all entries,
  :math:`\sigma^2 = \sum_i w_i \sum_j (x_{ij} - \mu)^2 / (d \sum_i w_i)`, in
  the in-memory fit's two passes: each chunk's
  :func:`~sklmargin.features._gamma.weighted_sum` (of the entries, then of
  the squared deviations from their mean) as an exact integer, added on the
  client, rounded once and finished by the same round-off floor for
  constant data: the in-memory ``gamma_`` to the last bit, whatever the
  chunks (with ``class_weight="balanced"`` the weights themselves come from
  chunked class totals, which may differ from the in-memory ones in the
  last bit).
* random Fourier features: nothing else; their frequencies depend only on the
  width, ``d`` and ``random_state``, so the map equals the in-memory one.
* Nystroem: the centres the in-memory fit would choose. The selectors draw
  among the distinct positive-weight rows in the order of their content hashes
  (:mod:`sklmargin.features._row_keys`), so one pass gathers each chunk's ``(hash,
  weight, row index)`` triples (24 + 8 + 8 bytes per distinct row of each
  chunk), the client makes the in-memory draw
  (:func:`~sklmargin.features._centres.choose_centres`, same ``random_state``), and a
  second pass takes the chosen rows at the indices the first pass gave (no
  second hashing). ``"uniform"`` needs the weights only and
  always equals the in-memory choice. The adaptive selectors (``"kmeans"``,
  ``"rpcholesky"``) read every distinct row: they equal it while the distinct
  rows fit in ``_GATHER_BYTES`` on the client; beyond, they run on a uniform
  sample of as many rows (weights kept), with a ``UserWarning`` and
  ``nystroem_basis_sampled_ = True``. Weight sums of rows repeated across
  chunks are added in another order than in memory: non-integer weights may
  differ in the last bit (integer weights do not).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..._utils.blocks import rows_per_block
from ...features._centres import choose_centres
from ...features._gamma import (
    exact_sum,
    float_of_exact,
    gamma_from_variance,
    round_off_floor,
    weighted_sum,
)
from ...features._row_keys import distinct_row_hashes, unique_hashes

#: Most bytes of distinct rows the client gathers for an adaptive centre
#: selector (k-means, RPCholesky), which reads every row; beyond, it sees a
#: sample. Module level so that tests can shrink it.
_GATHER_BYTES = 256 * 2**20


def _take(X, index):
    return X[index]


def _distinct_row_weights(source):
    """Hashes of the distinct positive-weight rows (sorted), weights, locations.

    The locations are each chunk's ``(hashes, index)``: where
    :func:`_fetch_rows` finds a row.
    """
    per_chunk = source.per_chunk(distinct_row_hashes)
    hashes, weights, index = zip(*per_chunk, strict=True)
    merged, _, inverse = unique_hashes(np.concatenate(hashes))
    weights = np.bincount(inverse.ravel(), np.concatenate(weights), merged.shape[0])
    return merged, weights, list(zip(hashes, index, strict=True))


def _fetch_rows(source, wanted, located):
    """Fetch the rows whose hashes are ``wanted`` (sorted), in that order.

    ``located`` is each chunk's ``(hashes, index)`` from the hash pass: the
    client picks the rows to take, and the chunks are not hashed again.
    """
    import dask

    rows = np.empty((len(wanted), source.n_features_in), dtype=source.dtype)
    if not len(wanted):
        return rows
    positions, indices = [], []
    for hashes, index in located:
        position = np.minimum(np.searchsorted(wanted, hashes), len(wanted) - 1)
        hit = wanted[position] == hashes
        positions.append(position[hit])
        indices.append(index[hit])
    task = dask.delayed(_take, pure=False)
    taken = dask.compute(*map(task, source.x_blocks, indices))
    for position, chunk_rows in zip(positions, taken, strict=True):
        rows[position] = chunk_rows  # copies of a row are equal: any will do
    return rows


def _exact_sums_in(rows, weights, dtype, mean=None):
    """Return a chunk's :func:`weighted_sum`, exact, and its weights' (first pass)."""
    terms = weighted_sum(rows.astype(dtype, copy=False), weights, mean, terms=True)
    return exact_sum(terms), (exact_sum(weights) if mean is None else 0)


def _scale(source, dtype):
    """``gamma="scale"`` of the rows, as in memory, whatever the chunks.

    The rows are cast to the map's ``dtype`` first, as the in-memory fit
    casts them before its map reads their variance (float32 rows moved
    ``gamma`` by 6e-10 relative, enough to move some labels). Each chunk
    reports its sums exactly (:func:`~sklmargin.features._gamma.exact_sum`:
    one integer each), and their total is rounded once, as
    :func:`math.fsum` rounds the in-memory sums: adding each chunk's rounded
    sum instead moved ``gamma`` by an ulp with the chunking.
    """

    def total(parts):
        return float_of_exact(sum(parts))

    sums, weights = zip(*source.per_chunk(_exact_sums_in, dtype), strict=True)
    total_weight = total(weights) * source.n_features_in
    mean = total(sums) / total_weight
    squares = total(part for part, _ in source.per_chunk(_exact_sums_in, dtype, mean))
    variance = round_off_floor(squares / total_weight, mean)
    return gamma_from_variance(variance, source.n_features_in)


def _nystroem_centres(selector, source, gamma, width, rng):
    """Return the in-memory fit's Nyström centres and whether a sample chose them."""
    hashes, weights, located = _distinct_row_weights(source)
    row_bytes = source.n_features_in * source.dtype.itemsize
    max_rows = rows_per_block(row_bytes, _GATHER_BYTES)
    centres, sampled = choose_centres(
        hashes,
        weights,
        lambda chosen: _fetch_rows(source, hashes[chosen], located),
        width,
        gamma,
        selector,
        rng,
        max_rows=max_rows,
    )
    if sampled:
        warnings.warn(
            f"centres={selector!r} reads every distinct row, and the "
            f"{len(hashes)} distinct rows of this Dask array exceed what the "
            f"client gathers ({max_rows} rows, {_GATHER_BYTES / 2**20:.0f} MiB): "
            f"the centres were chosen among a uniform sample of {max_rows} of "
            "them (weights kept), so the feature map differs from the in-memory "
            "fit's (nystroem_basis_sampled_ = True). centres='uniform' selects "
            "the in-memory centres at any size.",
            UserWarning,
            stacklevel=6,
        )
    return centres, sampled


def _path_map(estimator, source):
    """Choose the in-memory fit's width and map on the gathered rows.

    ``n_components="path"`` scores models on held-out rows
    (:mod:`sklmargin.features._width`): the client gathers the (transformed)
    rows, encoded labels and weights when the memory budget holds them twice
    (:func:`~sklmargin.features._memory.memory_budget`), and walks the in-memory
    path: the same width and centres as an in-memory fit of the same rows.
    Returns the map's width, or None (the rule's width, chosen by chunks).
    """
    import dask

    from ...features._memory import memory_budget

    row_bytes = source.n_features_in * max(source.dtype.itemsize, 8)
    if 2 * source.n_samples * row_bytes > memory_budget():
        return None
    rows = np.concatenate(dask.compute(*source.x_blocks))
    encoded = dask.compute(*source.encoded)
    y_encoded = np.concatenate([labels for labels, _ in encoded])
    weights = np.concatenate([weights for _, weights in encoded])
    choice = estimator._path_map(rows, y_encoded, weights)
    if choice is None:
        return None
    feature_map = estimator.feature_map_ = choice.feature_map
    estimator.width_path_ = choice.path  # (the solver starts cold: no start)
    estimator.compute_dtype_ = np.dtype(choice.features.dtype).name
    estimator.n_components_ = int(feature_map.n_components)
    return feature_map._n_features_out


def fit_feature_map_dask(estimator, source):
    """Set ``estimator.feature_map_`` (kernel estimator); return the map's width.

    The estimator's :class:`~sklmargin.features._kernel_features.KernelFeatures`
    fits the map from what the chunks report: the exact weighted sums of
    ``gamma="scale"`` and the chosen centres. The linear estimator (no
    ``kernel_approximation``) maps nothing: the width is ``n_features_in``.
    """
    approximation = getattr(estimator, "kernel_approximation", None)
    if approximation is None:
        return source.n_features_in
    for name in ("width_path_", "_path_start"):  # (a failed fit's)
        estimator.__dict__.pop(name, None)
    if getattr(estimator, "_walks_path", lambda: False)():
        width = _path_map(estimator, source)
        if width is not None:
            return width
    sampled = []

    def centres(width, gamma, rng):
        chosen, was_sampled = _nystroem_centres(
            estimator.centres, source, gamma, width, rng
        )
        sampled.append(was_sampled)
        return chosen

    kernel = estimator._kernel_features().fit_statistics(
        source.n_samples, source.n_features_in, source.dtype,
        lambda dtype: _scale(source, dtype), centres,
    )  # fmt: skip
    estimator.compute_dtype_ = kernel.dtype_.name
    if sampled:
        estimator.nystroem_basis_sampled_ = sampled[0]
    estimator.feature_map_ = kernel.map_
    # as the in-memory fit sets it (_fit_feature_map): the kept map's width
    estimator.n_components_ = int(kernel.map_.n_components)
    return kernel.map_._n_features_out
