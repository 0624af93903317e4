"""The classifiers: validation, optional feature map, solver call, prediction."""

from ._base import BaseMarginSoftmax
from ._kernel import KernelMarginSoftmaxClassifier
from ._linear import MarginSoftmaxClassifier

__all__ = [
    "BaseMarginSoftmax",
    "KernelMarginSoftmaxClassifier",
    "MarginSoftmaxClassifier",
]
