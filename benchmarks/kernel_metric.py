"""Issue 25: the kernel estimator's learned input metric against SVC, one run.

For every data set (the shared ``NAME.npz`` splits in ``--data`` and
``synthetic``: ``make_classification(n_samples=30000, n_features=50,
n_informative=30, n_classes=10, random_state=0)``, first 20,000 rows to train,
last 10,000 to test), inside ``Pipeline(StandardScaler(), model)``, one BLAS
thread, CPU seconds (``time.process_time``) beside wall seconds, the test split
touched once per model: ``SVC(C=10, gamma="scale")`` and every variant of
``KernelMarginSoftmaxClassifier(random_state=0, **params)`` (or, for the
``cv_*`` variants, ``KernelMarginSoftmaxClassifierCV``) named in
``--variants`` (see ``VARIANTS``), all measured in the same run. Each result is
appended to ``--out`` (JSON lines); ``--summary FILE`` prints the Markdown
tables of a JSON lines file instead (per variant: accuracy, fit and predict CPU
against SVC, the mean difference, the worst set, the geometric mean of the fit
CPU ratios over the sets with at least 5,000 training rows, and the predict
CPU ratio there).

Usage::

    python benchmarks/kernel_metric.py --data ../shared/data --out metric.jsonl
    python benchmarks/kernel_metric.py --summary metric.jsonl
"""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np
from _common import add_data_argument, machine, now, pinned_blas, versions
from kernel_targets import DATASETS, emit, split_of, timed
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

#: Variant name -> KernelMarginSoftmaxClassifier parameters (random_state=0 added).
VARIANTS = {
    # The estimator's defaults, whatever they are at the commit measured.
    "default": {},
    # The round-4 default: 1000 centres, gamma="scale" after the metric.
    "round4": {"gamma": "scale", "n_components": 1000},
    # Its parts: gamma 2 x "scale" after the metric alone, the width alone.
    "auto_gamma": {"n_components": 1000},
    "auto_width": {"gamma": "scale"},
    "none": {"metric": None},
    "diag1": {"metric": "diagonal", "metric_steps": 1},
    "diag2": {"metric": "diagonal", "metric_steps": 2},
    "diag3": {"metric": "diagonal", "metric_steps": 3},
    "full1": {"metric": "full", "metric_steps": 1},
    "diag2_softmax": {
        "metric": "diagonal",
        "metric_steps": 2,
        "loss": "softmax",
        "C": 10.0,
    },
    "diag2_m0": {"metric": "diagonal", "metric_steps": 2, "m": 0.0},
    "diag2_m02": {"metric": "diagonal", "metric_steps": 2, "m": 0.2},
    # The size after the metric: twice the default number of Nyström centres.
    "diag2_n2000": {"metric": "diagonal", "metric_steps": 2, "n_components": 2000},
    "none_m0": {"metric": None, "m": 0.0},
    "none_m02": {"metric": None, "m": 0.2},
    # KernelMarginSoftmaxClassifierCV at its defaults, without and with the metric.
    "cv_none": {"cv": True, "metric": None},
    "cv_diag2": {"cv": True, "metric": "diagonal", "metric_steps": 2},
}
#: Sets whose fit CPU ratios enter the geometric mean (issue 25's rule).
LARGE = 5000


def measure(name, split, variants):
    from sklmargin import KernelMarginSoftmaxClassifier, KernelMarginSoftmaxClassifierCV

    X_train, y_train, X_test, y_test = split
    rows = []
    svc = make_pipeline(StandardScaler(), SVC(C=10, gamma="scale"))
    _, fit_cpu, fit_wall = timed(lambda: svc.fit(X_train, y_train))
    pred, pred_cpu, _ = timed(lambda: svc.predict(X_test))
    rows.append(
        {
            "dataset": name,
            "model": "svc",
            "n_train": len(y_train),
            "acc": 100 * float(np.mean(pred == y_test)),
            "fit_cpu": fit_cpu,
            "fit_wall": fit_wall,
            "predict_cpu": pred_cpu,
        }
    )
    for variant in variants:
        params = dict(VARIANTS[variant])
        model = (
            KernelMarginSoftmaxClassifierCV
            if params.pop("cv", False)
            else KernelMarginSoftmaxClassifier
        )
        ours = make_pipeline(StandardScaler(), model(random_state=0, **params))
        _, fit_cpu, fit_wall = timed(lambda m=ours: m.fit(X_train, y_train))
        pred, pred_cpu, _ = timed(lambda m=ours: m.predict(X_test))
        rows.append(
            {
                "dataset": name,
                "model": variant,
                "params": {k: v for k, v in params.items()},
                "n_train": len(y_train),
                "acc": 100 * float(np.mean(pred == y_test)),
                "fit_cpu": fit_cpu,
                "fit_wall": fit_wall,
                "predict_cpu": pred_cpu,
                "n_iter": int(np.max(ours[-1].n_iter_)),
            }
        )
    return rows


def summary(path):
    """Markdown tables, one per variant, from the JSON lines at ``path``."""
    rows = [json.loads(line) for line in open(path) if line.strip()]
    svc = {r["dataset"]: r for r in rows if r["model"] == "svc"}
    # The fit without a metric, to show what the metric step costs.
    plain = {r["dataset"]: r for r in rows if r["model"] == "none"}
    models = list(dict.fromkeys(r["model"] for r in rows if r["model"] != "svc"))
    out = []
    for model in models:
        mine = [r for r in rows if r["model"] == model and r["dataset"] in svc]
        out.append(f"#### `{model}`: {json.dumps(mine[0]['params'])}\n")
        out.append(
            "| data set | n_train | ours % | SVC % | diff | fit CPU s ours / SVC "
            "(ratio) | predict CPU s ours / SVC (ratio) | fit CPU s - metric=None's |"
        )
        out.append("|---|---|---|---|---|---|---|---|")
        diffs, fit_ratios, pred_ratios = [], [], []
        for r in mine:
            s = svc[r["dataset"]]
            diff = r["acc"] - s["acc"]
            fit_ratio = r["fit_cpu"] / s["fit_cpu"]
            pred_ratio = r["predict_cpu"] / s["predict_cpu"]
            diffs.append((diff, r["dataset"]))
            if r["n_train"] >= LARGE:
                fit_ratios.append(fit_ratio)
                pred_ratios.append(pred_ratio)
            out.append(
                f"| {r['dataset']} | {r['n_train']} | {r['acc']:.2f} | "
                f"{s['acc']:.2f} | {diff:+.2f} | {r['fit_cpu']:.2f} / "
                f"{s['fit_cpu']:.2f} ({fit_ratio:.2f}) | {r['predict_cpu']:.3f} / "
                f"{s['predict_cpu']:.3f} ({pred_ratio:.2f}) | "
                + (
                    f"{r['fit_cpu'] - plain[r['dataset']]['fit_cpu']:+.2f} |"
                    if r["dataset"] in plain
                    else "|"
                )
            )
        worst = min(diffs)
        geo = float(np.exp(np.mean(np.log(fit_ratios)))) if fit_ratios else np.nan
        geo_pred = (
            float(np.exp(np.mean(np.log(pred_ratios)))) if pred_ratios else np.nan
        )
        out.append(
            f"\nMean difference {np.mean([d for d, _ in diffs]):+.2f} points over "
            f"{len(diffs)} sets; worst {worst[0]:+.2f} ({worst[1]}). Over the sets "
            f"with >= {LARGE:,} training rows: geometric mean of the fit CPU ratios "
            f"{geo:.2f}, of the predict CPU ratios {geo_pred:.2f} (largest "
            f"{max(pred_ratios, default=np.nan):.2f}).\n"
        )
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--variants", default="none,diag1,diag2,full1")
    parser.add_argument("--out", default=None, help="append JSON lines here")
    parser.add_argument("--summary", default=None, help="print the tables of FILE")
    args = parser.parse_args()
    if args.summary:
        print(summary(args.summary))
        return
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; known: {list(VARIANTS)}")
    print(f"# {now()} {machine()} {versions()}", flush=True)
    print("# times: CPU seconds (time.process_time), wall in the JSON", flush=True)
    warnings.filterwarnings("ignore", category=UserWarning)
    with pinned_blas(1):
        for name in args.datasets.split(","):
            for row in measure(name, split_of(args.data, name), variants):
                emit(row, args.out)


if __name__ == "__main__":
    main()
