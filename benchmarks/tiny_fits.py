"""CPU seconds of tiny fits at extreme but legal settings (one BLAS thread).

The settings that made fits of 45-265 rows take seconds: SV-Softmax with a
stopping rule below round-off, L-Softmax with a huge C on raw rows, A-Softmax
with m=100, ArcFace with t=2 on 8 random Fourier features. Each on row
subsets of iris, wine and breast_cancer (raw and standardised). Prints one
line per fit and the slowest; run it on two trees to compare::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. \\
        python benchmarks/tiny_fits.py
"""

import itertools
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier

SETTINGS = {
    "softmax t=2 s=64 tol=1e-12": (
        MarginSoftmaxClassifier, dict(loss="softmax", t=2.0, s=64.0, tol=1e-12)
    ),
    "l-softmax C=1e8 constant_feature=10": (
        MarginSoftmaxClassifier, dict(loss="l-softmax", C=1e8, constant_feature=10)
    ),
    "a-softmax m=100 balanced": (
        MarginSoftmaxClassifier,
        dict(loss="a-softmax", m=100, class_weight="balanced"),
    ),
    "kernel arcface t=2 s=64 gamma=100 rff 8": (
        KernelMarginSoftmaxClassifier,
        dict(
            loss="arcface", t=2.0, s=64.0, gamma=100.0, kernel_approximation="rff",
            n_components=8,
        ),
    ),
}  # fmt: skip
LOADERS = {"iris": load_iris, "wine": load_wine, "breast_cancer": load_breast_cancer}


def rows(name, n_rows, standardised, seed=0):
    X, y = LOADERS[name](return_X_y=True)
    if standardised:
        X = StandardScaler().fit_transform(X)
    take = np.random.RandomState(seed).permutation(len(y))[:n_rows]
    return X[take], y[take]


def main():
    results = []
    for (label, (cls, params)), name, n_rows, standardised in itertools.product(
        SETTINGS.items(), LOADERS, (45, 100, 265), (True, False)
    ):
        X, y = rows(name, n_rows, standardised)
        clf = cls(**params, random_state=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            begin = time.process_time()
            clf.fit(X, y)
            seconds = time.process_time() - begin
        warned = any(w.category is ConvergenceWarning for w in caught)
        results.append((seconds, label, name, len(y), standardised, clf.n_iter_))
        print(
            f"{seconds:6.2f} CPU s  n_iter {clf.n_iter_:5d}  warned {warned!s:5}  "
            f"{label} | {name} {len(y)} rows, standardised {standardised}",
            flush=True,
        )
    total = sum(r[0] for r in results)
    print(f"\n{len(results)} fits, {total:.1f} CPU s in all; the slowest:")
    for seconds, label, name, n, standardised, n_iter in sorted(results)[::-1][:5]:
        print(
            f"{seconds:6.2f} s  {n_iter} iterations  {label} | {name} {n} rows, "
            f"standardised {standardised}"
        )


if __name__ == "__main__":
    with threadpool_limits(limits=1):
        main()
