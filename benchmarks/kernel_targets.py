"""Issue 17's targets: the kernel estimators against SVC, one run, CPU seconds.

For every data set (``NAME.npz`` in ``--data``), with a StandardScaler fitted on
the training split inside each pipeline, one BLAS thread, CPU seconds
(``time.process_time``) beside wall seconds:

* stage ``default``: ``KernelMarginSoftmaxClassifier(random_state=0)`` against
  ``SVC(C=10, gamma="scale")``: test accuracy, fit and predict times and the
  ratios ours / SVC measured in the same run;
* stage ``cv``: ``KernelMarginSoftmaxClassifierCV(random_state=0)`` against
  ``GridSearchCV(SVC, C in {1, 10, 100} x gamma in {1/4, 1/2, 1, 2, 4} x
  "scale", cv=3)`` (15 points, refit included), and the log loss and top-label
  ECE (15 bins) of the CV estimator's calibrated probabilities against
  ``SVC(C=10, gamma="scale", probability=True)`` (Platt scaling by libsvm's
  internal 5-fold CV) and ``CalibratedClassifierCV(SVC(C=10, gamma="scale"),
  method="sigmoid", cv=3)``.

``synthetic`` (issue 25) is ``make_classification(n_samples=30000,
n_features=50, n_informative=30, n_classes=10, random_state=0)``, first 20,000
rows to train, last 10,000 to test. ``--no-calibrated`` leaves the
``CalibratedClassifierCV`` peer out of the cv stage; ``--no-peers`` leaves
every SVC out of either stage (exploration: the peers are deterministic on
the same split), and ``--params JSON`` sets parameters of ours in either
stage (e.g. ``'{"m": 0.0, "centres": "kmeans"}'`` for the default,
``'{"loss": ["am-softmax", "softmax"]}'`` for the cv stage). Each cv row
also records, per (metric, loss, gamma) of the search, its best mean CV score
and the summed mean fit time of its path (``ours_configs``), and the chosen
point (``ours_chosen``).

SVC is fitted on a stratified subsample of ``--svc-max-samples`` training rows
where the split is larger (a9a: the tuned search does not finish in the budget
on all 32,561 rows); its time is then a lower bound, and the row says so.
Each result is appended to ``--out`` (JSON lines) as it is measured.

Usage::

    python benchmarks/kernel_targets.py --stage default
    python benchmarks/kernel_targets.py --stage cv
    python benchmarks/kernel_targets.py --summary FILE  # tables of the JSON lines

``--data DIR`` points at a folder of ``NAME.npz`` files; sets not there are
taken from the shipped ``benchmarks/data``, and usps (not shipped) is left out
with a note saying how to obtain it (``benchmarks/data/README.md``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np
from _common import (
    add_data_argument,
    available,
    expected_calibration_error,
    load_split,
    machine,
    now,
    pinned_blas,
    versions,
)
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

DATASETS = (
    "vowel",
    "segment",
    "dna",
    "satimage",
    "pendigits",
    "usps",
    "letter",
    "a9a",
    "synthetic",
)
GAMMA_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
SVC_CS = (1.0, 10.0, 100.0)


def timed(func):
    """``(result, cpu seconds, wall seconds)`` of ``func()``."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = func()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def synthetic_split():
    """Issue 25's tabular case: 10 classes, 30 informative and 20 noise columns."""
    X, y = make_classification(
        n_samples=30000,
        n_features=50,
        n_informative=30,
        n_classes=10,
        random_state=0,
    )
    return X[:20000], y[:20000], X[20000:], y[20000:]


def emit(row, path):
    """Print one JSON line and append it to ``path`` (if given)."""
    line = json.dumps(row)
    print(line, flush=True)
    if path:
        with open(path, "a") as out:
            out.write(line + "\n")


def split_of(data, name):
    return synthetic_split() if name == "synthetic" else load_split(data, name)


def svc_rows(X, y, max_samples):
    if len(y) <= max_samples:
        return X, y
    X, _, y, _ = train_test_split(
        X, y, train_size=max_samples, stratify=y, random_state=0
    )
    return X, y


def encoded(y_test, classes):
    return np.searchsorted(classes, y_test)


def default_stage(name, split, max_samples, peers=True, params=None):
    from sklmargin import KernelMarginSoftmaxClassifier

    X_train, y_train, X_test, y_test = split
    ours = make_pipeline(
        StandardScaler(),
        KernelMarginSoftmaxClassifier(random_state=0, **(params or {})),
    )
    _, fit_cpu, fit_wall = timed(lambda: ours.fit(X_train, y_train))
    pred, pred_cpu, _ = timed(lambda: ours.predict(X_test))
    row = {
        "stage": "default",
        "dataset": name,
        "params": params or {},
        "n_train": len(y_train),
        "ours_acc": 100 * float(np.mean(pred == y_test)),
        "ours_fit_cpu": fit_cpu,
        "ours_fit_wall": fit_wall,
        "ours_predict_cpu": pred_cpu,
        "ours_n_iter": int(ours[-1].n_iter_),
        "ours_n_components": int(ours[-1].n_components_),
        "ours_dtype": str(ours[-1].compute_dtype_),
    }
    if not peers:
        return row
    Xs, ys = svc_rows(X_train, y_train, max_samples)
    svc = make_pipeline(StandardScaler(), SVC(C=10, gamma="scale"))
    _, svc_cpu, svc_wall = timed(lambda: svc.fit(Xs, ys))
    svc_pred, svc_pred_cpu, _ = timed(lambda: svc.predict(X_test))
    return row | {
        "svc_rows": len(ys),
        "svc_acc": 100 * float(np.mean(svc_pred == y_test)),
        "svc_fit_cpu": svc_cpu,
        "svc_fit_wall": svc_wall,
        "svc_predict_cpu": svc_pred_cpu,
    }


def cv_stage(name, split, max_samples, calibrated=True, peers=True, params=None):
    from sklmargin import KernelMarginSoftmaxClassifierCV

    X_train, y_train, X_test, y_test = split
    classes = np.unique(y_train)
    y_enc = encoded(y_test, classes)
    ours = make_pipeline(
        StandardScaler(),
        KernelMarginSoftmaxClassifierCV(random_state=0, **(params or {})),
    )
    _, fit_cpu, fit_wall = timed(lambda: ours.fit(X_train, y_train))
    proba = ours.predict_proba(X_test)
    cv = ours[-1]
    row = {
        "stage": "cv",
        "dataset": name,
        "n_train": len(y_train),
        "ours_acc": 100 * float(np.mean(ours.predict(X_test) == y_test)),
        "ours_fit_cpu": fit_cpu,
        "ours_fit_wall": fit_wall,
        # scale = 1/d on standardised columns; with the learned metric gamma
        # is resolved on the transformed rows, so the factor is only
        # comparable between runs without it.
        "ours_gamma": float(cv.gamma_),
        "ours_gamma_factor": cv.gamma_ * X_train.shape[1],
        "ours_metric": cv.metric_,
        "ours_loss": cv.loss_ if hasattr(cv, "loss_") else cv.loss,
        "ours_C": getattr(cv, "C_", None),
        "ours_params": params or {},
        "ours_s": cv.s_,
        "ours_temperature": cv.temperature_,
        "ours_log_loss": log_loss(y_enc, proba, labels=np.arange(len(classes))),
        "ours_ece": expected_calibration_error(proba, y_enc),
    }
    results = cv.cv_results_
    configs = {}
    for j, point in enumerate(results["params"]):
        key = f"{point.get('metric')}|{point.get('loss', cv.loss)}|{point['gamma']}"
        best, spent = configs.get(key, (-1.0, 0.0))
        configs[key] = (
            max(best, float(results["mean_test_score"][j])),
            spent + float(results["mean_fit_time"][j]),
        )
    # Per (metric, loss, gamma): best mean CV score, mean fit wall s of its path.
    row["ours_configs"] = configs
    chosen = results["params"][cv.best_index_]
    row["ours_chosen"] = {k: str(v) for k, v in chosen.items()}
    if not peers:
        return row
    Xs, ys = svc_rows(X_train, y_train, max_samples)
    row["svc_rows"] = len(ys)
    scale = 1.0 / X_train.shape[1]  # gamma="scale" on standardised columns
    grid = GridSearchCV(
        make_pipeline(StandardScaler(), SVC()),
        {"svc__C": SVC_CS, "svc__gamma": [f * scale for f in GAMMA_FACTORS]},
        cv=3,
    )
    _, grid_cpu, grid_wall = timed(lambda: grid.fit(Xs, ys))
    row.update(
        tuned_svc_acc=100 * float(np.mean(grid.predict(X_test) == y_test)),
        tuned_svc_cpu=grid_cpu,
        tuned_svc_wall=grid_wall,
        tuned_svc_C=grid.best_params_["svc__C"],
        tuned_svc_gamma_factor=grid.best_params_["svc__gamma"] / scale,
    )
    platt = make_pipeline(
        StandardScaler(), SVC(C=10, gamma="scale", probability=True, random_state=0)
    )
    _, platt_cpu, _ = timed(lambda: platt.fit(Xs, ys))
    p = platt.predict_proba(X_test)
    row.update(
        platt_log_loss=log_loss(y_enc, p, labels=np.arange(len(classes))),
        platt_ece=expected_calibration_error(p, y_enc),
        platt_acc=100 * float(np.mean(platt.predict(X_test) == y_test)),
        platt_cpu=platt_cpu,
    )
    if not calibrated:
        return row
    calibrated = make_pipeline(
        StandardScaler(),
        CalibratedClassifierCV(SVC(C=10, gamma="scale"), method="sigmoid", cv=3),
    )
    _, cal_cpu, _ = timed(lambda: calibrated.fit(Xs, ys))
    p = calibrated.predict_proba(X_test)
    row.update(
        calibrated_log_loss=log_loss(y_enc, p, labels=np.arange(len(classes))),
        calibrated_ece=expected_calibration_error(p, y_enc),
        calibrated_cpu=cal_cpu,
    )
    return row


def summary(path):
    """Markdown tables of the cv stage and the issue's targets, from JSON lines.

    The plain default's accuracy comes from ``--stage default`` rows in the
    same file (the last row of each set wins); rows of either stage run with
    ``--params`` are explorations and left out.
    """
    cv, default = {}, {}
    with open(path) as lines:
        for line in lines:
            row = json.loads(line)
            if row.get("params") or row.get("ours_params"):
                continue  # an exploration (--params) is neither stage's result
            (cv if row["stage"] == "cv" else default)[row["dataset"]] = row
    print(
        "| data set | CV ours % | tuned SVC % | diff | plain default % | CV - default "
        "| fit CPU s ours / tuned SVC (ratio) | ours: gamma, s or C, metric "
        "| SVC's C, gamma/scale |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    diffs, vs_default, ours_cpu, svc_cpu = [], [], [], []
    for name, row in cv.items():
        diff = row["ours_acc"] - row["tuned_svc_acc"]
        diffs.append(diff)
        ours_cpu.append(row["ours_fit_cpu"])
        svc_cpu.append(row["tuned_svc_cpu"])
        plain = default.get(name, {}).get("ours_acc")
        if plain is not None:
            vs_default.append((row["ours_acc"] - plain, name))
        label = name
        if row["svc_rows"] < row["n_train"]:
            label += f" (SVC on {row['svc_rows']} rows)"
        print(
            f"| {label} | {row['ours_acc']:.2f} | {row['tuned_svc_acc']:.2f} "
            f"| {diff:+.2f} | "
            + (f"{plain:.2f} | {row['ours_acc'] - plain:+.2f}" if plain else "| ")
            + f" | {row['ours_fit_cpu']:.1f} / {row['tuned_svc_cpu']:.1f} "
            f"({row['ours_fit_cpu'] / row['tuned_svc_cpu']:.2f}) "
            f"| {row['ours_gamma']:.4g}, {_chosen(row)} "
            f"| {row['tuned_svc_C']:g}, {row['tuned_svc_gamma_factor']:g} |"
        )
    ratios = np.array(ours_cpu) / np.array(svc_cpu)
    print(
        f"\nMean difference to tuned SVC {np.mean(diffs):+.2f} points over "
        f"{len(diffs)} sets; CPU total {sum(ours_cpu):.1f} s against "
        f"{sum(svc_cpu):.1f} s ({sum(ours_cpu) / sum(svc_cpu):.2f}), geometric "
        f"mean of the per-set ratios {np.exp(np.mean(np.log(ratios))):.2f}."
    )
    if vs_default:
        worst = min(vs_default)
        mean = np.mean([d for d, _ in vs_default])
        print(
            f"Against the plain default: mean {mean:+.2f}, worst {worst[0]:+.2f} "
            f"({worst[1]})."
        )
    print(
        "\n| data set | CV ours (T) log loss / ECE "
        "| SVC(C=10, scale, probability=True) log loss / ECE |"
    )
    print("|---|---|---|")
    wins_ll = wins_ece = 0
    for name, row in cv.items():
        wins_ll += row["ours_log_loss"] < row["platt_log_loss"]
        wins_ece += row["ours_ece"] < row["platt_ece"]
        print(
            f"| {name} | {row['ours_log_loss']:.3f} / {row['ours_ece']:.3f} "
            f"(T={row['ours_temperature']:.2f}) "
            f"| {row['platt_log_loss']:.3f} / {row['platt_ece']:.3f} |"
        )
    print(
        f"\nOurs has the lower log loss on {wins_ll} of {len(cv)} sets and the "
        f"lower ECE on {wins_ece} of {len(cv)}."
    )


def _chosen(row):
    """The chosen head and path point of a cv row: "s=100" or "softmax C=10"."""
    if row.get("ours_s") is not None:
        return f"s={row['ours_s']:g}" + (
            f", {row['ours_metric']}" if "ours_loss" in row else ""
        )
    return f"{row.get('ours_loss')} C={row.get('ours_C'):g}, {row['ours_metric']}"


def requested_sets(datasets, data):
    """The sets a run covers: ``--datasets`` as given, else those at hand.

    The default is every shared set found (a note for each missing one) and
    the synthetic 20,000 x 50 set, which needs no file.
    """
    if datasets:
        return datasets.split(",")
    return available(data, DATASETS[:-1]) + ["synthetic"]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--summary":
        summary(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--stage", choices=("default", "cv"), required=True)
    parser.add_argument(
        "--datasets",
        default=None,
        help=f"comma-separated (default: {','.join(DATASETS)}, those available)",
    )
    parser.add_argument("--svc-max-samples", type=int, default=40000)
    parser.add_argument(
        "--no-calibrated",
        action="store_true",
        help="cv stage: skip the CalibratedClassifierCV(SVC) peer",
    )
    parser.add_argument(
        "--no-peers",
        action="store_true",
        help="fit ours only (exploration: the SVC peers are deterministic on the "
        "same split)",
    )
    parser.add_argument(
        "--params",
        default=None,
        help="JSON of parameters of ours (KernelMarginSoftmaxClassifier in the "
        "default stage, ...CV in the cv stage; exploration), e.g. "
        '\'{"loss": "am-softmax"}\'',
    )
    parser.add_argument("--out", default=None, help="append JSON lines here")
    args = parser.parse_args()
    print(f"# {now()} {machine()} {versions()}", flush=True)
    print("# times: CPU seconds (time.process_time), wall in the JSON", flush=True)
    stage = default_stage if args.stage == "default" else cv_stage
    warnings.filterwarnings("ignore", category=UserWarning)
    with pinned_blas(1):
        for name in requested_sets(args.datasets, args.data):
            split = split_of(args.data, name)
            if args.stage == "cv":
                row = stage(
                    name,
                    split,
                    args.svc_max_samples,
                    not args.no_calibrated,
                    not args.no_peers,
                    json.loads(args.params) if args.params else None,
                )
            else:
                row = stage(
                    name,
                    split,
                    args.svc_max_samples,
                    not args.no_peers,
                    json.loads(args.params) if args.params else None,
                )
            emit(row, args.out)


if __name__ == "__main__":
    main()
