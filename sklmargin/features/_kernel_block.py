r"""The RBF kernel between two sets of rows, in any array namespace.

:func:`rbf_kernel_block` is the one evaluation of
:math:`k(a, b) = \exp(-\gamma \lVert a - b \rVert^2)` behind the Nyström map
(its transform and its centre kernel), the randomly pivoted Cholesky selector
and, through :func:`scaled_squared_distances`, the open-set distance score.
It runs in the namespace of its input (NumPy, torch, array-api-strict, ...):
only the row norms and the in-place clip and exponential are NumPy leaves.
"""

from __future__ import annotations

import math

import numpy as np

from .._utils.array_api import (
    get_namespace,
    in_float64,
    max_abs,
    numpy_dtype,
    to_device,
)
from .._utils.compat import array_api_compat


def _squared_row_norms(A, xp):
    if isinstance(A, np.ndarray):
        return np.einsum("ij,ij->i", A, A)
    return xp.sum(A * A, axis=1)


def scaled_squared_distances(A, B, gamma):
    r"""Return :math:`\gamma \lVert a_i - b_j \rVert^2` for all row pairs, clipped at 0.

    Both sides are scaled by :math:`\sqrt\gamma` first, then one GEMM,
    :math:`\lVert a' \rVert^2 + \lVert b' \rVert^2 - 2\, a'^\top b'`, in the
    dtype of ``A`` (:func:`rbf_kernel_block` guards the float32 range before
    calling it). Rounding can make a distance slightly negative: the clip.

    Parameters
    ----------
    A : array of shape (n_a, n_features)
    B : array of shape (n_b, n_features)
        Same namespace, device and dtype as ``A``.
    gamma : float
        Kernel coefficient.

    Returns
    -------
    D : array of shape (n_a, n_b)
    """
    xp, _ = get_namespace(A)
    root = math.sqrt(gamma)
    A = A * root
    B = B * root
    # In-place operators (the standard's; Python rebinds where an array is
    # immutable) keep two block-sized temporaries alive, not five.
    D = A @ B.T
    D *= -2.0
    D += _squared_row_norms(A, xp)[:, None]
    D += _squared_row_norms(B, xp)[None, :]
    if isinstance(D, np.ndarray):
        return np.maximum(D, 0.0, out=D)
    return xp.clip(D, min=0.0)


def rbf_kernel_block(A, B, gamma):
    r"""Return :math:`\exp(-\gamma \lVert a_i - b_j \rVert^2)` for all row pairs.

    The scaled squared distances (:func:`scaled_squared_distances`), negated
    and exponentiated in the dtype of ``A``. Scaling first keeps every
    intermediate of the order of the exponent: with ``gamma="scale"`` a
    float32 input of 1e20 has squared norms beyond float32 but scaled
    distances of order one. Scaled rows beyond ~1e17 still square past
    float32 (a user's ``gamma`` on huge data, or float32 rows of 1e30 asked of
    a float64 model): such a block is computed in float64 (on the host where
    the device has none), where ``exp(-d)`` is exactly 0.

    Parameters
    ----------
    A : array of shape (n_a, n_features)
    B : array of shape (n_b, n_features)
        Same namespace, device and dtype as ``A``.
    gamma : float
        Kernel coefficient.

    Returns
    -------
    K : array of shape (n_a, n_b)
        In the namespace, device and dtype of ``A``.
    """
    xp, _ = get_namespace(A)
    dtype = numpy_dtype(A.dtype)
    if dtype != np.float64:
        # Judged before scaling, which would itself overflow.
        limit = float(np.sqrt(np.finfo(dtype).max)) / (4 * max(A.shape[1], 1))
        if math.sqrt(gamma) * max(max_abs(A), max_abs(B)) > limit:
            device = array_api_compat.device(A)
            kernel = rbf_kernel_block(*in_float64(xp, device, A, B), gamma)
            return to_device(kernel, xp, device, dtype=A.dtype)
    K = scaled_squared_distances(A, B, gamma)
    K *= -1.0
    if isinstance(K, np.ndarray):
        return np.exp(K, out=K)
    return xp.exp(K)
