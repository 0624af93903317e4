"""Open-set recognition with and without the kernel estimator's learned metric.

The open-set page's tables were measured with
``KernelMarginSoftmaxClassifier(metric=None)``. This script measures whether
the learned input metric (the estimator's default, ``metric="diagonal"``) helps
or hurts open-set recognition, on the same models otherwise:
``Pipeline(StandardScaler(), KernelMarginSoftmaxClassifier(random_state=0,
metric=...))`` fitted on the known classes' training rows, and the same
estimator inside ``OpenSetClassifier(target_rejection=0.05)``.

Reported per known/unknown split, for each metric:

* AUROC of ``score_samples`` for known (positive) against unknown test rows;
* the share of unknown test rows the OpenSetClassifier rejects;
* the share of known test rows it rejects (the target is 0.05);
* closed-set accuracy on the known test rows.

Splits. ``digits`` (scikit-learn's bundled 8x8 digits, half of each known
class's rows for training, every unseen digit scored): the gallery example's
split (digits 0-5 known), digits 0-6 known, and five random splits of six known
digits (seeds 0-4). With ``--datasets``, also the shared data sets under the
protocol of ``benchmarks/openset.py`` (round(0.6 K) random known classes per
seed, the sets' own test rows).

Usage::

    python benchmarks/openset_metric.py                 # digits only, ~1 min
    python benchmarks/openset_metric.py --datasets pendigits segment --splits 2
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _common import add_data_argument, blas_line, load_split, now, pinned_blas
from sklearn.datasets import load_digits
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklmargin import KernelMarginSoftmaxClassifier, OpenSetClassifier

METRICS = {"metric=None": None, "default metric": "diagonal"}
KNOWN_SHARE = 0.6


def measure(
    X_train, y_train, X_test, y_test, known_classes, metric, seed=0, scale=True
):
    """One split, one metric: AUROC, rejection of unknown and known rows, accuracy.

    ``scale=False`` leaves out the StandardScaler (``"passthrough"``).
    """
    train = np.isin(y_train, known_classes)
    known = np.isin(y_test, known_classes)
    model = make_pipeline(
        StandardScaler() if scale else "passthrough",
        OpenSetClassifier(
            KernelMarginSoftmaxClassifier(metric=metric, random_state=seed),
            target_rejection=0.05,
        ),
    ).fit(X_train[train], y_train[train])
    # The refitted estimator inside is the plain classifier's fit on all rows.
    classifier = make_pipeline(model[0], model[-1].estimator_)
    predicted = model.predict(X_test)
    rejected = predicted == model[-1].unknown_label_
    return {
        "auroc": roc_auc_score(known, classifier.score_samples(X_test)),
        "unknown rejected": float(np.mean(rejected[~known])),
        "known rejected": float(np.mean(rejected[known])),
        "accuracy": float(np.mean(classifier.predict(X_test[known]) == y_test[known])),
    }


def digits_splits():
    """``(label, X_train, y_train, X_test, y_test, known)`` on the bundled digits."""
    X, y = load_digits(return_X_y=True)
    choices = [("digits 0-5", np.arange(6)), ("digits 0-6", np.arange(7))]
    for seed in range(5):
        known = np.sort(np.random.RandomState(seed).permutation(10)[:6])
        choices.append((f"digits {''.join(map(str, known))} (seed {seed})", known))
    for label, known_classes in choices:
        known = np.isin(y, known_classes)
        X_train, X_known_test, y_train, y_known_test = train_test_split(
            X[known], y[known], test_size=0.5, random_state=0, stratify=y[known]
        )
        X_test = np.vstack([X_known_test, X[~known]])
        y_test = np.concatenate([y_known_test, y[~known]])
        yield label, X_train, y_train, X_test, y_test, known_classes
    # The OpenSetClassifier docstring's setting: pixels divided by 16, no
    # StandardScaler, every other row of digits 0-5 for training, 300 centres
    # (here the estimator's default width).
    known = y < 6
    X_test = np.vstack([X[known][1::2], X[~known]])
    y_test = np.concatenate([y[known][1::2], y[~known]])
    yield (
        "digits 0-5, X / 16, no scaler",
        X[known][::2] / 16.0, y[known][::2], X_test / 16.0, y_test, np.arange(6),
    )  # fmt: skip


def shared_splits(data, names, splits):
    """The protocol of ``benchmarks/openset.py`` on the shared data sets."""
    for name in names:
        X_train, y_train, X_test, y_test = load_split(data, name)
        classes = np.unique(y_train)
        n_known = round(KNOWN_SHARE * len(classes))
        if n_known < 2:
            continue
        for seed in range(splits):
            known = np.sort(np.random.RandomState(seed).permutation(classes)[:n_known])
            yield f"{name} (seed {seed})", X_train, y_train, X_test, y_test, known


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--datasets", nargs="*", default=[])
    parser.add_argument("--splits", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"Made on {now()}.")
    rows = []
    with pinned_blas(1, announce=False):
        print(f"{blas_line(1)}.\n")
        print(
            "| split | metric | AUROC | unknown rejected | known rejected "
            "| closed-set acc. | CPU s |"
        )
        print("|---|---|---|---|---|---|---|")
        splits = list(digits_splits())
        splits += list(shared_splits(args.data, args.datasets, args.splits))
        for label, X_train, y_train, X_test, y_test, known in splits:
            for name, metric in METRICS.items():
                cpu = time.process_time()
                result = measure(
                    X_train, y_train, X_test, y_test, known, metric,
                    scale="no scaler" not in label,
                )  # fmt: skip
                cpu = time.process_time() - cpu
                rows.append((label, name, result))
                print(
                    f"| {label} | {name} | {result['auroc']:.3f} "
                    f"| {result['unknown rejected']:.3f} "
                    f"| {result['known rejected']:.3f} | {result['accuracy']:.3f} "
                    f"| {cpu:.1f} |",
                    flush=True,
                )
    print("\nMeans over the splits above:\n")
    print("| splits | metric | AUROC | unknown rejected | known rejected | acc. |")
    print("|---|---|---|---|---|---|")
    groups = {
        "digits": lambda s: s.startswith("digits") and "no scaler" not in s,
        "digits, no scaler": lambda s: "no scaler" in s,
    }
    if args.datasets:
        groups["shared sets"] = lambda s: not s.startswith("digits")
    for group, member in groups.items():
        for name in METRICS:
            chosen = [r for s, m, r in rows if m == name and member(s)]
            means = {k: np.mean([r[k] for r in chosen]) for k in chosen[0]}
            print(
                f"| {group} ({len(chosen)}) | {name} | {means['auroc']:.3f} "
                f"| {means['unknown rejected']:.3f} | {means['known rejected']:.3f} "
                f"| {means['accuracy']:.3f} |"
            )


if __name__ == "__main__":
    main()
