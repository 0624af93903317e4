"""The cross-validated estimators: conformance, grids, paths, calibration."""

import copy
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax
from sklearn.base import clone
from sklearn.datasets import load_iris, make_classification
from sklearn.metrics import log_loss
from sklearn.model_selection import (
    GroupKFold,
    KFold,
    StratifiedKFold,
    train_test_split,
)
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklmargin import (
    GridEdgeWarning,
    KernelMarginSoftmaxClassifier,
    KernelMarginSoftmaxClassifierCV,
    MarginSoftmaxClassifier,
    MarginSoftmaxClassifierCV,
)
from sklmargin.estimators._fit_path import fit_path
from sklmargin.model_selection._calibration import T_MAX, T_MIN, fit_temperature

# Small grids, 2-3 folds and tol=1e-3 keep the suite fast (the sparse checks
# alone fit every sparse format: 4-5 times faster than at tol=1e-4).
CONFORMANCE_CONFIGS = [
    # ms=None: the default margin, then its probe at m = 0 (margin_check_).
    MarginSoftmaxClassifierCV(ss=[10.0, 30.0], cv=3, tol=1e-3),
    MarginSoftmaxClassifierCV(loss="softmax", Cs=[0.1, 1.0], cv=3, tol=1e-3),
    MarginSoftmaxClassifierCV(
        ss=[10.0, 30.0], ms=[0.0, 0.05], cv=2, refit=False, tol=1e-3
    ),
    # The kernel search at its defaults (Nyström, 2 metrics x 3 gammas x 4 s,
    # 3 folds, the metric learned per fold): 26 s for the whole suite of
    # checks on a shared 2-core machine (11 s with one metric learned once).
    KernelMarginSoftmaxClassifierCV(),
    KernelMarginSoftmaxClassifierCV(
        gammas=["scale", 0.5],
        ss=[10.0, 30.0],
        ms=[0.05],
        n_components=30,
        cv=2,
        tol=1e-3,
        random_state=0,
    ),
    # The input metric learned before the search, kept by the fold models.
    KernelMarginSoftmaxClassifierCV(
        metric="diagonal",
        gammas=["scale"],
        ss=[30.0, 100.0],
        ms=[0.05],
        n_components=30,
        cv=2,
        refit=False,
        tol=1e-3,
        random_state=0,
    ),
]


@parametrize_with_checks(CONFORMANCE_CONFIGS)
def test_sklearn_conformance(estimator, check):
    check(estimator)


# -- behaviour ---------------------------------------------------------------
@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def noisy():
    """A synthetic problem with label noise: a confident model is overconfident."""
    X, y = make_classification(
        n_samples=900,
        n_features=10,
        n_informative=6,
        n_classes=3,
        flip_y=0.15,
        class_sep=1.0,
        random_state=0,
    )
    return train_test_split(X, y, test_size=0.5, random_state=0, stratify=y)


@pytest.mark.parametrize(
    "loss, ms, kept",
    [
        ("normface", [0.0, 0.05, 0.1], [0.0]),
        ("am-softmax", [0.0, 0.05, 2.0, -0.1], [0.0, 0.05]),
        ("l-softmax", [0.0, 0.5, 2.0], [2.0]),
        ("softmax", [0.0, 0.1], [0.0]),
    ],
)
def test_invalid_margins_are_skipped_with_a_warning(iris, loss, ms, kept):
    X, y = iris
    clf = MarginSoftmaxClassifierCV(loss=loss, ms=ms, cv=2)
    params = {"Cs": [1.0]} if loss in ("softmax", "l-softmax") else {"ss": [10.0]}
    clf.set_params(**params)
    with pytest.warns(UserWarning, match="Skipping m="):
        clf.fit(X, y)
    assert sorted(set(clf.cv_results_["param_m"])) == kept
    assert clf.scores_.shape == (2, len(kept), 1)
    assert clf.m_ in kept


def test_grid_without_a_valid_margin_raises_the_domain_error(iris):
    X, y = iris
    clf = MarginSoftmaxClassifierCV(loss="arcface", ms=[2.0, 3.0], ss=[10.0], cv=2)
    with pytest.raises(ValueError, match=r"m must be in \[0, pi/2\]"):
        clf.fit(X, y)


def test_invalid_scales_are_skipped(iris):
    X, y = iris
    clf = MarginSoftmaxClassifierCV(ss=[-1.0, 10.0], ms=[0.05], cv=2)
    with pytest.warns(UserWarning, match=r"Skipping s=\[-1.0\]"):
        clf.fit(X, y)
    assert clf.s_ == 10.0


@pytest.mark.parametrize(
    "params, match",
    [
        ({"loss": "softmax", "ss": [1.0]}, "pass Cs"),
        ({"loss": "am-softmax", "Cs": [1.0]}, "pass ss"),
    ],
)
def test_path_of_the_wrong_kind_raises(iris, params, match):
    X, y = iris
    with pytest.raises(ValueError, match=match):
        MarginSoftmaxClassifierCV(cv=2, **params).fit(X, y)


@pytest.mark.parametrize(
    "make",
    [
        lambda: MarginSoftmaxClassifierCV(
            ss=[10.0],
            ms=[0.05],
            cv=2,
            C=0.5,
            t=1.2,
            lambda_min=None,
            constant_feature=2.0,
            class_weight="balanced",
            max_iter=50,
            tol=1e-3,
            random_state=3,
            verbose=0,
        ),
        lambda: KernelMarginSoftmaxClassifierCV(
            loss="am-softmax",
            gammas=[0.5],
            ss=[10.0],
            ms=[0.05],
            cv=2,
            n_components=20,
            kernel_approximation="rff",
            centres="uniform",
            metric="full",
            metric_steps=1,
            compute_dtype="float32",
            constant_feature=0.5,
            fit_intercept=False,
            max_iter=50,
            tol=1e-3,
            random_state=3,
        ),
    ],
)
@pytest.mark.parametrize("refit", [True, False])
def test_the_estimators_parameters_reach_every_fitted_model(iris, make, refit):
    """Each parameter the search shares with its estimator is passed on."""
    X, y = iris
    search = make().set_params(refit=refit).fit(X, y)
    inner = search.estimators_ or [search.estimator_]
    shared = set(search.get_params()) & set(inner[0].get_params()) - {"verbose"}
    assert {"C", "max_iter", "tol", "random_state"} <= shared
    for model in inner:
        for name in shared:
            assert model.get_params()[name] == search.get_params()[name], name


@pytest.mark.parametrize(
    "cls", [MarginSoftmaxClassifierCV, KernelMarginSoftmaxClassifierCV]
)
@pytest.mark.parametrize("params", [{"C": -1.0}, {"max_iter": 0}, {"loss": "x"}])
def test_passed_on_parameters_are_validated_by_the_search(iris, cls, params):
    X, y = iris
    (name,) = params
    with pytest.raises(ValueError, match=f"'{name}' parameter of {cls.__name__}"):
        cls(**params).fit(X, y)


def test_warm_path_matches_cold_fits(iris):
    X, y = iris
    ss, m = [5.0, 10.0, 20.0, 40.0, 80.0], 0.05
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    clf = MarginSoftmaxClassifierCV(ss=ss, ms=[m], cv=folds).fit(X, y)
    cold = np.array(
        [
            [
                MarginSoftmaxClassifier(s=s, m=m)
                .fit(X[train], y[train])
                .score(X[test], y[test])
                for s in ss
            ]
            for train, test in folds
        ]
    )
    warm = clf.scores_[:, 0, :]
    # Same optimum up to the solver tolerance: one or two of 50 test rows may
    # flip, the fold means agree closely.
    assert np.max(np.abs(warm - cold)) <= 0.041
    assert np.max(np.abs(warm.mean(axis=0) - cold.mean(axis=0))) <= 0.02
    # The warm path is cheaper than cold fits after its first point.
    cold_iter = [
        MarginSoftmaxClassifier(s=s, m=m).fit(X[train], y[train]).n_iter_
        for train, _ in folds
        for s in ss[1:]
    ]
    assert clf.n_iter_[:, 0, 1:].sum() < np.sum(cold_iter)


@pytest.mark.parametrize(
    "make",
    [
        lambda: MarginSoftmaxClassifierCV(ss=[5.0, 10.0, 20.0, 40.0], cv=3),
        lambda: MarginSoftmaxClassifierCV(
            loss="softmax", Cs=[0.1, 1.0, 10.0], class_weight={0: 2.0}, cv=3
        ),
        lambda: KernelMarginSoftmaxClassifierCV(
            gammas=["scale"],
            metric=None,
            ss=[10.0, 30.0, 100.0],
            n_components=40,
            cv=3,
            random_state=0,
        ),
    ],
)
def test_a_path_prepares_its_rows_once(iris, make, monkeypatch):
    """Each warm-started path validates, lifts and normalises its rows once.

    Its later points (and the refit's steps before the chosen point) start
    from the rows its first point prepared; the search chooses, scores and
    refits as when every point prepares its own.
    """
    from sklmargin.estimators import _base
    from sklmargin.model_selection import _cv_base, _cv_path

    X, y = iris
    X = X * np.array([1.0, 2.0, 3.0, 4.0])  # rows of different norms
    calls = []
    prepare = _base.prepare_rows

    def counting(*args, **kwargs):
        calls.append(1)
        return prepare(*args, **kwargs)

    monkeypatch.setattr(_base, "prepare_rows", counting)
    shared = make().fit(X, y)
    n_shared = len(calls)
    path = _base.fit_path

    def each_its_own(estimator, X, y, sample_weight=None, steps=({},), **kwargs):
        for step in steps:  # a path of one step per point: rows prepared each time
            yield from path(estimator, X, y, sample_weight, [step], **kwargs)

    for module in (_cv_base, _cv_path):
        monkeypatch.setattr(module, "fit_path", each_its_own)
    calls.clear()
    own = make().fit(X, y)
    n_points = shared.scores_.size
    # One preparation per fold path (its start's probe included), one per
    # fold that fits on at the chosen point (to tol where path_tol is looser,
    # then the probe at m = 0 on the same rows), one per fold where a winning
    # probe is fitted on to tol, one for the refit.
    probed = shared.margin_check_ is not None
    finished = 3 * (1 + (probed and shared.m_ == 0.0))
    assert n_shared <= 3 + finished + 1 < n_points <= len(calls)
    np.testing.assert_allclose(shared.scores_, own.scores_, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(shared.n_iter_, own.n_iter_)
    np.testing.assert_allclose(
        shared.predict_proba(X), own.predict_proba(X), rtol=1e-9, atol=1e-12
    )


def test_parallel_folds_equal_sequential(iris):
    X, y = iris
    params = dict(ss=[5.0, 20.0], ms=[0.0, 0.1], cv=2)
    serial = MarginSoftmaxClassifierCV(n_jobs=1, **params).fit(X, y)
    parallel = MarginSoftmaxClassifierCV(n_jobs=2, **params).fit(X, y)
    np.testing.assert_array_equal(serial.scores_, parallel.scores_)
    np.testing.assert_array_equal(serial.n_iter_, parallel.n_iter_)
    assert serial.temperature_ == parallel.temperature_
    np.testing.assert_array_equal(serial.predict_proba(X), parallel.predict_proba(X))


def test_temperature_lowers_held_out_log_loss(noisy):
    X_train, X_test, y_train, y_test = noisy
    params = dict(ss=[30.0, 60.0], ms=[0.05], cv=3)
    calibrated = MarginSoftmaxClassifierCV(**params).fit(X_train, y_train)
    raw = MarginSoftmaxClassifierCV(calibrate=False, **params).fit(X_train, y_train)
    assert raw.temperature_ == 1.0
    assert calibrated.temperature_ > 1.5  # label noise: the model is overconfident
    loss_calibrated = log_loss(y_test, calibrated.predict_proba(X_test))
    loss_raw = log_loss(y_test, raw.predict_proba(X_test))
    assert loss_calibrated < 0.9 * loss_raw
    # Calibration changes probabilities only: logits and labels are the model's.
    np.testing.assert_array_equal(
        calibrated.decision_function(X_test), raw.decision_function(X_test)
    )
    np.testing.assert_array_equal(calibrated.predict(X_test), raw.predict(X_test))
    proba = calibrated.predict_proba(X_test)
    assert np.array_equal(
        calibrated.classes_[proba.argmax(axis=1)], calibrated.predict(X_test)
    )


def test_refit_false_averages_the_folds_best_models(iris):
    X, y = iris
    folds = list(StratifiedKFold(3, shuffle=True, random_state=1).split(X, y))
    ss = [2.0, 8.0, 32.0]
    clf = MarginSoftmaxClassifierCV(ss=ss, ms=[0.0, 0.1], cv=folds, refit=False)
    clf.fit(X, y)
    assert clf.estimator_ is None and clf.best_index_ is None
    assert len(clf.estimators_) == len(folds)
    best_s, best_m = [], []
    for fold, estimator in enumerate(clf.estimators_):
        flat = clf.scores_[fold].ravel()
        best = int(np.flatnonzero(flat == flat.max())[0])
        point = clf.cv_results_["params"][best]
        assert (estimator.s_, estimator.m_) == (point["s"], point["m"])
        best_s.append(point["s"])
        best_m.append(point["m"])
    assert clf.s_ == pytest.approx(np.mean(best_s))
    assert clf.m_ == pytest.approx(np.mean(best_m))
    expected = np.mean([e.decision_function(X) for e in clf.estimators_], axis=0)
    np.testing.assert_allclose(clf.decision_function(X), expected)


def test_refit_true_uses_best_mean_score(iris):
    X, y = iris
    clf = MarginSoftmaxClassifierCV(ss=[1.0, 10.0, 30.0], ms=[0.0], cv=3).fit(X, y)
    mean = clf.scores_.mean(axis=0).ravel()
    assert clf.best_index_ == int(np.argmax(mean))
    assert clf.cv_results_["rank_test_score"][clf.best_index_] == 1
    assert clf.s_ == clf.cv_results_["params"][clf.best_index_]["s"]
    assert clf.estimator_.s_ == clf.s_ and clf.estimators_ is None
    np.testing.assert_array_equal(
        clf.cv_results_["mean_test_score"], clf.scores_.mean(axis=0).ravel()
    )


def test_penalised_loss_follows_C(iris):
    X, y = iris
    clf = MarginSoftmaxClassifierCV(loss="softmax", Cs=[0.01, 1.0], cv=3).fit(X, y)
    assert clf.s_ is None and clf.C_ in (0.01, 1.0)
    assert clf.estimator_.C == clf.C_


def test_kernel_cv_grid_over_gamma(iris):
    X, y = iris
    clf = KernelMarginSoftmaxClassifierCV(
        loss="am-softmax",
        metric="diagonal",
        gammas=[0.01, "scale"],
        ss=[10.0, 30.0],
        ms=[0.05],
        n_components=50,
        cv=3,
        random_state=0,
    ).fit(X, y)
    # One loss and one metric given as values: the shape of one search.
    assert clf.scores_.shape == (3, 2, 1, 2)
    # The grid records the widths as given ("scale" is resolved per fold on
    # its transformed training rows); gamma_ is the float the refit used.
    assert list(clf.cv_results_["param_gamma"]) == [0.01] * 2 + ["scale"] * 2
    assert isinstance(clf.gamma_, float)
    if clf.best_index_ < 2:
        assert clf.gamma_ == 0.01
    else:
        transformed = X * clf.estimator_.input_transform_
        assert clf.gamma_ == pytest.approx(1 / (X.shape[1] * transformed.var()))
    assert clf.score(X, y) > 0.9


def test_verbose_reports_each_fold_and_grid_point(iris, capsys):
    X, y = iris
    MarginSoftmaxClassifierCV(ss=[5.0, 10.0], ms=[0.0], cv=2, verbose=1).fit(X, y)
    lines = [line for line in capsys.readouterr().out.splitlines() if "fold" in line]
    assert len(lines) == 4
    assert "fold 2/2" in lines[-1] and "s=10" in lines[-1] and "score=" in lines[-1]


# -- the temperature ---------------------------------------------------------
def _log_loss_at(T, z, y, w):
    return -np.average(log_softmax(z / T, axis=1)[np.arange(len(y)), y], weights=w)


@pytest.mark.parametrize("seed", range(5))
def test_temperature_minimises_log_loss(seed):
    rng = np.random.default_rng(seed)
    n, k = 200, 4
    z = 5 * rng.standard_normal((n, k))
    y = np.where(rng.random(n) < 0.6, z.argmax(axis=1), rng.integers(0, k, n))
    w = rng.random(n)
    T = fit_temperature(z, y, w)
    reference = minimize_scalar(
        lambda log_t: _log_loss_at(np.exp(log_t), z, y, w),
        bounds=(np.log(T_MIN), np.log(T_MAX)),
        method="bounded",
        options={"xatol": 1e-10},
    )
    assert T == pytest.approx(np.exp(reference.x), rel=1e-5)
    h = 1e-4
    assert _log_loss_at(T, z, y, w) <= _log_loss_at(T * (1 + h), z, y, w)
    assert _log_loss_at(T, z, y, w) <= _log_loss_at(T * (1 - h), z, y, w)


def test_temperature_integer_weights_equal_repeated_rows():
    rng = np.random.default_rng(0)
    z = 3 * rng.standard_normal((30, 3))
    y = rng.integers(0, 3, 30)
    w = rng.integers(0, 4, 30)
    repeated = fit_temperature(np.repeat(z, w, axis=0), np.repeat(y, w))
    assert fit_temperature(z, y, w) == pytest.approx(repeated, rel=1e-12)


def test_temperature_edge_cases():
    y = np.array([0, 1, 0])
    assert fit_temperature(np.zeros((3, 2)), y) == 1.0
    assert fit_temperature(np.ones((3, 2)), y, np.zeros(3)) == 1.0
    # Every held-out row right: sharpen as far as allowed.
    z = np.array([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0]])
    assert fit_temperature(z, y) == T_MIN
    # Every row confidently wrong: flatten as far as allowed.
    assert fit_temperature(-z, y) == T_MAX


def test_scoring_string_is_used_for_selection(iris):
    X, y = iris
    clf = MarginSoftmaxClassifierCV(
        ss=[1.0, 10.0, 100.0], ms=[0.05], cv=3, scoring="neg_log_loss"
    ).fit(X, y)
    scores = clf.scores_[:, 0, :]
    assert np.all(scores < 0)  # log losses, negated
    assert clf.s_ == [1.0, 10.0, 100.0][int(np.argmax(scores.mean(axis=0)))]


@pytest.mark.parametrize("refit", [True, False])
def test_class_missing_from_a_training_fold(iris, refit):
    X, y = iris
    X = np.vstack([X, [[3.0, 3.0, 3.0, 3.0]]])
    y = np.append(y, 3)  # one sample: the fold that tests it never trains on it
    clf = MarginSoftmaxClassifierCV(ss=[10.0, 30.0], ms=[0.05], cv=3, refit=refit)
    with pytest.warns(UserWarning, match="least populated class"):
        clf.fit(X, y)
    proba = clf.predict_proba(X)
    assert proba.shape == (151, 4) and np.all(np.isfinite(proba))
    assert 0.1 < clf.temperature_ < 10
    assert clf.score(X[:150], y[:150]) > 0.9


# -- issue 19: errors and edge cases of the folds -----------------------------
@pytest.mark.parametrize("gamma", [0.0, -1.0, float("nan"), float("inf"), None, "x"])
def test_invalid_gamma_names_gammas(iris, gamma):
    X, y = iris
    clf = KernelMarginSoftmaxClassifierCV(gammas=[gamma], ss=[10.0], cv=2)
    with pytest.raises(ValueError, match=r"gammas.*gamma=") as info:
        clf.fit(X, y)
    assert "C must" not in str(info.value)


def test_a_mixed_gamma_grid_warns_about_rbf_widths_not_the_loss(iris):
    X, y = iris
    clf = KernelMarginSoftmaxClassifierCV(
        gammas=[0.0, 0.5], ss=[10.0], n_components=20, cv=2, random_state=0
    )
    with pytest.warns(UserWarning, match=r"gamma=\[0\.0\] outside RBF widths"):
        clf.fit(X, y)
    assert clf.gamma_ == 0.5


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: MarginSoftmaxClassifierCV(ss=[10.0, 30.0], **kw),
        lambda **kw: KernelMarginSoftmaxClassifierCV(
            loss="am-softmax", ss=[10.0, 30.0], n_components=20, random_state=0, **kw
        ),
    ],
)
@pytest.mark.parametrize("scoring", [None, "accuracy", "neg_log_loss"])
@pytest.mark.parametrize("refit", [True, False])
def test_test_fold_of_zero_weight_is_left_out_of_the_mean(iris, make, scoring, refit):
    X, y = iris
    folds = list(StratifiedKFold(3).split(X, y))
    sample_weight = np.ones(len(y))
    sample_weight[folds[1][1]] = 0.0  # fold 2 has nothing to score
    clf = make(cv=3, scoring=scoring, refit=refit)
    with pytest.warns(UserWarning, match=r"fold 2/3.*zero total sample_weight"):
        clf.fit(X, y, sample_weight=sample_weight)
    scores = clf.scores_.reshape(3, -1)
    assert np.all(np.isnan(scores[1])) and np.all(np.isfinite(scores[[0, 2]]))
    mean = clf.cv_results_["mean_test_score"]
    np.testing.assert_allclose(mean, scores[[0, 2]].mean(axis=0))
    assert np.all(np.isfinite(clf.predict_proba(X)))


def test_every_test_fold_of_zero_weight_raises(iris):
    X, y = iris
    sample_weight = np.r_[np.ones(75), np.zeros(75)]
    folds = [(np.arange(75), np.arange(75, 150))]  # one split, zero-weight test
    clf = MarginSoftmaxClassifierCV(ss=[10.0], cv=folds)
    with pytest.raises(ValueError, match="sample_weight.*every test fold"):
        clf.fit(X, y, sample_weight=sample_weight)


def test_training_fold_of_zero_weight_names_the_fold(iris):
    X, y = iris
    folds = list(StratifiedKFold(2).split(X, y))
    sample_weight = np.ones(len(y))
    sample_weight[folds[0][1]] = 0.0  # = the training rows of fold 2
    clf = MarginSoftmaxClassifierCV(ss=[10.0], cv=2)
    with pytest.raises(ValueError, match="training rows of CV fold 2/2 have zero"):
        clf.fit(X, y, sample_weight=sample_weight)


@pytest.mark.parametrize("refit", [True, False])
def test_training_fold_with_one_class_names_the_fold(iris, refit):
    X, y = iris[0][:100], iris[1][:100]  # sorted: an unshuffled KFold splits by class
    clf = MarginSoftmaxClassifierCV(ss=[10.0], cv=KFold(2), refit=refit)
    with pytest.raises(
        ValueError,
        match=r"training rows of CV fold 1/2 contain only one class, 1, .*"
        r"fewer folds.*stratif",
    ):
        clf.fit(X, y)


@pytest.mark.parametrize("path_tol", [None, 1e-6])
def test_refit_walks_the_warm_path_to_the_chosen_s(path_tol):
    # The refit is the model the folds scored: the same warm-started path over
    # s, on all the data, up to the chosen point (not a fit started elsewhere),
    # its steps at path_tol (the looser of it and tol), the chosen s at tol.
    # (A path_tol looser than tol refits from the finished folds' mean: below.)
    X, y = make_classification(
        n_samples=300, n_features=10, n_informative=8, n_classes=4, random_state=1
    )
    X = StandardScaler().fit_transform(X)
    ss = [2.0, 8.0, 32.0, 128.0]
    clf = MarginSoftmaxClassifierCV(ss=ss, ms=[0.05], cv=3, path_tol=path_tol)
    clf.fit(X, y)
    step_tol = 1e-4 if path_tol is None else max(path_tol, 1e-4)
    walked = MarginSoftmaxClassifier(m=0.05, warm_start=True)
    steps = ss[: ss.index(clf.s_) + 1]
    for s in steps:
        walked.set_params(s=s, tol=1e-4 if s == steps[-1] else step_tol).fit(X, y)
    np.testing.assert_allclose(clf.estimator_.coef_, walked.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(
        clf.estimator_.intercept_, walked.intercept_, rtol=1e-7, atol=1e-9
    )
    assert clf.estimator_.s == clf.s_ and not clf.estimator_.warm_start
    assert clf.estimator_.tol == 1e-4
    # Past the first point, so the walk has more than one step to get right.
    assert clf.s_ > ss[0]


@pytest.mark.parametrize("loss", ["am-softmax", "softmax"])
def test_loose_paths_finish_the_chosen_point_at_tol_and_refit_from_its_mean(loss):
    # With path_tol looser than tol, each fold's path model at the chosen
    # point is fitted on to tol (warm-started); the temperature is fitted on
    # those models' held-out logits and the refit starts from their mean.
    from sklmargin.model_selection._cv_path import path_tolerance

    X, y = make_classification(
        n_samples=300, n_features=10, n_informative=8, n_classes=4, random_state=1
    )
    X = StandardScaler().fit_transform(X)
    softmax = loss == "softmax"
    path, name = ([0.1, 1.0, 10.0], "C") if softmax else ([2.0, 8.0, 32.0, 128.0], "s")
    grid = {"Cs": path} if loss == "softmax" else {"ss": path, "ms": [0.05]}
    clf = MarginSoftmaxClassifierCV(loss=loss, cv=3, path_tol=1e-2, **grid).fit(X, y)
    chosen = getattr(clf, f"{name}_")
    steps = path[: path.index(chosen) + 1]
    params = {} if loss == "softmax" else {"m": 0.05}
    logits, labels, finished = [], [], []
    for train, test in StratifiedKFold(3).split(X, y):
        fold = MarginSoftmaxClassifier(loss=loss, warm_start=True, **params)
        # The path measures its cold start (no iteration) and stops at the
        # tighter of path_tol and a tenth of that start's gradient.
        fold.set_params(**{name: path[0]}, tol=1e300).fit(X[train], y[train])
        tol = path_tolerance(1e-2, fold, min_tol=1e-4)
        for value in steps:
            fold.set_params(**{name: value}, tol=tol).fit(X[train], y[train])
        fold.set_params(tol=1e-4).fit(X[train], y[train])
        logits.append(fold.decision_function(X[test]))
        labels.append(y[test])
        finished.append(fold)
    temperature = fit_temperature(np.concatenate(logits), np.concatenate(labels))
    assert clf.temperature_ == pytest.approx(temperature, rel=1e-6)
    refit = copy.deepcopy(finished[0])
    refit.coef_ = np.mean([f.coef_ for f in finished], axis=0)
    refit.intercept_ = np.mean([f.intercept_ for f in finished], axis=0)
    refit.constant_coef_ = np.mean([f.constant_coef_ for f in finished], axis=0)
    if loss != "softmax":  # unit prototypes, the lift coordinate included
        norms = np.hypot(np.linalg.norm(refit.coef_, axis=1), refit.constant_coef_)
        refit.coef_ /= norms[:, None]
        refit.constant_coef_ /= norms
        # the warm start rescales by the norms the folds' solvers ended with
        refit._prototype_norms = tuple(
            np.mean([f._prototype_norms for f in finished], axis=0)
        )
    refit.fit(X, y)
    np.testing.assert_allclose(clf.estimator_.coef_, refit.coef_, rtol=1e-6, atol=1e-8)
    assert clf.estimator_.tol == 1e-4 and not clf.estimator_.warm_start


def test_the_temperature_is_that_of_models_fitted_to_tol():
    # The temperature calibrates the model the user gets, fitted to tol: a
    # loose path_tol (the folds' paths stop early) must not move it. Before,
    # it was fitted on the loose fold models' logits: 11 % off here, and
    # predict_proba off by 0.04.
    X, y = make_classification(
        400, 10, n_informative=6, n_classes=4, n_clusters_per_class=1,
        class_sep=0.8, random_state=0,
    )  # fmt: skip
    X = StandardScaler().fit_transform(X)
    kw = dict(ss=[20.0], ms=[0.05], cv=3, tol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        loose = MarginSoftmaxClassifierCV(path_tol=1e-2, **kw).fit(X, y)
        full = MarginSoftmaxClassifierCV(path_tol=None, **kw).fit(X, y)
    assert loose.temperature_ == pytest.approx(full.temperature_, rel=1e-3)
    np.testing.assert_allclose(
        loose.predict_proba(X), full.predict_proba(X), rtol=0, atol=1e-3
    )


@pytest.mark.parametrize("loss", ["am-softmax", "softmax", "l-softmax"])
def test_a_folds_premapped_rows_serve_every_grid_point_unchanged(iris, loss):
    """The fold fits take the fold's map and rows as explicit arguments.

    They normalise into new arrays (the rows serve the next grid point),
    learn no metric, and leave no attribute behind for control flow.
    """
    X, y = iris
    # (gamma="scale": "auto" resolves differently with and without a metric.)
    base = KernelMarginSoftmaxClassifier(
        loss=loss, gamma="scale", n_components=30, metric="diagonal", random_state=0
    )
    feature_map, train, _ = base._fold_features(X, None, X[:5])
    before = train.copy()
    model = clone(base)
    for _ in fit_path(model, X, y, mapped=(feature_map, train), warn_scale=False):
        pass
    np.testing.assert_array_equal(train, before)
    assert model.feature_map_ is feature_map and model.input_transform_ is None
    assert not {"_premapped", "_no_scale_check"} & set(vars(model))
    # The same fit as on rows the estimator mapped with that map itself.
    direct = clone(base).set_params(metric=None).fit(X, y)
    np.testing.assert_allclose(model.coef_, direct.coef_, rtol=1e-6, atol=1e-9)


def test_path_tol_loosens_only_the_selecting_fits():
    # path_tol stops the folds' paths early (they only rank the points); the
    # fold models that predict (refit=False) and a path_tol below tol keep tol.
    X, y = make_classification(
        n_samples=300, n_features=10, n_informative=8, n_classes=4, random_state=1
    )
    X = StandardScaler().fit_transform(X)
    params = dict(ss=[2.0, 4.0, 8.0, 16.0, 32.0], ms=[0.05], cv=3)

    def search(**extra):
        return MarginSoftmaxClassifierCV(**params, **extra).fit(X, y)

    full, loose = search(path_tol=None), search(path_tol=1e-2)
    assert loose.n_iter_.sum() < full.n_iter_.sum()
    np.testing.assert_array_equal(search(path_tol=1e-6).scores_, full.scores_)
    np.testing.assert_array_equal(
        search(path_tol=1e-2, refit=False).n_iter_,
        search(path_tol=None, refit=False).n_iter_,
    )


def test_loose_paths_move_on_a_many_class_embedding_like_problem():
    # Unit rows, 30 classes, a noisy linear teacher: each gradient entry is
    # small, and the class-mean start's largest one is already near
    # 1e-3 * s. The absolute path_tol then stopped most path points before
    # their first iteration (here 5 of 9 fold fits took none), so s was
    # chosen on nearly the same start. Each path now reduces its start's
    # gradient at least tenfold (PATH_REDUCTION): every fold fit moves.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 96))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.argmax(
        2.0 * X @ rng.standard_normal((96, 30)) + rng.gumbel(size=(3000, 30)), axis=1
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        clf = MarginSoftmaxClassifierCV(ss=[10.0, 20.0, 40.0], cv=3).fit(X, y)
    assert np.all(np.asarray(clf.n_iter_) > 0)


def test_path_tolerance_keeps_path_tol_where_the_start_is_steep(iris):
    # Where the start's gradient is large (iris: about 1e-1 * s) path_tol
    # is already a tenfold reduction and stays; it never goes below tol.
    from sklmargin.model_selection._cv_path import path_tolerance

    X, y = iris
    X = StandardScaler().fit_transform(X)
    probe = MarginSoftmaxClassifier(s=10.0, m=0.05, tol=1e300).fit(X, y)
    assert probe.n_iter_ == 0
    assert path_tolerance(1e-3, probe, min_tol=1e-4) == 1e-3
    assert 1e-4 <= path_tolerance(1.0, probe, min_tol=1e-4) < 1.0
    assert path_tolerance(1.0, probe, min_tol=0.9) == 0.9


@pytest.mark.parametrize("path_tol", [0.0, -1e-3, "loose"])
def test_invalid_path_tol_raises(iris, path_tol):
    with pytest.raises((ValueError, TypeError), match="path_tol"):
        MarginSoftmaxClassifierCV(path_tol=path_tol).fit(*iris)


def test_a_search_saved_before_path_tol_loads_with_the_full_tol_path(iris):
    state = MarginSoftmaxClassifierCV(ss=[5.0, 10.0], cv=2).fit(*iris).__getstate__()
    del state["path_tol"]
    old = MarginSoftmaxClassifierCV.__new__(MarginSoftmaxClassifierCV)
    old.__setstate__(state)
    assert old.get_params()["path_tol"] is None
    np.testing.assert_array_equal(old.predict(iris[0]), old.estimator_.predict(iris[0]))


@pytest.mark.parametrize(
    "make",
    [
        lambda cv: MarginSoftmaxClassifierCV(ss=[5.0, 20.0], ms=[0.05], cv=cv),
        lambda cv: KernelMarginSoftmaxClassifierCV(
            gammas=["scale"],
            ss=[10.0, 30.0],
            ms=[0.05],
            cv=cv,
            n_components=30,
            metric=None,
            random_state=0,
        ),  # fmt: skip
    ],
    ids=["linear", "kernel"],
)
def test_groups_reach_a_group_aware_splitter(make):
    # As GridSearchCV.fit(X, y, groups=...): the groups go to cv.split, so a
    # group never has rows on both sides of a fold.
    X, y = make_classification(
        n_samples=240, n_features=6, n_informative=4, n_classes=3, random_state=3
    )
    groups = np.arange(240) % 12
    cv = GroupKFold(n_splits=3)
    searched = make(cv).fit(X, y, groups=groups)
    expected = make(list(cv.split(X, y, groups))).fit(X, y)
    np.testing.assert_array_equal(searched.scores_, expected.scores_)
    assert searched.s_ == expected.s_
    # A group splitter without groups fails in scikit-learn, naming them.
    with pytest.raises(ValueError, match="groups"):
        make(cv).fit(X, y)
    # Other splitters ignore them, as in scikit-learn (whose recent versions
    # warn that they do).
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The groups parameter", UserWarning)
        plain = make(3).fit(X, y, groups=groups)
    np.testing.assert_array_equal(plain.scores_, make(3).fit(X, y).scores_)


def test_sv_softmax_path_fits_its_first_point():
    # t > 1 makes the loss SV-Softmax, whose state rounds a start probe would
    # skip: the probe (its tolerance 1e300) stalled at the cold start, and the
    # first real point, a warm start at the same value, was taken as
    # converged with 0 iterations and scored on the unfitted start.
    X, y = make_classification(
        n_samples=300, n_features=8, n_informative=5, n_classes=3, random_state=0
    )
    search = MarginSoftmaxClassifierCV(t=1.5, cv=2, ss=[10, 20, 40]).fit(X, y)
    assert (search.n_iter_[..., 0] > 0).all()
