"""Array API helpers: which namespace an input lives in, and moving arrays.

With ``sklearn.set_config(array_api_dispatch=True)`` the estimators fit and
predict on array API inputs (torch tensors, array-api-strict arrays, CuPy
arrays) in their own namespace and on their own device
(:mod:`sklmargin.estimators._namespace`). This module holds the few things every part
of that path needs, written as small own helpers rather than scikit-learn's
private ones:

* :func:`input_namespace` tells a NumPy input (``None``: the NumPy code runs,
  unchanged) from an array API input, and returns its namespace and device;
* :func:`to_numpy` and :func:`to_device` move arrays between the host and a
  device (the library's own conversion; DLPack for other libraries);
* :func:`host_inputs` and :func:`to_numpy_weights` bring labels and weights
  of any namespace to the host ("everything follows X").

The namespace comes from ``array_api_compat`` (the package when installed,
else the copy scikit-learn vendors, see :mod:`sklmargin._compat`); nothing here
imports torch, CuPy or array-api-strict.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn import get_config

from . import blocks
from .compat import array_api_compat


def dispatch_enabled():
    """Whether ``sklearn.set_config(array_api_dispatch=True)`` is in force."""
    return bool(get_config().get("array_api_dispatch", False))


def _is_host(array):
    """NumPy arrays, scalars, lists, sparse matrices, pandas objects, None."""
    if array is None or isinstance(array, (np.ndarray, np.generic, list, tuple)):
        return True
    if sparse.issparse(array) or array_api_compat is None:
        return True
    return array_api_compat.is_numpy_array(array) or not (
        array_api_compat.is_array_api_obj(array)
    )


def input_namespace(X):
    """``(xp, device)`` of an array API input under dispatch, else None.

    None for NumPy arrays, sparse matrices, lists and data frames, and for any
    input while dispatch is off (scikit-learn then converts it with
    ``np.asarray``, its usual behaviour): those take the NumPy code path,
    which this check leaves as it was (one ``isinstance`` for an ndarray).
    """
    if isinstance(X, np.ndarray) or _is_host(X) or not dispatch_enabled():
        return None
    xp = array_api_compat.array_namespace(X)
    return xp, array_api_compat.device(X)


def namespace_name(array):
    """Short name of an array's library, for error messages."""
    if _is_host(array):
        return "numpy" if array is not None else "None"
    return array_api_compat.array_namespace(array).__name__.replace(
        "array_api_compat.", ""
    )


def to_numpy(array):
    """Return a NumPy copy (or view) of ``array`` on the host; NumPy as is."""
    if _is_host(array):
        return np.asarray(array)
    if array_api_compat.is_torch_array(array):
        return array.detach().cpu().numpy()
    if array_api_compat.is_cupy_array(array):  # pragma: no cover - needs a GPU
        return array.get()
    xp = array_api_compat.array_namespace(array)
    if xp.__name__ == "array_api_strict":
        return np.asarray(xp.asarray(array, device=xp.Device("CPU_DEVICE")))
    try:
        return np.from_dlpack(array)
    except (AttributeError, TypeError, BufferError, RuntimeError, ValueError):
        return np.asarray(array)


def to_device(array, xp, device, dtype=None):
    """``array`` (NumPy or already in ``xp``) as an ``xp`` array on ``device``."""
    if dtype is not None and isinstance(array, np.ndarray):
        array = array.astype(numpy_dtype(dtype), copy=False)
    if not _is_host(array):
        if array_api_compat.array_namespace(array) is not xp:
            array = to_numpy(array)
        elif array_api_compat.device(array) != device:
            array = xp.asarray(array, device=device, copy=True)
    result = xp.asarray(array, device=device)
    if dtype is not None and result.dtype != dtype:
        result = xp.astype(result, dtype)
    return result


def numpy_dtype(dtype):
    """Return the NumPy dtype of the same name as an array API dtype.

    CuPy's (and ``array_api_compat.numpy``'s) dtypes *are* NumPy's scalar
    types (``cupy.float64 is numpy.float64``), whose ``str`` is
    ``"<class 'numpy.float64'>"``: those convert directly; torch's and
    array-api-strict's (``torch.float64``, ``array_api_strict.float64``) by
    the name after the last dot.
    """
    if isinstance(dtype, np.dtype):
        return dtype
    if isinstance(dtype, type) and issubclass(dtype, np.generic):
        return np.dtype(dtype)
    name = str(dtype).rsplit(".", 1)[-1]
    return np.dtype(name)


def float64_supported(xp, device):
    """Whether ``device`` computes in float64 (not Apple's MPS, for one)."""
    try:
        xp.zeros(1, dtype=xp.float64, device=device)
    except (TypeError, RuntimeError, ValueError):  # pragma: no cover - needs MPS
        return False
    return True


def row_slices(n_rows, row_bytes):
    """Consecutive row slices within the NumPy code's block budget.

    :func:`sklmargin._utils.blocks.rows_per_block` rows each (read at call
    time: the tests that shrink the budget shrink these blocks too).
    """
    block = blocks.rows_per_block(row_bytes)
    return [
        slice(start, min(start + block, n_rows)) for start in range(0, n_rows, block)
    ]


def fitted_on_device(estimator):
    """Whether ``estimator`` was fitted on array API inputs (``coef_`` not NumPy)."""
    coef = getattr(estimator, "coef_", None)
    return coef is not None and not isinstance(coef, np.ndarray)


def host_inputs(y, sample_weight):
    """``y`` and ``sample_weight`` on the host when they are array API arrays.

    A NumPy ``X`` under dispatch takes the NumPy path, and its labels and
    weights follow it there, as scikit-learn moves them to ``X``'s namespace
    (``n`` numbers each; documented). Without dispatch they are left to
    scikit-learn's usual ``np.asarray``.
    """
    if (y is None or isinstance(y, np.ndarray)) and (
        sample_weight is None or isinstance(sample_weight, np.ndarray)
    ):
        return y, sample_weight
    if not dispatch_enabled():
        return y, sample_weight
    y = y if _is_host(y) else to_numpy(y)
    if not _is_host(sample_weight):
        sample_weight = to_numpy(sample_weight)
    return y, sample_weight


def to_numpy_weights(sample_weight, n_samples):
    """Return validated host weights (float64) from any namespace, or None."""
    if sample_weight is None:
        return None
    from .validation import check_weights

    weights = sample_weight if _is_host(sample_weight) else to_numpy(sample_weight)
    return check_weights(weights, n_samples)
