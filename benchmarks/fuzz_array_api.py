"""Fuzz the array API path against the NumPy path: same random cases, both namespaces.

Each case of ``tests/fuzz_cases.fit_cases`` (degenerate data, extreme magnitudes,
every loss and setting; sparse cases left out) is fitted once on NumPy arrays and
then, under ``array_api_dispatch``, on torch cpu and array-api-strict arrays.
A failure is: a crash other than ValueError/TypeError, non-finite probabilities,
or one path rejecting (ValueError/TypeError) what the other fits. Equality is
not asked here (``benchmarks/array_api_equality.py`` measures it).

    python benchmarks/fuzz_array_api.py --examples 700 --seed 1

Needs torch and array-api-strict (``pip install sklmargin[array-api]`` and torch).
BLAS and torch are pinned to one thread.
"""

from __future__ import annotations

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before scipy is imported
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import fuzz_cases  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import seed as hypothesis_seed  # noqa: E402

from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier  # noqa: E402
from sklmargin._utils.array_api import to_numpy  # noqa: E402

CLASSES = {
    "MarginSoftmaxClassifier": MarginSoftmaxClassifier,
    "KernelMarginSoftmaxClassifier": KernelMarginSoftmaxClassifier,
}


def _namespaces():
    import array_api_strict
    import torch

    torch.set_num_threads(1)
    return {"torch": torch, "array_api_strict": array_api_strict}


def _to(xp, value):
    """Numeric arrays into ``xp``; None and string labels stay as they are."""
    if value is None or np.asarray(value).dtype.kind not in "biuf":
        return value
    return xp.asarray(np.asarray(value))


def _fit_proba(cls, params, X, y, sample_weight):
    model = cls(**params).fit(X, y, sample_weight=sample_weight)
    return to_numpy(model.predict_proba(X))


def run(examples, seed):
    namespaces = _namespaces()
    failures, outcomes = [], {"both fitted": 0, "both rejected": 0}

    @hypothesis_seed(seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(fuzz_cases.fit_cases(max_iters=(5, 50)))
    def one_case(case):
        estimator, params, spec = case
        if spec.get("sparse"):
            return
        cls = CLASSES[estimator]
        params = {k: v for k, v in params.items() if k in cls().get_params()}
        if cls is KernelMarginSoftmaxClassifier:  # small maps: many cases
            params["n_components"] = min(params.get("n_components") or 30, 30)
        X, y, sample_weight = fuzz_cases.make_data(spec)
        try:
            _fit_proba(cls, params, X, y, sample_weight)
            numpy_error = None
        except (ValueError, TypeError) as exc:
            numpy_error = type(exc).__name__
        for name, xp in namespaces.items():
            args = (_to(xp, X), _to(xp, y), _to(xp, sample_weight))
            try:
                with sklearn.config_context(array_api_dispatch=True):
                    proba = _fit_proba(cls, params, *args)
            except (ValueError, TypeError) as exc:
                if numpy_error is None:
                    failures.append((name, estimator, params, spec, repr(exc)[:200]))
                else:
                    outcomes["both rejected"] += 1
                continue
            except Exception as exc:  # noqa: BLE001 - a crash is the finding
                failures.append((name, estimator, params, spec, repr(exc)[:200]))
                continue
            if numpy_error is not None:
                failures.append(
                    (name, estimator, params, spec, f"NumPy raised {numpy_error}")
                )
            elif not np.all(np.isfinite(proba)):
                failures.append((name, estimator, params, spec, "non-finite proba"))
            else:
                outcomes["both fitted"] += 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # warnings are the NumPy fuzzer's business
        one_case()
    return failures, outcomes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start, cpu = time.perf_counter(), time.process_time()
    failures, outcomes = run(args.examples, args.seed)
    print(
        f"{args.examples} cases (sparse ones skipped), seed {args.seed}: {outcomes}, "
        f"{len(failures)} failures; {time.perf_counter() - start:.0f} s wall, "
        f"{time.process_time() - cpu:.0f} s CPU (one BLAS/torch thread)"
    )
    for name, estimator, params, spec, what in failures:
        print(f"- {name} {estimator}: {what}\n    params {params}\n    spec {spec}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
