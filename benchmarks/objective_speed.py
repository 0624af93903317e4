"""CPU seconds of objective evaluations, for two source trees side by side.

``python benchmarks/objective_speed.py TREE [TREE ...]`` times, for each tree
(a checkout whose ``sklmargin`` is imported by ``PYTHONPATH``), ``--evals``
evaluations of the training objective and its gradient
(``LinearMarginObjective.loss_gradient``) on fixed problems:

* ``linear``: 20,000 x 64 Gaussian rows, 10 classes, AM-Softmax;
* ``kernel``: the same rows through 512 random Fourier features (the kernel
  estimator's objective on mapped rows), AM-Softmax;
* ``linear32``: the linear problem in float32.

Each measurement runs in a fresh process; the trees alternate within each of
``--repeats`` rounds (interleaved, so that a load change on the machine hits
both alike), and the median CPU seconds (``time.process_time``) per problem and
tree are printed with the ratio to the first tree. Run it with one BLAS thread
and the shared benchmark lock::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 flock /tmp/sklmargin-bench.lock \\
        python benchmarks/objective_speed.py /tmp/base . --repeats 7
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

PROBLEMS = ("linear", "kernel", "linear32")


def _problem(name):
    import numpy as np

    from sklmargin.features import RandomFourierFeatures
    from sklmargin.losses._registry import get_margin
    from sklmargin.objective._linear import LinearMarginObjective
    from sklmargin.objective._rows import prepare_rows

    rng = np.random.default_rng(0)
    n, d, k = 20_000, 64, 10
    centres = rng.standard_normal((k, d))
    y = rng.integers(0, k, n)
    X = centres[y] + 2.0 * rng.standard_normal((n, d))
    if name == "kernel":
        X = RandomFourierFeatures(n_components=512, random_state=0).fit_transform(X)
    if name == "linear32":
        X = X.astype(np.float32)
    margin = get_margin("am-softmax")
    rows = prepare_rows(X, normalize=True)
    objective = LinearMarginObjective(
        rows, y, k, np.ones(n), margin, 0.35, 30.0, 1.0, True
    )
    params = 0.1 * rng.standard_normal(objective.n_params)
    return objective, params


def _measure(name, evals):
    objective, params = _problem(name)
    objective.loss_gradient(params)  # warm-up: first-use constants, allocations
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(evals):
        value, _ = objective.loss_gradient(params)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"problem": name, "cpu_s": cpu, "wall_s": wall, "value": value}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--evals", type=int, default=40)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:  # one measurement, in this process
        print(json.dumps(_measure(args.child, args.evals)))
        return
    results = {}
    for _ in range(args.repeats):
        for tree in args.trees:
            for name in PROBLEMS:
                env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
                out = subprocess.run(
                    [sys.executable, __file__, "--child", name,
                     "--evals", str(args.evals)],
                    env=env, check=True, capture_output=True, text=True,
                )  # fmt: skip
                row = json.loads(out.stdout.splitlines()[-1])
                results.setdefault((name, tree), []).append(row)
    first = args.trees[0]
    print(f"{args.evals} evaluations, median of {args.repeats} (CPU s, wall s)")
    for name in PROBLEMS:
        base = statistics.median(r["cpu_s"] for r in results[(name, first)])
        for tree in args.trees:
            rows = results[(name, tree)]
            cpu = statistics.median(r["cpu_s"] for r in rows)
            wall = statistics.median(r["wall_s"] for r in rows)
            values = {r["value"] for r in rows}
            print(
                f"{name:9s} {tree:20s} cpu {cpu:7.3f}  wall {wall:7.3f}  "
                f"ratio {cpu / base:6.3f}  value {sorted(values)}"
            )


if __name__ == "__main__":
    main()
