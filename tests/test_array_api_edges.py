"""Edge cases of the array API path found in review, each a regression test.

Skips (naming the package) without torch or array-api-strict, and without
scipy's array API mode (conftest.py sets ``SCIPY_ARRAY_API=1``).
"""

import os

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.datasets import make_classification

from sklmargin import (
    KernelMarginSoftmaxClassifier,
    MarginSoftmaxClassifier,
    MarginSoftmaxClassifierCV,
    OpenSetClassifier,
    RandomFourierFeatures,
)

pytestmark = pytest.mark.skipif(
    os.environ.get("SCIPY_ARRAY_API") != "1",
    reason="scikit-learn's array_api_dispatch needs SCIPY_ARRAY_API=1",
)


@pytest.fixture
def data():
    X, y = make_classification(
        n_samples=60, n_features=4, n_informative=3, n_redundant=0, random_state=0
    )
    return X, y


def test_numpy_typed_namespace_fits_like_cupy(data, monkeypatch):
    """CuPy's dtypes are NumPy's scalar types (cupy.float64 is numpy.float64).

    array_api_compat's NumPy namespace has the same property and runs without
    a GPU: the fit used to fail with 'data type "float64'>" not understood'.
    The device fit is forced on NumPy rows by naming that namespace as X's.
    """
    from sklmargin._utils.array_api import numpy_dtype
    from sklmargin._utils.compat import array_api_compat
    from sklmargin.estimators import _fit_path

    xp = array_api_compat.array_namespace(np.zeros(1))
    assert numpy_dtype(xp.float64) == np.dtype("float64")
    X, y = data
    monkeypatch.setattr(_fit_path, "get_namespace", lambda X, **_: (xp, "cpu"))
    fitted = MarginSoftmaxClassifier().fit(X, y)
    monkeypatch.undo()
    reference = MarginSoftmaxClassifier().fit(X, y)
    np.testing.assert_allclose(fitted.coef_, reference.coef_, rtol=1e-10, atol=1e-12)


def test_numpy_warm_refit_of_a_device_model(data):
    xps = pytest.importorskip("array_api_strict", reason="needs array-api-strict")
    X, y = data
    device = xps.Device("device1")
    clf = MarginSoftmaxClassifier(warm_start=True)
    with sklearn.config_context(array_api_dispatch=True):
        clf.fit(xps.asarray(X, device=device), xps.asarray(y, device=device))
        # used to raise "Can't convert array on device1 to a NumPy array"
        clf.fit(X, y)
    assert isinstance(clf.coef_, np.ndarray)
    cold = MarginSoftmaxClassifier().fit(X, y)
    np.testing.assert_array_equal(clf.predict(X), cold.predict(X))


def test_uint64_labels_predict_on_torch(data):
    torch = pytest.importorskip("torch", reason="needs torch")
    X, y = data
    labels = y.astype(np.uint64) + np.uint64(2**63)
    reference = MarginSoftmaxClassifier().fit(X, labels).predict(X)
    with sklearn.config_context(array_api_dispatch=True):
        clf = MarginSoftmaxClassifier().fit(torch.asarray(X), torch.asarray(labels))
        predicted = clf.predict(torch.asarray(X))  # torch has no uint64 index_select
    assert predicted.dtype == torch.uint64
    np.testing.assert_array_equal(predicted.numpy(), reference)


def test_open_set_classifier_refuses_device_rows_by_name(data):
    torch = pytest.importorskip("torch", reason="needs torch")
    X, y = data
    with sklearn.config_context(array_api_dispatch=True):
        with pytest.raises(ValueError, match="OpenSetClassifier takes NumPy arrays"):
            OpenSetClassifier(MarginSoftmaxClassifier(), cv=3).fit(
                torch.asarray(X), torch.asarray(y)
            )
        fitted = OpenSetClassifier(MarginSoftmaxClassifier(), cv=3).fit(X, y)
        with pytest.raises(ValueError, match="X.cpu\\(\\).numpy\\(\\)"):
            fitted.predict(torch.asarray(X))


@pytest.mark.parametrize("value", [0.1, 0.3, 7.7])
def test_gamma_scale_of_constant_weighted_data_is_one(value):
    """Round-off of the weighted mean is no variance (gamma_ was up to 1e33)."""
    X = np.full((1000, 3), value)
    weights = np.random.default_rng(0).uniform(0.1, 2.0, 1000)
    rff = RandomFourierFeatures(n_components=4, random_state=0)
    assert rff.fit(X, sample_weight=weights).gamma_ == 1.0
    assert rff.fit(X).gamma_ == 1.0


def _vendored_compat(monkeypatch):
    """Make sklmargin see scikit-learn's vendored array-api-compat (1.15 in 1.9).

    That copy is what users without the ``array-api`` extra get; its torch
    ``maximum``/``minimum`` pass Python scalars on to torch, which refuses
    them (TypeError on torch 2.13 and 2.14).
    """
    import sys

    vendored = pytest.importorskip("sklearn.externals.array_api_compat")
    for name, module in list(sys.modules.items()):
        if name.startswith("sklmargin") and hasattr(module, "array_api_compat"):
            monkeypatch.setattr(module, "array_api_compat", vendored)


_EVERY_MARGIN = [
    MarginSoftmaxClassifier(loss=loss, random_state=0)
    for loss in ("softmax", "am-softmax", "arcface", "l-softmax", "a-softmax")
] + [
    MarginSoftmaxClassifier(t=1.2, random_state=0),
    KernelMarginSoftmaxClassifier(n_components=20, random_state=0),
    KernelMarginSoftmaxClassifier(
        kernel_approximation="orf", n_components=20, random_state=0
    ),
    MarginSoftmaxClassifierCV(loss="normface", ss=[5.0, 20.0], cv=3),
]


@pytest.mark.parametrize(
    "estimator", _EVERY_MARGIN, ids=lambda value: repr(value)[:50].replace(" ", "")
)
def test_torch_with_scikit_learns_vendored_array_api_compat(
    data, estimator, monkeypatch
):
    """Issue 27: every fit failed with ``maximum(): argument 'other' ... float``.

    The namespace code passes Python scalars only where the 2023.12 standard
    allows them (``clip`` bounds, operators), so the vendored copy fits and
    predicts exactly as the installed array-api-compat does.
    """
    torch = pytest.importorskip("torch", reason="needs torch")
    X, y = data
    methods = ("predict", "predict_proba", "decision_function", "score_samples")

    def run():
        with sklearn.config_context(array_api_dispatch=True):
            fitted = clone(estimator).fit(torch.asarray(X), torch.asarray(y))
            return {m: getattr(fitted, m)(torch.asarray(X)).numpy() for m in methods}

    reference = run()
    _vendored_compat(monkeypatch)
    vendored = run()
    for method in methods:
        # the same torch operations: equal to the last bits up to library
        # wrappers' order of operations
        np.testing.assert_allclose(
            vendored[method], reference[method], rtol=1e-12, atol=1e-14
        )


def _host_and_deviceless_objectives(X, y, settings, params, xp, device, monkeypatch):
    """The NumPy objective's finite ``loss_gradient`` at ``params``, and the
    objective of the same rows in ``xp`` on an emulated device without float64.
    """
    import sklmargin._utils.array_api as array_api
    from sklmargin.objective import LinearMarginObjective
    from sklmargin.objective._rows import prepare_rows

    on_host = LinearMarginObjective(prepare_rows(X, normalize=False), y, *settings)
    expected = on_host.loss_gradient(params)
    assert np.isfinite(expected[0]) and np.all(np.isfinite(expected[1]))
    monkeypatch.setattr(array_api, "float64_supported", lambda xp, device: False)
    rows = prepare_rows(xp.asarray(X, device=device), normalize=False)
    objective = LinearMarginObjective(rows, xp.asarray(y, device=device), *settings)
    return expected, objective


# Float32 rows of 1e20 overflow by construction: the guard must keep every
# result finite (array-api-strict may say so in a RuntimeWarning).
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("namespace", ["array_api_strict", "torch"])
@pytest.mark.parametrize("trial", ["finite raw logits", "overflowing raw logits"])
def test_softmax_far_trials_on_a_device_without_float64(namespace, trial, monkeypatch):
    """Defect d7 and its overflowing sibling, on a device without float64.

    On float32 rows of 1e20, a trial's raw logits either overflow float32
    (widened on the host by the NumPy fit) or stay finite near float32's top
    and the scale ``t = 4`` overflows them (d7). Where the device has no
    float64 (Apple's MPS, emulated), the objective has no wider dtype there:
    it used to return inf/NaN; it now evaluates the trial on the host as the
    NumPy objective does (the angle losses' far trials already did).
    """
    from sklmargin.losses._registry import get_margin

    if namespace == "torch":
        xp = pytest.importorskip("torch", reason="needs torch")
        device = "cpu"
    else:
        xp = pytest.importorskip("array_api_strict", reason="needs array-api-strict")
        device = xp.Device("CPU_DEVICE")
    rng = np.random.default_rng(0)
    n, d, k = 30, 4, 3
    X = (rng.standard_normal((n, d)) * 1e20).astype(np.float32)
    y = np.arange(n) % k
    settings = (k, np.ones(n), get_margin("softmax"), 0.0, 4.0, 1.0, True)
    # The largest raw logit: 1e38 is finite in float32 (whose top is 3.4e38)
    # and beyond it times t = 4; 1e39 is inf there.
    top = 1e38 if trial == "finite raw logits" else 1e39
    coef = rng.standard_normal((k, d))
    coef *= top / np.max(np.abs(X.astype(np.float64) @ coef.T))
    params = np.concatenate([coef.ravel(), np.zeros(k)])
    expected, objective = _host_and_deviceless_objectives(
        X, y, settings, params, xp, device, monkeypatch
    )
    value, grad = objective.loss_gradient(params)
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    # the same float64 host evaluation as the NumPy objective's
    np.testing.assert_allclose(value, expected[0], rtol=1e-12)
    np.testing.assert_allclose(grad, expected[1], rtol=1e-12, atol=0)
    assert objective.value_and_state(params)[0] == pytest.approx(value, rel=1e-12)
    bias_problem = objective.intercept_problem(params)
    assert np.isfinite(bias_problem(np.zeros(k))[0])


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_nan_raw_logits_reach_the_host_when_max_skips_nan(monkeypatch):
    """A NaN raw logit on a device without float64 whose ``max`` skips NaN.

    torch's ``max`` on Apple's MPS ignored NaN before macOS 15
    (pytorch#130295). A float32 row of 3e20 against prototypes of +-2e18 gives
    the raw logit ``6e38 - 6e38 = inf - inf = NaN`` beside a finite one; the
    largest magnitude must still read as non-finite, so that the trial goes to
    the host as on the NumPy objective (emulated: no float64, and a ``max``
    that drops NaN).
    """
    from sklmargin.losses._registry import get_margin

    # Whether a float32 GEMM gives NaN or inf for 6e38 - 6e38 depends on its
    # kernel's summation (torch's MKL kernels here: NaN; OpenBLAS: inf), so the
    # rule is also checked directly on a NaN logit, independent of the BLAS.
    xp = pytest.importorskip("torch", reason="needs torch")
    device = "cpu"
    X = np.array([[3e20, 3e20], [1.0, 1.0]], dtype=np.float32)
    y = np.array([0, 1])
    settings = (2, np.ones(2), get_margin("softmax"), 0.0, 1.0, 1.0, True)
    params = np.concatenate([np.array([[2e18, -2e18], [1.0, 1.0]]).ravel(), [0, 0]])
    expected, objective = _host_and_deviceless_objectives(
        X, y, settings, params, xp, device, monkeypatch
    )
    namespace_max = objective.xp.max

    def max_skipping_nan(x, *args, **kwargs):
        return namespace_max(
            objective.xp.where(
                objective.xp.isnan(x), objective.xp.full_like(x, -float("inf")), x
            ),
            *args,
            **kwargs,
        )

    monkeypatch.setattr(objective.xp, "max", max_skipping_nan)
    nan_beside_finite = xp.asarray([[float("nan"), 6e20], [0.0, 2.0]], dtype=xp.float32)
    assert objective._largest_raw_logit(nan_beside_finite) == float("inf")
    value, grad = objective.loss_gradient(params)
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    np.testing.assert_allclose(value, expected[0], rtol=1e-12)
