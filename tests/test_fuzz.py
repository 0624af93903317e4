"""Fuzzing: random settings x degenerate data, checked against the invariants.

The strategies and the checker live in ``tests/fuzz_cases.py`` (shared with
``benchmarks/fuzz.py``, which runs thousands of the same cases). Here a few
dozen derandomized examples per test keep CI reproducible and the file under
~40 s on a busy 2-core machine.
"""

import math
import traceback
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from fuzz_cases import (
    LOSS_NAMES,
    MARGINS,
    FuzzFailure,
    check_case,
    fit_cases,
    known_defect,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

from sklmargin import (
    KernelMarginSoftmaxClassifier,
    MarginSoftmaxClassifier,
    margin_softmax_loss,
)
from sklmargin._margins import ALIASES

FUZZ = settings(
    deadline=None,
    derandomize=True,  # the same examples on every run: CI is reproducible
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ---------------------------------------------------------------------------
# Estimators
# ---------------------------------------------------------------------------


def _check_case_tolerating_known_defects(case):
    # A reported, not yet fixed defect (fuzz_cases.KNOWN_DEFECTS) passes here
    # and fails its strict-xfail reproducer below; anything else fails.
    try:
        check_case(*case)
    except FuzzFailure as failure:
        if known_defect(failure) is None:
            raise


@settings(FUZZ, max_examples=40)
@given(fit_cases(("MarginSoftmaxClassifier",)))
def test_linear_estimator_invariants(case):
    _check_case_tolerating_known_defects(case)


@settings(FUZZ, max_examples=25)
@given(fit_cases(("KernelMarginSoftmaxClassifier",)))
def test_kernel_estimator_invariants(case):
    _check_case_tolerating_known_defects(case)


def test_checker_catches_a_broken_invariant(monkeypatch):
    # The checker itself can fail: a predict that is not the arg-max is caught.
    case = (
        "MarginSoftmaxClassifier",
        {"loss": "arcface", "random_state": 0},
        {
            "seed": 0,
            "counts": [5, 5, 5],
            "n_features": 3,
            "dtype": "float64",
            "sparse": False,
            "magnitude": 1.0,
            "integer": False,
            "constant_columns": 0,
            "zero_rows": 0,
            "duplicates": 0,
            "string_labels": False,
            "separation": 3.0,
        },
    )
    assert check_case(*case) == "converged"
    monkeypatch.setattr(
        MarginSoftmaxClassifier,
        "predict",
        lambda self, X: self.classes_[[0] * X.shape[0]],
    )
    with pytest.raises(FuzzFailure, match="predict-not-argmax"):
        check_case(*case)


# ---------------------------------------------------------------------------
# margin_softmax_loss
# ---------------------------------------------------------------------------

_ANY_FLOAT = st.one_of(
    st.floats(-1.0, 1.0),
    st.sampled_from([-1.0, 1.0, 0.0, -0.0, 1.5, -3.0, 1e30, -1e30]),
    st.floats(allow_nan=True, allow_infinity=True),
)
_SCALE_FLOAT = st.one_of(
    st.floats(0.0, 100.0),
    st.sampled_from([0.0, 1e-30, 1e20, 1e39, 1e300, -1.0, math.nan, math.inf]),
)


@st.composite
def loss_inputs(draw):
    n = draw(st.integers(0, 6))
    k = draw(st.integers(1, 5))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow in the cast
        cos = draw(arrays(np.float64, (n, k), elements=_ANY_FLOAT)).astype(dtype)
    y = draw(arrays(np.int64, n, elements=st.integers(-1, k)))
    loss = draw(st.sampled_from(LOSS_NAMES))
    margin = MARGINS[ALIASES.get(loss, loss)]
    kwargs = {"loss": loss}
    kwargs["m"] = draw(
        st.one_of(
            st.none(),
            st.sampled_from([0.0, 0.5, 1.0, math.pi / 2, 2.0, 4.0, -0.1, math.nan]),
        )
    )
    kwargs["s"] = draw(st.one_of(st.none(), _SCALE_FLOAT))
    kwargs["t"] = draw(st.sampled_from([1.0, 1.2, 3.0, 0.5, math.nan]))
    norms_kind = draw(
        st.sampled_from(
            ["none", "scalar", "column", "full"]
            if not margin.scale_from_norms
            else ["scalar", "column", "full", "none"]
        )
    )
    if norms_kind == "scalar":
        kwargs["norms"] = draw(_SCALE_FLOAT)
    elif norms_kind == "column":
        kwargs["norms"] = draw(arrays(np.float64, (n, 1), elements=_SCALE_FLOAT))
    elif norms_kind == "full":
        kwargs["norms"] = draw(arrays(np.float64, (n, k), elements=_SCALE_FLOAT))
    if draw(st.booleans()):
        kwargs["sample_weight"] = draw(
            arrays(
                np.float64,
                n,
                elements=st.one_of(
                    st.floats(0.0, 10.0),
                    st.sampled_from([0.0, -1.0, math.nan, math.inf, 1e300]),
                ),
            )
        )
    kwargs["lam"] = draw(st.sampled_from([0.0, 0.0, 5.0, 1000.0, -1.0, math.nan]))
    return cos, y, kwargs


def _known_loss_defect(warning):
    """Reported overflow defects of margin_softmax_loss (L1, L2), or None."""
    where = [frame.name for frame in traceback.extract_tb(warning.__traceback__)]
    message = str(warning)
    if "_check_pointwise_inputs" in where and "overflow encountered in cast" in message:
        return "L1 norms beyond the float32 range"
    if "pointwise_loss_gradient" in where and "overflow" in message:
        return "L2 logit scale times cosine overflows"
    return None


@settings(FUZZ, max_examples=300)
@given(loss_inputs())
def test_margin_softmax_loss_is_finite_or_raises_value_error(inputs):
    cos, y, kwargs = inputs
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            value, grad = margin_softmax_loss(cos, y, **kwargs)
        except (ValueError, TypeError) as exc:
            assert str(exc).strip()
            return
        except RuntimeWarning as warning:
            if _known_loss_defect(warning) is None:
                raise
            return
    assert isinstance(value, float) and math.isfinite(value) and value >= 0
    assert grad.shape == cos.shape
    assert np.all(np.isfinite(grad))


# ---------------------------------------------------------------------------
# Determinism and thread safety
# ---------------------------------------------------------------------------

_CONCURRENT = [
    MarginSoftmaxClassifier(loss="arcface", t=1.5, random_state=0),
    MarginSoftmaxClassifier(loss="l-softmax", m=2, max_iter=100, random_state=1),
    KernelMarginSoftmaxClassifier(n_components=60, random_state=2),
    KernelMarginSoftmaxClassifier(
        loss="a-softmax",
        kernel_approximation="nystroem",
        n_components=40,
        random_state=3,
    ),
]


def _fit_outputs(estimator, X, y):
    from sklearn.base import clone

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = clone(estimator).fit(X, y)
    return [
        clf.coef_.tobytes(),
        clf.intercept_.tobytes(),
        clf.predict_proba(X).tobytes(),
        clf.decision_function(X).tobytes(),
    ]


def test_concurrent_fits_are_bit_identical_to_sequential_fits():
    X, y = make_classification(
        n_samples=150, n_features=8, n_informative=5, n_classes=3, random_state=0
    )
    sequential = [_fit_outputs(estimator, X, y) for estimator in _CONCURRENT]
    # Every estimator twice, in 4 threads at once, shuffled against each other.
    tasks = _CONCURRENT + _CONCURRENT[::-1]
    with ThreadPoolExecutor(max_workers=4) as pool:
        concurrent = list(pool.map(lambda est: _fit_outputs(est, X, y), tasks))
    expected = sequential + sequential[::-1]
    for estimator, got, want in zip(tasks, concurrent, expected, strict=True):
        assert got == want, f"{estimator!r} differs when fitted concurrently"
