"""Which stage of the kernel fit moves its test labels under round-off or row order.

The default ``KernelMarginSoftmaxClassifier(random_state=0)`` fit has four
stages whose state could carry a 2-ulp change of the rows, or a permutation of
them, into the labels: the learned metric (``input_transform_``), the resolved
``gamma``, the Nyström centres, and the final L-BFGS solve. ``label_stability.py``
measures the labels; this study holds the stages, one after the other, at the
base fit's state (by patching the package's functions for the run) and measures
the labels again, on the data and perturbations of ``label_stability.py``
(``StandardScaler``, float32; ``X * (1 +/- 2 eps)``, permutations of seeds 0 and 1).

``stages`` (``--fix`` a list of: ``""`` nothing, ``T`` the metric, ``Tg`` metric
and gamma, ``Tgc`` metric, gamma and centres) prints, per perturbation, the
labels changed, the largest difference of the transform over its largest entry
(``dT``), the relative difference of the gamma the fit computes (``dg``, before
it is replaced by the held one) and how many of the 1,000 centres it chooses are
the base fit's (rounded to 4 decimals, so round-off alone can miss a few).

``solve`` holds metric, gamma and centres at the base fit's and varies the final
solve (``--configs`` JSON: ``[[label, {params}], ...]``; ``params`` are the
estimator's, plus ``maxcor``, the curvature pairs of the plain L-BFGS runs, set
for the run by wrapping scipy's ``minimize``).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        python benchmarks/studies/label_stages.py stages --data DIR satimage
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        python benchmarks/studies/label_stages.py solve --data DIR satimage \
        --configs '[["default", {}], ["maxcor50", {"maxcor": 50}]]'
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from label_stability import MINUS_TWO_ULP, TWO_ULP, standardised  # noqa: E402

import sklmargin.solver._lbfgs as lbfgs_module  # noqa: E402
from sklmargin import KernelMarginSoftmaxClassifier  # noqa: E402
from sklmargin.estimators import _metric  # noqa: E402
from sklmargin.features import _kernel_features, _nystroem  # noqa: E402

STATE = {"fix": "", "maxcor": None}
HELD = {}
_learn = _metric.learn_input_transform
_scale = _kernel_features.scale_gamma
_select = _nystroem.select_centres
_minimize = lbfgs_module.minimize


def learn(estimator, keys, take, dtype):
    if "T" in STATE["fix"] and "T" in HELD:
        return HELD["T"].copy()
    saved, STATE["maxcor"] = STATE["maxcor"], None  # the pilot as the package's
    try:
        return _learn(estimator, keys, take, dtype)
    finally:
        STATE["maxcor"] = saved


def scale(X, weights):
    HELD["g_new"] = _scale(X, weights)  # (what this fit computes, held or not)
    if "g" in STATE["fix"] and "g" in HELD:
        return HELD["g"]
    return HELD["g_new"]


def select(X, weights, n, gamma, kind, rng, **kwargs):
    HELD["c_new"] = _select(X, weights, n, gamma, kind, rng, **kwargs)
    if "c" in STATE["fix"] and "c" in HELD:
        return HELD["c"].copy()
    return HELD["c_new"]


def minimize(*args, **kwargs):
    options = kwargs.get("options", {})
    if STATE["maxcor"] and "maxcor" not in options:
        kwargs["options"] = {**options, "maxcor": STATE["maxcor"]}
    return _minimize(*args, **kwargs)


_metric.learn_input_transform = learn
_kernel_features.scale_gamma = scale
_nystroem.select_centres = select
lbfgs_module.minimize = minimize


def fit(X, y, params=None):
    params = dict(params or {})
    STATE["maxcor"] = params.pop("maxcor", None)
    model = KernelMarginSoftmaxClassifier(random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu = time.process_time()
        model.fit(X, y)
    return model, time.process_time() - cpu


def variants(X, y):
    first = np.random.default_rng(0).permutation(len(y))
    second = np.random.default_rng(1).permutation(len(y))
    return {
        "+2ulp": (X * TWO_ULP, y),
        "perm0": (X[first], y[first]),
        "-2ulp": (X * MINUS_TWO_ULP, y),
        "perm1": (X[second], y[second]),
    }


def hold_base(X, y):
    STATE["fix"] = ""
    base, _ = fit(X, y)
    HELD.update(T=base.input_transform_.copy(), g=HELD["g_new"], c=HELD["c_new"])
    return base


def stages(name, data):
    X, y, X_test, y_test = standardised(data, name)
    base = hold_base(X, y)
    labels = base.predict(X_test)
    rounded = {tuple(row) for row in HELD["c"].astype(np.float64).round(4)}
    print(f"# {name}: accuracy {100 * np.mean(labels == y_test):.2f} %")
    for fix in ("", "T", "Tg", "Tgc"):
        STATE["fix"] = fix
        cells = []
        for variant, (X_fit, y_fit) in variants(X, y).items():
            model, _ = fit(X_fit, y_fit)
            T = model.input_transform_
            dT = np.max(np.abs(T - HELD["T"])) / np.max(HELD["T"])
            dg = HELD["g_new"] / HELD["g"] - 1.0
            new = {tuple(r) for r in HELD["c_new"].astype(np.float64).round(4)}
            changed = 100 * np.mean(model.predict(X_test) != labels)
            cells.append(
                f"{variant} {changed:.2f} % (dT {dT:.0e}, dg {dg:.0e}, "
                f"centres {len(rounded & new)}, iter {model.n_iter_})"
            )
        print(f"| {name} | {fix or '-'} | " + " | ".join(cells) + " |", flush=True)


def solve(name, data, configs):
    X, y, X_test, y_test = standardised(data, name)
    hold_base(X, y)
    STATE["fix"] = "Tgc"
    for label, params in configs:
        base, cpu = fit(X, y, params)
        labels = base.predict(X_test)
        cells = [
            f"{label}: acc {100 * np.mean(labels == y_test):.2f} %, "
            f"iter {base.n_iter_}, map + solve CPU {cpu:.2f} s"
        ]
        for variant, (X_fit, y_fit) in variants(X, y).items():
            if variant.startswith("perm"):
                continue
            model, _ = fit(X_fit, y_fit, params)
            changed = 100 * np.mean(model.predict(X_test) != labels)
            cells.append(f"{variant} {changed:.2f} % (iter {model.n_iter_})")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("stages", "solve"))
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--configs", type=json.loads, default=[["default", {}]])
    args = parser.parse_args()
    for name in args.datasets:
        if args.part == "stages":
            stages(name, args.data)
        else:
            solve(name, args.data, args.configs)


if __name__ == "__main__":
    main()
