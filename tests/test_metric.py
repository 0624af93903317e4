"""The kernel estimator's learned input metric (average gradient outer product).

The closed-form input gradients are checked against central differences of
the fitted model's logits; the learned transform against its definition; and
every path that maps rows (NumPy, sparse, array API, Dask, ONNX, pickles)
against the NumPy predictions.
"""

import copy
import os
import pickle
import warnings

import numpy as np
import pytest
import sklearn
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklmargin import KernelMarginSoftmaxClassifier
from sklmargin.estimators._metric import (
    _gradient_blocks,
    average_gradient_outer_product,
    metric_step,
)
from sklmargin.features._gamma import scale_gamma

MAPS = ["nystroem", "orf", "rff"]


def _data(n=150, d=6, seed=0):
    """Labels from the first two columns; the others are noise."""
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, 0] + X[:, 1] ** 2 > 1).astype(int) + (X[:, 0] > 0.8)
    return X, y


def _fit(estimator, X, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator.fit(X, y, **kwargs)


def _input_gradients(model, X):
    """``d logits / d x`` of a fitted pilot (no input transform), closed form."""
    return np.concatenate(list(_gradient_blocks(model, X)), axis=0)


def _central_differences(model, X, h=1e-5):
    """``d logits / d x`` by central differences of the fitted model."""
    logits = model.decision_function  # the logits: _data has three classes
    out = np.empty((X.shape[0], len(model.classes_), X.shape[1]))
    for j in range(X.shape[1]):
        step = np.zeros(X.shape[1])
        step[j] = h
        out[:, :, j] = (logits(X + step) - logits(X - step)) / (2 * h)
    return out


@pytest.mark.parametrize("approximation", MAPS)
@pytest.mark.parametrize(
    "loss, constant_feature, fit_intercept",
    [
        ("am-softmax", None, True),
        ("am-softmax", 1.0, False),
        ("softmax", None, False),
        ("softmax", 1.0, True),
        ("l-softmax", None, True),
        ("a-softmax", 0.5, True),
    ],
)
def test_input_gradients_equal_central_differences(
    approximation, loss, constant_feature, fit_intercept
):
    X, y = _data(n=80, d=3)
    model = _fit(
        KernelMarginSoftmaxClassifier(
            loss=loss,
            kernel_approximation=approximation,
            n_components=21,  # odd: the random-phase column of the Fourier maps
            gamma=0.4,
            constant_feature=constant_feature,
            fit_intercept=fit_intercept,
            compute_dtype="float64",
            metric=None,  # a pilot's gradients: with respect to the map's input
            max_iter=50,
            random_state=0,
        ),
        X,
        y,
    )
    rows = X[:12]
    analytic = _input_gradients(model, rows)
    numeric = _central_differences(model, rows)
    # Central differences at h = 1e-5 are good to ~1e-9 of the largest slope.
    assert_allclose(analytic, numeric, rtol=0, atol=1e-6 * np.abs(numeric).max())


def test_average_gradient_outer_product_is_the_weighted_mean():
    X, y = _data(n=60, d=4)
    model = _fit(
        KernelMarginSoftmaxClassifier(
            n_components=20, compute_dtype="float64", metric=None
        ),
        X,
        y,
    )
    weights = np.random.RandomState(1).uniform(0.1, 2.0, X.shape[0])
    grads = _input_gradients(model, X)
    expected = np.einsum("n,nci,ncj->ij", weights, grads, grads) / weights.sum()
    full = average_gradient_outer_product(model, X, weights, full=True)
    diagonal = average_gradient_outer_product(model, X, weights, full=False)
    assert_allclose(full, expected, rtol=1e-10)
    assert_allclose(diagonal, np.diag(expected), rtol=1e-10)


def test_metric_step_normalises_by_the_largest_eigenvalue():
    rng = np.random.RandomState(0)
    A = rng.standard_normal((5, 5))
    M = A @ A.T
    root = metric_step(M)
    top = np.linalg.eigvalsh(M)[-1]
    assert_allclose(root @ root, M / top, atol=1e-12)
    assert_allclose(root, root.T)
    assert_allclose(metric_step(np.diag(M)), np.sqrt(np.diag(M) / np.diag(M).max()))
    assert metric_step(np.zeros(3)) is None
    assert metric_step(np.zeros((3, 3))) is None


@pytest.mark.parametrize("metric", ["diagonal", "full"])
def test_noise_columns_lose_relevance(metric):
    X, y = _data(n=400, d=6)
    clf = _fit(
        KernelMarginSoftmaxClassifier(n_components=100, metric=metric, random_state=0),
        X,
        y,
    )
    relevance = clf.feature_relevance_
    assert relevance.shape == (6,)
    assert relevance.max() == pytest.approx(1.0)
    # The two informative columns outweigh every noise column.
    assert relevance[:2].min() > 2 * relevance[2:].max()
    if metric == "full":
        assert clf.metric_.shape == (6, 6)
        assert np.linalg.eigvalsh(clf.metric_)[-1] == pytest.approx(1.0)
    else:
        assert not hasattr(clf, "metric_")


@pytest.mark.parametrize("gamma, factor", [("scale", 1.0), ("auto", 2.0)])
@pytest.mark.parametrize("metric", ["diagonal", "full"])
@pytest.mark.parametrize("approximation", ["nystroem", "orf"])
def test_the_map_sees_the_transformed_rows(metric, approximation, gamma, factor):
    X, y = _data()
    clf = _fit(
        KernelMarginSoftmaxClassifier(
            gamma=gamma,
            n_components=40,
            metric=metric,
            metric_steps=2,
            kernel_approximation=approximation,
            random_state=0,
        ),
        X,
        y,
    )
    t = clf.input_transform_
    moved = X * t if metric == "diagonal" else X @ t
    # gamma="scale" is resolved on the transformed rows (as in a Pipeline);
    # "auto" after a metric is twice that.
    expected = factor * scale_gamma(moved, np.ones(len(y)))
    assert clf.feature_map_.gamma_ == pytest.approx(expected)
    logits = clf._logits_of_features(clf.feature_map_.transform(moved))
    assert_allclose(clf.predict_proba(X), clf.predict_proba(X), rtol=0)
    # (three classes: decision_function is the logits)
    assert_allclose(clf.decision_function(X), logits, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("metric", ["diagonal", None])
@pytest.mark.parametrize("dataset", ["wine", "digits"])
def test_a_numeric_gamma_equal_to_the_resolved_one_gives_the_default_model(
    dataset, metric
):
    # A numeric gamma is the width of the final map, in the space of the rows
    # the map sees (after the metric): the metric's pilots never take it. So
    # the default's own resolved width, passed as a float, is the default
    # model (the pilots once applied it to the raw rows: 57 % against 82 %).
    from sklearn.datasets import load_digits, load_wine
    from sklearn.preprocessing import StandardScaler

    loader = load_wine if dataset == "wine" else load_digits
    X, y = loader(return_X_y=True)
    X = StandardScaler().fit_transform(X[:600])
    y = y[:600]
    params = dict(metric=metric, n_components=150, random_state=0)
    default = _fit(KernelMarginSoftmaxClassifier(**params), X, y)
    numeric = _fit(
        KernelMarginSoftmaxClassifier(gamma=default.feature_map_.gamma_, **params),
        X,
        y,
    )
    assert numeric.feature_map_.gamma_ == default.feature_map_.gamma_
    assert_array_equal(numeric.predict(X), default.predict(X))
    if metric is not None:
        assert_allclose(numeric.input_transform_, default.input_transform_)


def test_a_numeric_gamma_does_not_reach_the_metric_pilot():
    # Two numeric widths far apart learn the same metric: the pilot always
    # resolves "scale" on its own rows.
    X, y = _data()
    fits = [
        _fit(
            KernelMarginSoftmaxClassifier(gamma=g, n_components=40, random_state=0),
            X,
            y,
        )
        for g in (1e-3, 1e3)
    ]
    assert_allclose(fits[0].input_transform_, fits[1].input_transform_)


def test_no_metric_and_refits_leave_no_stale_attributes():
    X, y = _data()
    clf = _fit(
        KernelMarginSoftmaxClassifier(n_components=30, metric="full", random_state=0),
        X,
        y,
    )
    assert hasattr(clf, "metric_") and hasattr(clf, "feature_relevance_")
    _fit(clf.set_params(metric=None), X, y)
    assert clf.input_transform_ is None
    assert not hasattr(clf, "metric_") and not hasattr(clf, "feature_relevance_")


def test_a_pickle_from_before_the_metric_predicts_and_clones():
    X, y = _data()
    clf = _fit(
        KernelMarginSoftmaxClassifier(n_components=30, metric=None, random_state=0),
        X,
        y,
    )
    old = copy.copy(clf)  # what an older sklmargin pickled: none of the three
    del old.input_transform_, old.metric, old.metric_steps
    restored = pickle.loads(pickle.dumps(old))
    assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))
    assert_array_equal(restored.score_samples(X), clf.score_samples(X))
    # Its parameters read as the model it was: no metric (a refit equals it).
    assert restored.get_params()["metric"] is None
    refit = _fit(clone(restored), X, y)
    assert_allclose(refit.predict_proba(X), clf.predict_proba(X), rtol=1e-12)


def test_pickle_and_clone_keep_the_metric():
    X, y = _data()
    clf = _fit(
        KernelMarginSoftmaxClassifier(
            n_components=30, metric="diagonal", random_state=0
        ),
        X,
        y,
    )
    again = pickle.loads(pickle.dumps(clf))
    assert_array_equal(again.decision_function(X), clf.decision_function(X))
    assert clone(clf).get_params()["metric"] == "diagonal"


def test_sparse_rows_equal_dense_rows():
    X, y = _data()
    params = dict(
        n_components=30,
        metric="diagonal",
        kernel_approximation="orf",
        compute_dtype="float64",
        random_state=0,
    )
    dense = _fit(KernelMarginSoftmaxClassifier(**params), X, y)
    csr = _fit(KernelMarginSoftmaxClassifier(**params), sparse.csr_matrix(X), y)
    assert_allclose(csr.input_transform_, dense.input_transform_, rtol=1e-10)
    # The final fits run sparse and dense products whose round-off takes
    # L-BFGS along paths that agree to ~1e-7 (it stops at tol, not at the
    # optimum's last bits).
    assert_allclose(
        csr.decision_function(sparse.csr_matrix(X)),
        dense.decision_function(X),
        rtol=1e-6,
        atol=1e-6,
    )


@pytest.mark.parametrize("params", [{"metric": "euclid"}, {"metric_steps": 0}])
def test_invalid_metric_parameters_are_refused(params):
    X, y = _data(n=30)
    with pytest.raises(ValueError, match="metric"):
        KernelMarginSoftmaxClassifier(**params).fit(X, y)


# -- the other paths: Dask, array API, ONNX ---------------------------------------
METRIC_PARAMS = [
    dict(metric="diagonal", metric_steps=2, kernel_approximation="nystroem"),
    dict(metric="full", kernel_approximation="orf", class_weight="balanced"),
]


def _sample_rows(monkeypatch):
    """Make the pilot and the AGOP draw row samples on the tests' small data."""
    import sklmargin.estimators._metric as metric_module

    monkeypatch.setattr(metric_module, "PILOT_ROWS", 150)
    monkeypatch.setattr(metric_module, "AGOP_ROWS", 100)


def _metric_model(params):
    return KernelMarginSoftmaxClassifier(
        n_components=40, compute_dtype="float64", random_state=0, **params
    )


@pytest.mark.parametrize("params", METRIC_PARAMS)
def test_dask_fit_and_predict_equal_numpy(params, monkeypatch):
    da = pytest.importorskip("dask.array")
    _sample_rows(monkeypatch)
    X, y = _data(n=300)
    weights = np.arange(300) % 3 + 0.5  # the pilot's rows carry their weights
    numpy_fit = _fit(_metric_model(params), X, y, sample_weight=weights)
    Xd, yd = da.from_array(X, chunks=(100, -1)), da.from_array(y, chunks=100)
    with pytest.importorskip("dask").config.set(scheduler="synchronous"):
        dask_fit = _fit(
            _metric_model(params), Xd, yd, sample_weight=da.from_array(weights, 100)
        )
        predicted = dask_fit.decision_function(Xd).compute()
        chunked = numpy_fit.predict_proba(Xd).compute()
    assert_allclose(dask_fit.input_transform_, numpy_fit.input_transform_, rtol=1e-10)
    assert_allclose(predicted, numpy_fit.decision_function(X), rtol=1e-7, atol=1e-7)
    assert_allclose(chunked, numpy_fit.predict_proba(X), rtol=1e-12, atol=1e-15)


def _namespaces():
    out = []
    try:
        import array_api_strict

        out.append(pytest.param(array_api_strict, id="array-api-strict"))
    except ImportError:
        pass
    try:
        import torch

        out.append(pytest.param(torch, id="torch"))
    except ImportError:
        pass
    return out


@pytest.mark.skipif(
    os.environ.get("SCIPY_ARRAY_API") != "1",
    reason="scikit-learn's array_api_dispatch needs SCIPY_ARRAY_API=1",
)
@pytest.mark.parametrize("xp", _namespaces())
@pytest.mark.parametrize("params", METRIC_PARAMS)
def test_array_api_fit_and_predict_equal_numpy(xp, params, monkeypatch):
    _sample_rows(monkeypatch)
    X, y = _data(n=200)
    numpy_fit = _fit(_metric_model(params), X, y)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = _fit(_metric_model(params), xp.asarray(X), xp.asarray(y))
        decision = np.asarray(fitted.decision_function(xp.asarray(X)))
        score = np.asarray(fitted.score_samples(xp.asarray(X)))
    assert_allclose(fitted.input_transform_, numpy_fit.input_transform_, rtol=1e-10)
    assert_allclose(decision, numpy_fit.decision_function(X), rtol=1e-7, atol=1e-7)
    assert_allclose(score, numpy_fit.score_samples(X), rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("params", METRIC_PARAMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_onnx_graph_equals_the_estimator(params, dtype):
    pytest.importorskip("skl2onnx")
    ort = pytest.importorskip("onnxruntime")
    from sklmargin import to_onnx

    X, y = _data()
    X = X.astype(dtype)
    clf = _fit(_metric_model(params), X, y)
    session = ort.InferenceSession(
        to_onnx(clf, X).SerializeToString(), providers=["CPUExecutionProvider"]
    )
    labels, proba = session.run(None, {session.get_inputs()[0].name: X})
    assert_array_equal(labels, clf.predict(X))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert_allclose(proba, clf.predict_proba(X), rtol=0, atol=tol)


# -- the CV search with a metric ----------------------------------------------------
@pytest.mark.parametrize("refit", [True, False])
def test_cv_search_learns_the_metric_per_fold_without_the_held_out_rows(refit):
    from sklearn.model_selection import StratifiedKFold

    from sklmargin import KernelMarginSoftmaxClassifierCV

    X, y = _data(n=240)
    params = dict(n_components=40, metric="diagonal", random_state=0)
    search = _fit(
        KernelMarginSoftmaxClassifierCV(
            ss=[30.0, 100.0], cv=3, refit=refit, loss="am-softmax", **params
        ),
        X,
        y,
    )
    # Each model's transform is the estimator's own on the rows it was
    # trained on: all rows for the refit, a fold's training rows (never its
    # held-out rows) for the fold models.
    if refit:
        rows = [np.arange(len(y))]
        models = [search.estimator_]
    else:
        rows = [train for train, _ in StratifiedKFold(3).split(X, y)]
        models = search.estimators_
    for model, train in zip(models, rows, strict=True):
        alone = _fit(KernelMarginSoftmaxClassifier(**params), X[train], y[train])
        assert model.get_params()["metric"] == "diagonal"
        assert_allclose(model.input_transform_, alone.input_transform_, rtol=1e-12)
        # Predictions map raw rows by the transform first.
        assert_allclose(
            model.decision_function(X),
            model._logits_of_features(
                model.feature_map_.transform(X * alone.input_transform_)
            ),
            rtol=1e-10,
            atol=1e-10,
        )
    if refit:
        # gamma's grid is multiples of "scale" on the transformed rows.
        scale = scale_gamma(X * alone.input_transform_, np.ones(len(y)))
        assert min(abs(search.gamma_ / scale - f) for f in (0.5, 1.0, 2.0)) < 1e-9
        assert_array_equal(search.predict(X), search.estimator_.predict(X))


@pytest.mark.skipif(
    os.environ.get("SCIPY_ARRAY_API") != "1",
    reason="scikit-learn's array_api_dispatch needs SCIPY_ARRAY_API=1",
)
def test_cv_search_with_a_metric_on_array_api_equals_numpy():
    xp = pytest.importorskip("array_api_strict")
    from sklmargin import KernelMarginSoftmaxClassifierCV

    X, y = _data(n=240)
    search = KernelMarginSoftmaxClassifierCV(
        n_components=40, metric="diagonal", ss=[30.0, 100.0], random_state=0
    )
    reference = _fit(clone(search), X, y)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = _fit(clone(search), xp.asarray(X), xp.asarray(y))
        proba = np.asarray(fitted.predict_proba(xp.asarray(X)))
    assert fitted.best_index_ == reference.best_index_
    assert_allclose(
        np.asarray(fitted.estimator_.input_transform_),
        reference.estimator_.input_transform_,
        rtol=1e-12,
    )
    assert_allclose(proba, reference.predict_proba(X), atol=1e-6)
