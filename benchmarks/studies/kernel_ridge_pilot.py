"""Issue 25 / 27: a closed-form pilot for the learned metric (kernel ridge regression).

The kernel model learns its input metric from the average gradient outer product
(AGOP) of a *pilot* fit: today an AM-Softmax model on at most 4,000 rows and 500
Nyström centres, stopped by L-BFGS at 10 x ``tol``. Where that stop falls depends
on the optimiser's path, so round-off in the rows moves the metric (0.28 % of its
largest entry on a9a) and the final model follows it: 1.82 % of a9a's and 2.04 %
of synthetic's test labels change under a 2-ulp perturbation
(``../results_label_stability.md``, 10c-10g). Recursive Feature Machines
(Radhakrishnan et al., Science 2024) take the AGOP of a kernel *ridge* regression
instead: a linear solve, whose answer is defined to round-off by its
conditioning and not by a stopping rule.

This study replaces the pilot's fit by that solve, on the same rows, the same
pilot map (the pilot estimator's Nyström centres, drawn by the same seeds) and the
same AGOP code: the ridge coefficients ``A`` of the one-hot labels on the pilot's
features ``Z`` (weighted, centred, in float64)

    (Zc^T W Zc / sum(w) + lam I) A = Zc^T W Yc / sum(w),
    lam = ridge * trace(Zc^T W Zc / sum(w)) / M,

become the pilot's ``coef_`` as a plain-softmax model (logits ``Z A + b``), whose
input gradients the package's :func:`average_gradient_outer_product` averages.
Everything else is the package's (two diagonal steps, the final fit).

Parts (every model after a ``StandardScaler`` fitted on the training rows, then
cast to float32 as ``label_stability.py`` does; one BLAS thread; seed 0):

``accuracy``
    Test accuracy and fit CPU of ``KernelMarginSoftmaxClassifier(random_state=0)``
    with the package's pilot and with the ridge pilot at each ``--ridges`` value.
``stability``
    For the same models: the share of test labels that change when the training
    rows are multiplied by ``1 + 2 eps`` and ``1 - 2 eps`` (float32's eps) or
    permuted (seed 0), the worst of the three, and the largest difference of the
    learned ``input_transform_`` over its largest entry.
``sample``
    Whether the pilot sees other rows under those perturbations: of the pilot's
    rows (``metric_sample`` of the package, seed 0), how many differ from the
    unperturbed fit's by more than 1e-5 in some entry, and how many labels
    differ, position by position.

Usage::

    python benchmarks/studies/kernel_ridge_pilot.py --data ../shared/data \\
        --part accuracy --datasets vowel,segment > ridge.jsonl
    python benchmarks/studies/kernel_ridge_pilot.py --summary ridge.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from sklearn.base import clone
from sklearn.preprocessing import StandardScaler
from sklearn.utils import check_random_state

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import add_data_argument, pinned_blas, summarised_or_started  # noqa: E402
from kernel_targets import split_of  # noqa: E402

import sklmargin.estimators._metric as metric_module  # noqa: E402
from sklmargin import KernelMarginSoftmaxClassifier  # noqa: E402
from sklmargin.features._input_transform import apply_input_transform  # noqa: E402

TWO_ULP = np.float32(1.0 + 2.0 * np.finfo(np.float32).eps)
MINUS_TWO_ULP = np.float32(1.0 - 2.0 * np.finfo(np.float32).eps)


def ridge_pilot_transform(estimator, keys, take, dtype, ridge):
    """:func:`learn_input_transform` with a kernel ridge pilot (see the docstring)."""
    m = metric_module
    rng = check_random_state(estimator.random_state)
    rows, agop_rows = m.metric_sample(keys, rng)
    seed = rng.randint(np.iinfo(np.int32).max)
    X, y_encoded, sample_weight = take(rows)
    X = np.asarray(X).astype(dtype, copy=False)
    y_encoded = np.asarray(y_encoded)
    weight = np.asarray(sample_weight, dtype=np.float64)
    n_classes = int(y_encoded.max()) + 1
    # The pilot map as the package's pilot draws it; one L-BFGS iteration only
    # fits it and the attributes the AGOP reads (its coefficients are replaced).
    pilot = clone(estimator).set_params(
        loss="softmax", s=None, C=1.0, metric=None,
        n_components=min(
            estimator._kernel_features().width(len(keys)), m.PILOT_COMPONENTS
        ),
        max_iter=1, class_weight=None, warm_start=False,
        compute_dtype=np.dtype(dtype).name, random_state=seed, verbose=0,
    )  # fmt: skip
    full = estimator.metric == "full"
    transform = None
    total = weight.sum()
    targets = np.eye(n_classes)[y_encoded]
    for _ in range(int(estimator.metric_steps)):
        current = apply_input_transform(X, transform)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pilot.fit(current, y_encoded, sample_weight=weight)
        Z = np.asarray(pilot.feature_map_.transform(current), dtype=np.float64)
        z_mean = weight @ Z / total
        y_mean = weight @ targets / total
        Zc, Yc = Z - z_mean, targets - y_mean
        gram = (Zc * weight[:, None]).T @ Zc / total
        lam = ridge * np.trace(gram) / gram.shape[0]
        gram[np.diag_indices_from(gram)] += lam
        A = cho_solve(cho_factor(gram), (Zc * weight[:, None]).T @ Yc / total)
        pilot.coef_ = np.ascontiguousarray(A.T, dtype=pilot.coef_.dtype)
        pilot.intercept_ = (y_mean - z_mean @ A).astype(pilot.intercept_.dtype)
        agop = m.average_gradient_outer_product(
            pilot, current[agop_rows], weight[agop_rows], full
        )
        step = m.metric_step(agop)
        if step is None:
            break
        transform = m.compose(transform, step)
    return transform


@contextmanager
def ridge_pilot(ridge):
    """Make every kernel fit in the block learn its metric by the ridge pilot."""
    if ridge is None:
        yield
        return
    package = metric_module.learn_input_transform
    metric_module.learn_input_transform = lambda estimator, keys, take, dtype: (
        ridge_pilot_transform(estimator, keys, take, dtype, ridge)
    )
    try:
        yield
    finally:
        metric_module.learn_input_transform = package


def scaled(data, name):
    X, y, X_test, y_test = split_of(data, name)
    scaler = StandardScaler().fit(X)
    X, X_test = (scaler.transform(a).astype(np.float32) for a in (X, X_test))
    return X, y, X_test, y_test


def fit(X, y, ridge):
    with ridge_pilot(ridge), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.process_time()
        model = KernelMarginSoftmaxClassifier(random_state=0).fit(X, y)
        return model, time.process_time() - start


def accuracy_part(data, name, ridges):
    X, y, X_test, y_test = scaled(data, name)
    row = {"part": "accuracy", "dataset": name}
    for ridge in ridges:
        model, cpu = fit(X, y, ridge)
        row[str(ridge)] = {
            "acc": 100 * float(np.mean(model.predict(X_test) == y_test)),
            "fit_cpu": cpu,
        }
    return row


def stability_part(data, name, ridges):
    X, y, X_test, y_test = scaled(data, name)
    order = np.random.default_rng(0).permutation(len(y))
    variants = {
        "+2ulp": (X * TWO_ULP, y),
        "-2ulp": (X * MINUS_TWO_ULP, y),
        "permuted": (X[order], y[order]),
    }
    row = {"part": "stability", "dataset": name}
    for ridge in ridges:
        base, _ = fit(X, y, ridge)
        labels = base.predict(X_test)
        transform = base.input_transform_
        entry = {"acc": 100 * float(np.mean(labels == y_test))}
        for label, (Xv, yv) in variants.items():
            other, _ = fit(Xv, yv, ridge)
            entry[label] = 100 * float(np.mean(other.predict(X_test) != labels))
            difference = np.max(np.abs(other.input_transform_ - transform))
            entry[f"{label}_transform"] = float(difference / np.max(np.abs(transform)))
        row[str(ridge)] = entry
    return row


def sample_part(data, name, ridges):
    from sklmargin.estimators._metric import metric_sample, training_row_keys

    X, y, _, _ = scaled(data, name)
    order = np.random.default_rng(0).permutation(len(y))
    variants = {
        "base": (X, y),
        "+2ulp": (X * TWO_ULP, y),
        "-2ulp": (X * MINUS_TWO_ULP, y),
        "permuted": (X[order], y[order]),
    }
    taken = {}
    for label, (Xv, yv) in variants.items():
        rows, _ = metric_sample(training_row_keys(Xv), check_random_state(0))
        taken[label] = (Xv[rows], yv[rows])
    X0, y0 = taken["base"]
    row = {"part": "sample", "dataset": name, "n_pilot": len(y0)}
    for label in ("+2ulp", "-2ulp", "permuted"):
        Xv, yv = taken[label]
        row[label] = {
            "rows_moved": int(np.sum(np.any(np.abs(Xv - X0) > 1e-5, axis=1))),
            "labels_differ": int(np.sum(yv != y0)),
        }
    return row


def summary(path):
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    sampled = [r for r in rows if r["part"] == "sample"]
    if sampled:
        print("\n## sample\n")
        print(
            "| data set | pilot rows | rows moved / labels differing: +2 ulp | -2 ulp "
            "| permuted |"
        )
        print("|---|---|---|---|---|")
        for r in sampled:
            cells = " | ".join(
                f"{r[v]['rows_moved']} / {r[v]['labels_differ']}"
                for v in ("+2ulp", "-2ulp", "permuted")
            )
            print(f"| {r['dataset']} | {r['n_pilot']} | {cells} |")
    for part in ("accuracy", "stability"):
        chosen = [r for r in rows if r["part"] == part]
        if not chosen:
            continue
        pilots = [k for k in chosen[0] if k not in ("part", "dataset")]
        names = {"None": "package pilot"}
        print(f"\n## {part}\n")
        if part == "accuracy":
            head = " | ".join(
                f"{names.get(p, 'ridge ' + p)}: acc %, fit CPU s" for p in pilots
            )
            print(f"| data set | {head} |")
            print("|---|" + "---|" * len(pilots))
            for r in chosen:
                cells = " | ".join(
                    f"{r[p]['acc']:.2f}, {r[p]['fit_cpu']:.2f}" for p in pilots
                )
                print(f"| {r['dataset']} | {cells} |")
            for p in pilots[1:]:
                diff = [r[p]["acc"] - r[pilots[0]]["acc"] for r in chosen]
                cpu = [r[p]["fit_cpu"] / r[pilots[0]]["fit_cpu"] for r in chosen]
                print(
                    f"ridge {p} - package pilot: mean {np.mean(diff):+.2f} points "
                    f"(worst {min(diff):+.2f}) over {len(diff)} sets; fit CPU ratio, "
                    f"geometric mean {np.exp(np.mean(np.log(cpu))):.2f}"
                )
        else:
            print(
                "| data set | pilot | acc % | +2 ulp changed % | -2 ulp | permuted | "
                "worst % | transform moved (+2 ulp / -2 ulp / permuted) |"
            )
            print("|---|---|---|---|---|---|---|---|")
            for r in chosen:
                for p in pilots:
                    e = r[p]
                    worst = max(e["+2ulp"], e["-2ulp"], e["permuted"])
                    moved = " / ".join(
                        f"{e[f'{v}_transform']:.1e}"
                        for v in ("+2ulp", "-2ulp", "permuted")
                    )
                    print(
                        f"| {r['dataset']} | {names.get(p, 'ridge ' + p)} | "
                        f"{e['acc']:.2f} | {e['+2ulp']:.2f} | {e['-2ulp']:.2f} | "
                        f"{e['permuted']:.2f} | {worst:.2f} | {moved} |"
                    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_argument(parser)
    parser.add_argument("--part", choices=("accuracy", "stability", "sample"))
    parser.add_argument("--datasets", default="segment")
    parser.add_argument(
        "--ridges", default="1e-3,1e-2,1e-1",
        help="relative ridge strengths; the package's pilot is always run first",
    )  # fmt: skip
    parser.add_argument("--summary", metavar="FILE")
    args = parser.parse_args()
    if summarised_or_started(args, summary):
        return
    ridges = [None] + [float(r) for r in args.ridges.split(",")]
    part = {
        "accuracy": accuracy_part,
        "stability": stability_part,
        "sample": sample_part,
    }[args.part]
    with pinned_blas(1, announce=False):
        for name in args.datasets.split(","):
            print(json.dumps(part(args.data, name, ridges)), flush=True)


if __name__ == "__main__":
    main()
