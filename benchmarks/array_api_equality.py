"""Largest |Δ predict_proba| of array API fits to the NumPy fit, and the NumPy
fit's own sensitivity to a 2-ulp perturbation of X (not timed).

300 standardised rows of ``make_classification`` (8 features, 3 classes),
default settings, ``random_state=0``; every registered loss with and without
SV-Softmax (t = 1.2), and the kernel estimator (100 Nyström centres or random
Fourier features), in float64 and float32, on array-api-strict and torch cpu:

    python benchmarks/array_api_equality.py

``--cv`` compares the cross-validated searches instead (float64, with and
without sample weights ``i % 3 + 0.5``), and says whether each chose the NumPy
search's grid point.
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
    KernelMarginSoftmaxClassifierCV,
    MarginSoftmaxClassifier,
    MarginSoftmaxClassifierCV,
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


def _cv_configurations():
    """The searches of tests/test_array_api.py, then two whose NumPy search
    is itself sensitive to round-off (AM-Softmax over s and m; ArcFace's
    default s path up to 160, refit=False)."""
    yield (
        "softmax Cs=0.1,1,10",
        MarginSoftmaxClassifierCV(loss="softmax", Cs=[0.1, 1.0, 10.0], cv=3),
    )
    yield (
        "normface ss=5,10,20",
        MarginSoftmaxClassifierCV(loss="normface", ss=[5.0, 10.0, 20.0], cv=3),
    )
    yield (
        "l-softmax Cs=0.1,1 refit=False",
        MarginSoftmaxClassifierCV(loss="l-softmax", Cs=[0.1, 1.0], cv=3, refit=False),
    )
    yield (
        "kernel nystroem 50, ss=50,100",
        KernelMarginSoftmaxClassifierCV(
            n_components=50, ss=[50.0, 100.0], cv=3, random_state=0
        ),
    )
    yield "kernel orf 50, ss=50,100, refit=False", KernelMarginSoftmaxClassifierCV(
        kernel_approximation="orf", n_components=50, ss=[50.0, 100.0], cv=3,
        refit=False, random_state=0,
    )  # fmt: skip
    yield (
        "am-softmax ss=10,30 ms=0,0.05",
        MarginSoftmaxClassifierCV(
            ss=[10.0, 30.0], ms=[0.0, 0.05], cv=3, random_state=0
        ),
    )
    yield (
        "arcface default path, refit=False",
        MarginSoftmaxClassifierCV(loss="arcface", cv=3, refit=False, random_state=0),
    )


def _same_point(a, b):
    """Whether two searches chose the same point (gamma="scale" to round-off)."""
    names = [n for n in ("C_", "s_", "m_", "gamma_") if hasattr(a, n)]
    values = [(getattr(a, n), getattr(b, n)) for n in names]
    return all(
        u == v or (u is not None and v is not None and abs(u - v) <= 1e-12 * abs(v))
        for u, v in values
    )


def compare_cv(X, y, noise, namespaces):
    """Print the CV table: |Δ predict_proba| and whether the grid point agrees."""
    print(
        "| search | weights | array-api-strict | torch cpu | "
        "NumPy search under a 2-ulp perturbation of X | same point |"
    )
    print("|---|---|---|---|---|---|")
    perturbed = X * (1 + 2 * np.finfo(np.float64).eps * noise)
    for name, search in _cv_configurations():
        for weights in (None, np.arange(X.shape[0]) % 3 + 0.5):
            reference = clone(search).fit(X, y, sample_weight=weights)
            expected = reference.predict_proba(X)
            cells, same = [], []
            for convert in namespaces.values():
                with sklearn.config_context(array_api_dispatch=True):
                    fitted = clone(search).fit(
                        convert(X),
                        convert(y),
                        sample_weight=None if weights is None else convert(weights),
                    )
                    proba = to_numpy(fitted.predict_proba(convert(X)))
                cells.append(f"{np.max(np.abs(proba - expected)):.1e}")
                same.append(_same_point(fitted, reference))
            moved = clone(search).fit(perturbed, y, sample_weight=weights)
            cells.append(
                f"{np.max(np.abs(moved.predict_proba(X) - expected)):.1e}"
                + ("" if _same_point(moved, reference) else " (other point)")
            )
            cells.append("yes" if all(same) else "no")
            label = "none" if weights is None else "i % 3 + 0.5"
            print(f"| {name} | {label} | " + " | ".join(cells) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cv", action="store_true", help="compare the CV searches")
    cv = parser.parse_args().cv
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
    if cv:
        warnings.simplefilter("ignore")
        compare_cv(X, y, noise, namespaces)
        return
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
