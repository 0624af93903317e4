"""The estimators' open-set score, ``score_samples`` (sklmargin.openset._scores)."""

import os

import numpy as np
import pytest
import sklearn
from scipy.special import log_softmax
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from sklmargin import (
    KernelMarginSoftmaxClassifier,
    KernelMarginSoftmaxClassifierCV,
    MarginSoftmaxClassifier,
    MarginSoftmaxClassifierCV,
)
from sklmargin._utils.array_api import to_numpy
from sklmargin.openset._scores import open_set_temperature


def _auroc(known_scores, unknown_scores):
    """P(score of a known row > score of an unknown row), ties count half."""
    diff = known_scores[:, None] - unknown_scores[None, :]
    return float(np.mean(diff > 0) + 0.5 * np.mean(diff == 0))


# (estimator, whether its score falls far from the training rows: only with
# Nyström centres; a linear model's probabilities stay confident far away).
FOUR_ESTIMATORS = [
    (KernelMarginSoftmaxClassifier(n_components=200, random_state=0), True),
    (MarginSoftmaxClassifier(), False),
    (
        KernelMarginSoftmaxClassifierCV(
            ss=[30.0, 100.0], n_components=100, kernel_approximation="nystroem", cv=2
        ),
        True,
    ),
    (MarginSoftmaxClassifierCV(ss=[10.0, 30.0], cv=2, refit=False), False),
]


@pytest.mark.parametrize(
    "estimator, distance_aware", FOUR_ESTIMATORS, ids=lambda e: type(e).__name__
)
def test_score_samples_ranks_known_above_unknown(estimator, distance_aware, digits):
    X, y, X_test, X_unknown = digits
    estimator.fit(X, y)
    known, unknown = estimator.score_samples(X_test), estimator.score_samples(X_unknown)
    assert known.shape == (len(X_test),) and known.dtype == np.float64
    assert np.all(np.isfinite(known)) and np.all(known <= 1e-12)
    assert _auroc(known, unknown) > 0.85
    far = estimator.score_samples(np.vstack([X_test[:2] * 50, X_test[:2] * 100]))
    assert np.all(np.isfinite(far))
    if distance_aware:
        # Lower than every known test row, and ordered by distance (no kernel
        # value underflowing to a tie at log 0).
        assert far.max() < known.min() and np.all(far[2:] < far[:2])


def test_kernel_score_is_nearest_centre_plus_log_probability(digits):
    X, y, X_test, _ = digits
    clf = KernelMarginSoftmaxClassifier(n_components=100, random_state=0).fit(X, y)
    centres = clf.feature_map_.components_.astype(np.float64)
    # The centres live where the map does: after the learned input metric.
    moved = X_test * clf.input_transform_
    squared = ((moved[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    temperature = open_set_temperature(clf.s_)
    assert temperature == clf.s_ / 30.0
    logits = clf.decision_function(X_test).astype(np.float64)
    expected = -clf.feature_map_.gamma_ * squared.min(axis=1) + np.max(
        log_softmax(logits / temperature, axis=1), axis=1
    )
    np.testing.assert_allclose(clf.score_samples(X_test), expected, atol=1e-5)


def test_score_without_centres_is_the_log_probability(digits):
    X, y, X_test, _ = digits
    for clf in (
        MarginSoftmaxClassifier(s=60.0),
        KernelMarginSoftmaxClassifier(
            kernel_approximation="orf", n_components=100, random_state=0
        ),
    ):
        clf.fit(X, y)
        logits = clf.decision_function(X_test).astype(np.float64) / (clf.s_ / 30.0)
        np.testing.assert_allclose(
            clf.score_samples(X_test),
            np.max(log_softmax(logits, axis=1), axis=1),
            atol=1e-5,
        )


def test_cv_score_without_refit_averages_the_folds(digits):
    X, y, X_test, _ = digits
    cv = MarginSoftmaxClassifierCV(ss=[10.0, 30.0], cv=2, refit=False).fit(X, y)
    folds = np.mean([est.score_samples(X_test) for est in cv.estimators_], axis=0)
    np.testing.assert_allclose(cv.score_samples(X_test), folds)


@pytest.mark.parametrize(
    "estimator",
    [
        MarginSoftmaxClassifier(loss="softmax", random_state=0),
        KernelMarginSoftmaxClassifier(n_components=120, metric=None, random_state=0),
        # The CV estimators predict through the same methods: the folds' mean.
        KernelMarginSoftmaxClassifierCV(
            ss=[30.0], n_components=60, metric=None, cv=2, refit=False, random_state=0
        ),
    ],
    ids=lambda e: type(e).__name__,
)
def test_score_samples_keeps_the_input_array_type(estimator):
    """NumPy, Dask and array-api-strict rows: equal scores, in the input's type.

    The score is written once against the array namespace
    (``sklmargin.openset._scores.open_set_score``): every input runs it.
    """
    X, y = make_classification(
        n_samples=300, n_features=8, n_informative=5, n_classes=3, random_state=0
    )
    X = StandardScaler().fit_transform(X)
    reference = clone(estimator).fit(X, y)
    expected = reference.score_samples(X)
    assert type(expected) is np.ndarray and expected.dtype == np.float64

    da = pytest.importorskip("dask.array")
    import dask

    rows = da.from_array(X, chunks=70)
    with dask.config.set(scheduler="synchronous"):
        lazy = reference.score_samples(rows)
        assert isinstance(lazy, da.Array)  # nothing computed on the client
        assert lazy.shape == (len(X),) and lazy.dtype == np.float64
        np.testing.assert_allclose(lazy.compute(), expected, rtol=1e-12, atol=1e-12)

    if os.environ.get("SCIPY_ARRAY_API") != "1":
        pytest.skip("array_api_dispatch needs SCIPY_ARRAY_API=1 set before scipy")
    xp = pytest.importorskip("array_api_strict")
    with sklearn.config_context(array_api_dispatch=True):
        fitted = clone(estimator).fit(xp.asarray(X), xp.asarray(y))
        strict = fitted.score_samples(xp.asarray(X))
    assert type(strict) is type(xp.asarray(X))
    # Fitted on the device: equal to the NumPy fit up to its round-off.
    np.testing.assert_allclose(to_numpy(strict), expected, rtol=0, atol=1e-5)
