"""NystroemFeatures and its centre selectors.

Conformance for every selector, kernel accuracy against the exact RBF kernel, float32,
sample weights as repetitions, blocking, and errors on bad input.
"""

import numpy as np
import pytest
from scipy import sparse
from scipy.spatial.distance import pdist
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklmargin import NystroemFeatures
from sklmargin._utils import blocks
from sklmargin.features._centres import (
    CENTRE_SELECTORS,
    kmeans_centres,
    rpcholesky_centres,
    uniform_centres,
)
from sklmargin.features._row_keys import distinct_row_hashes

SELECTORS = sorted(CENTRE_SELECTORS)


@parametrize_with_checks(
    [NystroemFeatures(n_components=20, centres=name) for name in SELECTORS]
    + [NystroemFeatures(n_components=20, gamma="median")]
)
def test_sklearn_conformance(estimator, check):
    check(estimator)


def _data(n=300, d=5, seed=0):
    return np.random.RandomState(seed).standard_normal((n, d))


def _relative_kernel_error(Z, X, gamma):
    K = rbf_kernel(X, gamma=gamma)
    return np.linalg.norm(Z @ Z.T - K) / np.linalg.norm(K)


@pytest.mark.parametrize("centres", SELECTORS)
def test_kernel_error_falls_with_width(centres):
    X = _data()
    errors = [
        _relative_kernel_error(
            NystroemFeatures(n_components=M, gamma=0.2, centres=centres, random_state=0)
            .fit(X)
            .transform(X),
            X,
            0.2,
        )
        for M in (10, 40, 160)
    ]
    assert errors[0] > 1.5 * errors[1] > 2.25 * errors[2]
    assert errors[2] < 0.05


@pytest.mark.parametrize("centres", SELECTORS)
def test_all_distinct_rows_as_centres_is_the_exact_kernel(centres):
    X = _data(n=120)
    X = np.vstack([X, X[:30]])  # duplicates: 120 distinct rows
    transformer = NystroemFeatures(n_components=500, gamma=0.1, centres=centres)
    Z = transformer.fit_transform(X)
    assert transformer.components_.shape == (120, X.shape[1])
    assert _relative_kernel_error(Z, X, 0.1) < 1e-6


def test_out_of_sample_features_stay_in_the_unit_ball():
    # |z(x)|^2 = k_C(x)^T K_CC^-1 k_C(x) <= k(x, x) = 1 (Schur complement).
    X, X_new = _data(), _data(seed=1)
    Z = NystroemFeatures(n_components=50, gamma=0.2, random_state=0).fit(X)
    norms = np.einsum("ij,ij->i", *(2 * [Z.transform(X_new)]))
    assert norms.max() <= 1 + 1e-8


@pytest.mark.parametrize("centres", SELECTORS)
def test_float32_in_float32_out_and_close_to_float64(centres):
    X = _data()
    t64 = NystroemFeatures(n_components=60, centres=centres, random_state=0).fit(X)
    t32 = NystroemFeatures(n_components=60, centres=centres, random_state=0)
    Z32 = t32.fit_transform(X.astype(np.float32))
    assert Z32.dtype == np.float32
    assert t32.components_.dtype == np.float32
    assert t32.normalization_.dtype == np.float32
    # Same kernel, same accuracy (the features themselves may differ by the
    # directions dropped at the float32 eigenvalue threshold).
    K64 = t64.transform(X) @ t64.transform(X).T
    K32 = Z32.astype(np.float64) @ Z32.T.astype(np.float64)
    assert np.abs(K64 - K32).max() < 2e-3


@pytest.mark.parametrize("centres", SELECTORS)
@pytest.mark.parametrize("gamma", ["scale", "median"])
def test_integer_weights_equal_repeated_rows_in_any_order(centres, gamma):
    rng = np.random.RandomState(0)
    X = _data(n=80)
    weights = rng.randint(0, 4, size=80)
    repeated = np.repeat(X, weights, axis=0)
    order = rng.permutation(repeated.shape[0])
    params = dict(n_components=25, gamma=gamma, centres=centres, random_state=3)
    weighted = NystroemFeatures(**params).fit(X, sample_weight=weights)
    copies = NystroemFeatures(**params).fit(repeated[order])
    np.testing.assert_allclose(weighted.components_, copies.components_)
    assert weighted.gamma_ == pytest.approx(copies.gamma_, rel=1e-12)
    np.testing.assert_allclose(
        weighted.transform(X), copies.transform(X), rtol=1e-7, atol=1e-9
    )


@pytest.mark.parametrize("centres", SELECTORS)
def test_zero_weight_rows_are_never_centres(centres):
    X = _data(n=60)
    weights = np.r_[np.ones(30), np.zeros(30)]
    transformer = NystroemFeatures(n_components=40, centres=centres, random_state=0)
    transformer.fit(X, sample_weight=weights)
    assert transformer.components_.shape[0] == 30
    distance_to_kept = np.min(
        ((transformer.components_[:, None] - X[None, :30]) ** 2).sum(-1), axis=1
    )
    assert distance_to_kept.max() == 0.0


def test_uniform_draw_is_weight_proportional():
    rows = np.arange(3.0)[:, None]
    weights = np.array([1.0, 1.0, 98.0])
    hits = sum(
        2 in np.flatnonzero(np.isin(rows, uniform_centres(rows, weights, 1, 1.0, rng)))
        for rng in (np.random.RandomState(seed) for seed in range(300))
    )
    assert 270 <= hits <= 300  # expected 294


def test_kmeans_finds_separated_cluster_means():
    rng = np.random.RandomState(0)
    means = np.array([[0.0, 0.0], [20.0, 0.0], [0.0, 20.0]])
    X = np.vstack([m + rng.standard_normal((100, 2)) for m in means])
    centres = kmeans_centres(X, np.ones(300), 3, 1.0, np.random.RandomState(0))
    order = np.argsort(centres[:, 0] + 2 * centres[:, 1])
    true = np.array([X[:100].mean(0), X[100:200].mean(0), X[200:].mean(0)])
    np.testing.assert_allclose(centres[order], true, atol=1e-10)


def test_lloyd_steps_hold_no_copy_of_the_rows():
    import tracemalloc

    from sklmargin.features._centres import lloyd_steps

    rng = np.random.RandomState(0)
    X = rng.standard_normal((20000, 50)).astype(np.float32)
    weights = rng.uniform(0.5, 2.0, X.shape[0])
    tracemalloc.start()
    try:
        centres = lloyd_steps(X, weights, X[:100], 2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # A float64 copy of the rows would be 8 MB; the steps hold a few row
    # vectors (labels, one weighted column) and one block of rows.
    assert peak < X.size * 8 / 4
    assert centres.shape == (100, 50) and np.isfinite(centres).all()


def test_rpcholesky_stops_when_the_residual_vanishes():
    # A kernel that is numerically of low rank: tiny gamma on a line of points.
    X = np.linspace(0, 1, 200)[:, None]
    centres = rpcholesky_centres(X, np.ones(200), 100, 1e-3, np.random.RandomState(0))
    assert 1 <= centres.shape[0] < 100
    transformer = NystroemFeatures(n_components=100, gamma=1e-3, centres="rpcholesky")
    Z = transformer.fit_transform(X)
    assert _relative_kernel_error(Z, X, 1e-3) < 1e-6


def test_rpcholesky_beats_uniform_on_clustered_data():
    # A big cluster and many small ones: uniform spends its centres on the big one.
    rng = np.random.RandomState(0)
    big = rng.standard_normal((900, 2)) * 0.1
    small = rng.uniform(-10, 10, size=(100, 2))
    X = np.vstack([big, small])
    # Trace error: sum_i k(x_i, x_i) - |z(x_i)|^2, what RPCholesky controls.
    errors = {
        name: np.sum(
            1.0
            - np.sum(
                NystroemFeatures(
                    n_components=60, gamma=1.0, centres=name, random_state=0
                ).fit_transform(X)
                ** 2,
                axis=1,
            )
        )
        for name in ("uniform", "rpcholesky")
    }
    assert errors["rpcholesky"] < 0.5 * errors["uniform"]


def test_distinct_rows_sum_the_weights_of_copies():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, -0.0], [2.0, 2.0]])
    _, weights, index = distinct_row_hashes(X, np.array([1.0, 2.0, 3.0, 0.0]))
    rows = X[index]
    found = {tuple(row): weight for row, weight in zip(rows, weights, strict=True)}
    assert found == {(0.0, 1.0): 2.0, (1.0, 0.0): 4.0}
    # The order is the rows' hash order: the same for any order of X.
    _, _, again = distinct_row_hashes(X[::-1], np.array([0.0, 3.0, 2.0, 1.0]))
    np.testing.assert_array_equal(X[::-1][again], rows)


def test_gamma_rules():
    X = _data(n=200, d=4)
    scale = NystroemFeatures(n_components=5, gamma="scale").fit(X)
    assert scale.gamma_ == pytest.approx(1.0 / (4 * X.var()), rel=1e-12)
    median = NystroemFeatures(n_components=5, gamma="median").fit(X)
    assert median.gamma_ == pytest.approx(
        1.0 / np.median(pdist(X, "sqeuclidean")), rel=1e-10
    )
    assert NystroemFeatures(n_components=5, gamma=0.3).fit(X).gamma_ == 0.3
    constant = np.ones((10, 3))
    assert NystroemFeatures(gamma="scale").fit(constant).gamma_ == 1.0
    assert NystroemFeatures(gamma="median").fit(constant).gamma_ == 1.0


def test_median_gamma_reuses_the_fits_row_hashes(monkeypatch):
    from sklmargin.features import _nystroem, _row_keys

    calls, original = [], _row_keys.row_hashes

    def counting(X):
        calls.append(X.shape[0])
        return original(X)

    monkeypatch.setattr(_row_keys, "row_hashes", counting)
    monkeypatch.setattr(_nystroem, "row_hashes", counting)
    distinct, found = [], _nystroem.distinct_row_hashes
    monkeypatch.setattr(
        _nystroem, "distinct_row_hashes", lambda *a: distinct.append(1) or found(*a)
    )
    NystroemFeatures(n_components=5, gamma="median").fit(_data(n=200, d=4))
    assert calls == [200]  # once, for the draw of gamma's rows and the centres
    assert distinct == [1]  # and the distinct rows found once for both


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blocked_transform_equals_one_block(monkeypatch, dtype):
    X = _data(n=500).astype(dtype)
    transformer = NystroemFeatures(n_components=64, random_state=0).fit(X)
    whole = transformer.transform(X)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 7 * 64 * X.itemsize)
    blocked = transformer.transform(X)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(blocked, whole, rtol=rtol, atol=rtol)


def test_feature_names_follow_the_output_width():
    X = _data(n=50)
    transformer = NystroemFeatures(n_components=10, random_state=0).fit(X)
    names = transformer.get_feature_names_out()
    assert len(names) == transformer.n_components_ == 10
    assert names[0] == "nystroemfeatures0"


@pytest.mark.parametrize(
    "params, message",
    [
        ({"n_components": 0}, "n_components"),
        ({"gamma": -1.0}, "gamma"),
        ({"gamma": "mean"}, "gamma"),
        ({"centres": "random"}, "centres"),
    ],
)
def test_bad_parameters_raise(params, message):
    with pytest.raises(ValueError, match=message):
        NystroemFeatures(**params).fit(_data(n=20))


def test_bad_input_raises():
    X = _data(n=20)
    with pytest.raises(ValueError, match="NaN"):
        NystroemFeatures().fit(np.where(X > 1.5, np.nan, X))
    with pytest.raises(ValueError, match="sums to zero"):
        NystroemFeatures().fit(X, sample_weight=np.zeros(20))
    with pytest.raises(ValueError, match="[Nn]egative"):
        NystroemFeatures().fit(X, sample_weight=-np.ones(20))
    with pytest.raises(TypeError, match="[Ss]parse"):
        NystroemFeatures().fit(sparse.csr_matrix(X))
    fitted = NystroemFeatures(n_components=5).fit(X)
    with pytest.raises(ValueError, match="features"):
        fitted.transform(X[:, :3])


def test_kmeans_seeds_from_a_draw_in_any_order():
    # With more than 8 rows per centre the k-means++ seeds come from a weighted
    # draw of 8 rows per centre (by the rows' stable keys): integer weights
    # still equal repeated rows, in any order, and the Lloyd steps still see
    # every row (a centre is a mean of rows outside the draw too).
    rng = np.random.RandomState(0)
    X = _data(n=400)
    weights = rng.randint(0, 3, size=400)
    repeated = np.repeat(X, weights, axis=0)
    order = rng.permutation(repeated.shape[0])
    params = dict(n_components=10, centres="kmeans", random_state=3)
    weighted = NystroemFeatures(**params).fit(X, sample_weight=weights)
    copies = NystroemFeatures(**params).fit(repeated[order])
    np.testing.assert_allclose(weighted.components_, copies.components_)
    # Each centre is the weighted mean of its nearest rows among all of them.
    centres = weighted.components_
    nearest = np.argmin(
        ((X[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2), axis=1
    )
    kept = weights > 0
    for k in range(len(centres)):
        members = kept & (nearest == k)
        if members.any():
            mean = np.average(X[members], axis=0, weights=weights[members])
            # five Lloyd steps: near the fixed point, not at it
            assert np.linalg.norm(mean - centres[k]) < 0.25  # (0.12; data 2.2)
