"""n_components="path": the width the data choose, nested features, one choice."""

import numpy as np
import pytest
from sklearn.datasets import make_classification

from sklmargin import KernelMarginSoftmaxClassifier, NystroemFeatures
from sklmargin.features import _width
from sklmargin.features._kernel_block import rbf_kernel_block
from sklmargin.features._width import NestedNystroem


@pytest.fixture
def small_path(monkeypatch):
    """The path's widths shrunk so that a few hundred rows walk it."""
    monkeypatch.setattr(_width, "START_WIDTH", 15)
    monkeypatch.setattr(_width, "MIN_WIDTH", 30)
    monkeypatch.setattr(_width, "HELD_OUT_ROWS", (60, 1000))
    monkeypatch.setattr(_width, "MIN_GAIN", 0.0)
    monkeypatch.setattr(_width, "auto_n_components", lambda n_samples: 30)


def _data(n=700, seed=0):
    return make_classification(
        n_samples=n, n_features=8, n_informative=6, n_classes=3, random_state=seed
    )


def test_nested_features_extend_and_equal_nystroem():
    rng = np.random.RandomState(0)
    X = rng.standard_normal((120, 4))
    nested = NestedNystroem(X[:40], 0.3, np.float64)
    narrow = nested.grow(10, X, np.empty((120, 0)))
    wide = nested.grow(40, X, narrow)
    # The wider features extend the narrower ones without changing them.
    np.testing.assert_array_equal(wide[:, : narrow.shape[1]], narrow)
    # z(x).z(x') = k_C(x)^T K_CC^-1 k_C(x'): the Nyström kernel of the centres.
    centres = X[:40][nested.kept]
    k = rbf_kernel_block(X, centres, 0.3)
    exact = k @ np.linalg.solve(rbf_kernel_block(centres, centres, 0.3), k.T)
    np.testing.assert_allclose(wide @ wide.T, exact, atol=1e-8)
    # The fitted map's transform gives the features the path trained on.
    fmap = nested.feature_map(nested.width, NystroemFeatures(gamma=0.3))
    np.testing.assert_allclose(fmap.transform(X), wide, atol=1e-8)


def test_path_walks_and_reports_it(small_path):
    X, y = _data()
    clf = KernelMarginSoftmaxClassifier(n_components="path", random_state=0)
    clf.fit(X, y)
    path = clf.width_path_
    assert path["chosen"] == clf.n_components_ == clf.feature_map_.n_components_
    widths = path["widths"]
    assert widths[0] <= 15 and len(widths) == len(path["scores"])
    assert all(b > a for a, b in zip(widths[:-1], widths[1:], strict=True))
    assert clf.n_components_ >= 30  # the floor
    assert clf.score(X, y) > 0.7
    # The default and an integer width walk no path.
    for width in ("auto", 40):
        other = KernelMarginSoftmaxClassifier(n_components=width, random_state=0)
        assert not hasattr(other.fit(X, y), "width_path_")


def test_path_does_not_depend_on_row_order_or_round_off(small_path):
    X, y = _data()
    params = {"n_components": "path", "random_state": 0}
    base = KernelMarginSoftmaxClassifier(**params).fit(X, y)
    order = np.random.RandomState(1).permutation(len(y))
    permuted = KernelMarginSoftmaxClassifier(**params).fit(X[order], y[order])
    nudged = KernelMarginSoftmaxClassifier(**params).fit(
        X * (1 + 2 * np.finfo(np.float32).eps), y
    )
    for other in (permuted, nudged):
        assert other.n_components_ == base.n_components_
        assert other.width_path_["widths"] == base.width_path_["widths"]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_torch_and_dask_choose_the_numpy_width(small_path):
    X, y = _data(n=450)
    params = {"n_components": "path", "metric": None, "max_iter": 8}
    X = X.astype(np.float32)
    base = KernelMarginSoftmaxClassifier(**params, random_state=0).fit(X, y)
    torch = pytest.importorskip("torch")
    from sklearn import config_context

    with config_context(array_api_dispatch=True):
        on_torch = KernelMarginSoftmaxClassifier(**params, random_state=0).fit(
            torch.asarray(X), torch.asarray(y)
        )
    assert on_torch.n_components_ == base.n_components_
    assert on_torch.width_path_["widths"] == base.width_path_["widths"]
    da = pytest.importorskip("dask.array")
    on_dask = KernelMarginSoftmaxClassifier(**params, random_state=0).fit(
        da.from_array(X, chunks=(150, -1)), da.from_array(y, chunks=150)
    )
    assert on_dask.n_components_ == base.n_components_
    assert on_dask.width_path_["widths"] == base.width_path_["widths"]


def _path_bytes(n, width, itemsize, dense_columns):
    """The path's peak: PATH_COPIES mapped rows and ``dense_columns`` of rows."""
    from sklmargin.features import _memory

    copies = _memory.fit_bytes(n, width, _width.PATH_COPIES * itemsize)
    return copies + n * dense_columns * itemsize


def test_path_within_the_memory_budget(small_path, monkeypatch):
    from sklmargin.features import _memory

    X, y = _data()
    n, d = X.shape
    # The path's copies of the mapped rows and its permuted copy of the rows.
    monkeypatch.setattr(_memory, "MEMORY_BUDGET", _path_bytes(n, 20, 8, d))
    clf = KernelMarginSoftmaxClassifier(n_components="path", metric=None)
    clf.fit(X, y)
    assert clf.width_path_["cap"] == 20 and clf.n_components_ <= 20


def test_path_counts_the_dense_copies_of_sparse_rows(small_path, monkeypatch):
    from scipy import sparse

    from sklmargin.features import _memory

    X, y = _data()
    n, d = X.shape
    wide = sparse.hstack(
        [sparse.csr_matrix(X), sparse.random(n, 300, density=0.01, random_state=0)],
        format="csr",
    )
    d = wide.shape[1]
    # Room for 20 components beside the densified rows and their permuted
    # copy: without those the budget would hold a wider path.
    budget = _path_bytes(n, 20, 8, 2 * d)
    assert _path_bytes(n, 60, 8, 0) < budget
    monkeypatch.setattr(_memory, "MEMORY_BUDGET", budget)
    clf = KernelMarginSoftmaxClassifier(n_components="path", metric=None)
    assert clf.fit(wide, y).width_path_["cap"] == 20


def test_path_refusal_names_its_copies_and_entries(small_path, monkeypatch):
    from sklmargin.features import _memory

    X, y = _data()
    n, d = X.shape
    X = X.astype(np.float32)
    # Room for a fit of one component, not for the path's three copies.
    monkeypatch.setattr(_memory, "MEMORY_BUDGET", _memory.fit_bytes(n, 1, 4))
    clf = KernelMarginSoftmaxClassifier(n_components="path", metric=None)
    message = (
        rf"{n} rows x 1 components x 4 bytes .*\(3 copies of the mapped rows"
        rf".*the dense rows the map works on \({n} x {d}:"  # (the permuted copy)
    )
    with pytest.raises(ValueError, match=message):
        clf.fit(X, y)


def test_a_device_holds_only_the_chosen_features(small_path, monkeypatch):
    # The path's copies live on the host; rows on a device cap the width by
    # one fit of the chosen width there, not by the path's host copies.
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    from sklearn import config_context

    from sklmargin.features import _memory

    X, y = _data()
    n, d = X.shape
    host = _path_bytes(n, 200, 8, 2 * d)  # the path's copies of 200 fit
    device = _memory.fit_bytes(n, 50, 8)  # the device holds a fit of 50
    monkeypatch.setattr(
        _memory, "memory_budget", lambda X=None: host if X is None else device
    )
    clf = KernelMarginSoftmaxClassifier(n_components="path", metric=None)
    with config_context(array_api_dispatch=True):
        clf.fit(torch.from_numpy(X), torch.from_numpy(y))
    assert clf.width_path_["cap"] == 50
