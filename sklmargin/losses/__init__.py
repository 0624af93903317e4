"""The losses: one :class:`Margin` subclass each, end to end.

A margin says everything a loss knows (target and non-target transforms and
their derivatives, logit scale, what it normalises, the domain and defaults of
``m`` and ``s``, its formula for the documentation, its paper). The registry
(:func:`registered_margins`) is the one list the estimators, the tests, the
fuzzer, ``compare`` and the documentation's tables read.
"""

from ._additive import AMSoftmax, ArcFace, NormFace, Softmax
from ._base import Margin
from ._multiplicative import ASoftmax, LSoftmax
from ._registry import LOSS_NAMES, get_margin, registered_margins
from ._support_vectors import SupportVectorGuided, with_support_vectors

__all__ = [
    "AMSoftmax",
    "ASoftmax",
    "ArcFace",
    "LOSS_NAMES",
    "LSoftmax",
    "Margin",
    "NormFace",
    "Softmax",
    "SupportVectorGuided",
    "get_margin",
    "registered_margins",
    "with_support_vectors",
]
