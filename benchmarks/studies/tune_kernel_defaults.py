"""Choose the defaults of the kernel estimator by measurement.

:class:`sklmargin.KernelMarginSoftmaxClassifier` inherits its ``s``/``m``
defaults from the linear estimator, whose inputs are not on the unit sphere the
way random Fourier features are. This script scores, by 3-fold stratified
cross-validation on the *training split only*,
``Pipeline([StandardScaler(), KernelMarginSoftmaxClassifier(..., random_state=0,
tol=1e-4)])`` over a grid of settings and recommends the defaults with the best
mean rank across data sets.

Data sets
---------
* ``NAME.npz`` in ``--data`` (default ``../shared/data`` relative to the
  repository root; keys ``X_train``, ``y_train``; the test split is never
  loaded). Training splits larger than ``--max-rows`` (default 3000) are
  subsampled, stratified, seed ``--seed``.
* scikit-learn's bundled digits, wine, breast_cancer and iris, whole data as the
  "training split".

Stages
------
1. Cosine losses at ``n_components=1000``, ``kernel_approximation="orf"``:
   ``s`` in :data:`S_GRID` times ``m`` in :data:`M_GRID` for am-softmax and
   arcface, ``s`` only for normface. With ``m=0`` all three losses are the same
   objective (verified: identical coefficients), so the ``m=0`` column is fitted
   once, as normface, and shared by the three tables.
   Then *adaptive rules* for ``s`` at the best (loss, m): ``s`` from the number
   of classes K (AdaCos's fixed scale ``sqrt(2) ln(K - 1)`` times a constant)
   or from the spread of the initial cosines (``c / sigma``, ``sigma`` = mean
   over training rows of the standard deviation across classes of the cosines
   to the imprinted prototypes, computed on each training fold). A rule is
   reported as better only if it beats every fixed ``s`` of the same (loss, m)
   on mean rank.
2. The best cosine setting (best mean rank over all cosine settings) at
   ``n_components`` in :data:`WIDTHS` times ``kernel_approximation`` in
   :data:`APPROXIMATIONS`: accuracy and fit time.
3. l-softmax and a-softmax, ``m`` in :data:`LA_M` times ``lambda_min`` in
   :data:`LA_LAMBDA`, at the width and approximation recommended by stage 2
   (or ``--la-width``), each also over the knob that sets its logit scale:
   ``s`` in :data:`A_SOFTMAX_S` for a-softmax, ``C`` in :data:`L_SOFTMAX_C` for
   l-softmax.

References on the same folds: ``SVC(C=1)``, ``SVC(C=10)`` and
``RBFSampler(gamma="scale", n_components=1000, random_state=0) +
LogisticRegression(C=1, max_iter=1000)``, each after ``StandardScaler``
(``gamma="scale"``, the kernel of SVC and of our estimator: RBFSampler's default
``gamma=1.0`` is far too narrow on standardised data with more than a few
features). Finally, with ``--check``,
scikit-learn's ``check_class_weight_classifiers`` and
``check_class_weight_balanced_classifiers`` (the latter on the imbalanced
``make_classification`` problems of scikit-learn's retired common test, seeds
0-4) are run at the recommended defaults of every loss.

Protocol details
----------------
* One shuffled ``StratifiedKFold(n_splits=3, random_state=seed)`` per data set,
  the same folds for every model.
* Per setting: mean CV accuracy per data set, the mean over data sets and the
  mean rank (per data set among the settings compared, 1 = best, ties averaged,
  a failed fit ranks last). Ties of mean rank go to the smaller ``m``, then the
  smaller ``s``, then the cheaper fit.
* Fit time: mean seconds per fold, summed over data sets, measured in this
  process with BLAS limited to ``--blas-threads`` threads (default 1) and
  ``n_jobs=1``.

Output: a markdown report (``--output``, default
``benchmarks/studies/results_kernel_defaults.md``, overwritten) and optionally the raw
per-fold results as JSON (``--raw``), from which ``--from-raw`` rebuilds the
report without refitting.

Examples
--------
Full run (about 10 minutes on one core)::

    python benchmarks/studies/tune_kernel_defaults.py --check \\
        --la-width 1000 --raw /tmp/kernel_defaults.json

Smoke test::

    python benchmarks/studies/tune_kernel_defaults.py --datasets iris wine \\
        --s-grid 10 30 --m-grid 0 0.1 --widths 1000 --output /tmp/smoke.md
"""

from __future__ import annotations

import sys
from pathlib import Path

# The shared helpers (_common.py) live one folder up, in benchmarks/.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import json
import math
import time
import warnings

import numpy as np
from _common import (
    ALL_DATASETS,
    REPO,
    add_data_argument,
    command_line,
    cv_scores,
    jsonable,
    load_training_split,
    machine,
    now,
    pct,
    pinned_blas,
    rank_columns,
    versions,
)
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import make_classification
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from sklmargin import KernelMarginSoftmaxClassifier, RandomFourierFeatures

COSINE_LOSSES = ("am-softmax", "arcface", "normface")
S_GRID = (10, 20, 30, 50, 64)
M_GRID = (0, 0.05, 0.1, 0.2)
#: Adaptive rules for s: (kind, constant). "adacos": s = c sqrt(2) ln(max(K-1,
#: 2)); "spread": s = clip(c / sigma, *SPREAD_CLIP).
RULES = (
    ("adacos", 5),
    ("adacos", 10),
    ("adacos", 20),
    ("spread", 2),
    ("spread", 4),
    ("spread", 8),
)
SPREAD_CLIP = (5.0, 128.0)
WIDTHS = (500, 1000, 2000)
APPROXIMATIONS = ("orf", "rff", "nystroem")
LA_LOSSES = ("l-softmax", "a-softmax")
LA_M = (1.5, 2)
LA_LAMBDA = (5, 20, 50)
#: The logit-scale knob of each: a-softmax's s (8 is the linear estimator's
#: default, 30 the cosine losses' choice here) and l-softmax's C (the L2 on
#: |w_j| bounds its logits |w_j||x_i|cos).
A_SOFTMAX_S = (8, 30)
L_SOFTMAX_C = (1, 10)
#: Rows of the joint table besides the recommendations and the references.
PREVIOUS_DEFAULT = {
    "loss": "am-softmax",
    "m": 0.1,
    "s": 10,
    "n_components": 1000,
    "kernel_approximation": "orf",
}
BASE = {"n_components": 1000, "kernel_approximation": "orf"}
REFERENCES = ("SVC(C=1)", "SVC(C=10)", "RBFSampler(1000)+LR(C=1)")


# -- models --------------------------------------------------------------------
def label(params):
    """Short, unique text of a setting, e.g. ``am-softmax m=0.1 s=30 1000 orf``."""
    parts = [params["loss"]]
    if "rule" in params:
        if "m" in params:
            parts.append(f"m={params['m']:g}")
        parts.append(f"s={params['rule']}:{params['c']:g}")
    else:
        for key in ("m", "s", "lambda_min", "C"):
            if key in params:
                parts.append(f"{key}={params[key]:g}")
    parts.append(f"{params['n_components']} {params['kernel_approximation']}")
    return " ".join(parts)


def kernel_pipeline(params, tol):
    """``Pipeline([StandardScaler(), KernelMarginSoftmaxClassifier(...)])``."""
    return Pipeline(
        [
            ("scale", StandardScaler()),
            (
                "clf",
                KernelMarginSoftmaxClassifier(**params, random_state=0, tol=tol),
            ),
        ]
    )


def initial_cosine_spread(features, y):
    """Mean over rows of the std across classes of the imprinted cosines.

    The prototypes are the normalised class means of the normalised feature rows
    (the estimator's own start), so this is what the logits ``s cos`` spread
    over at the first iteration.
    """
    Z = features / np.maximum(np.linalg.norm(features, axis=1, keepdims=True), 1e-30)
    classes, y_enc = np.unique(y, return_inverse=True)
    means = np.vstack([Z[y_enc == k].mean(axis=0) for k in range(len(classes))])
    means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-30)
    return float(np.mean(np.std(Z @ means.T, axis=1)))


def rule_scale(rule, c, X, y, n_components, kernel_approximation):
    """The scale ``s`` an adaptive rule gives on the (scaled) training rows."""
    n_classes = len(np.unique(y))
    if rule == "adacos":
        return c * math.sqrt(2.0) * math.log(max(n_classes - 1, 2))
    if kernel_approximation == "nystroem":
        raise ValueError("the spread rule is implemented for orf/rff only")
    # The same map the classifier draws (same parameters, same random_state).
    features = RandomFourierFeatures(
        gamma="scale",
        n_components=n_components,
        orthogonal=kernel_approximation == "orf",
        random_state=0,
    ).fit_transform(X)
    return float(np.clip(c / initial_cosine_spread(features, y), *SPREAD_CLIP))


class AdaptiveScaleClassifier(ClassifierMixin, BaseEstimator):
    """KernelMarginSoftmaxClassifier whose ``s`` a rule sets from the data.

    Benchmark helper: the rule sees only the (already scaled) training rows of
    ``fit``, as a built-in rule would.
    """

    def __init__(
        self,
        rule="adacos",
        c=10.0,
        loss="am-softmax",
        m=0.0,
        n_components=1000,
        kernel_approximation="orf",
        tol=1e-4,
    ):
        self.rule = rule
        self.c = c
        self.loss = loss
        self.m = m
        self.n_components = n_components
        self.kernel_approximation = kernel_approximation
        self.tol = tol

    def fit(self, X, y):
        """Set ``s_rule_`` from the rule, then fit the classifier."""
        self.s_rule_ = rule_scale(
            self.rule, self.c, X, y, self.n_components, self.kernel_approximation
        )
        extra = {} if self.loss == "normface" else {"m": self.m}
        self.estimator_ = KernelMarginSoftmaxClassifier(
            loss=self.loss,
            s=self.s_rule_,
            n_components=self.n_components,
            kernel_approximation=self.kernel_approximation,
            random_state=0,
            tol=self.tol,
            **extra,
        ).fit(X, y)
        self.classes_ = self.estimator_.classes_
        return self

    def predict(self, X):
        """Predict with the fitted classifier."""
        return self.estimator_.predict(X)


def make_model(params, tol):
    """A fresh pipeline for a setting dict (kernel setting, rule or reference)."""
    if "reference" in params:
        name = params["reference"]
        if name == "SVC(C=1)":
            clf = SVC(C=1.0)
        elif name == "SVC(C=10)":
            clf = SVC(C=10.0)
        else:
            return Pipeline(
                [
                    ("scale", StandardScaler()),
                    (
                        "rff",
                        RBFSampler(gamma="scale", n_components=1000, random_state=0),
                    ),
                    ("clf", LogisticRegression(C=1.0, max_iter=1000)),
                ]
            )
        return Pipeline([("scale", StandardScaler()), ("clf", clf)])
    if "rule" in params:
        clf = AdaptiveScaleClassifier(
            rule=params["rule"],
            c=params["c"],
            loss=params["loss"],
            m=params.get("m", 0.0),
            n_components=params["n_components"],
            kernel_approximation=params["kernel_approximation"],
            tol=tol,
        )
        return Pipeline([("scale", StandardScaler()), ("clf", clf)])
    return kernel_pipeline(params, tol)


# -- cross-validation ----------------------------------------------------------
def _inspect_fit(model, record):
    """Record the scale an adaptive rule chose and our estimator's iterations."""
    clf = model[-1]
    if isinstance(clf, AdaptiveScaleClassifier):
        record.setdefault("s_used", []).append(clf.s_rule_)
        clf = clf.estimator_
    if isinstance(clf, KernelMarginSoftmaxClassifier):
        record["n_iter"].append(int(np.max(clf.n_iter_)))


def setting_scores(params, X, y, folds, tol):
    """:func:`_common.cv_scores` of one setting, with ``s_used`` recorded."""
    record = cv_scores(lambda: make_model(params, tol), X, y, folds, _inspect_fit)
    record.setdefault("s_used", [])
    return record


class Runner:
    """Holds the data, the folds and every result; evaluates settings lazily."""

    def __init__(self, datasets, args, log):
        self.args = args
        self.log = log
        self.data, self.info, self.results = {}, {}, {}
        for name in datasets:
            X, y, n_original = load_training_split(
                name, args.data, args.max_rows, args.seed
            )
            folds = list(
                StratifiedKFold(n_splits=3, shuffle=True, random_state=args.seed).split(
                    X, y
                )
            )
            self.data[name] = (X, y, folds)
            self.info[name] = {
                "n_samples": X.shape[0],
                "n_features": X.shape[1],
                "n_classes": int(len(np.unique(y))),
                "n_original": n_original,
            }
            self.results[name] = {}
        self.params = {}  # label -> params
        self.checkpoint = None  # called after every data set of a stage
        if args.resume:
            stored = json.loads(args.resume.read_text())
            old = stored["meta"]
            same = all(old[k] == getattr(args, k) for k in ("max_rows", "seed", "tol"))
            if not same:
                raise ValueError(f"{args.resume} used other max_rows/seed/tol")
            self.params.update(stored["state"]["params"])
            for name in datasets:
                self.results[name].update(stored["state"]["results"].get(name, {}))

    def evaluate(self, settings, stage):
        """Evaluate every setting (dicts) on every data set, skipping known ones."""
        start = time.perf_counter()
        todo = []
        for params in settings:
            key = params.get("reference") or label(params)
            self.params.setdefault(key, params)
            todo.append(key)
        for name, (X, y, folds) in self.data.items():
            t0 = time.perf_counter()
            for key in todo:
                if key not in self.results[name]:
                    self.results[name][key] = setting_scores(
                        self.params[key], X, y, folds, self.args.tol
                    )
            self.log(f"  {stage}: {name} {time.perf_counter() - t0:.1f}s")
            if self.checkpoint is not None:
                self.checkpoint()
        self.log(f"{stage}: {len(todo)} settings, {time.perf_counter() - start:.0f}s")
        return todo


# -- analysis ------------------------------------------------------------------
def summarise(keys, results, datasets, params=None):
    """Mean accuracy, mean rank and fit time of a set of settings.

    Returns
    -------
    list of dict
        One per key, in the order given: ``key``, ``acc`` (per data set),
        ``mean``, ``mean_rank``, ``fit_time`` (mean seconds per fold, summed over
        data sets), ``warnings``, ``warning_kinds``, ``errors``, ``max_iter``,
        ``s_used`` (adaptive rules: per data set, mean over folds).
    """
    acc = np.array(
        [[np.mean(results[name][key]["acc"]) for name in datasets] for key in keys]
    )
    ranks = rank_columns(acc)
    rows = []
    for i, key in enumerate(keys):
        records = [results[name][key] for name in datasets]
        rows.append(
            {
                "key": key,
                "params": (params or {}).get(key, {}),
                "acc": acc[i],
                "mean": float(np.mean(acc[i])),
                "mean_rank": float(np.mean(ranks[i])),
                "fit_time": float(sum(np.mean(r["fit_time"]) for r in records)),
                "warnings": sum(r["warnings"] for r in records),
                "warning_kinds": sorted(
                    {kind for r in records for kind in r["warning_kinds"]}
                ),
                "errors": sorted({e for r in records for e in r["errors"]}),
                "max_iter": max(
                    (max(r["n_iter"]) for r in records if r["n_iter"]), default=0
                ),
                "s_used": [
                    float(np.mean(r["s_used"])) if r.get("s_used") else math.nan
                    for r in records
                ],
            }
        )
    return rows


def best_row(rows):
    """Best mean rank; ties to smaller m, then smaller s, then faster fit."""

    def tie_key(row):
        p = row["params"]
        return (
            round(row["mean_rank"], 9),
            p.get("m", 0.0),
            p.get("s", 0.0),
            row["fit_time"],
        )

    return min(rows, key=tie_key)


def table(rows, datasets, title_col="setting", marks=None, extra=None):
    """Markdown table of summarised rows, sorted by mean rank."""
    marks = marks or {}
    extra = extra or {}
    extra_cols = list(next(iter(extra.values())).keys()) if extra else []
    head = (
        f"| {title_col} | "
        + " | ".join(datasets)
        + " | mean | mean rank | fit s | max it | warn |"
        + "".join(f" {c} |" for c in extra_cols)
    )
    lines = [head, "|---" * (len(datasets) + 6 + len(extra_cols)) + "|"]
    for row in sorted(rows, key=lambda r: (r["mean_rank"], -r["mean"])):
        name = marks.get(row["key"], row["key"])
        warn = str(row["warnings"])
        if row["errors"]:
            warn += f", {len(row['errors'])} errors"
        cells = "".join(f" {v} |" for v in extra.get(row["key"], {}).values())
        lines.append(
            f"| {name} | "
            + " | ".join(pct(a) for a in row["acc"])
            + f" | {pct(row['mean'])} | {row['mean_rank']:.2f} "
            f"| {row['fit_time']:.1f} | {row['max_iter']} | {warn} |{cells}"
        )
    return lines


def reference_lines(results, datasets):
    """Rows of the reference models (accuracy and fit time)."""
    lines = []
    for ref in REFERENCES:
        acc = [np.mean(results[name][ref]["acc"]) for name in datasets]
        fit = sum(np.mean(results[name][ref]["fit_time"]) for name in datasets)
        lines.append(
            f"| _{ref}_ | "
            + " | ".join(pct(a) for a in acc)
            + f" | {pct(np.mean(acc))} | | {fit:.1f} | | |"
        )
    return lines


def versus(row, results, datasets):
    """Mean difference (points) and wins of a setting against each reference."""
    parts = []
    for ref in REFERENCES:
        ref_acc = np.array([np.mean(results[name][ref]["acc"]) for name in datasets])
        diff = 100 * (row["acc"] - ref_acc)
        wins = int(np.sum(row["acc"] >= ref_acc - 1e-12))
        parts.append(f"{ref}: {np.nanmean(diff):+.2f} pts, {wins}/{len(datasets)}")
    return "; ".join(parts)


# -- class-weight checks --------------------------------------------------------
def class_weight_checks(estimator, n_seeds=5):
    """Run scikit-learn's two class-weight checks on one estimator.

    Parameters
    ----------
    estimator : classifier
        Unfitted; the checks clone it and set ``class_weight``.
    n_seeds : int
        Seeds of the imbalanced problems for the balanced check.

    Returns
    -------
    dict
        ``check_class_weight_classifiers``: "pass" or the error;
        ``check_class_weight_balanced_classifiers``: passes out of the cases
        (n_classes 2 and 3 times ``n_seeds`` seeds of the imbalanced
        ``make_classification`` problem) and, separately, the seed-0 result.
    """
    from sklearn.utils.estimator_checks import (
        check_class_weight_balanced_classifiers,
        check_class_weight_classifiers,
    )

    name = type(estimator).__name__
    out = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_class_weight_classifiers(name, clone(estimator))
        out["check_class_weight_classifiers"] = "pass"
    except Exception as exc:
        out["check_class_weight_classifiers"] = f"FAIL ({type(exc).__name__}: {exc})"
    passed, total, seed0 = 0, 0, []
    for seed in range(n_seeds):
        for n_classes, weights in ((2, [0.8, 0.2]), (3, [0.8, 0.1, 0.1])):
            X, y = make_classification(
                n_classes=n_classes,
                n_samples=200,
                n_features=10,
                weights=weights,
                random_state=seed,
                n_informative=n_classes,
            )
            X = StandardScaler().fit_transform(X)
            X_train, X_test, y_train, y_test = train_test_split(
                X, y, test_size=0.5, random_state=0
            )
            total += 1
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    check_class_weight_balanced_classifiers(
                        name,
                        clone(estimator),
                        X_train,
                        y_train,
                        X_test,
                        y_test,
                        weights,
                    )
                passed += 1
                ok = True
            except AssertionError:
                ok = False
            if seed == 0:
                seed0.append(f"{n_classes} classes {'pass' if ok else 'FAIL'}")
    out["check_class_weight_balanced_classifiers"] = (
        f"{passed}/{total} cases (seed 0: {', '.join(seed0)})"
    )
    return out


# -- the run -------------------------------------------------------------------
def cosine_grid(s_grid, m_grid, n_components, approximation):
    """Unique stage-1 settings: normface over s (= m 0), margins over m > 0."""
    common = {"n_components": n_components, "kernel_approximation": approximation}
    grid = [{"loss": "normface", "s": s, **common} for s in s_grid]
    for loss in ("am-softmax", "arcface"):
        grid += [
            {"loss": loss, "m": m, "s": s, **common}
            for m in m_grid
            if m > 0
            for s in s_grid
        ]
    return grid


def loss_keys(loss, grid):
    """Keys of one loss's stage-1 table (m=0 shared with normface)."""
    keys = []
    for p in grid:
        if p["loss"] == loss or (p["loss"] == "normface" and loss != "normface"):
            keys.append(label(p))
    return keys


def with_setting(params, **changes):
    """Copy of a setting with some keys replaced."""
    new = dict(params)
    new.update(changes)
    return new


def run(args, log, save=None):
    """Run every stage; return the state needed by the report.

    ``save(partial_state)``, if given, is called after every data set of every
    stage (checkpoint for ``--resume``).
    """
    runner = Runner(args.datasets, args, log)
    if save is not None:
        runner.checkpoint = lambda: save(
            {"info": runner.info, "results": runner.results, "params": runner.params}
        )
    datasets = args.datasets
    runner.evaluate([{"reference": r} for r in REFERENCES], "references")

    grid = cosine_grid(args.s_grid, args.m_grid, 1000, "orf")
    runner.evaluate(grid, "stage 1 (cosine grid)")
    all_rows = summarise(
        [label(p) for p in grid], runner.results, datasets, runner.params
    )
    best = best_row(all_rows)["params"]
    log(f"best cosine setting: {label(best)}")

    rule_settings = []
    if not args.no_rules:
        for rule, c in RULES:
            p = {"loss": best["loss"], "rule": rule, "c": c, **BASE}
            if best["loss"] != "normface":
                p["m"] = best["m"]
            rule_settings.append(p)
        runner.evaluate(rule_settings, "adaptive s rules")

    width_settings = [
        with_setting(best, n_components=w, kernel_approximation=a)
        for w in args.widths
        for a in args.approximations
    ]
    runner.evaluate(width_settings, "stage 2 (width x approximation)")
    width_rows = summarise(
        [label(p) for p in width_settings], runner.results, datasets, runner.params
    )
    rec_width = min(width_rows, key=lambda r: (round(r["mean_rank"], 9), r["fit_time"]))
    rec_common = {
        "n_components": rec_width["params"]["n_components"],
        "kernel_approximation": rec_width["params"]["kernel_approximation"],
    }
    if args.la_width is not None:
        rec_common = {
            "n_components": args.la_width,
            "kernel_approximation": args.la_approximation,
        }
    log(f"width for stage 3: {rec_common}")

    knob = {"a-softmax": ("s", args.a_softmax_s), "l-softmax": ("C", args.l_softmax_C)}
    la_settings = [
        {"loss": loss, "m": m, "lambda_min": lam, knob[loss][0]: value, **rec_common}
        for loss in args.la_losses
        for value in knob[loss][1]
        for m in LA_M
        for lam in LA_LAMBDA
    ]
    runner.evaluate(la_settings, "stage 3 (l-/a-softmax)")

    checks = {}
    if args.check:
        # The recommended defaults of every loss: best (s, m) of its stage-1
        # table, at the stage-2 width; best (m, lambda_min) of stage 3.
        for loss in COSINE_LOSSES:
            rows = summarise(
                loss_keys(loss, grid), runner.results, datasets, runner.params
            )
            pick = best_row(rows)["params"]
            params = {"loss": loss, "s": pick["s"], **rec_common}
            if loss != "normface":
                params["m"] = pick.get("m", 0.0)
            checks[label(params)] = class_weight_checks(
                KernelMarginSoftmaxClassifier(**params, random_state=0)
            )
        for loss in args.la_losses:
            keys = [label(p) for p in la_settings if p["loss"] == loss]
            rows = summarise(keys, runner.results, datasets, runner.params)
            checks[best_row(rows)["key"]] = class_weight_checks(
                KernelMarginSoftmaxClassifier(
                    **best_row(rows)["params"], random_state=0
                )
            )
        # The alternatives of stage 2 (best cosine setting at other widths).
        for params in width_settings:
            if label(params) not in checks:
                checks[label(params)] = class_weight_checks(
                    KernelMarginSoftmaxClassifier(**params, random_state=0)
                )
        # Calibration: how often do established classifiers pass the same cases?
        checks["_SVC() (calibration)_"] = class_weight_checks(SVC())
        checks["_LogisticRegression() (calibration)_"] = class_weight_checks(
            LogisticRegression()
        )
        for key, value in checks.items():
            log(f"checks {key}: {value}")
    return {
        "info": runner.info,
        "results": runner.results,
        "params": runner.params,
        "grid": grid,
        "rules": rule_settings,
        "widths": width_settings,
        "la": la_settings,
        "checks": checks,
    }


# -- report --------------------------------------------------------------------
def format_report(state, datasets, meta):
    """The markdown report of a finished run (see :func:`run`)."""
    results, params, info = state["results"], state["params"], state["info"]
    grid = state["grid"]
    lines = [
        "# Defaults of KernelMarginSoftmaxClassifier, chosen by measurement",
        "",
        f"- date: {meta['date']}",
        f"- machine: {meta['machine']}; 2 cores, one BLAS thread "
        f"(`threadpool_limits({meta['blas_threads']})`), n_jobs=1, another job "
        "running on the other core",
        f"- command: `{meta['command']}`",
    ]
    if "report_command" in meta:
        lines.append(f"- report rebuilt from raw results: `{meta['report_command']}`")
    lines += [
        f"- versions: {meta['versions']}",
        "- protocol: one shuffled `StratifiedKFold(n_splits=3, shuffle=True, "
        f"random_state={meta['seed']})` per data set on the training split only, "
        "the same folds for every model; `Pipeline(StandardScaler(), "
        "KernelMarginSoftmaxClassifier(..., random_state=0, "
        f"tol={meta['tol']:g}))`, other parameters at their defaults "
        "(gamma='scale', fit_intercept=True, max_iter=1000); training splits "
        f"above {meta['max_rows']} rows subsampled (stratified, seed "
        f"{meta['seed']}), bundled data sets whole.",
        "- rank: per data set among the settings of the table (1 = best, ties "
        "averaged, failed fits last); tables sorted by mean rank. fit s = mean "
        "fit seconds per fold summed over the data sets; max it = most L-BFGS "
        "iterations of one fit; warn = warnings over all fits.",
        "- with m=0, am-softmax, arcface and normface are the same objective "
        "(identical coefficients, checked): the m=0 settings were fitted once "
        "(as normface) and appear in all three tables.",
        f"- total runtime: {meta['elapsed'] / 60:.1f} min"
        + (
            f" (results reused from {meta['resumed_from']} not included)"
            if "resumed_from" in meta
            else ""
        ),
        "",
        "## Data sets and references (CV accuracy %, same folds)",
        "",
        "| data set | rows used (of) | features | classes | "
        + " | ".join(REFERENCES)
        + " |",
        "|---" * (4 + len(REFERENCES)) + "|",
    ]
    ref_acc = {
        ref: [np.mean(results[name][ref]["acc"]) for name in datasets]
        for ref in REFERENCES
    }
    for j, name in enumerate(datasets):
        d = info[name]
        lines.append(
            f"| {name} | {d['n_samples']} ({d['n_original']}) | {d['n_features']} "
            f"| {d['n_classes']} | "
            + " | ".join(pct(ref_acc[r][j]) for r in REFERENCES)
            + " |"
        )
    lines.append(
        "| **mean** | | | | "
        + " | ".join(pct(np.mean(ref_acc[r])) for r in REFERENCES)
        + " |"
    )
    ref_time = {
        ref: sum(np.mean(results[name][ref]["fit_time"]) for name in datasets)
        for ref in REFERENCES
    }
    lines.append(
        "| fit s (summed) | | | | "
        + " | ".join(f"{ref_time[r]:.1f}" for r in REFERENCES)
        + " |"
    )

    # Stage 1: all cosine settings together, then one table per loss.
    all_keys = [label(p) for p in grid]
    all_rows = summarise(all_keys, results, datasets, params)
    best = best_row(all_rows)
    recs = {}
    for loss in COSINE_LOSSES:
        rows = summarise(loss_keys(loss, grid), results, datasets, params)
        recs[loss] = best_row(rows)
    lines += [
        "",
        "## Stage 1: cosine losses at n_components=1000, orf",
        "",
        f"Best over all {len(all_rows)} distinct cosine settings (one ranking): "
        f"**{best['key']}**, mean {pct(best['mean'])} %, mean rank "
        f"{best['mean_rank']:.2f}. Versus the references: "
        f"{versus(best, results, datasets)}.",
        "",
        "Best per loss (ranked within the loss's own table):",
        "",
        "| loss | recommended | mean CV % | mean rank | vs references |",
        "|---|---|---|---|---|",
    ]
    for loss, row in recs.items():
        lines.append(
            f"| {loss} | {row['key']} | {pct(row['mean'])} | "
            f"{row['mean_rank']:.2f} | {versus(row, results, datasets)} |"
        )
    lines += [
        "",
        "### All distinct cosine settings, one ranking",
        "",
    ]
    lines += table(all_rows, datasets)
    lines += reference_lines(results, datasets)
    for loss in COSINE_LOSSES:
        rows = summarise(loss_keys(loss, grid), results, datasets, params)
        lines += ["", f"### {loss} (ranks within this table)", ""]
        marks = {}
        if loss != "normface":
            for r in rows:
                if r["params"]["loss"] == "normface":
                    marks[r["key"]] = (
                        r["key"].replace("normface", f"{loss} m=0", 1) + " (= normface)"
                    )
        rec_key = recs[loss]["key"]
        marks[rec_key] = f"**{marks.get(rec_key, rec_key)}**"
        lines += table(rows, datasets, marks=marks)

    # Fixed s versus adaptive rules at the best (loss, m).
    if state["rules"]:
        bp = best["params"]
        fixed = [
            p
            for p in grid
            if (
                p["loss"] == bp["loss"]
                and p.get("m", 0) == bp.get("m", 0)
                or bp.get("m", 0) == 0
                and p["loss"] == "normface"
            )
        ]
        keys = [label(p) for p in fixed] + [label(p) for p in state["rules"]]
        rows = summarise(keys, results, datasets, params)
        winner = min(rows, key=lambda r: r["mean_rank"])
        best_fixed = min(
            (r for r in rows if "rule" not in r["params"]),
            key=lambda r: r["mean_rank"],
        )
        best_rule = min(
            (r for r in rows if "rule" in r["params"]), key=lambda r: r["mean_rank"]
        )
        extra = {}
        for r in rows:
            if "rule" in r["params"]:
                extra[r["key"]] = {
                    "s used (per data set)": " ".join(f"{s:.0f}" for s in r["s_used"])
                }
            else:
                extra[r["key"]] = {"s used (per data set)": ""}
        verdict = (
            f"the rule **{best_rule['key']}** beats every fixed s on mean rank "
            f"({best_rule['mean_rank']:.2f} vs {best_fixed['mean_rank']:.2f})"
            if best_rule["mean_rank"] < best_fixed["mean_rank"] - 1e-9
            else f"a fixed s wins: {best_fixed['key']} (mean rank "
            f"{best_fixed['mean_rank']:.2f}, mean {pct(best_fixed['mean'])} %) vs "
            f"the best rule {best_rule['key']} ({best_rule['mean_rank']:.2f}, "
            f"{pct(best_rule['mean'])} %)"
        )
        lines += [
            "",
            f"## Adaptive s versus fixed s (loss and m of {best['key']})",
            "",
            "Rules: adacos:c is s = c * sqrt(2) * ln(max(K - 1, 2)) (K classes; "
            "AdaCos's fixed scale times c); spread:c is s = c / sigma clipped to "
            f"{list(SPREAD_CLIP)}, sigma = mean over training rows of the std "
            "across classes of the cosines to the imprinted prototypes (the "
            "normalised class means), computed on each training fold. The s used "
            "is the mean over the three folds.",
            "",
            f"Verdict: {verdict}. Lowest mean rank in this table: {winner['key']}.",
            "",
        ]
        lines += table(rows, datasets, extra=extra)

    # Stage 2.
    width_rows = summarise(
        [label(p) for p in state["widths"]], results, datasets, params
    )
    rec_width = min(width_rows, key=lambda r: (round(r["mean_rank"], 9), r["fit_time"]))
    lines += [
        "",
        "## Stage 2: width and approximation (best cosine setting)",
        "",
        f"Best mean rank: **{rec_width['key']}** (mean {pct(rec_width['mean'])} %, "
        f"rank {rec_width['mean_rank']:.2f}, fit {rec_width['fit_time']:.1f} s). "
        f"Versus the references: {versus(rec_width, results, datasets)}.",
        "",
    ]
    lines += table(width_rows, datasets)
    lines += reference_lines(results, datasets)

    # Stage 3.
    la_best = {}
    if state["la"]:
        lines += [
            "",
            "## Stage 3: l-softmax and a-softmax",
            "",
            "Besides m and lambda_min, the knob that sets their logit scale: s "
            "for a-softmax (logits s |x| psi, |x| ~ 1 on random features), C for "
            "l-softmax (logits |w||x| psi, |w| held by the L2 penalty 1/C).",
            "",
        ]
        for loss in sorted({p["loss"] for p in state["la"]}):
            keys = [label(p) for p in state["la"] if p["loss"] == loss]
            rows = summarise(keys, results, datasets, params)
            rec = la_best[loss] = best_row(rows)
            lines += [
                f"### {loss}",
                "",
                f"Best: **{rec['key']}** (mean {pct(rec['mean'])} %, rank "
                f"{rec['mean_rank']:.2f}). Versus the references: "
                f"{versus(rec, results, datasets)}.",
                "",
            ]
            lines += table(rows, datasets)
            lines += reference_lines(results, datasets)
            lines.append("")

    # One joint ranking: recommendations, alternatives, references.
    joint = {}

    def add_role(key, role):
        if role not in joint.setdefault(key, []):
            joint[key].append(role)

    for loss in COSINE_LOSSES:
        add_role(recs[loss]["key"], f"best {loss} (stage 1)")
    for row in width_rows:
        add_role(row["key"], "stage 2")
    for loss, row in la_best.items():
        add_role(row["key"], f"best {loss}")
    previous = label(PREVIOUS_DEFAULT)
    if previous in params:
        add_role(previous, "previous default (linear's am-softmax)")
    for ref in REFERENCES:
        add_role(ref, "reference")
    joint = {key: ", ".join(roles) for key, roles in joint.items()}
    rows = summarise(list(joint), results, datasets, params)
    lines += [
        "",
        "## Recommendations, alternatives and references in one ranking",
        "",
        "Ranks per data set among all rows of this table.",
        "",
    ]
    lines += table(rows, datasets, extra={k: {"role": v} for k, v in joint.items()})

    if state["checks"]:
        lines += [
            "",
            "## Class-weight checks at the recommended defaults and alternatives",
            "",
            "check_class_weight_balanced_classifiers needs data: the imbalanced "
            "`make_classification(n_classes, n_samples=200, n_features=10, "
            "weights=[.8, .2] or [.8, .1, .1], n_informative=n_classes)` problems "
            "of scikit-learn's retired common test, StandardScaler, 50 % test "
            "split; seeds 0-4.",
            "",
            "| setting | check_class_weight_classifiers | "
            "check_class_weight_balanced_classifiers |",
            "|---|---|---|",
        ]
        for key, value in state["checks"].items():
            lines.append(
                f"| {key} | {value['check_class_weight_classifiers']} | "
                f"{value['check_class_weight_balanced_classifiers']} |"
            )

    messages = set()
    for name in datasets:
        for key, record in results[name].items():
            for kind in record["warning_kinds"]:
                messages.add(f"{kind}: {key}")
            for err in record["errors"]:
                messages.add(f"{key}: {err[:200]}")
    if messages:
        lines += ["", "## Warnings and errors (setting that raised them)", ""]
        lines += [f"- {m}" for m in sorted(messages)]
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    """Command line of the script."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--datasets",
        nargs="+",
        default=list(ALL_DATASETS),
        choices=ALL_DATASETS,
        metavar="NAME",
        help=f"data sets (default: all of {', '.join(ALL_DATASETS)})",
    )
    add_data_argument(parser)
    parser.add_argument(
        "--max-rows",
        type=int,
        default=3000,
        help="subsample larger training splits to this many rows (default 3000)",
    )
    parser.add_argument("--seed", type=int, default=0, help="subsample/fold seed")
    parser.add_argument("--tol", type=float, default=1e-4, help="tol (1e-4)")
    parser.add_argument(
        "--s-grid", type=float, nargs="+", default=list(S_GRID), help="stage-1 s"
    )
    parser.add_argument(
        "--m-grid", type=float, nargs="+", default=list(M_GRID), help="stage-1 m"
    )
    parser.add_argument("--no-rules", action="store_true", help="skip adaptive s")
    parser.add_argument(
        "--widths", type=int, nargs="+", default=list(WIDTHS), help="stage-2 widths"
    )
    parser.add_argument(
        "--approximations",
        nargs="+",
        default=list(APPROXIMATIONS),
        choices=APPROXIMATIONS,
        help="stage-2 kernel approximations",
    )
    parser.add_argument(
        "--la-losses",
        nargs="*",
        default=list(LA_LOSSES),
        choices=LA_LOSSES,
        help="stage-3 losses (none to skip)",
    )
    parser.add_argument(
        "--a-softmax-s",
        type=float,
        nargs="+",
        default=list(A_SOFTMAX_S),
        help="stage-3 s of a-softmax",
    )
    parser.add_argument(
        "--l-softmax-C",
        type=float,
        nargs="+",
        default=list(L_SOFTMAX_C),
        help="stage-3 C of l-softmax",
    )
    parser.add_argument(
        "--la-width",
        type=int,
        help="stage-3 width (default: the best mean rank of stage 2)",
    )
    parser.add_argument(
        "--la-approximation",
        default="orf",
        choices=APPROXIMATIONS,
        help="stage-3 kernel approximation when --la-width is given (orf)",
    )
    parser.add_argument(
        "--resume",
        type=Path,
        metavar="JSON",
        help="reuse the results of a --raw file (same max_rows, seed and tol)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="run the class-weight checks at the recommended defaults",
    )
    parser.add_argument(
        "--blas-threads", type=int, default=1, help="BLAS threads (default 1)"
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=REPO / "benchmarks" / "studies" / "results_kernel_defaults.md",
        help="markdown report, overwritten",
    )
    parser.add_argument("--raw", type=Path, help="also write raw results as JSON")
    parser.add_argument(
        "--from-raw",
        type=Path,
        metavar="JSON",
        help="rebuild the report from a --raw file instead of running",
    )
    return parser.parse_args(argv)


def main(argv=None):
    """Run (or reload) the benchmark and write the report."""
    args = parse_args(argv)
    command = command_line()
    start = time.perf_counter()

    def log(message):
        print(f"[{time.perf_counter() - start:7.1f}s] {message}", flush=True)

    if args.from_raw:
        stored = json.loads(args.from_raw.read_text())
        meta, state = stored["meta"], stored["state"]
        meta["report_command"] = command
        for res in state["results"].values():
            for record in res.values():
                record.setdefault("s_used", [])
    else:
        meta = {
            "date": now(),
            "machine": machine(),
            "blas_threads": args.blas_threads,
            "command": command,
            "versions": versions(),
            "seed": args.seed,
            "tol": args.tol,
            "max_rows": args.max_rows,
            "datasets": args.datasets,
        }
        if args.resume:
            meta["resumed_from"] = str(args.resume)

        def save(state):
            meta["elapsed"] = time.perf_counter() - start
            if args.raw:
                args.raw.write_text(
                    json.dumps(jsonable({"meta": meta, "state": state}))
                )

        with pinned_blas(args.blas_threads):
            state = run(args, log, save)
        save(state)
    report = format_report(state, meta["datasets"], meta)
    args.output.write_text(report)
    log(f"wrote {args.output}")


if __name__ == "__main__":
    main()
