"""The fixed cost of a fit and a predict: why ``compare`` shows no ratio under 10 ms.

Each model of ``compare`` is fitted as ``Pipeline(StandardScaler(), model)``;
on 30 rows (4 features, 3 classes) almost nothing of a fit grows with the
data, so its time is the floor every fit pays (validation, the pipeline,
Python calls, solver set-up). A time ratio between two fits near that floor
compares overheads, not algorithms. Reported: the median of 30 timed fits
(after one untimed) and of 30 predicts, one BLAS thread.

Usage::

    python benchmarks/fit_floor.py --output benchmarks/results_fit_floor.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _common import machine, now, pinned_blas, versions
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

from sklmargin import MarginSoftmaxClassifier

MODELS = {
    "LinearSVC": LinearSVC(),
    "LogisticRegression": LogisticRegression(),
    "SVC": SVC(),
    "MarginSoftmaxClassifier()": MarginSoftmaxClassifier(),
    'MarginSoftmaxClassifier(loss="softmax")': MarginSoftmaxClassifier(loss="softmax"),
}


def floors(repeats: int = 30):
    X, y = make_classification(
        30, 4, n_informative=3, n_redundant=0, n_classes=3,
        n_clusters_per_class=1, random_state=0,
    )  # fmt: skip
    rows = []
    for name, model in MODELS.items():
        pipeline = make_pipeline(StandardScaler(), model)
        clone(pipeline).fit(X, y).predict(X)  # untimed: imports, caches
        fits, predicts = [], []
        for _ in range(repeats):
            fitted = clone(pipeline)
            start = time.perf_counter()
            fitted.fit(X, y)
            fits.append(time.perf_counter() - start)
            start = time.perf_counter()
            fitted.predict(X)
            predicts.append(time.perf_counter() - start)
        rows.append((name, 1e3 * np.median(fits), 1e3 * np.median(predicts)))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, help="write the markdown here")
    args = parser.parse_args()
    with pinned_blas(1):
        rows = floors()
    lines = [
        "# Fixed cost of a fit and a predict (30 rows, 4 features, 3 classes)",
        "",
        "Made by `python benchmarks/fit_floor.py --output "
        f"benchmarks/results_fit_floor.md` on {now()}, {machine()}; {versions()}.",
        "One BLAS thread; medians of 30 calls of Pipeline(StandardScaler(), model).",
        "",
        "| model | fit ms | predict ms |",
        "|---|---|---|",
        *(f"| {name} | {fit:.2f} | {predict:.3f} |" for name, fit, predict in rows),
        "",
        f"Largest floor: {max(r[1] for r in rows):.1f} ms per fit, "
        f"{max(r[2] for r in rows):.2f} ms per predict; `compare` prints no time "
        "ratio where either time is under 10 ms.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
