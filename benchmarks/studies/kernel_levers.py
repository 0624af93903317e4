"""Two levers of issue 17 measured: adaptive centres and subsample-then-refine.

* ``--study centres``: the default kernel estimator at 250, 500, 1000 and 2000
  uniform Nyström centres, with the mean Nyström residual ``1 - |z(x)|^2`` over
  the training rows (the residual trace a randomly pivoted Cholesky stopping
  rule would read): does the residual say where accuracy saturates?
* ``--study subsample``: L-BFGS on a 25% or 10% row subsample first (same
  feature map), then warm-started on all rows: does it cut the full-data
  iterations?

Test accuracy, CPU seconds (``time.process_time``), one BLAS thread.

Usage::

    python benchmarks/studies/kernel_levers.py --data ../shared/data --study centres
    python benchmarks/studies/kernel_levers.py --data ../shared/data --study subsample
"""

from __future__ import annotations

import sys
from pathlib import Path

# The shared helpers (_common.py) live one folder up, in benchmarks/.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import json
import time
import warnings

import numpy as np
from _common import add_data_argument, load_split, machine, now, pinned_blas, versions
from sklearn.preprocessing import StandardScaler

from sklmargin import KernelMarginSoftmaxClassifier
from sklmargin.estimators._fit_path import fit_path

DATASETS = "segment,dna,satimage,pendigits,usps,letter,vowel"


def standardised(data, name):
    X_train, y_train, X_test, y_test = load_split(data, name)
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), y_train, scaler.transform(X_test), y_test


def centres_study(name, X_train, y_train, X_test, y_test):
    for n_centres in (250, 500, 1000, 2000):
        clf = KernelMarginSoftmaxClassifier(n_components=n_centres, random_state=0)
        start = time.process_time()
        clf.fit(X_train, y_train)
        cpu = time.process_time() - start
        mapped = clf.feature_map_.transform(X_train.astype(clf.compute_dtype_))
        residual = float(np.mean(1.0 - np.einsum("ij,ij->i", mapped, mapped)))
        yield {
            "dataset": name,
            "centres": n_centres,
            "accuracy": 100 * float(np.mean(clf.predict(X_test) == y_test)),
            "fit_cpu": cpu,
            "mean_residual": residual,
            "n_iter": int(clf.n_iter_),
        }


def subsample_study(name, X_train, y_train, X_test, y_test):
    base = KernelMarginSoftmaxClassifier(random_state=0)
    feature_map, mapped, _ = base._fold_features(X_train, None, X_train[:1])
    order = np.random.RandomState(0).permutation(len(y_train))
    for fraction in (1.0, 0.25, 0.1):
        clf = KernelMarginSoftmaxClassifier(random_state=0)
        start = time.process_time()
        first = 0
        if fraction < 1.0:
            rows = order[: int(fraction * len(y_train))]
            for _ in fit_path(
                clf,
                X_train[rows],
                y_train[rows],
                mapped=(feature_map, mapped[rows]),
                warn_scale=False,
            ):
                pass
            first = int(clf.n_iter_)
            clf.set_params(warm_start=True)
        for _ in fit_path(
            clf, X_train, y_train, mapped=(feature_map, mapped), warn_scale=False
        ):
            pass
        cpu = time.process_time() - start
        yield {
            "dataset": name,
            "subsample": fraction,
            "accuracy": 100 * float(np.mean(clf.predict(X_test) == y_test)),
            "solve_cpu": cpu,
            "n_iter_subsample": first,
            "n_iter_full": int(clf.n_iter_),
        }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--study", choices=("centres", "subsample"), required=True)
    parser.add_argument("--datasets", default=DATASETS)
    args = parser.parse_args()
    print(f"# {now()} {machine()} {versions()}", flush=True)
    warnings.filterwarnings("ignore", category=UserWarning)
    study = centres_study if args.study == "centres" else subsample_study
    with pinned_blas(1):
        for name in args.datasets.split(","):
            for row in study(name, *standardised(args.data, name)):
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
