"""Row hashes: the distinct rows' order, and device rows hashed where they live."""

import numpy as np
import pytest

from sklmargin.features import _row_keys
from sklmargin.features._row_keys import (
    distinct_row_hashes,
    row_hashes,
    stable_row_keys,
    unique_hashes,
)


def rows_with_edges(dtype, seed=0):
    """Gaussian rows with copies, zero rows of both signs, tiny and huge rows."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((3000, 13)).astype(dtype)
    X[::5] = X[1]  # copies
    X[7] = 0.0
    X[8] = -0.0  # the same row as 0.0
    X[9] *= dtype(1e-30)
    if dtype == np.float64:
        X[10, 3] = 1e300  # beyond float32: the exact value decides the key
        X[11] *= 1e39
    return X


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unique_hashes_is_np_unique(dtype):
    hashes = row_hashes(rows_with_edges(dtype))
    expected = np.unique(hashes, return_index=True, return_inverse=True)
    for got, want in zip(unique_hashes(hashes), expected, strict=True):
        np.testing.assert_array_equal(got, np.ravel(want))
    empty = unique_hashes(hashes[:0])
    assert [part.shape for part in empty] == [(0,), (0,), (0,)]


def record_device_hashing(monkeypatch):
    """Run the device code on torch cpu; record ``exact`` of each call on a tensor.

    Host arrays are hashed by the same function (:func:`_row_keys._lanes`);
    a call that receives the tensor itself computed on its device.
    """
    monkeypatch.setattr(_row_keys, "HOST_DEVICES", ())
    calls = []
    lanes = _row_keys._lanes

    def recording(X, exact):
        if not isinstance(X, np.ndarray):
            calls.append(exact)
        return lanes(X, exact)

    monkeypatch.setattr(_row_keys, "_lanes", recording)
    return calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_torch_rows_hash_on_their_device_to_the_hosts_bits(dtype, monkeypatch):
    torch = pytest.importorskip("torch")
    X = rows_with_edges(dtype)
    on_device = record_device_hashing(monkeypatch)
    tensor = torch.from_numpy(X)
    host, device = row_hashes(X), row_hashes(tensor)
    for lane in host.dtype.names:
        np.testing.assert_array_equal(device[lane], host[lane])
    np.testing.assert_array_equal(stable_row_keys(tensor), stable_row_keys(X))
    weights = np.random.default_rng(1).uniform(0.0, 2.0, X.shape[0])
    weights[::11] = 0.0
    for got, want in zip(
        distinct_row_hashes(X, weights, hashes=device),
        distinct_row_hashes(X, weights),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)
    assert len(on_device) == 2  # neither went through a host copy


def test_a_torch_kernel_fit_hashes_its_rows_on_the_device(monkeypatch):
    torch = pytest.importorskip("torch")
    from sklearn import config_context

    from sklmargin import KernelMarginSoftmaxClassifier

    X = rows_with_edges(np.float32)[:400]
    y = np.argmax(X[:, :3], axis=1)
    hashed = record_device_hashing(monkeypatch)
    model = KernelMarginSoftmaxClassifier(n_components=40, random_state=0)
    reference = model.fit(X, y).predict(X)
    assert hashed == []
    with config_context(array_api_dispatch=True):
        labels = model.fit(torch.from_numpy(X), torch.from_numpy(y)).predict(
            torch.from_numpy(X)
        )
    # The metric's keys (stable lane only) and the centres' hashes (all lanes).
    assert sorted(hashed) == [False, True]
    np.testing.assert_array_equal(labels.numpy(), reference)


def test_torch_cpu_rows_are_hashed_by_numpy():
    torch = pytest.importorskip("torch")
    assert not _row_keys._hashes_on_device(torch.zeros((2, 2)))
