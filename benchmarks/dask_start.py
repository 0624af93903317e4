"""The cold start's bias problem of a Dask fit: passes over the data and seconds.

A default fit (``MarginSoftmaxClassifier`` or ``KernelMarginSoftmaxClassifier``,
``random_state=0``) on ``make_classification(200_000, 50, n_informative=20,
n_classes=5)`` as a Dask array of 8 row chunks (``--chunk`` rows each: 25,000),
Dask's synchronous scheduler.
It reports, for the start's bias-only problem
(:func:`sklmargin.solver._start.optimal_intercept`): full objective
evaluations, forward GEMMs over the chunks (in passes), ``dask.compute``
calls, wall and CPU seconds; and for the whole fit its evaluations, ``n_iter_``
and seconds. ``--out`` saves ``coef_``, ``intercept_``, the start's bias and
the labels of the first 50,000 rows, to compare two trees' fits.
``--streamed`` streams the prepared chunks (``persist_chunks = False``, as for
data judged too big to hold) instead of persisting them. Run each tree
with ``PYTHONPATH`` set to it::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python benchmarks/dask_start.py --estimator linear --dtype float32
"""

import argparse
import time

import dask
import dask.array as da
import numpy as np
from sklearn.datasets import make_classification

import sklmargin
import sklmargin.estimators._base as base
from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier
from sklmargin.objective._linear import LinearMarginObjective


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--estimator", choices=["linear", "kernel"], default="linear")
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--chunk", type=int, default=25_000)
    parser.add_argument("--out", default=None)
    parser.add_argument("--streamed", action="store_true")
    args = parser.parse_args()
    if args.streamed:
        import sklmargin.integrations.dask._estimators as dask_estimators

        dask_estimators.persist_chunks = False
    X, y = make_classification(
        200_000, 50, n_informative=20, n_classes=5, random_state=0
    )
    X = X.astype(args.dtype)
    stats = {"forward": 0, "computes": 0}
    forward, compute, optimal_intercept = (
        LinearMarginObjective._forward, dask.compute, base.optimal_intercept,
    )  # fmt: skip

    def forward_spy(self, params):
        stats["forward"] += 1
        return forward(self, params)

    def compute_spy(*collections, **kwargs):
        stats["computes"] += 1
        return compute(*collections, **kwargs)

    def start_spy(objective, params):
        before, evaluations = dict(stats), objective.n_evaluations
        wall, cpu = time.perf_counter(), time.process_time()
        params = optimal_intercept(objective, params)
        stats["start"] = {
            "wall": time.perf_counter() - wall,
            "cpu": time.process_time() - cpu,
            "evaluations": objective.n_evaluations - evaluations,
            "forward": stats["forward"] - before["forward"],
            "computes": stats["computes"] - before["computes"],
            "bias": objective.unpack(params)[1].copy(),
        }
        return params

    LinearMarginObjective._forward = forward_spy
    dask.compute = compute_spy
    base.optimal_intercept = start_spy
    Estimator = {
        "linear": MarginSoftmaxClassifier,
        "kernel": KernelMarginSoftmaxClassifier,
    }[args.estimator]
    with dask.config.set(scheduler="synchronous"):
        X_dask = da.from_array(X, chunks=(args.chunk, 50))
        y_dask = da.from_array(y, chunks=args.chunk)
        wall, cpu = time.perf_counter(), time.process_time()
        clf = Estimator(random_state=0).fit(X_dask, y_dask)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    start = stats["start"]
    print(
        f"{sklmargin.__file__} {args.estimator} {args.dtype}: start: "
        f"{start['evaluations']} full evaluations, "
        f"{start['forward'] / X_dask.numblocks[0]:g} GEMM passes over the "
        f"{X_dask.numblocks[0]} chunks, {start['computes']} dask computes, "
        f"{start['wall']:.2f} s wall / {start['cpu']:.2f} s CPU; fit: "
        f"{clf._fit_stats['n_evaluations']} evaluations, n_iter {clf.n_iter_}, "
        f"{wall:.2f} s wall / {cpu:.2f} s CPU"
    )
    if args.out:
        np.savez(
            args.out, coef=clf.coef_, intercept=clf.intercept_,
            bias=start["bias"], labels=clf.predict(X[:50_000]),
        )  # fmt: skip


if __name__ == "__main__":
    main()
