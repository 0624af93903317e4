"""KernelMarginSoftmaxClassifier against SVC(rbf) and RBFSampler + LogisticRegression.

For every ``NAME.npz`` in a folder (X_train, y_train, X_test, y_test): a
StandardScaler fitted on the training split, then test accuracy, fit time and
predict time of

* ``KernelMarginSoftmaxClassifier()`` at its defaults and at n_components=2000,
* ``SVC(kernel="rbf", C=1)`` and ``SVC(C=10)`` (skipped above ``--svc-max-samples``),
* ``RBFSampler(n_components=2000) + LogisticRegression(max_iter=1000)``,

all in one run with the same number of BLAS threads (default 1: SVC is
single-threaded), times as medians of ``--repeats`` runs. Prints a markdown table.

Usage::

    python benchmarks/kernel_vs_svc.py --data ../shared/data --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _common import (
    add_data_argument,
    load_split,
    machine,
    now,
    npz_names,
    pinned_blas,
    versions,
)
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from sklmargin import KernelMarginSoftmaxClassifier


def models(random_state=0):
    """The compared models, by display name."""
    return {
        "KMS default": lambda: KernelMarginSoftmaxClassifier(random_state=random_state),
        "KMS 2000": lambda: KernelMarginSoftmaxClassifier(
            n_components=2000, random_state=random_state
        ),
        "SVC C=1": lambda: SVC(C=1.0),
        "SVC C=10": lambda: SVC(C=10.0),
        "RFF2000+LR": lambda: make_pipeline(
            RBFSampler(gamma="scale", n_components=2000, random_state=random_state),
            LogisticRegression(max_iter=1000),
        ),
    }


def time_model(factory, X, y, X_test, y_test, repeats):
    """Accuracy (first fit) and median fit / predict seconds."""
    fit_times, predict_times, accuracy = [], [], None
    for _ in range(repeats):
        model = factory()
        start = time.perf_counter()
        model.fit(X, y)
        fit_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        predicted = model.predict(X_test)
        predict_times.append(time.perf_counter() - start)
        if accuracy is None:
            accuracy = float(np.mean(predicted == y_test))
    return accuracy, statistics.median(fit_times), statistics.median(predict_times)


def main():
    """Run the comparison and print the markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--datasets", help="comma-separated names (default: all)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--svc-max-samples", type=int, default=20000)
    args = parser.parse_args()

    names = npz_names(args.data, args.datasets.split(",") if args.datasets else None)
    print(f"date {now()}, {machine()}, {versions()}, repeats {args.repeats}")
    columns = list(models())
    with pinned_blas(args.threads):
        print("\n| dataset | n_train | " + " | ".join(columns) + " |")
        print("|---|---|" + "---|" * len(columns))
        for dataset in names:
            X_train, y, X_test, y_test = load_split(args.data, dataset)
            scaler = StandardScaler().fit(X_train)
            X, X_test = scaler.transform(X_train), scaler.transform(X_test)
            cells = []
            for name, factory in models().items():
                if name.startswith("SVC") and len(y) > args.svc_max_samples:
                    cells.append("skipped (n > limit)")
                    continue
                acc, fit_s, predict_s = time_model(
                    factory, X, y, X_test, y_test, args.repeats
                )
                cells.append(f"{100 * acc:.1f}% / {fit_s:.2f}s / {predict_s:.2f}s")
            print(f"| {dataset} | {len(y)} | " + " | ".join(cells) + " |", flush=True)
    print("\ncells: test accuracy / fit time / predict time")


if __name__ == "__main__":
    main()
