"""Which warnings the CV estimators raise at their defaults on the benchmark sets.

For every data set (the shared ``NAME.npz`` training splits in ``--data`` and
``synthetic``, the 20,000 training rows of ``make_classification(n_samples=30000,
n_features=50, n_informative=30, n_classes=10, random_state=0)`` as in
``kernel_targets.py``), fits ``make_pipeline(StandardScaler(), est)`` for
``est`` = ``MarginSoftmaxClassifierCV()`` and
``KernelMarginSoftmaxClassifierCV(random_state=0)`` (their defaults; the seed
only makes the run repeatable) and records every ``GridEdgeWarning`` and
``FeatureScaleWarning`` raised, with where it was raised, the chosen point and
the fold scores of ``cv_results_`` (so that an edge rule can be studied on them
without refitting). One BLAS thread; CPU seconds beside wall.

``--replay FILE`` applies this tree's noise test
(:func:`sklmargin._utils.grid_edges.beats_neighbour`) to the edges a recorded
run warned about, on the fold scores it recorded: the counts a run of this
tree gives, without refitting, as long as the models are the same (the rule
reads nothing else).

Usage::

    python benchmarks/warnings_defaults.py --out warnings.jsonl
    python benchmarks/warnings_defaults.py --summary warnings.jsonl
    python benchmarks/warnings_defaults.py --replay warnings.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
from _common import add_data_argument, jsonable, machine, now, pinned_blas, versions
from kernel_targets import DATASETS, split_of
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklmargin import (
    FeatureScaleWarning,
    GridEdgeWarning,
    KernelMarginSoftmaxClassifierCV,
    MarginSoftmaxClassifierCV,
)

ESTIMATORS = {
    "linear": lambda: MarginSoftmaxClassifierCV(),
    "kernel": lambda: KernelMarginSoftmaxClassifierCV(random_state=0),
}
CHOSEN = ("s_", "C_", "m_", "gamma_", "loss_", "metric_")


def measure(name, X, y, estimator):
    pipe = make_pipeline(StandardScaler(), ESTIMATORS[estimator]())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cpu, wall = time.process_time(), time.perf_counter()
        pipe.fit(X, y)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    clf = pipe[-1]
    results = clf.cv_results_
    folds = sorted(k for k in results if k.startswith("split"))
    return {
        "dataset": name,
        "estimator": estimator,
        "n_rows": int(X.shape[0]),
        "grid_edge": [
            str(w.message) for w in caught if issubclass(w.category, GridEdgeWarning)
        ],
        "feature_scale": [
            f"{w.filename}:{w.lineno}: {w.message}"
            for w in caught
            if issubclass(w.category, FeatureScaleWarning)
        ],
        "chosen": {k: str(getattr(clf, k)) for k in CHOSEN if hasattr(clf, k)},
        "best_index": clf.best_index_,
        "params": [{k: str(v) for k, v in p.items()} for p in results["params"]],
        "split_scores": [np.asarray(results[k]).tolist() for k in folds],
        "fit_cpu_s": round(cpu, 2),
        "fit_wall_s": round(wall, 2),
    }


def summary(path):
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    lines = [
        "| set | estimator | GridEdgeWarning | FeatureScaleWarning | chosen | "
        "fit CPU s |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        edges = "; ".join(m.split(":")[0].split(" chose ")[1] for m in r["grid_edge"])
        chosen = ", ".join(f"{k}={v}" for k, v in r["chosen"].items())
        lines.append(
            f"| {r['dataset']} | {r['estimator']} | {len(r['grid_edge'])}"
            f"{' (' + edges + ')' if edges else ''} | {len(r['feature_scale'])} | "
            f"{chosen} | {r['fit_cpu_s']} |"
        )
    lines.append("")
    for estimator in dict.fromkeys(r["estimator"] for r in rows):
        own = [r for r in rows if r["estimator"] == estimator]
        warned = sum(bool(r["grid_edge"]) for r in own)
        scale = sum(bool(r["feature_scale"]) for r in own)
        lines.append(
            f"{estimator}: GridEdgeWarning on {warned} of {len(own)} sets, "
            f"FeatureScaleWarning on {scale} of {len(own)}"
        )
    return "\n".join(lines)


def _factor(value):
    return 1.0 if value == "scale" else float(value.replace("*scale", ""))


def replay(path):
    """The edges of a recorded run that this tree's noise test keeps."""
    from sklmargin._utils.grid_edges import beats_neighbour

    lines = [
        "| set | estimator | recorded | kept by the noise test |",
        "|---|---|---|---|",
    ]
    kept_sets = {}
    for line in open(path):
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        params, scores = r["params"], np.array(r["split_scores"])
        best = params[r["best_index"]]
        kept = []
        for message in r["grid_edge"]:
            key = message.split(" chose ")[1].split("=")[0]

            def same_elsewhere(p, key=key, best=best):
                return all(p[k] == best[k] for k in best if k != key)

            order = sorted({p[key] for p in params if same_elsewhere(p)}, key=_factor)
            neighbour = order[1] if best[key] == order[0] else order[-2]
            column = next(
                j
                for j, p in enumerate(params)
                if same_elsewhere(p) and p[key] == neighbour
            )
            if beats_neighbour(scores[:, r["best_index"]], scores[:, column]):
                kept.append(f"{key}={best[key]}")
        kept_sets.setdefault(r["estimator"], []).append(bool(kept))
        recorded = len(r["grid_edge"])
        lines.append(
            f"| {r['dataset']} | {r['estimator']} | {recorded} | "
            f"{len(kept)}{' (' + ', '.join(kept) + ')' if kept else ''} |"
        )
    lines.append("")
    for estimator, flags in kept_sets.items():
        lines.append(
            f"{estimator}: GridEdgeWarning on {sum(flags)} of {len(flags)} sets"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--estimators", default=",".join(ESTIMATORS))
    parser.add_argument("--out", default=None, help="append JSON lines here")
    parser.add_argument("--summary", default=None, help="print the table of FILE")
    parser.add_argument(
        "--replay", default=None, help="this tree's edge rule on FILE's fold scores"
    )
    args = parser.parse_args()
    if args.replay:
        print(replay(args.replay))
        return
    if args.summary:
        print(summary(args.summary))
        return
    print(f"# {now()} {machine()} {versions()}", flush=True)
    with pinned_blas(1):
        for name in args.datasets.split(","):
            X, y, _, _ = split_of(args.data, name)
            for estimator in args.estimators.split(","):
                row = measure(name, X, y, estimator)
                line = json.dumps(jsonable(row))
                print(
                    f"{name} {estimator}: {len(row['grid_edge'])} GridEdgeWarning, "
                    f"{len(row['feature_scale'])} FeatureScaleWarning, "
                    f"{row['fit_cpu_s']} CPU s",
                    flush=True,
                )
                if args.out:
                    with open(args.out, "a") as handle:
                        handle.write(line + "\n")


if __name__ == "__main__":
    main()
