"""The parameter descriptions the linear and the kernel estimator share.

Written once and filled into each class's docstring (the placeholder
``MAX_ITER``) by :func:`fill_shared_docs`, so that ``help()`` shows every
parameter in full, as the CV estimators' shared descriptions are.
"""

from .._utils.docstrings import fill_docstring

#: The ``max_iter`` description both estimators share, filled into their
#: docstrings where they say ``MAX_ITER`` (:func:`fill_shared_docs`).
MAX_ITER_DOC = """\
    max_iter : int, default=1000
        L-BFGS iteration budget. The run at the final ``lambda_min`` (the
        only run of most losses) has ``max_iter`` iterations; the runs that
        prepare it (L-Softmax's softmax start and the lambda stages before
        ``lambda_min``) share another ``max_iter``, and SV-Softmax's state
        rounds (``t > 1``) a third, so a fit takes at most ``3 * max_iter``
        iterations, not ``max_iter`` per stage and per round (which made
        fits of a few hundred rows at extreme settings take seconds). A
        shared budget that runs out gives a ConvergenceWarning naming it.
"""


def fill_shared_docs(cls):
    """Write :data:`MAX_ITER_DOC` into ``cls.__doc__``."""
    return fill_docstring(cls, MAX_ITER=MAX_ITER_DOC)
