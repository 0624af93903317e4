"""What ``compute_dtype`` buys: the kernel fit in float32 against float64.

``KernelMarginSoftmaxClassifier(random_state=0, compute_dtype=...)`` at its
other defaults, after a StandardScaler, on the training split of each data set
(default: letter, 15,000 rows, where ``compute_dtype="auto"`` chooses float32),
scored on its test split. One BLAS thread; CPU seconds (``time.process_time``)
of ``fit``, the fastest of ``--repeats`` fits.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/compute_dtype.py --data ../shared/data --datasets letter
"""

from __future__ import annotations

import argparse
import time

from _common import add_data_argument, blas_line, load_split, now, pinned_blas
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklmargin import KernelMarginSoftmaxClassifier


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--datasets", nargs="*", default=["letter"])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    print(f"Made on {now()}.")
    with pinned_blas(1, announce=False):
        print(f"{blas_line(1)}.\n")
        print("| data set | compute_dtype | test accuracy % | fit CPU s | width |")
        print("|---|---|---|---|---|")
        for name in args.datasets:
            X_train, y_train, X_test, y_test = load_split(args.data, name)
            for dtype in ("float64", "float32"):
                best = float("inf")
                for _ in range(args.repeats):
                    model = make_pipeline(
                        StandardScaler(),
                        KernelMarginSoftmaxClassifier(
                            random_state=0, compute_dtype=dtype
                        ),
                    )
                    start = time.process_time()
                    model.fit(X_train, y_train)
                    best = min(best, time.process_time() - start)
                accuracy = 100 * model.score(X_test, y_test)
                print(
                    f"| {name} | {dtype} | {accuracy:.2f} | {best:.2f} "
                    f"| {model[-1].n_components_} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
