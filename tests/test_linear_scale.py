"""The linear estimator's s=None: a scale resolved from the training rows."""

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.metrics import log_loss
from sklearn.preprocessing import StandardScaler

from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier


def _embeddings(n, d=128, n_classes=20, seed=0):
    """Unit rows labelled by a noiseless random linear teacher (train, test)."""
    rng = np.random.default_rng(seed)
    teacher = rng.standard_normal((d, n_classes))
    X = rng.standard_normal((n + 4000, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.argmax(X @ teacher, axis=1)
    return X[:n], y[:n], X[n:], y[n:]


@pytest.fixture(scope="module")
def embeddings():
    return _embeddings(6000)


def test_fixed_scale_underfits_where_the_resolved_one_does_not(embeddings):
    # 6,000 unit rows of a nearly separable 20-class problem support a sharper
    # head than s=30 (the old default): its held-out probabilities are
    # under-confident, and it fits the training rows worse.
    X, y, X_test, y_test = embeddings
    fixed = MarginSoftmaxClassifier(s=30).fit(X, y)
    resolved = MarginSoftmaxClassifier().fit(X, y)
    assert resolved.s_ > 1.5 * 30
    assert resolved.score(X, y) >= fixed.score(X, y) + 0.015
    assert resolved.score(X_test, y_test) >= fixed.score(X_test, y_test) + 0.015
    assert log_loss(y_test, resolved.predict_proba(X_test)) < 0.9 * log_loss(
        y_test, fixed.predict_proba(X_test)
    )


def test_resolved_scale_is_the_documented_one_and_refits(embeddings):
    # s_ is the default times the pilot's held-out temperature (one raise: the
    # temperature is below MAX_STEP here), and s=s_, m=m_ refits the same model.
    from sklmargin.estimators import _scale

    X, y, _, _ = embeddings
    clf = MarginSoftmaxClassifier().fit(X, y)
    assert 30 * _scale.RAISE_AT <= clf.s_ <= 30 * _scale.MAX_STEP
    again = MarginSoftmaxClassifier(s=clf.s_, m=clf.m_).fit(X, y)
    np.testing.assert_allclose(again.coef_, clf.coef_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(again.intercept_, clf.intercept_, rtol=0, atol=1e-10)
    # The held-out slice is chosen by the rows' content: any row order gives
    # the same scale.
    order = np.random.default_rng(1).permutation(len(y))
    permuted = MarginSoftmaxClassifier().fit(X[order], y[order])
    assert permuted.s_ == pytest.approx(clf.s_, rel=1e-6)


def test_default_margin_follows_the_raised_scale(embeddings):
    # m left at its default keeps s m, the margin in logits, at the default's
    # 30 * 0.05: a raised scale gets a smaller cosine margin. ArcFace's angle
    # follows the same rule.
    X, y, _, _ = embeddings
    for loss in ("am-softmax", "arcface"):
        clf = MarginSoftmaxClassifier(loss=loss).fit(X, y)
        assert clf.s_ > 1.5 * 30
        assert clf.m_ == pytest.approx(0.05 * 30 / clf.s_, rel=1e-12)
    # A margin given as a number means exactly that number, at any scale.
    given = MarginSoftmaxClassifier(m=0.05).fit(X, y)
    assert given.s_ > 1.5 * 30
    assert given.m_ == 0.05
    # Where the scale stays at the default, so does the margin.
    X_iris, y_iris = load_iris(return_X_y=True)
    iris = MarginSoftmaxClassifier().fit(StandardScaler().fit_transform(X_iris), y_iris)
    assert (iris.s_, iris.m_) == (30.0, 0.05)


def test_fits_above_the_default_scale_are_fitted_as_far_as_at_it(embeddings):
    # Above s_0 = 30 with a margin of at most the default's in logits
    # (s m <= 1.5) the stop test is tol * 30: at s = 150, m = 0 on these 128-d
    # unit rows a test of tol * s stops near the class-mean start (training
    # log loss twice the converged one); at tol * 30 the fit gets near it.
    X, y, _, _ = embeddings
    fit = MarginSoftmaxClassifier(s=150, m=0.0).fit(X, y)
    converged = MarginSoftmaxClassifier(s=150, m=0.0, tol=1e-7).fit(X, y)
    loss = log_loss(y, fit.predict_proba(X))
    assert loss <= 1.3 * log_loss(y, converged.predict_proba(X))
    from sklmargin.estimators._scale import gradient_tol

    margin = fit.margin_
    assert gradient_tol(fit, margin, 0.0, 300.0) == 1e-4 * 30.0
    assert gradient_tol(fit, margin, 0.05 * 30 / 300.0, 300.0) == 1e-4 * 30.0
    # At and below the default scale, and with a larger margin in logits (a
    # CV search's path at the default margin), the test is tol * s as before.
    assert gradient_tol(fit, margin, 0.0, 12.0) == 1e-4 * 12.0
    assert gradient_tol(fit, margin, 0.05, 300.0) == 1e-4 * 300.0
    kernel = KernelMarginSoftmaxClassifier()
    assert gradient_tol(kernel, margin, 0.0, 300.0) == 1e-4 * 300.0


def test_scale_grows_with_the_rows():
    # More rows of the same problem support a sharper model: s_ does not fall.
    scales = [
        MarginSoftmaxClassifier().fit(*_embeddings(n)[:2]).s_ for n in (1500, 6000)
    ]
    assert scales[0] <= scales[1]
    assert scales[1] > 30


def test_small_noisy_data_keep_the_default_scale():
    # Iris (150 rows): too few held-out rows to judge, s_ is the loss default;
    # the same fit as s=30 exactly.
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    clf = MarginSoftmaxClassifier().fit(X, y)
    assert clf.s_ == 30.0
    np.testing.assert_array_equal(
        clf.coef_, MarginSoftmaxClassifier(s=30).fit(X, y).coef_
    )
    # A noisy problem with enough rows: the held-out temperature is below 1.5.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 5))
    y = (X[:, 0] + rng.standard_normal(3000) > 0).astype(int)
    assert MarginSoftmaxClassifier().fit(X, y).s_ == 30.0
    assert MarginSoftmaxClassifier(loss="normface").fit(X, y).s_ == 20.0


def test_explicit_scale_warm_start_and_other_estimators(embeddings):
    X, y, _, _ = embeddings
    assert MarginSoftmaxClassifier(s=12.5).fit(X, y).s_ == 12.5
    # L-Softmax takes its scale from the norms; softmax's s is a temperature.
    assert MarginSoftmaxClassifier(loss="softmax").fit(X, y).s_ == 1.0
    # A warm start continues at the fitted scale and margin without a pilot.
    clf = MarginSoftmaxClassifier(warm_start=True).fit(X, y)
    first = clf.s_, clf.m_
    assert first[1] < 0.05
    assert (clf.fit(X[::2], y[::2]).s_, clf.m_) == first
    # The kernel estimator keeps its own default (kernel rows have |z| ~ 1).
    kernel = KernelMarginSoftmaxClassifier(n_components=50, random_state=0)
    assert kernel.fit(X[:1000], y[:1000]).s_ == 100.0
