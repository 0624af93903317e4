r"""The Nyström and random Fourier maps on array API inputs (torch, CuPy, ...).

Fitting a map draws its randomness on the host with the same ``RandomState``
as the NumPy fit, so that a torch fit and a NumPy fit of the same data and
seed use the same centres or frequencies (their features then agree to
round-off), and moves the fitted arrays to the input's device:

* :class:`~sklmargin.NystroemFeatures` chooses its centres among the distinct
  training rows (a hash of every row, :mod:`sklmargin.features._centres`): the fit
  copies ``X`` to the host **once** for that, factors the ``M x M`` centre
  kernel there in float64, and moves the centres and ``U Lambda^{-1/2}`` to the
  device;
* :class:`~sklmargin.RandomFourierFeatures` needs only ``gamma``: the weighted
  variance of ``X`` (``gamma="scale"``) is computed in the namespace, the
  frequencies drawn on the host and moved to the device.

``transform`` runs in the namespace on the device, by row blocks, with the
same formulas and the same float32 range guards as the NumPy maps:
:math:`z(x) = \exp(-\gamma \lVert x - c \rVert^2)\, U \Lambda^{-1/2}` and
:math:`z(x) = \sqrt{2/D}\,[\cos(\omega^\top x), \sin(\omega^\top x)]`.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils.array_api import (
    float64_supported,
    numpy_dtype,
    row_slices,
    to_device,
    to_numpy,
)
from .._utils.compat import array_api_compat
from ._gamma import gamma_from_variance


def _wide(xp, device):
    return xp.float64 if float64_supported(xp, device) else xp.float32


def weighted_variance(X, sample_weight, xp):
    """Sample-weighted variance of all entries of ``X`` (namespace, float64).

    The NumPy map's :func:`~sklmargin.features._gamma.scale_gamma`, two
    passes over centred row blocks, computed on ``X``'s device.
    """
    device = array_api_compat.device(X)
    wide = _wide(xp, device)
    n_samples, n_features = X.shape
    sw = to_device(sample_weight, xp, device, dtype=wide)
    total_weight = float(np.sum(sample_weight)) * n_features
    row_sums = xp.sum(xp.astype(X, wide), axis=1)
    mean = float(xp.sum(sw * row_sums)) / total_weight
    total = 0.0
    for rows in row_slices(n_samples, 8 * n_features):
        centred = xp.astype(X[rows, :], wide) - mean
        total += float(xp.sum(sw[rows] * xp.sum(centred * centred, axis=1)))
    return total / total_weight


def _move_fitted_arrays(feature_map, xp, device):
    """Move a fitted map's array attributes to ``device`` (dtypes kept)."""
    for key, value in list(vars(feature_map).items()):
        if key.endswith("_") and isinstance(value, np.ndarray):
            setattr(feature_map, key, to_device(value, xp, device))
    return feature_map


def fit_map_namespace(feature_map, X, sample_weight, xp, device):
    """Fit ``feature_map`` on an array API ``X``; arrays end on ``device``.

    Parameters
    ----------
    feature_map : NystroemFeatures or RandomFourierFeatures
        Unfitted.
    X : array of shape (n_samples, n_features)
        float32 or float64, namespace ``xp``.
    sample_weight : ndarray of shape (n_samples,) or None
        Host weights.

    Returns
    -------
    The fitted map.
    """
    sample_weight = (
        np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight)
    )
    if feature_map._map_kind == "nystroem":
        # Centres are chosen among the distinct rows by their hashes: on the
        # host, once, exactly as the NumPy fit (documented copy of X).
        feature_map.fit(to_numpy(X), sample_weight=sample_weight)
        return _move_fitted_arrays(feature_map, xp, device)
    # Random Fourier features: only gamma depends on the data.
    gamma = feature_map.gamma
    if isinstance(gamma, str):  # "scale"
        variance = weighted_variance(X, sample_weight, xp)
        gamma = gamma_from_variance(variance, X.shape[1])
    dtype = numpy_dtype(X.dtype)
    requested = feature_map.gamma
    feature_map.set_params(gamma=gamma)
    try:
        # The frequencies depend on n_features, n_components and the seed
        # only: a single host row draws the NumPy fit's.
        feature_map.fit(np.zeros((1, X.shape[1]), dtype=dtype))
    finally:
        feature_map.set_params(gamma=requested)
    return _move_fitted_arrays(feature_map, xp, device)


def _rbf_block(A, B, gamma, xp):
    """``exp(-gamma |a - b|^2)``, as ``features._centres.rbf_kernel_block``."""
    device = array_api_compat.device(A)
    root = math.sqrt(gamma)
    if A.dtype != xp.float64:
        limit = math.sqrt(float(np.finfo(numpy_dtype(A.dtype)).max)) / (
            4 * max(A.shape[1], 1)
        )
        largest = root * max(float(xp.max(xp.abs(A))), float(xp.max(xp.abs(B))))
        if largest > limit:
            wide = _wide(xp, device)
            kernel = _rbf_block(xp.astype(A, wide), xp.astype(B, wide), gamma, xp)
            return xp.astype(kernel, A.dtype)
    A = A * root
    B = B * root
    D = A @ B.T
    D = D * -2.0
    D = D + xp.sum(A * A, axis=1)[:, None]
    D = D + xp.sum(B * B, axis=1)[None, :]
    D = xp.maximum(D, 0.0)
    return xp.exp(-D)


def _nystroem_transform(feature_map, X, xp, device):
    dtype = X.dtype
    centres = to_device(feature_map.components_, xp, device, dtype=dtype)
    offset = xp.mean(centres, axis=0)
    centres = centres - offset
    normalization = to_device(feature_map.normalization_, xp, device, dtype=dtype)
    itemsize = numpy_dtype(dtype).itemsize
    blocks = [
        _rbf_block(X[rows, :] - offset, centres, feature_map.gamma_, xp) @ normalization
        for rows in row_slices(X.shape[0], itemsize * max(centres.shape[0], X.shape[1]))
    ]
    return xp.concat(blocks, axis=0) if len(blocks) != 1 else blocks[0]


def _rff_transform(feature_map, X, xp, device):
    dtype = X.dtype
    fitted = to_device(feature_map.random_weights_, xp, device)  # fit dtype
    weights = xp.astype(fitted, dtype)
    offset = to_device(feature_map.random_offset_, xp, device, dtype=dtype)
    n_odd = offset.shape[0]
    n_pairs = weights.shape[1] - n_odd
    n_out = 2 * n_pairs + n_odd
    scale = math.sqrt(2.0 / n_out)
    reach = float(xp.max(xp.sum(xp.abs(fitted), axis=0))) if weights.shape[1] else 0.0
    limit = float(np.finfo(numpy_dtype(dtype)).max) / 4.0
    itemsize = numpy_dtype(dtype).itemsize
    blocks = []
    for rows in row_slices(X.shape[0], itemsize * max(weights.shape[1], 1)):
        X_block, block_weights, block_offset = X[rows, :], weights, offset
        if dtype != xp.float64 and float(xp.max(xp.abs(X_block))) * reach > limit:
            wide = _wide(xp, device)
            X_block = xp.astype(X_block, wide)
            block_weights = xp.astype(fitted, wide)
            block_offset = xp.astype(offset, wide)
        projection = X_block @ block_weights
        parts = [
            xp.cos(projection[:, :n_pairs]),
            xp.sin(projection[:, :n_pairs]),
        ]
        if n_odd:
            parts.append(xp.cos(projection[:, n_pairs:] + block_offset))
        blocks.append(xp.astype(xp.concat(parts, axis=1) * scale, dtype))
    return xp.concat(blocks, axis=0) if len(blocks) != 1 else blocks[0]


def transform_namespace(feature_map, X, xp, device):
    """Run the map's ``transform`` in namespace ``xp`` on ``device``.

    ``X`` is validated here (``n_features_in_``, finite, float32 or float64);
    the output has ``X``'s dtype, namespace and device.
    """
    check_is_fitted(feature_map)
    X = validate_data(feature_map, X, dtype=[xp.float64, xp.float32], reset=False)
    if feature_map._map_kind == "nystroem":
        return _nystroem_transform(feature_map, X, xp, device)
    return _rff_transform(feature_map, X, xp, device)
