"""The linear default at scale: MarginSoftmaxClassifier() against LogisticRegression().

Frozen-embedding-like data (``make_embeddings``): unit-norm 512-d Gaussian
rows, 100 classes, labels ``argmax(X @ W + 0.1 * noise)`` for a Gaussian
teacher ``W`` and standard normal noise (``numpy.random.default_rng(0)``
draws ``W``; the 20,000 test rows and the training rows have their own
seeded streams, so the test set is the same at every size), float32 rows.
For each ``--sizes`` entry ``n`` it fits, on the first ``n`` training rows:

* ``ours``: ``MarginSoftmaxClassifier()`` at its defaults (``s=None``: the
  scale resolved from the rows, reported as ``s_``);
* ``s30``: ``MarginSoftmaxClassifier(s=30)``, the fixed scale the default
  resolved to before (the same model the old default gave);
* ``lr``: ``LogisticRegression()`` at its defaults;

and prints test accuracy, test log loss, fit CPU seconds
(``time.process_time``: one BLAS thread, so the work done whatever else runs)
and wall seconds, ``s_``, and ours' accuracy and CPU against LR's.

``--small`` adds the ten small sets: the eight CV sets (StandardScaler in a
pipeline) and the two CLIP ViT-B/32 sets (rows as given), default against
``s=30``, with the means of accuracy and log loss. ``--newcomer`` adds a
20,000 x 384, 50-class set (L2-normalised rows, a random linear teacher with
Gumbel noise tuned to a teacher accuracy of about 0.80, 15k/5k split):
``MarginSoftmaxClassifier()`` and ``MarginSoftmaxClassifierCV()`` against
``LogisticRegressionCV()``.

Usage (timed runs share a lock on a shared machine)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 flock /tmp/sklmargin-bench.lock \\
        python benchmarks/linear_scale.py --sizes 20000,200000,400000 \\
        [--models ours,s30,lr] [--small] [--newcomer] [--data ../shared/data]
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV  # noqa: E402
from sklearn.metrics import log_loss  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklmargin import MarginSoftmaxClassifier, MarginSoftmaxClassifierCV  # noqa: E402

SMALL_SETS = (
    "a9a dna letter pendigits satimage segment usps vowel "
    "clip_vitb32_caltech101 clip_vitb32_ucf101_midframes"
).split()
MODELS = {
    "ours": lambda: MarginSoftmaxClassifier(),
    "s30": lambda: MarginSoftmaxClassifier(s=30),
    "lr": lambda: LogisticRegression(),
}


def make_embeddings(n_train, d=512, n_classes=100, noise=0.1, n_test=20_000):
    """``(X_train, y_train, X_test, y_test)``: unit rows, a noisy linear teacher."""
    teacher = np.random.default_rng(0).standard_normal((d, n_classes))

    def draw(m, stream):
        rng = np.random.default_rng([0, stream])
        X = np.empty((m, d), dtype=np.float32)
        y = np.empty(m, dtype=np.int64)
        for start in range(0, m, 50_000):  # in blocks: float64 only per block
            block = rng.standard_normal((min(50_000, m - start), d))
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            scores = block @ teacher + noise * rng.standard_normal(
                (block.shape[0], n_classes)
            )
            X[start : start + len(block)] = block
            y[start : start + len(block)] = np.argmax(scores, axis=1)
        return X, y

    X_test, y_test = draw(n_test, 1)
    X_train, y_train = draw(n_train, 2)
    return X_train, y_train, X_test, y_test


def make_newcomer(n=20_000, d=384, n_classes=50, seed=0):
    """L2-normalised rows, a random linear teacher with Gumbel noise (~0.80)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    scores = X @ rng.standard_normal((d, n_classes))
    clean = np.argmax(scores, axis=1)
    gumbel = rng.gumbel(size=scores.shape)
    # The noise scale whose labels agree with the teacher on 80 % of the rows.
    lo, hi = 0.0, 10.0
    for _ in range(40):
        mid = (lo + hi) / 2
        agree = np.mean(np.argmax(scores + mid * gumbel, axis=1) == clean)
        lo, hi = (mid, hi) if agree > 0.80 else (lo, mid)
    y = np.argmax(scores + lo * gumbel, axis=1)
    X = X.astype(np.float32)
    return X[:15_000], y[:15_000], X[15_000:], y[15_000:], float(np.mean(y == clean))


def fit_and_score(model, X_train, y_train, X_test, y_test):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        wall, cpu = time.perf_counter(), time.process_time()
        model.fit(X_train, y_train)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    proba = model.predict_proba(X_test)
    head = model[-1] if hasattr(model, "steps") else model
    return {
        "acc": 100 * float(np.mean(head.classes_[proba.argmax(1)] == y_test)),
        "ll": float(log_loss(y_test, proba, labels=head.classes_)),
        "cpu": cpu,
        "wall": wall,
        "s": getattr(head, "s_", None),
    }


def _row(label, name, r):
    s = "" if r["s"] is None else f"{r['s']:.1f}"
    return (
        f"| {label} | {name} | {r['acc']:.2f} | {r['ll']:.4f} | {r['cpu']:.1f} "
        f"| {r['wall']:.1f} | {s} |"
    )


HEADER = "| data | model | accuracy % | log loss | fit CPU s | fit wall s | s_ |\n"
HEADER += "|---|---|---|---|---|---|---|"


def run_sizes(sizes, models):
    print(HEADER, flush=True)
    summary = []
    for n in sizes:
        X_train, y_train, X_test, y_test = make_embeddings(n)
        results = {}
        for name in models:
            results[name] = fit_and_score(
                MODELS[name](), X_train, y_train, X_test, y_test
            )
            print(_row(f"n={n:,}", name, results[name]), flush=True)
        if "ours" in results and "lr" in results:
            ours, lr = results["ours"], results["lr"]
            summary.append(
                f"| {n:,} | {ours['acc'] - lr['acc']:+.2f} | "
                f"{ours['cpu'] / lr['cpu']:.3f} | "
                f"{'yes' if ours['acc'] >= lr['acc'] - 0.3 else 'NO'} | "
                f"{'yes' if ours['cpu'] <= lr['cpu'] / 2 else 'NO'} |"
            )
    if summary:
        print("\n| n | ours - LR accuracy (points) | ours / LR fit CPU | "
              ">= LR - 0.3 | <= 1/2 CPU |\n|---|---|---|---|---|")  # fmt: skip
        print("\n".join(summary), flush=True)


def run_small(data):
    print("\n" + HEADER, flush=True)
    means = {"ours": [], "s30": []}
    for name in SMALL_SETS:
        npz = np.load(os.path.join(data, f"{name}.npz"))
        split = npz["X_train"], npz["y_train"], npz["X_test"], npz["y_test"]
        for label in means:
            model = MODELS[label]()
            if not name.startswith("clip"):
                model = make_pipeline(StandardScaler(), model)
            r = fit_and_score(model, *split)
            means[label].append((r["acc"], r["ll"], r["cpu"]))
            print(_row(name, label, r), flush=True)
    print("\n| model | mean accuracy % | mean log loss | total fit CPU s |")
    print("|---|---|---|---|")
    for label, rows in means.items():
        acc, ll, cpu = np.array(rows).T
        print(f"| {label} | {acc.mean():.3f} | {ll.mean():.4f} | {cpu.sum():.1f} |")


def run_newcomer():
    X_train, y_train, X_test, y_test, agree = make_newcomer()
    print(f"\nnewcomer set: 15,000 / 5,000 rows x 384, 50 classes, teacher "
          f"accuracy {agree:.3f}\n\n" + HEADER, flush=True)  # fmt: skip
    models = {
        "ours": MarginSoftmaxClassifier(),
        "s30": MarginSoftmaxClassifier(s=30),
        "ours_cv": MarginSoftmaxClassifierCV(),
        "lrcv": LogisticRegressionCV(),
    }
    for label, model in models.items():
        r = fit_and_score(model, X_train, y_train, X_test, y_test)
        print(_row("newcomer", label, r), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,200000,400000")
    parser.add_argument("--models", default="ours,s30,lr")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--newcomer", action="store_true")
    parser.add_argument(
        "--data",
        default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"),
    )
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",") if n]
    if sizes:
        run_sizes(sizes, args.models.split(","))
    if args.small:
        run_small(args.data)
    if args.newcomer:
        run_newcomer()


if __name__ == "__main__":
    main()
