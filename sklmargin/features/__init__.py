"""Feature maps that approximate the RBF kernel: Nyström and random Fourier.

Each map's ``fit`` and ``transform`` is one code path for NumPy, sparse and
array API input (torch, CuPy, array-api-strict under ``array_api_dispatch``),
written against the input's namespace; NumPy-only code is left in the leaves
where it pays (``out=`` writes of the transform blocks, in-place clip and
exponential, einsum row norms). The modules, one concern each:

* ``_nystroem.py``, ``_fourier.py``: the transformers
  :class:`NystroemFeatures` and :class:`RandomFourierFeatures`, each with its
  description (``describe()``: forward pass, input gradients);
* ``_kernel_features.py``: :class:`~._kernel_features.KernelFeatures`, the
  kernel estimator's pipeline (gamma, width, dtype, map) for one fit;
* ``_kernel_block.py``: the RBF kernel between two sets of rows (the Nyström
  transform, its centre kernel, the Cholesky selector, the open-set score);
* ``_gamma.py``: ``gamma="scale"``, one weighted statistic and one round-off
  floor, shared by the in-memory, device and Dask fits;
* ``_centres.py``: the Nyström centre selectors and the choice among them
  from the distinct rows' weights (in memory or over Dask chunks);
* ``_row_keys.py``: row hashes, the identity and canonical order of the
  distinct rows.
* ``_memory.py``: the kernel fit's memory budget (what a width costs, the
  widest that fits, the refusal naming the sizes, predict's row blocks);
* ``_width.py``: ``n_components="path"``, the width the data choose by a
  warm path over nested Nyström centres scored on held-out rows.

What differs on a device (the namespace, row blocks, the float64 fallback,
host weights, moving the fitted arrays, the transform's namespace check) is
asked of :mod:`sklmargin._utils.array_api`, as the estimators ask it.

The Dask fit (:mod:`sklmargin.integrations.dask._features`) reduces the same
statistics over the chunks, finishes them with the same functions and hands
them to ``KernelFeatures.fit_statistics``.
"""

from ._fourier import RandomFourierFeatures
from ._nystroem import NystroemFeatures

__all__ = ["NystroemFeatures", "RandomFourierFeatures"]
