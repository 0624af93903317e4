"""Issue 25: candidate rules for the kernel estimator's width and gamma defaults.

Each candidate is ``KernelMarginSoftmaxClassifier(random_state=0,
n_components=M)`` after the default learned metric, with the final map's
``gamma`` a multiple ``f`` of "scale" of the transformed rows (``f = 1`` is
``gamma="scale"``, ``f = 2`` is ``gamma="auto"``) and ``M`` a function of the
number of training rows ``n``; every model in ``Pipeline(StandardScaler(),
model)``, one BLAS thread, test accuracy against ``SVC(C=10, gamma="scale")``.

``--sets chosen`` runs the nine sets of ``benchmarks/kernel_metric.py`` (the
shared splits in ``--data`` and ``synthetic``), whose SVC accuracies are read
from a JSON lines file of that script (``--svc``): these sets chose the
defaults. ``--sets held-out`` runs sets that chose nothing -- the two CLIP
embedding sets in ``--data`` (when present) and three other
``make_classification`` problems -- with SVC fitted here. CPU seconds are
printed but measured without the benchmark lock: for orientation only.

Usage::

    python benchmarks/studies/kernel_default_candidates.py --data ../shared/data \\
        --sets chosen --svc final.jsonl
    python benchmarks/studies/kernel_default_candidates.py --data ../shared/data \\
        --sets held-out
    python benchmarks/studies/kernel_default_candidates.py --summary FILE

(each run prints JSON lines: redirect them to FILE).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import add_data_argument, pinned_blas, study_cells  # noqa: E402
from kernel_targets import DATASETS, split_of  # noqa: E402

from sklmargin import KernelMarginSoftmaxClassifier  # noqa: E402
from sklmargin.features._kernel_features import KernelFeatures  # noqa: E402


def sqrt_law(per_root, low, high):
    """``min(high, max(low, round(per_root * sqrt(n))))``."""
    return lambda n: min(high, max(low, round(per_root * math.sqrt(n))))


#: name -> (gamma multiple of "scale" after the metric, width as a function of n).
CANDIDATES = {
    "g1_M1000": (1.0, lambda n: 1000),
    "g1.5_M1000": (1.5, lambda n: 1000),
    "g2_M1000": (2.0, lambda n: 1000),
    "g3_M1000": (3.0, lambda n: 1000),
    "g4_M1000": (4.0, lambda n: 1000),
    "g2_M700": (2.0, lambda n: 700),
    "g2_M1500": (2.0, lambda n: 1500),
    "g1_M2000": (1.0, lambda n: 2000),
    "g2_M2000": (2.0, lambda n: 2000),
    "g2_9sqrt_1000_2000": (2.0, sqrt_law(9, 1000, 2000)),
    "g2_11sqrt_1000_2000": (2.0, sqrt_law(11, 1000, 2000)),
    "g1_11sqrt_1000_1500": (1.0, sqrt_law(11, 1000, 1500)),
    "g1.5_11sqrt_1000_1500": (1.5, sqrt_law(11, 1000, 1500)),
    "g2_11sqrt_1000_1500": (2.0, sqrt_law(11, 1000, 1500)),
}


class _Multiple(KernelMarginSoftmaxClassifier):
    """The estimator with ``gamma="auto"``'s multiple of "scale" set to ``factor``."""

    factor = 2.0

    def _kernel_features(self):
        features = super()._kernel_features()
        features.__class__ = _MultipleFeatures
        features.factor = self.factor
        return features


class _MultipleFeatures(KernelFeatures):
    """The estimator's feature pipeline with another multiple for "auto"."""

    def map_gamma(self, scale):
        if self.gamma == "auto" and self.metric:
            return self.factor * scale()
        return super().map_gamma(scale)


def _synthetic(seed, n_train=20000, n_test=10000, **params):
    settings = {"n_features": 50, "n_informative": 30, "n_classes": 10}
    settings.update(params)
    X, y = make_classification(
        n_samples=n_train + n_test, random_state=seed, **settings
    )
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


HELD_OUT = {
    "clip_vitb32_caltech101": None,
    "clip_vitb32_ucf101_midframes": None,
    "synthetic_seed1": lambda: _synthetic(1),
    "synthetic_seed2_k5": lambda: _synthetic(2, n_classes=5, n_informative=20),
    "synthetic_seed3_12k": lambda: _synthetic(
        3, 12000, 8000, n_features=40, n_informative=25, n_classes=8
    ),
}


def held_out_split(data, name):
    """The split of a ``HELD_OUT`` set (a CLIP set from ``data``), or of any
    set ``kernel_targets.split_of`` knows."""
    make = HELD_OUT.get(name)
    return split_of(data, name) if make is None else make()


def _svc_accuracy(split):
    X_train, y_train, X_test, y_test = split
    svc = make_pipeline(StandardScaler(), SVC(C=10, gamma="scale"))
    return 100 * float(np.mean(svc.fit(X_train, y_train).predict(X_test) == y_test))


def run(name, split, svc_acc, candidates):
    X_train, y_train, X_test, y_test = split
    n = len(y_train)
    for candidate in candidates:
        factor, width = CANDIDATES[candidate]
        model = _Multiple(n_components=int(width(n)), random_state=0)
        model.factor = factor
        pipe = make_pipeline(StandardScaler(), model)
        start = time.process_time()
        pipe.fit(X_train, y_train)
        fit_cpu = time.process_time() - start
        acc = 100 * float(np.mean(pipe.predict(X_test) == y_test))
        row = {"dataset": name, "candidate": candidate, "n_train": n}
        row.update(M=int(width(n)), acc=acc, svc=svc_acc, diff=acc - svc_acc)
        row["fit_cpu"] = fit_cpu
        print(json.dumps(row), flush=True)


def summary(path):
    """A Markdown table: candidates x sets of the difference to SVC, the mean."""
    sets, names, cell = study_cells(path, "candidate")
    out = [
        "| candidate | " + " | ".join(sets) + " | mean | fit CPU s, sum |",
        "|---|" + "---|" * (len(sets) + 2),
    ]
    for name in names:
        mine = [cell[name, d] for d in sets if (name, d) in cell]
        diffs = " | ".join(
            f"{cell[name, d]['diff']:+.2f}" if (name, d) in cell else "" for d in sets
        )
        mean = np.mean([r["diff"] for r in mine])
        cpu = sum(r["fit_cpu"] for r in mine)
        out.append(f"| {name} | {diffs} | {mean:+.2f} | {cpu:.1f} |")
    out.append("")
    out.append(
        "SVC % (C=10, scale): "
        + ", ".join(
            # any candidate's line of a set carries the set's SVC accuracy
            f"{d} {next(r for (_, e), r in cell.items() if e == d)['svc']:.2f}"
            for d in sets
        )
    )
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--sets", choices=["chosen", "held-out"], default="chosen")
    parser.add_argument("--svc", help="kernel_metric.py JSON lines (--sets chosen)")
    parser.add_argument("--candidates", default=",".join(CANDIDATES))
    parser.add_argument("--summary", help="print the table of a JSON lines FILE")
    args = parser.parse_args()
    if args.summary:
        print(summary(args.summary))
        return
    candidates = args.candidates.split(",")
    warnings.filterwarnings("ignore")
    with pinned_blas(1):
        if args.sets == "chosen":
            if not args.svc:
                parser.error("--sets chosen needs --svc FILE")
            rows = [json.loads(line) for line in open(args.svc) if line.strip()]
            svc = {r["dataset"]: r["acc"] for r in rows if r["model"] == "svc"}
            for name in DATASETS:
                run(name, split_of(args.data, name), svc[name], candidates)
            return
        for name, make in HELD_OUT.items():
            if make is None and not (Path(args.data) / f"{name}.npz").exists():
                print(f"# {name}: not in {args.data}, left out", flush=True)
                continue
            split = held_out_split(args.data, name)
            run(name, split, _svc_accuracy(split), candidates)


if __name__ == "__main__":
    main()
