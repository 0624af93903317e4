"""MarginSoftmaxClassifierCV against LogisticRegressionCV on the shared datasets.

One run, the same folds for everyone (5 stratified folds of the training split,
shuffled with seed 0), StandardScaler in a Pipeline, BLAS pinned to one thread,
n_jobs=1. Per dataset and model: test accuracy, log loss and ECE of
``predict_proba`` (15 equal-width bins of the top-class confidence), fit time.

Models
------
* ``ours``: ``MarginSoftmaxClassifierCV()`` defaults (27 grid points: 3 m x 9 s);
  ``ours T=1`` is the same fit with the temperature ignored (softmax of the
  decision function), to show what calibration buys.
* ``lrcv``: ``LogisticRegressionCV()`` defaults (10 C values).
* ``lrcv27``: ``LogisticRegressionCV(Cs=27)``, the same number of grid points
  and folds as ours (the equal-grid time ratio).

Usage::

    python benchmarks/cv_vs_logregcv.py [--data ../shared/data] [--out rows.jsonl]
        [--datasets letter,usps] [--models ours,lrcv,lrcv27]
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegressionCV  # noqa: E402
from sklearn.metrics import accuracy_score, log_loss  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.extmath import softmax  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from sklmargin import MarginSoftmaxClassifierCV  # noqa: E402
from sklmargin._calibration import (  # noqa: E402
    expected_calibration_error,
    logits_from_decision,
)

REPO = Path(__file__).resolve().parent.parent
N_BINS = 15


def models(folds):
    return {
        "ours": MarginSoftmaxClassifierCV(cv=folds),
        "lrcv": LogisticRegressionCV(cv=folds),
        "lrcv27": LogisticRegressionCV(Cs=27, cv=folds),
    }


def probability_metrics(proba, y_test, classes):
    y_encoded = np.searchsorted(classes, y_test)
    return {
        "log_loss": float(log_loss(y_test, proba, labels=classes)),
        "ece": expected_calibration_error(proba, y_encoded, n_bins=N_BINS),
    }


def run(name, path, model_names):
    data = np.load(path)
    X_train, y_train = data["X_train"], data["y_train"]
    X_test, y_test = data["X_test"], data["y_test"]
    folds = list(
        StratifiedKFold(5, shuffle=True, random_state=0).split(X_train, y_train)
    )
    rows = []
    for model_name, model in models(folds).items():
        if model_name not in model_names:
            continue
        pipeline = make_pipeline(StandardScaler(), model)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            start = time.perf_counter()
            pipeline.fit(X_train, y_train)
            fit_time = time.perf_counter() - start
        n_convergence = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
        classes = pipeline[-1].classes_
        proba = pipeline.predict_proba(X_test)
        row = {
            "dataset": name,
            "model": model_name,
            "accuracy": float(accuracy_score(y_test, pipeline.predict(X_test))),
            "fit_time": fit_time,
            "convergence_warnings": n_convergence,
            **probability_metrics(proba, y_test, classes),
        }
        estimator = pipeline[-1]
        if model_name == "ours":
            row.update(
                s=estimator.s_,
                m=estimator.m_,
                temperature=estimator.temperature_,
                n_grid=int(estimator.cv_results_["mean_test_score"].size),
                mean_test_score=estimator.cv_results_["mean_test_score"].tolist(),
                mean_fit_time=estimator.cv_results_["mean_fit_time"].tolist(),
                mean_n_iter=estimator.cv_results_["mean_n_iter"].tolist(),
            )
            logits = logits_from_decision(pipeline.decision_function(X_test))
            uncalibrated = {
                "dataset": name,
                "model": "ours T=1",
                "accuracy": row["accuracy"],
                "fit_time": fit_time,
                **probability_metrics(softmax(logits), y_test, classes),
            }
            rows.append(row)
            rows.append(uncalibrated)
        else:
            row.update(C=float(np.ravel(estimator.C_)[0]), n_grid=len(estimator.Cs_))
            rows.append(row)
        print(
            f"{name:10s} {model_name:8s} acc {row['accuracy']:.4f} "
            f"logloss {row['log_loss']:.4f} ece {row['ece']:.4f} "
            f"fit {fit_time:7.2f}s  conv.warn {n_convergence}",
            flush=True,
        )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--out", default=None, help="append JSON rows here")
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--models", default="ours,lrcv,lrcv27")
    args = parser.parse_args()
    paths = sorted(Path(args.data).glob("*.npz"))
    if args.datasets:
        wanted = set(args.datasets.split(","))
        paths = [p for p in paths if p.stem in wanted]
    print(f"BLAS pinned to 1 thread; n_jobs=1; ECE with {N_BINS} equal-width bins")
    all_rows = []
    with threadpool_limits(1):
        for path in paths:
            rows = run(path.stem, path, set(args.models.split(",")))
            all_rows.extend(rows)
            if args.out:
                with open(args.out, "a") as handle:
                    for row in rows:
                        handle.write(json.dumps(row) + "\n")
    summarize(all_rows)


def summarize(rows):
    by = {(r["dataset"], r["model"]): r for r in rows}
    datasets = sorted({r["dataset"] for r in rows})
    if not all((d, m) in by for d in datasets for m in ("ours", "lrcv")):
        return
    print("\n| dataset | acc ours | acc LRCV | logloss ours | logloss LRCV | "
          "ECE ours | ECE LRCV | fit ours s | fit LRCV s | fit LRCV(27) s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for d in datasets:
        o, lr = by[(d, "ours")], by[(d, "lrcv")]
        lr27 = by.get((d, "lrcv27"), {"fit_time": float("nan")})
        print(
            f"| {d} | {o['accuracy']:.4f} | {lr['accuracy']:.4f} | "
            f"{o['log_loss']:.4f} | {lr['log_loss']:.4f} | {o['ece']:.4f} | "
            f"{lr['ece']:.4f} | {o['fit_time']:.1f} | {lr['fit_time']:.1f} | "
            f"{lr27['fit_time']:.1f} |"
        )
    acc_o = np.array([by[(d, "ours")]["accuracy"] for d in datasets])
    acc_l = np.array([by[(d, "lrcv")]["accuracy"] for d in datasets])
    print(f"mean accuracy ours {acc_o.mean():.4f}  LRCV {acc_l.mean():.4f}; "
          f"ours >= LRCV on {(acc_o >= acc_l).sum()}/{len(datasets)}")
    for key in ("log_loss", "ece"):
        o = np.array([by[(d, "ours")][key] for d in datasets])
        lr = np.array([by[(d, "lrcv")][key] for d in datasets])
        print(f"{key}: ours <= LRCV on {(o <= lr).sum()}/{len(datasets)}")
    t_o = sum(by[(d, "ours")]["fit_time"] for d in datasets)
    t_l = sum(by[(d, "lrcv")]["fit_time"] for d in datasets)
    print(f"total fit time ours / LRCV default = {t_o / t_l:.2f}")
    if all((d, "lrcv27") in by for d in datasets):
        t_27 = sum(by[(d, "lrcv27")]["fit_time"] for d in datasets)
        print(f"total fit time ours / LRCV(Cs=27) = {t_o / t_27:.2f}")


if __name__ == "__main__":
    main()
