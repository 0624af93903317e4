"""Regression tests for the defects found by fuzzing and the autograd cross-check.

Each test names the item of issue 11 (or issue 19) it keeps fixed.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from sklmargin import (
    KernelMarginSoftmaxClassifier,
    MarginSoftmaxClassifier,
    margin_softmax_loss,
    registered_margins,
)
from sklmargin.losses._support_vectors import with_support_vectors
from sklmargin.objective._linear import LinearMarginObjective
from sklmargin.objective._rows import lift_constant, prepare_rows, row_norms

ESTIMATORS = [
    MarginSoftmaxClassifier,
    lambda **kw: KernelMarginSoftmaxClassifier(n_components=60, random_state=0, **kw),
]


# -- 1. margin_softmax_loss refuses bad input with a clear ValueError -----------
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(cos=[[np.nan, 0.1], [0.2, 0.3]]), "finite"),
        (dict(cos=[[np.inf, 0.1], [0.2, 0.3]]), "finite"),
        (dict(sample_weight=[1.0, -1.0]), "Negative"),
        (dict(sample_weight=[0.0, 0.0]), "zero"),
        (dict(sample_weight=[np.nan, 1.0]), "finite"),
        (dict(loss="l-softmax", norms=[[np.nan], [1.0]]), "norms"),
        (dict(loss="a-softmax", norms=[[-1.0], [1.0]]), "norms"),
        (dict(cos=np.zeros((0, 2)), y=[]), "at least one sample"),
        (dict(cos=np.zeros((2, 1)), y=[0, 0]), "two classes"),
    ],
)
def test_pointwise_loss_rejects_bad_input(kwargs, match):
    args = dict(cos=[[0.5, 0.1], [0.2, 0.3]], y=[0, 1], loss="am-softmax")
    args.update(kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning on the way
        with pytest.raises(ValueError, match=match):
            margin_softmax_loss(args.pop("cos"), args.pop("y"), **args)


# -- 2. SV-Softmax never ends above its start; a warm refit keeps the model ----
def _overlapping_classes():
    rng = np.random.default_rng(3)
    y = np.arange(40) % 4
    return rng.standard_normal((40, 5)) + y[:, None], y


def _exact_objective(clf, X, y, t):
    if hasattr(clf, "feature_map_"):
        X = clf.feature_map_.transform(clf._transform_input(X))
    margin = with_support_vectors(clf.margin_.stateless(), t)
    rows = prepare_rows(X, normalize=margin.uses_angle, constant=clf.constant_feature_)
    objective = LinearMarginObjective(
        rows, y, len(clf.classes_), np.ones(len(y)), margin, clf.m_, clf.s_, 1.0, True
    )
    # the final softening the fit ended with
    lam = margin.default_lambda if margin.uses_lambda else 0.0
    params = np.zeros(objective.n_params)
    coef, intercept = objective.unpack(params)
    lifted = clf.constant_feature_ > 0
    coef[:] = np.column_stack([clf.coef_, clf.constant_coef_]) if lifted else clf.coef_
    intercept[:] = clf.intercept_
    return objective.value_and_state(params, lam=lam)[0]


@pytest.mark.parametrize("loss", ["softmax", "normface", "am-softmax", "arcface"])
def test_sv_fit_is_no_worse_than_its_start_on_its_own_objective(loss):
    X, y = _overlapping_classes()
    plain = MarginSoftmaxClassifier(loss=loss).fit(X, y)
    sv = MarginSoftmaxClassifier(loss=loss, t=2.0).fit(X, y)
    # The cold SV fit starts from the plain solution (t = 1).
    assert _exact_objective(sv, X, y, 2.0) <= _exact_objective(plain, X, y, 2.0)


@pytest.mark.parametrize("make", ESTIMATORS)
@pytest.mark.parametrize("loss", ["softmax", "normface", "arcface", "a-softmax"])
def test_sv_warm_refit_does_not_degrade_the_model(make, loss):
    X, y = _overlapping_classes()
    clf = make(loss=loss, t=2.0, warm_start=True).fit(X, y)
    values = [_exact_objective(clf, X, y, 2.0)]
    accuracies = [clf.score(X, y)]
    for _ in range(2):
        clf.fit(X, y)
        values.append(_exact_objective(clf, X, y, 2.0))
        accuracies.append(clf.score(X, y))
    # A warm refit may only improve the model on its own objective (it moved
    # the coefficients by 1.28 and cost 12 points of training accuracy before),
    # up to the round-off of a refit that lands on the same point.
    slack = 1e-12 * abs(values[0])
    assert values[1] <= values[0] + slack and values[2] <= values[1] + slack
    assert min(accuracies) >= accuracies[0] - 1.5 / len(y)


# -- 3. A collapsing L-Softmax is reported, never a false "converged" ----------
@pytest.mark.parametrize("lambda_min", [1.0, 0.0])
def test_collapsed_l_softmax_warns_and_names_the_cause(lambda_min):
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    with pytest.warns(ConvergenceWarning, match="collapsed"):
        clf = MarginSoftmaxClassifier(loss="l-softmax", m=2, lambda_min=lambda_min)
        clf.fit(X, y)
    assert np.all(np.isfinite(clf.coef_))


# -- 4. Any finite magnitude works for the scale-invariant losses --------------
@pytest.mark.parametrize("dtype, factor", [(np.float32, 1e20), (np.float64, 1e200)])
@pytest.mark.parametrize(
    "loss", [margin.name for margin in registered_margins() if margin.normalizes_X]
)
def test_huge_inputs_give_the_same_cosine_model(loss, dtype, factor):
    rng = np.random.default_rng(0)
    y = np.arange(30) % 3
    X = rng.standard_normal((30, 4)) + y[:, None]
    reference = MarginSoftmaxClassifier(loss=loss).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning, no ConvergenceWarning
        huge = MarginSoftmaxClassifier(loss=loss).fit((X * factor).astype(dtype), y)
        predicted = huge.predict((X * factor).astype(dtype))
    # Separable data: the optimum's direction is not unique, so coefficients
    # may differ within it; the decisions must not.
    np.testing.assert_array_equal(predicted, reference.predict(X))
    assert np.all(np.isfinite(huge.predict_proba((X * factor).astype(dtype))))


def test_row_norms_and_lift_do_not_overflow():
    X = np.array([[1e200, 1e200], [3.0, 4.0], [0.0, 0.0]])
    rows = prepare_rows(X, normalize=True, constant=1.0)
    assert np.all(np.isfinite(rows.X)) and np.all(np.isfinite(rows.norms))
    np.testing.assert_allclose(rows.norms[:2], [np.sqrt(2) * 1e200, np.sqrt(26)])
    c = lift_constant(row_norms(X), 2, np.ones(3), 1.0)
    # RMS over all 6 entries: sqrt((2e400 + 25) / 6), dominated by the first row.
    assert c == pytest.approx(1e200 * np.sqrt(2 / 6))


# -- 5. class_weight is validated like sample_weight, in one place -------------
@pytest.mark.parametrize("make", ESTIMATORS)
@pytest.mark.parametrize(
    "class_weight, match",
    [
        ({0: 0.0, 1: 0.0, 2: 0.0}, "zero"),
        ({0: np.nan}, "finite"),
        ({0: -1.0}, ">= 0"),
        ({0: "heavy"}, "real number"),
        ({7: 1.0}, "not in the training labels"),
    ],
)
def test_bad_class_weight_raises_a_clear_error(make, class_weight, match):
    X, y = _overlapping_classes()
    y = y % 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match=match):
            make(class_weight=class_weight).fit(X, y)


# -- 6. ArcFace in float32 near an anti-parallel target ------------------------
@pytest.mark.parametrize("gap", [8e-8, 2e-7, 1e-6])
def test_arcface_float32_gradient_near_antiparallel_target(gap):
    cos = np.array([[-1 + gap, 0.3, -0.2], [0.5, -0.1, 0.2]], dtype=np.float32)
    y = np.array([0, 0])
    _, g32 = margin_softmax_loss(cos, y, loss="arcface", m=0.5, s=30)
    _, g64 = margin_softmax_loss(cos.astype(np.float64), y, loss="arcface", m=0.5, s=30)
    # Same (float32-rounded) input: only float32 arithmetic may differ.
    assert np.abs(g32 - g64).max() <= 1e-5 * np.abs(g64).max()


# -- the CV estimator shares predict_log_proba's underflow handling -------------
def test_cv_log_proba_of_an_underflowed_probability_is_finite():
    from sklmargin import MarginSoftmaxClassifierCV

    X = np.array([[1.0, 0.0], [-1.0, 0.0]] * 10, dtype=np.float32)
    y = [0, 1] * 10
    clf = MarginSoftmaxClassifierCV(ss=[1000.0], cv=2).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        log_proba = clf.predict_log_proba(X)
    proba = clf.predict_proba(X)
    # The probability underflowed: it sits at the floor, not at 0.
    tiniest = np.finfo(np.float32).smallest_subnormal
    assert np.all(np.isfinite(log_proba)) and np.any(proba == tiniest)
    # Exactly log(predict_proba), as scikit-learn's check_classifiers_train asks.
    np.testing.assert_array_equal(log_proba, np.log(proba))


# -- issue 19: defects the 10,000-case fuzz run found -------------------------
def test_l_softmax_line_search_far_out_in_float32_is_evaluated_in_float64():
    # The fuzz run's reproducer: float32 rows of 1e20 under L-Softmax's |x||w|;
    # a line-search trial with a huge |w| overflowed the float32 gradient.
    from fuzz_cases import make_data

    X, y, sample_weight = make_data(
        {
            "seed": 0, "counts": [1, 7, 10, 4, 11], "n_features": 2,
            "dtype": "float32", "sparse": True, "magnitude": 1e20,
            "integer": False, "constant_columns": 2, "zero_rows": 3,
            "duplicates": 10, "string_labels": False, "outlier": False,
            "separation": 10.0, "weights": "integer",
        }
    )  # fmt: skip
    clf = MarginSoftmaxClassifier(
        loss="l-softmax", C=0.05391, fit_intercept=False,
        class_weight={4: 100.0, -2: 1.0}, constant_feature=0.0, max_iter=50,
        random_state=744,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y, sample_weight=sample_weight)
    assert clf.coef_.dtype == np.float32 and np.all(np.isfinite(clf.coef_))


@pytest.mark.parametrize("to_sparse", [False, True])
def test_fourier_features_of_float32_rows_beyond_the_projection_range(to_sparse):
    # |x . w| > 3.4e38 in float32 (a float64-fitted map asked for float32 rows
    # of 3e37): cos(inf) was NaN with a RuntimeWarning.
    from scipy import sparse

    from sklmargin import RandomFourierFeatures

    rff = RandomFourierFeatures(gamma=700.0, n_components=31, random_state=0)
    rff.fit(np.zeros((2, 1)))
    X = np.array([[2.9e37], [-1e37], [1.5], [0.0]], dtype=np.float32)
    X_in = sparse.csr_matrix(X) if to_sparse else X
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        Z = rff.transform(X_in)
    assert Z.dtype == np.float32
    expected = rff.transform(X.astype(np.float64))
    np.testing.assert_allclose(Z, expected, rtol=0, atol=1e-6)


def test_softmax_scale_beyond_float32_refuses_float32_rows():
    # Found by the issue-19 --beyond fuzz run: a float64 softmax model with
    # s=1e39 cast its scale to inf on float32 rows (RuntimeWarning, inf logits);
    # the angle losses already refused such rows with a ValueError.
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    y = [0, 1, 1, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = MarginSoftmaxClassifier(loss="softmax", s=1e39, max_iter=5).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match="logit scale.*float64 input"):
            clf.decision_function(X.astype(np.float32))


@pytest.mark.parametrize("constant_feature", [None, 1.0])
def test_a_softmax_scale_beyond_float32_on_tiny_float32_rows(constant_feature):
    # Found by the issue-19 --beyond fuzz run: s=1e39 is inf in float32, and
    # A-Softmax's s |x| on rows of 1e-30 is 1e9; the objective computed inf or
    # 0 * inf = NaN (RuntimeWarning) instead of evaluating in float64.
    rng = np.random.default_rng(0)
    y = np.arange(12) % 2
    X = (rng.standard_normal((12, 3)) + 2.0 * y[:, None]) * 1e-30
    X[0] = 0.0
    clf = MarginSoftmaxClassifier(
        loss="a-softmax", s=1e39, constant_feature=constant_feature, max_iter=20
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X.astype(np.float32), y)
    assert np.all(np.isfinite(clf.coef_)) and np.all(np.isfinite(clf.intercept_))


def test_nystroem_float32_rows_beyond_the_scaled_range():
    # Found by the issue-19 --beyond fuzz run: a float64 Nystroem map asked for
    # float32 rows up to 3e38 with gamma 359 overflowed while scaling by
    # sqrt(gamma), before the float64 fallback for such blocks was judged.
    from sklmargin import NystroemFeatures

    rng = np.random.default_rng(0)
    nystroem = NystroemFeatures(n_components=5, gamma=359.0, random_state=0)
    nystroem.fit(rng.standard_normal((20, 2)) * 1e30)
    X = np.array([[3e38, 1.0], [-2e38, 0.0], [1e30, -1e30]], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        Z = nystroem.transform(X)
    assert Z.dtype == np.float32
    np.testing.assert_allclose(Z, nystroem.transform(X.astype(np.float64)), atol=1e-6)


# -- found by the final 10,000-case --beyond fuzz run of round 3 --------------------
def test_float64_kernel_model_refuses_float32_rows_beyond_their_range():
    # compute_dtype="auto" keeps small float64 fits in float64; their logits at
    # s=1e39 do not fit float32, and the cast to the rows' dtype gave inf with
    # "overflow encountered in cast". Now a ValueError, as for a float32 model.
    from sklmargin import KernelMarginSoftmaxClassifier

    rng = np.random.RandomState(0)
    X = rng.randn(33, 2)
    y = np.repeat([0, 1, 2, 3], [4, 15, 10, 4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = KernelMarginSoftmaxClassifier(
            loss="normface", s=1e39, n_components=7, gamma=38.11, max_iter=5,
            random_state=647,
        ).fit(X, y)  # fmt: skip
    assert clf.compute_dtype_ == "float64"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match="logit scale reaches .* float32"):
            clf.decision_function(X.astype(np.float32))
        assert np.all(np.isfinite(clf.decision_function(X)))


def test_l_softmax_centre_class_hint_names_the_kink_not_lambda():
    """Three classes along a line, centred: the middle one's w_j = 0 is right.

    L-Softmax stalls at the kink of |w_j| |x| psi(theta) there; the warning
    must say so (and that the model is fine), not blame lambda_min.
    """
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 100)
    X = rng.normal(size=(300, 5))
    X[:, 0] += 3.0 * (y - 1)
    X = StandardScaler().fit_transform(X)
    with pytest.warns(ConvergenceWarning, match="class 1 is w_j = 0") as caught:
        clf = MarginSoftmaxClassifier(loss="l-softmax").fit(X, y)
    message = str(caught[0].message)
    assert "centre of the data" in message and "lambda_min" not in message
    softmax = MarginSoftmaxClassifier(loss="softmax").fit(X, y)
    assert clf.score(X, y) >= softmax.score(X, y) - 0.02  # the model is fine
