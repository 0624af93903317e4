"""ONNX export: the graph's labels and probabilities equal the estimator's.

Needs the ``onnx`` extra (skl2onnx, onnxruntime); the tests that do skip without
it. The description tests check the one function that reads fitted attributes
against ``decision_function`` with NumPy only.
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklmargin import (
    KernelMarginSoftmaxClassifier,
    MarginSoftmaxClassifier,
    RandomFourierFeatures,
    registered_margins,
)
from sklmargin.losses._additive import AMSoftmax
from sklmargin.objective._description import (
    _logit_description,
    _logits_from_description,
)

LOSSES = [margin.name for margin in registered_margins()]
COSINE_LOSSES = [margin.name for margin in registered_margins() if margin.normalizes_X]
# float32 probabilities: the brief's bar; float64 is exact up to rounding.
# float32: the runtime's distances and exponentials round differently from
# NumPy's; the kernel models' learned metric (a larger "scale" gamma on the
# shrunk columns) amplifies that to ~1e-5 (1.0e-5 seen once in 360 entries).
PROBA_TOL = {np.float32: 3e-5, np.float64: 1e-12}


def _data(n_classes, dtype, seed=0):
    X, y = make_classification(
        n_samples=120,
        n_features=5,
        n_informative=4,
        n_redundant=0,
        n_classes=n_classes,
        random_state=seed,
    )
    return X.astype(dtype), y


def _fit(estimator, X, y):
    # Short fits keep the suite fast; convergence is irrelevant to export.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator.fit(X, y)


def _run(model, X):
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return session.run(None, {session.get_inputs()[0].name: X})


def _assert_same_predictions(estimator, X, **kwargs):
    pytest.importorskip("skl2onnx")
    from sklmargin import to_onnx

    labels, proba = _run(to_onnx(estimator, X, **kwargs), X)
    np.testing.assert_array_equal(labels, estimator.predict(X))
    assert proba.dtype == X.dtype
    np.testing.assert_allclose(
        proba, estimator.predict_proba(X), rtol=0, atol=PROBA_TOL[X.dtype.type]
    )


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_classifier(loss, n_classes, dtype):
    X, y = _data(n_classes, dtype)
    clf = _fit(MarginSoftmaxClassifier(loss=loss, max_iter=30), X, y)
    _assert_same_predictions(clf, X)


@pytest.mark.parametrize("loss", ["am-softmax", "softmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pipeline_with_scaler(loss, dtype):
    X, y = _data(3, dtype, seed=1)
    X = X * 10 + 3  # so that the scaler matters
    pipe = _fit(
        make_pipeline(StandardScaler(), MarginSoftmaxClassifier(loss=loss)), X, y
    )
    _assert_same_predictions(pipe, X)


@pytest.mark.parametrize("approximation", ["orf", "rff"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_classifier(approximation, n_classes, dtype):
    X, y = _data(n_classes, dtype, seed=2)
    clf = KernelMarginSoftmaxClassifier(
        n_components=41,  # odd: exercises the random-phase column
        kernel_approximation=approximation,
        random_state=0,
        max_iter=30,
    )
    _assert_same_predictions(_fit(clf, X, y), X)


@pytest.mark.parametrize("loss", ["a-softmax", "softmax"])
def test_kernel_classifier_other_losses(loss):
    X, y = _data(3, np.float32, seed=3)
    clf = KernelMarginSoftmaxClassifier(
        loss=loss, n_components=40, constant_feature=1.0, random_state=0, max_iter=30
    )
    _assert_same_predictions(_fit(clf, X, y), X)


@pytest.mark.parametrize("n_components", [1, 2, 17])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_fourier_features(n_components, dtype):
    pytest.importorskip("skl2onnx")
    from sklmargin import to_onnx

    X, _ = _data(2, dtype)
    rff = RandomFourierFeatures(n_components=n_components, random_state=0).fit(X)
    (Z,) = _run(to_onnx(rff, X), X)
    assert Z.dtype == dtype
    np.testing.assert_allclose(Z, rff.transform(X), rtol=0, atol=PROBA_TOL[dtype])


def test_string_labels_and_zipmap():
    pytest.importorskip("skl2onnx")
    from sklmargin import to_onnx

    X, y = _data(3, np.float32)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    clf = _fit(MarginSoftmaxClassifier(max_iter=30), X, names)
    labels, proba = _run(to_onnx(clf, X), X)
    np.testing.assert_array_equal(labels, clf.predict(X))
    labels, dicts = _run(to_onnx(clf, X, zipmap=True), X)
    expected = clf.predict_proba(X)
    assert list(dicts[0]) == list(clf.classes_)
    got = np.array([[row[c] for c in clf.classes_] for row in dicts])
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("centres", ["uniform", "kmeans"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_classifier_on_nystroem_features(centres, dtype):
    X, y = _data(3, dtype, seed=5)
    clf = KernelMarginSoftmaxClassifier(
        n_components=25, centres=centres, random_state=0, max_iter=30
    )
    _assert_same_predictions(_fit(clf, X, y), X)


@pytest.mark.parametrize("loss", COSINE_LOSSES)
@pytest.mark.parametrize("constant_feature", [1.0, None])
@pytest.mark.parametrize(
    "dtype, factor",
    [
        (np.float32, 1e19),
        (np.float32, 1e30),
        (np.float32, 1e-25),
        (np.float64, 1e200),
        (np.float64, 1e-200),
    ],
)
def test_huge_and_tiny_rows_give_the_python_predictions(
    loss, constant_feature, dtype, factor
):
    """Issue 19, item 5: squared rows overflowed (underflowed) in the graph."""
    X, y = _data(3, np.float64, seed=6)
    clf = _fit(
        MarginSoftmaxClassifier(
            loss=loss, constant_feature=constant_feature, max_iter=30
        ),
        X.astype(dtype),
        y,
    )
    X_extreme = np.vstack([X * factor, np.zeros((1, X.shape[1]))]).astype(dtype)
    _assert_same_predictions(clf, X_extreme)


class _ClippedScale(AMSoftmax):
    """A user's scale that the old probe at |x| = 1, 2.5, 4 saw as constant."""

    name = "am-clipped-scale"

    def logit_scale(self, s, norms, w_norm):
        return s * np.clip(norms, 0.1, 1.0)[:, None]


class _BatchScale(AMSoftmax):
    """A user's scale that depends on the other rows of the batch."""

    name = "am-batch-scale"

    def logit_scale(self, s, norms, w_norm):
        return s * np.full((len(norms), 1), np.median(norms))


class _PerClassRowScale(AMSoftmax):
    """A user's scale s_j |x|: exportable (per-class factors, linear in x)."""

    name = "am-per-class-row-scale"
    normalizes_X = False

    def logit_scale(self, s, norms, w_norm):
        return norms[:, None] * (s * np.arange(1.0, len(w_norm) + 1.0))[None, :]


@pytest.mark.parametrize("margin", [_ClippedScale(), _BatchScale()])
def test_a_scale_rule_the_graph_cannot_follow_is_refused(margin):
    """Issue 19, item 6: exported silently, probabilities off by up to 0.82."""
    pytest.importorskip("skl2onnx")
    from sklmargin import to_onnx

    X, y = _data(3, np.float64, seed=7)
    clf = _fit(MarginSoftmaxClassifier(loss=margin, s=10.0, max_iter=30), X, y)
    with pytest.raises(NotImplementedError, match=r"logit_scale is neither"):
        to_onnx(clf, X)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_users_proportional_scale_is_exported(dtype):
    X, y = _data(3, dtype, seed=7)
    clf = MarginSoftmaxClassifier(loss=_PerClassRowScale(), s=2.0, max_iter=30)
    _assert_same_predictions(_fit(clf, X, y), X * dtype(3.0))


def test_unfitted_estimator_is_rejected():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        _logit_description(MarginSoftmaxClassifier())


@pytest.mark.parametrize(
    "make",
    [
        MarginSoftmaxClassifier,
        KernelMarginSoftmaxClassifier,
        RandomFourierFeatures,
        lambda: make_pipeline(StandardScaler(), MarginSoftmaxClassifier()),
    ],
)
def test_to_onnx_of_an_unfitted_estimator_raises_not_fitted(make):
    """Issue 19, item 4: skl2onnx's RuntimeError surfaced instead."""
    pytest.importorskip("skl2onnx")
    from sklearn.exceptions import NotFittedError

    from sklmargin import to_onnx

    X = np.zeros((2, 3), dtype=np.float32)
    with pytest.raises(NotFittedError):
        to_onnx(make(), X)


def test_skl2onnx_on_an_unfitted_estimator_raises_not_fitted():
    """The registered shape calculators check too, for ``skl2onnx`` callers.

    (With ``zipmap=True`` skl2onnx's own parser reads the classes first.)
    """
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.exceptions import NotFittedError

    from sklmargin.integrations.onnx._export import register_onnx_converters

    register_onnx_converters()
    X = np.zeros((2, 3), dtype=np.float32)
    clf = MarginSoftmaxClassifier()
    with pytest.raises(NotFittedError):
        skl2onnx.to_onnx(clf, X, options={id(clf): {"zipmap": False}})
    with pytest.raises(NotFittedError):
        skl2onnx.to_onnx(RandomFourierFeatures(), X)


# -- the description alone (NumPy, no ONNX needed) ------------------------------
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("constant_feature", [1.0, None])
def test_description_reproduces_decision_function(loss, constant_feature):
    X, y = _data(3, np.float64, seed=4)
    clf = _fit(
        MarginSoftmaxClassifier(
            loss=loss, constant_feature=constant_feature, max_iter=30
        ),
        X,
        y,
    )
    logits = _logits_from_description(_logit_description(clf), X)
    np.testing.assert_allclose(logits, clf.decision_function(X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("approximation", "metric"),
    [("nystroem", "diagonal"), ("nystroem", "full"), ("rff", "diagonal")],
)
def test_description_of_kernel_estimator(approximation, metric):
    X, y = _data(2, np.float64, seed=5)
    clf = KernelMarginSoftmaxClassifier(
        n_components=31, kernel_approximation=approximation, metric=metric,
        random_state=0,
    )  # fmt: skip
    clf = _fit(clf, X, y)
    assert clf.input_transform_.ndim == (1 if metric == "diagonal" else 2)
    logits = _logits_from_description(_logit_description(clf), X)
    np.testing.assert_allclose(
        logits[:, 1] - logits[:, 0], clf.decision_function(X), rtol=1e-12, atol=1e-12
    )


def test_core_import_does_not_load_optional_packages():
    code = (
        "import sys, sklmargin; "
        "bad = [m for m in ('skl2onnx', 'onnx', 'onnxruntime', 'skops', 'shap') "
        "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
