"""Feature maps that approximate the RBF kernel: Nyström and random Fourier."""

from ._fourier import RandomFourierFeatures
from ._nystroem import NystroemFeatures

__all__ = ["NystroemFeatures", "RandomFourierFeatures"]
