"""The learned input transform applied to rows: ``X * t`` or ``X @ T``.

The kernel estimator's learned metric (:mod:`sklmargin.estimators._metric`)
is a linear map of the inputs before the kernel map; this is the one function
that applies it, for every kind of rows (NumPy, CSR, Dask, array API), in
fit, predict, the open-set score and the ONNX reference.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from .._utils.array_api import NUMPY, get_namespace, to_device


def apply_input_transform(X, transform):
    """Rows mapped by a learned transform: ``X * t`` (diagonal) or ``X @ T``.

    The one implementation every path calls: NumPy (dense or CSR), Dask
    arrays (lazy: the operators are Dask's) and array API arrays (``xp``).

    Parameters
    ----------
    X : {ndarray, csr_matrix, dask array, array API array} of shape (n, d)
    transform : ndarray of shape (d,) or (d, d), or None
        Per-feature scales or a matrix acting on rows; None is the identity.

    Returns
    -------
    Array of the kind and dtype of ``X`` (a CSR ``X`` stays CSR under a
    diagonal transform and becomes dense under a full one).
    """
    if transform is None:
        return X
    xp, device = get_namespace(X)
    if xp is NUMPY:
        t = np.asarray(transform).astype(X.dtype, copy=False)
    else:
        t = to_device(transform, xp, device, dtype=X.dtype)
    if sparse.issparse(X) and t.ndim == 1:
        return sparse.csr_matrix(X @ sparse.diags(t)).astype(X.dtype, copy=False)
    if sparse.issparse(X):
        return np.asarray(X @ t)
    return X * t if t.ndim == 1 else X @ t
