"""Which explanations are exact for which loss.

A linear explainer (``shap.LinearExplainer``, or reading ``coef_`` as feature
effects) assumes ``decision_function(X) = X @ coef_.T + intercept_``. That
holds for the losses on raw rows only. The cosine losses divide by the row
norm (``s [x, c].[w, w_c] / |[x, c]| + b``), so a linear explanation of them
is wrong -- silently: no library can tell. These tests pin both facts through
the attribution such an explainer computes (no shap needed), and check that a
model-agnostic explanation, which only calls the model, runs and finds the
signal.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.inspection import permutation_importance
from sklearn.preprocessing import StandardScaler

from sklmargin import MarginSoftmaxClassifier, get_margin, registered_margins

# Losses that divide by the row norm (cosines of x) and those that do not.
COSINE_LOSSES = [margin.name for margin in registered_margins() if margin.normalizes_X]
RAW_X_LOSSES = [
    margin.name for margin in registered_margins() if not margin.normalizes_X
]


def _data(n_classes, seed=0):
    # Two informative features, then two pure-noise ones.
    X, y = make_classification(
        n_samples=200,
        n_features=4,
        n_informative=2,
        n_redundant=0,
        n_classes=n_classes,
        n_clusters_per_class=1,
        shuffle=False,
        random_state=seed,
    )
    return StandardScaler().fit_transform(X), y


def _fit(loss, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return MarginSoftmaxClassifier(loss=loss).fit(X, y)


def _linear_decision(clf, X):
    """The decision function a linear explainer assumes, from coef_/intercept_."""
    logits = X @ clf.coef_.T + clf.intercept_
    if len(clf.classes_) == 2:
        if clf.coef_.shape[0] == 1:  # one row per binary problem, as LogReg
            return logits[:, 0]
        return logits[:, 1] - logits[:, 0]
    return logits


def test_softmax_multiclass_is_linear():
    X, y = _data(3)
    clf = _fit("softmax", X, y)
    np.testing.assert_allclose(
        clf.decision_function(X),
        X @ clf.coef_.T + clf.intercept_,
        rtol=1e-12,
        atol=1e-12,
    )


def test_softmax_binary_is_linear_in_the_difference():
    X, y = _data(2)
    clf = _fit("softmax", X, y)
    np.testing.assert_allclose(
        clf.decision_function(X), _linear_decision(clf, X), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("loss", RAW_X_LOSSES)
def test_losses_on_raw_rows_are_linear_at_inference(loss):
    # Margin-free logits s<w, x> (softmax), |w||x|cos = <w, x> (L-Softmax) and
    # s|x|cos = s<w, x> with unit |w| (A-Softmax): linear in x, times s_ where
    # the loss has an s.
    X, y = _data(3)
    clf = _fit(loss, X, y)
    scale = clf.s_ if get_margin(loss).uses_s else 1.0
    np.testing.assert_allclose(
        clf.decision_function(X),
        scale * (X @ clf.coef_.T) + clf.intercept_,
        rtol=1e-10,
        atol=1e-10,
    )


@pytest.mark.parametrize("loss", ["softmax", *COSINE_LOSSES])
def test_linear_attributions_are_exact_for_softmax_only(loss):
    # The linear (independent-feature) SHAP attribution coef * (x - mean), what
    # shap.LinearExplainer((coef_, intercept_), X) computes, adds up to
    # f(x) - mean f(X) exactly when f is linear; on a cosine loss it is wrong
    # by about the logit scale, and nothing warns.
    X, y = _data(3)
    clf = _fit(loss, X, y)
    attributions = (X - X.mean(axis=0))[:, :, None] * clf.coef_.T[None]
    decision = clf.decision_function(X)
    error = np.abs(attributions.sum(axis=1) + decision.mean(axis=0) - decision)
    if loss == "softmax":
        assert error.max() < 1e-10
    else:
        assert error.max() > 0.1 * clf.s_


@pytest.mark.parametrize("loss", COSINE_LOSSES)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_cosine_losses_are_not_linear_in_x(loss, n_classes):
    X, y = _data(n_classes)
    clf = _fit(loss, X, y)
    error = np.abs(clf.decision_function(X) - _linear_decision(clf, X))
    # Not a rounding difference: of the order of the logit scale s.
    assert error.max() > 0.1 * clf.s_


@pytest.mark.parametrize("loss", COSINE_LOSSES)
def test_permutation_importance_runs_and_finds_the_signal(loss):
    X, y = _data(3, seed=1)
    clf = _fit(loss, X, y)
    result = permutation_importance(clf, X, y, n_repeats=5, random_state=0)
    assert result.importances_mean.shape == (4,)
    assert np.all(np.isfinite(result.importances_mean))
    # the two informative features matter more than the two noise features
    assert result.importances_mean[:2].min() > result.importances_mean[2:].max()
