"""Where a feature map's arrays live: the input's namespace, row blocks, devices.

The maps are written once against an array namespace ``xp``: NumPy's (through
``array_api_compat``) for NumPy and sparse input, the input's own for array
API input under ``array_api_dispatch`` (torch, CuPy, array-api-strict). The few
things that differ between a host and a device fit are here:

* :func:`map_namespace` names the namespace and device of an input;
* :func:`row_blocks` cuts the rows into blocks of the memory budget (a quarter
  of it on a device, whose operations allocate where NumPy's write ``out=``);
* :func:`in_float64` widens arrays whose float32 computation would overflow,
  on the device where it has float64, on the host where it has not (Apple's
  MPS);
* :func:`host_weights` and :func:`to_fit_device`: a map draws its randomness
  and chooses its centres on the host, from host weights, and its fitted
  arrays then follow ``X`` to its device;
* :func:`check_transform_input` refuses input of another namespace or device
  than the fit's.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils import gen_batches
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils.array_api import (
    check_same_namespace,
    input_namespace,
    row_slices,
    to_device,
    to_numpy,
    to_numpy_weights,
    wide_dtype,
)
from .._utils.blocks import rows_per_block
from .._utils.compat import array_api_compat


def map_namespace(X):
    """Return ``(xp, device, on_device)`` of ``X`` (NumPy's for host input)."""
    found = input_namespace(X)
    if found is None:
        return array_api_compat.array_namespace(np.empty(0)), "cpu", False
    return (*found, True)


def row_blocks(X, row_bytes):
    """Row slices of ``X`` within the block budget, for ``row_bytes`` per row."""
    if isinstance(X, np.ndarray) or sp.issparse(X):
        return gen_batches(X.shape[0], rows_per_block(row_bytes))
    return row_slices(X.shape[0], row_bytes)


def peak(X) -> float:
    """Largest magnitude of a dense, CSR or device array (0 when empty)."""
    data = X.data if sp.issparse(X) else X
    if isinstance(data, np.ndarray):
        return float(np.max(np.abs(data), initial=0.0))
    xp = array_api_compat.array_namespace(data)
    return float(xp.max(xp.abs(data)))


def in_float64(xp, device, *arrays):
    """Return ``arrays`` in float64: in ``xp``, or on the host (no float64)."""
    if wide_dtype(xp, device) == xp.float64:
        return [xp.astype(array, xp.float64) for array in arrays]
    return [to_numpy(array).astype(np.float64) for array in arrays]


def host_weights(sample_weight, n_samples):
    """Return validated float64 host weights of any namespace (None: unit)."""
    weights = to_numpy_weights(sample_weight, n_samples)
    return np.ones(n_samples) if weights is None else weights


def to_fit_device(feature_map, xp, device, on_device):
    """Move a fitted map's array attributes to ``X``'s device (dtypes kept)."""
    for key, value in list(vars(feature_map).items()):
        if on_device and key.endswith("_") and isinstance(value, np.ndarray):
            setattr(feature_map, key, to_device(value, xp, device))
    return feature_map


def check_transform_input(feature_map, X, fitted, accept_sparse=False):
    """Validate ``transform``'s ``X`` against the fit: ``(X, xp, device)``.

    ``fitted`` names a fitted array attribute, NumPy after a host fit and on
    the fit's device after a device fit: input of another namespace or device
    is refused with the estimators' message (``move_estimator_to`` moves a
    fitted map).
    """
    check_is_fitted(feature_map)
    found = input_namespace(X)
    name = f"{type(feature_map).__name__}.transform()"
    check_same_namespace(
        getattr(feature_map, fitted), X, name, "transform",
        *(found or (None, None)), verb="transform",
    )  # fmt: skip
    xp, device, _ = map_namespace(X)
    X = validate_data(
        feature_map, X, accept_sparse=accept_sparse,
        dtype=[xp.float64, xp.float32], reset=False,
    )  # fmt: skip
    return X, xp, device
