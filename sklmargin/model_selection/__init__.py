"""Cross-validated estimators: m, s (and gamma) chosen on held-out folds."""

from ._cv import KernelMarginSoftmaxClassifierCV, MarginSoftmaxClassifierCV

__all__ = ["KernelMarginSoftmaxClassifierCV", "MarginSoftmaxClassifierCV"]
