"""MarginSoftmaxClassifierCV against LogisticRegressionCV on the shared datasets.

One run, the same folds for everyone (5 stratified folds of the training split,
shuffled with seed 0, or ``--fold-seed``), StandardScaler in a Pipeline, BLAS
pinned to one thread, n_jobs=1. Per dataset and model: test accuracy, log loss
and ECE of ``predict_proba`` (15 equal-width bins of the top-class confidence),
fit time. The frozen-embedding sets (``clip_*`` and the generated
``synthetic_teacher_384x50`` of ``embeddings.py``, named in ``--datasets``)
are fitted without the scaler, as ``embeddings.py`` fits them.

Models
------
* ``ours``: ``MarginSoftmaxClassifierCV()`` defaults (AM-Softmax, m=0.05, a
  10-point s path from 10 to 160); ``ours T=1`` is the same fit with the
  temperature ignored (softmax of the decision function), to show what
  calibration buys.
* ``lrcv``: ``LogisticRegressionCV()`` defaults (10 C values): the same number
  of grid points and folds as ours, so default-vs-default is also equal-grid.
* ``ours_fulltol`` (opt-in): ours with ``path_tol=None``, every path fit at
  ``tol`` (the default before ``path_tol=1e-3``); ``ours_tol3``: ours with
  ``tol=1e-3``, every fit at 1e-3, the chosen point of the refit included.
* ``ours_cv3``, ``ours_ll``, ``ours_cv3_ll`` (opt-in): ours with 3 shuffled
  stratified folds (the same seed) and/or ``scoring="neg_log_loss"``, to measure
  what those defaults would change (``benchmarks/results_cv_defaults.md``).
* ``ours_m0`` (opt-in): ours with ``ms=(0.0, 0.05)``, a second path at
  ``m = 0``.
* ``ours27``/``lrcv27`` (opt-in): the crossed grid, 3 margins (0, 0.05, 0.1)
  x 9 scales (7.5 to 120), against ``LogisticRegressionCV(Cs=27)``.

Fit time is reported as wall time and as process CPU time (``time.process_time``;
single-threaded, so CPU time is the work done, unaffected by other processes
on a shared machine).

Usage::

    python benchmarks/cv_vs_logregcv.py [--data ../shared/data] [--out rows.jsonl]
        [--datasets letter,usps] [--fold-seed 0]
        [--models ours,lrcv,ours_fulltol,ours_cv3,ours_ll,ours27,lrcv27]
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
from _common import (  # noqa: E402
    DEFAULT_DATA,
    expected_calibration_error,
    logits_from_decision,
)
from embeddings import NEWCOMER, newcomer_set  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegressionCV  # noqa: E402
from sklearn.metrics import accuracy_score, log_loss  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.extmath import softmax  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from sklmargin import MarginSoftmaxClassifierCV  # noqa: E402
from sklmargin.compare.datasets import load_npz  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
N_BINS = 15


def models(folds, folds3):
    return {
        "ours": MarginSoftmaxClassifierCV(cv=folds),
        "ours_cv3": MarginSoftmaxClassifierCV(cv=folds3),
        "ours_fulltol": MarginSoftmaxClassifierCV(cv=folds, path_tol=None),
        # The margin axis with m = 0 beside the default 0.05 (two paths).
        "ours_m0": MarginSoftmaxClassifierCV(cv=folds, ms=(0.0, 0.05)),
        # No margin at all (one path): AM-Softmax at m = 0 is NormFace.
        "ours_mzero": MarginSoftmaxClassifierCV(cv=folds, ms=(0.0,)),
        "ours_tol3": MarginSoftmaxClassifierCV(cv=folds, tol=1e-3),
        "ours_ll": MarginSoftmaxClassifierCV(cv=folds, scoring="neg_log_loss"),
        "ours_cv3_ll": MarginSoftmaxClassifierCV(cv=folds3, scoring="neg_log_loss"),
        "lrcv": LogisticRegressionCV(cv=folds),
        "ours27": MarginSoftmaxClassifierCV(
            ms=(0.0, 0.05, 0.1), ss=np.geomspace(7.5, 120.0, 9), cv=folds
        ),
        "lrcv27": LogisticRegressionCV(Cs=27, cv=folds),
    }


def probability_metrics(proba, y_test, classes):
    y_encoded = np.searchsorted(classes, y_test)
    return {
        "log_loss": float(log_loss(y_test, proba, labels=classes)),
        "ece": expected_calibration_error(proba, y_encoded, n_bins=N_BINS),
    }


def is_embedding(name):
    """Frozen-embedding sets (CLIP, the generated one): fitted unscaled."""
    return name.startswith("clip_") or name == NEWCOMER


def run(name, path, model_names, fold_seed=0):
    if name == NEWCOMER:
        X_train, y_train, X_test, y_test, _ = newcomer_set()
    else:
        data = load_npz(name, path)
        X_train, y_train = data.X_train, data.y_train
        X_test, y_test = data.X_test, data.y_test
    folds = list(
        StratifiedKFold(5, shuffle=True, random_state=fold_seed).split(X_train, y_train)
    )
    folds3 = list(
        StratifiedKFold(3, shuffle=True, random_state=fold_seed).split(X_train, y_train)
    )
    rows = []
    for model_name, model in models(folds, folds3).items():
        if model_name not in model_names:
            continue
        # Embeddings as embeddings.py fits them: unit rows, no scaler.
        steps = [model] if is_embedding(name) else [StandardScaler(), model]
        pipeline = make_pipeline(*steps)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            start, cpu_start = time.perf_counter(), time.process_time()
            pipeline.fit(X_train, y_train)
            fit_time = time.perf_counter() - start
            cpu_time = time.process_time() - cpu_start
        n_convergence = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
        classes = pipeline[-1].classes_
        proba = pipeline.predict_proba(X_test)
        row = {
            "dataset": name,
            "model": model_name,
            "accuracy": float(accuracy_score(y_test, pipeline.predict(X_test))),
            "fit_time": fit_time,
            "cpu_time": cpu_time,
            "convergence_warnings": n_convergence,
            **probability_metrics(proba, y_test, classes),
        }
        estimator = pipeline[-1]
        if model_name.startswith("ours"):
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
                "model": f"{model_name} T=1",
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
            f"fit {fit_time:7.2f}s cpu {cpu_time:7.2f}s conv.warn {n_convergence}"
            + (f" s={row['s']:.3g}" if row.get("s") is not None else ""),
            flush=True,
        )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data",
        default=str(DEFAULT_DATA),
        help="folder of NAME.npz files (default: ../shared/data if it exists, "
        "else the shipped benchmarks/data)",
    )
    parser.add_argument("--out", default=None, help="append JSON rows here")
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--models", default="ours,lrcv")
    parser.add_argument(
        "--fold-seed",
        type=int,
        default=0,
        help="seed of the shuffled stratified folds (the same for every model)",
    )
    args = parser.parse_args()
    paths = sorted(Path(args.data).glob("*.npz"))
    if args.datasets:
        wanted = set(args.datasets.split(","))
        paths = [p for p in paths if p.stem in wanted]
        if NEWCOMER in wanted:  # generated, not a file
            paths.append(Path(NEWCOMER))
    print(f"load average at start: {os.getloadavg()}")
    print(
        f"BLAS pinned to 1 thread; n_jobs=1; ECE with {N_BINS} equal-width bins; "
        f"fold seed {args.fold_seed}"
    )
    all_rows = []
    with threadpool_limits(1):
        for path in paths:
            rows = run(path.stem, path, set(args.models.split(",")), args.fold_seed)
            all_rows.extend(rows)
            if args.out:
                with open(args.out, "a") as handle:
                    for row in rows:
                        handle.write(json.dumps(row) + "\n")
    print(f"load average at end: {os.getloadavg()}")
    summarize([r for r in all_rows if r["dataset"] != NEWCOMER])
    for row in all_rows:
        if row["dataset"] == NEWCOMER:
            print(
                f"{NEWCOMER} {row['model']}: acc {row['accuracy']:.4f} "
                f"log loss {row['log_loss']:.4f} ece {row['ece']:.4f}"
                + (f" cpu {row['cpu_time']:.2f}s" if "cpu_time" in row else "")
            )


def summarize(rows):
    by = {(r["dataset"], r["model"]): r for r in rows}
    datasets = sorted({r["dataset"] for r in rows})
    pairs = [(d, m) for d in datasets for m in ("ours", "lrcv")]
    if not datasets or not all(pair in by for pair in pairs):
        return
    print(
        "\n| dataset | acc ours | acc LRCV | log loss ours (T=1) | log loss LRCV | "
        "ECE ours (T=1) | ECE LRCV | CPU s ours | CPU s LRCV | wall s ours | "
        "wall s LRCV |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for d in datasets:
        o, raw, lr = by[(d, "ours")], by[(d, "ours T=1")], by[(d, "lrcv")]
        print(
            f"| {d} | {o['accuracy']:.4f} | {lr['accuracy']:.4f} | "
            f"{o['log_loss']:.4f} ({raw['log_loss']:.4f}) | {lr['log_loss']:.4f} | "
            f"{o['ece']:.4f} ({raw['ece']:.4f}) | {lr['ece']:.4f} | "
            f"{o['cpu_time']:.1f} | {lr['cpu_time']:.1f} | "
            f"{o['fit_time']:.1f} | {lr['fit_time']:.1f} |"
        )
    for ours, peer in (("ours", "lrcv"), ("ours27", "lrcv27")):
        if not all((d, m) in by for d in datasets for m in (ours, peer)):
            continue
        acc_o = np.array([by[(d, ours)]["accuracy"] for d in datasets])
        acc_l = np.array([by[(d, peer)]["accuracy"] for d in datasets])
        print(
            f"{ours} vs {peer}: mean accuracy {acc_o.mean():.4f} vs "
            f"{acc_l.mean():.4f}; >= on {(acc_o >= acc_l).sum()}/{len(datasets)}"
        )
        for key in ("log_loss", "ece"):
            o = np.array([by[(d, ours)][key] for d in datasets])
            lr = np.array([by[(d, peer)][key] for d in datasets])
            print(f"  {key}: <= on {(o <= lr).sum()}/{len(datasets)}")
        for key in ("cpu_time", "fit_time"):
            t_o = sum(by[(d, ours)][key] for d in datasets)
            t_l = sum(by[(d, peer)][key] for d in datasets)
            ratios = [by[(d, ours)][key] / by[(d, peer)][key] for d in datasets]
            print(
                f"  {key}: total ratio {t_o / t_l:.2f}, per-dataset ratios "
                + ", ".join(f"{r:.2f}" for r in ratios)
            )


if __name__ == "__main__":
    main()
