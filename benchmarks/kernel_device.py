"""The kernel estimator at scale on a device: accuracy, fit time, stage profile.

The scale issue's generator, ``make_classification(n_samples=n + 10000,
n_features=50, n_informative=30, n_classes=10, random_state=0)``: the first
``n`` rows train, the last 10,000 test, standardised on the training rows,
float32, as torch tensors on ``--device``. Per size and model: test accuracy,
fit and predict wall seconds (the device synchronised), the chosen width,
iterations and objective evaluations, then a second fit under cProfile, whose
cumulative seconds are summed into the fit's stages (:data:`STAGES`), and the
two-GEMM floor of one evaluation (``F @ W`` and ``F.T @ G`` for ``n x M``
features in the fit's dtype, ``K`` classes: the least any objective can read)
times the evaluations the fit took. One warm-up fit on 2,000 rows first
(``--warmup``: the CUDA context, the kernels' first load). One BLAS and torch
thread on the host.

Usage::

    python benchmarks/kernel_device.py --device cuda \\
        [--sizes 20000,400000,1000000] [--models default,path,4000] \\
        [--out rows.jsonl]
    python benchmarks/kernel_device.py --device cpu --sizes 3000 --models default

A model is ``default`` (``KernelMarginSoftmaxClassifier()``), ``path``
(``n_components="path"``: the width the data choose) or an integer width.

Reading the stages: cProfile times the host. Device work is queued
asynchronously and is charged to whatever next waits for it (a copy to the
host, the solver's callback), so on a GPU the stages say where the host
waits, not where the device computes. The stages nest: "scipy L-BFGS-B
core" includes the metric's pilot fits as well as the final solve. Each size
and model is fitted twice (timed, then profiled) after building up to a
million rows on one host thread: on a machine lent for minutes, run the
sizes one command each, with ``--out`` (rows are written as they finish).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("SCIPY_ARRAY_API", "1")  # scikit-learn's dispatch needs it

import argparse  # noqa: E402
import cProfile  # noqa: E402
import json  # noqa: E402
import pstats  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from _common import device_timed, generated_split, machine, now, versions  # noqa: E402
from sklearn import config_context  # noqa: E402

from sklmargin import KernelMarginSoftmaxClassifier  # noqa: E402

#: The fit's stages: (label, file suffix, function name) of the function whose
#: cumulative time is the stage's. Stages nest in the order of a fit (the
#: centres inside the map's fit), so they are reported, not added up.
STAGES = (
    ("metric (pilot fits, AGOP)", "estimators/_metric.py", "learn_input_transform"),
    ("row keys of the metric", "estimators/_metric.py", "training_row_keys"),
    ("row hashes", "features/_row_keys.py", "row_hashes"),
    ("distinct rows", "features/_row_keys.py", "unique_hashes"),
    ("gamma", "features/_gamma.py", "scale_gamma"),
    ("map fit (centres, factor)", "features/_nystroem.py", "fit"),
    ("centres", "features/_centres.py", "select_centres"),
    ("width path", "features/_width.py", "path_map"),
    ("map rows", "features/_nystroem.py", "transform"),
    ("solve (L-BFGS)", "solver/_lbfgs.py", "fit_continuation"),
    ("scipy L-BFGS-B core", "scipy/optimize/_lbfgsb_py.py", "_minimize_lbfgsb"),
)


def issue_data(n, torch, device):
    """The issue's rows (:func:`generated_split`) as tensors on ``device``."""
    return tuple(torch.asarray(part, device=device) for part in generated_split(n))


def make_model(name):
    """``default``, ``path`` or an integer width: an unfitted estimator."""
    if name == "default":
        return KernelMarginSoftmaxClassifier()
    if name == "path":
        return KernelMarginSoftmaxClassifier(n_components="path")
    return KernelMarginSoftmaxClassifier(n_components=int(name))


def stage_seconds(profile):
    """Cumulative seconds of each of :data:`STAGES` in a cProfile run."""
    stats = pstats.Stats(profile).stats
    seconds = {}
    for label, suffix, name in STAGES:
        total = sum(
            entry[3]
            for (path, _, function), entry in stats.items()
            if function == name and path.replace(os.sep, "/").endswith(suffix)
        )
        if total:
            seconds[label] = round(total, 4)
    return seconds


def gemm_floor(torch, device, n, width, n_classes, dtype, repeats=5):
    """Seconds of one evaluation's two GEMMs on ``n x width`` features."""
    dtype = getattr(torch, np.dtype(dtype).name)
    features = torch.rand((n, width), dtype=dtype, device=device)
    coef = torch.rand((width, n_classes), dtype=dtype, device=device)
    grad = torch.rand((n, n_classes), dtype=dtype, device=device)

    def both():
        return features @ coef, features.T @ grad

    device_timed(both, torch, device)  # first call: kernels load
    _, seconds, _ = device_timed(
        lambda: [both() for _ in range(repeats)], torch, device
    )
    return seconds / repeats


def run(n, name, torch, device):
    """One size and model: the row of the results."""
    X, y, X_test, y_test = issue_data(n, torch, device)
    model = make_model(name)
    with config_context(array_api_dispatch=True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, fit_s, _ = device_timed(lambda: model.fit(X, y), torch, device)
        labels, predict_s, _ = device_timed(
            lambda: model.predict(X_test), torch, device
        )
        profile = cProfile.Profile()
        profile.enable()
        device_timed(lambda: make_model(name).fit(X, y), torch, device)
        profile.disable()
    accuracy = float((labels == y_test).to(torch.float64).mean())
    evaluations = int(model._fit_stats.get("n_evaluations", 0))
    floor = gemm_floor(
        torch, device, n, int(model.n_components_), len(model.classes_),
        model.compute_dtype_,
    )  # fmt: skip
    return {
        "n": n, "model": name, "device": device,
        "accuracy": round(100 * accuracy, 2),
        "fit_s": round(fit_s, 3), "predict_s": round(predict_s, 3),
        "n_components": int(model.n_components_), "n_iter": int(model.n_iter_),
        "evaluations": evaluations, "two_gemm_s": round(floor, 5),
        "floor_s": round(floor * evaluations, 3),
        "stages_s": stage_seconds(profile),
    }  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--sizes", default="20000,400000,1000000")
    parser.add_argument("--models", default="default,path")
    parser.add_argument("--out", default=None, help="append JSON rows here")
    parser.add_argument("--warmup", type=int, default=2_000, help="rows; 0: none")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no GPU (use --device cpu)")
    device_name = (
        torch.cuda.get_device_name(args.device)
        if args.device.startswith("cuda")
        else "host"
    )
    print(f"# {now()}; {machine()}; {device_name}; {versions()}", flush=True)
    if args.warmup:
        run(args.warmup, "default", torch, args.device)  # not reported
    for n in (int(size) for size in args.sizes.split(",")):
        for name in args.models.split(","):
            row = run(n, name, torch, args.device)
            print(json.dumps(row), flush=True)
            if args.out:
                with open(args.out, "a") as handle:
                    handle.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
