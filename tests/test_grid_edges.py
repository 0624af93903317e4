"""The grid-edge rule (shared with ``compare --tune``) and the CV warning."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

import sklmargin
from sklmargin import (
    GridEdgeWarning,
    KernelMarginSoftmaxClassifierCV,
    MarginSoftmaxClassifierCV,
)
from sklmargin._utils.grid_edges import beats_neighbour, grid_edges, shifted_grid


def test_rule_flags_both_edges_and_proposes_a_shifted_grid():
    grid = {"s": [10.0, 20.0, 40.0], "m": [0.05, 0.1, 0.2]}
    assert grid_edges({"s": 20.0, "m": 0.1}, grid) == []
    (up,) = grid_edges({"s": 40.0, "m": 0.1}, grid)
    assert (up.key, up.upward, up.widened) == ("s", True, [20.0, 40.0, 80.0])
    (down,) = grid_edges({"s": 20.0, "m": 0.05}, grid)
    assert (down.key, down.upward) == ("m", False)
    assert down.widened == pytest.approx([0.025, 0.05, 0.1])


def test_rule_skips_hard_bounds_and_single_values():
    # m = 0 is the end of a margin's domain; a one-value axis has no edge.
    assert grid_edges({"m": 0.0, "s": 30.0}, {"m": [0.0, 0.1], "s": [30.0]}) == []

    def at_most_one(m):
        return 0.0 <= m <= 1.0

    # m = 1 is the top of AM-Softmax's domain: nothing lies beyond it.
    grid = {"m": [0.5, 1.0]}
    assert grid_edges({"m": 1.0}, grid, valid={"m": at_most_one}) == []
    # Without the domain, the same choice is an edge.
    assert [e.key for e in grid_edges({"m": 1.0}, grid)] == ["m"]
    # Inside the domain, the edge is flagged although one full step out is not.
    assert [
        e.key for e in grid_edges({"m": 0.9}, {"m": [0.3, 0.9]}, {"m": at_most_one})
    ]


def test_shifted_grid_refuses_to_cross_zero():
    assert shifted_grid([0.0, 0.1], upward=False) is None
    assert shifted_grid([-1.0, 0.0, 1.0], upward=False) == [-2.0, -1.0, 0.0]
    assert shifted_grid([15, 31, 63], upward=True) == [31, 63, 128]


def test_warning_class_is_public():
    assert issubclass(sklmargin.GridEdgeWarning, UserWarning)
    assert "GridEdgeWarning" in sklmargin.__all__


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=240,
        n_features=8,
        n_informative=6,
        n_classes=3,
        flip_y=0.2,
        random_state=0,
    )
    return StandardScaler().fit_transform(X), y


def _edge_messages(estimator, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    return [str(w.message) for w in caught if w.category is GridEdgeWarning]


def test_cv_warns_at_the_top_of_its_s_path_and_names_ss(data):
    X, y = data
    # A path far below any useful scale: the largest s wins.
    clf = MarginSoftmaxClassifierCV(ss=[0.05, 0.1, 0.2], cv=3)
    (message,) = _edge_messages(clf, X, y)
    assert clf.s_ == 0.2
    assert "s=0.2, the largest value of its s path [0.05, 0.2]" in message
    assert "ss=[0.1, 0.2, 0.4]" in message


def test_cv_is_silent_inside_its_path(data):
    X, y = data
    # At the full tolerance: at the default path_tol=1e-3 the s=8 fits of
    # this noisy set stop early (17 iterations against 32-45) and score below
    # the s=1e4 ones, which then win.
    clf = MarginSoftmaxClassifierCV(ss=[0.05, 8.0, 1e4], cv=3, path_tol=None)
    assert _edge_messages(clf, X, y) == []
    assert clf.s_ == 8.0


def test_cv_names_Cs_for_penalised_losses(data):
    X, y = data
    # C=0.01 beats 0.001 by 9-11 points on every fold.
    clf = MarginSoftmaxClassifierCV(loss="softmax", Cs=[1e-3, 1e-2], cv=3)
    (message,) = _edge_messages(clf, X, y)
    assert f"chose C={clf.C_:.4g}, the " in message and "Cs=[" in message


def test_cv_is_silent_at_an_edge_that_only_ties(data):
    X, y = data
    # Both Cs are far too small: every fold predicts the majority class at
    # either, and the first of the tied values (an edge) is chosen.
    clf = MarginSoftmaxClassifierCV(loss="softmax", Cs=[1e-6, 2e-6], cv=3)
    assert _edge_messages(clf, X, y) == []
    assert clf.C_ == 1e-6
    scores = clf.scores_[:, 0, :]
    np.testing.assert_array_equal(scores[:, 0], scores[:, 1])


def test_the_edge_must_beat_its_neighbour_by_more_than_fold_noise():
    # Clear: 5 points on each of 3 folds.
    assert beats_neighbour([0.80, 0.82, 0.81], [0.75, 0.77, 0.76])
    # Ties, losses and a gain on one fold of three: no.
    assert not beats_neighbour([0.8, 0.8, 0.8], [0.8, 0.8, 0.8])
    assert not beats_neighbour([0.70, 0.80], [0.75, 0.85])
    assert not beats_neighbour([0.8114, 0.80, 0.80], [0.80, 0.80, 0.80])
    # 0.2 points over 1-2 rows a fold: a plain paired t-test says t = 4.0,
    # beyond its 2.92; corrected for the folds' shared training rows, 2.5.
    assert not beats_neighbour([0.8015, 0.8015, 0.803], [0.80, 0.80, 0.80])
    # The same gain on every fold: no noise to measure, the gain counts.
    assert beats_neighbour([0.81, 0.81, 0.81], [0.80, 0.80, 0.80])
    # A fold without a score is left out; one fold left: any gain counts.
    assert beats_neighbour([0.81, np.nan], [0.80, 0.90])
    assert not beats_neighbour([np.nan, np.nan], [0.8, 0.8])
    # Five folds, a steady gain of about a point: yes.
    assert beats_neighbour(
        [0.81, 0.82, 0.815, 0.83, 0.81], [0.80, 0.805, 0.80, 0.815, 0.80]
    )


def test_cv_does_not_warn_at_zero_margin(data):
    X, y = data
    # At the full tolerance, as test_cv_is_silent_inside_its_path.
    clf = MarginSoftmaxClassifierCV(
        ss=[0.05, 8.0, 1e4], ms=[0.0, 0.9], cv=3, path_tol=None
    )
    messages = _edge_messages(clf, X, y)
    assert clf.m_ == 0.0
    assert not any("m=0" in m for m in messages)


def test_kernel_cv_warns_about_gamma_and_names_gammas(data):
    X, y = data
    # gamma=100 is far too narrow (rows become islands): 1 wins by 12-23
    # points on every fold.
    clf = KernelMarginSoftmaxClassifierCV(
        gammas=[1.0, 100.0], ss=[20.0], n_components=60, cv=3, random_state=0
    )
    messages = _edge_messages(clf, X, y)
    assert clf.gamma_ == 1.0
    assert any(
        "gamma=1, the smallest value of its gamma grid" in m and "gammas=[" in m
        for m in messages
    ), messages
