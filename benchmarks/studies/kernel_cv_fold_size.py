"""Issue 25: does the kernel CV search choose too small an ``s`` for all the rows?

``KernelMarginSoftmaxClassifierCV()`` chooses ``s`` on folds that train on two
thirds of the rows and refits at that ``s`` on all of them; on segment it trails
the plain ``KernelMarginSoftmaxClassifier()`` on every seed
(``benchmarks/results_kernel_noise_margin.md``). If the best ``s`` grows with
the training rows, a refit at ``s * (n / n_fold) ** a`` should close the gap.
For each data set and seed this script fits the plain default and the CV
search, then refits the search's chosen point (its metric learned on all rows
as the search learns it, its ``gamma_``) at ``s`` times 1 (the search's own
model: the script checks it reproduces the search's test accuracy),
``1.5 ** 0.5`` (``a = 1/2`` for ``cv=3``) and ``1.5`` (``a = 1``). Every model
after ``StandardScaler`` (fitted on the training rows), ``random_state`` the
seed, one BLAS thread; test accuracy in points. Data: the sets of
``benchmarks/kernel_metric.py`` (shared splits and ``synthetic``) and the sets
that chose no default, ``HELD_OUT`` of ``kernel_default_candidates.py``.

Usage::

    python benchmarks/studies/kernel_cv_fold_size.py --data ../shared/data \\
        --runs vowel,segment,segment:1,clip_vitb32_caltech101 > fold_size.jsonl
    python benchmarks/studies/kernel_cv_fold_size.py --summary fold_size.jsonl

(``NAME:SEED``; the seed is 0 without one.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_data_argument, pinned_blas, summarised_or_started  # noqa: E402
from kernel_default_candidates import held_out_split  # noqa: E402

from sklmargin import (  # noqa: E402
    KernelMarginSoftmaxClassifier,
    KernelMarginSoftmaxClassifierCV,
)
from sklmargin.features._input_transform import apply_input_transform  # noqa: E402

#: The factors of the chosen s refitted (1: the search's own model).
FACTORS = (1.0, 1.5**0.5, 1.5)


def accuracy(model, X, y):
    return 100 * float(np.mean(model.predict(X) == y))


def run(data, name, seed):
    X_train, y_train, X_test, y_test = held_out_split(data, name)
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    plain = KernelMarginSoftmaxClassifier(random_state=seed).fit(X_train, y_train)
    start = time.process_time()
    search = KernelMarginSoftmaxClassifierCV(random_state=seed).fit(X_train, y_train)
    cpu = time.process_time() - start
    row = {"dataset": name, "seed": seed, "n_train": len(y_train)}
    row["plain"] = accuracy(plain, X_test, y_test)
    row["cv"] = accuracy(search, X_test, y_test)
    if search.metric_ is not None:
        # The search learns the chosen metric at the estimator's defaults.
        learner = KernelMarginSoftmaxClassifier(
            metric=search.metric_, random_state=seed
        ).fit(X_train, y_train)
        X_train = apply_input_transform(X_train, learner.input_transform_)
        X_test = apply_input_transform(X_test, learner.input_transform_)
    refits = []
    for factor in FACTORS:
        model = KernelMarginSoftmaxClassifier(
            metric=None, gamma=search.gamma_, s=search.s_ * factor, random_state=seed
        ).fit(X_train, y_train)
        refits.append(accuracy(model, X_test, y_test))
    row.update(refits=refits, s=search.s_, metric=search.metric_)
    row.update(gamma=search.gamma_, cv_cpu=cpu)
    print(json.dumps(row), flush=True)


def summary(path):
    """One line per run, then the mean change of each factor against factor 1."""
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    names = [f"x{f:.3g}" for f in FACTORS]
    out = [
        "| data set | seed | plain % | CV % | CV - plain | chosen | "
        + " | ".join(f"refit s {n} - CV" for n in names[1:])
        + " |",
        "|---|---|---|---|---|---|" + "---|" * (len(names) - 1),
    ]
    for r in rows:
        # The refit at factor 1 must be the search's own model.
        same = abs(r["refits"][0] - r["cv"]) < 1e-9
        chosen = f"{r['metric']}, gamma {r['gamma']:.4g}, s={r['s']:g}"
        out.append(
            f"| {r['dataset']} | {r['seed']} | {r['plain']:.2f} | {r['cv']:.2f}"
            f"{'' if same else ' (refit x1 differs!)'} | {r['cv'] - r['plain']:+.2f} | "
            f"{chosen} | "
            + " | ".join(f"{a - r['refits'][0]:+.2f}" for a in r["refits"][1:])
            + " |"
        )
    print("\n".join(out))
    for i, n in enumerate(names[1:], start=1):
        diff = [r["refits"][i] - r["refits"][0] for r in rows]
        worse = sum(d < 0 for d in diff)
        better = sum(d > 0 for d in diff)
        print(
            f"refit at s {n}: mean {np.mean(diff):+.3f} points over {len(diff)} "
            f"runs (min {min(diff):+.2f}, max {max(diff):+.2f}); better on "
            f"{better}, worse on {worse}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_argument(parser)
    parser.add_argument("--runs", default="segment")
    parser.add_argument("--summary", metavar="FILE")
    args = parser.parse_args()
    if summarised_or_started(args, summary):
        return
    with pinned_blas(1, announce=False), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for spec in args.runs.split(","):
            name, _, seed = spec.partition(":")
            run(args.data, name, int(seed or 0))


if __name__ == "__main__":
    main()
