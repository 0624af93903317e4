"""Fuzzing strategies and the invariant checker shared by tests and benchmarks.

``tests/test_fuzz.py`` runs a few dozen examples per CI run;
``benchmarks/fuzz.py`` runs thousands with the same strategies. Both import
this module, so the two cannot drift apart. It lives here rather than in the
test module so the benchmark does not import pytest fixtures or trigger the
collection of ``@given`` tests, and not in ``sklmargin/`` because it is test
code (it depends on hypothesis).

A *case* is three plain values: the estimator's name, its parameters and a
*data spec* (a dict of seeds and switches, see :func:`make_data`). All three
are literals, so ``repr`` of a failing case is a runnable reproducer
(:func:`reproducer`).
"""

from __future__ import annotations

import math
import pickle
import re
import traceback
import warnings

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import sparse
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklmargin import (
    KernelMarginSoftmaxClassifier,
    MarginSoftmaxClassifier,
    margin_softmax_loss,
)
from sklmargin._utils.validation import check_sample_and_class_weight
from sklmargin.features._gamma import weighted_variance
from sklmargin.losses._registry import ALIASES, registered_margins

ESTIMATORS = {
    "MarginSoftmaxClassifier": MarginSoftmaxClassifier,
    "KernelMarginSoftmaxClassifier": KernelMarginSoftmaxClassifier,
}
MARGINS = {margin.name: margin for margin in registered_margins()}
LOSS_NAMES = tuple(MARGINS) + tuple(ALIASES)

# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


def make_data(spec):
    """Build ``(X, y)`` from a data spec (plain dict), deterministically.

    Keys: ``seed``, ``counts`` (samples per class), ``n_features``,
    ``dtype`` ("float32"/"float64"), ``sparse``, ``magnitude`` (every entry is
    multiplied by it), ``integer`` (round X to integers before scaling),
    ``constant_columns``, ``zero_rows``, ``duplicates`` (rows copied, label
    included), ``outlier`` (one row scaled by 1e10, float32, or 1e15),
    ``string_labels`` (True, False or "float"), ``separation`` (distance of the class
    centres in units of the noise).
    """
    rng = np.random.default_rng(spec["seed"])
    if spec.get("dataset"):
        X, y = _dataset_rows(spec["dataset"], rng)
        counts, n_features = np.bincount(y), X.shape[1]
    else:
        counts = spec["counts"]
        n_features = spec["n_features"]
        y = np.repeat(np.arange(len(counts)), counts)
        centres = rng.standard_normal((len(counts), n_features)) * spec["separation"]
        X = centres[y] + rng.standard_normal((len(y), n_features))
    if spec["integer"]:
        X = np.round(2 * X)
    if spec["sparse"]:
        X[np.abs(X) < 0.7] = 0.0
    for column in range(min(spec["constant_columns"], n_features)):
        X[:, (column * 7) % n_features] = 1.5 if column % 2 else 0.0
    for row in range(min(spec["zero_rows"], len(y))):
        X[(row * 5) % len(y)] = 0.0
    if spec["duplicates"]:
        copied = rng.integers(0, len(y), size=spec["duplicates"])
        X = np.vstack([X, X[copied]])
        y = np.concatenate([y, y[copied]])
    if spec.get("outlier"):
        # One row far outside the others (1e10 in float32, 1e15 in float64).
        X[len(y) // 2] *= 1e10 if spec["dtype"] == "float32" else 1e15
    X = X * spec["magnitude"]
    X = X.astype(spec["dtype"])
    if spec["sparse"]:
        X = sparse.csr_matrix(X)
    if spec["string_labels"] == "float":
        labels = np.arange(len(counts)) * 2.0 - 1.0  # float dtype, integer values
    elif spec["string_labels"]:
        labels = np.array([f"class-{j}" for j in range(len(counts))], dtype=object)
    else:
        labels = np.arange(len(counts)) * 3 - 2  # non-contiguous, negative
    weights = spec.get("weights")
    if weights == "positive":
        sample_weight = rng.uniform(0.1, 10.0, len(y))
    elif weights == "with-zeros":
        sample_weight = rng.uniform(0.1, 10.0, len(y)) * (rng.random(len(y)) < 0.7)
        sample_weight[0] = 1.0  # a positive sum
    elif weights == "integer":
        sample_weight = rng.integers(0, 4, len(y)).astype(float)
        sample_weight[0] = 1.0
    else:
        sample_weight = None
    return X, labels[y], sample_weight


_DATASETS = {}


def _dataset_rows(dataset, rng):
    """Rows of a bundled scikit-learn data set: ``(name, n_rows, standardised)``.

    ``n_rows`` rows drawn without replacement (all of them when there are
    fewer), the labels re-encoded 0..K-1 on the rows drawn.
    """
    from sklearn import datasets

    name, n_rows, standardised = dataset
    if name not in _DATASETS:
        _DATASETS[name] = getattr(datasets, f"load_{name}")(return_X_y=True)
    X, y = _DATASETS[name]
    rows = rng.permutation(len(y))[: min(n_rows, len(y))]
    X = np.asarray(X[rows], dtype=np.float64)
    y = np.unique(y[rows], return_inverse=True)[1]
    if standardised:
        X = (X - X.mean(axis=0)) / np.maximum(X.std(axis=0), 1e-12)
    return X, y


@st.composite
def data_specs(draw):
    """Degenerate and ordinary classification data (see :func:`make_data`)."""
    shape = draw(
        st.sampled_from(["ordinary", "few-per-class", "wide", "one-feature", "dataset"])
    )
    if shape == "few-per-class":
        counts = draw(st.lists(st.integers(1, 3), min_size=5, max_size=12))
    else:
        counts = draw(st.lists(st.integers(1, 15), min_size=2, max_size=5))
    if shape == "wide":
        n_features = draw(st.integers(20, 60))
    elif shape == "one-feature":
        n_features = 1
    else:
        n_features = draw(st.integers(2, 8))
    dtype = draw(st.sampled_from(["float64", "float32"]))
    huge = 1e20 if dtype == "float32" else 1e30
    magnitude = draw(st.sampled_from([1.0, 1.0, 1e-30, huge, 1e3, 1e-3]))
    dataset = None
    if shape == "dataset":
        # Real rows (45-600 of iris, wine, breast_cancer, digits), raw or
        # standardised: where extreme settings made tiny fits take seconds.
        dataset = (
            draw(st.sampled_from(["iris", "wine", "breast_cancer", "digits"])),
            draw(st.sampled_from([45, 100, 265, 600])),
            draw(st.booleans()),
        )
        magnitude = draw(st.sampled_from([1.0, 1.0, 1.0, 1e-3, 1e3]))
    return {
        "dataset": dataset,
        "seed": draw(st.integers(0, 2**16)),
        "counts": counts,
        "n_features": n_features,
        "dtype": dtype,
        "sparse": draw(st.booleans()),
        "magnitude": magnitude,
        "integer": draw(st.booleans()),
        "constant_columns": draw(st.sampled_from([0, 0, 1, 2])),
        "zero_rows": draw(st.sampled_from([0, 0, 1, 3])),
        "duplicates": draw(st.sampled_from([0, 0, 3, 10])),
        "string_labels": draw(st.sampled_from([False, True, "float"])),
        "outlier": draw(st.sampled_from([False, False, True])),
        "separation": draw(st.sampled_from([0.0, 1.0, 3.0, 10.0])),
        "weights": draw(
            st.sampled_from([None, None, "positive", "with-zeros", "integer"])
        ),
    }


# ---------------------------------------------------------------------------
# Estimator settings
# ---------------------------------------------------------------------------


def _m_strategy(margin):
    """``m`` at and inside the edges of the margin's domain (from the registry).

    An unbounded domain (L-/A-Softmax) stops at the margin's most extreme
    valid setting, its ``edge_settings``; the tuning grid's values are drawn too.
    """
    low, high = margin.m_domain
    if low == high:
        return st.sampled_from([None, low])
    high = min(high, margin.edge_settings.get("m", high))
    grid = [m for m in margin.search_grid.get("m", ()) if low <= m <= high]
    return st.one_of(
        st.sampled_from([None, low, *grid, high]),
        st.floats(low, high, allow_nan=False),
    )


_M_STRATEGIES = {name: _m_strategy(margin) for name, margin in MARGINS.items()}

_LOG_FLOATS = {
    "s": (0.1, 100.0),
    "C": (1e-3, 1e3),
    "lambda_min": (1e-2, 1e2),
    "constant_feature": (1e-2, 10.0),
    "gamma": (1e-3, 1e3),
}


def _log_uniform(name):
    low, high = _LOG_FLOATS[name]
    return st.floats(math.log10(low), math.log10(high)).map(
        lambda e: float(f"{10.0**e:.4g}")  # short literals in reproducers
    )


@st.composite
def estimator_params(
    draw, estimator, n_classes_labels, max_iters=(5, 50, 200), beyond=False
):
    """Random valid settings for ``estimator`` ("MarginSoftmaxClassifier"...).

    ``n_classes_labels`` is the list of class labels of the data (for
    ``class_weight`` dicts).
    """
    loss = draw(st.sampled_from(LOSS_NAMES))
    margin = MARGINS[ALIASES.get(loss, loss)]
    params = {"loss": loss, "m": draw(_M_STRATEGIES[margin.name])}
    if margin.uses_lambda and _rarely(draw):
        params["m"] = 100.0  # legal, far past the papers' 1-4
    if margin.uses_s:
        params["s"] = draw(st.one_of(st.none(), st.just(0.1), st.just(100.0)))
        if params["s"] is None and draw(st.booleans()):
            params["s"] = draw(_log_uniform("s"))
        if beyond and _rarely(draw):
            # Beyond the brief's 0.1..100: past float32's range, and tiny.
            params["s"] = draw(st.sampled_from([1e39, 1e6, 1e-30]))
    params["t"] = draw(
        st.one_of(st.just(1.0), st.floats(1.1, 3.0).map(lambda t: round(t, 3)))
    )
    params["C"] = draw(st.one_of(st.just(1.0), st.just(1e8), _log_uniform("C")))
    # The default, and stopping rules far below round-off (a fit may only
    # stop on its budget there: it must still cost what the problem costs).
    params["tol"] = draw(st.sampled_from([1e-4, 1e-4, 1e-8, 1e-12]))
    if margin.uses_lambda:
        params["lambda_min"] = draw(
            st.one_of(st.none(), st.just(0.0), _log_uniform("lambda_min"))
        )
    params["fit_intercept"] = draw(st.booleans())
    kind = draw(st.sampled_from(["none", "balanced", "dict"]))
    if kind == "balanced":
        params["class_weight"] = "balanced"
    elif kind == "dict":
        chosen = draw(
            st.lists(st.sampled_from(list(n_classes_labels)), min_size=1, unique=True)
        )
        params["class_weight"] = {
            _literal(label): draw(st.sampled_from([0.0, 0.5, 1.0, 3.0, 100.0]))
            for label in chosen
        }
    params["constant_feature"] = draw(
        st.one_of(
            st.none(), st.just(0.0), st.just(1.0), _log_uniform("constant_feature")
        )
    )
    params["max_iter"] = draw(st.sampled_from(max_iters))
    params["warm_start"] = draw(st.booleans())
    params["random_state"] = draw(st.integers(0, 1000))
    if estimator == "KernelMarginSoftmaxClassifier":
        params["kernel_approximation"] = draw(
            st.sampled_from(["orf", "rff", "nystroem"])
        )
        params["n_components"] = draw(st.sampled_from([1, 2, 7, 30]))
        params["gamma"] = draw(st.one_of(st.just("scale"), _log_uniform("gamma")))
        params["metric"] = draw(st.sampled_from([None, "diagonal", "full"]))
        params["metric_steps"] = draw(st.sampled_from([1, 2]))
    return params


def _literal(label):
    """Numpy scalar labels as plain Python literals (for reproducers)."""
    return label.item() if isinstance(label, np.generic) else label


@st.composite
def fit_cases(draw, estimators=tuple(ESTIMATORS), max_iters=(5, 50, 200), beyond=False):
    """A full case: ``(estimator name, params, data spec)``.

    ``max_iters`` are the L-BFGS budgets drawn from (CI uses small ones);
    ``beyond`` also draws settings outside the documented ranges (rarely an
    ``s`` of 1e39, 1e6 or 1e-30), as the long benchmark run does.
    """
    estimator = draw(st.sampled_from(estimators))
    spec = draw(data_specs())
    _, y, _ = make_data(spec)
    params = draw(estimator_params(estimator, np.unique(y).tolist(), max_iters, beyond))
    return estimator, params, spec


# ---------------------------------------------------------------------------
# margin_softmax_loss inputs
# ---------------------------------------------------------------------------

# Valid values (with their edges) most of the time, anything at all otherwise:
# a fuzzer that mostly hits the input validation explores little else.
_COSINES = st.one_of(
    st.floats(-1.0, 1.0),
    st.sampled_from([-1.0, 1.0, 0.0, -0.0, 1.0 - 1e-7, -1.0 + 1e-7]),
)
_ANY_FLOAT = st.one_of(
    st.sampled_from([1.5, -3.0, 1e30, -1e30]),
    st.floats(allow_nan=True, allow_infinity=True),
)
_SCALES = st.one_of(
    st.floats(0.0, 100.0), st.sampled_from([0.0, 1e-30, 1e-3, 1e3, 1e20])
)
_ANY_SCALE = st.sampled_from([1e39, 1e300, -1.0, math.nan, math.inf])
_WEIGHTS = st.one_of(st.floats(0.0, 10.0), st.sampled_from([0.0, 1e-300, 1e300]))
_ANY_WEIGHT = st.sampled_from([-1.0, math.nan, math.inf])


def _rarely(draw):
    """True about one time in ten (index 0 is hypothesis's favourite)."""
    return draw(st.sampled_from([False] * 9 + [True]))


def _mostly(draw, valid, invalid):
    """Draw from ``valid`` about 9 times in 10, else from ``invalid``."""
    return draw(invalid) if _rarely(draw) else draw(valid)


@st.composite
def loss_inputs(draw):
    """Inputs of :func:`margin_softmax_loss`, mostly valid: ``(cos, y, kwargs)``."""
    n = _mostly(draw, st.integers(1, 6), st.just(0))
    k = _mostly(draw, st.integers(2, 5), st.just(1))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    elements = st.one_of(_COSINES, _ANY_FLOAT) if _rarely(draw) else _COSINES
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow in the cast
        cos = draw(arrays(np.float64, (n, k), elements=elements)).astype(dtype)
    y = draw(
        arrays(
            np.int64,
            n,
            elements=_mostly(
                draw, st.just(st.integers(0, k - 1)), st.just(st.integers(-1, k))
            ),
        )
    )
    loss = draw(st.sampled_from(LOSS_NAMES))
    margin = MARGINS[ALIASES.get(loss, loss)]
    kwargs = {"loss": loss}
    kwargs["m"] = _mostly(
        draw,
        _M_STRATEGIES[margin.name],
        st.sampled_from([-0.1, 0.5, 2.0, 4.0, math.nan]),
    )
    kwargs["t"] = _mostly(
        draw,
        st.one_of(st.just(1.0), st.floats(1.0, 3.0)),
        st.sampled_from([0.5, math.nan, math.inf]),
    )
    use_norms = margin.scale_from_norms
    if _rarely(draw):
        use_norms = not use_norms
    if use_norms:
        scale = _mostly(draw, _SCALES, _ANY_SCALE)
        kwargs["norms"] = draw(
            st.sampled_from(
                [scale, np.full((n, 1), scale), np.full((n, k), scale)]
                + [draw(arrays(np.float64, (n, 1), elements=_SCALES))]
            )
        )
    if margin.uses_s and (not use_norms or _rarely(draw)):
        kwargs["s"] = draw(st.one_of(st.none(), _SCALES.filter(lambda v: v > 0)))
        if _rarely(draw):
            kwargs["s"] = draw(_ANY_SCALE)
    if draw(st.booleans()):
        kwargs["sample_weight"] = draw(
            arrays(
                np.float64,
                n,
                elements=_mostly(
                    draw, st.just(_WEIGHTS), st.just(st.one_of(_WEIGHTS, _ANY_WEIGHT))
                ),
            )
        )
    kwargs["lam"] = _mostly(
        draw,
        st.sampled_from([0.0, 0.0, 0.5, 5.0, 1000.0]),
        st.sampled_from([-1.0, math.nan]),
    )
    return cos, y, kwargs


# ---------------------------------------------------------------------------
# The invariants
# ---------------------------------------------------------------------------


class FuzzFailure(AssertionError):
    """A case broke an invariant; ``kind`` names which one.

    ``where`` lists the functions of the traceback of the exception that broke
    it (empty when an output check failed), innermost last.
    """

    def __init__(self, kind, detail, cause=None):
        super().__init__(f"[{kind}] {detail}")
        self.kind = kind
        self.detail = detail
        self.where = (
            [frame.name for frame in traceback.extract_tb(cause.__traceback__)]
            if cause is not None
            else []
        )


# Defects found by fuzzing and reported (benchmarks/results_fuzz.md), not yet
# fixed in sklmargin/: (kind, text in the detail, function in the traceback).
# The hypothesis tests tolerate exactly these; each has a strict-xfail
# reproducer in tests/test_fuzz.py. Delete an entry when its defect is fixed.
# Defects still open, by name: (failure kind prefix, text in the detail,
# function in the traceback). Empty: D1-D4, L1 and L2 are fixed (their
# reproducers are regression tests in test_fuzz.py).
KNOWN_DEFECTS: dict = {}


def known_defect(failure):
    """Name of the known defect ``failure`` is an instance of, or None."""
    for name, (kind, text, function) in KNOWN_DEFECTS.items():
        if (
            failure.kind.startswith(kind)
            and text in failure.detail
            and (function in failure.where or not function)
        ):
            return name
    return None


def reproducer(estimator, params, spec):
    """Python source that replays a case (run from the repository root)."""
    return (
        "import sys; sys.path[:0] = ['.', 'tests']  # from the repository root\n"
        "from fuzz_cases import make_data, check_case\n"
        f"from sklmargin import {estimator}\n"
        f"X, y, sample_weight = make_data({spec!r})\n"
        f"clf = {estimator}(**{params!r}).fit(X, y, sample_weight=sample_weight)\n"
        f"# or, every invariant: check_case({estimator!r}, {params!r}, {spec!r})\n"
    )


_METHODS = ("decision_function", "predict", "predict_proba", "predict_log_proba")


def _step(step, kind, tolerated):
    """Run ``step()`` with RuntimeWarning as an error.

    A RuntimeWarning becomes a :class:`FuzzFailure` of ``kind``, unless
    ``tolerated`` is a list and the failure is a known defect: its name is
    then appended and the step re-run with that one warning message ignored
    (any other RuntimeWarning still fails), so that the remaining invariants
    are still checked.
    """
    ignored = []
    while True:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)
                for message in ignored:
                    warnings.filterwarnings(
                        "ignore", message=re.escape(message), category=RuntimeWarning
                    )
                return step()
        except RuntimeWarning as exc:
            failure = FuzzFailure(kind, repr(exc), exc)
            name = known_defect(failure) if tolerated is not None else None
            if name is None or str(exc) in ignored:
                raise failure from exc
            tolerated.append(name)
            ignored.append(str(exc))


def _fit_and_predict(estimator, params, X, y, sample_weight, clf=None, tolerated=None):
    """Fit and predict with RuntimeWarning as an error (see :func:`_step`).

    Returns ``(fitted, outputs, convergence_warnings, error)``; ``error`` is
    the exception fit raised (outputs None) or None.
    """
    if clf is None:
        clf = ESTIMATORS[estimator](**params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _step(
                lambda: clf.fit(X, y, sample_weight=sample_weight),
                "runtime-warning-in-fit",
                tolerated,
            )
        except (ValueError, TypeError) as exc:
            return clf, None, [], exc
        except FuzzFailure:
            raise
        except Exception as exc:
            raise FuzzFailure(
                "unexpected-exception-in-fit", f"{type(exc).__name__}: {exc}", exc
            ) from exc
        probe = probe_rows(X)
        outputs = {}
        for name in _METHODS:
            try:
                outputs[name] = _step(
                    lambda name=name: getattr(clf, name)(probe),
                    "runtime-warning-in-predict",
                    tolerated,
                )
            except FuzzFailure:
                raise
            except Exception as exc:
                raise FuzzFailure(
                    "exception-in-predict", f"{type(exc).__name__}: {exc}", exc
                ) from exc
    converge = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    return clf, outputs, converge, None


def probe_rows(X):
    """Rows predicted on: the training rows, an all-zero row, and the first
    row scaled by 1e6 (capped where that would leave the dtype's range)."""
    first = X[:1].toarray() if sparse.issparse(X) else X[:1]
    peak = float(np.max(np.abs(first), initial=0.0))
    limit = float(np.finfo(X.dtype).max) / 1e3
    factor = 1e6 if peak <= limit / 1e6 else limit / peak
    extra = np.vstack([np.zeros_like(first), first * X.dtype.type(max(factor, 1.0))])
    if sparse.issparse(X):
        return sparse.vstack([X, sparse.csr_matrix(extra)], format="csr")
    return np.vstack([X, extra])


def _fitted_arrays(clf):
    return {
        name: getattr(clf, name)
        for name in ("coef_", "intercept_", "constant_coef_")
        if hasattr(clf, name)
    }


def check_case(estimator, params, spec, *, check_refit=True, tolerate_known=False):
    """Fit one case and check every invariant; raise :class:`FuzzFailure`.

    Invariants: fit succeeds or raises ValueError/TypeError with a message;
    no RuntimeWarning in fit or predict; on success the fitted arrays and every
    output are finite, ``predict_proba`` rows sum to one (rtol 1e-5 in float32),
    ``predict`` is the arg-max of ``decision_function`` (its sign for two
    classes), ``predict_log_proba == log(predict_proba)``, the dtype of X is
    kept; a refit with the same ``random_state`` is bit-identical (or raises the
    same error); a warm refit (``warm_start=True``) keeps the outputs valid.

    With ``tolerate_known``, a RuntimeWarning of a known defect
    (:data:`KNOWN_DEFECTS`) is noted and the check goes on without it (and,
    for D1, with ``-inf`` allowed in ``predict_log_proba`` where the
    probability is 0).

    Returns
    -------
    str
        "rejected", "converged" or "convergence-warning", followed by
        " | known: <names>" when known defects were tolerated.
    """
    X, y, sample_weight = make_data(spec)
    tolerated = [] if tolerate_known else None
    clf, outputs, converge, error = _fit_and_predict(
        estimator, params, X, y, sample_weight, tolerated=tolerated
    )
    if error is not None:
        if not str(error).strip():
            raise FuzzFailure("empty-error-message", repr(error))
        if check_refit:
            _, _, _, again = _fit_and_predict(
                estimator, params, X, y, sample_weight, tolerated=tolerated
            )
            if type(again) is not type(error) or str(again) != str(error):
                raise FuzzFailure("refit-error-differs", f"{error!r} then {again!r}")
        return _with_known("rejected", tolerated)
    _check_outputs(clf, outputs, X, converge, tolerated)
    if check_refit:
        again, outputs_again, _, error_again = _fit_and_predict(
            estimator,
            clone(clf).get_params(),
            X,
            y,
            sample_weight,
            tolerated=tolerated,
        )
        if error_again is not None:
            raise FuzzFailure("refit-raised", repr(error_again))
        first = {**_fitted_arrays(clf), **outputs, "n_iter_": np.asarray(clf.n_iter_)}
        second = {
            **_fitted_arrays(again),
            **outputs_again,
            "n_iter_": np.asarray(again.n_iter_),
        }
        for name, value in first.items():
            other = second[name]
            if value.dtype != other.dtype or value.tobytes() != other.tobytes():
                raise FuzzFailure(
                    "refit-not-bit-identical",
                    f"{name} differs between two fits with the same random_state",
                )
    _check_pickle_and_dtype(clf, outputs, X, tolerated)
    if sparse.issparse(X) and params.get("gamma") == "scale":
        try:
            _check_sparse_variance(clf, X, y, sample_weight)
        except FuzzFailure as failure:
            name = known_defect(failure) if tolerated is not None else None
            if name is None:
                raise
            tolerated.append(name)
    if params.get("warm_start"):
        # A warm refit on the same data starts from the fitted model.
        _, outputs_warm, converge_warm, error_warm = _fit_and_predict(
            estimator, params, X, y, sample_weight, clf=clf, tolerated=tolerated
        )
        if error_warm is not None:
            raise FuzzFailure("warm-refit-raised", repr(error_warm))
        _check_outputs(clf, outputs_warm, X, converge_warm, tolerated)
    return _with_known("convergence-warning" if converge else "converged", tolerated)


def _check_pickle_and_dtype(clf, outputs, X, tolerated):
    """A pickled model predicts the same bits; the other float dtype works."""
    probe = probe_rows(X)
    restored = pickle.loads(pickle.dumps(clf))
    again = _step(
        lambda: restored.decision_function(probe),
        "runtime-warning-in-predict",
        tolerated,
    )
    if again.tobytes() != outputs["decision_function"].tobytes():
        raise FuzzFailure("pickle-changes-predictions", "decision_function differs")
    other = np.float64 if X.dtype == np.float32 else np.float32
    with np.errstate(over="ignore"):
        converted = probe.astype(other)
    data = converted.data if sparse.issparse(converted) else converted
    if not np.all(np.isfinite(data)):
        return  # beyond float32: the estimator rightly rejects it
    try:
        decision = _step(
            lambda: clf.decision_function(converted),
            "runtime-warning-in-predict",
            tolerated,
        )
    except ValueError as exc:
        # A model whose logit scale is beyond float32 refuses float32 rows.
        if other == np.float32 and "logit scale" in str(exc):
            return
        raise
    if decision.dtype != other or not np.all(np.isfinite(decision)):
        raise FuzzFailure(
            "other-dtype-predict",
            f"{decision.dtype} output, finite: "
            f"{np.all(np.isfinite(decision))} for {np.dtype(other)} input",
        )


def _check_sparse_variance(clf, X, y, sample_weight):
    """gamma="scale" sees the same weighted variance for CSR and dense X."""
    classes, y_encoded = np.unique(y, return_inverse=True)
    weights = check_sample_and_class_weight(
        sample_weight, clf.class_weight, classes, y_encoded, X.shape[0]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # counted in the fit
        from_sparse = weighted_variance(X, weights)
        from_dense = weighted_variance(X.toarray(), weights)
    if not np.isclose(from_sparse, from_dense, rtol=1e-6, atol=0):
        raise FuzzFailure(
            "sparse-dense-variance-differ",
            f"weighted variance {from_sparse!r} (CSR) vs {from_dense!r} (dense)",
        )


def _with_known(outcome, tolerated):
    if not tolerated:
        return outcome
    return outcome + " | known: " + ", ".join(sorted({n.split()[0] for n in tolerated}))


def check_loss_case(cos, y, kwargs):
    """:func:`margin_softmax_loss` gives a finite loss >= 0 and a finite
    gradient of ``cos``'s shape, or raises ValueError/TypeError with a
    message; never a RuntimeWarning. Raises :class:`FuzzFailure`.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            value, grad = margin_softmax_loss(cos, y, **kwargs)
        except (ValueError, TypeError) as exc:
            if not str(exc).strip():
                raise FuzzFailure("empty-error-message", repr(exc)) from exc
            return "rejected"
        except RuntimeWarning as exc:
            raise FuzzFailure("runtime-warning-in-loss", repr(exc), exc) from exc
        except Exception as exc:
            raise FuzzFailure(
                "unexpected-exception-in-loss", f"{type(exc).__name__}: {exc}", exc
            ) from exc
    if not (isinstance(value, float) and math.isfinite(value) and value >= 0):
        raise FuzzFailure("bad-loss-value", repr(value))
    if grad.shape != cos.shape or not np.all(np.isfinite(grad)):
        raise FuzzFailure("bad-loss-gradient", repr(grad))
    return "finite"


def _check_outputs(clf, outputs, X, converge, tolerated=None):
    for name, value in _fitted_arrays(clf).items():
        if not np.all(np.isfinite(value)):
            kind = "nan-model-with-convergence-warning" if converge else "nan-model"
            raise FuzzFailure(kind, f"{name} is not finite: {value!r}")
    n_classes = len(clf.classes_)
    log_of_zero = any(name.startswith("D1 ") for name in tolerated or ())
    for name in ("decision_function", "predict_proba", "predict_log_proba"):
        value = outputs[name]
        if name == "predict_log_proba" and log_of_zero:
            # Known defect D1: -inf where the probability underflowed to 0.
            value = np.where(outputs["predict_proba"] == 0, 0, value)
        if not np.all(np.isfinite(value)):
            raise FuzzFailure(
                f"non-finite-{name}",
                f"{np.sum(~np.isfinite(value))} "
                f"non-finite entries, e.g. {value.ravel()[:4]!r}",
            )
        if value.dtype != X.dtype:
            raise FuzzFailure("dtype-not-kept", f"{name} is {value.dtype}, X {X.dtype}")
    proba = outputs["predict_proba"]
    rtol = 1e-5 if X.dtype == np.float32 else 1e-10
    if not np.allclose(proba.sum(axis=1), 1.0, rtol=rtol, atol=0):
        raise FuzzFailure("proba-not-normalised", repr(proba.sum(axis=1)))
    if np.any(proba < 0) or np.any(proba > 1):
        raise FuzzFailure("proba-out-of-range", repr(proba))
    decision = outputs["decision_function"]
    if n_classes == 2:
        if decision.ndim != 1:
            raise FuzzFailure("binary-decision-not-1d", repr(decision.shape))
        expected = clf.classes_[(decision > 0).astype(int)]
    else:
        expected = clf.classes_[np.argmax(decision, axis=1)]
    if not np.array_equal(outputs["predict"], expected):
        raise FuzzFailure("predict-not-argmax", "predict != classes_[argmax]")
    # log(predict_proba) exactly where the probability is positive; where it
    # underflowed to 0 a finite value (checked above) below log(tiniest).
    positive = proba > 0
    log_proba = outputs["predict_log_proba"]
    if not np.array_equal(log_proba[positive], np.log(proba[positive])):
        raise FuzzFailure("log-proba-not-log", "predict_log_proba != log(proba)")
    floor = np.log(np.finfo(proba.dtype).smallest_subnormal)
    if not log_of_zero and np.any(log_proba[~positive] > floor):
        raise FuzzFailure("log-proba-not-log", "log-probability of a 0 probability")
