"""Nyström + margin softmax against a tuned SVC(rbf): centres, width, s, stop, gamma.

Every model is ``Pipeline(StandardScaler, NystroemFeatures(...),
MarginSoftmaxClassifier(loss="am-softmax", m, s, constant_feature=None))`` on float32
data, on every ``NAME.npz`` of ``--data``. Each configuration gets a stratified
3-fold CV accuracy on the training split (the number that decides defaults) and,
after one refit on the whole training split, a test accuracy, fit time, predict
time and the solver's ``n_iter_``. BLAS is pinned to one thread (environment
variables set before numpy loads, and threadpoolctl).

Stages (run in this order; each one reads the choices of the earlier ones from the
store, a JSON-lines file, and skips rows it already has, so a killed run resumes):

* ``maptime``  float32 NystroemFeatures vs sklearn Nystroem at equal M (fit+transform)
* ``s``        s in {30, 60, 100, 200, 300, 600} x stop rule (tol=1e-4, relative to
               s, vs tol=1e-4*30/s, a fixed absolute gradient tolerance);
               uniform centres, M=1000, gamma="scale", m=0.05
* ``gamma``    gamma in {1/4, 1/2, 1, 2, 4} x "scale" and "median", at the chosen s
* ``selector`` centres in {uniform, kmeans, rpcholesky} x M in {500, 1000, 2000}
               and kmeans++ (seeding alone) at M=1000, at the chosen s, stop and
               gamma
* ``svc``      SVC(rbf) by GridSearchCV(cv=3) over C in {1, 10, 100} x gamma in
               {1/4, 1, 4} x scale (grid on at most --svc-grid-max rows, refit on
               at most --svc-refit-max rows, stratified subsamples)
* ``ovo``      OneVsOneClassifier over the shared mapped features at the chosen
               config (multiclass datasets only)
* ``m``        m in {0, 0.05, 0.1, 0.2} at the chosen config
* ``default``  the recommended config and SVC (its CV-chosen C, gamma) timed in
               the same run, medians of ``--repeats`` fits
* ``extra``    the ``--config`` given, reported with the selector stage
* ``memory``   peak RSS of NystroemFeatures(M=2000).fit_transform on 1e5 x 50
               float32 (a fresh subprocess)

Usage::

    python benchmarks/studies/kernel_study.py run --store /tmp/kernel_study.jsonl
    python benchmarks/studies/kernel_study.py report --store /tmp/kernel_study.jsonl
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import sys  # noqa: E402

# This checkout's sklmargin, not an installed one.
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from datetime import datetime, timezone  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.kernel_approximation import Nystroem  # noqa: E402
from sklearn.model_selection import (  # noqa: E402
    GridSearchCV,
    StratifiedKFold,
    train_test_split,
)
from sklearn.multiclass import OneVsOneClassifier  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from sklmargin import MarginSoftmaxClassifier, NystroemFeatures

S_GRID = [30, 60, 100, 200, 300, 600]
GAMMA_MULTIPLES = [0.25, 0.5, 1.0, 2.0, 4.0]
SELECTORS = ["uniform", "kmeans++", "kmeans", "rpcholesky"]
WIDTHS = [500, 1000, 2000]
SVC_C = [1.0, 10.0, 100.0]
SVC_GAMMA_MULTIPLES = [0.25, 1.0, 4.0]
BASE = {"centres": "uniform", "M": 1000, "gamma": "scale", "s": 100, "m": 0.05}


# --------------------------------------------------------------------------- store
def load_store(path):
    """All rows recorded so far (``path`` may list several stores, comma-separated)."""
    rows = []
    for part in str(path).split(","):
        if Path(part).exists():
            with open(part) as handle:
                rows.extend(json.loads(line) for line in handle if line.strip())
    return rows


def append(path, row):
    """Record one row (flushed at once, so a killed run keeps it)."""
    with open(path, "a") as handle:
        handle.write(json.dumps(row) + "\n")


def key(row):
    """Identity of a measurement."""
    return (row["stage"], row["dataset"], json.dumps(row["config"], sort_keys=True))


# --------------------------------------------------------------------------- data
def load(data_dir, name):
    """Float32 train/test split and the 'scale' gamma of the standardised train."""
    data = np.load(Path(data_dir) / f"{name}.npz")
    X, X_test = (data["X_train"].astype(np.float32), data["X_test"].astype(np.float32))
    scaled = StandardScaler().fit_transform(X.astype(np.float64))
    gamma_scale = 1.0 / (X.shape[1] * scaled.var())
    return X, data["y_train"], X_test, data["y_test"], gamma_scale


def resolve_gamma(config, gamma_scale):
    """Config gamma ('scale', 'median' or a multiple of scale) as a transformer arg."""
    gamma = config["gamma"]
    if gamma in ("scale", "median"):
        return gamma
    return float(gamma) * gamma_scale


def ours(config, gamma_scale, random_state=0):
    """The pipeline for one configuration."""
    s = config["s"]
    tol = 1e-4 * 30 / s if config.get("stop", "relative") == "absolute" else 1e-4
    head = MarginSoftmaxClassifier(
        loss="am-softmax",
        m=config["m"],
        s=s,
        constant_feature=None,
        tol=tol,
        random_state=random_state,
    )
    if config.get("head") == "ovo":
        head = OneVsOneClassifier(head)
    return Pipeline(
        [
            ("scale", StandardScaler()),
            (
                "map",
                NystroemFeatures(
                    n_components=config["M"],
                    gamma=resolve_gamma(config, gamma_scale),
                    centres=config["centres"],
                    random_state=random_state,
                ),
            ),
            ("clf", head),
        ]
    )


def n_iter_of(model):
    """Solver iterations of the final step (max over OvO's binary heads)."""
    head = model.named_steps.get("clf") if hasattr(model, "named_steps") else model
    if hasattr(head, "estimators_"):
        return int(max(est.n_iter_ for est in head.estimators_))
    return int(getattr(head, "n_iter_", -1))


def evaluate(factory, X, y, X_test, y_test, cv=True):
    """3-fold CV accuracy, then refit: test accuracy, fit/predict seconds, n_iter."""
    row = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        if cv:
            folds = StratifiedKFold(3, shuffle=True, random_state=0)
            scores = []
            for train, valid in folds.split(X, y):
                model = factory().fit(X[train], y[train])
                scores.append(float(np.mean(model.predict(X[valid]) == y[valid])))
            row["cv"] = float(np.mean(scores))
        model = factory()
        start = time.perf_counter()
        model.fit(X, y)
        row["fit_s"] = time.perf_counter() - start
        start = time.perf_counter()
        predicted = model.predict(X_test)
        row["predict_s"] = time.perf_counter() - start
    row["test"] = float(np.mean(predicted == y_test))
    row["n_iter"] = n_iter_of(model)
    row["convergence_warnings"] = sum(
        issubclass(w.category, ConvergenceWarning) for w in caught
    )
    if hasattr(model, "named_steps") and "map" in model.named_steps:
        row["width"] = int(model.named_steps["map"].n_components_)
    return row


# --------------------------------------------------------------------------- choices
def mean_cv(rows, stage, config, datasets):
    """Mean CV accuracy of one config over the datasets (None if incomplete)."""
    wanted = json.dumps(config, sort_keys=True)
    found = {
        r["dataset"]: r["cv"]
        for r in rows
        if r["stage"] == stage and json.dumps(r["config"], sort_keys=True) == wanted
    }
    if set(datasets) - set(found):
        return None
    return float(np.mean([found[d] for d in datasets]))


def best(rows, stage, configs, datasets):
    """The config with the highest mean CV accuracy."""
    scored = [(mean_cv(rows, stage, c, datasets), i) for i, c in enumerate(configs)]
    scored = [(v, i) for v, i in scored if v is not None]
    if not scored:
        return None
    return configs[max(scored)[1]]


def s_configs():
    """Stage s: s x stop rule, most informative first.

    s=30 has one rule (both give an absolute gradient tolerance of 3e-3).
    """
    order = [
        (100, "relative"),
        (300, "relative"),
        (30, "relative"),
        (600, "relative"),
        (300, "absolute"),
        (100, "absolute"),
        (600, "absolute"),
        (60, "relative"),
        (200, "relative"),
        (200, "absolute"),
        (60, "absolute"),
    ]
    return [{**BASE, "s": s, "stop": stop} for s, stop in order]


def gamma_configs(chosen):
    """Stage gamma around the chosen s and stop, most informative first."""
    return [{**chosen, "gamma": g} for g in ("scale", 2.0, 0.5, "median", 4.0, 0.25)]


def selector_configs(chosen):
    """Stage selector: centres x width (k-means++ seeding alone at M=1000 only)."""
    order = [
        ("uniform", 1000),
        ("uniform", 2000),
        ("rpcholesky", 1000),
        ("kmeans", 1000),
        ("uniform", 500),
        ("rpcholesky", 500),
        ("kmeans", 500),
        ("rpcholesky", 2000),
        ("kmeans", 2000),
        ("kmeans++", 1000),
    ]
    return [{**chosen, "centres": c, "M": M} for c, M in order]


def chosen_config(rows, datasets, through):
    """The coordinate-wise CV choice after stage ``through``."""
    chosen = best(rows, "s", s_configs(), datasets)
    if chosen is None or through == "s":
        return chosen
    chosen = best(rows, "gamma", gamma_configs(chosen), datasets) or chosen
    if through == "gamma":
        return chosen
    return chosen


# --------------------------------------------------------------------------- stages
def stage_maptime(args, store, done, datasets):
    for name in ("letter", "usps"):
        if name not in datasets:
            continue
        X, *_ = load(args.data, name)
        X = StandardScaler().fit_transform(X)
        for M in WIDTHS:
            for impl in ("ours-float32", "sklearn-float64"):
                row = {
                    "stage": "maptime",
                    "dataset": name,
                    "config": {"M": M, "impl": impl},
                }
                if key(row) in done:
                    continue
                times = []
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    if impl.startswith("ours"):
                        NystroemFeatures(n_components=M, random_state=0).fit_transform(
                            X
                        )
                    else:
                        Nystroem(
                            gamma=1.0 / X.shape[1], n_components=M, random_state=0
                        ).fit_transform(X.astype(np.float64))
                    times.append(time.perf_counter() - start)
                row["seconds"] = statistics.median(times)
                append(store, row)
                print(row, flush=True)


def run_configs(args, store, done, datasets, stage, configs):
    """Config-major: a killed run leaves whole configs, over every dataset, done.

    A config already measured in another stage (same dict) is copied, not rerun.
    """
    measured = {
        (r["dataset"], json.dumps(r["config"], sort_keys=True)): r
        for r in load_store(store)
        if "cv" in r
    }
    for config in configs[: args.limit]:
        for name in datasets:
            row = {"stage": stage, "dataset": name, "config": config}
            if key(row) in done:
                continue
            previous = measured.get((name, json.dumps(config, sort_keys=True)))
            if previous is not None:
                row = {**previous, "stage": stage}
                append(store, row)
                done.add(key(row))
                continue
            X, y, X_test, y_test, gamma_scale = load(args.data, name)
            if config.get("head") == "ovo" and len(np.unique(y)) == 2:
                continue
            row.update(
                evaluate(
                    lambda c=config, g=gamma_scale: ours(c, g), X, y, X_test, y_test
                )
            )
            append(store, row)
            done.add(key(row))
            measured[(name, json.dumps(config, sort_keys=True))] = row
            print(row, flush=True)


def stage_svc(args, store, done, datasets):
    for name in datasets:
        row = {"stage": "svc", "dataset": name, "config": {"grid": "C x gamma"}}
        if key(row) in done:
            continue
        X, y, X_test, y_test, gamma_scale = load(args.data, name)
        X, X_test = X.astype(np.float64), X_test.astype(np.float64)
        X_grid, y_grid = X, y
        if len(y) > args.svc_grid_max:
            X_grid, _, y_grid, _ = train_test_split(
                X, y, train_size=args.svc_grid_max, stratify=y, random_state=0
            )
            row["grid_subsample"] = args.svc_grid_max
        if len(y) > args.svc_refit_max:
            X, _, y, _ = train_test_split(
                X, y, train_size=args.svc_refit_max, stratify=y, random_state=0
            )
            row["refit_subsample"] = args.svc_refit_max
        grid = GridSearchCV(
            Pipeline([("scale", StandardScaler()), ("svc", SVC())]),
            {
                "svc__C": SVC_C,
                "svc__gamma": [g * gamma_scale for g in SVC_GAMMA_MULTIPLES],
            },
            cv=StratifiedKFold(3, shuffle=True, random_state=0),
        )
        start = time.perf_counter()
        grid.fit(X_grid, y_grid)
        row["grid_s"] = time.perf_counter() - start
        row["cv"] = float(grid.best_score_)
        row["C"] = grid.best_params_["svc__C"]
        row["gamma_multiple"] = grid.best_params_["svc__gamma"] / gamma_scale
        best_model = clone(grid.best_estimator_)
        start = time.perf_counter()
        best_model.fit(X, y)
        row["fit_s"] = time.perf_counter() - start
        start = time.perf_counter()
        row["test"] = float(np.mean(best_model.predict(X_test) == y_test))
        row["predict_s"] = time.perf_counter() - start
        row["n_support"] = int(best_model.named_steps["svc"].n_support_.sum())
        append(store, row)
        done.add(key(row))
        print(row, flush=True)


def stage_default(args, store, done, datasets, config):
    rows = load_store(store)
    svc = {r["dataset"]: r for r in rows if r["stage"] == "svc"}
    for name in datasets:
        row = {"stage": "default", "dataset": name, "config": config}
        if key(row) in done or name not in svc:
            continue
        X, y, X_test, y_test, gamma_scale = load(args.data, name)
        X_svc, y_svc = X, y
        if len(y) > args.svc_refit_max:
            X_svc, _, y_svc, _ = train_test_split(
                X, y, train_size=args.svc_refit_max, stratify=y, random_state=0
            )
            row["svc_refit_subsample"] = args.svc_refit_max
        measured = {}
        for label, factory, Xtr, ytr, Xte in (
            ("ours", lambda g=gamma_scale: ours(config, g), X, y, X_test),
            (
                "svc",
                lambda best=svc[name], g=gamma_scale: Pipeline(
                    [
                        ("scale", StandardScaler()),
                        (
                            "svc",
                            SVC(
                                C=best["C"],
                                gamma=best["gamma_multiple"] * g,
                            ),
                        ),
                    ]
                ),
                X_svc.astype(np.float64),
                y_svc,
                X_test.astype(np.float64),
            ),
        ):
            repeats = 1 if len(y) > 20000 else args.repeats
            fits, predicts, acc = [], [], None
            for _ in range(repeats):
                result = evaluate(factory, Xtr, ytr, Xte, y_test, cv=False)
                fits.append(result["fit_s"])
                predicts.append(result["predict_s"])
                acc = result["test"]
            measured[label] = {
                "test": acc,
                "fit_s": statistics.median(fits),
                "predict_s": statistics.median(predicts),
                "repeats": repeats,
            }
        row.update(measured)
        append(store, row)
        done.add(key(row))
        print(row, flush=True)


def stage_memory(args, store, done):
    row = {"stage": "memory", "dataset": "synthetic 1e5 x 50 float32", "config": {}}
    if key(row) in done:
        return
    for centres in ("uniform", "rpcholesky"):
        output = subprocess.run(
            [sys.executable, __file__, "memory-probe", "--centres", centres],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        row[centres] = json.loads(output.strip().splitlines()[-1])
    append(store, row)
    print(row, flush=True)


def memory_probe(centres):
    """Peak RSS growth of fit_transform (MiB), printed as JSON."""
    rng = np.random.RandomState(0)
    X = rng.standard_normal((100_000, 50)).astype(np.float32)
    transformer = NystroemFeatures(n_components=2000, centres=centres, random_state=0)
    transformer.fit(X[:10])  # import and warm-up cost outside the measurement
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    Z = transformer.fit_transform(X)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "peak_growth_mib": peak - before,
                "output_mib": Z.nbytes / 2**20,
                "data_mib": X.nbytes / 2**20,
                "seconds": seconds,
            }
        )
    )


def run(args):
    store = args.store
    datasets = sorted(p.stem for p in Path(args.data).glob("*.npz"))
    if args.datasets:
        datasets = [d for d in datasets if d in args.datasets.split(",")]
    done = {key(r) for r in load_store(store)}
    stages = args.stages.split(",")
    everything = datasets
    sweeps = [d for d in datasets if d not in args.skip.split(",")]
    with threadpool_limits(1):
        for stage in stages:
            print(f"== stage {stage} {datetime.now(timezone.utc):%H:%M:%S}", flush=True)
            rows = load_store(store)
            datasets = everything if stage in ("svc", "default") else sweeps
            if stage == "maptime":
                stage_maptime(args, store, done, datasets)
            elif stage == "s":
                run_configs(args, store, done, datasets, "s", s_configs())
            elif stage == "gamma":
                chosen = chosen_config(rows, datasets, "s")
                run_configs(args, store, done, datasets, "gamma", gamma_configs(chosen))
            elif stage == "selector":
                chosen = chosen_config(rows, datasets, "gamma")
                run_configs(
                    args, store, done, datasets, "selector", selector_configs(chosen)
                )
            elif stage == "svc":
                stage_svc(args, store, done, datasets)
            elif stage in ("ovo", "m", "default"):
                chosen = json.loads(args.config) if args.config else None
                if chosen is None:
                    chosen = chosen_config(rows, datasets, "gamma")
                if stage == "ovo":
                    configs = [{**chosen, "head": "ovo"}]
                    run_configs(args, store, done, datasets, "ovo", configs)
                elif stage == "m":
                    configs = [{**chosen, "m": m} for m in (0.0, 0.05, 0.1, 0.2)]
                    run_configs(args, store, done, datasets, "m", configs)
                else:
                    stage_default(args, store, done, datasets, chosen)
            elif stage == "extra":  # exactly the --config given, in the selector table
                configs = [json.loads(args.config)]
                run_configs(args, store, done, datasets, "selector", configs)
            elif stage == "memory":
                stage_memory(args, store, done)
            else:
                raise SystemExit(f"unknown stage {stage!r}")


# --------------------------------------------------------------------------- report
def fmt_config(config, keys):
    return ", ".join(f"{k}={config[k]}" for k in keys if k in config)


def table(rows, stage, keys, datasets, value="test"):
    """Markdown: one line per config, one column per dataset, mean CV and test."""
    mean_over = [d for d in datasets if d != "a9a"]
    configs = []
    for r in rows:
        if r["stage"] == stage and r["config"] not in configs:
            configs.append(r["config"])
    lines = [
        "| config | " + " | ".join(datasets) + " | mean CV | mean test |",
        "|---|" + "---|" * (len(datasets) + 2),
    ]
    for config in configs:
        cells, cvs, tests = [], {}, {}
        for d in datasets:
            hit = [r for r in rows if r["stage"] == stage and r["dataset"] == d]
            hit = [r for r in hit if r["config"] == config]
            if not hit:
                cells.append("")
                continue
            r = hit[-1]
            cvs[d] = r.get("cv", np.nan)
            tests[d] = r["test"]
            if value == "test":
                cells.append(
                    f"{100 * r['test']:.1f} ({100 * r.get('cv', np.nan):.1f}) "
                    f"{r['fit_s']:.1f}s/{r['predict_s']:.2f}s it{r['n_iter']}"
                )
        # Means over the sweep datasets (a9a is left out of the sweeps).
        complete = all(d in tests for d in mean_over)
        mean_cv = np.mean([cvs[d] for d in mean_over]) if complete else None
        mean_test = np.mean([tests[d] for d in mean_over]) if complete else None
        mean_cv_text = f"{100 * mean_cv:.2f}" if complete else "partial"
        mean_test_text = f"{100 * mean_test:.2f}" if complete else "partial"
        lines.append(
            f"| {fmt_config(config, keys)} | "
            + " | ".join(cells)
            + f" | {mean_cv_text} | {mean_test_text} |"
        )
    return "\n".join(lines)


def report(args):
    rows = load_store(args.store)
    datasets = sorted({r["dataset"] for r in rows if r["stage"] == "s"})
    print(
        f"Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"{platform.machine()}, 1 BLAS thread, scikit-learn {sklearn.__version__}.\n"
        "Cells: test % (3-fold CV % on the training split) fit s / predict s, "
        "solver iterations of the refit.\n"
    )
    for stage, keys in (
        ("s", ["s", "stop"]),
        ("gamma", ["gamma"]),
        ("selector", ["centres", "M"]),
        ("ovo", ["head"]),
        ("m", ["m"]),
    ):
        if any(r["stage"] == stage for r in rows):
            print(f"### stage {stage}\n")
            print(table(rows, stage, keys, datasets) + "\n")
    svc = [r for r in rows if r["stage"] == "svc"]
    if svc:
        print("### SVC(rbf), GridSearchCV(cv=3) over C x gamma\n")
        print("| dataset | C | gamma/scale | CV | test | fit s | predict s | n_SV |")
        print("|---|---|---|---|---|---|---|---|")
        for r in svc:
            print(
                f"| {r['dataset']} | {r['C']:g} | {r['gamma_multiple']:g} | "
                f"{100 * r['cv']:.1f} | {100 * r['test']:.2f} | {r['fit_s']:.2f} | "
                f"{r['predict_s']:.2f} | {r['n_support']} |"
            )
        print()
    maptime = [r for r in rows if r["stage"] == "maptime"]
    if maptime:
        print("### map fit+transform seconds (training split)\n")
        print("| dataset | M | impl | seconds |\n|---|---|---|---|")
        for r in maptime:
            c = r["config"]
            print(f"| {r['dataset']} | {c['M']} | {c['impl']} | {r['seconds']:.2f} |")
        print()
    default = [r for r in rows if r["stage"] == "default"]
    if default:
        print("### default vs tuned SVC, same run\n")
        print(
            "| head | dataset | ours test | SVC test | diff | ours fit | SVC fit | "
            "ours predict | SVC predict |\n|---|---|---|---|---|---|---|---|---|"
        )
        for r in sorted(
            default, key=lambda r: (r["config"].get("head", ""), r["dataset"])
        ):
            o, v = r["ours"], r["svc"]
            head = r["config"].get("head", "multinomial")
            subsample = " (SVC on 10k rows)" if "svc_refit_subsample" in r else ""
            print(
                f"| {head} | {r['dataset']}{subsample} | {100 * o['test']:.2f} | "
                f"{100 * v['test']:.2f} | "
                f"{100 * (o['test'] - v['test']):+.2f} | {o['fit_s']:.2f} | "
                f"{v['fit_s']:.2f} | {o['predict_s']:.3f} | {v['predict_s']:.3f} |"
            )
        print()
    for r in rows:
        if r["stage"] == "memory":
            print("### memory\n\n" + json.dumps(r) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["run", "report", "memory-probe"])
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--store", default="kernel_study.jsonl")
    parser.add_argument("--datasets", help="comma-separated names (default: all)")
    parser.add_argument(
        "--skip", default="", help="comma-separated datasets left out of the sweeps"
    )
    parser.add_argument(
        "--stages", default="maptime,s,gamma,selector,svc,ovo,default,memory,m"
    )
    parser.add_argument("--config", help="JSON config for ovo/m/default stages")
    parser.add_argument(
        "--limit", type=int, help="run only the first LIMIT configs of each sweep"
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--svc-grid-max", type=int, default=10_000)
    parser.add_argument("--svc-refit-max", type=int, default=10**9)
    parser.add_argument("--centres", default="uniform")
    args = parser.parse_args()
    if args.command == "run":
        run(args)
    elif args.command == "report":
        report(args)
    else:
        with threadpool_limits(1):
            memory_probe(args.centres)


if __name__ == "__main__":
    main()
