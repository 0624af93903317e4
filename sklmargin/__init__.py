"""sklmargin: scikit-learn classifiers trained with margin-based softmax losses."""

from importlib.metadata import PackageNotFoundError, version

from ._estimators import MarginSoftmaxClassifier
from ._features import RandomFourierFeatures
from ._kernel import KernelMarginSoftmaxClassifier
from ._margins import LOSS_NAMES
from ._nystroem import NystroemFeatures
from ._objective import margin_softmax_loss

try:
    __version__ = version("sklmargin")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

__all__ = [
    "KernelMarginSoftmaxClassifier",
    "LOSS_NAMES",
    "MarginSoftmaxClassifier",
    "NystroemFeatures",
    "RandomFourierFeatures",
    "margin_softmax_loss",
    "__version__",
]
