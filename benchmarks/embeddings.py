"""Linear probes on frozen embeddings: our classifiers against LogisticRegression.

Frozen embeddings (CLIP, DINO, sentence encoders) are classified with a linear
model on their rows, the "linear probe". This script fits, on each
``NAME.npz`` given (``X_train, y_train, X_test, y_test``; the rows as the
encoder gave them, no scaler, since CLIP rows are already unit vectors):

* ``ours_cv``: ``MarginSoftmaxClassifierCV()`` at its defaults (AM-Softmax,
  m=0.05, a warm-started path over s, 5 folds, temperature calibration);
* ``lrcv``: ``LogisticRegressionCV(Cs=10, cv=3)``, the usual tuned probe;
* ``ours``: ``MarginSoftmaxClassifier()`` at its defaults (m=0.05, s=30);
* ``lr``: ``LogisticRegression()`` at its defaults (C=1);
* opt-in variants of ``MarginSoftmaxClassifierCV``, to see where its time
  and its choice of s come from: ``ours_cv_fulltol`` (``path_tol=None``: the
  folds' paths at the full ``tol``, the default before ``path_tol=1e-3``),
  ``ours_cv_tol3`` (``tol=1e-3``: every fit at 1e-3, the refit's too),
  ``ours_cv3`` (``cv=3``, the folds of ``lrcv``), ``ours_cv_ll`` and
  ``ours_cv3_ll`` (``scoring="neg_log_loss"``),
  ``ours_cv3_short`` and ``ours_cv3_short_ll`` (``cv=3`` and a 7-point path
  from s=10 to 80); ``ours_nolift``, ``MarginSoftmaxClassifier(constant_feature=None)``
  (the default without its lift of each row by a constant coordinate).

and reports test accuracy, test log loss of ``predict_proba``, fit CPU seconds
(``time.process_time``; one BLAS thread, so CPU time is the work done whatever
else runs on the machine; with ``--repeats R`` the fastest of R fits) and wall
seconds, the chosen s / C, and the ratio of
each model's CPU time to ``lrcv``'s in the same run. The target of issue 28:
``ours_cv`` at accuracy >= ``lrcv``, log loss <= ``lrcv``, in at most half its
CPU time.

Usage (the two CLIP ViT-B/32 sets of the development data; timed runs share a
lock on a shared machine)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/embeddings.py \\
        --data ../shared/data \\
        --datasets clip_vitb32_caltech101,clip_vitb32_ucf101_midframes \\
        [--models ours_cv,lrcv,ours,lr,ours_cv3] [--repeats 3] [--out rows.jsonl]

``--path-report`` prints each CV model's path over s (mean held-out score,
L-BFGS iterations and wall time of a fold's fit per point),
``--refit-s 34.3,86.4`` refits
``MarginSoftmaxClassifier(s=...)`` at those scales: the diagnosis of the CV's
choice in ``benchmarks/results_embeddings.md``.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from _common import (  # noqa: E402
    add_data_argument,
    command_line,
    expected_calibration_error,
    machine,
    now,
    npz_path,
    pinned_blas,
    versions,
)
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV  # noqa: E402
from sklearn.metrics import accuracy_score, log_loss  # noqa: E402

from sklmargin import MarginSoftmaxClassifier, MarginSoftmaxClassifierCV  # noqa: E402
from sklmargin.compare.datasets import load_npz  # noqa: E402

DEFAULT_SETS = "clip_vitb32_caltech101,clip_vitb32_ucf101_midframes"
#: The generated set of a newcomer's kind (see :func:`newcomer_set`); not a file.
NEWCOMER = "synthetic_teacher_384x50"
N_BINS = 15
MODELS = {
    "ours_cv": lambda: MarginSoftmaxClassifierCV(),
    "lrcv": lambda: LogisticRegressionCV(Cs=10, cv=3),
    # LogisticRegressionCV at its own defaults (Cs=10, cv=5).
    "lrcv_default": lambda: LogisticRegressionCV(),
    "ours": lambda: MarginSoftmaxClassifier(),
    "lr": lambda: LogisticRegression(),
    # The default without its lift x -> [x, c] / |[x, c]| (unit rows gain nothing).
    "ours_nolift": lambda: MarginSoftmaxClassifier(constant_feature=None),
    # Opt-in variants, to find where the CV's time and choice come from.
    # The path at the full tol (the default before path_tol=1e-3).
    "ours_cv_fulltol": lambda: MarginSoftmaxClassifierCV(path_tol=None),
    # Every fit at 1e-3, the refit's chosen point included.
    "ours_cv_tol3": lambda: MarginSoftmaxClassifierCV(tol=1e-3),
    "ours_cv3": lambda: MarginSoftmaxClassifierCV(cv=3),
    "ours_cv3_ll": lambda: MarginSoftmaxClassifierCV(cv=3, scoring="neg_log_loss"),
    "ours_cv_ll": lambda: MarginSoftmaxClassifierCV(scoring="neg_log_loss"),
    "ours_cv3_short": lambda: MarginSoftmaxClassifierCV(
        cv=3, ss=np.geomspace(10.0, 80.0, 7)
    ),
    "ours_cv3_short_ll": lambda: MarginSoftmaxClassifierCV(
        cv=3, ss=np.geomspace(10.0, 80.0, 7), scoring="neg_log_loss"
    ),
}


def newcomer_set(n=20_000, n_features=384, n_classes=50, n_train=15_000, seed=0):
    """Embedding-like rows labelled by a noisy random linear teacher.

    Unit-norm Gaussian rows; a Gaussian teacher ``W`` (``n_features x
    n_classes``); labels ``argmax(beta * X @ W + G)`` with standard Gumbel
    noise ``G``, where ``beta`` is found by bisection so that the teacher's
    own rule ``argmax(X @ W)`` is right on 80 % of all rows. The first
    ``n_train`` rows train, the rest test. Everything is drawn from one
    generator seeded with ``seed``: the same set on every machine.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n_features))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    scores = X @ rng.standard_normal((n_features, n_classes))
    noise = rng.gumbel(size=(n, n_classes))
    teacher = np.argmax(scores, axis=1)

    def accuracy(beta):
        return np.mean(np.argmax(beta * scores + noise, axis=1) == teacher)

    low, high = 1e-2, 1e2
    for _ in range(60):  # geometric bisection: accuracy grows with beta
        beta = np.sqrt(low * high)
        low, high = (beta, high) if accuracy(beta) < 0.8 else (low, beta)
    y = np.argmax(beta * scores + noise, axis=1)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:], accuracy(beta)


def chosen(model):
    """The hyper-parameter the model chose (or was given), as text."""
    if hasattr(model, "cv_results_"):  # MarginSoftmaxClassifierCV
        path = np.asarray(model.cv_results_["param_s"], dtype=float)
        return (
            f"s={model.s_:.3g} (path {path.min():.3g}-{path.max():.3g}), "
            f"T={model.temperature_:.3g}"
        )
    if hasattr(model, "C_"):  # LogisticRegressionCV
        C = float(np.ravel(model.C_)[0])
        return f"C={C:.3g} (grid {model.Cs_.min():.3g}-{model.Cs_.max():.3g})"
    if hasattr(model, "s_"):
        return f"s={model.s_:g}, m={model.m_:g}"
    return f"C={model.C:g}"


def run(name, path, model_names, repeats=1, path_report=False, refit_s=()):
    if name == NEWCOMER:
        X_train, y_train, X_test, y_test, teacher = newcomer_set()
        print(f"{name}: teacher accuracy {teacher:.4f} (all rows)")
    else:
        data = load_npz(name, path)
        X_train, y_train = data.X_train, data.y_train
        X_test, y_test = data.X_test, data.y_test
    norms = np.linalg.norm(X_train, axis=1)
    print(
        f"{name}: {X_train.shape[0]} train / {X_test.shape[0]} test rows, "
        f"{X_train.shape[1]} features, {np.unique(y_train).size} classes, "
        f"row norms {norms.min():.4f}-{norms.max():.4f}",
        flush=True,
    )
    rows = []
    for model_name in model_names:
        cpus, walls = [], []
        for _ in range(repeats):
            model = MODELS[model_name]()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                start, cpu_start = time.perf_counter(), time.process_time()
                model.fit(X_train, y_train)
                walls.append(time.perf_counter() - start)
                cpus.append(time.process_time() - cpu_start)
        # The fastest of the repeats: what the fit costs when nothing else
        # competes for the core and its caches (contention only adds time).
        cpu, wall = min(cpus), min(walls)
        n_warn = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
        proba = model.predict_proba(X_test)
        predicted = model.predict(X_test)
        row = {
            "dataset": name,
            "model": model_name,
            "accuracy": float(accuracy_score(y_test, predicted)),
            "log_loss": float(log_loss(y_test, proba, labels=model.classes_)),
            "ece": expected_calibration_error(
                proba, np.searchsorted(model.classes_, y_test), n_bins=N_BINS
            ),
            "cpu_s": cpu,
            "wall_s": wall,
            "chosen": chosen(model),
            "convergence_warnings": n_warn,
            "_correct": predicted == y_test,  # for the paired interval, not saved
        }
        rows.append(row)
        if path_report and hasattr(model, "cv_results_"):
            results = model.cv_results_
            for s, score, n_iter, fit_time in zip(
                results["param_s"],
                results["mean_test_score"],
                results["mean_n_iter"],
                results["mean_fit_time"],
                strict=True,
            ):
                print(
                    f"    {model_name} path: s={float(s):7.2f}  mean held-out score "
                    f"{score:.4f}  mean L-BFGS iterations {n_iter:.1f}  "
                    f"mean fit {1000 * fit_time:.0f} ms (wall)"
                )
            fold_iterations = np.asarray(model.n_iter_)
            print(
                f"    {model_name} path: {int(np.sum(fold_iterations == 0))} of "
                f"{fold_iterations.size} fold fits took no L-BFGS iteration (their "
                "warm start already met the stop test)"
            )
        print(
            f"  {model_name:9s} acc {row['accuracy']:.4f}  log loss "
            f"{row['log_loss']:.4f}  ece {row['ece']:.4f}  cpu {cpu:7.2f} s  "
            f"wall {wall:7.2f} s  "
            f"{row['chosen']}  convergence warnings {n_warn}",
            flush=True,
        )
    for s in refit_s:
        model = MarginSoftmaxClassifier(s=s).fit(X_train, y_train)
        print(
            f"  MarginSoftmaxClassifier(s={s:g}): test accuracy "
            f"{model.score(X_test, y_test):.4f}, training accuracy "
            f"{model.score(X_train, y_train):.4f}, {model.n_iter_} L-BFGS iterations"
        )
    return rows


def table(rows):
    """Markdown table: one line per (dataset, model), CPU ratio to lrcv."""
    lrcv = {r["dataset"]: r for r in rows if r["model"] == "lrcv"}
    lines = [
        "| dataset | model | accuracy | log loss | ECE | CPU s | CPU / lrcv | "
        "wall s | chosen | conv. warnings |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        peer = lrcv.get(r["dataset"])
        ratio = f"{r['cpu_s'] / peer['cpu_s']:.2f}" if peer else "-"
        lines.append(
            f"| {r['dataset']} | {r['model']} | {r['accuracy']:.4f} | "
            f"{r['log_loss']:.4f} | {r['ece']:.4f} | {r['cpu_s']:.2f} | {ratio} | "
            f"{r['wall_s']:.2f} | "
            f"{r['chosen']} | {r['convergence_warnings']} |"
        )
    return "\n".join(lines)


def paired_interval(correct, peer_correct, n_resamples=2000, seed=0):
    """95 % paired bootstrap interval of an accuracy difference, in points.

    Resamples the test rows (the same rows for both models), so the interval
    measures what the test set's size leaves uncertain about the difference;
    also returns the discordant counts (rows only one of the two gets right).
    """
    rng = np.random.default_rng(seed)
    diff = correct.astype(float) - peer_correct.astype(float)
    index = rng.integers(len(diff), size=(n_resamples, len(diff)))
    means = diff[index].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    only_ours = int(np.sum(correct & ~peer_correct))
    only_peer = int(np.sum(~correct & peer_correct))
    return 100 * low, 100 * high, only_ours, only_peer


def verdict(rows):
    """Whether ours_cv meets the target against lrcv on every data set.

    With the paired bootstrap interval of the accuracy difference
    (:func:`paired_interval`): a difference inside it is within what the test
    split can resolve.
    """
    by = {(r["dataset"], r["model"]): r for r in rows}
    lines = []
    pairs = [
        (dataset, name)
        for dataset in sorted({r["dataset"] for r in rows})
        for name in ("lrcv", "lrcv_default")
    ]
    for dataset, name in pairs:
        ours, peer = by.get((dataset, "ours_cv")), by.get((dataset, name))
        if not (ours and peer):
            continue
        checks = {
            "accuracy >=": ours["accuracy"] >= peer["accuracy"],
            "log loss <=": ours["log_loss"] <= peer["log_loss"],
            "ECE <=": ours["ece"] <= peer["ece"],
            "CPU <= 1/2": ours["cpu_s"] <= 0.5 * peer["cpu_s"],
        }
        lines.append(
            f"{dataset} against {name}: accuracy "
            f"{ours['accuracy'] - peer['accuracy']:+.4f}, "
            f"log loss {ours['log_loss'] - peer['log_loss']:+.4f}, "
            f"ECE {ours['ece'] - peer['ece']:+.4f}, CPU ratio "
            f"{ours['cpu_s'] / peer['cpu_s']:.2f}: "
            + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in checks.items())
        )
        low, high, only_ours, only_peer = paired_interval(
            ours["_correct"], peer["_correct"]
        )
        lines.append(
            f"  accuracy difference, 95 % paired bootstrap interval over test rows: "
            f"[{low:+.2f}, {high:+.2f}] points; rows right only for ours_cv "
            f"{only_ours}, only for {name} {only_peer}"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_argument(parser)
    parser.add_argument("--datasets", default=DEFAULT_SETS)
    parser.add_argument("--models", default="ours_cv,lrcv,ours,lr")
    parser.add_argument("--out", default=None, help="append JSON rows here")
    parser.add_argument(
        "--path-report",
        action="store_true",
        help="print the s path of the CV models: held-out score and iterations",
    )
    parser.add_argument(
        "--refit-s",
        default="",
        help="comma-separated s values: refit MarginSoftmaxClassifier(s=...) "
        "on the training split and print its test accuracy",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="fit each model R times and report the fastest (CPU and wall)",
    )
    args = parser.parse_args()
    model_names = args.models.split(",")
    unknown = sorted(set(model_names) - set(MODELS))
    if unknown:
        parser.error(
            f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}"
        )
    print(f"command: {command_line()}")
    print(f"{now()}; {machine()}; {versions()}")
    all_rows = []
    with pinned_blas(1):
        for name in args.datasets.split(","):
            refit_s = [float(v) for v in args.refit_s.split(",") if v]
            rows = run(
                name,
                None if name == NEWCOMER else npz_path(args.data, name),
                model_names,
                args.repeats,
                args.path_report,
                refit_s,
            )
            all_rows.extend(rows)
            if args.out:
                with open(args.out, "a") as handle:
                    for row in rows:
                        saved = {k: v for k, v in row.items() if not k.startswith("_")}
                        handle.write(json.dumps(saved) + "\n")
    print()
    print(table(all_rows))
    print()
    print(verdict(all_rows))


if __name__ == "__main__":
    main()
