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
    RowBlockWriter,
    check_same_namespace,
    numpy_dtype,
    row_slices,
    to_device,
    to_numpy,
    to_numpy_weights,
    wide_dtype,
)
from .._utils.compat import array_api_compat
from ._centres import rbf_kernel_block
from ._gamma import gamma_from_variance, round_off_floor


def weighted_variance(X, sample_weight, xp):
    """Sample-weighted variance of all entries of ``X`` (namespace, float64).

    The NumPy map's :func:`~sklmargin.features._gamma.weighted_variance` on
    ``X``'s device: per-row sums, then per-row sums of centred squares, each
    accumulated in float64 by row blocks (a block-sized float64 copy at a time,
    never a float64 copy of ``X``) and reduced once at the end, so that the
    result does not depend on the block size.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        Validated float32 or float64 rows of namespace ``xp``.
    sample_weight : ndarray of shape (n_samples,)
        Host weights with a positive sum.
    xp : namespace

    Returns
    -------
    float
    """
    device = array_api_compat.device(X)
    wide = wide_dtype(xp, device)
    n_samples, n_features = X.shape
    sw = to_device(sample_weight, xp, device, dtype=wide)
    total_weight = float(np.sum(sample_weight)) * n_features
    slices = row_slices(n_samples, 8 * n_features)
    row_sums = RowBlockWriter(xp, (n_samples,), wide, device)
    for rows in slices:
        row_sums.write(rows, xp.sum(xp.astype(X[rows, :], wide), axis=1))
    mean = float(xp.sum(sw * row_sums.result())) / total_weight
    row_squares = RowBlockWriter(xp, (n_samples,), wide, device)
    for rows in slices:
        centred = xp.astype(X[rows, :], wide) - mean
        row_squares.write(rows, xp.sum(centred * centred, axis=1))
    variance = float(xp.sum(sw * row_squares.result())) / total_weight
    # As the NumPy variance: constant data leave only the weighted mean's
    # round-off, which is no variance (gamma_ would be up to 1e33).
    return round_off_floor(variance, mean)


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
        Namespace ``xp``; validated here as the NumPy fit validates (2-D, at
        least one row, finite, cast to float64 unless float32), with the same
        messages.
    sample_weight : array of shape (n_samples,) or None
        Weights in any namespace; brought to the host and validated.
    xp : namespace
    device : device of ``X``

    Returns
    -------
    The fitted map.
    """
    X = validate_data(feature_map, X, dtype=[xp.float64, xp.float32])
    sample_weight = to_numpy_weights(sample_weight, X.shape[0])
    if sample_weight is None:
        sample_weight = np.ones(X.shape[0])
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
    """``exp(-gamma |a - b|^2)``, as ``features._centres.rbf_kernel_block``.

    Scaled rows beyond the float32 range guard are computed in float64: on
    the device where it has float64, else on the host (a copy of this block
    and of ``B``; rows of 1e17 and more only), where ``exp(-d)`` is the NumPy
    map's exact 0 rather than the NaN of overflowed float32 distances.
    """
    device = array_api_compat.device(A)
    root = math.sqrt(gamma)
    if A.dtype != xp.float64:
        limit = math.sqrt(float(np.finfo(numpy_dtype(A.dtype)).max)) / (
            4 * max(A.shape[1], 1)
        )
        largest = root * max(float(xp.max(xp.abs(A))), float(xp.max(xp.abs(B))))
        if largest > limit:
            wide = wide_dtype(xp, device)
            if wide == A.dtype:  # no float64 on this device (Apple's MPS)
                host = [to_numpy(side).astype(np.float64) for side in (A, B)]
                kernel = rbf_kernel_block(*host, gamma)
                return to_device(kernel, xp, device, dtype=A.dtype)
            kernel = _rbf_block(xp.astype(A, wide), xp.astype(B, wide), gamma, xp)
            return xp.astype(kernel, A.dtype)
    A = A * root
    B = B * root
    # In-place operators (the standard's; Python rebinds where an array is
    # immutable) keep two block-sized temporaries alive, not five.
    D = A @ B.T
    D *= -2.0
    D += xp.sum(A * A, axis=1)[:, None]
    D += xp.sum(B * B, axis=1)[None, :]
    D = xp.clip(D, min=0.0)
    D *= -1.0
    return xp.exp(D)


def _nystroem_transform(feature_map, X, xp, device):
    dtype = X.dtype
    centres = to_device(feature_map.components_, xp, device, dtype=dtype)
    offset = xp.mean(centres, axis=0)
    centres = centres - offset
    normalization = to_device(feature_map.normalization_, xp, device, dtype=dtype)
    itemsize = numpy_dtype(dtype).itemsize
    # Blocks written into the output, as the NumPy map: one n x M allocation.
    out = RowBlockWriter(xp, (X.shape[0], normalization.shape[1]), dtype, device)
    for rows in row_slices(X.shape[0], itemsize * max(centres.shape[0], X.shape[1])):
        kernel = _rbf_block(X[rows, :] - offset, centres, feature_map.gamma_, xp)
        out.write(rows, kernel @ normalization)
    return out.result()


def _rff_parts(X_block, weights, offset, n_pairs, scale, xp):
    """Yield a block's feature groups ``cos``, ``sin`` (and ``cos(. + offset)``).

    Scaled by ``scale`` in ``X_block``'s dtype, one group at a time, so that
    each can be written before the next is computed.
    """
    projection = X_block @ weights
    yield xp.cos(projection[:, :n_pairs]) * scale
    yield xp.sin(projection[:, :n_pairs]) * scale
    if offset.shape[0]:
        yield xp.cos(projection[:, n_pairs:] + offset) * scale


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
    out = RowBlockWriter(xp, (X.shape[0], n_out), dtype, device)
    for rows in row_slices(X.shape[0], itemsize * max(weights.shape[1], 1)):
        X_block = X[rows, :]
        parts = _rff_parts(X_block, weights, offset, n_pairs, scale, xp)
        if dtype != xp.float64 and float(xp.max(xp.abs(X_block))) * reach > limit:
            # The projection would overflow float32 (cos(inf) is NaN): in
            # float64 on the device, or on the host where the device has no
            # float64 (a copy of this block; rows of 1e37 and more only).
            wide = wide_dtype(xp, device)
            if wide == dtype:
                host = [to_numpy(a).astype(np.float64) for a in (X_block, fitted)]
                host.append(to_numpy(offset).astype(np.float64))
                parts = (
                    to_device(part, xp, device, dtype=dtype)
                    for part in _rff_parts(*host, n_pairs, scale, np)
                )
            else:
                wide_parts = _rff_parts(
                    xp.astype(X_block, wide), xp.astype(fitted, wide),
                    xp.astype(offset, wide), n_pairs, scale, xp,
                )  # fmt: skip
                parts = (xp.astype(part, dtype) for part in wide_parts)
        out.write_columns(rows, parts)
    return out.result()


def transform_namespace(feature_map, X, xp, device):
    """Run the map's ``transform`` in namespace ``xp`` on ``device``.

    Parameters
    ----------
    feature_map : NystroemFeatures or RandomFourierFeatures
        Fitted, on NumPy or on array API inputs.
    X : array of shape (n_samples, n_features)
        Validated here (``n_features_in_``, finite, float32 or float64).
    xp, device : namespace and device of ``X``, or None for host input
        Host input reaches here only for a map fitted on a device, which
        refuses it.

    Returns
    -------
    array of shape (n_samples, n_components_)
        ``X``'s dtype, namespace and device.

    Raises
    ------
    ValueError
        ``X`` is of another namespace or device than the fit's inputs, with
        the estimators' wording (``move_estimator_to`` moves a fitted map).
    """
    check_is_fitted(feature_map)
    fitted = (
        feature_map.components_
        if feature_map._map_kind == "nystroem"
        else feature_map.random_weights_
    )
    name = f"{type(feature_map).__name__}.transform()"
    check_same_namespace(fitted, X, name, "transform", xp, device, verb="transform")
    X = validate_data(feature_map, X, dtype=[xp.float64, xp.float32], reset=False)
    if feature_map._map_kind == "nystroem":
        return _nystroem_transform(feature_map, X, xp, device)
    return _rff_transform(feature_map, X, xp, device)
