"""OpenSetClassifier: threshold, predictions, errors, conformance, composition."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklmargin import (
    KernelMarginSoftmaxClassifier,
    MarginSoftmaxClassifier,
    OpenSetClassifier,
)
from sklmargin.openset._classifier import weighted_lower_quantile

# Where the open-set contract differs from a closed-set classifier's on purpose
# (the API: decision_function is the open-set margin score - threshold,
# as an outlier detector's; predict may answer unknown_label).
OPEN_SET_CONTRACT = {
    "check_classifiers_train": (
        "decision_function is score_samples - threshold_ (the open-set margin), "
        "not a per-class decision, so its sign/argmax is not predict; predict "
        "rejects about target_rejection of the training rows"
    ),
    "check_decision_proba_consistency": (
        "decision_function ranks how known a row is, predict_proba[:, 1] how "
        "likely class 1 is: different questions"
    ),
    "check_classifiers_classes": (
        "fits labels ['one', 'two'] and [-1, 1] with the default "
        "unknown_label=-1: a non-string unknown_label for string classes and "
        "an unknown_label that is a class are errors by design"
    ),
}


# One fast inner model (softmax, loose tol, 3 folds): the meta-estimator's
# conformance does not depend on which score it thresholds.
# check_supervised_y_no_nan feeds NaN labels, which are refused with the
# ValueError it expects, after NumPy warned about casting them: filtered.
@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
@parametrize_with_checks(
    [OpenSetClassifier(MarginSoftmaxClassifier(loss="softmax", tol=1e-3), cv=3)],
    expected_failed_checks=lambda estimator: OPEN_SET_CONTRACT,
)
def test_sklearn_conformance(estimator, check):
    check(estimator)


def test_weighted_lower_quantile_equals_repeated_rows():
    rng = np.random.RandomState(0)
    values, weights = rng.randn(40), rng.randint(0, 4, size=40)
    repeated = np.repeat(values, weights)
    for q in (0.01, 0.05, 0.3, 0.5, 0.99):
        assert weighted_lower_quantile(values, weights, q) == np.quantile(
            repeated, q, method="inverted_cdf"
        )


# -- OpenSetClassifier ----------------------------------------------------------
KERNEL = dict(n_components=200, random_state=0)


@pytest.fixture(scope="module")
def fitted(digits):
    X, y, _, _ = digits
    return OpenSetClassifier(KernelMarginSoftmaxClassifier(**KERNEL)).fit(X, y)


def test_threshold_rejects_the_target_share(fitted, digits):
    X, _, X_test, X_unknown = digits
    # By construction on the out-of-fold scores: the largest share below 5%.
    share = np.mean(fitted.oof_scores_ < fitted.threshold_)
    assert 0.05 - 1.0 / len(X) <= share <= 0.05
    known_test = np.mean(fitted.predict(X_test) == -1)
    assert 0.01 <= known_test <= 0.12
    # 43% of the unseen digits at 5% of the known ones (measured).
    assert np.mean(fitted.predict(X_unknown) == -1) > 0.3


def test_predict_decision_and_proba_agree(fitted, digits):
    _, _, X_test, X_unknown = digits
    rows = np.vstack([X_test, X_unknown])
    predicted = fitted.predict(rows)
    margin = fitted.decision_function(rows)
    np.testing.assert_array_equal(predicted == -1, margin < 0)
    np.testing.assert_allclose(margin, fitted.score_samples(rows) - fitted.threshold_)
    proba = fitted.predict_proba(rows)
    assert proba.shape == (len(rows), 6)
    accepted = margin >= 0
    np.testing.assert_array_equal(
        fitted.classes_[proba.argmax(axis=1)][accepted], predicted[accepted]
    )
    np.testing.assert_array_equal(fitted.classes_, np.arange(6))


def test_string_labels(digits):
    X, y, X_test, X_unknown = digits
    names = np.array(["zero", "one", "two", "three", "four", "five"])
    clf = OpenSetClassifier(
        KernelMarginSoftmaxClassifier(**KERNEL), unknown_label="unknown"
    ).fit(X, names[y])
    predicted = clf.predict(np.vstack([X_test, X_unknown]))
    assert set(predicted) <= set(names) | {"unknown"}
    assert "unknown" in set(predicted)
    with pytest.raises(ValueError, match="unknown_label=-1 is not a string"):
        OpenSetClassifier(KernelMarginSoftmaxClassifier(**KERNEL)).fit(X, names[y])


@pytest.mark.parametrize("target_rejection", [0, 1, 1.5, -0.1])
def test_target_rejection_outside_the_open_interval(target_rejection, digits):
    X, y, _, _ = digits
    clf = OpenSetClassifier(
        MarginSoftmaxClassifier(), target_rejection=target_rejection
    )
    with pytest.raises(ValueError, match="target_rejection"):
        clf.fit(X, y)


def test_unknown_label_that_is_a_class(digits):
    X, y, _, _ = digits
    with pytest.raises(ValueError, match="unknown_label=3 is one of the classes"):
        OpenSetClassifier(MarginSoftmaxClassifier(), unknown_label=3).fit(X, y)
    with pytest.raises(ValueError, match="unknown_label='x' is a string"):
        OpenSetClassifier(MarginSoftmaxClassifier(), unknown_label="x").fit(X, y)


def test_estimator_without_score_samples(digits):
    X, y, _, _ = digits
    with pytest.raises(TypeError, match="estimator must have .*score_samples"):
        OpenSetClassifier(LogisticRegression()).fit(X, y)
    pipeline = make_pipeline(StandardScaler(), LogisticRegression())
    with pytest.raises(TypeError, match="Pipeline has no score_samples"):
        OpenSetClassifier(pipeline).fit(X, y)


def test_sample_weight_needs_an_estimator_that_takes_it(digits):
    X, y, _, _ = digits
    pipeline = make_pipeline(StandardScaler(), MarginSoftmaxClassifier())
    with pytest.raises(TypeError, match="sample_weight .* Pipeline"):
        OpenSetClassifier(pipeline).fit(X, y, sample_weight=np.ones(len(y)))


def test_pipeline_both_ways_and_grid_search(digits):
    X, y, X_test, X_unknown = digits
    inside = make_pipeline(
        StandardScaler(), OpenSetClassifier(KernelMarginSoftmaxClassifier(**KERNEL))
    ).fit(X, y)
    around = OpenSetClassifier(
        make_pipeline(StandardScaler(), KernelMarginSoftmaxClassifier(**KERNEL))
    ).fit(X, y)
    for model in (inside, around):
        assert np.mean(model.predict(X_unknown) == -1) > 0.2
    search = GridSearchCV(
        OpenSetClassifier(MarginSoftmaxClassifier(), cv=3),
        {"target_rejection": [0.02, 0.2], "estimator__s": [10.0, 30.0]},
        cv=2,
    ).fit(X, y)
    # Known rows only: every rejection is an error, so the smaller share wins.
    assert search.best_params_["target_rejection"] == 0.02
    assert search.predict(X_test).shape == (len(X_test),)
