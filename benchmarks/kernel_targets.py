"""Issue 9's targets: the default KernelMarginSoftmaxClassifier against tuned SVC.

For every dataset: a StandardScaler fitted on the training split, then the
default ``KernelMarginSoftmaxClassifier(random_state=0)`` and ``SVC(rbf)`` at the
C and gamma that 3-fold CV over C in {1, 10, 100} x gamma in {1/4, 1, 4} x
"scale" chose on the training split (``--svc-params``; the choices of
``benchmarks/kernel_study.py``'s svc stage, recorded in
``results_kernel_study.md``). Test accuracy, fit and predict seconds (medians of
``--repeats``), ratios ours / SVC measured in the same run, one BLAS thread.
SVC on a9a is fitted on a stratified ``--svc-max-samples`` subsample (it does not
finish on all 32,561 rows in the budget); its time is then a lower bound.

Usage::

    python benchmarks/kernel_targets.py --data ../shared/data --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
from _common import add_data_argument, load_split, machine, now, pinned_blas, versions
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

# (C, gamma multiple of "scale") chosen by 3-fold CV on each training split
# (benchmarks/results_kernel_study.md, "SVC(rbf), GridSearchCV(cv=3)").
SVC_CHOICES = {
    "a9a": (10, 0.25),
    "dna": (1, 1),
    "letter": (10, 1),
    "pendigits": (10, 1),
    "satimage": (10, 4),
    "segment": (100, 0.25),
    "usps": (10, 1),
    "vowel": (10, 1),
}


def _timed(fit, predict, repeats):
    fits, predicts, result = [], [], None
    for _ in range(repeats):
        start = time.perf_counter()
        model = fit()
        fits.append(time.perf_counter() - start)
        start = time.perf_counter()
        result = predict(model)
        predicts.append(time.perf_counter() - start)
    return result, statistics.median(fits), statistics.median(predicts)


def run(data, names, repeats, svc_max_samples):
    from sklmargin import KernelMarginSoftmaxClassifier

    rows = []
    for name in names:
        X_train, y_train, X_test, y_test = load_split(data, name)
        ours = make_pipeline(
            StandardScaler(), KernelMarginSoftmaxClassifier(random_state=0)
        )
        pred, fit_s, pred_s = _timed(
            lambda m=ours, X=X_train, y=y_train: m.fit(X, y),
            lambda model, X=X_test: model.predict(X),
            repeats,
        )
        ours_acc = float(np.mean(pred == y_test))
        C, multiple = SVC_CHOICES[name]
        Xs, ys = X_train, y_train
        if len(y_train) > svc_max_samples:
            Xs, _, ys, _ = train_test_split(
                X_train, y_train, train_size=svc_max_samples, stratify=y_train,
                random_state=0,
            )  # fmt: skip
        gamma = multiple / X_train.shape[1]  # "scale" on standardised data
        svc = make_pipeline(StandardScaler(), SVC(C=C, gamma=gamma))
        svc_pred, svc_fit, svc_pred_s = _timed(
            lambda m=svc, X=Xs, y=ys: m.fit(X, y),
            lambda model, X=X_test: model.predict(X),
            repeats,
        )
        svc_acc = float(np.mean(svc_pred == y_test))
        row = {
            "dataset": name,
            "n_train": int(len(y_train)),
            "ours_acc": ours_acc,
            "svc_acc": svc_acc,
            "diff": ours_acc - svc_acc,
            "ours_fit": fit_s,
            "svc_fit": svc_fit,
            "fit_ratio": fit_s / svc_fit,
            "ours_predict": pred_s,
            "svc_predict": svc_pred_s,
            "predict_ratio": pred_s / svc_pred_s,
            "svc_rows": int(len(ys)),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--datasets", default=",".join(SVC_CHOICES))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--svc-max-samples", type=int, default=16000)
    args = parser.parse_args()
    print(f"# {now()} {machine()} {versions()}", flush=True)
    with pinned_blas(1):
        rows = run(
            args.data, args.datasets.split(","), args.repeats, args.svc_max_samples
        )
    print("| dataset | n_train | ours % | tuned SVC % | diff | fit s ours / SVC "
          "(ratio) | predict s ours / SVC (ratio) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['dataset']} | {r['n_train']} | {100 * r['ours_acc']:.2f} | "
            f"{100 * r['svc_acc']:.2f} | {100 * r['diff']:+.2f} | "
            f"{r['ours_fit']:.2f} / {r['svc_fit']:.2f} ({r['fit_ratio']:.2f}) | "
            f"{r['ours_predict']:.3f} / {r['svc_predict']:.3f} "
            f"({r['predict_ratio']:.2f}) |"
        )
    diffs = [100 * r["diff"] for r in rows]
    print(f"\nmean diff {np.mean(diffs):+.2f} points, worst {min(diffs):+.2f}")


if __name__ == "__main__":
    main()
