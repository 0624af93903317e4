"""Shared parameter descriptions, written once and filled into docstrings.

Estimators that share a parameter carry its description once; each class's
docstring holds a placeholder line (four spaces and a name, e.g. ``MAX_ITER``)
that :func:`fill_docstring` replaces, so that ``help()`` shows every parameter
in full. Under ``python -OO`` docstrings are stripped (``None``) and there is
nothing to fill.
"""

from __future__ import annotations


def fill_docstring(cls, **texts):
    """Replace each placeholder line ``    NAME`` of ``cls.__doc__`` by ``texts[NAME]``.

    Returns ``cls`` (usable as a decorator through ``functools.partial``);
    a class without a docstring (``python -OO``) is returned unchanged.
    """
    if cls.__doc__ is not None:
        for name, text in texts.items():
            cls.__doc__ = cls.__doc__.replace(f"    {name}\n", text)
    return cls
