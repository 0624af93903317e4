"""The training objective: from parameters to loss and gradient.

* :mod:`._rows`: rows prepared once (norms, lift, unit rows) and the cosines
  :func:`~._rows.lifted_cosines`, for fit and predict;
* :mod:`._pointwise`: the pointwise layer, :func:`margin_softmax_loss` (public)
  and the cosines-to-loss kernel the objective calls, ending in the softmax
  cross-entropy of :mod:`._cross_entropy`;
* :mod:`._linear`: :class:`LinearMarginObjective`, the chain rule to the
  parameters (one GEMM forward, one back, the host-side projection, scale term,
  bias and L2), and predict's margin-free logits;
* :mod:`._interface`: :class:`MarginObjective`, what the solver drives, and
  the base the in-memory and the Dask objective share.

Each is written once against the rows' array namespace: NumPy (and SciPy
sparse) rows and torch / CuPy / array-api-strict rows on their device run the
same code, NumPy keeping its own leaf kernels where they pay (``einsum`` norms,
in-place writes, the compiled cross-entropy).
"""

from ._interface import MarginObjective
from ._linear import LinearMarginObjective
from ._pointwise import margin_softmax_loss

__all__ = ["LinearMarginObjective", "MarginObjective", "margin_softmax_loss"]
