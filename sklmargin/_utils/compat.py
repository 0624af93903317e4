"""Every private scikit-learn name sklmargin uses, imported in one place, guarded.

scikit-learn's private modules may move in any release, and ``scikit-learn>=1.6``
is open-ended, so each import here has a fallback that keeps sklmargin importable
and correct (possibly slower, or with less precise parameter messages):

* ``_fit_context`` (:mod:`sklearn.base`) runs ``_validate_params`` against
  ``_parameter_constraints`` and skips nested validation; the fallback calls
  ``_validate_params`` when the estimator has it and nothing else. Either is
  wrapped by :func:`fit_context`, which adds the BLAS thread policy
  (:mod:`sklmargin._utils.threads`).
* ``Interval`` / ``StrOptions`` (:mod:`sklearn.utils._param_validation`) describe
  the constraints; the fallback classes only record them (every estimator also
  validates its parameters' meaning itself in ``fit``).
* ``safe_indexing`` (``_safe_indexing`` of :mod:`sklearn.utils`) takes rows
  of an array, a sparse matrix, a DataFrame or a list by position; the
  fallback does the same for those four kinds.
* ``HalfMultinomialLoss`` (:mod:`sklearn._loss.loss`) is a compiled, fused
  softmax cross-entropy; ``None`` when it cannot be imported, and the objective
  then uses its numpy version (it also probes the compiled one against numpy).
* ``array_api_compat``: the package when installed (``pip install
  ".[array-api]"`` in a checkout), else the copy scikit-learn vendors in
  ``sklearn.externals`` (scikit-learn 1.4 to 1.9 at least; 1.9.1 ships
  array-api-compat 1.15), else None, and array API inputs then take the NumPy
  path (:mod:`sklmargin._utils.array_api`).

Sample weights are validated by :func:`sklmargin._utils.validation.check_weights`,
written on public API only.
"""

from __future__ import annotations

import functools

from .threads import blas_limited

try:  # pragma: no branch - which side runs depends on the installed version
    from sklearn.base import _fit_context
except ImportError:  # pragma: no cover - only on a scikit-learn without it

    def _fit_context(*, prefer_skip_nested_validation):
        """Fallback of scikit-learn's ``_fit_context``: validate, then fit."""

        def decorator(fit_method):
            @functools.wraps(fit_method)
            def wrapper(estimator, *args, **kwargs):
                validate = getattr(estimator, "_validate_params", None)
                if validate is not None:
                    validate()
                return fit_method(estimator, *args, **kwargs)

            return wrapper

        return decorator


def fit_context(*, prefer_skip_nested_validation):
    """``_fit_context`` under sklmargin's BLAS thread policy.

    Every fit runs with BLAS capped at
    :func:`sklmargin.get_blas_threads` threads (1 unless changed with
    :func:`sklmargin.set_blas_threads`), see :mod:`sklmargin._utils.threads`.
    """

    def decorator(fit_method):
        validated = _fit_context(
            prefer_skip_nested_validation=prefer_skip_nested_validation
        )(fit_method)
        return blas_limited(validated)

    return decorator


try:
    from sklearn.utils._param_validation import Interval, StrOptions
except ImportError:  # pragma: no cover - only on a scikit-learn without it

    class Interval:
        """Record of a numeric interval constraint (not enforced)."""

        def __init__(self, type, left, right, *, closed):  # noqa: A002
            self.type, self.left, self.right, self.closed = type, left, right, closed

    class StrOptions:
        """Record of a string options constraint (not enforced)."""

        def __init__(self, options, *, deprecated=None):
            self.options = set(options)


try:
    from sklearn.utils import _safe_indexing as safe_indexing
except ImportError:  # pragma: no cover - only on a scikit-learn without it

    def safe_indexing(X, indices):
        """Fallback of scikit-learn's ``_safe_indexing``: rows by position."""
        if hasattr(X, "iloc"):  # a DataFrame or Series
            return X.iloc[indices]
        if hasattr(X, "shape"):  # an ndarray, a sparse matrix, an array API array
            return X[indices]
        return [X[i] for i in indices]


try:
    from sklearn._loss.loss import HalfMultinomialLoss
except ImportError:  # pragma: no cover - only on a scikit-learn without it
    HalfMultinomialLoss = None

try:
    import array_api_compat
except ImportError:  # pragma: no cover - the package is an optional extra
    try:
        from sklearn.externals import array_api_compat
    except ImportError:
        array_api_compat = None

__all__ = [
    "HalfMultinomialLoss",
    "Interval",
    "StrOptions",
    "array_api_compat",
    "fit_context",
    "safe_indexing",
]
