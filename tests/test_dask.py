"""Fit and predict on Dask arrays: the in-memory results, chunk by chunk.

Most tests run Dask's synchronous scheduler (the same map-reduce code, no
cluster overhead); the cluster tests use one module-scoped loopback
LocalCluster of two single-threaded worker processes.
"""

import re
import subprocess
import sys
import warnings
import weakref
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import make_blobs

from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier
from sklmargin._utils import validation
from sklmargin.estimators import _base as base
from sklmargin.estimators._base import BaseMarginSoftmax
from sklmargin.objective import LinearMarginObjective

pytest.importorskip("distributed")
import dask  # noqa: E402
import dask.array as da  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

import sklmargin.integrations.dask._estimators as dask_module  # noqa: E402
import sklmargin.integrations.dask._objective as dask_objective  # noqa: E402

CHUNK = 90


def _data(n=400, n_classes=3, seed=0):
    X, y = make_blobs(
        n_samples=n, centers=n_classes, n_features=5, cluster_std=3.0, random_state=seed
    )
    return X, y


def _dask(*arrays, chunks=CHUNK):
    return [da.from_array(a, chunks=chunks) for a in arrays]


@pytest.fixture
def sync():
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture(scope="module")
def cluster_client():
    with (
        LocalCluster(
            processes=True,
            host="127.0.0.1",
            n_workers=2,
            threads_per_worker=1,
            dashboard_address="127.0.0.1:0",  # loopback, any free port
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


CONFIGS = [
    (MarginSoftmaxClassifier, {"loss": "am-softmax"}),
    (MarginSoftmaxClassifier, {"loss": "softmax", "C": 0.5}),
    (MarginSoftmaxClassifier, {"loss": "arcface", "fit_intercept": False}),
    (MarginSoftmaxClassifier, {"loss": "l-softmax"}),
    (MarginSoftmaxClassifier, {"loss": "normface", "t": 1.2}),
    (
        KernelMarginSoftmaxClassifier,
        {"n_components": 60, "kernel_approximation": "orf"},
    ),
    # The in-memory centres however many distinct rows (issue 19, item 7).
    (
        KernelMarginSoftmaxClassifier,
        {"n_components": 400, "kernel_approximation": "nystroem"},
    ),
]


@pytest.mark.parametrize(("Estimator", "params"), CONFIGS)
def test_matches_in_memory_fit(sync, Estimator, params):
    X, y = _data()
    weights = np.random.default_rng(0).integers(0, 4, len(y)).astype(float)
    estimator = Estimator(random_state=0, class_weight="balanced", **params)
    expected = estimator.fit(X, y, sample_weight=weights).predict_proba(X)
    X_dask, y_dask, w_dask = _dask(X, y, weights)
    fitted = Estimator(**estimator.get_params()).fit(
        X_dask, y_dask, sample_weight=w_dask
    )
    proba = fitted.predict_proba(X_dask)
    assert isinstance(proba, da.Array)
    assert_allclose(proba.compute(), expected, rtol=0, atol=1e-6)
    # The lift: per-chunk statistics, the in-memory finisher.
    assert fitted.constant_feature_ == pytest.approx(
        estimator.constant_feature_, rel=1e-12
    )


def test_streamed_chunks_equal_persisted(sync, monkeypatch):
    X, y = _data()
    X_dask, y_dask = _dask(X, y)
    fits = []
    for persist in (True, False):
        monkeypatch.setattr(dask_module, "persist_chunks", persist)
        clf = KernelMarginSoftmaxClassifier(n_components=40, t=1.2, random_state=0)
        fits.append(clf.fit(X_dask, y_dask))
    assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert_array_equal(fits[0].intercept_, fits[1].intercept_)


def test_integer_weights_equal_repeated_rows(sync):
    X, y = _data(n=300)
    weights = np.random.default_rng(1).integers(0, 3, len(y))
    repeated = np.repeat(np.arange(len(y)), weights)
    weighted = KernelMarginSoftmaxClassifier(
        n_components=40, kernel_approximation="orf", random_state=0
    ).fit(*_dask(X, y), sample_weight=da.from_array(weights.astype(float), chunks=70))
    expanded = KernelMarginSoftmaxClassifier(
        n_components=40, kernel_approximation="orf", random_state=0
    ).fit(*_dask(X[repeated], y[repeated]))
    assert weighted.feature_map_.gamma_ == pytest.approx(
        expanded.feature_map_.gamma_, rel=1e-12
    )
    assert_allclose(
        weighted.predict_proba(X), expanded.predict_proba(X), rtol=0, atol=1e-6
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scale_gamma_is_the_in_memory_one_whatever_the_chunks(sync, dtype):
    # The chunks' sums added in chunk order moved gamma by an ulp with the
    # chunking (250 rows in float32, 1000 and 777 in float64), enough to move
    # some labels of a fit.
    X, _ = make_blobs(3000, n_features=20, centers=4, random_state=0)
    y = np.arange(len(X)) % 4
    X = X.astype(dtype)
    weights = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    params = dict(n_components=20, kernel_approximation="orf", metric=None)
    params.update(fit_intercept=False, max_iter=1)  # only the map is compared
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter=1
        expected = KernelMarginSoftmaxClassifier(**params).fit(X, y, weights)
        for chunks in (1000, 777, 1500, 250):
            fitted = KernelMarginSoftmaxClassifier(**params).fit(
                *_dask(X, y, weights, chunks=chunks)
            )
            assert fitted.feature_map_.gamma_ == expected.feature_map_.gamma_, chunks


def test_balanced_weights_are_the_in_memory_ones_whatever_the_chunks(sync, monkeypatch):
    # Weights over twelve orders of magnitude: class totals summed row by row
    # in memory, per chunk then across chunks in Dask, differed in their last
    # bits with the chunking, and so did the "balanced" factors and the
    # start's class totals.
    X, y = _data(n=1000)
    weights = 10.0 ** np.random.default_rng(0).uniform(-6, 6, len(y))
    seen = []

    def factors_spy(*args):
        seen.append(class_weight_factors(*args))
        return seen[-1]

    def start_spy(self, objective, class_totals, *args):
        seen.append(np.array(class_totals))
        return cold_start(self, objective, class_totals, *args)

    class_weight_factors = validation.class_weight_factors
    cold_start = BaseMarginSoftmax._cold_start
    monkeypatch.setattr(validation, "class_weight_factors", factors_spy)
    monkeypatch.setattr(dask_module, "class_weight_factors", factors_spy)
    monkeypatch.setattr(BaseMarginSoftmax, "_cold_start", start_spy)
    clf = MarginSoftmaxClassifier(class_weight="balanced", max_iter=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter=1: only the start is compared
        clf.fit(X, y, weights)
        expected, seen[:] = list(seen), []
        for chunks in (1000, 333, 97, 64):
            clf.fit(*_dask(X, y, weights, chunks=chunks))
            assert len(seen) == len(expected) == 2
            for got, want in zip(seen, expected, strict=True):
                assert_array_equal(got, want, err_msg=str(chunks))
            seen.clear()


def test_an_overflowing_scale_is_refused_as_in_memory(sync):
    # A term w_i * sum_j x_ij overflows float64 though X and the weights are
    # finite: both fits refuse it with one message (Dask's chunks returned a
    # tiny gamma, the in-memory fit's round-off floor took it for constant).
    X, y = _data()
    X = X * 1e300
    weights = np.ones(len(y))
    weights[0] = 1e300
    params = dict(kernel_approximation="orf", n_components=10, metric=None)
    with pytest.raises(ValueError, match="gamma='scale'.*not finite"):
        KernelMarginSoftmaxClassifier(**params).fit(X, y, weights)
    with pytest.raises(ValueError, match="gamma='scale'.*not finite"):
        KernelMarginSoftmaxClassifier(**params).fit(*_dask(X, y, weights, chunks=50))


def test_float32_stays_float32(sync):
    X, y = _data()
    X = X.astype(np.float32)
    clf = MarginSoftmaxClassifier(random_state=0).fit(*_dask(X, y))
    assert clf.coef_.dtype == np.float32
    assert clf.predict_proba(_dask(X)[0]).dtype == np.float32
    reference = MarginSoftmaxClassifier(random_state=0).fit(X, y)
    # The float32 objective (its sums in another order on the chunks) fixes
    # the optimum only so far: run to tol=1e-7, both fits end on its round-off,
    # 4e-4 to 5e-4 apart in probability (2e-3 at tol=1e-5 before round 5).
    assert_allclose(clf.predict_proba(X), reference.predict_proba(X), atol=1e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_bias_start_takes_one_pass_and_the_in_memory_start(
    sync, monkeypatch, dtype
):
    # The bias-only problem of the start solved through full evaluations took
    # a pass over the chunks per step: 9 in float64, 57 in float32, where it
    # also stopped on the float32 objective's round-off, away from the
    # in-memory start (solved on float64 cosines). Now one forward GEMM per
    # chunk, the cosines kept on the workers.
    X, y = _data(n=600)
    X = X.astype(dtype)
    forwards, starts = [], []

    def forward_spy(self, params):
        forwards.append(self.X.shape[0])
        return forward(self, params)

    def start_spy(objective, params):
        before = len(forwards), objective.n_evaluations
        params = optimal_intercept(objective, params)
        counted = objective.n_evaluations - before[1]
        starts.append((len(forwards) - before[0], counted, objective.unpack(params)[1]))
        return params

    forward, optimal_intercept = LinearMarginObjective._forward, base.optimal_intercept
    monkeypatch.setattr(LinearMarginObjective, "_forward", forward_spy)
    monkeypatch.setattr(base, "optimal_intercept", start_spy)
    clf = MarginSoftmaxClassifier(max_iter=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter=1: only the start is compared
        clf.fit(X, y)
        X_dask, y_dask = _dask(X, y)
        clf.fit(X_dask, y_dask)
    (n_memory, counted_memory, expected), (n_dask, counted_dask, got) = starts
    assert n_memory == 1
    assert n_dask == X_dask.numblocks[0]
    assert counted_memory == counted_dask == 0  # no full evaluation either way
    # L-BFGS-B to a gradient of 1e-8 on the same cosines, summed per chunk
    assert_allclose(got, expected, rtol=0, atol=1e-9)


def test_a_streamed_start_keeps_no_chunk_cosines(sync, monkeypatch):
    # Streamed chunks are judged too big to hold: the start's bias problem
    # kept every chunk's n_c x K float64 cosines at once (then more memory
    # than the data when K * 8 > (d + 2) * itemsize). It now recomputes one
    # chunk's at a time, at each step: the same cosines, the same start.
    X, y = _data(n=600)
    X_dask, y_dask = _dask(X.astype(np.float32), y)
    made, most_alive, starts = [], [0], []

    def problem_spy(*args):
        most_alive[0] = max(most_alive[0], sum(ref() is not None for ref in made))
        problem = chunk_intercept_problem(*args)
        made.append(weakref.ref(problem))
        return problem

    def start_spy(objective, params):
        params = optimal_intercept(objective, params)
        starts.append(objective.unpack(params)[1])
        return params

    chunk_intercept_problem = dask_objective.chunk_intercept_problem
    optimal_intercept = base.optimal_intercept
    monkeypatch.setattr(dask_objective, "chunk_intercept_problem", problem_spy)
    monkeypatch.setattr(base, "optimal_intercept", start_spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter=1: only the start is compared
        for persist in (True, False):
            monkeypatch.setattr(dask_module, "persist_chunks", persist)
            n_before = len(made)
            MarginSoftmaxClassifier(max_iter=1).fit(X_dask, y_dask)
            if persist:  # one pass, every chunk's problem kept
                assert len(made) == X_dask.numblocks[0]
                assert most_alive[0] == X_dask.numblocks[0] - 1
                most_alive[0] = 0
    assert most_alive[0] == 0  # streamed: none kept from one chunk to the next
    assert len(made) - n_before > 2 * X_dask.numblocks[0]  # a pass per step
    # the same float64 cosines, the same sums in chunk order
    assert_array_equal(starts[1], starts[0])


def test_persisted_chunks_keep_no_cosines_that_outweigh_them(sync, monkeypatch):
    # Persisted chunks are sized by their rows; the start's kept cosines are
    # 8 K bytes a row more (with 5 float32 features and 30 classes, 240
    # against 28). Where rows and cosines together fail the persist rule the
    # start keeps none, and steps as streamed chunks do.
    made, most_alive = [], [0]

    def problem_spy(*args):
        most_alive[0] = max(most_alive[0], sum(ref() is not None for ref in made))
        problem = chunk_intercept_problem(*args)
        made.append(weakref.ref(problem))
        return problem

    chunk_intercept_problem = dask_objective.chunk_intercept_problem
    monkeypatch.setattr(dask_objective, "chunk_intercept_problem", problem_spy)
    monkeypatch.setattr(dask_module, "persist_chunks", None)
    # the memory rule, by columns: the rows (6 with the lift) pass, and with
    # the cosines of 3 classes (6 more), not those of 30 (60 more)
    monkeypatch.setattr(dask_module, "_should_persist", lambda n, c, size: c <= 20)
    for n_classes, kept in ((3, True), (30, False)):
        X, y = _data(n=600, n_classes=n_classes)
        X_dask, y_dask = _dask(X.astype(np.float32), y)
        made.clear()
        most_alive[0] = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # max_iter=1: only the start
            MarginSoftmaxClassifier(max_iter=1).fit(X_dask, y_dask)
        assert (most_alive[0] == X_dask.numblocks[0] - 1) is kept
        assert (len(made) == X_dask.numblocks[0]) is kept


def test_warm_start_refit_on_dask(sync):
    X, y = _data()
    X_dask, y_dask = _dask(X, y)
    clf = MarginSoftmaxClassifier(random_state=0, warm_start=True).fit(X_dask, y_dask)
    reference = MarginSoftmaxClassifier(random_state=0, warm_start=True).fit(X, y)
    cold_iterations = reference.n_iter_
    clf.fit(X_dask, y_dask)
    reference.fit(X, y)
    # the warm start was taken, by both (a cold refit repeats the first count)
    assert clf.n_iter_ == reference.n_iter_ < cold_iterations
    assert_allclose(clf.predict_proba(X), reference.predict_proba(X), atol=1e-6)
    assert clf.n_features_in_ == X.shape[1]


def test_prediction_methods_return_lazy_arrays(sync):
    X, y = _data(n_classes=2)
    labels = np.array(["no", "yes"])[y]
    clf = MarginSoftmaxClassifier(random_state=0).fit(*_dask(X, labels))
    assert_array_equal(clf.classes_, ["no", "yes"])
    X_dask = _dask(X)[0]
    for method in (
        "predict",
        "decision_function",
        "predict_proba",
        "predict_log_proba",
    ):
        lazy = getattr(clf, method)(X_dask)
        assert isinstance(lazy, da.Array)
        expected = getattr(clf, method)(X)
        assert lazy.shape == expected.shape
        assert_array_equal(lazy.compute(), expected)
    # The open-set score by the same chunk-wise path (its float64 rows).
    lazy = dask_module.predict_dask(clf, "score_samples", X_dask)
    assert lazy.dtype == np.float64 and lazy.shape == (X.shape[0],)
    assert_array_equal(lazy.compute(), clf.score_samples(X))


def test_predict_warns_once_per_chunk_not_for_the_probe(sync):
    # Fitted with feature names, predicting on a Dask array (no names): each
    # chunk warns as the in-memory method does; the client's shape probe adds
    # no warning of its own.
    pd = pytest.importorskip("pandas")
    X, y = _data()
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    clf = MarginSoftmaxClassifier(random_state=0).fit(frame, y)
    X_dask = _dask(X)[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lazy = clf.predict_proba(X_dask)
        assert not caught
        lazy.compute()
    assert len(caught) == X_dask.numblocks[0]
    assert all("feature names" in str(w.message) for w in caught)


def test_cluster_sv_softmax_matches_in_memory(cluster_client, monkeypatch):
    # SV-Softmax's masks stay on the workers between rounds.
    unpinned = []

    def holders_spy(nodes):
        found = holders(nodes)
        if nodes and "chunk_intercept_problem" in str(nodes[0].key):
            unpinned.append(sum(h is None for h in found))
        return found

    holders = dask_objective._holders
    monkeypatch.setattr(dask_objective, "_holders", holders_spy)
    X, y = _data(n=300)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, len(y))
    clf = MarginSoftmaxClassifier(loss="am-softmax", t=1.2, random_state=0)
    expected = clf.fit(X, y, sample_weight=weights).predict_proba(X)
    fitted = MarginSoftmaxClassifier(**clf.get_params()).fit(
        *_dask(X, y, chunks=150), sample_weight=weights
    )
    assert_allclose(fitted.predict_proba(_dask(X)[0]).compute(), expected, atol=1e-6)
    assert fitted._fit_stats["n_evaluations"] > 0
    # The start's steps run where the chunk's bias problem lies, from the
    # first (which ran before it existed: unpinned, then copied to others).
    assert unpinned and not any(unpinned)


def test_cluster_kernel_matches_in_memory(cluster_client):
    X, y = _data(n=300)
    clf = KernelMarginSoftmaxClassifier(
        n_components=50, kernel_approximation="orf", random_state=0
    )
    expected = clf.fit(X, y).predict_proba(X)
    fitted = KernelMarginSoftmaxClassifier(**clf.get_params()).fit(
        *_dask(X, y, chunks=150)
    )
    assert_allclose(fitted.predict_proba(_dask(X)[0]).compute(), expected, atol=1e-6)
    assert_allclose(
        fitted.feature_map_.random_weights_, clf.feature_map_.random_weights_
    )


# -- issue 19, item 7: the Nystroem centres are the in-memory fit's ----------
@pytest.mark.parametrize("centres", ["uniform", "kmeans", "rpcholesky"])
@pytest.mark.parametrize(
    "n, n_components, weighted, chunks",
    [
        (40, 20, True, 10),  # every chunk below n_components, union above it
        (1500, 40, False, 300),  # every chunk above n_components
        (600, 30, True, 100),
    ],
)
def test_nystroem_selects_the_in_memory_centres(
    sync, centres, n, n_components, weighted, chunks
):
    X, y = _data(n=n)
    X = np.vstack([X, X[:7]])  # rows repeated across chunks
    y = np.r_[y, y[:7]]
    rng = np.random.default_rng(1)
    weights = rng.uniform(0.0, 5.0, len(y)) * (rng.uniform(size=len(y)) > 0.2)
    fit_kwargs = {"sample_weight": weights} if weighted else {}
    # The centres are this test's subject: rows as given (no learned metric,
    # whose pilot the Dask and in-memory fits reach within round-off only).
    params = dict(
        n_components=n_components, centres=centres, metric=None, random_state=0
    )
    expected = KernelMarginSoftmaxClassifier(class_weight="balanced", **params)
    expected.fit(X, y, **fit_kwargs)
    X_dask, y_dask, w_dask = _dask(X, y, weights, chunks=chunks)
    fitted = KernelMarginSoftmaxClassifier(**expected.get_params()).fit(
        X_dask, y_dask, **({"sample_weight": w_dask} if weighted else {})
    )
    assert not fitted.nystroem_basis_sampled_
    assert_allclose(
        fitted.feature_map_.components_,
        expected.feature_map_.components_,
        rtol=1e-12,
        atol=1e-12,
    )
    assert_allclose(fitted.predict_proba(X), expected.predict_proba(X), atol=1e-6)


def test_nystroem_float32_and_float64_take_the_same_centres():
    X, y = _data(n=300)
    # No learned metric: its float32 pilot moves the rows the centres are.
    params = dict(n_components=40, metric=None, random_state=0)
    fits = [
        KernelMarginSoftmaxClassifier(**params).fit(X.astype(dtype), y)
        for dtype in (np.float64, np.float32)
    ]
    assert_allclose(
        fits[1].feature_map_.components_, fits[0].feature_map_.components_, rtol=1e-6
    )


def test_adaptive_centres_beyond_the_gather_budget_warn(sync, monkeypatch):
    import sklmargin.integrations.dask._features as features_module

    X, y = _data(n=400)
    monkeypatch.setattr(features_module, "_GATHER_BYTES", 100 * X.shape[1] * 8)
    X_dask, y_dask = _dask(X, y)
    params = dict(n_components=30, random_state=0)
    with pytest.warns(UserWarning, match="uniform sample of 100"):
        kmeans = KernelMarginSoftmaxClassifier(centres="kmeans", **params)
        kmeans.fit(X_dask, y_dask)
    assert kmeans.nystroem_basis_sampled_
    assert kmeans.feature_map_.components_.shape == (30, X.shape[1])
    # The uniform draw needs no rows but the chosen ones: still the in-memory one.
    expected = KernelMarginSoftmaxClassifier(**params).fit(X, y)
    uniform = KernelMarginSoftmaxClassifier(**params).fit(X_dask, y_dask)
    assert not uniform.nystroem_basis_sampled_
    assert_array_equal(
        uniform.feature_map_.components_, expected.feature_map_.components_
    )


def test_cluster_nystroem_selects_the_in_memory_centres(cluster_client):
    # The (hash, weight) pairs and the chosen rows travel between processes.
    X, y = _data(n=300)
    weights = np.random.default_rng(3).uniform(0.0, 3.0, len(y))
    clf = KernelMarginSoftmaxClassifier(
        n_components=40, centres="rpcholesky", random_state=0
    )
    expected = clf.fit(X, y, sample_weight=weights).predict_proba(X)
    fitted = KernelMarginSoftmaxClassifier(**clf.get_params()).fit(
        *_dask(X, y, weights, chunks=100)
    )
    assert_array_equal(fitted.feature_map_.components_, clf.feature_map_.components_)
    assert_allclose(fitted.predict_proba(_dask(X)[0]).compute(), expected, atol=1e-6)


def _with_nan(X):
    X = X.copy()
    X[3, 1] = np.nan
    return X


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda X, y, w: (_with_nan(X), y, w), "NaN"),
        (lambda X, y, w: (X, y, -w), "Negative"),
        (lambda X, y, w: (X, y, 0 * w), "sums to zero"),
        (lambda X, y, w: (X, np.zeros_like(y), w), "only one class"),
        (lambda X, y, w: (X, y[:-1], w), "shape"),
        (lambda X, y, w: (X, y + 0.5, w), "continuous"),
    ],
)
def test_bad_input_raises(sync, change, match):
    X, y = _data(n=100)
    X, y, w = change(X, y, np.ones(len(y)))
    with pytest.raises(ValueError, match=match):
        MarginSoftmaxClassifier().fit(da.from_array(X, chunks=30), y, sample_weight=w)


def _near_overflow(n):
    top = np.finfo(np.float64).max
    w = np.zeros(n)
    w[:6] = [top / 2, 2.0**968, 2.0**968, top / 2, 2.0**968, 2.0**968]
    return w


@pytest.mark.parametrize(
    ("weights", "class_weight"),
    [
        (lambda w: np.where(np.arange(len(w)) == 70, np.nan, w), None),
        (lambda w: np.where(np.arange(len(w)) == 70, np.inf, w), None),
        (lambda w: np.where(np.arange(len(w)) == 70, -1.0, w), None),
        (lambda w: 0 * w, None),
        (lambda w: 0 * w, "balanced"),
        (lambda w: w, {0: 0.0, 1: 0.0, 2: 0.0}),
        # each weight finite, their total not: refused before the fit
        (lambda w: 1e308 * w, None),
        # a float sum of exactly the largest float, an exact total half an
        # ulp beyond it (which rounds to infinity): decided on the exact one
        (lambda w: _near_overflow(len(w)), None),
        (lambda w: 1e308 * w, "balanced"),
        (lambda w: 1e307 * w, {0: 1.0, 1: 10.0, 2: 10.0}),
    ],
)
def test_weight_errors_are_the_in_memory_ones(sync, weights, class_weight):
    """The chunks' weight extremes meet the in-memory rule: the same message."""
    X, y = _data(n=100)
    w = weights(np.ones(len(y)))
    clf = MarginSoftmaxClassifier(class_weight=class_weight)
    with pytest.raises(ValueError) as in_memory:
        clf.fit(X, y, sample_weight=w)
    with pytest.raises(ValueError) as on_dask:
        clf.fit(da.from_array(X, chunks=30), y, sample_weight=w)
    assert str(on_dask.value) == str(in_memory.value)


def test_a_one_row_chunk_counts_its_weight_once(sync):
    # The chunks' weight extremes are no weights: a one-row chunk's minimum
    # and maximum are its one weight, and their sum made a finite total of
    # 1e308 look infinite on Dask only.
    X, y = _data(n=100)
    w = np.ones(len(y))
    w[0] = 1e308
    clf = MarginSoftmaxClassifier(max_iter=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (max_iter=3)
        clf.fit(X, y, sample_weight=w)
        clf.fit(da.from_array(X, chunks=((1, 99), 2)), y, sample_weight=w)


@pytest.mark.parametrize("loss", ["am-softmax", "a-softmax", "softmax"])
def test_logit_scale_beyond_the_dtype_is_refused_as_in_memory(sync, loss):
    """float32 logits cannot hold s = 1e37 (times |x| for A-Softmax)."""
    X, y = _data(n=100)
    X = X.astype(np.float32)
    clf = MarginSoftmaxClassifier(loss=loss, s=1e37, max_iter=5)
    with pytest.raises(ValueError, match="logit scale") as in_memory:
        clf.fit(X, y)
    with pytest.raises(ValueError, match="logit scale") as on_dask:
        clf.fit(*_dask(X, y))
    assert str(on_dask.value) == str(in_memory.value)


def test_other_dask_collections_and_shapes_are_rejected(sync):
    X, y = _data(n=60)
    clf = MarginSoftmaxClassifier(random_state=0).fit(*_dask(X, y))
    with pytest.raises(ValueError, match="features"):
        clf.predict(da.from_array(X[:, :3], chunks=20))
    unknown = da.from_array(X, chunks=20)[da.from_array(y, chunks=20) > 0]
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        MarginSoftmaxClassifier().fit(unknown, y[y > 0])
    bag = pytest.importorskip("dask.bag").from_sequence([1, 2])
    with pytest.raises(TypeError, match="dask.array"):
        MarginSoftmaxClassifier().fit(bag, y)


def test_core_does_not_import_dask():
    code = (
        "import sys, numpy as np\n"
        "from sklmargin import KernelMarginSoftmaxClassifier\n"
        "X = np.random.default_rng(0).normal(size=(40, 3)); y = np.arange(40) % 2\n"
        "KernelMarginSoftmaxClassifier(n_components=20).fit(X, y).predict(X)\n"
        "print(any(m == 'dask' or m.startswith('dask.') for m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_documented_example_runs(capsys):
    page = Path(__file__).resolve().parent.parent / "docs" / "larger_than_memory.rst"
    if not page.is_file():
        pytest.skip("docs/larger_than_memory.rst is not in this checkout")
    block = re.search(
        r"Example\n=+\n\n\.\. code-block:: python\n\n((?:   .*\n|\n)+)",
        page.read_text(),
    ).group(1)
    code = "\n".join(line[3:] for line in block.splitlines())
    # Loopback only; the dashboard on any free loopback port.
    code = code.replace(
        "LocalCluster(", 'LocalCluster(dashboard_address="127.0.0.1:0", '
    )
    exec(compile(code, str(page), "exec"), {})
    gap = float(capsys.readouterr().out.split()[-1])
    assert gap < 1e-6
