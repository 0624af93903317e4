"""``warm_start=True`` reuses the previous call's solution.

A warm refit on the same data starts where the last fit ended: the kernel
estimator keeps its learned input transform and feature map, both estimators
start the solver from the previous prototypes. So a warm refit never raises
the training objective, rebuilt here from the fitted attributes, and after a
converged fit it has nothing left to do.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier
from sklmargin.objective._linear import LinearMarginObjective
from sklmargin.objective._rows import prepare_rows

#: (loss, t): every loss, and SV-Softmax (a stateful margin) on two of them.
CASES = [
    ("softmax", 1.0),
    ("normface", 1.0),
    ("am-softmax", 1.0),
    ("arcface", 1.0),
    ("l-softmax", 1.0),
    ("a-softmax", 1.0),
    ("am-softmax", 1.5),
    ("softmax", 2.0),
]


def _data(seed=0):
    rng = np.random.RandomState(seed)
    y = np.arange(40) % 4
    X = rng.randn(40, 5)
    X[:, 0] += y
    X[:, 1] -= 0.5 * y
    return X, y, rng.uniform(0.1, 1.1, 40)


def training_objective(clf, X, y, sample_weight):
    """The exact objective of ``clf``'s fit at its fitted attributes.

    Rebuilt from the model alone: its input transform and map (kernel), lift,
    resolved margin, scale and softening, and the weights the fit saw.
    """
    if hasattr(clf, "feature_map_"):
        X = clf._map_features(clf._transform_input(X))
    margin = clf.margin_
    rows = prepare_rows(
        np.asarray(X, dtype=np.float64),
        normalize=margin.uses_angle,
        constant=clf.constant_feature_,
    )
    objective = LinearMarginObjective(
        rows, y, len(clf.classes_), sample_weight, margin, clf.m_, clf.s_,
        clf.C, clf.fit_intercept,
    )  # fmt: skip
    params = np.zeros(objective.n_params)
    coef, intercept = objective.unpack(params)
    lifted = clf.constant_feature_ > 0
    coef[:] = np.column_stack([clf.coef_, clf.constant_coef_]) if lifted else clf.coef_
    intercept[:] = clf.intercept_
    lam = 0.0
    if margin.uses_lambda:
        lam = margin.default_lambda if clf.lambda_min is None else clf.lambda_min
    return objective.value_and_state(params, lam=lam)[0]


def _kernel(metric, **params):
    return KernelMarginSoftmaxClassifier(n_components=30, metric=metric, **params)


MODELS = {
    "linear": lambda **p: MarginSoftmaxClassifier(**p),
    "kernel": lambda **p: _kernel(None, **p),
    "kernel-metric": lambda **p: _kernel("diagonal", **p),
}


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("loss, t", CASES)
def test_warm_refit_of_a_converged_fit_does_nothing(model, loss, t):
    X, y, sample_weight = _data()
    clf = MODELS[model](loss=loss, t=t, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf.fit(X, y, sample_weight=sample_weight)
    before = training_objective(clf, X, y, sample_weight)
    coef, intercept = clf.coef_.copy(), clf.intercept_.copy()
    clf.set_params(warm_start=True).fit(X, y, sample_weight=sample_weight)
    # It starts where the converged fit ended: nothing left to do (the
    # prototypes of the cosine losses moved by 0.5-11 % of their largest
    # entry in 1-34 iterations before).
    # (Unit prototypes scaled and normalised again: round-off only.)
    assert clf.n_iter_ == 0
    np.testing.assert_allclose(clf.coef_, coef, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(clf.intercept_, intercept, rtol=1e-12, atol=1e-15)
    after = training_objective(clf, X, y, sample_weight)
    assert after == pytest.approx(before, rel=1e-12)


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("loss, t", CASES)
def test_warm_refit_never_raises_the_training_objective(model, loss, t):
    # From an unfinished fit (max_iter=2, whose metric pilots stopped early
    # too) and a random state that a refit would advance: a refit that learned
    # the metric or the map again put the old coefficients in another feature
    # space (objective up by 3-100 % in most kernel cases before).
    X, y, sample_weight = _data(1)
    clf = MODELS[model](
        loss=loss, t=t, max_iter=2, random_state=np.random.RandomState(0)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y, sample_weight=sample_weight)
        values = [training_objective(clf, X, y, sample_weight)]
        clf.set_params(warm_start=True, max_iter=1000)
        for _ in range(2):
            clf.fit(X, y, sample_weight=sample_weight)
            values.append(training_objective(clf, X, y, sample_weight))
    slack = 1e-12 * abs(values[0])
    assert values[1] <= values[0] + slack and values[2] <= values[1] + slack


def test_warm_refit_learns_the_map_again_when_asked():
    X, y, sample_weight = _data()
    clf = _kernel("diagonal", random_state=0, warm_start=True)
    clf.fit(X, y, sample_weight=sample_weight)
    feature_map, transform = clf.feature_map_, clf.input_transform_
    clf.fit(X, y, sample_weight=sample_weight)
    assert clf.feature_map_ is feature_map and clf.input_transform_ is transform
    # A map parameter, the data's shape or its classes changed: learned again.
    clf.set_params(n_components=20).fit(X, y, sample_weight=sample_weight)
    assert clf.feature_map_ is not feature_map and clf.coef_.shape == (4, 20)
    feature_map = clf.feature_map_
    clf.fit(X[:-1], y[:-1], sample_weight=sample_weight[:-1])
    assert clf.feature_map_ is not feature_map
    feature_map = clf.feature_map_
    clf.fit(X[:-1], y[:-1] % 3, sample_weight=sample_weight[:-1])
    assert clf.feature_map_ is not feature_map and len(clf.classes_) == 3
