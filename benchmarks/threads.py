"""Fit and predict times under sklmargin's BLAS thread policy, against one thread.

Three ways to run the same fits, each in a fresh Python process (the BLAS
libraries read their environment once, at import), one data set at a time
with the three runs back to back so that they see the same machine load:

``policy``
    no thread variables in the environment, sklmargin's default: BLAS capped
    at ``sklmargin.get_blas_threads()`` (1) inside fit and predict;
``no-policy``
    no thread variables, ``sklmargin.set_blas_threads(None)``: BLAS uses its
    own default (all cores), as before the policy;
``one-thread``
    ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1`` in the
    environment: every library on one thread (the advice the policy replaces).

Models: ``make_pipeline(StandardScaler(), MarginSoftmaxClassifier())`` and
``make_pipeline(StandardScaler(), KernelMarginSoftmaxClassifier(random_state=0))``
at their defaults, fitted on each set's training split (``--max-rows``:
stratified subsample, seed 0) and predicting its test split. Wall seconds
(what threads change), CPU seconds beside them; the table gives each set's
fit wall time per run and the ratio of ``policy`` and ``no-policy`` to
``one-thread`` (below 1: faster than one thread). Say whether the machine was
idle or busy when you quote it: threads pay, or cost, depending on what else runs.

Usage::

    python benchmarks/threads.py
    python benchmarks/threads.py --datasets vowel,segment --max-rows 5000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RUNS = ("policy", "no-policy", "one-thread")
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
MODELS = ("linear", "kernel")
DATASETS = (
    "vowel",
    "segment",
    "dna",
    "satimage",
    "pendigits",
    "usps",
    "letter",
    "a9a",
    "synthetic",
)


def child(args):
    """Fit the models on one set in this process; print one JSON line each."""
    from kernel_targets import split_of
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_info

    import sklmargin

    if args.run == "no-policy":
        sklmargin.set_blas_threads(None)
    X, y, X_test, _ = split_of(args.data, args.child)
    if args.max_rows and len(y) > args.max_rows:
        X, _, y, _ = train_test_split(
            X, y, train_size=args.max_rows, stratify=y, random_state=0
        )
    makers = {
        "linear": lambda: sklmargin.MarginSoftmaxClassifier(),
        "kernel": lambda: sklmargin.KernelMarginSoftmaxClassifier(random_state=0),
    }
    blas = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    for model in args.models.split(","):
        pipe = make_pipeline(StandardScaler(), makers[model]())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cpu, wall = time.process_time(), time.perf_counter()
            pipe.fit(X, y)
            fit_cpu, fit_wall = time.process_time() - cpu, time.perf_counter() - wall
            cpu, wall = time.process_time(), time.perf_counter()
            pipe.predict(X_test)
            pred_cpu, pred_wall = time.process_time() - cpu, time.perf_counter() - wall
        print(
            json.dumps(
                {
                    "dataset": args.child,
                    "model": model,
                    "run": args.run,
                    "rows": int(len(y)),
                    "blas_threads_outside_fit": blas,
                    "fit_wall": round(fit_wall, 3),
                    "fit_cpu": round(fit_cpu, 3),
                    "predict_wall": round(pred_wall, 3),
                    "predict_cpu": round(pred_cpu, 3),
                }
            ),
            flush=True,
        )


def run_child(args, dataset, run):
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    if run == "one-thread":
        env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    command = [
        sys.executable, str(Path(__file__).resolve()), "--child", dataset,
        "--run", run, "--data", str(args.data), "--models", args.models,
        "--max-rows", str(args.max_rows),
    ]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{dataset} {run} failed:\n{done.stderr}")
    return [json.loads(line) for line in done.stdout.splitlines() if line[:1] == "{"]


def table(rows):
    cell = {(r["dataset"], r["model"], r["run"]): r for r in rows}
    lines = [
        "| set | model | rows | fit wall s: policy | no-policy | one-thread | "
        "policy / one-thread | no-policy / one-thread | predict wall s: policy | "
        "no-policy | one-thread |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ratios = {"policy": [], "no-policy": []}
    for dataset, model in dict.fromkeys((r["dataset"], r["model"]) for r in rows):
        got = [cell.get((dataset, model, run)) for run in RUNS]
        if None in got:
            continue
        policy, free, one = got
        for name, r in (("policy", policy), ("no-policy", free)):
            ratios[name].append(r["fit_wall"] / one["fit_wall"])
        lines.append(
            f"| {dataset} | {model} | {one['rows']} | {policy['fit_wall']:.2f} | "
            f"{free['fit_wall']:.2f} | {one['fit_wall']:.2f} | "
            f"{policy['fit_wall'] / one['fit_wall']:.2f} | "
            f"{free['fit_wall'] / one['fit_wall']:.2f} | "
            f"{policy['predict_wall']:.3f} | {free['predict_wall']:.3f} | "
            f"{one['predict_wall']:.3f} |"
        )
    for name, values in ratios.items():
        if values:
            lines.append(
                f"\n{name} / one-thread fit wall time: geometric mean "
                f"{np.exp(np.mean(np.log(values))):.2f}, worst {max(values):.2f} "
                f"({len(values)} fits)"
            )
    return "\n".join(lines)


def main():
    sys.path.insert(0, str(HERE))
    from _common import add_data_argument, machine, now, versions

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument(
        "--max-rows", type=int, default=0, help="subsample larger training splits"
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--run", default=None, choices=RUNS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    print(f"# {now()} {machine()} {versions()}", flush=True)
    print(f"# load average at start: {os.getloadavg()}", flush=True)
    rows = []
    for dataset in args.datasets.split(","):
        for run in RUNS:
            got = run_child(args, dataset, run)
            for r in got:
                print(
                    f"{r['dataset']} {r['model']} {r['run']}: fit {r['fit_wall']} s "
                    f"wall, {r['fit_cpu']} s CPU",
                    flush=True,
                )
            rows += got
    print(f"# load average at end: {os.getloadavg()}", flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
