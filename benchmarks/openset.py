"""Issue 20: open-set recognition on the shared data sets, against the usual baselines.

Protocol. For each data set and each of ``--splits`` seeds, a random
``round(0.6 K)`` of the K classes are *known*: every model is fitted on the
training rows of the known classes only (in ``Pipeline(StandardScaler(),
model)``) and scores every test row; the test rows of the other classes are the
*unknown* ones. Reported, as means over the seeds:

* AUROC of known (positive) against unknown test rows;
* FPR at 95% TPR: the share of unknown rows accepted at the threshold that
  accepts 95% of the known ones;
* OSCR (Dhamija et al. 2018): area under the curve of the correct
  classification rate of known rows (correct *and* accepted) against the false
  positive rate of unknown rows; at most the closed-set accuracy;
* closed-set accuracy on the known test rows;
* fit seconds.

Scores: ``score_samples`` for sklmargin's estimators, the maximum softmax
probability (Hendrycks and Gimpel 2017) for the classifier baselines, and
``score_samples`` of IsolationForest / OneClassSVM fitted on the known rows as
the reject rule (their OSCR uses the kernel default's labels). The kernel
default is also scored by each part of its score and by the other candidates
(rows "kernel default: ..."). ``OpenSetClassifier(kernel default,
target_rejection=0.05)`` is fitted too: its share of rejected known and unknown
test rows. A data set of two classes (a9a) has one known class, nothing to
classify: only the OpenSetClassifier's rejection of known rows is measured
there, with both classes known.

Usage::

    python benchmarks/openset.py --data ../shared/data --splits 5
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from _common import (
    NPZ_DATASETS,
    add_data_argument,
    blas_line,
    class_logits,
    load_split,
    machine,
    now,
    pinned_blas,
    versions,
)
from scipy.special import logsumexp
from sklearn.ensemble import HistGradientBoostingClassifier, IsolationForest
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, OneClassSVM

from sklmargin import (
    KernelMarginSoftmaxClassifier,
    MarginSoftmaxClassifier,
    OpenSetClassifier,
)
from sklmargin.openset._scores import (
    log_max_probability,
    open_set_temperature,
)

KNOWN_SHARE = 0.6
DEFAULT = "kernel am-softmax (default)"


# -- metrics -----------------------------------------------------------------------
def fpr_at_95_tpr(known_scores, unknown_scores):
    """Share of unknown rows scoring at least the known rows' 5% quantile."""
    threshold = np.quantile(known_scores, 0.05, method="inverted_cdf")
    return float(np.mean(unknown_scores >= threshold))


def oscr(known_scores, known_correct, unknown_scores):
    r"""Open-set classification rate curve's area (Dhamija et al. 2018).

    For every threshold :math:`\theta`: CCR = share of known rows classified
    correctly with score :math:`\ge \theta`, FPR = share of unknown rows with
    score :math:`\ge \theta`; the area under CCR(FPR) by trapezoids, tied scores
    entering together.
    """
    scores = np.concatenate([known_scores, unknown_scores])
    correct = np.concatenate([known_correct, np.zeros(len(unknown_scores), bool)])
    unknown = np.concatenate(
        [np.zeros(len(known_scores), bool), np.ones(len(unknown_scores), bool)]
    )
    order = np.argsort(-scores, kind="stable")
    ccr = np.cumsum(correct[order]) / len(known_scores)
    fpr = np.cumsum(unknown[order]) / len(unknown_scores)
    # Keep the last point of each run of tied scores.
    last = np.r_[np.diff(scores[order]) != 0, True]
    ccr, fpr = np.r_[0.0, ccr[last]], np.r_[0.0, fpr[last]]
    return float(np.sum(np.diff(fpr) * (ccr[1:] + ccr[:-1]) / 2.0))


# -- models ------------------------------------------------------------------------
def _subsample(X, y, max_rows, seed):
    if len(y) <= max_rows:
        return X, y
    X, _, y, _ = train_test_split(
        X, y, train_size=max_rows, stratify=y, random_state=seed
    )
    return X, y


def classifier_models(seed, svm_max_rows):
    """``name -> fit(X, y) -> (predict, score)``: each model's labels and score."""

    def ours(estimator):
        def fit(X, y):
            model = make_pipeline(StandardScaler(), estimator).fit(X, y)
            return model.predict, model.score_samples

        return fit

    def msp(estimator, max_rows=None):
        def fit(X, y):
            if max_rows is not None:
                X, y = _subsample(X, y, max_rows, seed)
            model = make_pipeline(StandardScaler(), estimator).fit(X, y)
            return model.predict, lambda Z: model.predict_proba(Z).max(axis=1)

        return fit

    kernel = dict(metric=None, random_state=seed)  # as results_openset.md measured
    return {
        "kernel normface": ours(KernelMarginSoftmaxClassifier("normface", **kernel)),
        "kernel arcface": ours(KernelMarginSoftmaxClassifier("arcface", **kernel)),
        "kernel softmax": ours(KernelMarginSoftmaxClassifier("softmax", **kernel)),
        "linear am-softmax (default)": ours(MarginSoftmaxClassifier()),
        "linear normface": ours(MarginSoftmaxClassifier("normface")),
        "linear softmax": ours(MarginSoftmaxClassifier("softmax")),
        "LogisticRegression MSP": msp(LogisticRegression(max_iter=1000)),
        "Nystroem(1000)+LR MSP": msp(
            make_pipeline(
                Nystroem(n_components=1000, random_state=seed),
                LogisticRegression(max_iter=1000),
            )
        ),
        "SVC(C=10) Platt MSP": msp(
            SVC(C=10, probability=True, random_state=seed), svm_max_rows
        ),
        "HistGradientBoosting MSP": msp(
            HistGradientBoostingClassifier(random_state=seed)
        ),
    }


def detector_models(seed, svm_max_rows):
    """``name -> fit(X) -> score``: reject rules that know no classes."""

    def detector(estimator, max_rows=None):
        def fit(X, y):
            if max_rows is not None:
                X, y = _subsample(X, y, max_rows, seed)
            return make_pipeline(StandardScaler(), estimator).fit(X).score_samples

        return fit

    return {
        "IsolationForest": detector(IsolationForest(random_state=seed)),
        "OneClassSVM": detector(OneClassSVM(), svm_max_rows),
    }


def default_variants(pipeline, X):
    """The kernel default scored by each part of its score and other candidates."""
    scaler, clf = pipeline[0], pipeline[-1]
    rows = scaler.transform(X)
    logits = class_logits(clf, rows).astype(np.float64)  # n x K, also for 2 classes
    mapped = clf.feature_map_.transform(rows).astype(np.float64)
    return {
        "kernel default: MSP (T=1)": clf.predict_proba(rows).max(axis=1),
        "kernel default: log max prob at s/T=30": log_max_probability(
            logits, open_set_temperature(clf.s_)
        ),
        "kernel default: nearest centre only": (
            clf.feature_map_.nearest_centre_log_similarity(rows)
        ),
        "kernel default: Nystroem norm log(z.z)": np.log(
            np.maximum(np.einsum("ij,ij->i", mapped, mapped), 1e-300)
        ),
        "kernel default: energy": logsumexp(logits, axis=1),
        "kernel default: max logit": logits.max(axis=1),
    }


# -- one split ---------------------------------------------------------------------
def _record(results, name, y_known, pred, score, known, fit_seconds):
    known_scores, unknown_scores = score[known], score[~known]
    correct = pred[known] == y_known
    entry = results.setdefault(name, {k: [] for k in METRICS})
    entry["auroc"].append(roc_auc_score(known, score))
    entry["fpr95"].append(fpr_at_95_tpr(known_scores, unknown_scores))
    entry["oscr"].append(oscr(known_scores, correct, unknown_scores))
    entry["accuracy"].append(float(np.mean(correct)))
    entry["fit_s"].append(fit_seconds)


METRICS = ("auroc", "fpr95", "oscr", "accuracy", "fit_s")


def run_split(X_train, y_train, X_test, y_test, known_classes, seed, svm_max_rows):
    """Every model on one known/unknown split; returns metrics and rejection."""
    train = np.isin(y_train, known_classes)
    known = np.isin(y_test, known_classes)
    X, y, y_known = X_train[train], y_train[train], y_test[known]
    results = {}

    start = time.perf_counter()
    # metric=None: the model results_openset.md measured (before the learned
    # metric became the kernel default; benchmarks/openset_metric.py compares
    # the two).
    open_set = make_pipeline(
        StandardScaler(),
        OpenSetClassifier(
            KernelMarginSoftmaxClassifier(metric=None, random_state=seed),
            target_rejection=0.05,
        ),
    ).fit(X, y)
    open_seconds = time.perf_counter() - start
    predicted = open_set.predict(X_test)
    rejection = {
        "known": float(np.mean(predicted[known] == -1)),
        "unknown": float(np.mean(predicted[~known] == -1)),
        "fit_s": open_seconds,
    }
    # The refitted estimator inside is the kernel default itself.
    default = make_pipeline(open_set[0], open_set[-1].estimator_)
    default_pred = default.predict(X_test)
    _record(
        results,
        DEFAULT,
        y_known,
        default_pred,
        default.score_samples(X_test),
        known,
        open_seconds / 6.0,  # cv=5 fits and the refit, all alike
    )
    for name, score in default_variants(default, X_test).items():
        _record(results, name, y_known, default_pred, score, known, np.nan)

    for name, fit in classifier_models(seed, svm_max_rows).items():
        start = time.perf_counter()
        predict, score = fit(X, y)
        seconds = time.perf_counter() - start
        _record(results, name, y_known, predict(X_test), score(X_test), known, seconds)
    for name, fit in detector_models(seed, svm_max_rows).items():
        start = time.perf_counter()
        score = fit(X, y)
        seconds = time.perf_counter() - start
        _record(results, name, y_known, default_pred, score(X_test), known, seconds)
    return results, rejection


def closed_set_rejection(X_train, y_train, X_test, seed):
    """Known-row rejection of OpenSetClassifier when every class is known."""
    start = time.perf_counter()
    model = make_pipeline(
        StandardScaler(),
        # metric=None: the model results_openset.md measured (before the
        # learned metric became the kernel default, which changes which rows
        # look unfamiliar: OpenSetClassifier's docstring).
        OpenSetClassifier(
            KernelMarginSoftmaxClassifier(metric=None, random_state=seed)
        ),
    ).fit(X_train, y_train)
    seconds = time.perf_counter() - start
    return {
        "known": float(np.mean(model.predict(X_test) == -1)),
        "unknown": np.nan,
        "fit_s": seconds,
    }


# -- report ------------------------------------------------------------------------
def _fmt(values, digits=3):
    values = [v for v in values if np.isfinite(v)]
    return f"{np.mean(values):.{digits}f}" if values else "-"


def report(per_dataset, rejections, header, notes):
    """Markdown: means over data sets, per-data-set tables, rejection rates."""
    open_sets = [name for name in per_dataset if per_dataset[name]]
    models = list(per_dataset[open_sets[0]])
    lines = [*header, ""]
    lines += [
        f"## Means over the {len(open_sets)} data sets with unknown classes "
        f"({', '.join(open_sets)})",
        "",
        "| model | AUROC | FPR@95%TPR | OSCR | closed-set acc. | fit s |",
        "|---|---|---|---|---|---|",
    ]

    def mean_over(name, metric):
        return [np.mean(per_dataset[d][name][metric]) for d in open_sets]

    ranked = sorted(models, key=lambda m: -np.mean(mean_over(m, "auroc")))
    for name in ranked:
        lines.append(
            f"| {name} | {_fmt(mean_over(name, 'auroc'))} | "
            f"{_fmt(mean_over(name, 'fpr95'))} | {_fmt(mean_over(name, 'oscr'))} | "
            f"{_fmt(mean_over(name, 'accuracy'))} | "
            f"{_fmt(mean_over(name, 'fit_s'), 2)} |"
        )
    for metric, title in (
        ("auroc", "AUROC"),
        ("fpr95", "FPR at 95% TPR (lower is better)"),
        ("oscr", "OSCR"),
        ("accuracy", "Closed-set accuracy on the known test rows"),
    ):
        lines += [
            "",
            f"## {title}, per data set (mean over the splits)",
            "",
            "| model | " + " | ".join(open_sets) + " | mean |",
            "|---|" + "---|" * (len(open_sets) + 1),
        ]
        for name in ranked:
            values = mean_over(name, metric)
            lines.append(
                f"| {name} | "
                + " | ".join(_fmt([v]) for v in values)
                + f" | {_fmt(values)} |"
            )
    lines += [
        "",
        "## OpenSetClassifier(kernel default, target_rejection=0.05): share of "
        "test rows rejected",
        "",
        "| data set | known rows rejected (target 0.05, 0.02-0.10) | per split | "
        "unknown rows rejected | fit s |",
        "|---|---|---|---|---|",
    ]
    for name, runs in rejections.items():
        known = [r["known"] for r in runs]
        lines.append(
            f"| {name} | {_fmt(known)} | {', '.join(f'{v:.3f}' for v in known)} | "
            f"{_fmt([r['unknown'] for r in runs])} | "
            f"{_fmt([r['fit_s'] for r in runs], 1)} |"
        )
    lines += ["", *notes, ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--datasets", nargs="*", default=list(NPZ_DATASETS))
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument(
        "--svm-max-rows",
        type=int,
        default=5000,
        help="training rows above this are subsampled (stratified) for SVC and "
        "OneClassSVM (default 5000)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results_openset.md"
    )
    args = parser.parse_args()

    header = [
        "# Open-set recognition on the shared data sets (issue 20)",
        "",
        f"Made by `benchmarks/openset.py --splits {args.splits}` on {now()}, "
        f"{machine()}; {versions()}.",
        f"{blas_line(1)}.",
        "",
        f"Protocol: {args.splits} random known/unknown class splits per data set "
        f"(seeds 0-{args.splits - 1}), round(0.6 K) known classes; models fitted "
        "on the known classes' training rows in Pipeline(StandardScaler(), "
        "model); every test row scored; known test rows are the positives.",
    ]
    notes = [
        "Notes:",
        f"- SVC and OneClassSVM are fitted on at most {args.svm_max_rows} "
        "training rows (stratified subsample) where there are more.",
        "- IsolationForest and OneClassSVM know no classes: their OSCR and "
        "closed-set accuracy use the kernel default's labels.",
        "- The kernel default's fit time is the OpenSetClassifier's (cv=5 + "
        "refit) divided by 6.",
        "- a9a has two classes: one known class leaves nothing to classify, so it "
        "has no AUROC; its row in the rejection table has both classes known.",
    ]
    per_dataset, rejections = {}, {}
    warnings.simplefilter("ignore")  # convergence notes of the baselines
    with pinned_blas(1):
        for name in args.datasets:
            X_train, y_train, X_test, y_test = load_split(args.data, name)
            classes = np.unique(y_train)
            n_known = round(KNOWN_SHARE * len(classes))
            per_dataset[name], rejections[name] = {}, []
            for seed in range(args.splits):
                start = time.perf_counter()
                if n_known < 2 or n_known == len(classes):
                    rejections[name].append(
                        closed_set_rejection(X_train, y_train, X_test, seed)
                    )
                else:
                    rng = np.random.RandomState(seed)
                    known = np.sort(rng.permutation(classes)[:n_known])
                    results, rejection = run_split(
                        X_train, y_train, X_test, y_test, known, seed,
                        args.svm_max_rows,
                    )  # fmt: skip
                    rejections[name].append(rejection)
                    for model, metrics in results.items():
                        entry = per_dataset[name].setdefault(
                            model, {k: [] for k in METRICS}
                        )
                        for key in METRICS:
                            entry[key] += metrics[key]
                print(
                    f"{name} split {seed}: {time.perf_counter() - start:.0f} s, "
                    f"known rejected {rejections[name][-1]['known']:.3f}",
                    flush=True,
                )
    text = report(per_dataset, rejections, header, notes)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
