"""Fit and predict on array API inputs (array-api-strict, torch cpu).

Each namespace test skips, naming the package, when it is not installed
(``pip install sklmargin[array-api]`` and torch), and all of them skip when
scipy's array API mode is off (``SCIPY_ARRAY_API=1``, set by conftest.py before
scipy is imported; scikit-learn refuses dispatch without it).

Equality with the NumPy fit is tested where the NumPy fit itself is stable
under round-off: a 2-ulp perturbation of ``X`` moves the NumPy fit's
probabilities by up to 5e-2 for A-Softmax (float64) and by 1e-2 for every
float32 cosine loss (tol * s stops L-BFGS on a path that round-off decides),
so there the objective itself is compared instead, at the same parameters.
"""

import os

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from sklmargin import (
    KernelMarginSoftmaxClassifier,
    KernelMarginSoftmaxClassifierCV,
    MarginSoftmaxClassifier,
    MarginSoftmaxClassifierCV,
    NystroemFeatures,
    RandomFourierFeatures,
)
from sklmargin._utils.array_api import to_numpy
from sklmargin.losses import registered_margins
from sklmargin.losses._support_vectors import with_support_vectors
from sklmargin.objective import LinearMarginObjective
from sklmargin.objective._rows import prepare_rows

pytestmark = pytest.mark.skipif(
    os.environ.get("SCIPY_ARRAY_API") != "1",
    reason="scikit-learn's array_api_dispatch needs SCIPY_ARRAY_API=1 "
    "set before scipy is imported",
)


def _namespace(name):
    """``(xp, device)`` of a test namespace; skips when the package is absent."""
    if name == "array_api_strict":
        xp = pytest.importorskip(
            "array_api_strict", reason="array-api-strict is not installed"
        )
        return xp, xp.Device("CPU_DEVICE")
    torch = pytest.importorskip("torch", reason="torch is not installed")
    torch.set_num_threads(1)  # as the suite's single-threaded BLAS
    if name == "torch_cuda":
        if not torch.cuda.is_available():
            pytest.skip("no CUDA device visible to torch")
        return torch, "cuda"
    return torch, "cpu"


# torch_cuda runs where a GPU is visible (skipped elsewhere, CI included).
NAMESPACES = ["array_api_strict", "torch", "torch_cuda"]


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=300, n_features=8, n_informative=5, n_classes=3, random_state=0
    )
    return StandardScaler().fit_transform(X), y


def _fit_both(estimator, X, y, xp, device):
    reference = clone(estimator).fit(X, y)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = clone(estimator).fit(xp.asarray(X, device=device), xp.asarray(y))
    return reference, fitted


# Configurations whose NumPy fit is stable under round-off (module docstring).
STABLE_FLOAT64 = [
    MarginSoftmaxClassifier(loss=name, random_state=0)
    for name in ("softmax", "normface", "am-softmax", "arcface", "l-softmax")
] + [
    MarginSoftmaxClassifier(loss="arcface", t=1.2, random_state=0),
    # The learned metric's paths are compared in test_metric.py (its pilot
    # moves the final fit's stopping point by ~1e-7 of round-off). 120 centres:
    # with the round-off-stable draw (features._row_keys), the 100-centre fit
    # is one whose probabilities move by 1e-7 under round-off (80, 90, 110 and
    # 120 centres: at most 3e-10).
    KernelMarginSoftmaxClassifier(n_components=120, metric=None, random_state=0),
    KernelMarginSoftmaxClassifier(
        kernel_approximation="orf", n_components=100, metric=None, random_state=0
    ),
]
STABLE_FLOAT32 = [
    MarginSoftmaxClassifier(loss="softmax", random_state=0),
    MarginSoftmaxClassifier(loss="l-softmax", random_state=0),
    KernelMarginSoftmaxClassifier(
        loss="softmax", n_components=100, compute_dtype="float32", random_state=0
    ),
]


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize(
    "estimator, dtype, bound",
    [(est, np.float64, 1e-8) for est in STABLE_FLOAT64]
    + [(est, np.float32, 1e-4) for est in STABLE_FLOAT32],
    ids=lambda value: repr(value)[:60] if not isinstance(value, float) else None,
)
def test_fit_and_predict_equal_the_numpy_fit(data, namespace, estimator, dtype, bound):
    xp, device = _namespace(namespace)
    X, y = data
    X = X.astype(dtype)
    reference, fitted = _fit_both(estimator, X, y, xp, device)
    X_xp = xp.asarray(X, device=device)
    with sklearn.config_context(array_api_dispatch=True):
        outputs = {
            method: getattr(fitted, method)(X_xp)
            for method in (
                "predict",
                "predict_proba",
                "predict_log_proba",
                "decision_function",
                "score_samples",
            )
        }
    for method, output in outputs.items():
        assert type(output) is type(X_xp), method
        assert output.device == X_xp.device, method
    proba = to_numpy(outputs["predict_proba"])
    assert proba.dtype == dtype
    assert np.max(np.abs(proba - reference.predict_proba(X))) <= bound
    np.testing.assert_array_equal(to_numpy(outputs["predict"]), reference.predict(X))
    np.testing.assert_allclose(
        to_numpy(outputs["predict_log_proba"]), np.log(proba), rtol=1e-6
    )
    np.testing.assert_allclose(
        to_numpy(outputs["score_samples"]),
        reference.score_samples(X),
        atol=1e3 * bound,
    )
    # Fitted arrays live on X's device, in the NumPy fit's dtype.
    for name in ("coef_", "intercept_", "constant_coef_"):
        attribute = getattr(fitted, name)
        assert type(attribute) is type(X_xp)
        assert to_numpy(attribute).dtype == getattr(reference, name).dtype


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("t", [1.0, 1.2])
@pytest.mark.parametrize("margin", registered_margins(), ids=lambda m: m.name)
def test_objective_equals_the_numpy_objective(data, namespace, dtype, t, margin):
    """Loss, gradient and SV state at the same parameters, every loss."""
    xp, device = _namespace(namespace)
    X, y = data
    X = X.astype(dtype)
    margin = with_support_vectors(margin, t)
    m, s = margin.resolve(None, None)
    constant = 0.7 if margin.normalizes_X else 0.0
    weights = np.linspace(0.5, 2.0, X.shape[0])
    reference = LinearMarginObjective(
        prepare_rows(X, normalize=margin.uses_angle, constant=constant),
        y, 3, weights, margin, m, s, 0.5, True,
    )  # fmt: skip
    X_xp = xp.asarray(X, device=device)
    rows = prepare_rows(X_xp, normalize=margin.uses_angle, constant=constant)
    objective = LinearMarginObjective(
        rows, xp.asarray(y, device=device), 3, weights, margin, m, s, 0.5, True
    )
    params = np.random.default_rng(0).standard_normal(reference.n_params)
    lam = 10.0 if margin.uses_lambda else 0.0
    value, state = reference.value_and_state(params, lam=lam)
    value_xp, state_xp = objective.value_and_state(params, lam=lam)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    assert value_xp == pytest.approx(value, rel=rtol)
    if state is not None:
        np.testing.assert_array_equal(to_numpy(state_xp.mask), state)
    loss, grad = reference.loss_gradient(params, lam=lam, state=state)
    loss_xp, grad_xp = objective.loss_gradient(params, lam=lam, state=state_xp)
    assert loss_xp == pytest.approx(loss, rel=rtol)
    assert grad_xp.dtype == np.float64
    np.testing.assert_allclose(grad_xp, grad, rtol=0, atol=rtol * np.abs(grad).max())
    assert objective.n_evaluations == 2 and objective.transfer_seconds > 0


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize(
    "feature_map",
    [
        NystroemFeatures(n_components=50, random_state=0),
        RandomFourierFeatures(n_components=51, random_state=0),
    ],
    ids=["nystroem", "rff"],
)
def test_feature_maps_draw_on_the_host_and_map_on_the_device(
    data, namespace, feature_map
):
    xp, device = _namespace(namespace)
    X, _ = data
    weights = np.arange(X.shape[0]) % 3 + 1.0
    expected = clone(feature_map).fit(X, sample_weight=weights).transform(X)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = clone(feature_map).fit(
            xp.asarray(X, device=device), sample_weight=weights
        )
        mapped = fitted.transform(xp.asarray(X, device=device))
    assert type(mapped) is type(xp.asarray(X))
    assert fitted.gamma == feature_map.gamma  # the parameter is left as given
    np.testing.assert_allclose(to_numpy(mapped), expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_labels_and_weights_follow_X(data, namespace):
    """String labels, NumPy weights with an array API X, and the reverse."""
    xp, device = _namespace(namespace)
    X, y = data
    labels = np.array(["ant", "bee", "cat"])[y]
    weights = np.linspace(0.5, 2.0, X.shape[0])
    estimator = MarginSoftmaxClassifier(loss="softmax")
    reference = clone(estimator).fit(X, labels, sample_weight=weights)
    X_xp = xp.asarray(X, device=device)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = clone(estimator).fit(X_xp, labels, sample_weight=xp.asarray(weights))
        predicted = fitted.predict(X_xp)
        # A NumPy X with labels and weights in the namespace: the NumPy path.
        host = clone(estimator).fit(X, xp.asarray(y), sample_weight=xp.asarray(weights))
    assert isinstance(fitted.classes_, np.ndarray)
    np.testing.assert_array_equal(predicted, reference.predict(X))
    assert isinstance(host.coef_, np.ndarray)
    np.testing.assert_allclose(host.coef_, reference.coef_, rtol=1e-12)


def test_other_namespace_or_device_at_predict_is_named():
    xp, device = _namespace("array_api_strict")
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    estimator = MarginSoftmaxClassifier()
    with sklearn.config_context(array_api_dispatch=True):
        estimator.fit(xp.asarray(X, device=device), xp.asarray(y))
        other_device = xp.asarray(X, device=xp.Device("device1"))
        with pytest.raises(ValueError, match=r"MarginSoftmaxClassifier\.predict\(\)"):
            estimator.predict(other_device)
        with pytest.raises(ValueError, match="Devices used during fit"):
            estimator.predict_proba(other_device)
        with pytest.raises(ValueError, match=r"fit \(array_api_strict\).*\(numpy\)"):
            estimator.decision_function(X)
    # Without dispatch too: a device model never silently takes NumPy rows,
    # and the message says that dispatch is off.
    with pytest.raises(ValueError, match="same namespace(.|\n)*dispatch is off"):
        estimator.predict(X)
    numpy_model = MarginSoftmaxClassifier().fit(X, y)
    with sklearn.config_context(array_api_dispatch=True):
        with pytest.raises(ValueError, match=r"fit \(numpy\).*\(array_api_strict\)"):
            numpy_model.predict(xp.asarray(X, device=device))


def test_dispatch_off_converts_torch_as_scikit_learn_does(data):
    """Without dispatch a cpu tensor goes through ``np.asarray`` (documented)."""
    torch, _ = _namespace("torch")
    X, y = data
    fitted = MarginSoftmaxClassifier().fit(torch.asarray(X), torch.asarray(y))
    proba = fitted.predict_proba(torch.asarray(X))
    assert isinstance(proba, np.ndarray) and isinstance(fitted.coef_, np.ndarray)
    np.testing.assert_array_equal(
        proba, MarginSoftmaxClassifier().fit(X, y).predict_proba(X)
    )


def test_warm_start_on_the_device(data):
    xp, device = _namespace("torch")
    X, y = data
    estimator = MarginSoftmaxClassifier(loss="softmax", warm_start=True)
    with sklearn.config_context(array_api_dispatch=True):
        estimator.fit(xp.asarray(X), xp.asarray(y))
        first = estimator.n_iter_
        estimator.fit(xp.asarray(X), xp.asarray(y))
    assert first > 5 and estimator.n_iter_ <= 2
    assert type(estimator.coef_) is type(xp.asarray(X))


# -- the cross-validated estimators --------------------------------------------
# Grids whose NumPy search is stable under round-off (a 2-ulp perturbation of X
# leaves the chosen point and the probabilities to ~1e-10); ArcFace's default
# s path up to 160 is not (its NumPy search itself picks s=86 or s=160). The
# Nyström search draws its 40 centres per fold; with the round-off-stable draw
# (features._row_keys) 50 centres gave a fold fit whose calibration
# temperature moved by 6e-5 between NumPy and torch, 40 by 3e-9 at most.
CV_STABLE = [
    MarginSoftmaxClassifierCV(loss="softmax", Cs=[0.1, 1.0, 10.0], cv=3),
    MarginSoftmaxClassifierCV(loss="normface", ss=[5.0, 10.0, 20.0], cv=3),
    MarginSoftmaxClassifierCV(loss="l-softmax", Cs=[0.1, 1.0], cv=3, refit=False),
    KernelMarginSoftmaxClassifierCV(
        n_components=40, ss=[50.0, 100.0], cv=3, random_state=0
    ),
    KernelMarginSoftmaxClassifierCV(
        kernel_approximation="orf",
        n_components=50,
        ss=[50.0, 100.0],
        cv=3,
        refit=False,
        # Without the metric: with it this search's temperature moves by
        # ~3e-7 of round-off (the Nystroem search above keeps the metric).
        metric=None,
        random_state=0,
    ),  # fmt: skip
]
_CV_METHODS = (
    "predict",
    "predict_proba",
    "predict_log_proba",
    "decision_function",
    "score_samples",
)


def _chosen_point(search):
    """The chosen hyper-parameters that are numbers (``m_`` is None for softmax)."""
    names = ("C_", "s_", "m_", "gamma_")
    return {
        name: getattr(search, name)
        for name in names
        if getattr(search, name, None) is not None
    }


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize(
    "search", CV_STABLE, ids=lambda value: repr(value)[:60].replace(" ", "")
)
def test_cv_search_equals_the_numpy_search(data, namespace, weighted, search):
    """Folds on the device, scores and temperature on the host: same choice."""
    xp, device = _namespace(namespace)
    X, y = data
    weights = np.arange(X.shape[0]) % 3 + 0.5 if weighted else None
    reference = clone(search).fit(X, y, sample_weight=weights)
    X_xp = xp.asarray(X, device=device)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = clone(search).fit(
            X_xp,
            xp.asarray(y, device=device),
            sample_weight=None if weights is None else xp.asarray(weights),
        )
        outputs = {method: getattr(fitted, method)(X_xp) for method in _CV_METHODS}
    assert fitted.best_index_ == reference.best_index_
    # gamma="scale" is computed on the device: equal to round-off.
    assert _chosen_point(fitted) == pytest.approx(_chosen_point(reference), rel=1e-12)
    # T is exact given the held-out logits (a Newton solve), so it moves as they
    # do: 2-ulp perturbations of X move the NumPy kernel searches' T by up to
    # 3.5e-9 relative (the linear ones' by 2e-12), and the device's other
    # summation order by 1.2e-8 (ORF, weighted, array-api-strict, OpenBLAS
    # Haswell kernels): the kernel bound is their probabilities' 1e-7.
    kernel = isinstance(search, KernelMarginSoftmaxClassifierCV)
    assert fitted.temperature_ == pytest.approx(
        reference.temperature_, rel=1e-7 if kernel else 1e-8
    )
    for method, output in outputs.items():
        assert type(output) is type(X_xp), method
        assert output.device == X_xp.device, method
    for name in ("scores_", "n_iter_"):  # scikit-learn: fitted arrays follow X
        assert type(getattr(fitted, name)) is type(X_xp), name
    np.testing.assert_array_equal(to_numpy(fitted.scores_), reference.scores_)
    proba = to_numpy(outputs["predict_proba"])
    # The kernel searches' NumPy probabilities move by up to 1e-8 when X is
    # perturbed by 2 ulp (ORF, weighted, refit=False); the linear ones by 1e-13.
    # "scale" is resolved on each fold's rows, on the device in its summation
    # order: the fold models' widths differ by round-off, and the ORF
    # refit=False search (three fold models) by 1.2e-7 on array-api-strict,
    # by up to 4.5e-7 (relative to the largest logit too) on cuda: an H200,
    # torch 2.11, whose reductions sum in other orders.
    fold_widths = 1e-6 if device == "cuda" else 3e-7
    bound = fold_widths if kernel else 1e-10
    assert np.max(np.abs(proba - reference.predict_proba(X))) <= bound
    np.testing.assert_array_equal(to_numpy(outputs["predict"]), reference.predict(X))
    decision = reference.decision_function(X)
    # The logits are s times cosines (s up to 100 here): the kernel fits'
    # relative 1e-8 to 1e-7 becomes 1.5e-6 on logits of 33 (same run as T).
    # Three fold models of per-fold widths (above): 3e-7 (cuda 1e-6).
    scale = fold_widths * np.max(np.abs(decision)) if kernel else 1e-6
    np.testing.assert_allclose(
        to_numpy(outputs["decision_function"]), decision, rtol=0, atol=scale
    )
    np.testing.assert_allclose(
        to_numpy(outputs["predict_log_proba"]), np.log(proba), rtol=1e-6
    )
    np.testing.assert_allclose(
        to_numpy(outputs["score_samples"]), reference.score_samples(X), atol=1e-5
    )


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_cv_string_labels_user_scoring_and_a_fold_missing_a_class(data, namespace):
    """String labels, a user's scoring, refit=False, a class absent in training.

    The third class appears in the held-out rows of the first fold only, so
    that fold's models lack its column (filled with the row's smallest logit
    on the device, as the NumPy search fills it on the host).
    """
    xp, device = _namespace(namespace)
    X, y = data
    labels = np.array(["ant", "bee"])[y % 2]
    rare = np.arange(0, 40, 10)
    labels[rare] = "cat"
    common = np.setdiff1d(np.arange(X.shape[0]), rare)
    parts = np.array_split(common, 3)
    folds = [
        (np.concatenate(parts[1:]), np.concatenate([parts[0], rare])),
        (np.concatenate([parts[0], parts[2], rare]), parts[1]),
        (np.concatenate([parts[0], parts[1], rare]), parts[2]),
    ]
    search = MarginSoftmaxClassifierCV(
        loss="softmax", Cs=[0.1, 1.0], cv=folds, scoring="accuracy", refit=False
    )
    reference = clone(search).fit(X, labels)
    X_xp = xp.asarray(X, device=device)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = clone(search).fit(X_xp, labels)
        predicted = fitted.predict(X_xp)
        proba = fitted.predict_proba(X_xp)
    assert len(fitted.estimators_[0].classes_) == 2
    assert isinstance(predicted, np.ndarray)  # string labels stay NumPy
    np.testing.assert_array_equal(predicted, reference.predict(X))
    np.testing.assert_allclose(
        fitted.cv_results_["mean_test_score"],
        reference.cv_results_["mean_test_score"],
        rtol=1e-10,
    )
    assert np.max(np.abs(to_numpy(proba) - reference.predict_proba(X))) <= 1e-8
    # Two classes: the 1-D decision z_1 - z_0 of scikit-learn's convention.
    binary = MarginSoftmaxClassifierCV(loss="softmax", Cs=[1.0], cv=3)
    reference = clone(binary).fit(X, y > 0)
    with sklearn.config_context(array_api_dispatch=True):
        decision = clone(binary).fit(X_xp, xp.asarray(y > 0)).decision_function(X_xp)
    assert decision.shape == (X.shape[0],)
    np.testing.assert_allclose(
        to_numpy(decision), reference.decision_function(X), rtol=0, atol=1e-8
    )


def test_cv_other_namespace_at_predict_is_named(data):
    torch, _ = _namespace("torch")
    X, y = data
    search = MarginSoftmaxClassifierCV(loss="softmax", Cs=[1.0], cv=2)
    numpy_fit = clone(search).fit(X, y)
    with sklearn.config_context(array_api_dispatch=True):
        for method in _CV_METHODS:
            with pytest.raises(
                ValueError,
                match=rf"MarginSoftmaxClassifierCV\.{method}\(\)(.|\n)*"
                r"fit \(numpy\) and \w+ \(torch\)",
            ):
                getattr(numpy_fit, method)(torch.asarray(X))
        torch_fit = clone(search).fit(torch.asarray(X), torch.asarray(y))
        with pytest.raises(ValueError, match=r"fit \(torch\) and predict \(numpy\)"):
            torch_fit.predict(X)
    with pytest.raises(ValueError, match="same namespace(.|\n)*dispatch is off"):
        torch_fit.predict_proba(torch.asarray(X))


def test_cv_scoring_that_fails_on_the_device_is_named(data):
    """A metric without array API support fails with the scoring's name."""
    torch, _ = _namespace("torch")
    X, y = data

    def host_only(estimator, X, y):
        raise TypeError("this metric takes NumPy arrays only")

    search = MarginSoftmaxClassifierCV(
        loss="softmax", Cs=[1.0], cv=2, scoring=host_only
    )
    with sklearn.config_context(array_api_dispatch=True):
        with pytest.raises(
            ValueError,
            match=r"MarginSoftmaxClassifierCV: scoring=<function(.|\n)*torch input"
            r"(.|\n)*NumPy arrays only(.|\n)*X\.cpu\(\)\.numpy\(\)",
        ):
            search.fit(torch.asarray(X), torch.asarray(y))


# -- device memory, devices without float64, the maps' public path ---------------
@pytest.mark.parametrize("kind", ["rff", "nystroem"])
def test_kernel_fit_holds_one_feature_matrix(kind, monkeypatch):
    """Mapped rows are assembled and normalised in place, as the NumPy fit.

    array-api-strict arrays are NumPy's, which tracemalloc sees: the peak of a
    fit (and of the "scale" variance, never a float64 copy of X) is measured.
    """
    import tracemalloc

    from sklmargin._utils import blocks
    from sklmargin.features._gamma import weighted_variance

    xp, device = _namespace("array_api_strict")
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 2**20)
    n, width = 20_000, 200
    rng = np.random.default_rng(0)
    X = xp.asarray(rng.standard_normal((n, 8)), device=device)
    y = xp.asarray(np.arange(n) % 3, device=device)
    estimator = KernelMarginSoftmaxClassifier(
        n_components=width, kernel_approximation=kind, random_state=0, max_iter=2
    )
    X32 = xp.asarray(rng.standard_normal((n, width)), dtype=xp.float32)
    tracemalloc.start()
    try:
        with sklearn.config_context(array_api_dispatch=True):
            with pytest.warns(Warning):  # max_iter=2 does not converge
                estimator.fit(X, y)
            fit_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            weighted_variance(X32, np.ones(n))
            variance_peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert fit_peak < 1.3 * n * width * 8  # one float64 n x M matrix, plus blocks
    assert variance_peak < 0.25 * n * width * 4  # a float64 copy would be 2x X


def _without_float64(monkeypatch):
    """Make the helpers believe the device has no float64 (Apple's MPS)."""
    import sklmargin._utils.array_api as array_api

    # One probe decides for every namespace helper (wide_dtype asks it).
    monkeypatch.setattr(array_api, "float64_supported", lambda xp, device: False)


# The far rows overflow float32 on purpose (array-api-strict says so in a
# RuntimeWarning); the guards keep every result finite, which is asserted.
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("namespace", NAMESPACES)
def test_no_float64_device_far_rows_and_far_trials(data, namespace, monkeypatch):
    """Far rows and far line-search trials are finite, as NumPy's float64 guards."""
    from sklmargin.losses._registry import get_margin

    xp, device = _namespace(namespace)
    X, y = data
    X = X.astype(np.float32)
    # Without the metric: the far row's probabilities are the softmax of the
    # biases (its features vanish), which the metric's pilot moves by more
    # than float32 fits agree; this test is about far rows and trials.
    estimator = KernelMarginSoftmaxClassifier(n_components=20, gamma=1.0, metric=None)
    reference = clone(estimator).set_params(random_state=0).fit(X, y)
    far = np.full((1, X.shape[1]), 1e25, dtype=np.float32)
    X[0] *= 1e28  # L-Softmax's |x||w| overflows float32 at |w| ~ 1e12
    margin = get_margin("l-softmax")
    rows_np = prepare_rows(X.copy(), normalize=True)
    settings = (y, 3, np.ones(len(y)), margin, 1.5, None, 1.0, True)
    params = np.zeros((3 * X.shape[1] + 3,))
    params[:-3] = np.random.default_rng(0).standard_normal(3 * X.shape[1]) * 1e12
    expected = LinearMarginObjective(rows_np, *settings).loss_gradient(params)
    _without_float64(monkeypatch)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = (
            clone(estimator)
            .set_params(random_state=0)
            .fit(xp.asarray(data[0].astype(np.float32), device=device), xp.asarray(y))
        )
        proba = to_numpy(fitted.predict_proba(xp.asarray(far, device=device)))
        X_xp = xp.asarray(X, device=device)
        rows = prepare_rows(X_xp, normalize=True)
        objective = LinearMarginObjective(
            rows, xp.asarray(y, device=device), *settings[1:]
        )
        value, grad = objective.loss_gradient(params)
    # float32 fits agree to ~1e-2 (docs); NumPy's far row is finite, not NaN.
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba, reference.predict_proba(far), atol=2e-2)
    np.testing.assert_allclose(value, expected[0], rtol=1e-6)
    assert np.all(np.isfinite(grad))


@pytest.mark.parametrize("feature_map", [RandomFourierFeatures, NystroemFeatures])
def test_maps_validate_and_check_the_namespace(data, feature_map):
    xp, device = _namespace("array_api_strict")
    X, _ = data
    bad = {"NaN": X.copy(), "infinity": X.copy(), "2D": X[:, 0], "0 sample": X[:0]}
    bad["NaN"][3, 1], bad["infinity"][3, 1] = np.nan, np.inf
    for message, rows in bad.items():
        with pytest.raises(ValueError, match=message):
            feature_map(n_components=8).fit(rows)
        with sklearn.config_context(array_api_dispatch=True):
            with pytest.raises(ValueError, match=message):
                feature_map(n_components=8).fit(xp.asarray(rows, device=device))
    constant = xp.asarray(np.full((300, 3), 0.1), device=device)
    weights = np.random.default_rng(0).uniform(0.1, 2.0, 300)
    with sklearn.config_context(array_api_dispatch=True):  # as NumPy's gamma_
        assert feature_map().fit(constant, sample_weight=weights).gamma_ == 1.0
    X_xp = xp.asarray(X, device=device)
    on_host = feature_map(n_components=8, random_state=0).fit(X)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = feature_map(n_components=8, random_state=0).fit(X_xp)
        name = rf"{feature_map.__name__}\.transform\(\)"
        with pytest.raises(ValueError, match=name + ".*fit \\(array_api_strict\\)"):
            fitted.transform(X)
        with pytest.raises(ValueError, match=r"fit \(numpy\) and transform"):
            on_host.transform(X_xp)
        with pytest.raises(ValueError, match="Devices used during fit"):
            fitted.transform(xp.asarray(X, device=xp.Device("device1")))
    with pytest.raises(ValueError, match="same namespace(.|\n)*dispatch is off"):
        fitted.transform(X)
    # Dask input keeps the NumPy path (docs): NumPy fitted arrays.
    da = pytest.importorskip("dask.array", reason="dask is not installed")
    with sklearn.config_context(array_api_dispatch=True):
        dask_fit = feature_map(n_components=8, random_state=0).fit(da.from_array(X))
    arrays = [value for key, value in vars(dask_fit).items() if key.endswith("_")]
    assert not any(type(value).__module__.startswith("dask") for value in arrays)
    assert any(isinstance(value, np.ndarray) for value in arrays)
