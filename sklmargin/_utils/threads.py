"""The BLAS thread policy of fit and predict.

A fit is an L-BFGS loop: hundreds of matrix products of a few thousand rows
by a few hundred columns, each too small for a pool of BLAS threads to pay
for waking up and synchronising, and a machine busy with other work turns
every product into a wait for a core (OpenBLAS threads spin while they wait).
So every sklmargin ``fit`` and prediction runs its BLAS calls with at most
:func:`get_blas_threads` threads (default 1), through threadpoolctl as
scikit-learn does where its own loops are better served by one thread.
:func:`set_blas_threads` changes it for the process: ``None`` gives the BLAS
library its own setting back (``OMP_NUM_THREADS`` and friends, or all cores).
Parallel work across fits is ``n_jobs``' business (CV folds, open-set folds).
"""

from __future__ import annotations

import functools
import threading
from contextlib import contextmanager
from numbers import Integral

#: Threads per BLAS call inside fit and predict; None leaves BLAS as it is.
_POLICY = {"blas_threads": 1}
# BLAS settings are global to the process: the first fit or predict to enter
# limits them and the last to leave restores them, whatever the thread
# (joblib's threading backend runs several fits at once).
_LOCK = threading.Lock()
_ACTIVE = {"depth": 0, "limiter": None}


def get_blas_threads():
    """Return the most BLAS threads a fit or a prediction uses (None: no cap).

    Returns
    -------
    int or None
        The value of :func:`set_blas_threads`; 1 unless changed.
    """
    return _POLICY["blas_threads"]


def set_blas_threads(n_threads):
    """Set the most BLAS threads every sklmargin fit and prediction uses.

    The default, 1, keeps each fit's many small matrix products on one core,
    which is faster on a machine busy with other work and about as fast on an
    idle one (the documentation's getting-started page has the measurement).
    Give ``None`` to let the BLAS library use its own setting (your
    ``OMP_NUM_THREADS``, or all cores), or a larger number for fits with very
    large matrix products on an idle many-core machine.

    Parameters
    ----------
    n_threads : int >= 1 or None
        The cap; None removes it.

    Returns
    -------
    int or None
        The previous value, so that a caller can restore it.

    Examples
    --------
    >>> import sklmargin
    >>> previous = sklmargin.set_blas_threads(None)  # the BLAS library decides
    >>> sklmargin.set_blas_threads(previous)
    """
    if n_threads is not None and (
        not isinstance(n_threads, Integral)
        or isinstance(n_threads, bool)
        or n_threads < 1
    ):
        raise ValueError(
            f"n_threads must be an integer >= 1 or None; got {n_threads!r}."
        )
    previous = _POLICY["blas_threads"]
    _POLICY["blas_threads"] = None if n_threads is None else int(n_threads)
    return previous


@functools.cache
def _controller():
    """Return threadpoolctl's view of the loaded BLAS libraries (scanned once)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextmanager
def limited_blas():
    """Run the block with BLAS capped at :func:`get_blas_threads` threads.

    Nested blocks (a CV fit's inner fits, a fit's own predictions) keep the
    outer block's limit and cost nothing.
    """
    limit = _POLICY["blas_threads"]
    with _LOCK:
        enter = _ACTIVE["depth"] == 0 and limit is not None
        if enter:
            _ACTIVE["limiter"] = _controller().limit(limits=limit, user_api="blas")
        _ACTIVE["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE["depth"] -= 1
            if _ACTIVE["depth"] == 0 and _ACTIVE["limiter"] is not None:
                _ACTIVE["limiter"].restore_original_limits()
                _ACTIVE["limiter"] = None


def blas_limited(method):
    """Decorate a fit or predict method to run under :func:`limited_blas`."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with limited_blas():
            return method(*args, **kwargs)

    return wrapper
