"""Margins: everything one loss of the family knows, in one small class each.

Every loss shares one pipeline (cosine matrix -> margin transforms -> logit
scale -> softmax cross-entropy, see :mod:`sklmargin.objective`). A loss
differs from another only by what its :class:`Margin` says:

* the *target transform* ``f(cos)`` applied to the cosine of the true class,
  and its derivative (:meth:`Margin.target`);
* the *non-target transform* of the other cosines, with the state it holds
  fixed during one L-BFGS run (:meth:`Margin.non_target`; SV-Softmax is a
  modifier built on it, :class:`sklmargin.losses._support_vectors.SupportVectorGuided`);
* the per-entry *logit scale*, used by training and prediction alike
  (:meth:`Margin.logit_scale`): a constant ``s``, ``s |x_i|`` or
  ``|w_j| |x_i|``;
* what it normalises, whether the L2 penalty applies, how a fit starts, the
  domain and defaults of ``m`` and ``s``, and a tuning grid.

A new margin is one small subclass of :class:`Margin` plus one line in
``_REGISTRY`` (or an instance passed as ``loss=``). Nothing outside this module
tests a loss's name or knows its formula.
"""

from __future__ import annotations

from ._additive import AMSoftmax, ArcFace, NormFace, Softmax
from ._base import Margin
from ._multiplicative import ASoftmax, LSoftmax

_REGISTRY: dict[str, Margin] = {
    margin.name: margin
    for margin in (
        Softmax(),
        NormFace(),
        AMSoftmax(),
        ArcFace(),
        LSoftmax(),
        ASoftmax(),
    )
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
