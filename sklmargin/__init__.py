"""sklmargin: scikit-learn classifiers trained with margin-based softmax losses."""

from importlib.metadata import PackageNotFoundError, version

from ._cv import KernelMarginSoftmaxClassifierCV, MarginSoftmaxClassifierCV
from ._estimators import MarginSoftmaxClassifier
from ._features import RandomFourierFeatures
from ._kernel import KernelMarginSoftmaxClassifier
from ._margins import LOSS_NAMES
from ._nystroem import NystroemFeatures
from ._objective import margin_softmax_loss
from ._onnx import register_onnx_converters, to_onnx
from ._openset import OpenSetClassifier
from ._skops import skops_trusted_types

try:
    __version__ = version("sklmargin")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

__all__ = [
    "KernelMarginSoftmaxClassifier",
    "KernelMarginSoftmaxClassifierCV",
    "LOSS_NAMES",
    "MarginSoftmaxClassifier",
    "MarginSoftmaxClassifierCV",
    "NystroemFeatures",
    "OpenSetClassifier",
    "RandomFourierFeatures",
    "margin_softmax_loss",
    "register_onnx_converters",
    "skops_trusted_types",
    "to_onnx",
    "__version__",
]
