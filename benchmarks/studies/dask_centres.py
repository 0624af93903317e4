"""Dask against in-memory Nystroem centres (issue 19, item 7).

1. The default selector ("uniform") on the issue's case, 60,000 synthetic rows
   and 500 centres, with and without sample weights: the largest probability
   difference between the Dask and the in-memory fit (0.80 before the fix).
2. The adaptive selectors ("kmeans", "rpcholesky") when the distinct rows do
   not fit in the client's gather budget: the Dask fit then chooses its
   centres on a uniform sample of the rows. The budget is shrunk so that the
   sample is ``--pool`` of the training rows, and the test accuracy of the two
   fits is compared over a few seeds.

Dask runs its synchronous scheduler (the same map-reduce code, no cluster);
one BLAS thread::

    python benchmarks/studies/dask_centres.py --data ../shared/data
"""

from __future__ import annotations

import sys
from pathlib import Path

# The shared helpers (_common.py) live one folder up, in benchmarks/.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import warnings

import numpy as np
from _common import add_data_argument, blas_line, load_split, pinned_blas
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler


def _dask_fit(estimator, X, y, sample_weight=None, chunks=5000):
    import dask.array as da

    fit_kwargs = {}
    if sample_weight is not None:
        fit_kwargs["sample_weight"] = da.from_array(sample_weight, chunks=chunks)
    return estimator.fit(
        da.from_array(X, chunks=(chunks, -1)), da.from_array(y, chunks=chunks),
        **fit_kwargs,
    )  # fmt: skip


def uniform_case(n_rows, n_centres):
    from sklmargin import KernelMarginSoftmaxClassifier

    X, y = make_classification(
        n_samples=n_rows, n_features=20, n_informative=10, n_classes=4,
        random_state=0,
    )  # fmt: skip
    weights = np.random.default_rng(0).uniform(0.0, 3.0, n_rows)
    for label, sw in (("no weights", None), ("uniform(0, 3) weights", weights)):
        params = dict(n_components=n_centres, random_state=0)
        fit_kwargs = {} if sw is None else {"sample_weight": sw}
        memory = KernelMarginSoftmaxClassifier(**params).fit(X, y, **fit_kwargs)
        dask_fit = _dask_fit(KernelMarginSoftmaxClassifier(**params), X, y, sw)
        same = np.array_equal(
            memory.feature_map_.components_, dask_fit.feature_map_.components_
        )
        gap = np.abs(memory.predict_proba(X) - dask_fit.predict_proba(X)).max()
        print(
            f"uniform, {n_rows} rows, {n_centres} centres, {label}: same centres "
            f"{same}, max |proba difference| {gap:.2g}"
        )


def pooled_case(data_dir, names, selectors, seeds, n_centres, pool):
    import sklmargin._dask_features as features_module

    from sklmargin import KernelMarginSoftmaxClassifier

    rows = []
    for name in names:
        X, y, X_test, y_test = load_split(data_dir, name)
        scaler = StandardScaler().fit(X)
        X, X_test = scaler.transform(X), scaler.transform(X_test)
        n_pool = int(pool * X.shape[0])
        features_module._GATHER_BYTES = n_pool * X.shape[1] * X.dtype.itemsize
        for selector in selectors:
            for seed in seeds:
                params = dict(
                    n_components=n_centres, centres=selector, random_state=seed
                )
                memory = KernelMarginSoftmaxClassifier(**params).fit(X, y)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    dask_fit = _dask_fit(
                        KernelMarginSoftmaxClassifier(**params), X, y, chunks=2000
                    )
                assert dask_fit.nystroem_basis_sampled_, "the budget was not reached"
                assert any("uniform sample" in str(w.message) for w in caught)
                accuracy = memory.score(X_test, y_test), dask_fit.score(X_test, y_test)
                rows.append((name, selector, seed, *accuracy))
                print(
                    f"{name:10s} {selector:10s} seed {seed}: in-memory "
                    f"{100 * accuracy[0]:.2f}%, Dask on a {n_pool}-row sample "
                    f"{100 * accuracy[1]:.2f}%, difference "
                    f"{100 * (accuracy[1] - accuracy[0]):+.2f} points",
                    flush=True,
                )
    print(
        "\nmean test accuracy difference (Dask - in-memory), points; the "
        "in-memory fits' own spread over seeds (max - min) for scale:"
    )
    for name in names:
        for selector in selectors:
            mine = [r for r in rows if r[0] == name and r[1] == selector]
            diffs = [r[4] - r[3] for r in mine]
            spread = max(r[3] for r in mine) - min(r[3] for r in mine)
            print(
                f"  {name:10s} {selector:10s} {100 * np.mean(diffs):+.2f} "
                f"(min {100 * min(diffs):+.2f}, max {100 * max(diffs):+.2f}); "
                f"in-memory spread {100 * spread:.2f}"
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--centres", type=int, default=500)
    parser.add_argument(
        "--datasets", nargs="+", default=["letter", "pendigits", "usps"]
    )
    parser.add_argument("--selectors", nargs="+", default=["kmeans", "rpcholesky"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--pool", type=float, default=0.25, help="sample size, share of the rows"
    )
    args = parser.parse_args()
    with pinned_blas(1, announce=False):
        print(blas_line(1))
        import dask

        with dask.config.set(scheduler="synchronous"):
            uniform_case(args.rows, args.centres)
            pooled_case(
                args.data, args.datasets, args.selectors, range(args.seeds),
                args.centres, args.pool,
            )  # fmt: skip


if __name__ == "__main__":
    main()
