"""The kernel search's axes: the metric (learned per fold), the head, gamma."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.model_selection import StratifiedKFold

from sklmargin import GridEdgeWarning, KernelMarginSoftmaxClassifierCV
from sklmargin.estimators import _metric


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=150, n_features=6, n_informative=3, n_classes=3, random_state=0
    )
    return X, y


def _search(**params):
    base = dict(n_components=20, cv=3, tol=1e-3, random_state=0)
    return KernelMarginSoftmaxClassifierCV(**{**base, **params})


def test_metric_and_head_axes_shapes_and_chosen_values(data):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        clf = _search(
            loss=["am-softmax", "softmax"],
            metric=[None, "diagonal"],
            gammas=["scale", "2*scale"],
            ss=[30.0, 100.0],
            Cs=[1.0, 10.0, 100.0],
        ).fit(X, y)
    # scores_ keyed by loss: (folds, metrics, gammas, ms, its own path).
    assert set(clf.scores_) == {"am-softmax", "softmax"}
    assert clf.scores_["am-softmax"].shape == (3, 2, 2, 1, 2)
    assert clf.scores_["softmax"].shape == (3, 2, 2, 1, 3)
    results = clf.cv_results_
    n_points = 2 * 2 * (2 + 3)
    assert clf.n_iter_.shape == (3, n_points)
    assert len(results["params"]) == n_points
    assert set(results["param_metric"]) == {None, "diagonal"}
    assert set(results["param_loss"]) == {"am-softmax", "softmax"}
    # s is masked where the point is tuned along C, and the reverse.
    softmax = np.asarray(results["param_loss"]) == "softmax"
    np.testing.assert_array_equal(np.ma.getmaskarray(results["param_s"]), softmax)
    np.testing.assert_array_equal(np.ma.getmaskarray(results["param_C"]), ~softmax)
    # The same numbers, two views: the dict's arrays are cv_results_' columns.
    for loss, scores in clf.scores_.items():
        mask = np.asarray(results["param_loss"]) == loss
        np.testing.assert_array_equal(
            scores.reshape(3, -1),
            np.vstack([results[f"split{k}_test_score"][mask] for k in range(3)]),
        )
    best = results["params"][clf.best_index_]
    assert clf.loss_ == best["loss"] and clf.metric_ == best["metric"]
    assert clf.estimator_.loss == clf.loss_
    assert clf.estimator_.metric == clf.metric_
    if clf.loss_ == "softmax":
        assert clf.s_ is None and clf.C_ == best["C"]
    else:
        assert clf.s_ == best["s"]
    assert isinstance(clf.gamma_, float)
    assert clf.score(X, y) > 0.8


def test_two_losses_along_s_refit_on_the_chosen_one_s_path(data):
    # A-Softmax's default s path (15 ... 120) is not AM-Softmax's (50 ...
    # 400): the refit walks the chosen loss's own path, whichever is first.
    X, y = data

    def prefers_a_softmax(estimator, X, y):
        return float(estimator.loss == "a-softmax")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        clf = _search(
            loss=["am-softmax", "a-softmax"], metric=None, gammas=["scale"],
            scoring=prefers_a_softmax,
        ).fit(X, y)  # fmt: skip
    best = clf.cv_results_["params"][clf.best_index_]
    assert clf.loss_ == best["loss"] == clf.estimator_.loss == "a-softmax"
    assert clf.s_ == best["s"] == clf.estimator_.s


def test_the_metric_of_a_fold_is_learned_from_its_training_rows_only(data, monkeypatch):
    X, y = data
    learned = []
    original = _metric.learn_input_transform

    def recording(estimator, keys, take, dtype):
        learned.append(np.sort(keys))
        return original(estimator, keys, take, dtype)

    monkeypatch.setattr(_metric, "learn_input_transform", recording)
    _search(
        loss="am-softmax", metric=[None, "diagonal"], gammas=["scale"], ss=[30.0]
    ).fit(X, y)
    keys = _metric.training_row_keys(X)
    folds = list(StratifiedKFold(3).split(X, y))
    # One metric per fold for "diagonal" (none for None), on exactly the
    # fold's training rows; then the refit's on all rows if it chose one.
    for (train, _), seen in zip(folds, learned[:3], strict=True):
        np.testing.assert_array_equal(seen, np.sort(keys[train]))
    assert len(learned) in (3, 4)
    if len(learned) == 4:
        np.testing.assert_array_equal(learned[3], np.sort(keys))


def test_gamma_multiples_of_scale_and_their_edge_warning(data):
    X, y = data
    # 8 times "scale" beats 128 times by 10-12 points on every fold (16 times
    # beat it by 6-12, near the edge test's noise level): the widened grid is
    # written in multiples too.
    with pytest.warns(GridEdgeWarning, match=r"gammas=\['[0-9.]+\*scale', '"):
        clf = _search(
            loss="am-softmax", metric=None, gammas=["8*scale", "128*scale"], ss=[30.0]
        ).fit(X, y)
    factor = {"8*scale": 8.0, "128*scale": 128.0}[
        clf.cv_results_["params"][clf.best_index_]["gamma"]
    ]
    scale = 1.0 / (X.shape[1] * X.var())
    assert clf.gamma_ == pytest.approx(factor * scale)


@pytest.mark.parametrize("bad", [["2*foo"], ["-1*scale"], [0.0]])
def test_invalid_gamma_entries_are_refused(data, bad):
    X, y = data
    with pytest.raises(ValueError, match="gammas must hold"):
        _search(loss="am-softmax", metric=None, gammas=bad, ss=[30.0]).fit(X, y)


def test_invalid_metric_and_loss_lists_are_refused(data):
    X, y = data
    with pytest.raises(ValueError, match="metric must be"):
        _search(metric=[None, "cosine"], ss=[30.0]).fit(X, y)
    with pytest.raises(ValueError, match="at least one"):
        _search(loss=[], ss=[30.0]).fit(X, y)
