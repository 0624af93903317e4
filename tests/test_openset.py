"""OpenSetClassifier: threshold, predictions, errors, conformance, composition."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import shuffle
from sklearn.utils.estimator_checks import (
    check_classifiers_train,
    parametrize_with_checks,
)
from sklearn.utils.validation import check_is_fitted

from sklmargin import (
    KernelMarginSoftmaxClassifier,
    KernelMarginSoftmaxClassifierCV,
    MarginSoftmaxClassifier,
    OpenSetClassifier,
)
from sklmargin.openset._classifier import weighted_lower_quantile

# The one check a reject option cannot pass. scikit-learn's
# check_classifiers_train (sklearn/utils/estimator_checks.py) fits its 300
# blob rows, predicts the same rows, and asserts of each of them
#
#     y_pred = classifier.predict(X)
#     ...
#     decision = classifier.decision_function(X)
#     ...
#     dec_pred = (decision.ravel() > 0).astype(int)
#     assert_array_equal(dec_pred, y_pred)                      # two classes
#     ...
#     assert_array_equal(np.argmax(decision, axis=1), y_pred)   # three
#     ...
#     y_prob = classifier.predict_proba(X)
#     assert_array_equal(np.argmax(y_prob, axis=1), y_pred)
#
# that every prediction is the class of the largest decision and probability.
# The threshold rejects about target_rejection of the known classes' rows, the
# training rows among them, and a rejected row is predicted unknown_label_,
# which is no class. test_check_classifiers_train_fails_only_by_rejection shows
# that this is the whole failure.
REJECT_OPTION = {
    "check_classifiers_train": (
        "predict rejects about target_rejection of the training rows "
        "(unknown_label_), and the check asserts that each training row's "
        "prediction is the class of its largest decision_function and "
        "predict_proba"
    ),
}
INNER = MarginSoftmaxClassifier(loss="softmax", tol=1e-3)


# One fast inner model (softmax, loose tol, 3 folds): the meta-estimator's
# conformance does not depend on which score it thresholds.
# check_supervised_y_no_nan feeds NaN labels, which are refused with the
# ValueError it expects, after NumPy warned about casting them: filtered.
@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
@parametrize_with_checks(
    [OpenSetClassifier(INNER, cv=3)],
    expected_failed_checks=lambda estimator: REJECT_OPTION,
)
def test_sklearn_conformance(estimator, check):
    check(estimator)


class _WithoutRejection(OpenSetClassifier):
    """The same fitted classifier, its ``predict`` the estimator's (no rejection)."""

    def predict(self, X):
        check_is_fitted(self)
        return self.estimator_.predict(self._validated(X, reset=False))


def test_check_classifiers_train_fails_only_by_rejection():
    # Every other assertion of the check holds: it passes with rejection off.
    check_classifiers_train("OpenSetClassifier", _WithoutRejection(INNER, cv=3))
    # And rejection does happen on the check's rows (its data, as it makes it),
    # on those rows only: elsewhere predict is the class of the largest
    # decision and probability.
    X, y = make_blobs(n_samples=300, random_state=0)
    X, y = shuffle(X, y, random_state=7)
    X = StandardScaler().fit_transform(X)
    clf = OpenSetClassifier(INNER, cv=3).fit(X, y)
    predicted = clf.predict(X)
    rejected = predicted == clf.unknown_label_
    assert 0 < rejected.sum() <= 0.1 * len(y)
    np.testing.assert_array_equal(rejected, clf.open_set_margin(X) < 0)
    for per_class in (clf.decision_function(X), clf.predict_proba(X)):
        best = clf.classes_[np.argmax(per_class, axis=1)]
        np.testing.assert_array_equal(best[~rejected], predicted[~rejected])


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


def test_predict_margin_decision_and_proba_agree(fitted, digits):
    _, _, X_test, X_unknown = digits
    rows = np.vstack([X_test, X_unknown])
    predicted = fitted.predict(rows)
    margin = fitted.open_set_margin(rows)
    np.testing.assert_array_equal(predicted == -1, margin < 0)
    np.testing.assert_allclose(margin, fitted.score_samples(rows) - fitted.threshold_)
    # The class questions are the estimator's, as any classifier's.
    decision = fitted.decision_function(rows)
    np.testing.assert_array_equal(decision, fitted.estimator_.decision_function(rows))
    proba = fitted.predict_proba(rows)
    assert decision.shape == proba.shape == (len(rows), 6)
    np.testing.assert_allclose(np.log(proba), fitted.predict_log_proba(rows))
    accepted = margin >= 0
    for per_class in (decision, proba):
        np.testing.assert_array_equal(
            fitted.classes_[per_class.argmax(axis=1)][accepted], predicted[accepted]
        )
    np.testing.assert_array_equal(fitted.classes_, np.arange(6))
    assert fitted.unknown_label_ == -1


@pytest.mark.parametrize("inner", ["kernel", "pipeline", "cv"])
def test_predict_maps_the_rows_once(inner, fitted, digits, monkeypatch):
    X, y, X_test, X_unknown = digits
    if inner == "pipeline":
        inner = make_pipeline(StandardScaler(), KernelMarginSoftmaxClassifier(**KERNEL))
        fitted = OpenSetClassifier(inner).fit(X, y)
    elif inner == "cv":  # two fold models, each mapping the rows once
        inner = KernelMarginSoftmaxClassifierCV(
            ss=[30.0], n_components=100, cv=2, refit=False, random_state=0
        )
        fitted = OpenSetClassifier(inner, cv=2).fit(X, y)
    rows = np.vstack([X_test, X_unknown])
    # What predict answers: the estimator's class, -1 where the margin is < 0.
    expected = np.where(
        fitted.open_set_margin(rows) < 0, -1, fitted.estimator_.predict(rows)
    )
    models = getattr(fitted.estimator_, "estimators_", None) or [fitted.estimator_]
    kernel = models[0][-1] if hasattr(models[0], "steps") else models[0]
    feature_map = type(kernel.feature_map_)
    transform, calls = feature_map.transform, []
    monkeypatch.setattr(
        feature_map,
        "transform",
        lambda self, X: calls.append(len(X)) or transform(self, X),
    )
    np.testing.assert_array_equal(fitted.predict(rows), expected)
    assert calls == [len(rows)] * len(models)


def test_string_labels(digits):
    X, y, X_test, X_unknown = digits
    names = np.array(["zero", "one", "two", "three", "four", "five"])
    clf = OpenSetClassifier(KernelMarginSoftmaxClassifier(**KERNEL)).fit(X, names[y])
    assert clf.unknown_label_ == "unknown"
    predicted = clf.predict(np.vstack([X_test, X_unknown]))
    assert set(predicted) <= set(names) | {"unknown"}
    assert "unknown" in set(predicted)
    with pytest.raises(ValueError, match="unknown_label=-1 is not a string"):
        OpenSetClassifier(MarginSoftmaxClassifier(), unknown_label=-1).fit(X, names[y])


@pytest.mark.parametrize(
    "classes, expected",
    [
        ([0, 1, 2], -1),
        ([-1, 1], -2),
        ([-3, -1, 4], -4),
        ([0.0, 1.0], -1),
        ([-1.0, 1.0], -2.0),
        (["a", "b"], "unknown"),
        (["unknown", "_unknown", "b"], "__unknown"),
    ],
)
def test_unknown_label_chosen_at_fit_is_not_a_class(classes, expected):
    X, y = make_blobs(n_samples=60, centers=len(classes), random_state=0)
    labels = np.asarray(classes)[y]
    clf = OpenSetClassifier(INNER, cv=3).fit(X, labels)
    assert clf.unknown_label_ == expected
    assert type(clf.unknown_label_) is type(expected)
    predicted = clf.predict(np.vstack([X, X + 100.0]))
    assert set(predicted.tolist()) <= set(classes) | {expected}
    assert clf.get_params()["unknown_label"] is None  # the parameter is left as given


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


def test_n_jobs_gives_the_same_model(fitted, digits):
    # The cv + 1 fits run as joblib jobs: two workers fit the same models, so
    # the threshold, the out-of-fold scores and the refit are those of n_jobs=None.
    X, y, X_test, X_unknown = digits
    parallel = OpenSetClassifier(KernelMarginSoftmaxClassifier(**KERNEL), n_jobs=2).fit(
        X, y
    )
    assert fitted.n_jobs is None
    np.testing.assert_allclose(parallel.oof_scores_, fitted.oof_scores_, rtol=1e-6)
    assert parallel.threshold_ == pytest.approx(fitted.threshold_, rel=1e-6)
    rows = np.vstack([X_test, X_unknown])
    np.testing.assert_array_equal(parallel.predict(rows), fitted.predict(rows))
    np.testing.assert_allclose(
        parallel.decision_function(rows), fitted.decision_function(rows), rtol=1e-6
    )


@pytest.mark.parametrize("n_jobs", [1.5, "2"])
def test_n_jobs_is_validated(n_jobs, digits):
    X, y, _, _ = digits
    clf = OpenSetClassifier(MarginSoftmaxClassifier(), n_jobs=n_jobs)
    with pytest.raises((ValueError, TypeError), match="n_jobs"):
        clf.fit(X, y)
