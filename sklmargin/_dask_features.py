r"""The kernel estimator's feature map, fitted on the client from chunk statistics.

The map itself is small (frequencies or a Nystroem basis); only what it needs
from the data is reduced over the chunks:

* ``gamma="scale"``: the sample-weighted variance of all entries,
  :math:`\sigma^2 = \sum_i w_i \sum_j (x_{ij} - \mu)^2 / (d \sum_i w_i)`, in
  two passes (the mean, then centred squares) as
  :func:`sklmargin._features._weighted_variance` does in memory, so integer
  weights still equal repeated rows.
* random Fourier features: nothing else; their frequencies depend only on the
  width, ``d`` and ``random_state``, so the map equals the in-memory one.
* Nystroem: its basis comes from the distinct positive-weight rows. Each chunk
  sends at most ``n_components`` of its distinct rows (a seeded subset when it
  has more); when no chunk had more, the union is exactly the in-memory basis
  and the map is the in-memory one, otherwise a sample of it.
"""

from __future__ import annotations

import numpy as np

from ._features import RandomFourierFeatures
from ._nystroem import NystroemFeatures


def _weighted_row_sum(X, encoded):
    return float(encoded[1] @ X.sum(axis=1, dtype=np.float64))


def _weighted_centred_squares(X, encoded, mean):
    centred = X.astype(np.float64) - mean
    return float(encoded[1] @ np.einsum("ij,ij->i", centred, centred))


def _distinct_rows(X, encoded, cap, seed):
    rows = np.unique(X[encoded[1] > 0], axis=0)
    if rows.shape[0] <= cap:
        return rows, False
    pick = np.random.default_rng(seed).choice(rows.shape[0], cap, replace=False)
    return rows[np.sort(pick)], True


def _gamma(estimator, source, sw_total):
    import dask

    if estimator.gamma != "scale":
        return float(estimator.gamma)
    d = source.n_features_in
    task = dask.delayed(_weighted_row_sum, pure=False)
    sums = dask.compute(
        *[task(x, e) for x, e in zip(source.x_blocks, source.encoded, strict=True)]
    )
    mean = float(np.sum(sums)) / (sw_total * d)
    task = dask.delayed(_weighted_centred_squares, pure=False)
    squares = dask.compute(
        *[
            task(x, e, mean)
            for x, e in zip(source.x_blocks, source.encoded, strict=True)
        ]
    )
    variance = float(np.sum(squares)) / (sw_total * d)
    return 1.0 / (d * variance) if variance > 0 else 1.0


def _nystroem_basis(estimator, source):
    import dask

    task = dask.delayed(_distinct_rows, pure=False)
    parts = dask.compute(
        *[
            task(x, e, estimator.n_components, index)
            for index, (x, e) in enumerate(
                zip(source.x_blocks, source.encoded, strict=True)
            )
        ]
    )
    basis = np.unique(np.concatenate([rows for rows, _ in parts]), axis=0)
    return basis, any(sampled for _, sampled in parts)


def fit_feature_map_dask(estimator, source, sw_total):
    """Set ``estimator.feature_map_`` (kernel estimator); return the map's width.

    The linear estimator (no ``kernel_approximation``) maps nothing: the width
    is ``n_features_in``.
    """
    approximation = getattr(estimator, "kernel_approximation", None)
    if approximation is None:
        return source.n_features_in
    gamma = _gamma(estimator, source, sw_total)
    # The in-memory fit's precision rule, on the whole data's size.
    dtype = estimator._resolve_compute_dtype(source.n_samples, source.dtype)
    estimator.compute_dtype_ = dtype.name
    if approximation in ("orf", "rff"):
        feature_map = RandomFourierFeatures(
            gamma=gamma,
            n_components=estimator.n_components,
            orthogonal=approximation == "orf",
            random_state=estimator.random_state,
        ).fit(np.zeros((1, source.n_features_in), dtype=dtype))
        # Report the user's gamma, as the in-memory fit does; gamma_ is resolved.
        feature_map.set_params(gamma=estimator.gamma)
    elif approximation == "nystroem":
        basis, sampled = _nystroem_basis(estimator, source)
        # Centres are chosen among the gathered distinct rows, unweighted: the
        # in-memory map when every distinct row is a centre, a sample otherwise.
        feature_map = NystroemFeatures(
            n_components=estimator.n_components,
            gamma=gamma,
            centres=estimator.centres,
            random_state=estimator.random_state,
        ).fit(basis.astype(dtype, copy=False))
        estimator.nystroem_basis_sampled_ = sampled
    else:
        raise NotImplementedError(
            f"kernel_approximation={approximation!r} has no Dask path yet."
        )
    estimator.feature_map_ = feature_map
    width = estimator._map_features(np.zeros((1, source.n_features_in), dtype))
    return width.shape[1]
