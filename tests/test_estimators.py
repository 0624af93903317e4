"""Behaviour of the estimators: what a scikit-learn user relies on."""

import math
import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from sklmargin import (
    LOSS_NAMES,
    KernelMarginSoftmaxClassifier,
    MarginSoftmaxClassifier,
    get_margin,
    registered_margins,
)

LOSSES = [margin.name for margin in registered_margins()]
UNIT_PROTOTYPES = [
    margin.name for margin in registered_margins() if margin.normalizes_W
]


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("t", [1.0, 1.2])
def test_predictions_agree_and_are_accurate(iris, loss, t):
    X, y = iris
    clf = MarginSoftmaxClassifier(loss=loss, t=t).fit(X, y)
    # Unit prototypes decide by angle alone (cones through the origin, shifted
    # by the bias): on 4-D iris that costs a few points against softmax.
    assert clf.score(X, y) > (0.82 if get_margin(loss).normalizes_W else 0.95)
    logits = clf.decision_function(X)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[logits.argmax(1)])
    np.testing.assert_array_equal(proba.argmax(1), logits.argmax(1))
    np.testing.assert_allclose(clf.predict_log_proba(X), np.log(proba))
    assert np.all(np.isfinite(clf.coef_)) and np.all(np.isfinite(clf.intercept_))


@pytest.mark.parametrize("loss", UNIT_PROTOTYPES)
def test_normalised_losses_have_unit_prototypes(iris, loss):
    X, y = iris
    clf = MarginSoftmaxClassifier(loss=loss).fit(X, y)
    prototypes = np.column_stack([clf.coef_, clf.constant_coef_])
    np.testing.assert_allclose(np.linalg.norm(prototypes, axis=1), 1.0)
    plain = MarginSoftmaxClassifier(loss=loss, constant_feature=None).fit(X, y)
    np.testing.assert_allclose(np.linalg.norm(plain.coef_, axis=1), 1.0)
    assert plain.constant_feature_ == 0.0 and not plain.constant_coef_.any()


def test_decision_function_is_the_margin_free_logit(iris):
    X, y = iris
    clf = MarginSoftmaxClassifier(loss="am-softmax", m=0.3, s=7.0).fit(X, y)
    c = clf.constant_feature_
    assert c == pytest.approx(np.sqrt(np.mean(X**2)))  # 1 x the RMS feature
    lifted = np.column_stack([X, np.full(len(X), c)])
    prototypes = np.column_stack([clf.coef_, clf.constant_coef_])
    cos = (lifted / np.linalg.norm(lifted, axis=1, keepdims=True)) @ prototypes.T
    np.testing.assert_allclose(clf.decision_function(X), 7.0 * cos + clf.intercept_)
    a = MarginSoftmaxClassifier(loss="a-softmax", s=3.0).fit(X, y)
    np.testing.assert_allclose(
        a.decision_function(X), 3.0 * X @ a.coef_.T + a.intercept_
    )


def test_binary_string_labels_give_1d_decision():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    labels = np.array(["benign", "malignant"])[y]
    clf = MarginSoftmaxClassifier(loss="arcface").fit(X, labels)
    scores = clf.decision_function(X)
    assert scores.shape == (len(y),)
    np.testing.assert_array_equal(
        clf.predict(X), clf.classes_[(scores > 0).astype(int)]
    )
    assert clf.score(X, labels) > 0.95
    proba = clf.predict_proba(X)[:, 1]
    assert np.all(np.diff(proba[np.argsort(scores)]) >= -1e-12)


def test_margin_is_not_used_at_inference(iris):
    """A larger margin changes the fit, never the inference formula."""
    X, y = iris
    clf = MarginSoftmaxClassifier(loss="am-softmax", m=0.4).fit(X, y)
    twin = MarginSoftmaxClassifier(loss="am-softmax", m=0.0)
    twin.fit(X, y)
    twin.coef_, twin.intercept_ = clf.coef_, clf.intercept_
    twin.constant_coef_ = clf.constant_coef_
    np.testing.assert_allclose(twin.decision_function(X), clf.decision_function(X))


def test_pipeline_grid_search_over_m_and_s():
    X, y = load_wine(return_X_y=True)
    grids = {
        "am-softmax": {"clf__m": [0.0, 0.2], "clf__s": [5.0, 15.0]},
        "arcface": {"clf__m": [0.1, 0.3], "clf__s": [5.0, 15.0]},
        "a-softmax": {"clf__m": [1.5, 3.0], "clf__lambda_min": [1.0, 5.0]},
    }
    for loss, grid in grids.items():
        pipe = Pipeline(
            [("scale", StandardScaler()), ("clf", MarginSoftmaxClassifier(loss=loss))]
        )
        search = GridSearchCV(pipe, grid, cv=3).fit(X, y)
        assert search.best_score_ > 0.9
        assert search.score(X, y) > 0.9


def test_invalid_m_in_a_grid_scores_nan_with_a_warning():
    X, y = load_iris(return_X_y=True)
    search = GridSearchCV(
        MarginSoftmaxClassifier(loss="am-softmax"), {"m": [0.1, 5.0]}, cv=2
    )
    # Both expected, both asserted: scikit-learn's FitFailedWarning (a
    # RuntimeWarning, with the traceback of the refused m) and its UserWarning
    # about the non-finite mean score.
    with (
        pytest.warns(FitFailedWarning, match="(?s)2 fits failed.*m must be in"),
        pytest.warns(UserWarning, match="non-finite"),
    ):
        search.fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    assert np.isfinite(scores[0]) and np.isnan(scores[1])


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(loss="nope"), "am-softmax"),
        (dict(loss="am-softmax", m=1.5), "m must be in"),
        (dict(loss="am-softmax", m=-0.1), "m must be in"),
        (dict(loss="arcface", m=2.0), "m must be in"),
        (dict(loss="l-softmax", m=0.5), "m must be >= 1"),
        (dict(loss="normface", m=0.2), "no margin"),
        (dict(loss="am-softmax", s=-1.0), "s must be > 0"),
        (dict(loss="am-softmax", s=math.inf), "s must be finite"),
        (dict(loss="l-softmax", s=10.0), "s is not used"),
        (dict(t=0.9), "t must be"),
        (dict(t=math.nan), "t must be"),
        (dict(C=0.0), "C"),
        (dict(C=math.inf), "C"),
        (dict(loss="am-softmax", lambda_min=1.0), "lambda_min only applies"),
        (dict(loss="l-softmax", lambda_min=-1.0), "lambda_min"),
        (dict(class_weight={"zebra": 2.0}), "zebra"),
    ],
)
def test_invalid_hyperparameters_raise_in_fit(iris, params, match):
    X, y = iris
    clf = MarginSoftmaxClassifier(**params)  # never raises here
    clf.set_params(**params)
    with pytest.raises(ValueError, match=match):
        clf.fit(X, y)


def test_bad_data_raises_clear_errors(iris):
    X, y = iris
    clf = MarginSoftmaxClassifier()
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(X_nan, y)
    with pytest.raises(ValueError, match="class"):
        clf.fit(X, np.zeros_like(y))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        clf.fit(X, y[:-1])
    with pytest.raises(ValueError, match="sample_weight"):
        clf.fit(X, y, sample_weight=-np.ones(len(y)))


@pytest.mark.parametrize("loss", LOSSES)
def test_extreme_but_valid_settings_stay_finite(loss):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5)) * 1e6  # huge features
    X[:10] = X[10:20]  # duplicated rows
    y = np.arange(60) % 3
    X[0] = 0.0  # an all-zero sample
    edge = get_margin(loss).edge_settings  # the most extreme valid settings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = MarginSoftmaxClassifier(loss=loss, max_iter=200, **edge).fit(X, y)
    assert np.all(np.isfinite(clf.coef_)) and np.all(np.isfinite(clf.intercept_))
    assert np.all(np.isfinite(clf.predict_proba(X)))


def test_sample_exactly_parallel_to_its_prototype():
    # Two classes along two axes: every sample is parallel to its class mean.
    X = np.array([[1.0, 0.0]] * 5 + [[0.0, 2.0]] * 5)
    y = np.array([0] * 5 + [1] * 5)
    for loss in LOSSES:
        clf = MarginSoftmaxClassifier(loss=loss).fit(X, y)
        assert np.all(np.isfinite(clf.coef_))
        assert clf.score(X, y) == 1.0


def test_sample_weight_equals_repetition_and_class_weight(iris):
    X, y = iris
    rng = np.random.default_rng(1)
    sw = rng.integers(0, 4, len(y))
    # Equal up to where L-BFGS stops: its line search cannot resolve the
    # objective below sqrt(eps / curvature) (measured: 5e-7 for AM-Softmax at
    # tol=1e-8; 1.7e-4 for ArcFace on iris whatever the tol, see the notes).
    for loss, atol in (("softmax", 1e-10), ("am-softmax", 1e-4)):
        a = MarginSoftmaxClassifier(loss=loss, tol=1e-8)
        b = MarginSoftmaxClassifier(loss=loss, tol=1e-8)
        a.fit(X, y, sample_weight=sw)
        b.fit(X.repeat(sw, 0), y.repeat(sw))
        np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), atol=atol)
    weights = {0: 1.0, 1: 5.0, 2: 1.0}
    a = MarginSoftmaxClassifier(class_weight=weights).fit(X, y)
    b = MarginSoftmaxClassifier().fit(X, y, sample_weight=np.where(y == 1, 5.0, 1.0))
    np.testing.assert_allclose(a.coef_, b.coef_)


def test_balanced_class_weight_helps_the_minority():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    keep = (y == 1) | (np.arange(len(y)) % 8 == 0)  # few of class 0
    X, y = X[keep], y[keep]
    plain = MarginSoftmaxClassifier(s=5.0).fit(X, y)
    balanced = MarginSoftmaxClassifier(s=5.0, class_weight="balanced").fit(X, y)
    assert balanced.intercept_[0] - balanced.intercept_[1] > (
        plain.intercept_[0] - plain.intercept_[1]
    )


def test_deterministic_and_float32(iris):
    X, y = iris
    a = MarginSoftmaxClassifier(loss="arcface", random_state=0).fit(X, y)
    b = MarginSoftmaxClassifier(loss="arcface", random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = MarginSoftmaxClassifier(loss="arcface").fit(X.astype(np.float32), y)
    assert c.coef_.dtype == np.float32
    assert c.decision_function(X.astype(np.float32)).dtype == np.float32
    np.testing.assert_allclose(c.coef_, a.coef_, atol=1e-3)


def test_constant_feature_keeps_the_norm_information(iris):
    X, y = iris
    # 3-fold CV of AM-Softmax on iris: 87.3% without, 97.3% with (see the docs).
    lifted = MarginSoftmaxClassifier(constant_feature=1.0).fit(X, y)
    plain = MarginSoftmaxClassifier(constant_feature=None).fit(X, y)
    assert lifted.score(X, y) > plain.score(X, y) + 0.03
    sparse = pytest.importorskip("scipy.sparse")
    lifted = MarginSoftmaxClassifier(tol=1e-8).fit(X, y)
    lifted_sparse = MarginSoftmaxClassifier(tol=1e-8).fit(sparse.csr_matrix(X), y)
    # The same problem (up to round-off, amplified on this stiff s=30 problem):
    np.testing.assert_array_equal(lifted_sparse.predict(X), lifted.predict(X))
    np.testing.assert_allclose(
        lifted_sparse.predict_proba(X), lifted.predict_proba(X), atol=1e-3
    )


def test_warm_start_starts_from_previous_solution(iris):
    X, y = iris
    clf = MarginSoftmaxClassifier(loss="arcface", warm_start=True).fit(X, y)
    first = clf.n_iter_
    clf.fit(X, y)
    assert clf.n_iter_ < first
    for loss in ("l-softmax", "softmax"):
        clf = MarginSoftmaxClassifier(loss=loss, warm_start=True).fit(X, y)
        coef = clf.coef_.copy()
        clf.fit(X, y)
        np.testing.assert_allclose(clf.coef_, coef, rtol=1e-3, atol=1e-4)


def test_convergence_warning_only_when_budget_runs_out(iris):
    X, y = iris
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        MarginSoftmaxClassifier(max_iter=2).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        for loss in LOSSES:
            MarginSoftmaxClassifier(loss=loss).fit(X, y)


def test_dataframe_feature_names_and_pickle():
    pd = pytest.importorskip("pandas")
    X, y = load_iris(return_X_y=True, as_frame=True)
    clf = MarginSoftmaxClassifier().fit(X, y)
    np.testing.assert_array_equal(clf.feature_names_in_, X.columns)
    clone = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(clone.predict(X), clf.predict(X))
    # Fitted on named columns, predicting on a bare array warns (sklearn's rule).
    with pytest.warns(UserWarning, match="feature names"):
        clf.predict(pd.DataFrame(X.to_numpy()).to_numpy())


@pytest.mark.parametrize(
    "estimator",
    [MarginSoftmaxClassifier(), KernelMarginSoftmaxClassifier(n_components=20)],
    ids=["linear", "kernel"],
)
def test_old_dask_evaluation_count_reads_as_fit_stats(iris, estimator):
    """A Dask fit saved its evaluation count as n_evaluations_dask_.

    Fit diagnostics now have one record, ``_fit_stats``: an old pickle's count
    is read into it, a newer NumPy fit's record has no Dask-only entry.
    """
    X, y = iris
    clf = estimator.fit(X, y)
    state = dict(clf.__getstate__())
    state.pop("_fit_stats")
    state["n_evaluations_dask_"] = 7
    old = pickle.loads(pickle.dumps(clf))
    old.__setstate__(state)
    assert old._fit_stats == {"n_evaluations": 7}
    np.testing.assert_array_equal(old.predict(X), clf.predict(X))
    assert "n_evaluations_dask_" not in clf.__dict__


def test_kernel_estimator_beats_linear_on_circles():
    from sklearn.datasets import make_circles

    X, y = make_circles(n_samples=400, factor=0.4, noise=0.08, random_state=0)
    linear = MarginSoftmaxClassifier(constant_feature=None).fit(X, y)
    kernel = KernelMarginSoftmaxClassifier(n_components=300, random_state=0).fit(X, y)
    assert linear.score(X, y) < 0.75
    assert kernel.score(X, y) > 0.95
    # Nyström drops the centre kernel's negligible eigen-directions.
    width = kernel.feature_map_.n_components_
    assert kernel.coef_.shape == (2, width) and 0 < width <= 300
    assert not hasattr(kernel, "X_")  # no copy of the mapped training matrix


@pytest.mark.parametrize("approximation", ["orf", "rff", "nystroem"])
def test_kernel_estimator_on_digits(approximation):
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    clf = KernelMarginSoftmaxClassifier(
        n_components=500, kernel_approximation=approximation, random_state=0
    )
    clf.fit(X[:1200], y[:1200])
    assert clf.score(X[1200:], y[1200:]) > 0.88
    mapped = clf.feature_map_.transform(X[:5])
    assert mapped.shape == (5, 500) and clf.coef_.shape == (10, 500)


def test_kernel_a_softmax_uses_its_own_default_scale(iris):
    X, y = iris
    kernel = KernelMarginSoftmaxClassifier(
        loss="a-softmax", n_components=50, random_state=0
    ).fit(X, y)
    linear = MarginSoftmaxClassifier(loss="a-softmax").fit(X, y)
    assert kernel.s_ == 30.0 and linear.s_ == 8.0
    explicit = KernelMarginSoftmaxClassifier(
        loss="a-softmax", s=4.0, n_components=50, random_state=0
    ).fit(X, y)
    assert explicit.s_ == 4.0
