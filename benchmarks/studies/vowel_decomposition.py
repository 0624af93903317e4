"""Why the softmax family trails SVC on vowel: the loss, or the decomposition?

Vowel's test split holds out speakers (ESL's split: 528 training rows of 8
speakers, 462 test rows of 7 others, 11 vowels). On the exact kernel
(Nyström with every training row a centre, ``gamma="scale"``) this script fits
the same features with

* multi-class heads: our default AM-Softmax, plain softmax (multinomial
  LogisticRegression), the Crammer-Singer multi-class hinge, one-vs-rest hinge;
* pairwise (one-vs-one) heads: SVC's own OvO, ``OneVsOneClassifier`` around
  LogisticRegression and around our estimator;
* SVC with ``decision_function_shape="ovr"`` (still OvO voting inside) and
  ``OneVsRestClassifier(SVC)`` (the hinge without pairwise decomposition),

at C in {1, 10, 100}, and prints test accuracy. If the one-vs-one heads win
whatever the loss, the gap is the decomposition (pairwise boundaries between
vowels generalise across speakers better than one shared softmax), not the
hinge.

Usage::

    python benchmarks/studies/vowel_decomposition.py --data ../shared/data
"""

from __future__ import annotations

import sys
from pathlib import Path

# The shared helpers (_common.py) live one folder up, in benchmarks/.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import warnings

import numpy as np
from _common import add_data_argument, load_split, machine, now, pinned_blas, versions
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

from sklmargin import KernelMarginSoftmaxClassifier, NystroemFeatures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    args = parser.parse_args()
    print(f"# {now()} {machine()} {versions()}")
    warnings.filterwarnings("ignore")
    X_train, y_train, X_test, y_test = load_split(args.data, "vowel")
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    gamma = 1.0 / X_train.shape[1]  # "scale" on standardised columns
    exact = NystroemFeatures(n_components=len(X_train), gamma=gamma, random_state=0)
    Z_train = exact.fit_transform(X_train)
    Z_test = exact.transform(X_test)

    def on_features(model):
        return model.fit(Z_train, y_train).score(Z_test, y_test)

    def on_rows(model):
        return model.fit(X_train, y_train).score(X_test, y_test)

    ours = dict(gamma=gamma, n_components=len(X_train), random_state=0)
    models = {
        "AM-Softmax (ours, default s)": lambda C: on_rows(
            KernelMarginSoftmaxClassifier(**ours)
        ),
        "softmax (LogisticRegression)": lambda C: on_features(
            LogisticRegression(C=C, max_iter=5000)
        ),
        "Crammer-Singer hinge": lambda C: on_features(
            LinearSVC(C=C, multi_class="crammer_singer", max_iter=20000)
        ),
        "one-vs-rest hinge (LinearSVC)": lambda C: on_features(
            LinearSVC(C=C, max_iter=20000)
        ),
        "OneVsRest(SVC)": lambda C: on_rows(OneVsRestClassifier(SVC(C=C, gamma=gamma))),
        "SVC (one-vs-one)": lambda C: on_rows(SVC(C=C, gamma=gamma)),
        "OneVsOne(LogisticRegression)": lambda C: on_features(
            OneVsOneClassifier(LogisticRegression(C=C, max_iter=5000))
        ),
        "OneVsOne(AM-Softmax, ours)": lambda C: on_rows(
            OneVsOneClassifier(KernelMarginSoftmaxClassifier(**ours))
        ),
    }
    Cs = (1.0, 10.0, 100.0)
    print("\n| head | " + " | ".join(f"C={C:g}" for C in Cs) + " |")
    print("|---|" + "---|" * len(Cs))
    with pinned_blas(1, announce=False):
        for name, fit_score in models.items():
            if "ours" in name:  # C does not enter the cosine losses
                cells = [f"{100 * fit_score(None):.1f}"] + ["(same)"] * (len(Cs) - 1)
            else:
                cells = [f"{100 * fit_score(C):.1f}" for C in Cs]
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n(test rows: {len(y_test)}; one row = {100 / len(y_test):.2f} points)")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
