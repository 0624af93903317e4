"""Developer benchmarks of the linear objective and fit.

``python benchmarks/objective_scaling.py bench-objective | bench-scale``:

``bench-objective`` times one evaluation of the training objective (loss and
gradient) against the two GEMMs it cannot avoid, ``X W^T`` and ``G^T X``, in the
same process: the ratio says how close the implementation
is to the floor. ``bench-scale`` fits on synthetic data of growing size and
reports time and peak memory. Both are scripts, never timed assertions in tests.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from sklmargin.losses._registry import LOSS_NAMES, get_margin
from sklmargin.objective._linear import LinearMarginObjective
from sklmargin.objective._rows import prepare_rows

try:  # Unix only: on Windows the peak memory is reported as unavailable
    import resource
except ImportError:  # pragma: no cover - exercised on Windows only
    resource = None

#: Fields of one ``bench-objective`` JSON row (times in milliseconds).
OBJECTIVE_FIELDS = ("n", "d", "k", "dtype", "loss", "eval_ms", "gemm_ms", "ratio")

#: Fields of one ``bench-scale`` JSON row (memory in MiB, ``None`` where the
#: platform cannot measure it).
SCALE_FIELDS = (
    "n",
    "d",
    "k",
    "dtype",
    "loss",
    "fit_s",
    "n_iter",
    "data_mib",
    "peak_rss_mib",
    "rss_before_fit_mib",
    "train_accuracy",
)


def _median_seconds(fun, repeats):
    fun()  # warm-up: first-call allocations and BLAS thread start-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fun()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def objective_vs_gemm(n, d, k, dtype, loss="am-softmax", repeats=5, seed=0):
    """Median time of one objective evaluation and of its two GEMMs.

    Parameters
    ----------
    n, d, k : int
        Samples, features, classes.
    dtype : numpy dtype
        float32 or float64.
    loss : str
    repeats : int
    seed : int

    Returns
    -------
    dict
        ``eval_s``, ``gemm_s`` and their ratio.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(dtype)
    y = rng.integers(0, k, n)
    margin = get_margin(loss)
    m, s = margin.resolve(None, None)
    rows = prepare_rows(X, normalize=margin.uses_angle)
    objective = LinearMarginObjective(rows, y, k, np.ones(n), margin, m, s, 1.0, True)
    params = rng.standard_normal(objective.n_params)
    coef = params[: k * d].reshape(k, d).astype(dtype)
    features = objective.X

    def gemms():
        cos = features @ coef.T
        return cos.T @ features

    eval_s = _median_seconds(lambda: objective.loss_gradient(params), repeats)
    gemm_s = _median_seconds(gemms, repeats)
    return {
        "n": n,
        "d": d,
        "k": k,
        "dtype": np.dtype(dtype).name,
        "loss": loss,
        "eval_ms": 1e3 * eval_s,
        "gemm_ms": 1e3 * gemm_s,
        "ratio": eval_s / gemm_s,
    }


def _peak_rss_mib():
    """Peak resident set of this process so far in MiB, or None if unmeasurable."""
    if resource is None:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is in KiB on Linux and the BSDs, in bytes on macOS.
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def _mib(value):
    return "unavailable" if value is None else f"{value:7.1f} MiB"


def fit_scaling(n, d=100, k=10, dtype=np.float32, loss="am-softmax", seed=0):
    """Fit one synthetic problem and report time, iterations and peak memory.

    The data are ``k`` Gaussian classes with random means, so the problem is
    neither trivial nor separable. Run each size in a fresh process for an
    honest peak-memory figure (``bench-scale`` does).
    """
    from sklmargin.estimators._linear import MarginSoftmaxClassifier

    rng = np.random.default_rng(seed)
    means = rng.standard_normal((k, d)) * 0.1
    y = rng.integers(0, k, n)
    # Generated block by block straight into the target dtype, so that the
    # peak memory measured is the fit's, not the generator's float64 temporaries.
    X = np.empty((n, d), dtype=dtype)
    for start in range(0, n, 65536):
        rows = slice(start, min(start + 65536, n))
        X[rows] = rng.standard_normal((X[rows].shape[0], d)) + means[y[rows]]
    baseline_mib = _peak_rss_mib()
    data_mib = X.nbytes / 2**20
    start = time.perf_counter()
    clf = MarginSoftmaxClassifier(loss=loss, tol=1e-4).fit(X, y)
    fit_s = time.perf_counter() - start
    return {
        "n": n,
        "d": d,
        "k": k,
        "dtype": np.dtype(dtype).name,
        "loss": loss,
        "fit_s": fit_s,
        "n_iter": int(clf.n_iter_),
        "data_mib": data_mib,
        "peak_rss_mib": _peak_rss_mib(),
        "rss_before_fit_mib": baseline_mib,
        "train_accuracy": float(clf.score(X[:100000], y[:100000])),
    }


def _write_rows(rows, path):
    """Write the rows as JSON when a path is given; return the exit code 0."""
    if path:
        with open(path, "w") as handle:
            json.dump(rows, handle, indent=1)
    return 0


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def _class_count(text):
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"needs at least 2 classes, got {text}")
    return value


def _thread_count(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _output_path(text):
    """Fail before the run, not after it, if the JSON cannot be written there."""
    from pathlib import Path

    if not Path(text).resolve().parent.is_dir():
        raise argparse.ArgumentTypeError(f"folder of {text!r} does not exist")
    return text


def _run_objective(args):
    rows = []
    with threadpool_limits(args.threads or None):
        for dtype in (np.float64, np.float32):
            for d in args.d:
                for k in args.k:
                    row = objective_vs_gemm(args.n, d, k, dtype, loss=args.loss)
                    rows.append(row)
                    print(
                        f"n={row['n']} d={d:4d} K={k:3d} {row['dtype']:8s} "
                        f"eval {row['eval_ms']:8.1f} ms   2 GEMMs "
                        f"{row['gemm_ms']:8.1f} ms   ratio {row['ratio']:.2f}",
                        flush=True,
                    )
    return _write_rows(rows, args.output)


def _run_scale(args):
    import subprocess

    rows = []
    for n in args.n:
        # One process per size: ru_maxrss is a high-water mark.
        code = (
            "import json, numpy as np; from threadpoolctl import threadpool_limits;"
            f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r});"
            "from objective_scaling import fit_scaling;"
            f"limits = threadpool_limits({args.threads or None});"
            f"print(json.dumps(fit_scaling({n}, {args.d}, {args.k}, "
            f"np.{args.dtype}, {args.loss!r})))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"n={n:>9d} d={args.d} K={args.k} {args.dtype}: fit {row['fit_s']:7.1f} s "
            f"({row['n_iter']} iterations, train accuracy "
            f"{row['train_accuracy']:.3f}), data {_mib(row['data_mib'])}, "
            f"RSS before fit {_mib(row['rss_before_fit_mib'])}, "
            f"peak {_mib(row['peak_rss_mib'])}",
            flush=True,
        )
    return _write_rows(rows, args.output)


def register(subparsers):
    """Add ``bench-objective`` and ``bench-scale`` to a CLI's subparsers.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction

    Returns
    -------
    argparse.ArgumentParser
        The ``bench-objective`` parser.
    """
    objective = subparsers.add_parser(
        "bench-objective",
        help="time one objective evaluation against its two GEMMs",
        description="One loss+gradient evaluation vs the GEMMs X W^T and G^T X, "
        "same process, medians of repeats.",
    )
    objective.add_argument("--n", type=_positive_int, default=100_000)
    objective.add_argument("--d", type=_positive_int, nargs="+", default=[16, 128, 512])
    objective.add_argument("--k", type=_class_count, nargs="+", default=[2, 10, 50])
    _add_shared_arguments(objective, OBJECTIVE_FIELDS)
    objective.set_defaults(func=_run_objective)

    scale = subparsers.add_parser(
        "bench-scale",
        help="fit time and peak memory as n grows (synthetic data)",
        description="Fit MarginSoftmaxClassifier (tol=1e-4) on synthetic Gaussian "
        "classes of growing size, one process per size; report time and peak RSS.",
    )
    scale.add_argument(
        "--n", type=_positive_int, nargs="+", default=[10_000, 100_000, 1_000_000]
    )
    scale.add_argument("--d", type=_positive_int, default=100)
    scale.add_argument("--k", type=_class_count, default=10)
    scale.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    _add_shared_arguments(scale, SCALE_FIELDS)
    scale.set_defaults(func=_run_scale)
    return objective


def _add_shared_arguments(parser, fields):
    """``--loss``, ``--threads`` and ``--output`` (rows with ``fields``)."""
    parser.add_argument("--loss", choices=LOSS_NAMES, default="am-softmax")
    parser.add_argument(
        "--threads",
        type=_thread_count,
        default=1,
        help="BLAS threads (0: library default)",
    )
    parser.add_argument(
        "--output",
        type=_output_path,
        help=f"write the rows as JSON (fields: {', '.join(fields)})",
    )


def main(argv=None):
    """Run ``bench-objective`` or ``bench-scale``; return the exit code.

    Usage errors (already printed by argparse) return 2, never SystemExit.
    """
    parser = argparse.ArgumentParser(
        prog="python benchmarks/objective_scaling.py",
        description="Developer benchmarks of the linear objective and fit.",
    )
    register(parser.add_subparsers(title="commands", metavar="COMMAND"))
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
