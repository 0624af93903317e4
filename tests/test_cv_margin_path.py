"""The linear search's default margin follows its s path (the linear default's rule)."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from sklmargin import MarginSoftmaxClassifier, MarginSoftmaxClassifierCV


def _data():
    X, y = make_classification(
        n_samples=240, n_features=10, n_informative=6, n_classes=3, random_state=0
    )
    return StandardScaler().fit_transform(X), y


def _rule(s):
    """The linear default's margin at ``s``: 0.05 up to s = 30, 1.5 / s above."""
    return 0.05 * 30.0 / max(s, 30.0)


def test_default_margin_follows_the_s_path():
    X, y = _data()
    ss = [15.0, 30.0, 60.0, 120.0]
    clf = MarginSoftmaxClassifierCV(ss=ss, cv=3, tol=1e-3).fit(X, y)
    params = clf.cv_results_["params"]
    assert [p["s"] for p in params] == ss
    assert [p["m"] for p in params] == pytest.approx([0.05, 0.05, 0.025, 0.0125])
    assert list(clf.cv_results_["param_m"]) == [p["m"] for p in params]
    best = params[clf.best_index_]
    assert (clf.s_, clf.m_) == (best["s"], best["m"])
    assert clf.m_ == pytest.approx(_rule(clf.s_))
    assert (clf.estimator_.s, clf.estimator_.m) == (clf.s_, clf.m_)
    assert np.asarray(clf.scores_).shape == (3, 1, len(ss))


def test_refit_uses_the_chosen_pair_above_the_default_scale():
    # Every point lies above s_0 = 30: the refit's margin is 1.5 / s_, not 0.05.
    X, y = _data()
    clf = MarginSoftmaxClassifierCV(ss=[60.0, 120.0], cv=3, tol=1e-3).fit(X, y)
    assert clf.m_ == pytest.approx(1.5 / clf.s_)
    assert clf.estimator_.m == clf.m_
    # The refit is the model a fit at that pair gives (to the solver's tol).
    plain = MarginSoftmaxClassifier(s=clf.s_, m=clf.m_, tol=1e-3).fit(X, y)
    agree = np.mean(clf.predict(X) == plain.predict(X))
    assert agree >= 0.97


def test_fold_models_use_the_pair_of_their_point():
    X, y = _data()
    clf = MarginSoftmaxClassifierCV(ss=[15.0, 60.0, 120.0], cv=3, tol=1e-3, refit=False)
    clf.fit(X, y)
    for model in clf.estimators_:
        assert model.m == pytest.approx(_rule(model.s))


@pytest.mark.parametrize(
    "ms, expected",
    [([0.05], [0.05, 0.05]), ([0.0, 0.05], [0.0, 0.0, 0.05, 0.05])],
)
def test_given_margins_are_crossed_with_the_path(ms, expected):
    X, y = _data()
    clf = MarginSoftmaxClassifierCV(ss=[15.0, 60.0], ms=ms, cv=3, tol=1e-3).fit(X, y)
    params = clf.cv_results_["params"]
    assert [p["m"] for p in params] == expected
    assert [p["s"] for p in params] == [15.0, 60.0] * len(ms)
    assert clf.estimator_.m == clf.m_ == params[clf.best_index_]["m"]
