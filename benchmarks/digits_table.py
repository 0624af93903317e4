"""Accuracy and fit time of every loss on scikit-learn's digits, next to LR and SVM.

5-fold stratified cross-validation (``StratifiedKFold(5, shuffle=True,
random_state=seed)``, the same folds for every model) of
``Pipeline([StandardScaler(), model])`` on the whole digits data set (or, with
``--dataset NAME``, another bundled data set or the training split of
``NAME.npz`` in ``--data``), for

* ``MarginSoftmaxClassifier`` with every loss (softmax, normface, am-softmax,
  arcface, l-softmax, a-softmax) and am-softmax with SV-Softmax ``t=1.2``, each at
  the classifier's default ``tol`` and at ``tol=1e-4`` (LogisticRegression's
  default), with the defaults recommended by ``benchmarks/tune_defaults.py``
  (:data:`RECOMMENDED`; ``--params library`` uses the library's own defaults
  instead);
* ``LogisticRegression(max_iter=1000)`` and ``LinearSVC()`` as references.

Fit time is the wall-clock time of ``pipeline.fit`` on the training folds (scaler
included, it is negligible). Within a fold every model is fitted ``--repeats``
times in turn (interleaved, so that all models see the same machine load) and the
fastest repeat is that fold's time; the table gives the median over the 5 folds
and its ratio to LogisticRegression's median measured in the same run. BLAS is
limited to ``--blas-threads`` threads (default 1) and everything runs in one
process.

The table is printed and appended to ``--output`` (default
``benchmarks/results_defaults.md``) with the date, the machine and the command.

Examples
--------
::

    python benchmarks/digits_table.py
    python benchmarks/digits_table.py --dataset vowel --no-append
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _common import (
    REPO,
    add_data_argument,
    command_line,
    load_training_split,
    machine,
    now,
    pinned_blas,
    versions,
)
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from sklmargin import MarginSoftmaxClassifier

#: Defaults recommended by ``benchmarks/tune_defaults.py`` (best mean rank over
#: 12 data sets, see ``benchmarks/results_defaults.md``); softmax has nothing to
#: tune here. The rule picks m=0 for AM-Softmax and ArcFace, i.e. NormFace.
RECOMMENDED = {
    "softmax": {},
    "normface": {"s": 20},
    "am-softmax": {"m": 0.0, "s": 20},
    "arcface": {"m": 0.0, "s": 20},
    "l-softmax": {"m": 1.5, "lambda_min": 20},
    "a-softmax": {"m": 2, "lambda_min": 50},
}
#: Best settings with a non-zero margin (next in mean rank; shown as extra rows
#: unless ``--no-alternatives``).
ALTERNATIVES = {
    "am-softmax": {"m": 0.05, "s": 30},
    "arcface": {"m": 0.1, "s": 30},
}
LOSSES = ("softmax", "normface", "am-softmax", "arcface", "l-softmax", "a-softmax")


def other_defaults():
    """Library defaults of the parameters this table does not set."""
    return {
        key: value
        for key, value in MarginSoftmaxClassifier().get_params().items()
        if key not in ("loss", "m", "s", "lambda_min", "tol", "t")
    }


def pipeline(estimator):
    """``Pipeline([StandardScaler(), estimator])``."""
    return Pipeline([("scale", StandardScaler()), ("clf", estimator)])


def build_models(params_source, alternatives=True):
    """The models of the table as ``(name, settings, tol label, factory)``.

    Parameters
    ----------
    params_source : {"recommended", "library"}
        Hyper-parameters of our losses: :data:`RECOMMENDED` or the library's
        defaults (nothing passed).
    alternatives : bool
        Add rows for :data:`ALTERNATIVES` (recommended parameters only).

    Returns
    -------
    list of tuple
    """
    default_tol = MarginSoftmaxClassifier().tol
    variants = [(loss, {}, "") for loss in LOSSES] + [("am-softmax", {"t": 1.2}, "")]
    if alternatives and params_source == "recommended":
        variants += [(loss, params, " (alt.)") for loss, params in ALTERNATIVES.items()]
    models = []
    for tol in (None, 1e-4):
        tol_label = f"{default_tol:g} (default)" if tol is None else f"{tol:g}"
        for loss, extra, suffix in variants:
            params = dict(RECOMMENDED[loss]) if params_source == "recommended" else {}
            params.update(extra)
            if tol is not None:
                params["tol"] = tol
            name = loss + (f" t={extra['t']:g}" if "t" in extra else "") + suffix
            shown = {k: v for k, v in params.items() if k not in ("tol", "t")}
            settings = " ".join(f"{k}={v:g}" for k, v in shown.items()) or "-"
            models.append(
                (
                    name,
                    settings,
                    tol_label,
                    lambda loss=loss, params=params: pipeline(
                        MarginSoftmaxClassifier(loss=loss, **params)
                    ),
                )
            )
    models.append(
        (
            "LogisticRegression",
            "max_iter=1000",
            "0.0001 (default)",
            lambda: pipeline(LogisticRegression(max_iter=1000)),
        )
    )
    models.append(("LinearSVC", "-", "0.0001 (default)", lambda: pipeline(LinearSVC())))
    return models


def run(models, X, y, folds, repeats):
    """Fit every model on every fold; return per-model records."""
    records = {
        name_tol: {"acc": [], "time": [], "n_iter": [], "warnings": set()}
        for name_tol in ((m[0], m[2]) for m in models)
    }
    for train, test in folds:
        best = {key: np.inf for key in records}
        fitted = {}
        for _ in range(repeats):
            for name, _settings, tol_label, factory in models:
                model = factory()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    start = time.perf_counter()
                    model.fit(X[train], y[train])
                    elapsed = time.perf_counter() - start
                key = (name, tol_label)
                records[key]["warnings"].update(w.category.__name__ for w in caught)
                best[key] = min(best[key], elapsed)
                fitted[key] = model
        for key, model in fitted.items():
            rec = records[key]
            rec["time"].append(best[key])
            rec["acc"].append(model.score(X[test], y[test]))
            n_iter = getattr(model[-1], "n_iter_", None)
            if n_iter is not None:
                rec["n_iter"].append(int(np.max(n_iter)))
    return records


def format_table(models, records, args, elapsed, shape):
    """Markdown section with the table."""
    lr_time = statistics.median(
        records["LogisticRegression", "0.0001 (default)"]["time"]
    )
    n_samples, n_features, n_classes = shape
    lines = [
        f"## {args.dataset}: every loss next to LogisticRegression and LinearSVC",
        "",
        f"- date: {now()}",
        f"- machine: {machine()}, BLAS threads limited to {args.blas_threads}, "
        "one process, other jobs sharing the machine",
        f"- command: `{command_line()}`",
        f"- versions: {versions()}",
        f"- protocol: {args.dataset} ({n_samples} x {n_features}, {n_classes} "
        "classes), 5-fold "
        f"`StratifiedKFold(shuffle=True, random_state={args.seed})`, "
        "`Pipeline(StandardScaler(), model)`; hyper-parameters: "
        + (
            "recommended by tune_defaults.py"
            if args.params == "recommended"
            else "the library defaults"
        )
        + f"; fit time = median over the 5 folds of the fastest of {args.repeats} "
        "interleaved repeats; ratio = fit time / LogisticRegression's, same run; "
        "iter = median L-BFGS iterations (all stages)",
        "- other parameters of MarginSoftmaxClassifier: library defaults, "
        f"`{other_defaults()}`",
        f"- runtime of this table: {elapsed:.0f} s",
        "",
        "| model | settings | tol | CV accuracy % (mean ± std) | fit ms | "
        "ratio vs LR | iter | warnings |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, settings, tol_label, _ in models:
        rec = records[name, tol_label]
        fit = statistics.median(rec["time"])
        iters = f"{statistics.median(rec['n_iter']):.0f}" if rec["n_iter"] else "-"
        lines.append(
            f"| {name} | {settings} | {tol_label} | "
            f"{100 * np.mean(rec['acc']):.2f} ± {100 * np.std(rec['acc']):.2f} | "
            f"{1000 * fit:.1f} | {fit / lr_time:.2f} | {iters} | "
            f"{', '.join(sorted(rec['warnings'])) or '-'} |"
        )
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    """Command line of the script."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--params",
        choices=("recommended", "library"),
        default="recommended",
        help="hyper-parameters of our losses (default: recommended)",
    )
    parser.add_argument(
        "--dataset",
        default="digits",
        help="bundled data set (digits, wine, breast_cancer, iris) or NAME.npz in "
        "--data, whose training split is used (default: digits)",
    )
    add_data_argument(parser)
    parser.add_argument("--repeats", type=int, default=3, help="fits per fold (3)")
    parser.add_argument("--seed", type=int, default=0, help="fold seed (0)")
    parser.add_argument(
        "--blas-threads", type=int, default=1, help="BLAS threads (default 1)"
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=REPO / "benchmarks" / "results_defaults.md",
        help="markdown file the table is appended to",
    )
    parser.add_argument(
        "--no-append", action="store_true", help="print only, write nothing"
    )
    parser.add_argument(
        "--no-alternatives",
        action="store_true",
        help="leave out the rows of ALTERNATIVES (non-zero margins)",
    )
    return parser.parse_args(argv)


def main(argv=None):
    """Run the table, print it and append it to the results file."""
    args = parse_args(argv)
    X, y, _ = load_training_split(args.dataset, args.data, sys.maxsize, args.seed)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=args.seed).split(X, y))
    models = build_models(args.params, alternatives=not args.no_alternatives)
    start = time.perf_counter()
    with pinned_blas(args.blas_threads):
        records = run(models, X, y, folds, args.repeats)
    shape = (X.shape[0], X.shape[1], len(np.unique(y)))
    table = format_table(models, records, args, time.perf_counter() - start, shape)
    print(table)
    if not args.no_append:
        with open(args.output, "a", encoding="utf-8") as handle:
            handle.write("\n" + table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
