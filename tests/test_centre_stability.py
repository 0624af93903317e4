"""Nyström centres decided by the data: not by round-off, row order or container.

The centres are drawn among the distinct rows by per-row random numbers seeded
with a key of the row that float32 round-off rarely changes
(``sklmargin.features._row_keys.stable_row_keys``); the same draw is made in
memory, over Dask chunks and on a host copy of array API rows.
"""

import os
import warnings

import numpy as np
import pytest
import sklearn
import sklearn.datasets
from numpy.testing import assert_array_equal

from sklmargin import (
    KernelMarginSoftmaxClassifier,
    NystroemFeatures,
    RandomFourierFeatures,
)
from sklmargin.features._centres import uniform_indices
from sklmargin.features._row_keys import distinct_row_hashes, stable_row_keys

TWO_ULP = np.float32(1 + 2 * np.finfo(np.float32).eps)


def _rows(n=4000, d=30, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def _chosen_rows(X, n_centres, seed):
    """Indices into X of the rows a uniform draw takes (first copy of each)."""
    hashes, weights, index = distinct_row_hashes(X, np.ones(X.shape[0]))
    chosen = uniform_indices(
        weights, n_centres, np.random.RandomState(seed), hashes["order"]
    )
    return set(index[chosen].tolist())


@pytest.mark.parametrize("d", [4, 30, 256])
def test_round_off_rarely_changes_a_rows_key(d):
    X = _rows(n=4000, d=d)
    keys = stable_row_keys(X)
    # Every entry moved by 2 ulp (float32), by a scaling or by random signs.
    signs = np.random.default_rng(1).choice([-2, 2], size=X.shape)
    jittered = (X.astype(np.float64) * (1 + signs * np.finfo(np.float32).eps)).astype(
        np.float32
    )
    for moved in (X * TWO_ULP, jittered):
        # Expected about 3e-5 of the rows (a grid line crossed): 0.1 of 4,000.
        assert np.sum(stable_row_keys(moved) != keys) <= 2
    # A float64 copy of the same numbers has the same keys.
    assert_array_equal(stable_row_keys(X.astype(np.float64)), keys)
    # ...while distinct rows have distinct keys but for rare near neighbours.
    assert len(np.unique(keys)) >= 0.99 * X.shape[0]


def test_a_two_ulp_change_keeps_the_uniform_centres():
    X = _rows()
    for seed in range(3):
        before = _chosen_rows(X, 500, seed)
        after = _chosen_rows(X * TWO_ULP, 500, seed)
        assert len(before ^ after) <= 2  # a row whose key changed, if any


def test_uniform_centres_do_not_depend_on_the_order_of_the_rows():
    X = _rows(n=1000, d=5)
    order = np.random.default_rng(2).permutation(X.shape[0])
    weights = np.random.default_rng(3).uniform(0.5, 2.0, X.shape[0])
    fits = [
        NystroemFeatures(n_components=100, random_state=0).fit(
            X[rows], sample_weight=weights[rows]
        )
        for rows in (np.arange(X.shape[0]), order)
    ]
    assert_array_equal(fits[0].components_, fits[1].components_)


def test_uniform_draw_is_weight_proportional():
    # The per-row numbers are hashes of the keys and a salt: over salts, a
    # row is drawn first with probability w_i / sum(w), as a weighted draw.
    weights = np.array([1.0, 2.0, 3.0, 4.0])
    keys = stable_row_keys(np.arange(8.0).reshape(4, 2))
    rng = np.random.RandomState(0)
    n_draws = 4000
    counts = np.bincount(
        [uniform_indices(weights, 1, rng, keys)[0] for _ in range(n_draws)],
        minlength=4,
    )
    expected = n_draws * weights / weights.sum()
    # Binomial standard deviations are at most 31: 4 of them.
    assert np.all(np.abs(counts - expected) < 4 * np.sqrt(expected))


def _kernel():
    return KernelMarginSoftmaxClassifier(n_components=60, random_state=0)


def test_memory_dask_and_torch_take_the_same_centres():
    X = _rows(n=600, d=6).astype(np.float64)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    centres = [_kernel().fit(X, y).feature_map_.components_]
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    with dask.config.set(scheduler="synchronous"):
        fitted = _kernel().fit(da.from_array(X, chunks=130), da.from_array(y, 130))
    centres.append(fitted.feature_map_.components_)
    if os.environ.get("SCIPY_ARRAY_API") == "1":
        torch = pytest.importorskip("torch")
        with sklearn.config_context(array_api_dispatch=True):
            fitted = _kernel().fit(torch.from_numpy(X), torch.from_numpy(y))
        centres.append(np.asarray(fitted.feature_map_.components_.cpu()))
    assert len(centres) >= 2  # torch joins where array API dispatch can run
    for other in centres[1:]:
        assert_array_equal(other, centres[0])


def test_scale_gamma_of_constant_weighted_rows_in_memory_on_device_and_dask():
    # Constant rows under uneven weights: the weighted mean's round-off is no
    # variance (gamma_ was 4.7e28 on Dask, 1.0 in memory). NumPy, a device
    # namespace and Dask chunks run the same weighted sums and floor.
    X = np.full((200, 3), 0.3)
    y = np.arange(200) % 2
    # (seed 1: weights whose chunked mean is 0.3 + 1 ulp; 1e32 without the floor)
    weights = np.random.default_rng(1).uniform(0.1, 3.0, 200)
    rff = RandomFourierFeatures(n_components=4, random_state=0)
    gammas = {"numpy": rff.fit(X, sample_weight=weights).gamma_}
    strict = pytest.importorskip("array_api_strict")
    if os.environ.get("SCIPY_ARRAY_API") == "1":
        with sklearn.config_context(array_api_dispatch=True):
            fitted = rff.fit(strict.asarray(X), sample_weight=weights)
        assert not isinstance(fitted.random_weights_, np.ndarray)  # on the device
        gammas["array-api-strict"] = fitted.gamma_
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    # (A constant X fits a classifier poorly: its warnings are not the point.)
    with dask.config.set(scheduler="synchronous"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # (gamma="scale": "auto" would double it after the default metric.)
        fitted = KernelMarginSoftmaxClassifier(
            gamma="scale", n_components=10, random_state=0
        ).fit(
            da.from_array(X, chunks=70),
            da.from_array(y, chunks=70),
            sample_weight=da.from_array(weights, chunks=70),
        )
    gammas["dask"] = fitted.feature_map_.gamma_
    assert len(gammas) >= 2  # the device joins where array API dispatch can run
    assert gammas == dict.fromkeys(gammas, 1.0)


def test_default_labels_agree_in_memory_on_dask_and_on_torch():
    # The whole default pipeline (metric, gamma, width, centres, solve) on the
    # same rows in three containers: the same labels on 2,000 held-out rows.
    # Dask adds its chunks' exactly rounded weighted sums in chunk order, so
    # gamma_ may differ from the in-memory one in its last bit and a label on
    # a decision boundary may flip: at most one in a thousand (none measured;
    # 16 in 2,000 when the chunks' "scale" read float64 rows and the map
    # float32 ones). torch cpu runs the in-memory arithmetic: no flip.
    X, y = sklearn.datasets.make_classification(
        n_samples=4000, n_features=12, n_informative=8, n_classes=4, random_state=0
    )
    train, test = slice(0, 2000), slice(2000, None)
    expected = (
        KernelMarginSoftmaxClassifier(random_state=0).fit(X[train], y[train])
    ).predict(X[test])
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    with dask.config.set(scheduler="synchronous"):
        fitted = KernelMarginSoftmaxClassifier(random_state=0).fit(
            da.from_array(X[train], chunks=700), da.from_array(y[train], chunks=700)
        )
        labels = np.asarray(fitted.predict(da.from_array(X[test], chunks=700)))
    assert np.mean(labels != expected) <= 1e-3
    if os.environ.get("SCIPY_ARRAY_API") != "1":
        return
    torch = pytest.importorskip("torch")
    with sklearn.config_context(array_api_dispatch=True):
        fitted = KernelMarginSoftmaxClassifier(random_state=0).fit(
            torch.from_numpy(X[train]), torch.from_numpy(y[train])
        )
        labels = np.asarray(fitted.predict(torch.from_numpy(X[test])).cpu())
    assert_array_equal(labels, expected)
