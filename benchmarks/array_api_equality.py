"""Largest |Δ predict_proba| of array API fits to the NumPy fit, and the NumPy
fit's own sensitivity to a 2-ulp perturbation of X (not timed).

300 standardised rows of ``make_classification`` (8 features, 3 classes),
default settings, ``random_state=0``; every registered loss with and without
SV-Softmax (t = 1.2), and the kernel estimator (100 Nyström centres or random
Fourier features), in float64 and float32, on array-api-strict and torch cpu:

    python benchmarks/array_api_equality.py
"""

from __future__ import annotations

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # scikit-learn's dispatch needs it

import argparse  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklmargin import (  # noqa: E402
    KernelMarginSoftmaxClassifier,
    MarginSoftmaxClassifier,
)
from sklmargin._utils.array_api import to_numpy  # noqa: E402
from sklmargin.losses import registered_margins  # noqa: E402


def _configurations():
    for margin in registered_margins():
        for t in (1.0, 1.2):
            yield (
                f"{margin.name}" + (" t=1.2" if t > 1 else ""),
                MarginSoftmaxClassifier(loss=margin.name, t=t, random_state=0),
            )
    for approximation in ("nystroem", "rff"):
        yield (
            f"kernel {approximation}",
            KernelMarginSoftmaxClassifier(
                kernel_approximation=approximation, n_components=100, random_state=0
            ),
        )


def main():
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    import array_api_strict
    import torch

    torch.set_num_threads(1)
    namespaces = {
        "array-api-strict": lambda a: array_api_strict.asarray(a),
        "torch cpu": lambda a: torch.asarray(a),
    }
    X, y = make_classification(
        n_samples=300, n_features=8, n_informative=5, n_classes=3, random_state=0
    )
    X = StandardScaler().fit_transform(X)
    noise = np.random.default_rng(1).standard_normal(X.shape)
    print(
        "| configuration | dtype | array-api-strict | torch cpu | "
        "NumPy fit under a 2-ulp perturbation of X |"
    )
    print("|---|---|---|---|---|")
    warnings.simplefilter("ignore")
    for dtype in (np.float64, np.float32):
        Xd = X.astype(dtype)
        perturbed = (X * (1 + 2 * np.finfo(dtype).eps * noise)).astype(dtype)
        for name, estimator in _configurations():
            reference = clone(estimator).fit(Xd, y).predict_proba(Xd)
            cells = []
            for convert in namespaces.values():
                with sklearn.config_context(array_api_dispatch=True):
                    fitted = clone(estimator).fit(convert(Xd), convert(y))
                    proba = to_numpy(fitted.predict_proba(convert(Xd)))
                cells.append(f"{np.max(np.abs(proba - reference)):.1e}")
            sensitivity = clone(estimator).fit(perturbed, y).predict_proba(Xd)
            cells.append(f"{np.max(np.abs(sensitivity - reference)):.1e}")
            print(f"| {name} | {np.dtype(dtype).name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
