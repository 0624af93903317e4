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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

# Norms below this are treated as this: an all-zero row or a collapsed prototype
# then has cosine 0 with everything instead of 0/0 = NaN.
TINY_NORM = 1e-30
# Squared norms above this (in float64) may have overflowed or lost the scale:
# such rows are recomputed scaled by their largest entry first.
_LARGE_SQUARED = 1e300


def row_norms(X):
    """Euclidean norms of the rows of ``X``, in float64, for any finite input.

    Squares are accumulated in float64 (a float32 entry of 1e20 squares to
    1e40, beyond float32). Rows whose squared norm would overflow even float64
    are recomputed as ``a * |x / a|`` with ``a`` the row's largest magnitude.

    Parameters
    ----------
    X : {ndarray, csr_matrix} of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    if sparse.issparse(X):
        data = X.data.astype(np.float64, copy=False)
        squared = np.asarray(
            sparse.csr_matrix((data * data, X.indices, X.indptr), shape=X.shape).sum(
                axis=1
            )
        ).ravel()
    else:
        squared = np.einsum("ij,ij->i", X, X, dtype=np.float64)
    norms = np.sqrt(squared)
    large = ~(squared < _LARGE_SQUARED)
    if np.any(large):
        for i in np.flatnonzero(large):
            row = X[i].toarray().ravel() if sparse.issparse(X) else X[i]
            row = row.astype(np.float64)
            peak = np.max(np.abs(row), initial=0.0)
            norms[i] = peak * np.sqrt(np.sum((row / peak) ** 2)) if peak > 0 else 0.0
    return norms


def lift_constant(norms, n_features, sample_weight, constant_feature):
    """Value ``c`` of the lifting feature: ``constant_feature`` times the RMS.

    The root-mean-square is over all entries, weighted by the rows'
    ``sample_weight``, so integer weights equal repeated rows; it is computed
    from the row norms :func:`row_norms` already gave (no second pass over X).
    Returns 0.0 when ``constant_feature`` is None or 0 (no lift).
    """
    if not constant_feature:
        return 0.0
    # Scale before squaring (norms may be ~1e200 in float64).
    peak = float(np.max(norms, initial=0.0))
    if not peak > 0:
        return float(constant_feature)
    mean_square = float(sample_weight @ (norms / peak) ** 2) / (
        sample_weight.sum() * max(n_features, 1)
    )
    return float(constant_feature) * peak * float(np.sqrt(mean_square))


def lifted_norms(X, constant=0.0, norms=None):
    """``|[x_i, c]|`` in float64 (``|x_i|`` when ``c`` is 0), overflow-safe.

    ``norms``, the plain row norms, are reused when given.
    """
    norms = row_norms(X) if norms is None else norms
    # sqrt(|x|^2 + c^2) without squaring a possibly huge |x|.
    return np.hypot(norms, constant) if constant else norms


def lifted_cosines(
    X, coef, *, constant=0.0, constant_coef=None, unit_rows=False, normalize_coef=True
):
    r"""Cosines between the lifted rows and the (lifted) prototypes.

    .. math::

        \cos\theta_{ij} = \frac{\langle x_i, w_j \rangle + c\, w_{c,j}}
        {\max(|[x_i, c]|, \epsilon)\; \max(|[w_j, w_{c,j}]|, \epsilon)}

    with :data:`TINY_NORM` as :math:`\epsilon` (a zero row or a collapsed
    prototype has cosine 0, not 0/0). The prototypes are normalised first and
    the product runs in ``X``'s dtype.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        Raw rows, or rows already lifted and normalised (``unit_rows``).
    coef : ndarray of shape (n_classes, n_features)
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
    cos : ndarray of shape (n_samples, n_classes), in ``X``'s dtype
    norms : ndarray of shape (n_samples,) or None
        ``|[x_i, c]|`` in float64 (None for ``unit_rows``).
    w_norm : ndarray of shape (n_classes,) or None
        ``|[w_j, w_{c,j}]|`` floored, float64 (None without normalisation).
    """
    dtype = X.dtype
    lift = constant_coef if constant else None
    w_norm = None
    if normalize_coef:
        squared = np.einsum("ij,ij->i", coef, coef, dtype=np.float64)
        if lift is not None:
            squared += np.asarray(lift, dtype=np.float64) ** 2
        w_norm = np.maximum(np.sqrt(squared), TINY_NORM)
        coef = coef / w_norm[:, None]
        if lift is not None:
            lift = lift / w_norm
    cos = np.asarray(X @ coef.T.astype(dtype, copy=False))
    if lift is not None:
        cos += (constant * np.asarray(lift, dtype=np.float64)).astype(dtype)
    if unit_rows:
        return cos, None, w_norm
    with np.errstate(over="ignore"):
        norms = lifted_norms(X, constant)
    cos *= (1.0 / np.maximum(norms, TINY_NORM)).astype(dtype)[:, None]
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

    Parameters
    ----------
    X : {ndarray, csr_matrix} of shape (n_samples, n_features)
        float32 or float64; the result keeps the dtype.
    normalize : bool
        Whether the loss works on unit rows (every loss but plain softmax).
    constant : float, default=0.0
        Lifting constant ``c``; 0 means no lift.
    norms : ndarray of shape (n_samples,), default=None
        The plain row norms (:func:`row_norms`) if the caller has them already.
    overwrite : bool, default=False
        Normalise a dense, unlifted ``X`` in place (the caller owns it and needs
        it no more: the kernel estimator's mapped rows), so that the fit holds
        one n x M matrix, not two.

    Returns
    -------
    PreparedRows
    """
    if not normalize:
        return PreparedRows(X, None, 0.0)
    norms = lifted_norms(X, constant, norms)
    inverse = 1.0 / np.maximum(norms, TINY_NORM)
    if overwrite and not constant and not sparse.issparse(X):
        # As _lift_and_scale_rows: the product in float64, then cast.
        unit = np.multiply(X, inverse[:, None], out=X, casting="unsafe")
    else:
        unit = _lift_and_scale_rows(X, inverse, constant)
    with np.errstate(over="ignore"):  # a float64 norm beyond float32 becomes inf
        norms = norms.astype(X.dtype)
    return PreparedRows(unit, norms, float(constant))


def _lift_and_scale_rows(X, factors, constant):
    """Return ``diag(factors) @ [X, constant]`` (no constant column if 0)."""
    if sparse.issparse(X):
        if constant:
            column = sparse.csr_matrix(
                np.full((X.shape[0], 1), constant, dtype=X.dtype)
            )
            X = sparse.hstack([X, column], format="csr")
        scaled = sparse.csr_matrix(sparse.diags(factors) @ X)
        return scaled.astype(X.dtype, copy=False)
    if not constant:
        unit = np.empty_like(X)
        np.multiply(X, factors[:, None], out=unit, casting="unsafe")
        return unit
    lifted = np.empty((X.shape[0], X.shape[1] + 1), dtype=X.dtype)
    # The product in float64 (factors) then cast: a float32 x of 1e20 times
    # 1e-20 is exact to rounding, and no float32 intermediate overflows.
    np.multiply(X, factors[:, None], out=lifted[:, :-1], casting="unsafe")
    lifted[:, -1] = constant * factors
    return lifted
