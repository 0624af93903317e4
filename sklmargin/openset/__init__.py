"""Open-set recognition: a score for "none of the known classes" and a rejector."""

from ._classifier import OpenSetClassifier

__all__ = ["OpenSetClassifier"]
