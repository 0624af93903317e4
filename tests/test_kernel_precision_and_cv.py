"""The kernel estimator's precision rule, its CV search's mapping, the bias start."""

import numpy as np
import pytest
from sklearn.datasets import make_classification

from sklmargin import (
    KernelMarginSoftmaxClassifier,
    KernelMarginSoftmaxClassifierCV,
    NystroemFeatures,
)
from sklmargin.features._kernel_features import FLOAT32_ENTRIES
from sklmargin.losses._registry import get_margin
from sklmargin.objective._linear import LinearMarginObjective
from sklmargin.objective._rows import prepare_rows
from sklmargin.solver._start import (
    optimal_intercept,
    start_params,
    weighted_class_sums,
)


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=240, n_features=6, n_informative=4, n_classes=3, random_state=0
    )
    return X, y


@pytest.mark.parametrize("input_dtype", [np.float64, np.float32])
def test_auto_precision_follows_the_size_and_returns_the_input_dtype(
    data, input_dtype, monkeypatch
):
    X, y = data
    X = X.astype(input_dtype)
    # A tight tol: at the default (tol * s = 0.01) the float32 and float64
    # L-BFGS paths stop at different points (0.16 apart in probability here);
    # at the optimum they agree to float32 round-off.
    # No learned metric: its pilot stops early (10 * tol), where the float32
    # and float64 paths still differ.
    params = dict(n_components=50, tol=1e-6, metric=None, random_state=0)
    small = KernelMarginSoftmaxClassifier(**params).fit(X, y)
    assert small.compute_dtype_ == np.dtype(input_dtype).name
    # Lower the threshold below this fit's n * M: the same data compute in float32.
    monkeypatch.setattr(
        "sklmargin.features._kernel_features.FLOAT32_ENTRIES", X.shape[0] * 50
    )
    large = KernelMarginSoftmaxClassifier(**params).fit(X, y)
    assert large.compute_dtype_ == "float32"
    assert large.coef_.dtype == np.float32
    for method in ("decision_function", "predict_proba", "predict_log_proba"):
        assert getattr(large, method)(X).dtype == input_dtype
    # float32 stops where its round-off stalls the line search, a little
    # short of tol: 2 of 720 entries 0.0051 apart under OpenBLAS's
    # Sandybridge kernel (0.005 held under Haswell).
    np.testing.assert_allclose(
        large.predict_proba(X), small.predict_proba(X), atol=1e-2
    )
    np.testing.assert_array_equal(large.predict(X), small.predict(X))


def test_threshold_is_a_million_mapped_entries():
    assert FLOAT32_ENTRIES == 2**20


@pytest.mark.parametrize("compute_dtype", ["float32", "float64"])
def test_explicit_precision_wins_over_the_input(data, compute_dtype):
    X, y = data
    for input_dtype in (np.float32, np.float64):
        clf = KernelMarginSoftmaxClassifier(
            n_components=40, compute_dtype=compute_dtype, random_state=0
        ).fit(X.astype(input_dtype), y)
        assert clf.compute_dtype_ == compute_dtype
        assert clf.feature_map_.normalization_.dtype == np.dtype(compute_dtype)


def test_cv_maps_each_fold_once_per_gamma(data, monkeypatch):
    X, y = data
    fits = []
    original = NystroemFeatures.fit

    def counting_fit(self, *args, **kwargs):
        fits.append(self.gamma)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(NystroemFeatures, "fit", counting_fit)
    clf = KernelMarginSoftmaxClassifierCV(
        n_components=40,
        ss=[30.0, 100.0, 300.0],
        ms=[0.0, 0.05],
        loss="am-softmax",
        metric=None,  # the metric's pilots map rows too (in each fold)
        random_state=0,
    ).fit(X, y)
    n_folds, n_gammas = 3, 3
    # One map per (fold, gamma), whatever the path and margin grid, plus the refit.
    assert len(fits) == n_folds * n_gammas + 1
    assert clf.scores_.shape == (n_folds, n_gammas, 2, 3)
    assert fits[-1] == clf.gamma_


def test_cv_default_gamma_grid_is_around_scale(data):
    X, y = data
    clf = KernelMarginSoftmaxClassifierCV(
        n_components=30, ss=[50.0], loss="am-softmax", metric=None, random_state=0
    ).fit(X, y)
    # Multiples of "scale", resolved on each fold's training rows and, for
    # the refit, on all rows (with a metric: on the transformed rows).
    scale = 1.0 / (X.shape[1] * X.var())
    assert set(clf.cv_results_["param_gamma"]) == {"0.5*scale", "scale", "2*scale"}
    chosen = clf.cv_results_["params"][clf.best_index_]["gamma"]
    factor = {"0.5*scale": 0.5, "scale": 1.0, "2*scale": 2.0}[chosen]
    assert clf.gamma_ == pytest.approx(factor * scale)
    assert clf.estimator_.feature_map_.gamma_ == pytest.approx(clf.gamma_)


def test_cv_default_s_path_is_the_kernel_default_times_half_to_four():
    clf = KernelMarginSoftmaxClassifierCV()
    assert clf._default_path(get_margin("am-softmax")) == (
        "s",
        (50.0, 100.0, 200.0, 400.0),
    )


def test_cv_scores_equal_a_separate_fit_on_the_fold(data):
    # The premapped fold fit is the estimator's own fit on that fold.
    X, y = data
    clf = KernelMarginSoftmaxClassifierCV(
        n_components=40,
        gammas=[0.2],
        ss=[100.0],
        cv=3,
        loss="am-softmax",
        metric=None,
        random_state=0,
    ).fit(X, y)
    from sklearn.model_selection import StratifiedKFold

    train, test = next(StratifiedKFold(3).split(X, y))
    alone = KernelMarginSoftmaxClassifier(
        n_components=40, gamma=0.2, s=100.0, metric=None, random_state=0
    ).fit(X[train], y[train])
    assert clf.scores_[0, 0, 0, 0] == pytest.approx(alone.score(X[test], y[test]))


def test_cold_start_bias_is_optimal_for_the_imprinted_prototypes(data):
    X, y = data
    margin = get_margin("am-softmax")
    rows = prepare_rows(X, normalize=True, constant=0.0)
    weights = np.where(y == 0, 1000.0, 1e-4)
    objective = LinearMarginObjective(
        rows, y, 3, weights, margin, 0.05, 100.0, 1.0, True
    )
    # The class-means cold start the estimators take (imprinting, log-priors).
    totals = np.bincount(y, weights, minlength=3)
    sums = weighted_class_sums(rows.X, y, weights, 3)
    start = start_params(objective, totals, sums, 0)
    solved = optimal_intercept(objective, start)
    _, grad_start = objective.loss_gradient(start)
    _, grad_solved = objective.loss_gradient(solved)
    # Prototypes untouched; the bias gradient is at the optimum of the bias.
    np.testing.assert_array_equal(solved[:-3], start[:-3])
    assert np.max(np.abs(grad_solved[-3:])) < 1e-6 < np.max(np.abs(grad_start[-3:]))
    assert objective.loss_gradient(solved)[0] < objective.loss_gradient(start)[0]
