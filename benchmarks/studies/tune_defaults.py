"""Choose the default hyper-parameters of every margin loss by measurement.

For each loss of :class:`sklmargin.MarginSoftmaxClassifier` this script scores a
grid of hyper-parameters by (repeated) 3-fold stratified cross-validation on the
*training split only* of a dozen real data sets, with
``Pipeline([StandardScaler(), MarginSoftmaxClassifier(..., tol=1e-4)])``, and
recommends the setting with the best mean rank across data sets.

Data sets
---------
* ``NAME.npz`` in ``--data`` (default ``../shared/data`` relative to the
  repository root; keys ``X_train``, ``y_train``; the test split is never
  loaded). Training splits larger than ``--max-rows`` (default 4000) are
  subsampled, stratified, with a fixed seed.
* scikit-learn's bundled digits, wine, breast_cancer and iris, whole data as the
  "training split".

Protocol
--------
* The same folds for every model of a data set:
  ``RepeatedStratifiedKFold(n_splits=3, n_repeats=cv_repeats, random_state=seed)``
  (``--cv-repeats 1`` is one shuffled 3-fold split; repeats only average out the
  fold noise, which is as large as the differences between the best settings).
  The references, ``LogisticRegression(max_iter=1000)`` (default C and tol) and
  our plain ``loss="softmax"`` at its defaults, use the same folds.
* Per loss and setting: mean CV accuracy on each data set, the mean over data
  sets, and the mean rank across data sets (rank 1 = best setting of that loss
  on that data set, ties share the average rank, a failed fit ranks last).
* Recommendation: the best mean rank. Ties (equal to 1e-9) go to the simpler
  setting: smaller ``m``, then larger ``lambda_min`` (softer), then smaller ``s``.
  Its distance to the per-data-set best of the same grid is reported (mean and
  worst gap in accuracy points), as are the current library defaults and
  LogisticRegression on the same folds.
* ``--extend`` adds values beyond the edges of the suggested grids (``s=50``,
  ``lambda_min=50``: is the winner at an edge?); the report then gives the
  recommendation both within the suggested grid (ranks recomputed among its
  settings) and over all evaluated settings.
* Everything runs in one process (``n_jobs=1``) with BLAS limited to
  ``--blas-threads`` threads (default 1): the machine has 2 cores and other jobs
  share it. Warnings (ConvergenceWarning) and errors are counted per setting.

Output is a markdown report (``--output``, default
``benchmarks/studies/results_defaults.md``, overwritten) with the date, the machine, the
exact command and the package versions, and optionally the raw per-fold numbers
as JSON (``--raw``).

Examples
--------
The run behind ``benchmarks/studies/results_defaults.md`` (20 minutes on 2 busy cores;
without ``--extend`` and with ``--cv-repeats 1`` about 5)::

    python benchmarks/studies/tune_defaults.py --extend --cv-repeats 3 \\
        --raw /tmp/results_defaults.json

Rebuild the report from the raw results without refitting::

    python benchmarks/studies/tune_defaults.py --from-raw \\
        /tmp/results_defaults.json

Smoke test on two small data sets and one loss::

    python benchmarks/studies/tune_defaults.py --datasets iris wine \\
        --losses normface --output /tmp/smoke.md
"""

from __future__ import annotations

import sys
from pathlib import Path

# The shared helpers (_common.py) live one folder up, in benchmarks/.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import itertools
import json
import time

import numpy as np
from _common import (
    ALL_DATASETS,
    REPO,
    add_data_argument,
    command_line,
    cv_scores,
    load_training_split,
    machine,
    now,
    pct,
    pinned_blas,
    rank_columns,
    versions,
    write_json,
)
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from sklmargin import MarginSoftmaxClassifier
from sklmargin.losses._registry import get_margin

S_GRID = (5, 10, 15, 20, 30)
#: Hyper-parameter grids, one list of keyword dicts per loss.
GRIDS = {
    "normface": [{"s": s} for s in S_GRID],
    "am-softmax": [
        {"m": m, "s": s}
        for m, s in itertools.product((0, 0.05, 0.1, 0.2, 0.35), S_GRID)
    ],
    "arcface": [
        {"m": m, "s": s} for m, s in itertools.product((0, 0.05, 0.1, 0.2, 0.5), S_GRID)
    ],
    "l-softmax": [
        {"m": m, "lambda_min": lam}
        for m, lam in itertools.product((1.5, 2, 3), (1, 5, 10, 20))
    ],
    "a-softmax": [
        {"m": m, "lambda_min": lam}
        for m, lam in itertools.product((1.5, 2, 3, 4), (1, 5, 10, 20))
    ],
}
#: Values added beyond the grid edges with ``--extend``: is the best setting at
#: the edge of the suggested grid?
EXTRA_S = (50,)
EXTRA_LAMBDA = (50,)
KEY_SEP = " | "  # joins (loss, setting) keys in the JSON file


# -- models --------------------------------------------------------------------
def ours(loss, tol, **params):
    """``Pipeline([StandardScaler(), MarginSoftmaxClassifier(...)])``."""
    return Pipeline(
        [
            ("scale", StandardScaler()),
            ("clf", MarginSoftmaxClassifier(loss=loss, tol=tol, **params)),
        ]
    )


def logistic_regression():
    """The reference: ``LogisticRegression(max_iter=1000)`` after scaling."""
    return Pipeline(
        [("scale", StandardScaler()), ("clf", LogisticRegression(max_iter=1000))]
    )


def setting_label(params):
    """Short text of a grid point, e.g. ``m=0.1 s=10``."""
    return " ".join(f"{key}={value:g}" for key, value in params.items())


def current_defaults(loss):
    """The library's current defaults of ``loss`` as a grid-point dict."""
    margin = get_margin(loss)
    params = {}
    if loss not in ("softmax", "normface"):
        params["m"] = margin.default_m
    if margin.uses_s:
        params["s"] = margin.default_s
    if margin.uses_lambda:
        params["lambda_min"] = margin.default_lambda
    return params


# -- cross-validation ----------------------------------------------------------
def _record_iterations(model, record):
    clf = model[-1]
    if hasattr(clf, "n_iter_"):
        record["n_iter"].append(int(np.max(clf.n_iter_)))


def run_grid(datasets, losses, grids, args, log):
    """Evaluate every loss and setting on every data set.

    Returns
    -------
    results : dict
        ``results[dataset][key]`` is a :func:`cv_scores` record, with ``key``
        ``"LogisticRegression"``, ``"softmax (defaults)"`` or
        ``(loss, setting_label)``.
    info : dict
        Per data set: shape, classes and original rows.
    """
    results, info = {}, {}
    for name in datasets:
        X, y, n_original = load_training_split(
            name, args.data, args.max_rows, args.seed
        )
        info[name] = {
            "n_samples": X.shape[0],
            "n_features": X.shape[1],
            "n_classes": len(np.unique(y)),
            "n_original": n_original,
        }
        folds = list(
            RepeatedStratifiedKFold(
                n_splits=3, n_repeats=args.cv_repeats, random_state=args.seed
            ).split(X, y)
        )
        start = time.perf_counter()
        res = results[name] = {}
        res["LogisticRegression"] = cv_scores(
            logistic_regression, X, y, folds, _record_iterations
        )
        res["softmax (defaults)"] = cv_scores(
            lambda: ours("softmax", args.tol), X, y, folds, _record_iterations
        )
        for loss in losses:
            for params in grids[loss]:
                res[loss, setting_label(params)] = cv_scores(
                    lambda loss=loss, params=params: ours(loss, args.tol, **params),
                    X,
                    y,
                    folds,
                    _record_iterations,
                )
        log(
            f"{name}: {X.shape[0]}x{X.shape[1]}, {info[name]['n_classes']} classes, "
            f"{time.perf_counter() - start:.1f}s"
        )
    return results, info


# -- analysis ------------------------------------------------------------------
def summarise_loss(loss, grid, results, datasets):
    """Mean accuracies, ranks, gaps and the recommendation of one loss.

    Returns
    -------
    dict
        ``rows`` (one per setting: label, params, per-data-set mean accuracy,
        mean, mean rank, warnings, errors, fit time), ``best`` (per data set, the
        best mean accuracy of the grid) and ``recommended`` (index into rows).
    """
    labels = [setting_label(params) for params in grid]
    acc = np.array(
        [
            [np.mean(results[name][loss, label]["acc"]) for name in datasets]
            for label in labels
        ]
    )  # (settings, datasets); NaN where a fold failed
    ranks = rank_columns(acc)
    rows = []
    for i, (params, label) in enumerate(zip(grid, labels, strict=True)):
        records = [results[name][loss, label] for name in datasets]
        rows.append(
            {
                "label": label,
                "params": params,
                "acc": acc[i],
                "mean": float(np.mean(acc[i])),
                "mean_rank": float(np.mean(ranks[i])),
                "warnings": sum(r["warnings"] for r in records),
                "warning_kinds": sorted(
                    {kind for r in records for kind in r["warning_kinds"]}
                ),
                "errors": sum(len(r["errors"]) for r in records),
                "error_messages": sorted({e for r in records for e in r["errors"]}),
                "fit_time": float(sum(np.mean(r["fit_time"]) for r in records)),
                "max_iter_seen": max(
                    (max(r["n_iter"]) for r in records if r["n_iter"]), default=0
                ),
            }
        )

    def tie_key(i):
        params = rows[i]["params"]
        return (
            round(rows[i]["mean_rank"], 9),
            params.get("m", 0.0),
            -params.get("lambda_min", 0.0),
            params.get("s", 0.0),
        )

    recommended = min(range(len(rows)), key=tie_key)
    best = np.nanmax(acc, axis=0)
    return {"rows": rows, "best": best, "recommended": recommended}


def reference_mean(results, key, datasets):
    """Per-data-set mean CV accuracy of a reference model."""
    return np.array([np.mean(results[name][key]["acc"]) for name in datasets])


def recommendation_line(loss, summary, scope, lr, datasets):
    """One row of the recommendations table."""
    rows = summary["rows"]
    rec = rows[summary["recommended"]]
    gap = 100 * (summary["best"] - np.nan_to_num(rec["acc"], nan=0.0))
    worst = int(np.argmax(gap))
    diff = 100 * (rec["acc"] - lr)
    wins = int(np.sum(rec["acc"] >= lr - 1e-12))
    default_label = setting_label(current_defaults(loss))
    default_row = next((r for r in rows if r["label"] == default_label), None)
    d_mean = pct(default_row["mean"]) if default_row else "not in grid"
    d_rank = f"{default_row['mean_rank']:.2f}" if default_row else "-"
    return (
        f"| {loss} | {scope} ({len(rows)}) | **{rec['label']}** | {pct(rec['mean'])} "
        f"| {rec['mean_rank']:.2f} | {np.mean(gap):.2f} / {gap[worst]:.2f} "
        f"({datasets[worst]}) | {np.mean(diff):+.2f}, {wins}/{len(datasets)} "
        f"| {default_label} | {d_mean} | {d_rank} |"
    )


def format_report(summaries, base_summaries, results, info, datasets, meta):
    """The markdown report.

    Parameters
    ----------
    summaries : dict
        :func:`summarise_loss` of every loss over all evaluated settings.
    base_summaries : dict or None
        The same within the suggested grids only (``--extend`` runs).
    results, info : dict
        From :func:`run_grid`.
    datasets : list of str
    meta : dict
        ``command``, ``date``, ``elapsed`` (s), ``versions`` and the arguments
        ``blas_threads``, ``cv_repeats``, ``seed``, ``tol``, ``max_rows``.
    """
    lr = reference_mean(results, "LogisticRegression", datasets)
    sm = reference_mean(results, "softmax (defaults)", datasets)
    repeats = meta["cv_repeats"]
    lines = [
        "# Default hyper-parameters of the margin losses, chosen by measurement",
        "",
        f"- date: {meta['date']}",
        f"- machine: {meta['machine']}, BLAS threads limited to "
        f"{meta['blas_threads']}, n_jobs=1, other jobs sharing the machine",
        f"- command: `{meta['command']}`",
    ]
    if "report_command" in meta:
        lines.append(
            f"- report rebuilt from the raw results: `{meta['report_command']}`"
        )
    lines += [
        f"- versions: {meta['versions']}",
        "- other parameters of MarginSoftmaxClassifier: the library defaults at "
        f"the start of the run, `{meta.get('estimator_defaults', '?')}`",
        f"- protocol: 3-fold stratified CV repeated {repeats} times "
        f"(`RepeatedStratifiedKFold(n_splits=3, n_repeats={repeats}, "
        f"random_state={meta['seed']})`, {3 * repeats} fits per setting and "
        "data set) on the training split only; `Pipeline(StandardScaler(), "
        f"MarginSoftmaxClassifier(loss, tol={meta['tol']:g}, ...))`; training "
        f"splits above {meta['max_rows']} rows subsampled (stratified, seed "
        f"{meta['seed']}); bundled sklearn data sets used whole. Same folds for "
        "every model, including LogisticRegression(max_iter=1000) and our "
        "loss='softmax' at its defaults.",
        "- rank: per data set among the settings of one loss (1 = best, ties "
        "averaged, a failed fit ranks last); recommendation = best mean rank, ties "
        "to smaller m, then larger lambda_min, then smaller s.",
        f"- total runtime of the grid: {meta['elapsed'] / 60:.1f} min",
        "",
        "## Data sets",
        "",
        "| data set | rows used (of) | features | classes | LogReg CV % "
        "| softmax (defaults) CV % |",
        "|---|---|---|---|---|---|",
    ]
    for j, name in enumerate(datasets):
        d = info[name]
        lines.append(
            f"| {name} | {d['n_samples']} ({d['n_original']}) | {d['n_features']} "
            f"| {d['n_classes']} | {pct(lr[j])} | {pct(sm[j])} |"
        )
    lines += [
        f"| **mean** | | | | {pct(np.mean(lr))} | {pct(np.mean(sm))} |",
        "",
        "## Recommendations",
        "",
        "grid = the suggested grid, or all evaluated settings including the "
        "values beyond its edges (number of settings in brackets); mean rank is "
        "within that set. gap = per-data-set best of the same set minus the "
        "recommended setting, in accuracy points (mean over data sets / worst "
        "data set). vs LR = mean accuracy difference to LogisticRegression on the "
        "same folds (points), and the number of data sets where the setting is "
        "at least as accurate.",
        "",
        "| loss | grid | recommended | mean CV % | mean rank | gap mean / worst "
        "| vs LR | current default | its mean CV % | its mean rank |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for loss, summary in summaries.items():
        if base_summaries is not None:
            lines.append(
                recommendation_line(
                    loss, base_summaries[loss], "suggested", lr, datasets
                )
            )
            scope = "extended"
        else:
            scope = "suggested"
        lines.append(recommendation_line(loss, summary, scope, lr, datasets))
    lines.append(
        f"| LogisticRegression | | max_iter=1000 | {pct(np.mean(lr))} | | | | | | |"
    )
    lines.append("")

    for loss, summary in summaries.items():
        rows = summary["rows"]
        default_label = setting_label(current_defaults(loss))
        base_rank = {}
        base_pick = None
        if base_summaries is not None:
            base = base_summaries[loss]
            base_rank = {r["label"]: r["mean_rank"] for r in base["rows"]}
            base_pick = base["rows"][base["recommended"]]["label"]
        lines += [
            f"## {loss}",
            "",
            "Mean CV accuracy (%) per data set, sorted by mean rank. **bold** = "
            "recommended over all settings"
            + (", † = recommended within the suggested grid" if base_rank else "")
            + ", _(default)_ = current library default. "
            + (
                "rank (sugg.) = mean rank within the suggested grid. "
                if base_rank
                else ""
            )
            + "warn = warnings over all fits, fit s = summed mean fit time per "
            "fold over data sets, max it = most L-BFGS iterations of one fit.",
            "",
            "| setting | "
            + " | ".join(datasets)
            + " | mean | mean rank | "
            + ("rank (sugg.) | " if base_rank else "")
            + "warn | fit s | max it |",
            "|---" * (len(datasets) + 6 + bool(base_rank)) + "|",
        ]
        order = sorted(range(len(rows)), key=lambda i: rows[i]["mean_rank"])
        for i in order:
            row = rows[i]
            label = row["label"]
            if i == summary["recommended"]:
                label = f"**{label}**"
            if row["label"] == base_pick:
                label += " †"
            if row["label"] == default_label:
                label += " _(default)_"
            warn = str(row["warnings"])
            if row["errors"]:
                warn += f", {row['errors']} failed"
            base_cell = ""
            if base_rank:
                rank = base_rank.get(row["label"])
                base_cell = ("-" if rank is None else f"{rank:.2f}") + " | "
            lines.append(
                f"| {label} | "
                + " | ".join(pct(a) for a in row["acc"])
                + f" | {pct(row['mean'])} | {row['mean_rank']:.2f} | {base_cell}"
                f"{warn} | {row['fit_time']:.2f} | {row['max_iter_seen']} |"
            )
        blanks = " |" * (5 + bool(base_rank))
        lines.append(
            "| _per-data-set best_ | "
            + " | ".join(pct(b) for b in summary["best"])
            + " |"
            + blanks
        )
        lines.append(
            "| _LogisticRegression_ | "
            + " | ".join(pct(a) for a in lr)
            + f" | {pct(np.mean(lr))} |"
            + blanks[:-2]
        )
        messages = sorted(
            {m for r in rows for m in r["error_messages"]}
            | {f"{k} in {r['label']}" for r in rows for k in r["warning_kinds"]}
        )
        if messages:
            lines += ["", "Warnings and errors:", ""]
            lines += [f"- {m[:300]}" for m in messages]
        lines.append("")
    return "\n".join(lines) + "\n"


def to_jsonable(results):
    """Flatten the tuple keys of ``results`` for ``json.dump``."""
    return {
        name: {
            key if isinstance(key, str) else f"{key[0]}{KEY_SEP}{key[1]}": record
            for key, record in res.items()
        }
        for name, res in results.items()
    }


def from_jsonable(flat):
    """Inverse of :func:`to_jsonable`."""
    return {
        name: {
            tuple(key.split(KEY_SEP)) if KEY_SEP in key else key: record
            for key, record in res.items()
        }
        for name, res in flat.items()
    }


def build_grids(losses, extend):
    """The grids to evaluate: :data:`GRIDS`, plus the edge values if ``extend``."""
    grids = {loss: list(GRIDS[loss]) for loss in losses}
    if extend:
        for loss, grid in grids.items():
            ms = sorted({p.get("m") for p in grid}, key=lambda m: m or 0)
            if get_margin(loss).uses_lambda:
                grid += [
                    {"m": m, "lambda_min": lam} for m in ms for lam in EXTRA_LAMBDA
                ]
            else:
                grid += [
                    {"s": s} if m is None else {"m": m, "s": s}
                    for m in ms
                    for s in EXTRA_S
                ]
    return grids


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
        help=f"data sets to use (default: all of {', '.join(ALL_DATASETS)})",
    )
    add_data_argument(parser)
    parser.add_argument(
        "--losses",
        nargs="+",
        default=list(GRIDS),
        choices=list(GRIDS),
        help="losses to tune (default: all)",
    )
    parser.add_argument(
        "--max-rows",
        type=int,
        default=4000,
        help="subsample larger training splits to this many rows (default 4000)",
    )
    parser.add_argument(
        "--tol", type=float, default=1e-4, help="tol of our classifier (1e-4)"
    )
    parser.add_argument("--seed", type=int, default=0, help="subsample/fold seed")
    parser.add_argument(
        "--cv-repeats",
        type=int,
        default=3,
        help="repetitions of the 3-fold CV with different shuffles (default 3)",
    )
    parser.add_argument(
        "--extend",
        action="store_true",
        help=f"grid-edge check: also try s in {EXTRA_S} for the cosine losses and "
        f"lambda_min in {EXTRA_LAMBDA} for l-/a-softmax",
    )
    parser.add_argument(
        "--blas-threads", type=int, default=1, help="BLAS threads (default 1)"
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=REPO / "benchmarks" / "studies" / "results_defaults.md",
        help="markdown report, overwritten (default: studies/results_defaults.md)",
    )
    parser.add_argument(
        "--raw", type=Path, help="also write the per-fold results as JSON"
    )
    parser.add_argument(
        "--from-raw",
        type=Path,
        metavar="JSON",
        help="rebuild the report from a --raw file instead of running the grid",
    )
    return parser.parse_args(argv)


def main(argv=None):
    """Run the grid (or reload it), print progress, write the report."""
    args = parse_args(argv)
    command = command_line()
    if args.from_raw:
        stored = json.loads(args.from_raw.read_text())
        meta, info = stored["meta"], stored["info"]
        results = from_jsonable(stored["results"])
        meta["report_command"] = command
        datasets, losses, extend = meta["datasets"], meta["losses"], meta["extend"]
    else:
        datasets, losses, extend = args.datasets, args.losses, args.extend
    grids = build_grids(losses, extend)

    def log(message):
        print(f"[{time.perf_counter() - start:7.1f}s] {message}", flush=True)

    start = time.perf_counter()
    if not args.from_raw:
        # Read before the run: other people edit the tree meanwhile, the imported
        # code is what runs.
        run_versions = versions()
        estimator_defaults = {
            key: value
            for key, value in MarginSoftmaxClassifier().get_params().items()
            if key not in ("loss", "m", "s", "lambda_min", "tol")
        }
        with pinned_blas(args.blas_threads):
            results, info = run_grid(datasets, losses, grids, args, log)
        meta = {
            "command": command,
            "date": now(),
            "machine": machine(),
            "versions": run_versions,
            "estimator_defaults": estimator_defaults,
            "elapsed": time.perf_counter() - start,
            "datasets": datasets,
            "losses": losses,
            "extend": extend,
            **{
                key: getattr(args, key)
                for key in ("blas_threads", "cv_repeats", "seed", "tol", "max_rows")
            },
        }
    summaries = {
        loss: summarise_loss(loss, grids[loss], results, datasets) for loss in losses
    }
    base_summaries = (
        {loss: summarise_loss(loss, GRIDS[loss], results, datasets) for loss in losses}
        if extend
        else None
    )
    report = format_report(summaries, base_summaries, results, info, datasets, meta)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report)
    if args.raw and not args.from_raw:
        stored = {"meta": meta, "info": info, "results": to_jsonable(results)}
        write_json(args.raw, stored)
    for scope, summ in (("suggested grid", base_summaries), ("all", summaries)):
        for loss, summary in (summ or {}).items():
            rec = summary["rows"][summary["recommended"]]
            log(
                f"{loss} ({scope}): recommended {rec['label']} (mean "
                f"{pct(rec['mean'])}%, mean rank {rec['mean_rank']:.2f})"
            )
    log(f"report written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
