"""The linear search probes its chosen scale without a margin (``ms=None``).

A margin helps where classes separate with room to spare and costs accuracy
on noisy labels; the path over ``s`` at the default margin cannot tell which.
So each fold's model at the chosen point, fitted to ``tol``, is fitted on
without its margin for at most 10 iterations; ``m = 0`` replaces the margin
only when its paired held-out gain passes a one-sided t-test at 5 %.
"""

import copy
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

from sklmargin import (
    GridEdgeWarning,
    KernelMarginSoftmaxClassifierCV,
    MarginSoftmaxClassifier,
    MarginSoftmaxClassifierCV,
)
from sklmargin.model_selection._calibration import fit_temperature
from sklmargin.model_selection._cv_path import path_tolerance

SS = [8.0, 32.0]


def noisy_rows(flip_y, seed):
    X, y = make_classification(
        n_samples=300, n_features=10, n_informative=8, n_classes=4,
        flip_y=flip_y, random_state=seed,
    )  # fmt: skip
    return StandardScaler().fit_transform(X), y


def noisy_teacher(n=3000, d=64, k=10, seed=0, accuracy=0.6):
    """Unit-norm rows labelled by a random linear teacher with Gumbel noise.

    The teacher's scale is bisected so that its own rule is right on
    ``accuracy`` of the rows (a frozen embedding with noisy labels: the
    setting where a margin costs accuracy).
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    scores = X @ rng.standard_normal((d, k))
    noise = rng.gumbel(size=(n, k))
    low, high = 1e-2, 1e2
    for _ in range(40):
        beta = np.sqrt(low * high)
        right = np.mean(np.argmax(beta * scores + noise, axis=1) == scores.argmax(1))
        low, high = (beta, high) if right < accuracy else (low, beta)
    return X, np.argmax(beta * scores + noise, axis=1)


def fit_search(X, y, ss=SS, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        # The probes stop at their iteration cap: no warning reaches the user.
        warnings.simplefilter("error", ConvergenceWarning)
        return MarginSoftmaxClassifierCV(ss=ss, cv=3, **params).fit(X, y)


def fold_models_at(X, y, ss, s, tol=1e-4, path_tol=1e-3):
    """Each fold's path model at ``s`` (m = 0.05), as the search walks it."""
    models = []
    for train, test in StratifiedKFold(3).split(X, y):
        fold = MarginSoftmaxClassifier(m=0.05, warm_start=True)
        fold.set_params(s=ss[0], tol=1e300).fit(X[train], y[train])
        step_tol = path_tolerance(path_tol, fold, min_tol=tol)
        for value in ss[: ss.index(s) + 1]:
            fold.set_params(s=value, tol=step_tol).fit(X[train], y[train])
        models.append((fold, train, test))
    return models


@pytest.mark.parametrize(
    "rows, ss, kept",
    [  # a set that keeps the margin, and a noisy-teacher one that drops it
        (lambda: noisy_rows(0.0, 1), SS, 0.05),
        # gains +0.45, +0.8, +0.5 points: t = 5.3 against 2.92
        (lambda: noisy_teacher(6000, 128, 30, seed=1, accuracy=0.7), [40.0, 86.4], 0.0),
    ],
)
def test_the_margin_gives_way_where_the_probe_gains_clearly(rows, ss, kept):
    X, y = rows()
    clf = fit_search(X, y, ss=ss)
    scores, logits, labels = [], [], []
    for fold, train, test in fold_models_at(X, y, ss, clf.s_):
        # The path's model fitted on to tol, and a copy of it fitted on
        # without a margin for at most 10 iterations, score the fold.
        fold.set_params(tol=1e-4).fit(X[train], y[train])
        bare = copy.deepcopy(fold).set_params(m=0.0, max_iter=10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            bare.fit(X[train], y[train])
        scores.append(
            [np.mean(model.predict(X[test]) == y[test]) for model in (fold, bare)]
        )
        # The kept one (the probe fitted on to tol) gives the logits for T.
        model = bare.set_params(max_iter=1000) if kept == 0.0 else fold
        logits.append(model.fit(X[train], y[train]).decision_function(X[test]))
        labels.append(y[test])
    check = clf.margin_check_
    assert check["m"] == (0.05, 0.0)
    np.testing.assert_allclose(check["scores"], scores, rtol=0, atol=1e-12)
    # m = 0 only where its paired gain passes a one-sided t-test at 5 %.
    gains = np.diff(scores, axis=1).ravel()
    clear = gains.mean() > 2.919986 * gains.std(ddof=1) / np.sqrt(3)
    assert clf.m_ == (0.0 if clear else 0.05) == kept
    # The refit is the user's model: the probe's iteration cap is not in it.
    assert (clf.estimator_.m, clf.estimator_.max_iter) == (kept, 1000)
    assert clf.estimator_.tol == 1e-4 and clf.n_iter_.size
    temperature = fit_temperature(np.concatenate(logits), np.concatenate(labels))
    assert clf.temperature_ == pytest.approx(temperature, rel=1e-6)
    # best_index_ still names the searched point (its m is the default).
    assert clf.cv_results_["params"][clf.best_index_]["m"] == 0.05


@pytest.mark.parametrize(
    "params",
    [
        {"ms": [0.05]},  # a grid the user gave is searched as given
        {"refit": False},  # each fold keeps its own best
        {"loss": "normface"},  # no margin to drop
        {"loss": "l-softmax", "ss": None, "Cs": [1.0]},  # m = 0 outside its domain
    ],
)
def test_nothing_is_tried_unless_the_search_chose_a_default_margin(params):
    X, y = noisy_rows(0.3, 2)
    params = {"ss": SS, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        clf = MarginSoftmaxClassifierCV(cv=3, **params).fit(X, y)
    assert clf.margin_check_ is None
    margin = getattr(clf, "m_", None)
    assert margin is None or margin != 0.0 or params.get("loss") == "normface"


def test_the_kernel_search_keeps_its_margin():
    X, y = noisy_rows(0.3, 2)
    clf = KernelMarginSoftmaxClassifierCV(
        metric=None, gammas=["scale"], ss=[30.0], n_components=20, cv=2,
        random_state=0,
    ).fit(X, y)  # fmt: skip
    assert clf.margin_check_ is None and clf.m_ > 0


def test_a_margin_gives_way_only_to_a_clear_gain():
    from sklmargin.model_selection._cv_margin import clearly_positive

    assert clearly_positive([0.01, 0.01, 0.01])  # no spread, all positive
    assert clearly_positive([0.008, 0.011, 0.017, 0.016, 0.017])  # t = 7.7
    # segment's folds: a mean gain of 0.9 points, one fold against (t = 1.3)
    assert not clearly_positive([0.0115, 0.0144, 0.026, 0.0116, -0.0173])
    assert not clearly_positive([0.0, 0.0, 0.0])
    assert not clearly_positive([0.05])  # one fold: no spread to judge
    assert not clearly_positive([-0.01, -0.02, -0.01])


def _finish_with(steps):
    """Fold models stopped at once, fitted on through ``steps``: warnings, models."""
    from sklmargin.model_selection._cv_path import finish_chosen_folds
    from sklmargin.model_selection._cv_results import search_scorer

    X, y = noisy_rows(0.3, 2)
    folds = list(StratifiedKFold(3).split(X, y))
    with warnings.catch_warnings():  # the start: a fold fit stopped at once
        warnings.simplefilter("ignore", ConvergenceWarning)
        models = [MarginSoftmaxClassifier(max_iter=1).fit(X[t], y[t]) for t, _ in folds]
    data = (X, y, y, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        finish_chosen_folds(
            models, data, folds, search_scorer(None, None, "test"), np.unique(y),
            steps, np.ones(3, bool), None, 0,
        )  # fmt: skip
    warned = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    return warned, models


@pytest.mark.parametrize("quiet", [False, True])
def test_only_the_probe_silences_its_iteration_cap(quiet):
    # A fold fit on to tol that runs out of max_iter warns as any fit does;
    # only the probe, which is meant to stop at its cap, is quiet.
    warned, _ = _finish_with([({"tol": 1e-12, "max_iter": 2}, quiet)])
    assert bool(warned) is not quiet


@pytest.mark.parametrize("probe_first", [False, True])
def test_a_loud_and_a_quiet_step_of_one_job_warn_once_a_fold(probe_first):
    # The search's job: the finish (loud) and the probe (quiet) in one pass.
    steps = [
        ({"tol": 1e-12, "max_iter": 2}, False),
        ({"m": 0.0, "tol": 1e-12, "max_iter": 2}, True),
    ]
    warned, _ = _finish_with(steps[::-1] if probe_first else steps)
    assert warned == 3  # one a fold, from the loud step


def test_finishing_leaves_the_folds_models_as_they_were():
    # The search keeps its path models; the steps fit copies (a parallel
    # job's pickled model never came back either), whatever n_jobs.
    _, models = _finish_with([({"m": 0.0, "max_iter": 2}, True)])
    assert all(model.m is None and model.max_iter == 1 for model in models)
