r"""The RBF width ``gamma="scale"``: one statistic, one finisher, any array input.

.. math::

    \gamma = \frac{1}{d\, \operatorname{Var}_w(X)}

the statistic behind ``SVC(gamma="scale")``, with every entry of row ``i``
weighted by ``sample_weight[i]`` (so integer weights equal repeated rows), and
1.0 for constant data. The variance takes two passes, each a
:func:`weighted_sum` (the weighted sum of the entries, then of the squared
deviations from their mean), accumulated in float64 (the device's widest
float) by row blocks, in the namespace of ``X``: NumPy, a device's, or one
Dask chunk at a time, whose sums the Dask fit adds exactly
(:func:`exact_sum`). Both
then finish with :func:`round_off_floor` and :func:`gamma_from_variance`.
The Nyström and random Fourier maps resolve their ``gamma="scale"`` with
:func:`scale_gamma`, the kernel CV estimator its grid of multiples of it.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .._utils.array_api import (
    NUMPY,
    RowBlockWriter,
    get_namespace,
    row_blocks,
    to_device,
    wide_dtype,
)


def gamma_from_variance(variance: float, n_features: int) -> float:
    """Return ``1 / (n_features * variance)``, or 1.0 for constant data."""
    return 1.0 / (n_features * variance) if variance > 0 else 1.0


def round_off_floor(variance: float, mean: float) -> float:
    r"""Return ``variance``, or 0.0 where it is round-off of constant data.

    Constant data leave only the round-off of the weighted mean (1e-33 for 0.3
    under random weights: ``gamma`` would be 1e32): below a few ulps of
    :math:`E[x^2] = \operatorname{Var} + \mu^2` the data are constant. Every
    variance (dense or sparse, in memory, over Dask chunks, on a device) goes
    through this one rule, so that they resolve the same ``gamma``.
    """
    if not (math.isfinite(variance) and math.isfinite(mean)):  # (a device's sums)
        raise ValueError(_NOT_FINITE)
    if variance <= 16 * np.finfo(np.float64).eps * (variance + mean**2):
        return 0.0
    return variance


#: :func:`numpy.frexp` writes a float64 as ``M * 2 ** (E - 53)`` with an
#: integer ``|M| < 2 ** 53`` and ``E >= -1073``: times ``2 ** _EXACT_SHIFT``
#: every finite float64 is an integer.
_EXACT_SHIFT = 1074 + 53
#: Values summed per batch: half-mantissas below ``2 ** 27`` add exactly in
#: float64 for up to ``2 ** 26`` of them; a smaller batch bounds the
#: temporaries (about 8 times the batch's bytes).
_EXACT_BATCH = 2**20
#: The one error of a ``gamma="scale"`` sum that overflows float64 (in
#: memory, on a device or over Dask chunks alike).
_NOT_FINITE = (
    "gamma='scale': a weighted sum of the entries of X (or of their squared "
    "deviations) is not finite in float64; rescale X or sample_weight."
)


def exact_sum(values) -> int:
    r"""Return the exact sum of float64 ``values`` times ``2 ** 1127``, an integer.

    Sums of several arrays add as integers, exactly, and
    :func:`float_of_exact` rounds the total once: the same float as
    :func:`math.fsum` of all the values together, however they were split
    (and a finite total where fsum stops on an intermediate overflow). The
    in-memory sums (:func:`exact_total`) and the Dask fit
    (such integers per chunk, not one float per row) use it. Each value is
    :math:`M 2^{E - 53}` with an integer mantissa :math:`|M| < 2^{53}`
    (:func:`numpy.frexp`), split in two halves of at most 27 bits whose sums
    per exponent are exact in float64 (:func:`numpy.bincount`, by batches),
    then shifted into one Python integer. A value that is not finite raises
    the ``ValueError`` an overflowing sum does in memory.
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(values)):
        raise ValueError(_NOT_FINITE)
    total = 0
    for start in range(0, values.size, _EXACT_BATCH):
        fraction, exponent = np.frexp(values[start : start + _EXACT_BATCH])
        mantissa = np.ldexp(fraction, 53).astype(np.int64)
        group = exponent + 1074  # (frexp's exponents: -1073 .. 1024)
        for part, shift in ((mantissa >> 27, 27), (mantissa & (2**27 - 1), 0)):
            sums = np.bincount(group, weights=part)
            for g in np.flatnonzero(sums).tolist():
                total += int(sums[g]) << (g - 1074 - 53 + _EXACT_SHIFT + shift)
    return total


def exact_integers(values) -> list:
    """Return :func:`exact_sum` of each of the integer-valued float64 ``values``."""
    return [int(value) << _EXACT_SHIFT for value in np.asarray(values).tolist()]


def float_of_exact(total: int) -> float:
    """Return the float nearest the exact sum :func:`exact_sum` gave (one rounding)."""
    try:
        return total / (1 << _EXACT_SHIFT)  # (Python's int division rounds once)
    except OverflowError:
        raise ValueError(_NOT_FINITE) from None


def exact_total(values) -> float:
    """Return the sum of ``values`` rounded once (as :func:`math.fsum`), or refuse.

    :func:`float_of_exact` of :func:`exact_sum`: the in-memory sums and the
    Dask chunks' go through one mechanism, so they refuse the same data (a
    value or a total that is not finite in float64).
    """
    return float_of_exact(exact_sum(values))


def weighted_sum(X, sample_weight, mean=None, terms=False):
    r"""Return the weighted sum of the entries, or of their squared deviations.

    :math:`\sum_i w_i \sum_j x_{ij}`, or with ``mean``
    :math:`\sum_i w_i \sum_j (x_{ij} - \mu)^2`: the two passes of the
    weighted variance, on dense rows of any namespace (or one Dask chunk).
    Per-row sums are accumulated in float64 (the device's widest float) by
    row blocks (a block-sized float64 copy at a time, never one of ``X``) and
    reduced once at the end, so that the result does not depend on the block
    size. On the host that reduction is exactly rounded (:func:`exact_total`
    of the weighted per-row sums), so that it does not depend on the order
    of the rows either: a row permutation then gives the same ``gamma`` to
    the last bit (a dot product's rounding followed the row order, and one
    ulp of ``gamma`` was enough to move some test labels of a kernel fit).
    A Dask chunk takes its terms (``terms=True``) to :func:`exact_sum`, so
    that the chunks' sums add to the in-memory ``gamma`` however the rows
    are chunked.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        Dense rows.
    sample_weight : ndarray of shape (n_samples,)
        Host weights.
    mean : float, default=None
        None for the sum of the entries, else the mean :math:`\mu` to centre
        them on for the sum of squares.
    terms : bool, default=False
        Return the weighted per-row sums, the terms the sum adds (NumPy rows
        only: a device's rows are reduced on the device).

    Returns
    -------
    float, or ndarray of shape (n_samples,) with ``terms``
    """
    if terms and not isinstance(X, np.ndarray):
        raise TypeError("weighted_sum(terms=True) takes NumPy rows.")
    xp, device = get_namespace(X)
    wide = wide_dtype(xp, device)
    per_row = RowBlockWriter(xp, (X.shape[0],), wide, device)
    for rows in row_blocks(X, 8 * X.shape[1]):
        if mean is None:
            per_row.write(rows, xp.sum(X[rows, :], axis=1, dtype=wide))
            continue
        block = X[rows, :]  # host rows (Dask's too: lazy) by their own astype
        block = block.astype(wide) if xp is NUMPY else xp.astype(block, wide)
        centred = block - float(mean)
        if isinstance(centred, np.ndarray):
            per_row.write(rows, np.einsum("ij,ij->i", centred, centred))
        else:
            per_row.write(rows, xp.sum(centred * centred, axis=1))
    if isinstance(X, np.ndarray):
        with np.errstate(over="ignore", invalid="ignore"):  # (refused below)
            weighted = np.asarray(sample_weight, dtype=np.float64) * per_row.result()
        return weighted if terms else exact_total(weighted)
    return float(to_device(sample_weight, xp, device, dtype=wide) @ per_row.result())


def weighted_variance(X, sample_weight) -> float:
    r"""Return the sample-weighted variance of all entries of ``X``.

    Every entry of row ``i`` carries the weight ``sample_weight[i]``; with unit
    weights this is ``X.var()``. Dense rows (any namespace) take two
    :func:`weighted_sum` passes; sparse rows, which centring would densify,
    :math:`E[x^2] - \mu^2`, whose cancellation noise of a few ulps of
    :math:`E[x^2]` is what :func:`round_off_floor` removes.

    Parameters
    ----------
    X : {array, sparse matrix} of shape (n_samples, n_features)
        Validated input (CSR when sparse).
    sample_weight : ndarray of shape (n_samples,)
        Non-negative host weights with a positive sum.

    Returns
    -------
    variance : float
        The weighted variance, 0.0 for constant data.
    """
    sw = np.asarray(sample_weight, dtype=np.float64)
    total_weight = exact_total(sw) * X.shape[1]  # (exact: any row order)
    if not sp.issparse(X):
        mean = weighted_sum(X, sw) / total_weight
        return round_off_floor(weighted_sum(X, sw, mean) / total_weight, mean)
    mean = exact_total(sw * np.asarray(X.sum(axis=1, dtype=np.float64)).ravel())
    mean /= total_weight
    # Square in float64: a float32 entry of 1e20 squares beyond float32.
    data = X.data.astype(np.float64)
    squares = sp.csr_matrix((data * data, X.indices, X.indptr), shape=X.shape)
    mean_square = exact_total(sw * np.asarray(squares.sum(axis=1)).ravel())
    mean_square /= total_weight
    return round_off_floor(mean_square - mean**2, mean)


def scale_gamma(X, sample_weight=None) -> float:
    """Return ``gamma="scale"`` of ``X`` under ``sample_weight`` (None: unit).

    Parameters
    ----------
    X : {array, sparse matrix} of shape (n_samples, n_features)
        Validated input (CSR when sparse) of any array namespace.
    sample_weight : ndarray of shape (n_samples,), default=None
        Host weights.

    Returns
    -------
    float
    """
    weights = np.ones(X.shape[0]) if sample_weight is None else sample_weight
    return gamma_from_variance(weighted_variance(X, weights), X.shape[1])
