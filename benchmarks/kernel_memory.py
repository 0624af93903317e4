"""Peak memory of a KernelMarginSoftmaxClassifier fit (issue 9's memory target).

Target: at most one n x M float32 matrix beyond the data. Synthetic float32
data (default 100,000 x 50, M = 2000), one BLAS thread, peak RSS growth of the
fit measured with ``resource`` (Unix only). Run in a fresh process:

    python benchmarks/kernel_memory.py --n 100000 --d 50 --m 2000 [--dtype float64]

``--namespace torch`` fits on a torch cpu tensor under ``array_api_dispatch``
(the array API path; its figures in docs/array_api.rst come from
``--n 100000 --d 16 --m 500 --max-iter 5 --map {nystroem,rff} [--namespace torch]``).
"""

from __future__ import annotations

import argparse
import os
import resource
import time

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before scipy: dispatch needs it

import numpy as np
from threadpoolctl import threadpool_limits


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=50)
    parser.add_argument("--m", type=int, default=2000)
    parser.add_argument("--max-iter", type=int, default=20)
    parser.add_argument("--map", choices=("nystroem", "orf", "rff"), default="nystroem")
    parser.add_argument("--namespace", choices=("numpy", "torch"), default="numpy")
    parser.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        default="float32",
        help="input dtype (float64: what a StandardScaler hands on; the fit "
        "computes in float32 either way, compute_dtype='auto')",
    )
    args = parser.parse_args()
    import sklearn

    from sklmargin import KernelMarginSoftmaxClassifier

    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.n, args.d)).astype(args.dtype)
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 0.5)
    if args.namespace == "torch":
        import torch

        torch.set_num_threads(1)
        X, y = torch.asarray(X), torch.asarray(y)
    # ru_maxrss is in KiB on Linux.
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    with threadpool_limits(1), sklearn.config_context(array_api_dispatch=True):
        KernelMarginSoftmaxClassifier(
            n_components=args.m,
            kernel_approximation=args.map,
            random_state=0,
            max_iter=args.max_iter,
        ).fit(X, y)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    one_matrix = args.n * args.m * 4 / 2**20
    print(
        "BLAS threads: 1" + (", torch threads: 1" if args.namespace == "torch" else "")
    )
    print(
        f"n={args.n} d={args.d} M={args.m} {args.dtype} {args.namespace} input, "
        f"{args.map}: "
        f"peak RSS growth {peak - before:.0f} MiB; "
        f"one n x M float32 = {one_matrix:.0f} MiB; "
        f"data {args.n * args.d * np.dtype(args.dtype).itemsize / 2**20:.0f} MiB; "
        f"fit {seconds:.1f} s ({args.max_iter} iterations at most)"
    )


if __name__ == "__main__":
    main()
