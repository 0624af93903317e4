"""The kernel fit's memory budget: the width it allows, the widths it refuses."""

import numpy as np
import pytest
from scipy import sparse
from sklearn.datasets import make_classification

from sklmargin import KernelMarginSoftmaxClassifier
from sklmargin.features import _memory
from sklmargin.features._kernel_features import KernelFeatures, auto_n_components


def _data(n=600, seed=0):
    X, y = make_classification(
        n_samples=n, n_features=6, n_informative=4, n_classes=3, random_state=seed
    )
    return X, y


def test_budget_grows_with_the_machine_and_can_be_fixed(monkeypatch):
    monkeypatch.setattr(_memory, "MEMORY_BUDGET", None)
    monkeypatch.delenv(_memory.BUDGET_VARIABLE, raising=False)
    available = _memory.available_memory()
    if available is not None:
        assert _memory.memory_budget() == _memory.MEMORY_FRACTION * available
    monkeypatch.setenv(_memory.BUDGET_VARIABLE, "1e6")
    assert _memory.memory_budget() == 1e6
    monkeypatch.setattr(_memory, "MEMORY_BUDGET", 5e5)  # the module setting wins
    assert _memory.memory_budget() == 5e5
    monkeypatch.setattr(_memory, "MEMORY_BUDGET", None)
    monkeypatch.setenv(_memory.BUDGET_VARIABLE, "lots")
    with pytest.raises(ValueError, match=_memory.BUDGET_VARIABLE):
        _memory.memory_budget()


def test_widest_width_is_the_largest_that_fits():
    for n, itemsize, whitening, factor in [
        (10**5, 4, True, False), (3000, 8, True, True), (10**6, 4, False, False),
    ]:  # fmt: skip
        size = _memory.FitSize(whitening, factor)
        budget = _memory.fit_bytes(n, 1234, itemsize, size) + 7
        width = _memory.widest_width(n, itemsize, size, budget=budget)
        assert width == 1234
    assert _memory.widest_width(10, 4, budget=1.0) == 0


def test_a_small_budget_lowers_auto_and_refuses_a_wider_width(monkeypatch):
    X, y = _data()
    n = X.shape[0]
    assert auto_n_components(n) == 1000 > n  # every distinct row a centre
    # Room for the fit of 40 float64 components, no more.
    monkeypatch.setattr(_memory, "MEMORY_BUDGET", _memory.fit_bytes(n, 40, 8))
    clf = KernelMarginSoftmaxClassifier(random_state=0).fit(X, y)
    assert clf.n_components_ == 40
    assert clf.score(X, y) > 0.7
    message = rf"{n} rows x 300 components x 8 bytes needs .*at most 40 fit"
    with pytest.raises(ValueError, match=message):
        KernelMarginSoftmaxClassifier(n_components=300, metric=None).fit(X, y)
    # float32 rows: twice the width in the same bytes (less the whitening)
    clf32 = KernelMarginSoftmaxClassifier(
        n_components=60, metric=None, compute_dtype="float32"
    ).fit(X, y)
    assert clf32.n_components_ == 60
    # The random Fourier maps have no M x M whitening.
    rff = KernelMarginSoftmaxClassifier(kernel_approximation="rff", metric=None)
    assert rff.fit(X, y).n_components_ > 40


def test_sparse_rows_count_their_dense_copy(monkeypatch):
    # The Nystroem map densifies sparse rows: n x d entries beside the mapped
    # rows, which the budget must see (a wide sparse matrix would otherwise
    # pass the check and run out of memory in toarray()).
    X, y = _data(n=300)
    n, d = 300, 4000
    rng = np.random.RandomState(0)
    wide = sparse.random(n, d, density=0.002, format="csr", random_state=rng)
    wide = sparse.hstack([sparse.csr_matrix(X), wide], format="csr")
    d = wide.shape[1]
    assert (
        _memory.fit_bytes(n, 40, 8, _memory.FitSize(dense_columns=d))
        - _memory.fit_bytes(n, 40, 8)
        == n * d * 8
    )
    monkeypatch.setattr(
        _memory,
        "MEMORY_BUDGET",
        _memory.fit_bytes(n, 40, 8, _memory.FitSize(True, False, d)),
    )
    clf = KernelMarginSoftmaxClassifier(metric=None, random_state=0).fit(wide, y)
    assert clf.n_components_ == 40
    with pytest.raises(ValueError, match=f"dense rows the map works on .{n} x {d}"):
        KernelMarginSoftmaxClassifier(n_components=41, metric=None).fit(wide, y)
    # Without the dense copy the same width would have passed the check.
    assert _memory.fit_bytes(n, 41, 8) < _memory.MEMORY_BUDGET
    # The width path densifies too: refused before it does, when the copy
    # cannot fit (no sparse matrix reaches the densifying step).
    monkeypatch.setattr(_memory, "MEMORY_BUDGET", _memory.fit_bytes(n, 40, 8))
    densified = []
    original = KernelFeatures.rows

    def recording(self, X, dtype, xp=None):
        densified.append(sparse.issparse(X))
        return original(self, X, dtype) if xp is None else original(self, X, dtype, xp)

    monkeypatch.setattr(KernelFeatures, "rows", recording)
    with pytest.raises(ValueError, match=f"dense rows the map works on .{n} x {2 * d}"):
        KernelMarginSoftmaxClassifier(n_components="path", metric=None).fit(wide, y)
    assert not any(densified)


@pytest.mark.parametrize("n_components", [41, "path"])
def test_a_refused_fit_leaves_no_state_and_pickles(monkeypatch, n_components):
    # A fit refused after it set classes_ (and, for the path, after its
    # labels were read) keeps no private state of its own for the next fit,
    # and such an estimator can be saved and loaded.
    import pickle

    X, y = _data(1200)
    budget = _memory.fit_bytes(len(y), 40, 8) if n_components == 41 else 1000
    monkeypatch.setattr(_memory, "MEMORY_BUDGET", budget)
    clf = KernelMarginSoftmaxClassifier(n_components=n_components, metric=None)
    with pytest.raises(ValueError, match="needs"):
        clf.fit(X, y)
    assert not [name for name in vars(clf) if name.startswith("_path")]
    loaded = pickle.loads(pickle.dumps(clf))  # (raised a KeyError before)

    def fitted(model):
        return sorted(k for k in vars(model) if k.endswith("_") and k[0] != "_")

    assert fitted(loaded) == fitted(clf)
    assert "n_components_" not in fitted(loaded)


def test_a_device_refusal_names_the_device(monkeypatch):
    # Rows on an accelerator are refused by its free memory, and the message
    # says so (it read "of the memory available now", the host's words).
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(_memory, "MEMORY_BUDGET", None)
    monkeypatch.delenv(_memory.BUDGET_VARIABLE, raising=False)
    monkeypatch.setattr(_memory, "device_memory", lambda X: 10**6)
    X = torch.zeros((1000, 4))
    with pytest.raises(ValueError, match="free memory of the device holding X"):
        _memory.check_fit_memory(1000, 500, 4, X=X)


def test_not_even_one_component_is_refused(monkeypatch):
    X, y = _data(n=200)
    monkeypatch.setattr(_memory, "MEMORY_BUDGET", 1000)
    with pytest.raises(ValueError, match="200 rows x 1 components"):
        KernelMarginSoftmaxClassifier(metric=None).fit(X, y)


def test_predict_maps_rows_in_blocks(monkeypatch):
    X, y = _data(n=500)
    clf = KernelMarginSoftmaxClassifier(n_components=50, random_state=0).fit(X, y)
    whole = clf.predict_proba(X)
    labels = clf.predict(X)
    # Blocks of 7 rows: every step is per row, so the answers do not move
    # (but for the GEMMs' summation order on other block shapes).
    monkeypatch.setattr(_memory, "PREDICT_BLOCK_BYTES", 7 * 50 * 8)
    calls = []
    original = type(clf)._map_features

    def counting(self, rows):
        calls.append(rows.shape[0])
        return original(self, rows)

    monkeypatch.setattr(type(clf), "_map_features", counting)
    np.testing.assert_allclose(clf.predict_proba(X), whole, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), labels)
    assert max(calls) == 7 and sum(calls) == 2 * X.shape[0]


def test_torch_predict_in_blocks(monkeypatch):
    torch = pytest.importorskip("torch")
    from sklearn import config_context

    X, y = _data(n=300)
    X = X.astype(np.float32)
    params = {"n_components": 40, "metric": None, "random_state": 0}
    with config_context(array_api_dispatch=True):
        clf = KernelMarginSoftmaxClassifier(**params).fit(
            torch.asarray(X), torch.asarray(y)
        )
        whole = clf.decision_function(torch.asarray(X))
        monkeypatch.setattr(_memory, "PREDICT_BLOCK_BYTES", 11 * 40 * 4)
        blocked = clf.decision_function(torch.asarray(X))
    assert blocked.shape == whole.shape
    # float32 logits (s times a cosine): a GEMM of other block shapes may
    # sum in another order, a few float32 ulps of s.
    scale = float(np.max(np.abs(whole.numpy())))
    np.testing.assert_allclose(blocked.numpy(), whole.numpy(), atol=1e-4 * scale)
