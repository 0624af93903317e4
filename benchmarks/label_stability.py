"""Label stability: how many test labels change under round-off or a row permutation.

A model should be decided by the data. For each data set (standardised with a
``StandardScaler`` fitted on the training split, then cast to float32) and each
model, three fits are made on:

* the training rows as given (the *base* fit, the one timed),
* ``X_train * (1 + 2 eps)`` with ``eps`` float32's machine epsilon (a 2-ulp
  perturbation of every entry, rounded in float32),
* the training rows permuted (``numpy.random.default_rng(0)``; labels and rows
  together),

and the script reports the percentage of *test* labels on which each of the two
last fits disagrees with the base fit, the base fit's test accuracy, its CPU
seconds (``time.process_time``) and wall seconds. Run it under the shared
benchmark lock with one BLAS thread::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/label_stability.py

Models (``--models``): ``linear`` = ``MarginSoftmaxClassifier()``, ``kernel`` =
``KernelMarginSoftmaxClassifier(random_state=0)`` (the default map draws its
centres from ``random_state``: a fixed seed, or every fit draws others), ``lr`` =
``LogisticRegression()``, ``svc`` = ``SVC(C=10)``, ``linearsvc`` = ``LinearSVC()``.
``--tol`` overrides the sklmargin estimators' ``tol``; ``--fixed-map`` fits the
kernel model's three fits on one feature map (the base fit's), which separates
the solver's share of the changes from the centres'. ``--keys`` prints instead,
for grids of 1/32 (the package's) and 1/256, the share of the distinct
training rows whose stable key (``sklmargin.features._row_keys``) the 2-ulp
perturbation changes, and the share of rows that share their key with another
row. ``--extra`` adds two variants, ``X_train * (1 - 2 eps)`` and a second
permutation (seed 1), and the largest change of the four; ``--repeat N``
reports the median CPU of N base fits.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np
from _common import add_data_argument, now, pinned_blas, versions
from kernel_targets import split_of
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier
from sklmargin.estimators._fit_path import fit_path

DATASETS = ("satimage", "usps", "letter")
MODELS = ("linear", "kernel", "lr", "svc", "linearsvc")
TWO_ULP = np.float32(1.0 + 2.0 * np.finfo(np.float32).eps)
MINUS_TWO_ULP = np.float32(1.0 - 2.0 * np.finfo(np.float32).eps)


def make_model(name, tol, params=None):
    # params: more parameters of our two estimators (--params)
    extra = {**({} if tol is None else {"tol": tol}), **(params or {})}
    if name == "linear":
        return MarginSoftmaxClassifier(**extra)
    if name == "kernel":
        return KernelMarginSoftmaxClassifier(random_state=0, **extra)
    if name == "lr":
        return LogisticRegression()
    if name == "svc":
        return SVC(C=10)
    if name == "linearsvc":
        return LinearSVC()
    raise ValueError(name)


def timed_fit(model, X, y, premapped=None):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cpu, wall = time.process_time(), time.perf_counter()
        # premapped: a map fitted elsewhere and its rows (as the CV
        # estimators' fold fits take them).
        if hasattr(model, "_fit_rows"):  # a sklmargin estimator
            for _ in fit_path(model, X, y, mapped=premapped):
                pass
        else:  # the scikit-learn peers
            model.fit(X, y)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return cpu, wall, len(caught)


def key_rates(data_dir, names):
    from sklmargin.features import _row_keys

    print(
        "| data | distinct rows | grid | keys changed by 2 ulp | rows sharing a key |"
    )
    print("|---|---|---|---|---|")
    default = _row_keys._GRID_BITS
    try:
        for name in names:
            X = np.unique(standardised(data_dir, name)[0], axis=0)
            for bits in (5, 8):
                _row_keys._GRID_BITS = bits
                keys = _row_keys.stable_row_keys(X)
                changed = np.mean(_row_keys.stable_row_keys(X * TWO_ULP) != keys)
                _, counts = np.unique(keys, return_counts=True)
                shared = counts[counts > 1].sum() / len(keys)
                print(
                    f"| {name} | {len(keys)} | 1/{2**bits} | {changed:.1e} | "
                    f"{shared:.1e} |"
                )
    finally:
        _row_keys._GRID_BITS = default


def standardised(data_dir, name):
    # split_of: the shared NAME.npz splits, and kernel_targets' synthetic set.
    X_train, y_train, X_test, y_test = split_of(data_dir, name)
    scaler = StandardScaler().fit(X_train)
    return (
        scaler.transform(X_train).astype(np.float32),
        y_train,
        scaler.transform(X_test).astype(np.float32),
        y_test,
    )


def run(name, model_name, data_dir, tol, fixed_map, extra=False, repeat=1, params=None):
    X, y, X_test, y_test = standardised(data_dir, name)
    order = np.random.default_rng(0).permutation(len(y))
    variants = {"base": (X, y), "2ulp": (X * TWO_ULP, y), "perm": (X[order], y[order])}
    if extra:  # the other sign of the 2-ulp change, and a second permutation
        other = np.random.default_rng(1).permutation(len(y))
        variants["2ulp_down"] = (X * MINUS_TWO_ULP, y)
        variants["perm1"] = (X[other], y[other])
    labels, record = {}, {"data": name, "model": model_name, "tol": tol}
    base_map = None
    for variant, (X_fit, y_fit) in variants.items():
        model = make_model(model_name, tol, params)
        premapped = None
        if fixed_map and model_name == "kernel" and base_map is not None:
            mapped = base_map.transform(X_fit.astype(record["compute_dtype"]))
            premapped = (base_map, mapped)
        cpu, wall, n_warnings = timed_fit(model, X_fit, y_fit, premapped)
        labels[variant] = model.predict(X_test)
        if variant == "base":
            # --repeat: the median CPU of that many identical base fits
            cpus = [cpu] + [
                timed_fit(make_model(model_name, tol, params), X_fit, y_fit)[0]
                for _ in range(repeat - 1)
            ]
            cpu = float(np.median(cpus))
            record.update(
                fit_cpu_s=round(cpu, 3),
                fit_wall_s=round(wall, 3),
                accuracy=round(100 * float(np.mean(labels[variant] == y_test)), 2),
                n_iter=int(np.max(getattr(model, "n_iter_", -1))),
                warnings=n_warnings,
            )
            if model_name == "kernel":
                base_map = model.feature_map_
                record["compute_dtype"] = model.compute_dtype_
        else:
            changed = 100 * float(np.mean(labels[variant] != labels["base"]))
            record[f"changed_{variant}_pct"] = round(changed, 3)
    record["fixed_map"] = bool(fixed_map and model_name == "kernel")
    return record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--tol", type=float, default=None)
    parser.add_argument("--fixed-map", action="store_true")
    parser.add_argument("--keys", action="store_true")
    parser.add_argument(
        "--extra",
        action="store_true",
        help="also X * (1 - 2 eps) and a second permutation (seed 1); the "
        "'worst' column is the largest change over all variants",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="fit CPU: median of this many base fits"
    )
    parser.add_argument("--out", default=None, help="append JSON lines here")
    parser.add_argument(
        "--pilot-tol-factor",
        type=float,
        default=None,
        help="the kernel metric's pilot fits stop at this multiple of tol (10)",
    )
    parser.add_argument(
        "--params",
        type=json.loads,
        default=None,
        help="JSON of more parameters of linear and kernel, e.g. '{\"metric\": null}'",
    )
    args = parser.parse_args(argv)
    if args.pilot_tol_factor is not None:
        # a research knob: the learned metric's pilot fits stop at this
        # multiple of tol (the package's constant, 10)
        from sklmargin.estimators import _metric

        _metric.PILOT_TOL_FACTOR = args.pilot_tol_factor
    print(f"# {now()}; {versions()}")
    print("# " + " ".join(["python", *sys.argv]))
    if args.keys:
        key_rates(args.data, args.datasets)
        return
    header = (
        "| data | model | acc % | 2-ulp changed % | permuted changed % "
        + ("| -2-ulp changed % | permutation 1 changed % | worst % " * args.extra)
        + "| fit CPU s | wall s | iter |"
    )
    print(header)
    print("|---" * (8 + 3 * args.extra) + "|")
    with pinned_blas(1, announce=False):
        for name in args.datasets:
            for model_name in args.models:
                record = run(
                    name, model_name, args.data, args.tol, args.fixed_map,
                    args.extra, args.repeat, args.params,
                )  # fmt: skip
                changes = [
                    value for key, value in record.items() if key.startswith("changed_")
                ]
                more = ""
                if args.extra:
                    more = (
                        f"{record['changed_2ulp_down_pct']:.2f} | "
                        f"{record['changed_perm1_pct']:.2f} | {max(changes):.2f} | "
                    )
                print(
                    f"| {name} | {model_name} | {record['accuracy']:.2f} | "
                    f"{record['changed_2ulp_pct']:.2f} | "
                    f"{record['changed_perm_pct']:.2f} | {more}"
                    f"{record['fit_cpu_s']:.3f} | "
                    f"{record['fit_wall_s']:.2f} | {record['n_iter']} |",
                    flush=True,
                )
                if args.out:
                    with open(args.out, "a") as handle:
                        handle.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
