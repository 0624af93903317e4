"""Long fuzzing run: thousands of random fits, every failure with a reproducer.

Uses the strategies and the invariant checker of ``tests/fuzz_cases.py`` (the
ones ``tests/test_fuzz.py`` runs a few dozen of in CI), drives them with
hypothesis in generate-only mode (no shrinking, no example database), and
records *every* failure instead of stopping at the first one.

Usage (from the repository root; BLAS is pinned to one thread here)::

    nohup python benchmarks/fuzz.py --examples 5000 --seed 0 \
        --out fuzz_results.json > fuzz.log 2>&1 &

Writes ``--out`` (JSON: settings, counts per outcome, every failure with its
kind, detail, traceback and a runnable reproducer) every 100 fits and at the end,
and prints a summary grouped by failure kind. Known, reported defects
(``fuzz_cases.KNOWN_DEFECTS``) are stepped over so that the other invariants
are still checked in those cases; they are counted under "known" with a few
reproducers each. ``--loss-examples M`` first fuzzes ``margin_softmax_loss``.

``--array-api`` fuzzes the array API path against the NumPy path instead: each
case (sparse ones skipped, kernel maps capped at 30 components, at most 50
iterations) is fitted on NumPy arrays and, under ``array_api_dispatch``, on torch
cpu and array-api-strict arrays (``pip install sklmargin[array-api]`` and torch).
A failure is a crash other than ValueError/TypeError, a non-finite probability,
or one path rejecting (ValueError/TypeError) what the other fits; equality is
``tests/test_array_api_equality.py``'s business::

    python benchmarks/fuzz.py --array-api --examples 3000 --seed 21

Every top-level ``fit`` is timed in CPU seconds (``time.process_time``; a
kernel fit's metric pilots count in it): the record keeps the largest
(``fit_cpu_max_s``), a histogram (``fit_cpu_histogram``) and the 20 slowest
fits with their cases (``slowest_fits``), and the summary prints them. A fit
of these small data sets (at most 600 rows) should take well under 2 CPU s.

A *hang* is judged by the process's CPU time, not by wall time, so that a
loaded machine does not turn slow cases into hangs: ``--timeout`` CPU seconds
per case (``setitimer(ITIMER_PROF)``). A case that blocks without using CPU
would never reach that, so a wall-clock backstop (``--wall-timeout``, default
30 times as long) reports it separately as a *stall*, with the CPU time it
used.
"""

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
if "--array-api" in sys.argv[1:]:
    # scikit-learn's array_api_dispatch needs scipy's array API mode, which
    # scipy reads when it is first imported (below, through sklmargin).
    os.environ.setdefault("SCIPY_ARRAY_API", "1")

import argparse  # noqa: E402
import collections  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

_ROOT = Path(__file__).resolve().parent.parent
# The worktree's sklmargin, not an installed copy, and the shared strategies.
sys.path[:0] = [str(_ROOT), str(_ROOT / "tests")]
from fuzz_cases import (  # noqa: E402
    ESTIMATORS,
    FuzzFailure,
    check_case,
    check_loss_case,
    fit_cases,
    known_defect,
    loss_inputs,
    make_data,
    reproducer,
)


# -- the array API path against the NumPy path (--array-api) ------------------
def _namespaces():
    """torch (cpu, one thread) and array-api-strict, by name."""
    import array_api_strict
    import torch

    torch.set_num_threads(1)
    return {"torch": torch, "array_api_strict": array_api_strict}


def _to(xp, value):
    """Numeric arrays into ``xp``; None and string labels stay as they are."""
    if value is None or np.asarray(value).dtype.kind not in "biuf":
        return value
    return xp.asarray(np.asarray(value))


def _host(array):
    """A namespace's (CPU) array as a NumPy array."""
    if hasattr(array, "detach"):  # torch
        return array.detach().cpu().numpy()
    return np.asarray(array)


def _said(name, exc):
    """``name: repr(exc) (file:line in function)``, the innermost frame."""
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    where = f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}"
    return f"{name}: {exc!r}"[:300] + f" ({where})"


def check_array_api_case(estimator, params, spec, namespaces=None):
    """Fit one case on NumPy, then on each namespace under ``array_api_dispatch``.

    Returns the outcome (both paths fitted, both rejected, or a sparse case
    skipped) or raises :class:`FuzzFailure`: a crash other than
    ValueError/TypeError (``array-api-crash``), a case one path rejects and the
    other fits (``array-api-rejects``, ``array-api-accepts``), non-finite
    probabilities (``array-api-non-finite``). Every namespace is tried; the
    failure names each one's problem. Warnings are ignored here (the NumPy
    fuzzer checks them).
    """
    if spec.get("sparse"):
        return "array-api: sparse, skipped"
    namespaces = _namespaces() if namespaces is None else namespaces
    cls = ESTIMATORS[estimator]
    params = {k: v for k, v in params.items() if k in cls().get_params()}
    if estimator == "KernelMarginSoftmaxClassifier":  # small maps: many cases
        params["n_components"] = min(params.get("n_components") or 30, 30)
    X, y, sample_weight = make_data(spec)

    def fit_proba(X, y, sample_weight):
        model = cls(**params).fit(X, y, sample_weight=sample_weight)
        return _host(model.predict_proba(X))

    problems = []  # (kind, detail, exception or None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fit_proba(X, y, sample_weight)
            numpy_error = None
        except (ValueError, TypeError) as exc:
            numpy_error = type(exc).__name__
        for name, xp in namespaces.items():
            try:
                with sklearn.config_context(array_api_dispatch=True):
                    proba = fit_proba(_to(xp, X), _to(xp, y), _to(xp, sample_weight))
            except (ValueError, TypeError) as exc:
                if numpy_error is None:
                    problems.append(("array-api-rejects", _said(name, exc), exc))
                continue
            except Exception as exc:  # noqa: BLE001 - a crash is the finding
                problems.append(("array-api-crash", _said(name, exc), exc))
                continue
            if numpy_error is not None:
                detail = f"{name} fits, NumPy raised {numpy_error}"
                problems.append(("array-api-accepts", detail, None))
            elif not np.all(np.isfinite(proba)):
                detail = f"{name}: non-finite predict_proba"
                problems.append(("array-api-non-finite", detail, None))
    if problems:
        kind, _, cause = problems[0]
        raise FuzzFailure(kind, "; ".join(p[1] for p in problems), cause)
    return "array-api: both rejected" if numpy_error else "array-api: both fitted"


def array_api_reproducer(estimator, params, spec):
    """Python source that replays an ``--array-api`` case (from the repo root)."""
    return (
        "import sys; sys.path[:0] = ['.', 'tests', 'benchmarks']  # the repo root\n"
        "from fuzz import check_array_api_case  # run with SCIPY_ARRAY_API=1\n"
        f"check_array_api_case({estimator!r}, {params!r}, {spec!r})\n"
    )


class _FitClock:
    """CPU seconds of each top-level ``fit`` (a metric pilot's counts in its fit's)."""

    def __init__(self):
        self.depth, self.times = 0, []

    def install(self):
        from sklmargin.estimators._base import BaseMarginSoftmax

        fit = BaseMarginSoftmax.fit
        clock = self

        @functools.wraps(fit)
        def timed_fit(estimator, *args, **kwargs):
            if clock.depth:
                return fit(estimator, *args, **kwargs)
            clock.depth += 1
            begin = time.process_time()
            try:
                return fit(estimator, *args, **kwargs)
            finally:
                clock.times.append(time.process_time() - begin)
                clock.depth -= 1

        BaseMarginSoftmax.fit = timed_fit

    def take(self):
        """The CPU seconds of the fits since the last call."""
        times, self.times, self.depth = self.times, [], 0
        return times


class _Timeout(BaseException):
    """A case used up its CPU budget (``kind="hang"``) or its wall backstop.

    A BaseException, so that the checker's ``except Exception`` (which turns
    exceptions into failure kinds) lets it through to the driver.
    """

    def __init__(self, kind):
        super().__init__(kind)
        self.kind = kind


def _cpu_limit(signum, frame):
    raise _Timeout("hang")


def _wall_limit(signum, frame):
    raise _Timeout("stall")


def _arm(cpu_seconds, wall_seconds):
    """Start the per-case timers (0 disarms): CPU time, then the wall backstop."""
    signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
    signal.setitimer(signal.ITIMER_REAL, wall_seconds)


_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0)


def _bucket(seconds):
    """The histogram bin of a fit's CPU seconds ("<0.1", ..., ">=2")."""
    for edge in _BUCKETS:
        if seconds < edge:
            return f"<{edge:g}"
    return f">={_BUCKETS[-1]:g}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000, help="estimator fits")
    parser.add_argument(
        "--loss-examples",
        type=int,
        default=0,
        help="margin_softmax_loss calls (run first)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="fuzz_results.json")
    parser.add_argument(
        "--estimator", choices=sorted(ESTIMATORS), action="append", default=None
    )
    parser.add_argument(
        "--beyond",
        action="store_true",
        help="also draw settings outside the documented ranges (s=1e39...)",
    )
    parser.add_argument(
        "--array-api",
        action="store_true",
        help="fit each case on NumPy, torch and array-api-strict arrays and "
        "compare the outcomes (see the module docstring)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120,
        help="CPU seconds per case before a 'hang'",
    )
    parser.add_argument(
        "--wall-timeout",
        type=float,
        default=None,
        help="wall seconds per case before a 'stall' (default: 30 x --timeout)",
    )
    args = parser.parse_args(argv)
    if args.array_api and os.environ.get("SCIPY_ARRAY_API") != "1":
        parser.error(
            "--array-api needs SCIPY_ARRAY_API=1 before scipy is imported (the "
            "script sets it when --array-api is on its command line)"
        )
    if args.array_api:
        check = functools.partial(check_array_api_case, namespaces=_namespaces())
        make_reproducer = array_api_reproducer
        strategy_options = {"max_iters": (5, 50)}  # many cases, two paths each
    else:
        check = functools.partial(check_case, tolerate_known=True)
        make_reproducer = reproducer
        strategy_options = {}
    wall_timeout = 30 * args.timeout if args.wall_timeout is None else args.wall_timeout
    estimators = tuple(args.estimator or ESTIMATORS)
    out = Path(args.out)
    record = {
        "settings": {
            "examples": args.examples,
            "seed": args.seed,
            "estimators": estimators,
            "blas_threads": 1,
            "timeout_cpu_s": args.timeout,
            "timeout_wall_s": wall_timeout,
            "beyond": args.beyond,
            "array_api": args.array_api,
        },
        "outcomes": collections.Counter(),
        "failures": [],
        "known": {},
        "slowest": [],
        # CPU seconds of each fit (a case fits two or three times): the
        # largest, a histogram and the slowest fits with their cases.
        "fits": 0,
        "fit_cpu_max_s": 0.0,
        "fit_cpu_histogram": collections.Counter(),
        "slowest_fits": [],
    }
    clock = _FitClock()
    clock.install()
    start, start_cpu = time.perf_counter(), time.process_time()
    signal.signal(signal.SIGPROF, _cpu_limit)
    signal.signal(signal.SIGALRM, _wall_limit)

    def flush():
        record["elapsed_s"] = round(time.perf_counter() - start, 1)
        record["cpu_s"] = round(time.process_time() - start_cpu, 1)
        record["slowest"] = sorted(record["slowest"], key=lambda r: -r[0])[:10]
        record["slowest_fits"] = sorted(record["slowest_fits"], key=lambda r: -r[0])[
            :20
        ]
        out.write_text(json.dumps(record, indent=1, default=str))

    @settings(
        max_examples=args.examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @seed(args.seed)
    @given(fit_cases(estimators, beyond=args.beyond, **strategy_options))
    def run(case):
        estimator, params, spec = case
        begin, begin_cpu = time.perf_counter(), time.process_time()
        _arm(args.timeout, wall_timeout)
        try:
            outcome = check(estimator, params, spec)
            trace, known = "", None
        except FuzzFailure as failure:
            outcome = "failure:" + failure.kind
            detail, trace = failure.detail, traceback.format_exc()
            known = known_defect(failure)
        except _Timeout as timeout:
            outcome = "failure:" + timeout.kind
            detail = (
                f"no result after {time.process_time() - begin_cpu:.2f} CPU s "
                f"({time.perf_counter() - begin:.1f} s wall; limits "
                f"{args.timeout} CPU s, {wall_timeout} wall s)"
            )
            trace, known = traceback.format_exc(), None
        except Exception as exc:  # noqa: BLE001 - a checker bug is also recorded
            outcome, detail = "failure:checker-" + type(exc).__name__, str(exc)
            trace, known = traceback.format_exc(), None
        finally:
            _arm(0, 0)
        elapsed = time.process_time() - begin_cpu
        fit_times = clock.take()
        record["fits"] += len(fit_times)
        for fit_time in fit_times:
            record["fit_cpu_histogram"][_bucket(fit_time)] += 1
        if fit_times:
            record["fit_cpu_max_s"] = max(record["fit_cpu_max_s"], max(fit_times))
            record["slowest_fits"].append(
                (round(max(fit_times), 3), estimator, params, spec)
            )
            record["slowest_fits"] = sorted(
                record["slowest_fits"], key=lambda r: -r[0]
            )[:20]
        if " | known: " in outcome:
            outcome, names = outcome.split(" | known: ")
            for name in names.split(", "):
                examples = record["known"].setdefault(name, {"count": 0, "cases": []})
                examples["count"] += 1
                if len(examples["cases"]) < 5:
                    examples["cases"].append(make_reproducer(estimator, params, spec))
        record["outcomes"][outcome] += 1
        record["slowest"].append((round(elapsed, 2), estimator, params, spec))
        record["slowest"] = sorted(record["slowest"], key=lambda r: -r[0])[:10]
        if outcome.startswith("failure:"):
            record["failures"].append(
                {
                    "kind": outcome[len("failure:") :],
                    "known_defect": known,
                    "detail": detail[:2000],
                    "estimator": estimator,
                    "params": params,
                    "spec": spec,
                    "traceback": trace[-4000:],
                    "reproducer": make_reproducer(estimator, params, spec),
                }
            )
        total = sum(
            n for key, n in record["outcomes"].items() if not key.startswith("loss")
        )
        if total % 100 == 0:
            flush()
            print(
                f"{total} fits, {time.perf_counter() - start:.0f} s wall, "
                f"{time.process_time() - start_cpu:.0f} s CPU, "
                f"{dict(record['outcomes'])}",
                flush=True,
            )

    @settings(
        max_examples=max(args.loss_examples, 1),
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @seed(args.seed)
    @given(loss_inputs())
    def run_loss(inputs):
        try:
            outcome = "loss:" + check_loss_case(*inputs)
        except FuzzFailure as failure:
            outcome = "loss-failure:" + failure.kind
            cos, y, kwargs = inputs
            record["failures"].append(
                {
                    "kind": failure.kind,
                    "known_defect": known_defect(failure),
                    "detail": failure.detail[:2000],
                    "estimator": "margin_softmax_loss",
                    "params": {"loss": kwargs["loss"]},
                    "reproducer": "import numpy as np\n"
                    "from numpy import array, float32, inf, nan\n"
                    "from sklmargin import margin_softmax_loss\n"
                    f"margin_softmax_loss({cos!r}, {y!r}, **{kwargs!r})\n",
                    "traceback": traceback.format_exc()[-4000:],
                }
            )
        record["outcomes"][outcome] += 1

    with threadpool_limits(limits=1):
        if args.loss_examples:
            run_loss()
            print(f"{args.loss_examples} loss calls: {dict(record['outcomes'])}")
        run()
    flush()
    total = sum(record["outcomes"].values())
    print(
        f"\n{total} fits in {record['elapsed_s']} s wall, {record['cpu_s']} s CPU "
        "(BLAS pinned to 1 thread)"
    )
    print("outcomes:", dict(record["outcomes"]))
    print(
        f"{record['fits']} fits, the slowest {record['fit_cpu_max_s']:.2f} CPU s; "
        f"CPU s per fit: {dict(sorted(record['fit_cpu_histogram'].items()))}"
    )
    for seconds, estimator, params, spec in record["slowest_fits"][:5]:
        print(f"  {seconds:.2f} s  {estimator} {params} {spec}")
    for name, examples in record["known"].items():
        print(f"  known defect {name}: stepped over in {examples['count']} cases")
    kinds = collections.Counter(
        (f["known_defect"] or "NEW", f["kind"], f["estimator"], f["params"]["loss"])
        for f in record["failures"]
    )
    for (known, kind, estimator, loss), count in kinds.most_common():
        print(f"  {count:5d}  {known[:24]:24s} {kind:32s} {estimator:30s} {loss}")
    print(f"details: {out}")


if __name__ == "__main__":
    main()
