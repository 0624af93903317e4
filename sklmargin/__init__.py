"""sklmargin: scikit-learn classifiers trained with margin-based softmax losses."""

from importlib.metadata import PackageNotFoundError, version

from ._legacy import install_legacy_module_paths
from ._utils.grid_edges import GridEdgeWarning
from ._utils.threads import get_blas_threads, set_blas_threads
from ._utils.validation import FeatureScaleWarning
from .estimators import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier
from .features import NystroemFeatures, RandomFourierFeatures
from .losses import LOSS_NAMES, Margin, get_margin, registered_margins
from .model_selection import KernelMarginSoftmaxClassifierCV, MarginSoftmaxClassifierCV
from .objective import margin_softmax_loss
from .openset import OpenSetClassifier

# Models pickled (or saved with skops) before the subpackages existed name
# modules such as ``sklmargin._estimators``: those names still import.
install_legacy_module_paths()

# Integrations load on first use: a NumPy fit imports no ONNX or skops code.
_LAZY = {
    "register_onnx_converters": ".integrations.onnx",
    "to_onnx": ".integrations.onnx",
    "skops_trusted_types": ".integrations.skops",
}


def __getattr__(name):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


try:
    __version__ = version("sklmargin")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

__all__ = [
    "FeatureScaleWarning",
    "GridEdgeWarning",
    "KernelMarginSoftmaxClassifier",
    "KernelMarginSoftmaxClassifierCV",
    "LOSS_NAMES",
    "Margin",
    "MarginSoftmaxClassifier",
    "MarginSoftmaxClassifierCV",
    "NystroemFeatures",
    "OpenSetClassifier",
    "RandomFourierFeatures",
    "get_blas_threads",
    "get_margin",
    "margin_softmax_loss",
    "registered_margins",
    "set_blas_threads",
    "register_onnx_converters",
    "skops_trusted_types",
    "to_onnx",
    "__version__",
]
