"""One fit and predict of each estimator on NumPy, torch cpu and torch cuda.

Synthetic data (default 100,000 x 64 float32, 10 classes labelled by a random
teacher network), the same rows and
seeds for every backend; wall and CPU seconds (``time.process_time``) of
``fit`` and of ``predict_proba`` on the training rows, L-BFGS evaluations, the
time spent moving parameters and gradients between host and device per
evaluation (measured inside the objective; on cuda it includes waiting for the
device), and the largest difference of ``predict_proba`` to the NumPy fit.
One BLAS thread (OMP/OpenBLAS/MKL env, threadpoolctl) and
``torch.set_num_threads(1)``. torch cuda is skipped with a printed line when no
GPU is visible. Run in a fresh process:

    python benchmarks/array_api.py [--n 100000] [--d 64] [--m 500]
    python benchmarks/array_api.py --numpy-only   # numpy timings alone

``--numpy-only`` is the "a NumPy user sees no change" check: run it on the
branch and on the base commit (a separate worktree, ``PYTHONPATH`` pointing at
it) and compare.
"""

from __future__ import annotations

import os

# Before NumPy, scipy and torch are imported: their thread pools read these.
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"
os.environ.setdefault("SCIPY_ARRAY_API", "1")  # scikit-learn's dispatch needs it

import argparse  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from _common import device_timed  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import sklmargin  # noqa: E402
from sklmargin import (  # noqa: E402
    KernelMarginSoftmaxClassifier,
    MarginSoftmaxClassifier,
)


def _data(n, d, n_classes):
    """Gaussian rows labelled by a random one-hidden-layer teacher.

    Class regions that are not blobs: the class-mean start is far from the
    optimum and L-BFGS runs tens of evaluations (what the per-evaluation
    transfer time is about), where Gaussian blobs converge at the start.
    """
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    hidden = np.tanh(X @ rng.standard_normal((d, 32)) / np.sqrt(d) * 2.0)
    scores = hidden @ rng.standard_normal((32, n_classes))
    y = np.argmax(scores + 0.3 * rng.gumbel(size=scores.shape), axis=1)
    return X.astype(np.float32), y


def _backends(numpy_only):
    yield "numpy", None
    if numpy_only:
        return
    try:
        import torch
    except ImportError:
        print("torch: not installed, skipped")
        return
    torch.set_num_threads(1)
    yield "torch cpu", (torch, "cpu")
    if torch.cuda.is_available():
        yield "torch cuda", (torch, "cuda")
    else:
        print("torch cuda: skipped, no GPU visible (torch.cuda.is_available() False)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--m", type=int, default=500, help="Nyström centres")
    parser.add_argument("--numpy-only", action="store_true")
    args = parser.parse_args()
    X, y = _data(args.n, args.d, args.classes)
    estimators = {
        "MarginSoftmaxClassifier()": MarginSoftmaxClassifier(random_state=0),
        f"KernelMarginSoftmaxClassifier(n_components={args.m})": (
            KernelMarginSoftmaxClassifier(n_components=args.m, random_state=0)
        ),
    }
    print(
        f"sklmargin from {os.path.dirname(sklmargin.__file__)}; "
        f"data {args.n} x {args.d} float32, {args.classes} classes; "
        "BLAS threads: 1 (OMP/OPENBLAS/MKL_NUM_THREADS=1, threadpoolctl), "
        "torch.set_num_threads(1)"
    )
    header = (
        "| estimator | backend | fit wall s | fit CPU s | evaluations | "
        "transfer ms / evaluation | predict_proba wall s | predict CPU s | "
        "max abs diff proba vs numpy |"
    )
    print(header)
    print("|" + "---|" * 9)
    backends = list(_backends(args.numpy_only))
    for name, estimator in estimators.items():
        reference = None
        for backend, namespace in backends:
            model = sklearn.base.clone(estimator)
            torch, device = namespace or (None, "cpu")
            if namespace is None:
                X_in, y_in, context = X, y, sklearn.config_context()
            else:
                X_in = torch.asarray(X, device=device)
                y_in = torch.asarray(y, device=device)
                context = sklearn.config_context(array_api_dispatch=True)
            with context, threadpool_limits(1), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, fit_wall, fit_cpu = device_timed(
                    lambda m=model, a=X_in, b=y_in: m.fit(a, b), torch, device
                )
                proba, predict_wall, predict_cpu = device_timed(
                    lambda m=model, a=X_in: m.predict_proba(a), torch, device
                )
            if namespace is not None:
                proba = proba.cpu().numpy()
                stats = model._fit_stats
                evaluations = stats["n_evaluations"]
                transfer = f"{1e3 * stats['transfer_seconds'] / evaluations:.3f}"
            else:
                evaluations, transfer = "-", "-"
            if reference is None:
                reference, difference = proba, "-"
            else:
                difference = f"{np.max(np.abs(proba - reference)):.1e}"
            print(
                f"| {name} | {backend} | {fit_wall:.2f} | {fit_cpu:.2f} | "
                f"{evaluations} | {transfer} | {predict_wall:.2f} | "
                f"{predict_cpu:.2f} | {difference} |"
            )


if __name__ == "__main__":
    main()
