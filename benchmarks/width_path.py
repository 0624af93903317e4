"""The data-chosen width of ``KernelMarginSoftmaxClassifier`` against the rule.

For every data set -- the shared ``NAME.npz`` splits named in ``--datasets``
(``synthetic``: ``make_classification(n_samples=30000, n_features=50,
n_informative=30, n_classes=10, random_state=0)``, first 20,000 rows to train,
last 10,000 to test) and, for every ``N`` in ``--sizes``, ``gen_N``:
``make_classification(n_samples=N + 10000, n_features=50, n_informative=30,
n_classes=10, random_state=0)``, first N rows to train, last 10,000 to test,
float32 (``_common.generated_split``: standardised in float64, then cast) --
the rows are standardised (``StandardScaler`` fitted on the training split,
outside the timings) and each model is fitted once, one BLAS thread, CPU
seconds (``time.process_time``) beside wall seconds:

* ``path``: ``KernelMarginSoftmaxClassifier(n_components="path",
  random_state=0)`` (the width the data choose);
* ``rule``: the same with ``n_components = min(1500, max(1000, round(11 sqrt(n))))``,
  the previous default's width;
* ``svc``: ``SVC(C=10, gamma="scale")`` where ``n_train <= --svc-max``;
* ``hgb``: ``HistGradientBoostingClassifier(random_state=0)``.

Prints one Markdown row per model (accuracy, fit CPU, predict CPU, chosen
width, the width path) and appends JSON lines to ``--out``.

Run under the shared lock, e.g.::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 flock /tmp/sklmargin-bench.lock \\
        python benchmarks/width_path.py --datasets vowel letter synthetic --sizes 100000
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
from _common import generated_split
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from sklmargin import KernelMarginSoftmaxClassifier

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SETS = ("vowel", "segment", "dna", "satimage", "pendigits", "usps", "letter", "a9a")


def load(name, data):
    """``(X_train, y_train, X_test, y_test)``, standardised."""
    if name == "synthetic":
        return generated_split(20000, np.float64)
    if name.startswith("gen_"):
        return generated_split(int(name[4:]))
    with np.load(Path(data) / f"{name}.npz", allow_pickle=False) as f:
        parts = tuple(f[k] for k in ("X_train", "y_train", "X_test", "y_test"))
    X_train, y_train, X_test, y_test = parts
    scaler = StandardScaler().fit(X_train)
    dtype = X_train.dtype
    return (
        scaler.transform(X_train).astype(dtype), y_train,
        scaler.transform(X_test).astype(dtype), y_test,
    )  # fmt: skip


def rule_width(n):
    return int(min(1500, max(1000, round(11 * math.sqrt(n)))))


def models(n_train, svc_max):
    yield "path", KernelMarginSoftmaxClassifier(n_components="path", random_state=0)
    yield (
        "rule",
        KernelMarginSoftmaxClassifier(n_components=rule_width(n_train), random_state=0),
    )
    if n_train <= svc_max:
        yield "svc", SVC(C=10, gamma="scale")
    yield "hgb", HistGradientBoostingClassifier(random_state=0)


def measure(model, X_train, y_train, X_test, y_test):
    wall, cpu = time.perf_counter(), time.process_time()
    model.fit(X_train, y_train)
    fit_cpu, fit_wall = time.process_time() - cpu, time.perf_counter() - wall
    wall, cpu = time.perf_counter(), time.process_time()
    accuracy = float(np.mean(model.predict(X_test) == y_test))
    predict_cpu = time.process_time() - cpu
    predict_wall = time.perf_counter() - wall
    return accuracy, fit_cpu, fit_wall, predict_cpu, predict_wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=[*SETS, "synthetic"])
    parser.add_argument("--sizes", nargs="*", type=int, default=[])
    parser.add_argument("--models", nargs="*", default=["path", "rule", "svc", "hgb"])
    parser.add_argument("--svc-max", type=int, default=40000)
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    names = [*args.datasets, *(f"gen_{n}" for n in args.sizes)]
    print("| data set | n_train | model | accuracy % | fit CPU s (wall) | "
          "predict CPU s (wall) | width | path (width: held-out %) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    with threadpool_limits(1):
        for name in names:
            X_train, y_train, X_test, y_test = load(name, args.data)
            n = X_train.shape[0]
            for label, model in models(n, args.svc_max):
                if label not in args.models:
                    continue
                acc, fit_cpu, fit_wall, pred_cpu, pred_wall = measure(
                    model, X_train, y_train, X_test, y_test
                )
                width = getattr(model, "n_components_", "")
                path = getattr(model, "width_path_", None)
                trail = (
                    " ".join(
                        f"{w}: {100 * s:.2f}"
                        for w, s in zip(path["widths"], path["scores"], strict=True)
                    )
                    + f" ({path['stop']})"
                    if path
                    else ""
                )
                print(
                    f"| {name} | {n} | {label} | {100 * acc:.2f} | "
                    f"{fit_cpu:.2f} ({fit_wall:.2f}) | {pred_cpu:.3f} "
                    f"({pred_wall:.3f}) | {width} | {trail} |",
                    flush=True,
                )
                if args.out:
                    with open(args.out, "a") as out:
                        out.write(json.dumps({
                            "data": name, "n_train": n, "model": label,
                            "accuracy": acc, "fit_cpu": fit_cpu,
                            "fit_wall": fit_wall, "predict_cpu": pred_cpu,
                            "predict_wall": pred_wall, "width": width,
                            "path": path,
                        }) + "\n")  # fmt: skip


if __name__ == "__main__":
    main()
