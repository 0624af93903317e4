"""Which explanations are exact for which loss.

A linear explainer (``shap.LinearExplainer``, or reading ``coef_`` as feature
effects) assumes ``decision_function(X) = X @ coef_.T + intercept_``. That holds
for ``loss="softmax"`` only. The cosine losses divide by the row norm
(``s [x, c].[w, w_c] / |[x, c]| + b``), so a linear explanation of them is
wrong -- silently: no library can tell. These tests pin both facts, and check
that model-agnostic explanations, which only call the model, run and are exact
where they promise to be.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.inspection import permutation_importance
from sklearn.preprocessing import StandardScaler

from sklmargin import MarginSoftmaxClassifier

COSINE_LOSSES = ["normface", "am-softmax", "arcface"]


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


@pytest.mark.parametrize("loss", ["l-softmax", "a-softmax"])
def test_multiplicative_margins_are_linear_at_inference(loss):
    # Margin-free logits |w||x|cos = <w, x> (L-Softmax) and s|x|cos = s<w, x>
    # with unit |w| (A-Softmax): linear in x, A-Softmax's with the factor s_.
    X, y = _data(3)
    clf = _fit(loss, X, y)
    scale = clf.s_ if loss == "a-softmax" else 1.0
    np.testing.assert_allclose(
        clf.decision_function(X),
        scale * (X @ clf.coef_.T) + clf.intercept_,
        rtol=1e-10,
        atol=1e-10,
    )


def test_linear_attributions_are_exact_for_softmax():
    # The linear (independent-feature SHAP) attribution coef * (x - mean) adds
    # up to f(x) - mean f(X) exactly when f is linear.
    X, y = _data(3)
    clf = _fit("softmax", X, y)
    attributions = (X - X.mean(axis=0))[:, :, None] * clf.coef_.T[None]
    decision = clf.decision_function(X)
    np.testing.assert_allclose(
        attributions.sum(axis=1) + decision.mean(axis=0), decision, atol=1e-10
    )


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


def test_shap_linear_explainer_is_exact_for_softmax_only():
    shap = pytest.importorskip("shap")
    X, y = _data(3)
    for loss, exact in [("softmax", True), ("am-softmax", False)]:
        clf = _fit(loss, X, y)
        values = shap.LinearExplainer((clf.coef_, clf.intercept_), X)(X)
        error = np.abs(
            values.values.sum(axis=1) + values.base_values - clf.decision_function(X)
        ).max()
        if exact:
            assert error < 1e-10
        else:  # silently wrong by about the logit scale (measured 27.7 here)
            assert error > 0.1 * clf.s_


@pytest.mark.parametrize("loss", ["am-softmax", "arcface"])
def test_shap_kernel_explainer_is_exact_on_cosine_losses(loss):
    shap = pytest.importorskip("shap")
    X, y = _data(3)
    clf = _fit(loss, X, y)
    explainer = shap.KernelExplainer(clf.decision_function, X[:20])
    values = np.asarray(explainer.shap_values(X[:5], silent=True))
    if values.shape[0] == 3:  # older shap: one array per output
        values = np.moveaxis(values, 0, -1)
    np.testing.assert_allclose(
        values.sum(axis=1) + explainer.expected_value,
        clf.decision_function(X[:5]),
        atol=1e-8,
    )
