"""The one predict (sklmargin.estimators._predict) of every margin classifier.

The plain and the cross-validated classifiers read all their predictions from
one pass of logits, whatever the input: NumPy rows, Dask arrays (chunk by
chunk, a lazy result) and array API rows (tests/test_array_api.py).
"""

import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.datasets import make_blobs

from sklmargin import (
    KernelMarginSoftmaxClassifier,
    KernelMarginSoftmaxClassifierCV,
    MarginSoftmaxClassifier,
    MarginSoftmaxClassifierCV,
)

METHODS = (
    "decision_function",
    "predict",
    "predict_proba",
    "predict_log_proba",
    "score_samples",
)

ESTIMATORS = [
    MarginSoftmaxClassifier(random_state=0),
    KernelMarginSoftmaxClassifier(n_components=40, random_state=0),
    MarginSoftmaxClassifierCV(ss=[10.0, 30.0], cv=2),
    KernelMarginSoftmaxClassifierCV(
        ss=[30.0], n_components=30, cv=2, refit=False, random_state=0
    ),
]


def _data(n_classes):
    X, y = make_blobs(
        n_samples=160, centers=n_classes, n_features=4, cluster_std=3.0, random_state=0
    )
    return X[:120], y[:120], X[120:]


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_dask_rows_predict_lazily_as_in_memory(estimator, n_classes):
    da = pytest.importorskip("dask.array")
    import dask

    X, y, X_new = _data(n_classes)
    clf = clone(estimator).fit(X, y)
    with dask.config.set(scheduler="synchronous"):
        for method in METHODS:
            lazy = getattr(clf, method)(da.from_array(X_new, chunks=15))
            assert isinstance(lazy, da.Array), method
            expected = getattr(clf, method)(X_new)
            assert lazy.shape == expected.shape and lazy.dtype == expected.dtype
            assert_allclose(lazy.compute(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_labels_and_score_are_predict_and_score_samples(estimator):
    # OpenSetClassifier.predict's one pass gives what the two methods give.
    X, y, X_new = _data(3)
    clf = clone(estimator).fit(X, y)
    labels, score = clf._labels_and_score(X_new)
    assert_array_equal(labels, clf.predict(X_new))
    assert_array_equal(score, clf.score_samples(X_new))
    # The decision's largest column is the label, for the CV estimators too.
    assert_array_equal(clf.classes_[clf.decision_function(X_new).argmax(1)], labels)
    assert_array_equal(clf.classes_[clf.predict_proba(X_new).argmax(1)], labels)
