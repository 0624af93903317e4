"""Issue 25: could a different choice rule keep the kernel search at the plain default?

``KernelMarginSoftmaxClassifierCV()`` trails the plain
``KernelMarginSoftmaxClassifier()`` on segment (``../results_kernel_noise_margin.md``):
its folds choose ``s = 50`` where all the rows want the default ``s = 100``. Three
questions, one ``--part`` each (every model after a ``StandardScaler`` fitted on the
training rows, ``random_state`` the seed, one BLAS thread, test accuracy in points):

``anchor``
    Would a rule that keeps the default unless the held-out evidence against it is
    strong keep the search at the default where the test split prefers it? The search
    is fitted once; its folds' held-out logits (the path points the search keeps for
    its temperature, read through its private ``_fit_folds``) give, for every pooled
    held-out row, whether the best point and the default point (the plain estimator's
    settings: the diagonal metric, ``2*scale``, ``m = 0.05``, ``s = 100``) are right.
    Rules: the search's own (best mean score); the best point only when McNemar's
    ``z = (b - c) / sqrt(b + c)`` on those rows exceeds 1, 1.645 or 2 (``b``: rows only
    the best point gets right, ``c``: only the default); the best point only when its
    mean per-fold gain over the default exceeds the gain's standard error over the
    folds; the default whenever its mean score is within one standard error (over the
    folds) of the best's (glmnet's "1se" rule, anchored at the default). Where a rule
    keeps the default, its test accuracy is the plain estimator's (the search refitted
    at the default point is the plain estimator: the script checks it on the first set).
``paths``
    Does a path point's held-out score depend on where the path started? Each fold
    walks ``s`` upward with warm starts; a one-point path (``ss=[s]``) fits the same
    point cold. Per (metric, gamma, s): the mean held-out score and mean L-BFGS
    iterations of both.
``widen``
    What does following the search's ``GridEdgeWarning`` cost? On a set whose chosen
    ``s`` is the bottom of the path (50), the search refitted with the path widened
    downward, ``ss=[12.5, 25, 50, 100, 200, 400]``: its choice and test accuracy.

Usage::

    python benchmarks/studies/kernel_cv_choice.py --data ../shared/data --part anchor \\
        --datasets segment,vowel > choice.jsonl
    python benchmarks/studies/kernel_cv_choice.py --summary choice.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import add_data_argument, pinned_blas, summarised_or_started  # noqa: E402
from kernel_targets import split_of  # noqa: E402

from sklmargin import (  # noqa: E402
    KernelMarginSoftmaxClassifier,
    KernelMarginSoftmaxClassifierCV,
)

#: The plain estimator's settings as a point of the search's grid.
DEFAULT_POINT = {"metric": "diagonal", "gamma": "2*scale", "m": "0.05", "s": "100.0"}
#: The search's default s path and the path widened downward, as the warning advises.
DEFAULT_SS = (50.0, 100.0, 200.0, 400.0)
WIDENED_SS = (12.5, 25.0) + DEFAULT_SS
#: McNemar z thresholds of the anchored rules.
Z_THRESHOLDS = (1.0, 1.645, 2.0)


class _KeepsFolds(KernelMarginSoftmaxClassifierCV):
    """The search, keeping its fold path points (private: a study, not an API)."""

    def _fit_folds(self, *args, **kwargs):
        self.fold_points_ = super()._fit_folds(*args, **kwargs)
        return self.fold_points_


def scaled(data, name):
    X_train, y_train, X_test, y_test = split_of(data, name)
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), y_train, scaler.transform(X_test), y_test


def accuracy(model, X, y):
    return 100 * float(np.mean(model.predict(X) == y))


def key(point):
    return "|".join(str(v) for v in point.values())


def anchor(data, name, seed, check_default):
    X, y, X_test, y_test = scaled(data, name)
    start = time.process_time()
    search = _KeepsFolds(random_state=seed).fit(X, y)
    cpu = time.process_time() - start
    plain = KernelMarginSoftmaxClassifier(random_state=seed).fit(X, y)
    _, points = search.fold_points_
    params = [{k: str(v) for k, v in p.items()} for p in search.cv_results_["params"]]
    default = params.index(DEFAULT_POINT)
    best = search.best_index_
    y_encoded = np.searchsorted(search.classes_, y)
    # The search's default cv=3 is StratifiedKFold(3) without shuffling.
    folds = list(StratifiedKFold(3).split(X, y))
    right = np.zeros((2, len(y)), dtype=bool)
    for fold, (_, test) in enumerate(folds):
        for row, index in enumerate((best, default)):
            logits = points[fold][index].logits
            right[row, test] = np.argmax(logits, axis=1) == y_encoded[test]
    scores = np.array([[p.score for p in fold] for fold in points])
    row = {
        "part": "anchor",
        "dataset": name,
        "seed": seed,
        "plain": accuracy(plain, X_test, y_test),
        "cv": accuracy(search, X_test, y_test),
        "best": params[best],
        "b": int(np.sum(right[0] & ~right[1])),
        "c": int(np.sum(~right[0] & right[1])),
        "fold_best": scores[:, best].tolist(),
        "fold_default": scores[:, default].tolist(),
        "cv_cpu": cpu,
    }
    if check_default:
        # The search refitted at the default point is the plain estimator.
        only = KernelMarginSoftmaxClassifierCV(
            gammas=["2*scale"], metric="diagonal", ss=[100.0], random_state=seed
        ).fit(X, y)
        row["default_refit_same"] = bool(
            np.array_equal(only.predict(X_test), plain.predict(X_test))
        )
    return row


def paths(data, name, seed):
    X, y, _, _ = scaled(data, name)
    scores = {}
    for label, ss in [("path", DEFAULT_SS)] + [("cold", (s,)) for s in DEFAULT_SS]:
        search = KernelMarginSoftmaxClassifierCV(
            ss=list(ss), calibrate=False, random_state=seed
        ).fit(X, y)
        results = search.cv_results_
        for point, score, n_iter in zip(
            results["params"],
            results["mean_test_score"],
            results["mean_n_iter"],
            strict=True,
        ):
            entry = scores.setdefault(key(point), {})
            entry[label] = [100 * float(score), float(n_iter)]
    return {"part": "paths", "dataset": name, "seed": seed, "points": scores}


def widen(data, name, seed):
    X, y, X_test, y_test = scaled(data, name)
    row = {"part": "widen", "dataset": name, "seed": seed}
    for label, ss in (("default", DEFAULT_SS), ("widened", WIDENED_SS)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            search = KernelMarginSoftmaxClassifierCV(
                ss=list(ss), random_state=seed
            ).fit(X, y)
        best = search.cv_results_["params"][search.best_index_]
        row[label] = {
            "test": accuracy(search, X_test, y_test),
            "chosen": {k: str(v) for k, v in best.items()},
            "held_out": 100 * float(search.cv_results_["mean_test_score"].max()),
            "edge_warnings": sorted(
                str(w.message).split(",")[0]
                for w in caught
                if type(w.message).__name__ == "GridEdgeWarning"
            ),
        }
    return row


def _anchor_summary(rows):
    rules = ["best mean"] + [f"z > {z:g}" for z in Z_THRESHOLDS]
    rules += ["fold gain > its SE", "default within 1 SE of best"]
    out = [
        "| data set | seed | plain % | CV % | chosen | b / c | z "
        "| per-fold gain, points | " + " | ".join(rules) + " |",
        "|---|---|---|---|---|---|---|---|" + "---|" * len(rules),
    ]
    gains = {rule: [] for rule in rules}
    for r in rows:
        b, c = r["b"], r["c"]
        z = (b - c) / np.sqrt(b + c) if b + c else 0.0
        fold_best, fold_default = np.array(r["fold_best"]), np.array(r["fold_default"])
        gain = fold_best - fold_default
        se_gain = gain.std(ddof=1) / np.sqrt(len(gain))
        se_best = fold_best.std(ddof=1) / np.sqrt(len(gain))
        at_default = r["best"] == DEFAULT_POINT
        keeps_best = {
            "best mean": True,
            **{f"z > {t:g}": z > t for t in Z_THRESHOLDS},
            "fold gain > its SE": gain.mean() > se_gain,
            "default within 1 SE of best": fold_default.mean()
            < fold_best.mean() - se_best,
        }
        cells = []
        for rule in rules:
            test = r["cv"] if at_default or keeps_best[rule] else r["plain"]
            gains[rule].append(test - r["plain"])
            cells.append(f"{test - r['plain']:+.2f}")
        chosen = ", ".join(f"{k} {v}" for k, v in r["best"].items() if k != "m")
        check = {True: "", False: " (default refit differs!)"}.get(
            r.get("default_refit_same"), ""
        )
        out.append(
            f"| {r['dataset']} | {r['seed']} | {r['plain']:.2f}{check} "
            f"| {r['cv']:.2f} | "
            f"{chosen} | {b} / {c} | {z:.2f} | "
            f"{', '.join(f'{100 * g:+.2f}' for g in gain)} | "
            + " | ".join(cells)
            + " |"
        )
    print("Each rule's test accuracy minus the plain default's, points:\n")
    print("\n".join(out))
    print()
    for rule, values in gains.items():
        values = np.array(values)
        print(
            f"{rule}: mean {values.mean():+.3f}, worst {values.min():+.2f}, "
            f"{int(np.sum(values < -0.2))} of {len(values)} below -0.2"
        )


def _paths_summary(rows):
    out = [
        "| data set | point (metric, gamma, m, s) | warm path: held-out %, iterations "
        "| cold one-point path | warm - cold |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        differences, idle = [], 0
        for point, entry in r["points"].items():
            if point.endswith("|50.0") or "path" not in entry:
                continue  # the first point of the path is cold either way
            (warm, warm_it), (cold, cold_it) = entry["path"], entry["cold"]
            differences.append(warm - cold)
            idle += warm_it == 0.0
            out.append(
                f"| {r['dataset']} | {point.replace('|', ', ')} | "
                f"{warm:.2f}, {warm_it:.1f} | "
                f"{cold:.2f}, {cold_it:.1f} | {warm - cold:+.2f} |"
            )
        differences = np.abs(differences)
        print(
            f"{r['dataset']}: |warm - cold| mean {differences.mean():.2f}, largest "
            f"{differences.max():.2f} points over {len(differences)} warm points; "
            f"{idle} of them took no iteration (mean over folds 0)"
        )
    print()
    print("\n".join(out))


def _widen_summary(rows):
    out = [
        "| data set | default path: test %, chosen, best held-out % | widened: test %, "
        "chosen, best held-out % | GridEdgeWarnings (default / widened) |",
        "|---|---|---|---|",
    ]
    for r in rows:
        cells = []
        for label in ("default", "widened"):
            e = r[label]
            chosen = ", ".join(f"{k} {v}" for k, v in e["chosen"].items() if k != "m")
            cells.append(f"{e['test']:.2f}, {chosen}, {e['held_out']:.2f}")
        warned = " / ".join(
            "; ".join(w.split("chose ")[-1] for w in r[label]["edge_warnings"])
            or "none"
            for label in ("default", "widened")
        )
        out.append(f"| {r['dataset']} | " + " | ".join(cells) + f" | {warned} |")
    print("\n".join(out))


def summary(path):
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    for part, show in (
        ("anchor", _anchor_summary),
        ("paths", _paths_summary),
        ("widen", _widen_summary),
    ):
        chosen = [r for r in rows if r["part"] == part]
        if chosen:
            print(f"\n## {part}\n")
            show(chosen)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_argument(parser)
    parser.add_argument("--part", choices=("anchor", "paths", "widen"))
    parser.add_argument("--datasets", default="segment")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--summary", metavar="FILE")
    args = parser.parse_args()
    if summarised_or_started(args, summary):
        return
    with pinned_blas(1, announce=False), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, name in enumerate(args.datasets.split(",")):
            if args.part == "anchor":
                row = anchor(args.data, name, args.seed, check_default=i == 0)
            elif args.part == "paths":
                row = paths(args.data, name, args.seed)
            else:
                row = widen(args.data, name, args.seed)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
