r"""Rows as the objective sees them: norms, lift and normalisation, done once.

Every angle-based loss (all but ``"softmax"``) works on the cosines

.. math::

    \cos\theta_{ij} = \frac{\langle [x_i, c], [w_j, w_{c,j}] \rangle}
    {|[x_i, c]|\, |[w_j, w_{c,j}]|}

and, where its logit scale needs it (A-/L-Softmax), on the norms
:math:`|[x_i, c]|`. :func:`lifted_cosines` is the one implementation: fit
calls it on rows it lifted and normalised once (:func:`prepare_rows`, reused
at every evaluation), predict on the raw rows (dividing the ``n x K`` product
instead of copying ``X``), the ONNX reference on the exported arrays.

``c`` is the lifting constant (0: no lift). Lifting to ``[x, c]`` before
normalising is one-to-one (the inverse gnomonic projection onto a hemisphere):
a cosine classifier then keeps what ``|x|`` says instead of seeing directions
only.

Every function here takes rows of any array API namespace (NumPy and SciPy
sparse matrices included) and computes in that namespace, on the rows'
device, as scikit-learn's array API code does: the namespace is looked up
once per call (:func:`~sklmargin._utils.array_api.get_namespace`) and NumPy
differs only in leaf kernels that pay for themselves (``einsum`` row norms
without a float64 copy, normalisation in place, sparse products). Other
namespaces work by row blocks, so that their float64 temporaries stay within
the block budget of :mod:`sklmargin._utils.blocks`. Norms and sums run in
float64, or the widest float the device has
(:func:`sklmargin._utils.array_api.wide_dtype`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from .._utils.array_api import (
    NUMPY,
    RowBlockWriter,
    get_namespace,
    row_blocks,
    to_device,
    to_numpy,
    wide_dtype,
)

# Norms below this are treated as this: an all-zero row or a collapsed prototype
# then has cosine 0 with everything instead of 0/0 = NaN.
TINY_NORM = 1e-30
# Squared norms above this (in float64) may have overflowed or lost the scale:
# such rows are recomputed scaled by their largest entry first.
_LARGE_SQUARED = 1e300


def _rescaled_norms(rows, xp):
    """Return ``a |x / a|`` per row, ``a = max |x|``: no square overflows."""
    peak = xp.max(xp.abs(rows), axis=1)
    # Array branches, not Python scalars: ``where`` takes scalars only from
    # the 2024.12 standard on (array-api-strict at 2023.12 refuses them).
    safe = xp.where(peak > 0, peak, xp.ones_like(peak))
    scaled = rows / safe[:, None]
    return xp.where(
        peak > 0, safe * xp.sqrt(xp.sum(scaled * scaled, axis=1)), xp.zeros_like(peak)
    )


def row_norms(X):
    """Euclidean norms of the rows of ``X``, in float64, for any finite input.

    Squares are accumulated in float64 (a float32 entry of 1e20 squares to
    1e40, beyond float32). Rows whose squared norm would overflow even float64
    are recomputed as ``a * |x / a|`` with ``a`` the row's largest magnitude.

    Parameters
    ----------
    X : {ndarray, csr_matrix, array} of shape (n_samples, n_features)

    Returns
    -------
    array of shape (n_samples,), in ``X``'s namespace and on its device
    """
    xp, device = get_namespace(X)
    if xp is NUMPY:
        if sparse.issparse(X):
            data = X.data.astype(np.float64, copy=False)
            squared = sparse.csr_matrix(
                (data * data, X.indices, X.indptr), shape=X.shape
            ).sum(axis=1)
            squared = np.asarray(squared).ravel()
        else:
            squared = np.einsum("ij,ij->i", X, X, dtype=np.float64)
        norms = np.sqrt(squared)
        large = ~(squared < _LARGE_SQUARED)
        if np.any(large):
            rows = X[np.flatnonzero(large)]
            rows = rows.toarray() if sparse.issparse(rows) else rows
            norms[large] = _rescaled_norms(rows.astype(np.float64), np)
        return norms
    # Written into one vector: per-block vectors kept in a list would pin the
    # heap between the blocks' large temporaries (measured: glibc then kept
    # ~130 MB of freed torch blocks resident on 100k x 500 rows).
    wide = wide_dtype(xp, device)
    out = RowBlockWriter(xp, (X.shape[0],), wide, device)
    for rows in row_blocks(X, 8 * max(X.shape[1], 1)):
        block = xp.astype(X[rows, :], wide)
        squared = xp.sum(block * block, axis=1)
        if bool(xp.any(~(squared < _LARGE_SQUARED))):
            out.write(rows, _rescaled_norms(block, xp))
        else:
            out.write(rows, xp.sqrt(squared))
    return out.result()


def lift_statistics(norms, sample_weight):
    """Largest row norm ``p`` and ``sum_i w_i (|x_i| / p)^2`` of one row set.

    The statistic :func:`lift_constant` needs, from host weights and norms of
    any namespace; row chunks (Dask) combine theirs with
    :func:`lift_from_statistics`. ``(0, 0)`` for all-zero rows.
    """
    xp, device = get_namespace(norms)
    peak = float(xp.max(norms))
    if not peak > 0:
        return 0.0, 0.0
    weights = sample_weight
    if not isinstance(norms, np.ndarray):
        weights = to_device(sample_weight, xp, device, dtype=norms.dtype)
    # Scale before squaring (norms may be ~1e200 in float64).
    return peak, float(weights @ (norms / peak) ** 2)


def lift_from_statistics(statistics, weight_total, n_features, constant_feature):
    """Combine per-part :func:`lift_statistics` into the lift ``c``.

    ``sum_c q_c (p_c / p)^2`` with ``p = max_c p_c`` is the weighted sum of
    squared norms over ``p^2``, without squaring a huge norm.
    """
    if not constant_feature:
        return 0.0
    stats = np.array(statistics, dtype=np.float64).reshape(-1, 2)
    peak = float(stats[:, 0].max(initial=0.0))
    if not peak > 0:
        return float(constant_feature)
    mean_square = float(stats[:, 1] @ (stats[:, 0] / peak) ** 2) / (
        weight_total * max(n_features, 1)
    )
    return float(constant_feature) * peak * float(np.sqrt(mean_square))


def lift_constant(norms, n_features, sample_weight, constant_feature):
    """Value ``c`` of the lifting feature: ``constant_feature`` times the RMS.

    The root-mean-square is over all entries, weighted by the rows'
    ``sample_weight`` (host float64), so integer weights equal repeated rows;
    it is computed from the row norms :func:`row_norms` already gave (no
    second pass over X). Returns 0.0 when ``constant_feature`` is None or 0
    (no lift).
    """
    if not constant_feature:
        return 0.0
    statistics = lift_statistics(norms, sample_weight)
    return lift_from_statistics(
        [statistics], float(np.sum(sample_weight)), n_features, constant_feature
    )


def lift_norms(norms, constant):
    """``|[x_i, c]| = hypot(|x_i|, c)``: no huge norm is squared."""
    if not constant:
        return norms
    xp, _ = get_namespace(norms)
    return xp.hypot(norms, xp.full_like(norms, constant))


def times_transposed(X, coef, dtype):
    """``X @ coef.T`` with host ``coef`` cast to ``dtype``, in ``X``'s namespace."""
    xp, device = get_namespace(X)
    if xp is NUMPY:
        return np.asarray(X @ coef.T.astype(dtype, copy=False))
    return X @ to_device(np.ascontiguousarray(coef.T), xp, device, dtype=dtype)


def prototype_norms(coef, lift=None):
    """``max(|[w_j, w_{c,j}]|, TINY_NORM)`` of host prototypes, in float64."""
    squared = np.einsum("ij,ij->i", coef, coef, dtype=np.float64)
    if lift is not None:
        squared += np.asarray(lift, dtype=np.float64) ** 2
    return np.maximum(np.sqrt(squared), TINY_NORM)


def lifted_cosines(
    X, coef, *, constant=0.0, constant_coef=None, unit_rows=False, normalize_coef=True
):
    r"""Cosines between the lifted rows and the (lifted) prototypes.

    .. math::

        \cos\theta_{ij} = \frac{\langle x_i, w_j \rangle + c\, w_{c,j}}
        {\max(|[x_i, c]|, \epsilon)\; \max(|[w_j, w_{c,j}]|, \epsilon)}

    with :data:`TINY_NORM` as :math:`\epsilon` (a zero row or a collapsed
    prototype has cosine 0, not 0/0). The prototypes are normalised first, on
    the host in float64, and the product runs in ``X``'s dtype, namespace and
    device.

    Parameters
    ----------
    X : {ndarray, sparse matrix, array} of shape (n_samples, n_features)
        Raw rows, or rows already lifted and normalised (``unit_rows``).
    coef : ndarray of shape (n_classes, n_features)
        Host prototypes (other namespaces are copied to the host: ``K d``
        numbers).
    constant : float, default=0.0
        The lift ``c`` (0: none; rows prepared by :func:`prepare_rows` carry
        it as their last column already).
    constant_coef : ndarray of shape (n_classes,), default=None
        The prototypes' coordinate along the lift.
    unit_rows : bool, default=False
        ``X``'s rows are unit (or zero) already: no row norm is computed.
    normalize_coef : bool, default=True
        Divide by the prototypes' norms; False when the caller folded them
        (the ONNX description) or they are unit.

    Returns
    -------
    cos : array of shape (n_samples, n_classes), in ``X``'s dtype
    norms : array of shape (n_samples,) or None
        ``|[x_i, c]|`` in float64 (None for ``unit_rows``).
    w_norm : ndarray of shape (n_classes,) or None
        ``|[w_j, w_{c,j}]|`` floored, float64, on the host (None without
        normalisation).
    """
    xp, device = get_namespace(X)
    dtype = X.dtype
    coef = to_numpy(coef)
    lift = to_numpy(constant_coef) if constant else None
    w_norm = None
    if normalize_coef:
        w_norm = prototype_norms(coef, lift)
        coef = coef / w_norm[:, None]
        if lift is not None:
            lift = lift / w_norm
    cos = times_transposed(X, coef, dtype)
    if lift is not None:
        shift = constant * np.asarray(lift, dtype=np.float64)
        cos += to_device(shift, xp, device, dtype)
    if unit_rows:
        return cos, None, w_norm
    with np.errstate(over="ignore"):
        norms = lift_norms(row_norms(X), constant)
    inverse = _floored_inverse(norms)
    cos *= xp.astype(inverse, dtype)[:, None]
    return cos, norms, w_norm


@dataclass
class PreparedRows:
    """The rows of one fit or predict call, as the objective consumes them.

    Attributes
    ----------
    X : {ndarray, csr_matrix} of shape (n_samples, n_features + lifted)
        Unit rows ``[x, c] / |[x, c]|`` for the angle losses, the raw rows
        otherwise; in the input's dtype.
    norms : ndarray of shape (n_samples,) or None
        ``|[x, c]|`` in the input's dtype (None for the raw rows).
    constant : float
        The lifting constant ``c`` (0.0: not lifted).
    """

    X: object
    norms: np.ndarray | None
    constant: float

    @property
    def n_features(self):
        """Columns of :attr:`X` (the lift's included)."""
        return self.X.shape[1]

    @property
    def dtype(self):
        """Computation dtype (the input's)."""
        return self.X.dtype


def prepare_rows(X, *, normalize, constant=0.0, norms=None, overwrite=False):
    """Lift and normalise ``X`` once, for fit or predict.

    Unit rows ``[x, c] / |[x, c]|``: the product in float64, then cast to
    ``X``'s dtype (a float32 ``x`` of 1e20 times 1e-20 is exact to rounding,
    and no float32 intermediate overflows). Other namespaces than NumPy work
    by row blocks written into one array.

    Parameters
    ----------
    X : {ndarray, csr_matrix, array} of shape (n_samples, n_features)
        float32 or float64; the result keeps the dtype, namespace and device.
    normalize : bool
        Whether the loss works on unit rows (every loss but plain softmax).
    constant : float, default=0.0
        Lifting constant ``c``; 0 means no lift.
    norms : array of shape (n_samples,), default=None
        The plain row norms (:func:`row_norms`) if the caller has them already.
    overwrite : bool, default=False
        Normalise a dense, unlifted ``X`` in place (the caller owns it and needs
        it no more: the kernel estimator's mapped rows), so that the fit holds
        one n x M matrix, not two. Ignored where the namespace refuses slice
        assignment.

    Returns
    -------
    PreparedRows
        ``norms`` in ``X``'s dtype.
    """
    if not normalize:
        return PreparedRows(X, None, 0.0)
    xp, device = get_namespace(X)
    norms = lift_norms(row_norms(X) if norms is None else norms, constant)
    inverse = _floored_inverse(norms)
    if xp is not NUMPY:
        shape = (X.shape[0], X.shape[1] + (1 if constant else 0))
        out = X if overwrite and not constant else None
        writer = RowBlockWriter(xp, shape, X.dtype, device, out=out)
        for rows in row_blocks(X, 8 * (X.shape[1] + 1)):
            factors = inverse[rows][:, None]
            unit = xp.astype(X[rows, :], inverse.dtype)
            unit *= factors  # in place: one wide temporary per block
            unit = xp.astype(unit, X.dtype, copy=False)
            if constant:
                unit = xp.concat([unit, xp.astype(constant * factors, X.dtype)], axis=1)
            writer.write(rows, unit)
        return PreparedRows(writer.result(), xp.astype(norms, X.dtype), float(constant))
    if overwrite and not constant and not sparse.issparse(X):
        unit = np.multiply(X, inverse[:, None], out=X, casting="unsafe")
    else:
        unit = _lift_and_scale_rows(X, inverse, constant)
    with np.errstate(over="ignore"):  # a float64 norm beyond float32 becomes inf
        norms = norms.astype(X.dtype)
    return PreparedRows(unit, norms, float(constant))


def _floored_inverse(norms):
    """``1 / max(norms, TINY_NORM)`` in the norms' namespace and dtype."""
    return 1.0 / get_namespace(norms)[0].clip(norms, min=TINY_NORM)


def _lift_and_scale_rows(X, factors, constant):
    """Return ``diag(factors) @ [X, constant]`` (NumPy and sparse rows)."""
    if sparse.issparse(X):
        if constant:
            column = sparse.csr_matrix(
                np.full((X.shape[0], 1), constant, dtype=X.dtype)
            )
            X = sparse.hstack([X, column], format="csr")
        scaled = sparse.csr_matrix(sparse.diags(factors) @ X)
        return scaled.astype(X.dtype, copy=False)
    if not constant:  # empty_like: the rows keep X's memory order
        return np.multiply(X, factors[:, None], out=np.empty_like(X), casting="unsafe")
    lifted = np.empty((X.shape[0], X.shape[1] + 1), dtype=X.dtype)
    np.multiply(X, factors[:, None], out=lifted[:, :-1], casting="unsafe")
    lifted[:, -1] = constant * factors
    return lifted
