"""Solver variants against label stability: which L-BFGS run makes a fit the data's?

A research harness for issue 27 (``benchmarks/results_label_stability.md``,
section 8). It replaces the package's L-BFGS run (``sklmargin.solver._lbfgs.
lbfgs``) for the normalised-prototype losses by a configurable one and reports,
per data set and model, the percentage of test labels that change under
``X * (1 + 2 eps)``, ``X * (1 - 2 eps)`` and two row permutations (seeds 0 and
1), the worst of the four, and the median CPU seconds of the five fits (one
BLAS thread; run under the shared benchmark lock)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/solver_variants.py \\
        --alpha 1 --memory 10 --raw --runs linear:letter

A variant is the bias scale (``--alpha``: ``sd`` = ``s / sqrt(d)``, or a number;
1 = unscaled), the curvature pairs (``--memory``), the stopping test (default:
the scaled gradient with each prototype on its sphere below ``tol * s``;
``--raw``: scipy's test on the raw largest entry) and, for the kernel model,
``--plain-pilot`` (the learned metric's pilot fits, 500 features, keep the
package's run). ``--alpha 1 --memory 10 --raw`` is the run before round 5.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from _common import add_data_argument, now, pinned_blas, versions
from label_stability import MINUS_TWO_ULP, TWO_ULP, standardised
from scipy.optimize import minimize

from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier
from sklmargin.solver import _lbfgs, _sphere

PACKAGE_RUN = _lbfgs.lbfgs


def variant_run(alpha, memory, raw, plain_pilot):
    """An ``lbfgs`` replacement for the normalised-prototype losses."""

    def run(fun, x0, *, max_iter, tol, stationarity=None, verbose=0, **_):
        objective = fun.func.__self__
        layout = objective.layout
        if not objective.margin.normalizes_W or (
            plain_pilot and layout.n_features == 500  # the metric's pilot map
        ):
            return PACKAGE_RUN(
                fun, x0, max_iter=max_iter, tol=tol, stationarity=stationarity
            )
        scale = np.ones(layout.n_params)
        _, bias = layout.unpack(scale)
        if bias is not None:
            s = objective.s or 1.0
            bias[:] = s / np.sqrt(layout.n_features) if alpha == "sd" else float(alpha)
        last = {}
        scaled = _sphere.scaled_problem(fun, scale, last)

        def stop(intermediate_result):
            z = intermediate_result.x
            if np.array_equal(z, last["z"]) and (
                layout.stationarity(z, last["grad"], normalizes_W=True) <= tol
            ):
                raise StopIteration

        options = {
            "maxiter": max_iter,
            "gtol": tol if raw else 0.0,
            "ftol": _lbfgs._FTOL,
            "maxls": 50,
            "maxcor": memory,
        }
        result = minimize(
            scaled, x0 / scale, jac=True, method="L-BFGS-B", options=options,
            callback=None if raw else stop,
        )  # fmt: skip
        grad = layout.stationarity(result.x, result.jac, normalizes_W=True)
        return _lbfgs.SolverResult(
            scale * result.x, int(result.nit), grad <= 10 * tol, "", grad
        )

    return run


def measure(model_name, name, data_dir):
    X, y, X_test, y_test = standardised(data_dir, name)
    variants = {
        "base": (X, y),
        "+2ulp": (X * TWO_ULP, y),
        "-2ulp": (X * MINUS_TWO_ULP, y),
    }
    for seed in (0, 1):
        order = np.random.default_rng(seed).permutation(len(y))
        variants[f"perm{seed}"] = (X[order], y[order])
    labels, cpus = {}, []
    for variant, (X_fit, y_fit) in variants.items():
        model = (
            MarginSoftmaxClassifier()
            if model_name == "linear"
            else KernelMarginSoftmaxClassifier(random_state=0)
        )
        cpu = time.process_time()
        model.fit(X_fit, y_fit)
        cpus.append(time.process_time() - cpu)
        labels[variant] = model.predict(X_test)
    accuracy = 100 * np.mean(labels["base"] == y_test)
    changed = {
        key: 100 * np.mean(value != labels["base"])
        for key, value in labels.items()
        if key != "base"
    }
    return accuracy, changed, float(np.median(cpus))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--alpha", default="sd", help="bias scale: sd or a number")
    parser.add_argument("--memory", type=int, default=50)
    parser.add_argument("--raw", action="store_true")
    parser.add_argument("--plain-pilot", action="store_true")
    parser.add_argument(
        "--runs",
        nargs="+",
        default=["linear:satimage", "linear:usps", "linear:letter"],
        help="model:data pairs, model linear or kernel",
    )
    args = parser.parse_args(argv)
    print(f"# {now()}; {versions()}")
    print("# " + " ".join(["python", *sys.argv]))
    _lbfgs.lbfgs = variant_run(args.alpha, args.memory, args.raw, args.plain_pilot)
    print(
        "| model | data | acc % | +2 ulp | -2 ulp | perm 0 | perm 1 | worst % "
        "| fit CPU s (median of 5) |"
    )
    print("|---" * 9 + "|")
    with pinned_blas(1, announce=False):
        for spec in args.runs:
            model_name, name = spec.split(":")
            accuracy, changed, cpu = measure(model_name, name, args.data)
            print(
                f"| {model_name} | {name} | {accuracy:.2f} | "
                + " | ".join(
                    f"{changed[k]:.2f}" for k in ("+2ulp", "-2ulp", "perm0", "perm1")
                )
                + f" | {max(changed.values()):.2f} | {cpu:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
