"""The loss registry: the one list of ``loss=`` names and their margins.

Estimators resolve ``loss=`` with :func:`get_margin`; the tests, the fuzzer,
``compare``'s model list and the documentation's loss tables iterate over
:func:`registered_margins` (the estimator docstrings' table comes from
:func:`loss_table_text`). The instances themselves are listed by their family
modules (``MARGINS`` in ``_additive`` and ``_multiplicative``).
"""

from __future__ import annotations

from . import _additive, _multiplicative
from ._base import Margin
from ._support_vectors import with_support_vectors

# Each family module lists its registered instances (``MARGINS``) beside the
# classes: a loss added to a family is its class plus one entry there.
_REGISTRY: dict[str, Margin] = {
    margin.name: margin for margin in (*_additive.MARGINS, *_multiplicative.MARGINS)
}


ALIASES = {"cosface": "am-softmax", "sphereface": "a-softmax"}


LOSS_NAMES = tuple(_REGISTRY) + tuple(ALIASES)


def registered_margins():
    """Return every registered :class:`Margin`, in registration order.

    Tests, ``compare`` and the documentation iterate over this instead of
    keeping their own list of loss names.

    Returns
    -------
    tuple of Margin
        One instance per ``loss=`` name (aliases excluded).
    """
    return tuple(_REGISTRY.values())


def get_margin(loss):
    """Return the :class:`Margin` registered under ``loss`` (or an alias).

    Parameters
    ----------
    loss : str or Margin
        A name from :data:`~sklmargin.LOSS_NAMES`, or a margin (returned as is).

    Returns
    -------
    Margin
        The registered instance.

    Raises
    ------
    ValueError
        If ``loss`` is unknown; the message lists the valid names.
    """
    if isinstance(loss, Margin):
        return loss
    key = ALIASES.get(loss, loss) if isinstance(loss, str) else None
    if key not in _REGISTRY:
        raise ValueError(
            f"Unknown loss {loss!r}; valid names are "
            f"{', '.join(map(repr, LOSS_NAMES))}."
        )
    return _REGISTRY[key]


def loss_margin(loss, t):
    """Return the margin that ``loss=`` and SV-Softmax's ``t`` make.

    The registered margin (:func:`get_margin`), wrapped by
    :func:`~sklmargin.losses.with_support_vectors` when ``t > 1``: the margin
    a fit trains with, which alone has SV-Softmax's state rounds.
    """
    return with_support_vectors(get_margin(loss), t)


def loss_table_text():
    """Return the loss table of the estimators' docstrings (reStructuredText).

    One row per registered margin, from its ``logits_text``: the table in
    ``help(MarginSoftmaxClassifier)`` cannot drift from the registry.

    Returns
    -------
    str
        A simple table, unindented.
    """
    header = ("``loss``", "target logit ``z_iy``", "other logits ``z_ij``")
    rows = [
        (f'``"{m.name}"``', f"``{m.logits_text[0]}``", f"``{m.logits_text[1]}``")
        for m in registered_margins()
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(3)]
    rule = "  ".join("=" * w for w in widths)

    def line(cells):
        return "  ".join(
            c.ljust(w) for c, w in zip(cells, widths, strict=True)
        ).rstrip()

    return "\n".join([rule, line(header), rule, *map(line, rows), rule])
