"""Fit time and test accuracy of MarginSoftmaxClassifier against LogisticRegression.

For every ``NAME.npz`` in ``--data`` (StandardScaler fitted on the training split),
one fit of ``LogisticRegression(max_iter=1000, tol=1e-4)`` and one of
``MarginSoftmaxClassifier(loss=..., tol=1e-4)`` per loss, in the same process with
one BLAS thread; prints the fit-time ratio, L-BFGS iterations and test accuracy.

Usage::

    python benchmarks/fit_time_vs_lr.py --data ../shared/data
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sklmargin import MarginSoftmaxClassifier

LOSSES = "softmax,normface,am-softmax,arcface,l-softmax,a-softmax"


def main():
    """Print one line per dataset."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--losses", default=LOSSES)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    with threadpool_limits(1):
        for path in sorted(Path(args.data).glob("*.npz")):
            data = np.load(path)
            scaler = StandardScaler().fit(data["X_train"])
            X, y = scaler.transform(data["X_train"]), data["y_train"]
            X_test, y_test = scaler.transform(data["X_test"]), data["y_test"]
            start = time.perf_counter()
            lr = LogisticRegression(max_iter=1000, tol=1e-4).fit(X, y)
            lr_s = time.perf_counter() - start
            cells = [
                f"{path.stem} {X.shape} LR {lr_s:.2f}s it={lr.n_iter_[0]} "
                f"acc={lr.score(X_test, y_test):.4f}"
            ]
            for loss in args.losses.split(","):
                start = time.perf_counter()
                clf = MarginSoftmaxClassifier(loss=loss, tol=1e-4).fit(X, y)
                ratio = (time.perf_counter() - start) / lr_s
                cells.append(
                    f"{loss} {ratio:.2f}x it={clf.n_iter_} "
                    f"acc={clf.score(X_test, y_test):.4f}"
                )
            print(" | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
