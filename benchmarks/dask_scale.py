"""Dask fit against the in-memory fit, from 1e5 to 1e7 rows (issue 13).

Synthetic float32 data (``d`` features, ``K`` classes from a noisy linear
teacher) generated in chunks on the workers of a loopback LocalCluster (two
worker processes, one thread each). For every ``n`` it reports:

* the time of one objective evaluation (value and gradient at the start
  point; median of 3) of the Dask objective and of the in-memory
  ``LinearMarginObjective`` on the same rows;
* the time of a whole fit (AM-Softmax, default settings) both ways, with the
  iteration and evaluation counts, and the largest predict_proba difference
  on the first 10,000 rows. The Dask fit includes its passes over the data
  before L-BFGS (statistics, preparing the chunks); with ``--persist-data`` the
  data are in the workers' memory first, else each pass regenerates them.

BLAS is pinned to one thread everywhere (client and workers), so the in-memory
fit uses one core and the cluster two.

Run::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python benchmarks/dask_scale.py --sizes 100000 1000000 --fit-up-to 1000000
"""

import argparse
import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import statistics  # noqa: E402
import time  # noqa: E402

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import numpy as np  # noqa: E402
from distributed import Client, LocalCluster, wait  # noqa: E402

import sklmargin.estimators as estimators_module  # noqa: E402
import sklmargin.integrations.dask._estimators as dask_module  # noqa: E402
from sklmargin import MarginSoftmaxClassifier  # noqa: E402


def _labels(block, teacher):
    # Noisy linear teacher; the noise is seeded by the block's content, so a
    # chunk regenerated on another pass gets the same labels.
    seed = int(abs(float(block[0, 0])) * 1e6) % 2**32
    noise = np.random.default_rng(seed).gumbel(size=(block.shape[0], teacher.shape[1]))
    return np.argmax(block[:, : teacher.shape[0]] @ teacher + noise, axis=1)


def synthetic(n, d, n_classes, chunk):
    X = da.random.default_rng(0).standard_normal(
        (n, d), chunks=(chunk, d), dtype=np.float32
    )
    teacher = 2 * np.random.default_rng(1).standard_normal((10, n_classes))
    y = X.map_blocks(_labels, teacher, drop_axis=1, dtype=np.int64)
    return X, y


class Recorder:
    """Wrap fit_continuation to keep the objective and start it was given."""

    def __init__(self, module):
        self.module, self.original = module, module.fit_continuation

    def __enter__(self):
        def wrapped(objective, x0, **kwargs):
            self.objective, self.x0 = objective, np.array(x0)
            return self.original(objective, x0, **kwargs)

        self.module.fit_continuation = wrapped
        return self

    def __exit__(self, *exc):
        self.module.fit_continuation = self.original


def eval_time(objective, x0, repeats=3):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        objective.loss_gradient(x0)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(n, d, n_classes, fit_in_memory, fit_dask, persist_data):
    chunk = min(250_000, max(10_000, n // 8))
    X, y = synthetic(n, d, n_classes, chunk)
    row = {"n": n, "chunk": chunk, "chunks": len(X.chunks[0])}
    if persist_data:
        # The data in the workers' memory first, as the in-memory fit has its
        # data in the client's: the fits then compare like with like.
        X, y = dask.persist(X, y)
        wait([X, y])
    clf = MarginSoftmaxClassifier(random_state=0, max_iter=1 if not fit_dask else 1000)
    start = time.perf_counter()
    with Recorder(dask_module) as recorded:
        clf.fit(X, y)
    row["dask_fit_s"] = time.perf_counter() - start if fit_dask else float("nan")
    row["dask_iter"] = clf.n_iter_ if fit_dask else 0
    row["dask_evals"] = clf._fit_stats["n_evaluations"] if fit_dask else 0
    row["dask_eval_s"] = eval_time(recorded.objective, recorded.x0)
    if fit_in_memory:
        X_np, y_np = (a.compute() for a in (X, y))
        reference = MarginSoftmaxClassifier(random_state=0)
        start = time.perf_counter()
        with Recorder(estimators_module) as recorded_np:
            reference.fit(X_np, y_np)
        row["numpy_fit_s"] = time.perf_counter() - start
        row["numpy_iter"] = reference.n_iter_
        row["numpy_eval_s"] = eval_time(recorded_np.objective, recorded_np.x0)
        if fit_dask:
            head = X_np[:10_000]
            row["max_dproba"] = float(
                np.abs(clf.predict_proba(head) - reference.predict_proba(head)).max()
            )
        del X_np, y_np, recorded_np
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000]
    )
    parser.add_argument("--features", type=int, default=100)
    parser.add_argument("--classes", type=int, default=5)
    parser.add_argument("--fit-up-to", type=int, default=1_000_000)
    parser.add_argument("--numpy-up-to", type=int, default=1_000_000)
    parser.add_argument(
        "--persist-data",
        action="store_true",
        help="persist X and y on the workers before the Dask fit (else every "
        "pass over the data regenerates it)",
    )
    args = parser.parse_args()
    print(
        "BLAS pinned to 1 thread (OMP/OPENBLAS/MKL_NUM_THREADS=1) on client and "
        f"workers; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
        + (
            "data persisted on the workers"
            if args.persist_data
            else "data regenerated per pass"
        )
    )
    with (
        LocalCluster(
            processes=True,
            host="127.0.0.1",
            n_workers=2,
            threads_per_worker=1,
            dashboard_address=None,
        ) as cluster,
        Client(cluster),
    ):
        header = (
            "| n | chunk (rows) | chunks | eval dask (s) | eval numpy (s) | "
            "fit dask (s) | iters/evals dask | fit numpy (s) | iters numpy "
            "| max dproba |"
        )
        print(header)
        print("|" + "---|" * header.count(" | ") + "---|")
        for n in args.sizes:
            row = run(
                n,
                args.features,
                args.classes,
                fit_in_memory=n <= args.numpy_up_to,
                fit_dask=n <= args.fit_up_to,
                persist_data=args.persist_data,
            )
            print(
                f"| {row['n']:.0e} | {row['chunk']} | {row['chunks']} "
                f"| {row['dask_eval_s']:.3f} | {row.get('numpy_eval_s', np.nan):.3f} "
                f"| {row['dask_fit_s']:.1f} | {row['dask_iter']}/{row['dask_evals']} "
                f"| {row.get('numpy_fit_s', np.nan):.1f} "
                f"| {row.get('numpy_iter', '-')} "
                f"| {row.get('max_dproba', np.nan):.1e} |",
                flush=True,
            )
        print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
