"""The training objective: from parameters to loss and gradient.

Rows are prepared once (:mod:`._rows`), the pointwise loss of a cosine matrix
is :func:`margin_softmax_loss`, and :class:`LinearMarginObjective` applies the
chain rule to the parameters. Every objective the solver drives implements
:class:`MarginObjective`.
"""

from ._interface import MarginObjective
from ._linear import LinearMarginObjective
from ._pointwise import margin_softmax_loss

__all__ = ["LinearMarginObjective", "MarginObjective", "margin_softmax_loss"]
