"""skops persistence: the names of our types that skops must be told to trust.

skops refuses to load a type it does not know unless the caller trusts it by
name; scikit-learn's types are trusted by default, ours are not. The names are
computed from the classes, so they stay right if a class moves to another
module. No skops import here: the core does not depend on it.
"""

from __future__ import annotations

import inspect


def skops_trusted_types() -> list[str]:
    """Fully qualified names of sklmargin's estimator types, for skops.

    Pass them to :func:`skops.io.load` / :func:`skops.io.loads` as ``trusted``
    to load a saved sklmargin estimator (alone or inside a pipeline) without
    trusting anything else. They are the public classes of ``sklmargin.__all__``
    that are scikit-learn estimators, and the loss objects a fitted estimator
    holds in ``margin_`` (every registered :class:`~sklmargin.Margin`
    and the SV-Softmax modifier), each also under the module it had before
    the subpackages (files saved by earlier releases); a file that holds other
    unknown types (a user's own margin class included) still fails to load.

    Returns
    -------
    list of str
        Sorted names such as ``"sklmargin.estimators._linear.MarginSoftmaxClassifier"``.

    Examples
    --------
    >>> from sklmargin import skops_trusted_types
    >>> "sklmargin.features._fourier.RandomFourierFeatures" in skops_trusted_types()
    True

    With skops installed (``pip install skops``, or ``pip install ".[skops]"``
    in a checkout):

    .. code-block:: python

        import skops.io as sio
        from sklmargin import skops_trusted_types

        data = sio.dumps(clf)
        clf2 = sio.loads(data, trusted=skops_trusted_types())
    """
    from sklearn.base import BaseEstimator

    import sklmargin

    from .._legacy import legacy_names
    from ..losses._registry import registered_margins
    from ..losses._support_vectors import SupportVectorGuided

    classes = [
        obj
        for obj in map(lambda name: getattr(sklmargin, name), sklmargin.__all__)
        if inspect.isclass(obj) and issubclass(obj, BaseEstimator)
    ]
    classes += [type(margin) for margin in registered_margins()]
    classes.append(SupportVectorGuided)
    names = {f"{cls.__module__}.{cls.__qualname__}" for cls in classes}
    # Files saved before the subpackages name the same classes by their old
    # modules (``sklmargin._kernel...``), which still import (sklmargin._legacy).
    names |= {old for name in names for old in legacy_names(name)}
    return sorted(names)
