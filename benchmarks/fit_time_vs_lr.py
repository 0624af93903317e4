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

from _common import add_data_argument, load_split, npz_names, pinned_blas
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from sklmargin import MarginSoftmaxClassifier
from sklmargin._margins import registered_margins

#: Every registered loss, so that a new one is measured without an edit here.
LOSSES = ",".join(margin.name for margin in registered_margins())


def main():
    """Print one line per dataset."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--losses", default=LOSSES)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    with pinned_blas(1):
        for name in npz_names(args.data):
            X_train, y, X_test, y_test = load_split(args.data, name)
            scaler = StandardScaler().fit(X_train)
            X, X_test = scaler.transform(X_train), scaler.transform(X_test)
            start = time.perf_counter()
            lr = LogisticRegression(max_iter=1000, tol=1e-4).fit(X, y)
            lr_s = time.perf_counter() - start
            cells = [
                f"{name} {X.shape} LR {lr_s:.2f}s it={lr.n_iter_[0]} "
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
