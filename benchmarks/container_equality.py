"""The same fit in memory, on Dask and on torch cpu: do the labels agree?

Synthetic data: ``make_classification(n_samples=62,000, n_features=40,
n_informative=20, n_classes=5, random_state=0)``, standardised; the first 60,000
rows train, the last 2,000 are compared. For the linear estimator
(``MarginSoftmaxClassifier()``) and the kernel estimator
(``KernelMarginSoftmaxClassifier(n_components=500, random_state=0)``), in
float32 and float64, the fit on a Dask array (10 chunks of 6,000 rows, a
loopback ``LocalCluster(n_workers=2, threads_per_worker=1, processes=False)``)
and the fit on torch cpu tensors (``array_api_dispatch``) are compared with the
in-memory NumPy fit: labels that differ on the 2,000 rows, the largest
``predict_proba`` difference, and the L-BFGS iterations of each. Not timed.
Run::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/container_equality.py

``--skip-torch`` / ``--skip-dask`` leave one side out; ``--n`` shrinks the
training rows (a quick check).
"""

from __future__ import annotations

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # scikit-learn's dispatch needs it

import argparse  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from _common import now, pinned_blas, versions  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier  # noqa: E402
from sklmargin._utils.array_api import to_numpy  # noqa: E402

N_COMPARED = 2000


def data(n_train):
    X, y = make_classification(
        n_samples=n_train + N_COMPARED,
        n_features=40,
        n_informative=20,
        n_classes=5,
        random_state=0,
    )
    X = StandardScaler().fit_transform(X)
    return X[:n_train], y[:n_train], X[n_train:]


def models(metric="default"):
    yield "linear", MarginSoftmaxClassifier()
    kernel = KernelMarginSoftmaxClassifier(n_components=500, random_state=0)
    if metric != "default":
        kernel.set_params(metric=None if metric == "none" else metric)
    yield f"kernel 500 (metric={kernel.metric})", kernel


def quiet_fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X, y)


def dask_fit(model, X, y, X_new, chunk):
    import dask.array as da

    fitted = quiet_fit(
        model, da.from_array(X, chunks=(chunk, X.shape[1])), da.from_array(y, chunk)
    )
    return fitted.predict(X_new), fitted.predict_proba(X_new), fitted.n_iter_


def torch_fit(model, X, y, X_new):
    import torch

    with sklearn.config_context(array_api_dispatch=True):
        fitted = quiet_fit(model, torch.from_numpy(X), torch.from_numpy(y))
        X_new = torch.from_numpy(X_new)
        labels = to_numpy(fitted.predict(X_new))
        proba = to_numpy(fitted.predict_proba(X_new))
    return labels, proba, fitted.n_iter_


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60_000, help="training rows")
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--skip-dask", action="store_true")
    parser.add_argument("--skip-torch", action="store_true")
    parser.add_argument(
        "--metric",
        choices=["default", "none", "diagonal", "full"],
        default="default",
        help="the kernel model's learned metric (default: the estimator's default)",
    )
    args = parser.parse_args(argv)
    print(f"# {now()}; {versions()}")
    print("# " + " ".join(["python", *sys.argv]))
    X, y, X_new = data(args.n)
    chunk = -(-args.n // args.chunks)
    client = None
    if not args.skip_dask:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=False,
            dashboard_address=None,
        )
        client = Client(cluster)
    print(
        "| model | dtype | container | labels differing / 2,000 | "
        "max abs diff predict_proba | iterations (container / memory) |"
    )
    print("|---|---|---|---|---|---|")
    with pinned_blas(1, announce=False):
        for name, model in models(args.metric):
            for dtype in (np.float32, np.float64):
                Xd, Xn = X.astype(dtype), X_new.astype(dtype)
                reference = quiet_fit(clone(model), Xd, y)
                labels, proba = reference.predict(Xn), reference.predict_proba(Xn)
                runs = {}
                if client is not None:
                    runs["dask"] = dask_fit(clone(model), Xd, y, Xn, chunk)
                if not args.skip_torch:
                    runs["torch cpu"] = torch_fit(clone(model), Xd, y, Xn)
                for container, (other, other_proba, n_iter) in runs.items():
                    print(
                        f"| {name} | {np.dtype(dtype).name} | {container} | "
                        f"{int(np.sum(other != labels))} | "
                        f"{np.max(np.abs(other_proba - proba)):.1e} | "
                        f"{n_iter} / {reference.n_iter_} |",
                        flush=True,
                    )
    if client is not None:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
