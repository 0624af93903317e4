r"""The RBF width ``gamma="scale"``, resolved in one place.

.. math::

    \gamma = \frac{1}{d\, \operatorname{Var}_w(X)}

the statistic behind ``SVC(gamma="scale")``, with every entry of row ``i``
weighted by ``sample_weight[i]`` (so integer weights equal repeated rows), and
1.0 for constant data. The Nyström and random Fourier maps resolve their
``gamma="scale"`` with :func:`scale_gamma`, the kernel CV estimator its grid of
multiples of it, and the Dask integration combines per-chunk sums with
:func:`gamma_from_variance` (the same formula over the chunks).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils import gen_batches

from .._utils.blocks import rows_per_block


def gamma_from_variance(variance: float, n_features: int) -> float:
    """Return ``1 / (n_features * variance)``, or 1.0 for constant data."""
    return 1.0 / (n_features * variance) if variance > 0 else 1.0


def round_off_floor(variance: float, mean: float) -> float:
    r"""Return ``variance``, or 0.0 where it is round-off of constant data.

    Constant data leave only the round-off of the weighted mean (1e-33 for 0.3
    under random weights: ``gamma`` would be 1e32): below a few ulps of
    :math:`E[x^2] = \operatorname{Var} + \mu^2` the data are constant. Every
    place that computes the variance (in memory, over Dask chunks, on a
    device) applies this one rule, so that they resolve the same ``gamma``.
    """
    if variance <= 16 * np.finfo(np.float64).eps * (variance + mean**2):
        return 0.0
    return variance


def scale_gamma(X, sample_weight=None) -> float:
    """Return ``gamma="scale"`` of ``X`` under ``sample_weight`` (None: unit).

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        Validated input (CSR when sparse).
    sample_weight : ndarray of shape (n_samples,), default=None

    Returns
    -------
    float
    """
    weights = np.ones(X.shape[0]) if sample_weight is None else sample_weight
    return gamma_from_variance(weighted_variance(X, weights), X.shape[1])


def weighted_variance(X, sample_weight: np.ndarray) -> float:
    """Return the sample-weighted variance of all entries of ``X``.

    Every entry of row ``i`` carries the weight ``sample_weight[i]``; with unit weights
    this is ``X.var()``, the statistic behind ``SVC(gamma="scale")``. Integer weights
    are therefore equivalent to repeating rows. Accumulation is in float64 whatever
    the dtype of ``X``.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        Validated input (CSR when sparse).
    sample_weight : ndarray of shape (n_samples,)
        Non-negative weights with a positive sum.

    Returns
    -------
    variance : float
        The weighted variance, 0.0 for constant data.
    """
    n_samples, n_features = X.shape
    sw = np.asarray(sample_weight, dtype=np.float64)
    total_weight = sw.sum() * n_features
    row_sums = np.asarray(X.sum(axis=1, dtype=np.float64)).ravel()
    mean = float(sw @ row_sums) / total_weight

    if sp.issparse(X):
        # Centring would densify X, so use sum of squares minus squared sum. The
        # cancellation leaves noise of a few ulps of E[x^2]: below that level the
        # data are constant for all practical purposes.
        # Square in float64: a float32 entry of 1e20 squares beyond float32.
        data = X.data.astype(np.float64)
        squares = sp.csr_matrix((data * data, X.indices, X.indptr), shape=X.shape)
        row_squares = np.asarray(squares.sum(axis=1)).ravel()
        mean_square = float(sw @ row_squares) / total_weight
        variance = mean_square - mean**2
        if variance <= 16 * np.finfo(np.float64).eps * mean_square:
            variance = 0.0
        return variance

    # Dense: two passes over centred blocks, numerically sound. Per-row sums are
    # reduced once at the end so that the result does not depend on the block
    # size.
    row_squares = np.empty(n_samples)
    for rows in gen_batches(n_samples, rows_per_block(8 * n_features)):
        centred = X[rows].astype(np.float64) - mean
        row_squares[rows] = np.einsum("ij,ij->i", centred, centred)
    variance = float(sw @ row_squares) / total_weight
    # Constant data: as the sparse branch decides.
    return round_off_floor(variance, mean)
