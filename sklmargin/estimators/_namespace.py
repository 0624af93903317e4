"""Row preparation on array API inputs (norms, lift, unit rows) in ``xp``.

The namespace twins of :func:`sklmargin.objective._rows.row_norms`,
:func:`~sklmargin.objective._rows.lift_constant` and
:func:`~sklmargin.objective._rows.prepare_rows`, used by the device fit
(:mod:`sklmargin.estimators._base`) and the device logits
(:mod:`sklmargin.estimators._device`).
"""

from __future__ import annotations

import numpy as np

from .._utils.array_api import RowBlockWriter, row_slices, to_device, wide_dtype
from .._utils.compat import array_api_compat
from ..objective._rows import _LARGE_SQUARED, TINY_NORM, PreparedRows


# -- rows ------------------------------------------------------------------------
def namespace_row_norms(X, xp):
    """Row norms of ``X`` in float64 (where the device has it), overflow-safe.

    As :func:`sklmargin.objective._rows.row_norms`: squares accumulated in float64 by
    row blocks; rows whose squared norm would overflow are recomputed scaled
    by their largest entry.
    """
    device = array_api_compat.device(X)
    wide = wide_dtype(xp, device)
    # Written into one vector: per-block vectors kept in a list would pin
    # the heap between the blocks' large temporaries (measured: glibc then
    # kept ~130 MB of freed torch blocks resident on 100k x 500 rows).
    out = RowBlockWriter(xp, (X.shape[0],), wide, device)
    for rows in row_slices(X.shape[0], 8 * max(X.shape[1], 1)):
        block = xp.astype(X[rows, :], wide)
        squared = xp.sum(block * block, axis=1)
        if bool(xp.any(~(squared < _LARGE_SQUARED))):
            peak = xp.max(xp.abs(block), axis=1)
            # Array branches (zeros_like/ones_like), not Python scalars:
            # ``where`` takes scalars only from the 2024.12 standard on
            # (array-api-strict at 2023.12 refuses them).
            safe = xp.where(peak > 0, peak, xp.ones_like(peak))
            scaled = block / safe[:, None]
            squared = xp.where(
                peak > 0,
                safe * xp.sqrt(xp.sum(scaled * scaled, axis=1)),
                xp.zeros_like(peak),
            )
            out.write(rows, squared)  # already the norms
        else:
            out.write(rows, xp.sqrt(squared))
    return out.result()


def _lifted(norms, constant, xp):
    if not constant:
        return norms
    return xp.hypot(norms, xp.full_like(norms, constant))


def namespace_lift_constant(norms, n_features, sample_weight, constant_feature, xp):
    """:func:`~sklmargin.objective._rows.lift_constant`: device norms, host weights."""
    if not constant_feature:
        return 0.0
    peak = float(xp.max(norms))
    if not peak > 0:
        return float(constant_feature)
    sw = to_device(sample_weight, xp, array_api_compat.device(norms), dtype=norms.dtype)
    ratio = norms / peak
    mean_square = float(xp.sum(sw * ratio * ratio)) / (
        float(np.sum(sample_weight)) * max(n_features, 1)
    )
    return float(constant_feature) * peak * float(np.sqrt(mean_square))


def namespace_prepare_rows(
    X, xp, *, normalize, constant=0.0, norms=None, overwrite=False
):
    """:func:`sklmargin.objective._rows.prepare_rows` in the namespace.

    Unit rows ``[x, c] / |[x, c]|``: the product in float64, then cast to
    ``X``'s dtype, by row blocks written into one array.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        float32 or float64 rows of namespace ``xp``.
    xp : namespace
    normalize : bool
        Whether the loss works on unit rows (every loss but plain softmax).
    constant : float, default=0.0
        Lifting constant ``c``; 0 means no lift.
    norms : array of shape (n_samples,), default=None
        The plain row norms (:func:`namespace_row_norms`), if known.
    overwrite : bool, default=False
        Normalise an unlifted ``X`` in place (the caller owns it and needs it
        no more: the kernel estimator's mapped rows), as the NumPy path does,
        so that the fit holds one ``n x M`` matrix, not two. Ignored where the
        namespace refuses slice assignment.

    Returns
    -------
    PreparedRows
        ``norms`` in ``X``'s dtype.
    """
    if not normalize:
        return PreparedRows(X, None, 0.0)
    dtype = X.dtype
    norms = _lifted(
        namespace_row_norms(X, xp) if norms is None else norms, constant, xp
    )
    inverse = 1.0 / xp.clip(norms, min=TINY_NORM)
    shape = (X.shape[0], X.shape[1] + (1 if constant else 0))
    device = array_api_compat.device(X)
    writer = RowBlockWriter(
        xp, shape, dtype, device, out=X if overwrite and not constant else None
    )
    for rows in row_slices(X.shape[0], 8 * (X.shape[1] + 1)):
        factors = inverse[rows][:, None]
        unit = xp.astype(X[rows, :], inverse.dtype)
        unit *= factors  # in place: one wide temporary per block
        unit = xp.astype(unit, dtype, copy=False)
        if constant:
            column = xp.astype(constant * factors, dtype)
            unit = xp.concat([unit, column], axis=1)
        writer.write(rows, unit)
    return PreparedRows(writer.result(), xp.astype(norms, dtype), float(constant))
